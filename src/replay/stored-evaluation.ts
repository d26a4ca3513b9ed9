/**
 * The evaluation a run already carries, summed up for people: simrec's own (`simrec eval`, stream
 * `<actor>/evaluation`) or the one a LimSim recording brought with it (its evaluationINFO, imported
 * as `<ego>/limsim_evaluation`). Both hold LimSim's five raw metrics per frame, so both are scored the
 * same way: LimSim's display score per frame, its mean per metric, and simrec's overall score.
 */
import { numbersOf } from '../model/columns.js';
import type { StoreBackend } from '../model/store-port.js';
import { fieldsOfStream, type StreamInfo } from '../model/stream.js';
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
  // The five metrics as columns (the run list scores every run it shows; sample objects of every field
  // were made and dropped for each frame), summed frame by frame in order as before.
  const batch = await store.readColumnsJoined({ run, stream: stream.id, fields: LIMSIM_METRICS });
  const fields = fieldsOfStream(stream);
  const frames = batch.t.length;
  const scores: Partial<Record<LimsimMetric, number>> = {};
  for (const m of LIMSIM_METRICS) {
    let total = 0;
    let n = 0;
    for (const raw of numbersOf(batch, fields, m))
      if (Number.isFinite(raw)) {
        total += limsimScore(m, raw);
        n++;
      }
    if (n) scores[m] = total / n;
  }
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
