import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TrafficGenerator, type BenchSize } from '../generator.js';
import type { Peer } from '../peer.js';

export interface RecordResult {
  states: number;
  seconds: number;
  statesPerSecond: number;
  /** Every file the peer left in its directory (an SQLite WAL included), once it has closed. */
  bytes: number;
  bytesPerState: number;
}

export interface RecordJob {
  dir: string;
  size: BenchSize;
  commitEverySteps: number;
}

/** The whole run, from opening the file to closing it, generation of the frames included for all. */
export async function recordWorkload(peer: Peer, job: RecordJob): Promise<RecordResult> {
  const frames = new TrafficGenerator(job.size);
  const start = performance.now();
  await peer.record({ dir: job.dir, frames, commitEverySteps: job.commitEverySteps });
  const seconds = (performance.now() - start) / 1000;
  const states = job.size.actors * job.size.steps;
  const bytes = readdirSync(job.dir).reduce((sum, name) => sum + statSync(join(job.dir, name)).size, 0);
  return { states, seconds, statesPerSecond: states / seconds, bytes, bytesPerState: bytes / states };
}

/** The generator alone, so a reader can see how much of every rate it is. */
export function generatorOnly(size: BenchSize): { seconds: number; statesPerSecond: number } {
  const frames = new TrafficGenerator(size);
  const start = performance.now();
  for (let s = 0; s < size.steps; s++) frames.next();
  const seconds = (performance.now() - start) / 1000;
  return { seconds, statesPerSecond: (size.actors * size.steps) / seconds };
}
