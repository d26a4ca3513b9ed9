import { BEGIN_US, periodUs, type BenchSize } from '../generator.js';
import type { Peer } from '../peer.js';
import { median, msSince, quantile, seededRandom } from '../stats.js';

export interface SeekResult {
  seeks: number;
  /** The first seek, in a fresh process: nothing cached yet. */
  firstMs: number;
  /**
   * Pages of memory the process touched for the first time during the first seek (minor page faults):
   * on a virtual machine whose host hands memory out lazily, each costs microseconds
   * (performance-history.md, "Fresh memory").
   */
  firstPageFaults: number;
  medianMs: number;
  p99Ms: number;
  /**
   * The slowest seek after the first: a reader that decodes ahead in one burst (simrec's chunk cache,
   * once a run is being browsed) pays it at one seek, which a 99th percentile of many does not show.
   */
  slowestMs: number;
}

export interface SeekJob {
  dir: string;
  size: BenchSize;
  seeks: number;
}

/** The scene at random times (any microsecond of the run, not only frame times), same times for all. */
export async function seekWorkload(peer: Peer, job: SeekJob): Promise<SeekResult> {
  const reader = await peer.open!(job.dir, job.size);
  const random = seededRandom(4242);
  const span = (job.size.steps - 1) * periodUs(job.size);
  const times: number[] = [];
  let firstPageFaults = 0;
  for (let i = 0; i < job.seeks; i++) {
    const faults = i === 0 ? process.resourceUsage().minorPageFault : 0;
    const start = performance.now();
    const states = await reader.scene(BEGIN_US + Math.floor(random() * span));
    times.push(msSince(start));
    if (i === 0) firstPageFaults = process.resourceUsage().minorPageFault - faults;
    if (states !== job.size.actors)
      throw new Error(`${peer.name}: a scene has ${states} actor states, expected ${job.size.actors}`);
  }
  await reader.close();
  return {
    seeks: job.seeks,
    firstMs: times[0]!,
    firstPageFaults,
    medianMs: median(times),
    p99Ms: quantile(times, 0.99),
    slowestMs: Math.max(...times.slice(1)),
  };
}
