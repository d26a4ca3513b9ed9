/**
 * The evaluation a run already carries, summed up for people: simrec's own (`simrec eval`, stream
 * `<actor>/evaluation`) or the one a LimSim recording brought with it (its evaluationINFO, imported
 * as `<ego>/limsim_evaluation`). Both hold LimSim's five raw metrics per frame, so both are scored the
 * same way: LimSim's display score per frame, its mean per metric, and simrec's overall score.
 */
import type { StoreBackend } from '../model/store-port.js';
import type { StreamInfo } from '../model/stream.js';
import { LIMSIM_EVALUATION_STREAM } from '../formats/limsim/limsim-streams.js';
import {
  EVALUATION_STREAM,
  EVENTS_STREAM,
  LIMSIM_METRICS,
  limsimScore,
  overallScore,
  type LimsimMetric,
  type RunEvaluation,
} from '../model/evaluation-scores.js';
import { streamSamples } from './run-queries.js';

/** The run's evaluation stream: simrec's own first (as the LimSim export prefers it), else LimSim's. */
export function evaluationStream(streams: readonly StreamInfo[]): StreamInfo | undefined {
  const usable = streams.filter((s) => s.samples > 0);
  return (
    usable.find((s) => s.name === EVALUATION_STREAM) ??
    usable.find((s) => s.name === LIMSIM_EVALUATION_STREAM)
  );
}

export async function storedEvaluation(
  store: StoreBackend,
  run: number,
  streams: readonly StreamInfo[],
): Promise<RunEvaluation | null> {
  const stream = evaluationStream(streams);
  if (!stream) return null;
  const sums: Partial<Record<LimsimMetric, { total: number; n: number }>> = {};
  let frames = 0;
  for await (const batch of streamSamples(store, run, stream.id))
    for (const sample of batch) {
      frames++;
      for (const m of LIMSIM_METRICS) {
        const raw = sample[m];
        if (typeof raw !== 'number' || !Number.isFinite(raw)) continue;
        const sum = (sums[m] ??= { total: 0, n: 0 });
        sum.total += limsimScore(m, raw);
        sum.n++;
      }
    }
  const scores: Partial<Record<LimsimMetric, number>> = {};
  for (const m of LIMSIM_METRICS) if (sums[m]?.n) scores[m] = sums[m].total / sums[m].n;
  let collided = false;
  if (stream.actor !== null && streams.some((s) => s.id === EVENTS_STREAM && s.samples > 0))
    for await (const batch of streamSamples(store, run, EVENTS_STREAM))
      for (const e of batch)
        if (e.kind === 'collision' && Array.isArray(e.actors) && e.actors.includes(stream.actor))
          collided = true;
  return {
    stream: stream.id,
    actor: stream.actor,
    source: stream.name === EVALUATION_STREAM ? 'simrec' : 'limsim',
    scores,
    score: overallScore(scores, collided),
    collided,
    frames,
  };
}
