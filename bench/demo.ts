/**
 * The demo's own speed: actor-steps per second (one actor's sample at one recorded step) of the traffic
 * simulation with recording off (samples built, then dropped) and on (into a fresh SQLite store), so the
 * ratio shows what recording costs a simulator that records as the demo does. Measured in a process of
 * its own: run after the other sections in the benchmark's process, its 60 simulated seconds (a fifth
 * of a second recorded) ran at half the ratio, in a heap the sections before had grown.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { recordDemoRun, simulateDemoTraffic, type DemoRunOptions } from '../src/demo/demo-run.js';
import { openStore } from '../src/store/open-store.js';
import { median } from './stats.js';

export interface DemoSpeed {
  simulatedSeconds: number;
  actorSteps: number;
  recordingOffActorStepsPerSecond: number;
  recordingOnActorStepsPerSecond: number;
  /** on / off: the share of the simulation's speed left once it records. */
  recordingOnToOff: number;
}

export async function measureDemo(scratch: string, quick: boolean): Promise<DemoSpeed> {
  const { stdout } = await promisify(execFile)(process.execPath, [
    fileURLToPath(import.meta.url),
    'child',
    scratch,
    String(quick),
  ]);
  return JSON.parse(stdout) as DemoSpeed;
}

async function measureDemoHere(scratch: string, quick: boolean): Promise<DemoSpeed> {
  const options: DemoRunOptions = { duration: quick ? 5 : 60, seed: 1 };
  // Seven: a rep lasts a fifth of a second, and three left the ratio moving by a third from run to run.
  const reps = quick ? 1 : 7;
  const off: number[] = [];
  const on: number[] = [];
  let actorSteps = 0;
  // Off and on alternate, so a slow spell of the machine does not land on one of them only.
  for (let rep = 0; rep < reps; rep++) {
    let start = performance.now();
    actorSteps = (await simulateDemoTraffic(options)).actorSteps;
    off.push(actorSteps / ((performance.now() - start) / 1000));

    const dir = join(scratch, `demo-${rep}`);
    mkdirSync(dir, { recursive: true });
    const store = await openStore(join(dir, 'demo.simrec.db'));
    try {
      start = performance.now();
      await recordDemoRun(store, options);
      on.push(actorSteps / ((performance.now() - start) / 1000));
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const offRate = median(off);
  const onRate = median(on);
  return {
    simulatedSeconds: options.duration!,
    actorSteps,
    recordingOffActorStepsPerSecond: Math.round(offRate),
    recordingOnActorStepsPerSecond: Math.round(onRate),
    recordingOnToOff: Math.round((onRate / offRate) * 100) / 100,
  };
}

export const formatDemo = (d: DemoSpeed): string =>
  `demo: ${d.recordingOffActorStepsPerSecond} actor-steps/s with recording off, ${d.recordingOnActorStepsPerSecond} with it on (${d.recordingOnToOff}x; ${d.actorSteps} actor-steps over ${d.simulatedSeconds} simulated s)`;

if (process.argv[2] === 'child')
  process.stdout.write(JSON.stringify(await measureDemoHere(process.argv[3]!, process.argv[4] === 'true')));
