/**
 * The demo's own speed: actor-steps per second (one actor's sample at one recorded step) of the traffic
 * simulation with recording off (samples built, then dropped) and on (into a fresh SQLite store), so the
 * ratio shows what recording costs a simulator that records as the demo does.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
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
  const options: DemoRunOptions = { duration: quick ? 5 : 60, seed: 1 };
  const reps = quick ? 1 : 3;
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
