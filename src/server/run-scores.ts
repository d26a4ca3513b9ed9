import { storedEvaluation } from '../replay/stored-evaluation.js';
import type { RunSummary } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import type { RunEvaluation, RunListEntry } from './wire-types.js';

interface Cached {
  /** The run's sample count when it was scored: a run that grew (live, or evaluated since) is rescored. */
  samples: number;
  evaluation: Promise<RunEvaluation | null>;
}

/**
 * Each run's evaluation, scored once and kept while the run does not change: the run list (sent to
 * every viewer each time any run changes) carries every run's score without reading every run's
 * evaluation stream again. One cache per store, shared by the API and the live channel.
 */
const caches = new WeakMap<StoreBackend, Map<number, Cached>>();

export function runEvaluation(
  store: StoreBackend,
  run: number,
  samples: number,
): Promise<RunEvaluation | null> {
  let cache = caches.get(store);
  if (!cache) caches.set(store, (cache = new Map<number, Cached>()));
  const hit = cache.get(run);
  if (hit && hit.samples === samples) return hit.evaluation;
  const evaluation = store.listStreams(run).then((streams) => storedEvaluation(store, run, streams));
  cache.set(run, { samples, evaluation });
  // A failed read is not remembered: the next list asks again.
  evaluation.catch(() => cache.delete(run));
  return evaluation;
}

/** The run list with each run's score (null without an evaluation). */
export async function withScores(store: StoreBackend, runs: RunSummary[]): Promise<RunListEntry[]> {
  const cache = caches.get(store);
  if (cache) {
    const live = new Set(runs.map((r) => r.id));
    for (const id of cache.keys()) if (!live.has(id)) cache.delete(id);
  }
  return Promise.all(
    runs.map(async (r) => ({ ...r, score: (await runEvaluation(store, r.id, r.samples))?.score ?? null })),
  );
}
