import { CoreWait } from '../core-wait.js';
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
  /**
   * Of the scenes at or above the 99th percentile (the first left out), the median share of a scene's
   * time its thread spent waiting for a core, 0 to 1; null where the machine does not tell (CoreWait).
   * On two cores, the slowest scenes of a process whose code is still being optimised are often those
   * the compiler's threads preempted: this says how much of the p99 is the machine's.
   */
  slowWaitingShare: number | null;
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
  const coreWait = CoreWait.open();
  const waited = new Float64Array(job.seeks);
  for (let i = 0; i < job.seeks; i++) {
    const faults = i === 0 ? process.resourceUsage().minorPageFault : 0;
    const waitedBefore = coreWait?.ms() ?? 0;
    const start = performance.now();
    const states = await reader.scene(BEGIN_US + Math.floor(random() * span));
    times.push(msSince(start));
    waited[i] = (coreWait?.ms() ?? 0) - waitedBefore;
    if (i === 0) firstPageFaults = process.resourceUsage().minorPageFault - faults;
    if (states !== job.size.actors)
      throw new Error(`${peer.name}: a scene has ${states} actor states, expected ${job.size.actors}`);
  }
  await reader.close();
  coreWait?.close();
  const p99Ms = quantile(times, 0.99);
  return {
    seeks: job.seeks,
    firstMs: times[0]!,
    firstPageFaults,
    medianMs: median(times),
    p99Ms,
    slowestMs: Math.max(...times.slice(1)),
    slowWaitingShare: coreWait ? waitingShare(times, waited, p99Ms) : null,
  };
}

/**
 * Of the scenes after the first that took `atLeast` or more, the median share of a scene's time spent
 * waiting (each scene's own share: a burst of decoding among them takes far longer than the others
 * and would stand for them all in a share of their summed time).
 */
function waitingShare(times: readonly number[], waited: Float64Array, atLeast: number): number {
  const shares: number[] = [];
  for (let i = 1; i < times.length; i++)
    // A wait counted at the scene's edges (the readings bracket it) is not more than the scene.
    if (times[i]! >= atLeast) shares.push(Math.min(waited[i]!, times[i]!) / times[i]!);
  return shares.length ? median(shares) : 0;
}
