/**
 * Run by recorder-priority.test.ts in a process of its own (a lowered priority cannot be raised
 * again): with `sumo` as argv[2], records LimSim's bigInter through recordSumo with recorderNice 2
 * into the store at argv[3]; without, starts a child process and a worker thread, lowers the priority
 * by 3, then starts another worker. Either way it prints, as JSON, the niceness of every thread of
 * this process and of the child (SUMO, or the child started before lowering) while they run.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { recordSumo } from '../../src/ingest/traci/sumo-recorder.js';
import { lowerProcessPriority } from '../../src/record/process-priority.js';
import { openStore } from '../../src/store/open-store.js';
import { fixture } from './paths.js';

/** Field 19 of /proc/PID/stat (fields counted after the command's closing parenthesis from 3). */
const niceOf = (stat: string): number => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
const threadNices = (): number[] =>
  readdirSync('/proc/self/task').map((tid) => niceOf(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')));
/** This process's children named `name`, by their /proc entries. */
function childNices(name: string): number[] {
  const nices: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid && stat.includes(`(${name})`)) nices.push(niceOf(stat));
    } catch {
      // gone meanwhile
    }
  }
  return nices;
}

const start = getPriority(0);
const alive = (): Worker => new Worker('setInterval(() => {}, 1000)', { eval: true });

if (process.argv[2] === 'sumo') {
  const store = await openStore(join(process.argv[3]!, 'probe.db'));
  let seen: { threads: number[]; children: number[] } | undefined;
  let steps = 0;
  const bigInter = fixture('limsim-networks', 'bigInter');
  await recordSumo(store, {
    net: join(bigInter, 'bigInter.net.xml'),
    routes: [join(bigInter, 'bigInter.rou.xml')],
    stepLength: 0.1,
    duration: 5,
    recorderNice: 2,
    onStep: () => {
      if (++steps === 20) seen = { threads: threadNices(), children: childNices('sumo') };
    },
  });
  await store.close();
  process.stdout.write(JSON.stringify({ start, ...seen }) + '\n');
} else {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  const before = alive();
  await new Promise((resolve) => before.once('online', resolve));
  const lowered = lowerProcessPriority(3);
  const after = alive();
  await new Promise((resolve) => after.once('online', resolve));
  const seen = { threads: threadNices(), children: childNices('node') };
  process.stdout.write(JSON.stringify({ start, lowered, ...seen }) + '\n');
  child.kill();
  await Promise.all([before.terminate(), after.terminate()]);
}
