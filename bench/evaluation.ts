/** Evaluation speed: frames scored per second on a run of 200 actors (the ego scored, events over all). */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { openStore } from '../src/store/open-store.js';
import { TrafficGenerator, type BenchSize } from './generator.js';
import { simrecPeer } from './peers/simrec.js';

export interface EvaluationSpeed {
  actors: number;
  frames: number;
  seconds: number;
  framesPerSecond: number;
}

export async function measureEvaluation(scratch: string, quick: boolean): Promise<EvaluationSpeed> {
  const size: BenchSize = { actors: quick ? 50 : 200, steps: quick ? 200 : 2000, hz: 100 };
  const dir = join(scratch, 'evaluation');
  mkdirSync(dir, { recursive: true });
  await simrecPeer.record({ dir, frames: new TrafficGenerator(size), commitEverySteps: 100 });
  const store = await openStore(join(dir, 'bench.simrec.db'));
  try {
    const start = performance.now();
    const summary = await evaluateRun(store, 1);
    const seconds = (performance.now() - start) / 1000;
    return {
      actors: size.actors,
      frames: summary.frames,
      seconds: Math.round(seconds * 100) / 100,
      framesPerSecond: Math.round(summary.frames / seconds),
    };
  } finally {
    await store.close();
  }
}

export const formatEvaluation = (e: EvaluationSpeed): string =>
  `evaluation: ${e.framesPerSecond} frames/s scoring the ego among ${e.actors} actors (${e.frames} frames in ${e.seconds} s, events over every actor)`;
