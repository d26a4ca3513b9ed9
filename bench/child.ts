/**
 * One workload for one peer, in a process of its own, so that its peak resident memory is its own and
 * no peer's heap or caches warm up another's. run.ts starts it with a job as JSON in argv[2]; it prints
 * one JSON line: the workload's result and the process's maxRSS.
 */
import { type BenchSize } from './generator.js';
import { peerByName } from './peers/index.js';
import { generatorOnly, recordWorkload } from './workloads/record.js';
import { seekWorkload } from './workloads/seek.js';
import { trajectoryWorkload } from './workloads/trajectory.js';

export type Workload = 'generate' | 'record' | 'seek' | 'trajectory';

export interface ChildJob {
  workload: Workload;
  peer: string;
  dir: string;
  size: BenchSize;
  commitEverySteps: number;
  seeks: number;
  trajectories: number;
}

export interface ChildReport {
  result: Record<string, unknown>;
  /** process.resourceUsage().maxRSS, in bytes. */
  maxRssBytes: number;
}

async function runJob(job: ChildJob): Promise<Record<string, unknown>> {
  switch (job.workload) {
    case 'generate':
      return { ...generatorOnly(job.size) };
    case 'record':
      return { ...(await recordWorkload(peerByName(job.peer), job)) };
    case 'seek':
      return { ...(await seekWorkload(peerByName(job.peer), job)) };
    case 'trajectory':
      return { ...(await trajectoryWorkload(peerByName(job.peer), job)) };
  }
}

const job = JSON.parse(process.argv[2] ?? '{}') as ChildJob;
const result = await runJob(job);
const report: ChildReport = { result, maxRssBytes: process.resourceUsage().maxRSS * 1024 };
process.stdout.write(JSON.stringify(report) + '\n');
