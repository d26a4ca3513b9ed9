import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

/**
 * The young generation `simrec serve` lets V8 grow to, in MiB (as V8 counts it: both semi-spaces).
 * Under a client that sends everything at once, V8 grows a server's young generation as far as it may,
 * all of it resident, and the flood's peak with it; held at this size the peak is lower at the same
 * ingest rate, and a smaller size peaks no lower (more of each collection's survivors are promoted).
 * The price is paid by scene queries, whose decoded chunks survive a few collections before they settle
 * in the cache: their slowest answers get slower. A user who sets `--max-semi-space-size` (or the growth
 * factor) in NODE_OPTIONS keeps it. What each size measured: docs/performance-history.md.
 */
export const SERVER_YOUNG_GENERATION_MIB = 8;

/**
 * Keeps V8 from growing this process's young generation past `limitMiB`.
 *
 * V8 sizes the young generation when a thread's isolate is made (`--max-semi-space-size`, which a
 * running process cannot change for its own main thread) and then doubles it whenever enough of it
 * survives collections, reading its growth factor (`--semi-space-growth-factor`) at each doubling. So
 * after every collection of this thread, the factor is set to 2 while one more doubling stays within the
 * limit and to 1 (no growth) from then on. Flags are per process: a worker started later shares the
 * factor, and starting one makes Node apply V8's flags again (the factor back to its default), which the
 * next collection's check undoes. The check runs after a collection, so two collections before it (a
 * long synchronous burst) may double the young generation once more: the bound is `limitMiB`, or twice
 * it at worst. For a process of its own (the server), not for a library embedded in someone's program:
 * returns a function that stops watching and lets V8 grow it again.
 */
export function limitYoungGeneration(limitMiB: number): () => void {
  // A size the user gave V8 themselves is theirs to choose (a server mostly answering the viewer's
  // queries does better with a larger young generation: above).
  if (youngGenerationSetByUser()) return () => {};
  const limitBytes = limitMiB * 2 ** 20;
  let factor = 0;
  const check = (): void => {
    const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
    if (!young) return;
    const wanted = young.space_size * 2 <= limitBytes ? 2 : 1;
    // Always set, not only on a change: a worker's start puts the default back behind our back.
    v8.setFlagsFromString(`--semi-space-growth-factor=${wanted}`);
    factor = wanted;
  };
  check();
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  return () => {
    observer.disconnect();
    if (factor === 1) v8.setFlagsFromString('--semi-space-growth-factor=2');
  };
}

/** Whether this process was started with V8's young-generation flags (on its command line or NODE_OPTIONS). */
function youngGenerationSetByUser(): boolean {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  return given.some((flag) =>
    /^--(max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor)\b/.test(flag),
  );
}
