import { notFound } from '../model/errors.js';
import type { AttachmentInfo } from '../model/attachment.js';
import type { ActorInfo, RunInfo } from '../model/run.js';
import { STATE_STREAM } from '../model/standard-streams.js';
import type { StoreBackend } from '../model/store-port.js';
import { streamId, type FieldDecl, type Sample, type StreamInfo } from '../model/stream.js';
import { lerpAngle } from '../model/units.js';

export interface RunDescription {
  run: RunInfo;
  actors: ActorInfo[];
  streams: StreamInfo[];
  /** Blobs kept with the run: the road network, camera frames, the scenario... */
  attachments: AttachmentInfo[];
  /** First and last sample time over all streams (microseconds), null if the run has no samples. */
  timeRange: { begin: number; end: number } | null;
  samples: number;
}

export async function requireRun(store: StoreBackend, id: number): Promise<RunInfo> {
  const run = await store.getRun(id);
  if (!run) throw notFound(`run ${id} does not exist in ${store.location}`);
  return run;
}

export async function describeRun(store: StoreBackend, id: number): Promise<RunDescription> {
  const run = await requireRun(store, id);
  const [actors, streams, attachments] = await Promise.all([
    store.listActors(id),
    store.listStreams(id),
    store.listAttachments(id),
  ]);
  let begin = Infinity;
  let end = -Infinity;
  let samples = 0;
  for (const s of streams) {
    samples += s.samples;
    if (s.begin !== null && s.begin < begin) begin = s.begin;
    if (s.end !== null && s.end > end) end = s.end;
  }
  return { run, actors, streams, attachments, timeRange: samples ? { begin, end } : null, samples };
}

export interface SceneActor {
  id: string;
  kind: string;
  t: number;
  [field: string]: unknown;
}

export interface Scene {
  /** The time asked for (microseconds). */
  t: number;
  actors: SceneActor[];
}

export interface SceneArgs {
  /** Absolute time in microseconds. */
  t: number;
  /** Interpolate numeric fields between the samples either side of t (angles along the shorter arc). */
  interpolate?: boolean;
}

/**
 * The scene at t: each actor's latest `state` sample at or before t. An actor whose state begins
 * after t is not in the scene yet.
 */
export async function sceneAt(store: StoreBackend, run: number, args: SceneArgs): Promise<Scene> {
  await requireRun(store, run);
  const [actors, streams] = await Promise.all([store.listActors(run), store.listStreams(run)]);
  const stateStreams = new Map(
    streams.filter((s) => s.name === STATE_STREAM && s.actor !== null).map((s) => [s.actor!, s]),
  );
  const scene: Scene = { t: args.t, actors: [] };
  const brackets = await Promise.all(
    actors.map(async (actor) => {
      const stream = stateStreams.get(actor.id);
      if (!stream || stream.samples === 0) return null;
      return { actor, stream, bracket: await store.sampleBracket(run, stream.id, args.t) };
    }),
  );
  for (const item of brackets) {
    if (!item?.bracket.before) continue;
    const { before, after } = item.bracket;
    const sample =
      args.interpolate && after ? interpolateSample(before, after, args.t, item.stream.fields) : before;
    const { t, step: _step, ...fields } = sample;
    scene.actors.push({ id: item.actor.id, kind: item.actor.kind, t, ...fields });
  }
  return scene;
}

/** Linear interpolation of numeric fields; fields in radians along the shorter arc; others held. */
export function interpolateSample(a: Sample, b: Sample, t: number, fields: readonly FieldDecl[]): Sample {
  if (b.t <= a.t) return a;
  const u = (t - a.t) / (b.t - a.t);
  const out: Sample = { ...a, t };
  const unitOf = new Map(fields.map((f) => [f.name, f.unit]));
  for (const key in a) {
    if (key === 't' || key === 'step') continue;
    const va = a[key];
    const vb = b[key];
    if (typeof va !== 'number' || typeof vb !== 'number') continue;
    out[key] = unitOf.get(key) === 'rad' ? lerpAngle(va, vb, u) : va + (vb - va) * u;
  }
  return out;
}

export interface TrajectoryArgs {
  actor: string;
  from?: number;
  to?: number;
  signal?: AbortSignal;
}

export interface Trajectory {
  actor: string;
  samples: Sample[];
}

/** An actor's `state` samples over a time window (bounds inclusive, microseconds). */
export async function trajectory(
  store: StoreBackend,
  run: number,
  args: TrajectoryArgs,
): Promise<Trajectory> {
  await requireRun(store, run);
  const actors = await store.listActors(run);
  if (!actors.some((a) => a.id === args.actor))
    throw notFound(`run ${run} has no actor ${JSON.stringify(args.actor)}`);
  const samples: Sample[] = [];
  for await (const batch of streamSamples(store, run, streamId(args.actor, STATE_STREAM), args))
    samples.push(...batch);
  return { actor: args.actor, samples };
}

export interface WindowArgs {
  from?: number;
  to?: number;
  signal?: AbortSignal;
}

/** Any stream's samples over a time window, as an async iterator of batches. */
export function streamSamples(
  store: StoreBackend,
  run: number,
  stream: string,
  args: WindowArgs = {},
): AsyncIterable<Sample[]> {
  const read: Parameters<StoreBackend['readSamples']>[0] = { run, stream };
  if (args.from !== undefined) read.from = args.from;
  if (args.to !== undefined) read.to = args.to;
  if (args.signal !== undefined) read.signal = args.signal;
  return store.readSamples(read);
}
