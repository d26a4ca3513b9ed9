import {
  EVALUATION_STREAM,
  EVENTS_STREAM,
  LIMSIM_METRIC_UNITS,
  LIMSIM_METRICS,
  SCORE_WEIGHTS,
} from '../model/evaluation-scores.js';
import type { StoreBackend } from '../model/store-port.js';
import type { FieldDecl, Sample } from '../model/stream.js';
import { writeDerivedStream } from '../record/derived-streams.js';
import type { EvaluationEvent, EvaluationMode } from './evaluation-types.js';

/*
 * An evaluation as the run keeps it: the scored actor's metrics frame by frame as stream
 * `<actor>/evaluation`, the events as stream `events`, beside those the simulator recorded there.
 */

const f64 = (name: string, unit: string, optional = false, description?: string): FieldDecl => ({
  name,
  type: 'f64',
  unit,
  optional,
  ...(description ? { description } : {}),
});

export const EVALUATION_FIELDS: FieldDecl[] = [
  f64('offset', LIMSIM_METRIC_UNITS.offset, true, 'LimSim: squared lateral offset from the lane centre'),
  f64('discomfort', LIMSIM_METRIC_UNITS.discomfort, false, 'LimSim: squared jerk'),
  f64('collision', LIMSIM_METRIC_UNITS.collision, false, 'LimSim: time to collision, 20 when none is coming'),
  f64(
    'orientation',
    LIMSIM_METRIC_UNITS.orientation,
    true,
    'LimSim: squared difference of sin(heading) and sin(lane heading), both mod pi',
  ),
  f64('consumption', LIMSIM_METRIC_UNITS.consumption, false, 'LimSim: (v a)^2 + v^3'),
  ...LIMSIM_METRICS.map((m) =>
    f64(`${m}Score`, '1', m === 'offset' || m === 'orientation', `LimSim display score of ${m}, 1..4`),
  ),
  f64('accel', 'm/s^2', false, 'acceleration used for jerk and consumption'),
  f64('jerk', 'm/s^3', false),
  f64('laneOffset', 'm', true, 'signed lateral offset, left positive'),
  f64('headway', 's', true, 'time to reach the vehicle ahead in the same lane'),
  f64('speedLimit', 'm/s', true),
  {
    name: 'ttcActor',
    type: 'string',
    optional: true,
    description: 'the actor the time to collision is with',
  },
];

export const EVENT_FIELDS: FieldDecl[] = [
  { name: 'kind', type: 'string' },
  { name: 'actors', type: 'json' },
  f64('x', 'm'),
  f64('y', 'm'),
  f64('duration', 's'),
  { name: 'detail', type: 'string' },
];

/**
 * Stores the metrics and the events found into the run, beside the events the simulator recorded;
 * returns the streams written.
 */
export async function storeEvaluation(
  store: StoreBackend,
  runId: number,
  actorId: string,
  mode: EvaluationMode,
  samples: Sample[],
  found: EvaluationEvent[],
  recorded: Sample[],
): Promise<string[]> {
  const streams: string[] = [];
  streams.push(
    await writeDerivedStream(
      store,
      runId,
      {
        name: EVALUATION_STREAM,
        actor: actorId,
        fields: EVALUATION_FIELDS,
        metadata: { mode, weights: SCORE_WEIGHTS },
      },
      samples,
    ),
  );
  const eventSamples: Sample[] = [
    ...found.map((e, n) => ({
      t: e.t,
      step: n,
      kind: e.kind,
      actors: e.actors,
      x: e.x,
      y: e.y,
      duration: e.duration,
      detail: e.detail,
    })),
    ...recorded,
  ].sort((a, b) => a.t - b.t);
  // Events start in time order but several may start at one time; the stream needs non-decreasing t.
  streams.push(
    await writeDerivedStream(
      store,
      runId,
      { name: EVENTS_STREAM, fields: EVENT_FIELDS, metadata: { evaluatedActor: actorId } },
      eventSamples,
    ),
  );
  return streams;
}

/** The events a simulator recorded into the run's `events` stream (those that say their `source`). */
export async function recordedEvents(store: StoreBackend, run: number): Promise<Sample[]> {
  const streams = await store.listStreams(run);
  if (!streams.some((s) => s.id === EVENTS_STREAM && s.samples > 0)) return [];
  const found: Sample[] = [];
  for await (const batch of store.readSamples({ run, stream: EVENTS_STREAM }))
    for (const s of batch) if (typeof s.source === 'string') found.push(s);
  return found;
}

export const asEvaluationEvent = (s: Sample): EvaluationEvent => ({
  kind: s.kind as EvaluationEvent['kind'],
  t: s.t,
  duration: typeof s.duration === 'number' ? s.duration : 0,
  actors: Array.isArray(s.actors) ? s.actors.map(String) : [],
  x: typeof s.x === 'number' ? s.x : 0,
  y: typeof s.y === 'number' ? s.y : 0,
  detail: typeof s.detail === 'string' ? s.detail : '',
});
