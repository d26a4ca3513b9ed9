import { sampleAt, type ColumnBatch, type SampleEntry } from '../model/columns.js';
import { describeValue, notFound, SimrecError } from '../model/errors.js';
import type { AttachmentInfo } from '../model/attachment.js';
import { absenceAt, usualSampleInterval } from '../model/presence.js';
import type { ActorInfo, RunInfo } from '../model/run.js';
import { STATE_STREAM } from '../model/standard-streams.js';
import type { MomentReadOptions, StoreBackend } from '../model/store-port.js';
import { fieldsOfStream, streamId, type Sample, type StreamInfo } from '../model/stream.js';
import { interpolateSample } from '../model/interpolate.js';

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

export async function describeRun(
  store: StoreBackend,
  id: number,
  listAttachments: (run: number) => Promise<AttachmentInfo[]> = (run) => store.listAttachments(run),
): Promise<RunDescription> {
  const run = await requireRun(store, id);
  const [actors, streams, attachments] = await Promise.all([
    store.listActors(id),
    store.listStreams(id),
    listAttachments(id),
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
  /**
   * Only with `includeDeparted`, on actors that are not present at the scene's time: `left` when the
   * recorder said so (a leave, or a gap in the presence it set), `stale` by the staleness rule.
   */
  departed?: 'left' | 'stale';
  [field: string]: unknown;
}

export interface Scene {
  /** The time asked for (microseconds). */
  t: number;
  actors: SceneActor[];
}

export interface SceneArgs extends MomentReadOptions {
  /** Absolute time in microseconds. */
  t: number;
  /** Interpolate numeric fields between the samples either side of t (angles along the shorter arc). */
  interpolate?: boolean;
  /** List actors that have gone too (their last state), marked with `departed`. */
  includeDeparted?: boolean;
}

/**
 * The scene at t: the latest `state` sample at or before t of each actor present at t (see
 * absenceAt in model/presence.ts).
 * An actor whose state begins after t is not in the scene yet.
 */
export async function sceneAt(store: StoreBackend, run: number, args: SceneArgs): Promise<Scene> {
  await requireRun(store, run);
  // Only read here: the store's own lists, not copies (a scene is asked for again and again).
  const [actors, streams] = await Promise.all([
    store.listActors(run, { shared: true }),
    store.listStreams(run, { shared: true }),
  ]);
  const { present, presentStreams, ids, intervals } = scenePlan(actors, streams);
  const scene: Scene = { t: args.t, actors: [] };
  // One call for every actor: the backend answers from its index and block cache without a promise
  // per actor, each entry made in one object (no sample made and copied).
  if (!args.interpolate) {
    const entries = await store.latestEntries(run, {
      streams: ids,
      heads: present,
      t: args.t,
      ...(args.readAhead !== undefined ? { readAhead: args.readAhead } : {}),
    });
    for (let i = 0; i < present.length; i++) {
      const entry = entries[i];
      if (!entry) continue;
      const absence = absenceAt(present[i]!.presence, intervals[i]!, entry.t, args.t);
      if (absence === 'not yet' || (absence !== null && !args.includeDeparted)) continue;
      scene.actors.push(absence === null ? entry : departed(entry, absence));
    }
    return scene;
  }
  const brackets = await store.bracketMany(run, {
    streams: ids,
    t: args.t,
    after: true,
    ...(args.readAhead !== undefined ? { readAhead: args.readAhead } : {}),
  });
  for (let i = 0; i < present.length; i++) {
    const { before, after } = brackets[i]!;
    if (!before) continue;
    const actor = present[i]!;
    const stream = presentStreams[i]!;
    const absence = absenceAt(actor.presence, intervals[i]!, before.t, args.t);
    if (absence === 'not yet' || (absence !== null && !args.includeDeparted)) continue;
    const sample =
      after && absence === null ? interpolateSample(before, after, args.t, stream.fields) : before;
    // Built key by key: two object spreads per actor were a tenth of a scene's time.
    const entry = new SceneEntry(actor.id, actor.kind, sample.t);
    if (absence !== null) entry.departed = absence;
    for (const key in sample) if (key !== 't' && key !== 'step') entry[key] = sample[key];
    scene.actors.push(entry);
  }
  return scene;
}

/** An entry of an actor that has gone, marked so, `departed` right after its time as ever. */
function departed(entry: SampleEntry, absence: 'left' | 'stale'): SceneActor {
  const out = new SceneEntry(entry.id, entry.kind, entry.t);
  out.departed = absence;
  for (const key in entry) if (key !== 'id' && key !== 'kind' && key !== 't') out[key] = entry[key];
  return out;
}

/** Which actors a scene reads, and from which streams: what sceneAt works out from the run's lists. */
interface ScenePlan {
  /** Actors with a state stream that has samples, in the run's order, and their state streams. */
  present: readonly ActorInfo[];
  presentStreams: readonly StreamInfo[];
  /** The streams' ids, as bracketMany takes them. */
  ids: readonly string[];
  /** Each one's usual interval between samples (the staleness rule's, see absenceAt). */
  intervals: readonly (number | null)[];
}

/**
 * Plans by the store's shared list of streams (a new list when the run's streams or their counts
 * change), with the list of actors they were made with: a scene asked for again and again makes it
 * once, not a map of 200 streams and four arrays each time.
 */
const plans = new WeakMap<readonly StreamInfo[], { actors: readonly ActorInfo[]; plan: ScenePlan }>();

function scenePlan(actors: readonly ActorInfo[], streams: readonly StreamInfo[]): ScenePlan {
  const known = plans.get(streams);
  if (known?.actors === actors) return known.plan;
  const stateStreams = new Map<string, StreamInfo>();
  for (const s of streams) if (s.name === STATE_STREAM && s.actor !== null) stateStreams.set(s.actor, s);
  const present: ActorInfo[] = [];
  const presentStreams: StreamInfo[] = [];
  for (const a of actors) {
    const stream = stateStreams.get(a.id);
    if (stream === undefined || stream.samples === 0) continue;
    present.push(a);
    presentStreams.push(stream);
  }
  const plan: ScenePlan = {
    present,
    presentStreams,
    ids: presentStreams.map((s) => s.id),
    intervals: present.map((a, i) => usualSampleInterval(presentStreams[i]!, a.presence)),
  };
  // Only lists the store keeps (frozen): a list made for this call (a store that keeps none) is
  // never asked with again.
  if (Object.isFrozen(streams)) plans.set(streams, { actors, plan });
  return plan;
}

/**
 * A scene entry's constructor, where an object literal would do, because of V8's allocation-site
 * pretenuring: V8 follows how many objects made by each literal outlive a young-generation collection,
 * and a scene that decodes chunks collects while its entries are being built, so after a few such
 * scenes V8 made every later entry directly in the old generation. Each then held young values (its
 * numbers), which made every young collection of a scene loop several times dearer, and the slowest
 * scenes slower. Objects made by a constructor are not pretenured. Its prototype is
 * Object.prototype: an entry is a plain object to every reader (JSON, deepStrictEqual).
 */
const SceneEntry = function (this: SceneActor, id: string, kind: string, t: number) {
  this.id = id;
  this.kind = kind;
  this.t = t;
} as unknown as new (id: string, kind: string, t: number) => SceneActor;
SceneEntry.prototype = Object.prototype;

export { interpolateSample } from '../model/interpolate.js';

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
/** Throws not_found unless the run exists and has the actor. */
export async function requireActor(store: StoreBackend, run: number, actor: string): Promise<void> {
  await requireRun(store, run);
  const actors = await store.listActors(run);
  if (!actors.some((a) => a.id === actor)) throw notFound(`run ${run} has no actor ${describeValue(actor)}`);
}

export async function trajectory(
  store: StoreBackend,
  run: number,
  args: TrajectoryArgs,
): Promise<Trajectory> {
  await requireActor(store, run, args.actor);
  const samples: Sample[] = [];
  for await (const batch of streamSamples(store, run, streamId(args.actor, STATE_STREAM), args))
    samples.push(...batch);
  return { actor: args.actor, samples };
}

/**
 * An actor's `state` over a time window as columns (typed arrays per field): what a plot, the viewer's
 * state window or an exporter wants, without an object per sample.
 */
export async function trajectoryColumns(
  store: StoreBackend,
  run: number,
  args: TrajectoryArgs & { fields?: readonly string[] },
): Promise<ColumnBatch> {
  await requireRun(store, run);
  const read: Parameters<StoreBackend['readColumns']>[0] = {
    run,
    stream: streamId(args.actor, STATE_STREAM),
  };
  if (args.from !== undefined) read.from = args.from;
  if (args.to !== undefined) read.to = args.to;
  if (args.signal !== undefined) read.signal = args.signal;
  if (args.fields !== undefined) read.fields = args.fields;
  return store.readColumnsJoined(read);
}

export interface WindowArgs {
  from?: number;
  to?: number;
  signal?: AbortSignal;
  /** Nothing read is kept in the store's caches (ReadSamplesArgs.transient). */
  transient?: boolean;
}

/** Picks the rows of a stream's batches, in order, that a read makes into samples. */
export interface RowFilter {
  /** The indexes of the rows of `batch` to keep, ascending. Called with each batch in time order. */
  of(batch: ColumnBatch): number[];
}

/** Any stream's samples over a time window, as an async iterator of batches. */
export function streamSamples(
  store: StoreBackend,
  run: number,
  stream: string,
  args: WindowArgs & {
    /** Only these fields (t and step always): only their columns are decoded. */
    fields?: readonly string[];
    /**
     * Which rows of each batch become samples (the others are never built): `new ChangedRows()`
     * (sample-changes.ts) for only the samples that differ from the one before them.
     */
    rows?: RowFilter;
  } = {},
): AsyncIterable<Sample[]> {
  const read: Parameters<StoreBackend['readColumns']>[0] = { run, stream };
  if (args.from !== undefined) read.from = args.from;
  if (args.to !== undefined) read.to = args.to;
  if (args.signal !== undefined) read.signal = args.signal;
  if (args.transient !== undefined) read.transient = args.transient;
  if (args.fields === undefined && args.rows === undefined) return store.readSamples(read);
  return samplesOfColumns(store, read, args.fields, args.rows);
}

/**
 * Samples built from the stream's columns: with `fields`, only those (t and step always), and only
 * those columns decoded, a field the stream does not declare refused naming the fields it has; with a
 * filter, only the rows it picks.
 */
async function* samplesOfColumns(
  store: StoreBackend,
  read: Parameters<StoreBackend['readColumns']>[0],
  asked: readonly string[] | undefined,
  filter: RowFilter | undefined,
): AsyncIterable<Sample[]> {
  await requireRun(store, read.run);
  const info = (await store.listStreams(read.run, { shared: true })).find((s) => s.id === read.stream);
  if (!info) throw notFound(`run ${read.run} has no stream ${JSON.stringify(read.stream)}`);
  const declared = fieldsOfStream(info);
  if (asked !== undefined) {
    // t and step, which every sample has, may be named too; a name given twice is read once.
    const fields = [...new Set(asked)].filter((name) => name !== 't' && name !== 'step');
    for (const name of fields)
      if (!declared.some((f) => f.name === name))
        throw new SimrecError(
          'invalid',
          `fields: stream ${read.stream} of run ${read.run} has no field ${JSON.stringify(name)} (it has t, step, ${declared.map((f) => f.name).join(', ')})`,
        );
    read = { ...read, fields };
  }
  for await (const batch of store.readColumns(read)) {
    const rows = filter?.of(batch);
    if (rows === undefined) {
      const out = new Array<Sample>(batch.t.length);
      for (let i = 0; i < batch.t.length; i++) out[i] = sampleAt(batch, declared, i);
      yield out;
    } else if (rows.length) yield rows.map((i) => sampleAt(batch, declared, i));
  }
}
