import { actorId, type BenchSize } from '../generator.js';
import type { Peer } from '../peer.js';
import { median, msSince, seededRandom } from '../stats.js';

export interface TrajectoryResult {
  actors: string[];
  samplesEach: number;
  firstMs: number;
  medianMs: number;
}

export interface TrajectoryJob {
  dir: string;
  size: BenchSize;
  trajectories: number;
}

/** Whole-run trajectories of the ego and of random other actors, each a different actor. */
export async function trajectoryWorkload(peer: Peer, job: TrajectoryJob): Promise<TrajectoryResult> {
  const reader = await peer.open!(job.dir, job.size);
  const random = seededRandom(777);
  const actors = ['ego'];
  while (actors.length < Math.min(job.trajectories, job.size.actors)) {
    const id = actorId(1 + Math.floor(random() * (job.size.actors - 1)));
    if (!actors.includes(id)) actors.push(id);
  }
  const times: number[] = [];
  for (const actor of actors) {
    const start = performance.now();
    const samples = await reader.trajectory(actor);
    times.push(msSince(start));
    if (samples !== job.size.steps)
      throw new Error(
        `${peer.name}: trajectory of ${actor} has ${samples} states, expected ${job.size.steps}`,
      );
  }
  await reader.close();
  return { actors, samplesEach: job.size.steps, firstMs: times[0]!, medianMs: median(times) };
}
