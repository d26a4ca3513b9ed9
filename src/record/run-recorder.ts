import type { Attachment } from '../model/attachment.js';
import { validateAttachment } from '../model/attachment.js';
import { conflict, describeValue, invalid, SimrecError } from '../model/errors.js';
import {
  checkEndReason,
  checkMicros,
  checkPresence,
  type PresenceInterval,
  normalizeActor,
  normalizeRunInit,
  type ActorDecl,
  type ActorInfo,
  type ActorPresence,
  type EndReason,
  type RunInfo,
  type RunInit,
} from '../model/run.js';
import {
  normalizeColumns,
  normalizeFieldColumns,
  type ColumnBatch,
  type ColumnBatchInput,
  type FrameInput,
} from '../model/columns.js';
import type { ColumnAppend, StoreBackend, StreamAppend, WriterIdentity } from '../model/store-port.js';
import {
  inferFieldType,
  normalizeStream,
  validateSample,
  type FieldDecl,
  type FieldType,
  type Sample,
  type StreamDecl,
  type StreamSchema,
} from '../model/stream.js';
import { currentWriter } from '../store/open-store.js';
import { ColumnBuilder } from './column-builder.js';
import { FrameBuffer } from './frame-buffer.js';

export interface RecorderOptions {
  /**
   * How long an append may wait for others to share its commit, in milliseconds. Each commit is one
   * durable write (an fsync for SQLite), so batching appends is what makes 200 actors at 100 Hz cheap.
   * The default, 0, commits on the next turn of the event loop: everything appended in the same turn
   * shares one commit, and a simulator that awaits each step waits only for its own fsync.
   */
  commitIntervalMs?: number;
  /** Commit at once when this many samples wait. */
  maxPendingSamples?: number;
  /** Defaults to this process. */
  writer?: WriterIdentity;
}

interface StreamState {
  schema: StreamSchema;
  /** The schema's fields as JSON: streams of a frame that share it are validated once for all. */
  signature: string;
  actor: ActorInfo | null;
  /**
   * Time of the last accepted sample, to refuse time going backwards; -Infinity before the first. A
   * number from the start, so that V8 keeps it as a double written in place: with null first, each
   * frame's write of 200 times boxed 200 new numbers for the garbage collector.
   */
  lastT: number;
  /** True only for samples that certainly pass validateSample; anything else gets the full check. */
  isPlainValid: (sample: unknown, previousT: number | null) => boolean;
}

/**
 * The actors of the last frame appended, with what is known of them until something changes it: their
 * streams' fields, record switches and presence did not need a look per actor at every frame.
 */
interface FrameActors {
  actors: readonly string[];
  states: StreamState[];
  /** The states' stream ids, which the frame buffer keeps as they are. */
  ids: readonly string[];
  /** Whether every stream declares the same fields (streams are never redeclared). */
  sameFields: boolean;
  /** Whether every actor records, as of `RunRecorder.actorsVersion` = recordedAt. */
  recordedAt: number;
  allRecorded: boolean;
  /** The `RunRecorder.presenceVersion` at which every actor was last seen present; -1 if one was not. */
  presentAt: number;
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * The common case of validateSample in one pass over the sample's own keys: declared scalar fields of the
 * right type and nothing else. validateSample visits every declared field and compares every key with
 * every field, which at 2 M samples a run was the recorder's largest cost. Whatever this does not accept
 * (json or vec fields, undeclared fields, any error) goes to validateSample, which words the error.
 */
function plainSampleCheck(schema: StreamSchema): StreamState['isPlainValid'] {
  const fields = new Map(schema.fields.map((f) => [f.name, f] as const));
  const required = schema.fields.filter((f) => !f.optional).map((f) => f.name);
  return (sample, previousT) => {
    if (typeof sample !== 'object' || sample === null || Array.isArray(sample)) return false;
    const s = sample as Record<string, unknown>;
    const t = s.t;
    if (!Number.isSafeInteger(t) || !Number.isSafeInteger(s.step)) return false;
    if (previousT !== null && (t as number) < previousT) return false;
    for (const name of required) if (s[name] === undefined || s[name] === null) return false;
    for (const key in s) {
      if (key === 't' || key === 'step') continue;
      const field = fields.get(key);
      if (field === undefined) return false;
      const v = s[key];
      if (v === undefined || v === null) continue;
      switch (field.type) {
        case 'f64':
          if (typeof v !== 'number' || !Number.isFinite(v)) return false;
          break;
        case 'f32':
          if (typeof v !== 'number' || !Number.isFinite(Math.fround(v))) return false;
          break;
        case 'i32':
          if (!Number.isInteger(v) || (v as number) < INT32_MIN || (v as number) > INT32_MAX) return false;
          break;
        case 'i64':
          if (!Number.isSafeInteger(v)) return false;
          break;
        case 'bool':
          if (typeof v !== 'boolean') return false;
          break;
        case 'string':
          if (typeof v !== 'string') return false;
          break;
        default:
          return false;
      }
    }
    return true;
  };
}

interface CommitGroup {
  promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function newGroup(): CommitGroup {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Callers may fire appends without awaiting each one; a failure still reaches them through flush()
  // and end(), so an unawaited append must not crash the process with an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * The recording API that simulators, importers and the demo use: begin a run, declare actors and
 * streams, append samples, attach blobs, end the run.
 *
 * Appends are validated at once (a bad sample throws and nothing of its batch is kept) and committed
 * in groups; the promise an append returns resolves only when its samples are durable in the store.
 * If the process dies, the next open of the store closes the run as `interrupted` with every
 * acknowledged sample.
 */
export class RunRecorder {
  private readonly streams = new Map<string, StreamState>();
  /** Actors' streams by name (`state`: how many `<actor>/state` are declared). */
  private readonly namedStreams = new Map<string, number>();
  private readonly actors = new Map<string, ActorInfo>();
  /** Each actor's presence so far (see model/run.ts), and the actors whose presence the store lacks. */
  private readonly presence = new Map<string, PresenceInterval[]>();
  private readonly presenceChanged = new Set<string>();
  private readonly pending = new Map<StreamState, ColumnBuilder>();
  /** Frames waiting for the commit, one buffer per frame name (frame-buffer.ts). */
  private readonly frameBuffers = new Map<string, FrameBuffer>();
  private pendingCount = 0;
  private group: CommitGroup | null = null;
  /** Cancels the scheduled commit, if one is scheduled. */
  private cancelScheduled: (() => void) | null = null;
  /**
   * Every write handed to the store, declarations and commits, settled or not: what flush() waits for,
   * and what the next write waits for unless the store keeps the order of its writes (see inOrder).
   */
  private writes: Promise<void> = Promise.resolve();
  /** Commits handed to the store and not yet durable. */
  private commitsInFlight = 0;
  /** A scheduled commit found one in flight: it is made when that one is durable, with all that came since. */
  private commitDeferred = false;
  private failure: unknown = null;
  private ended = false;
  private lastSampleT: number | null = null;
  /** Time of the last sample the store acknowledged: where a run that failed to write ends. */
  private lastDurableT: number | null = null;
  private readonly commitIntervalMs: number;
  private readonly maxPendingSamples: number;
  readonly store: StoreBackend;
  readonly run: RunInfo;

  private constructor(store: StoreBackend, run: RunInfo, options: RecorderOptions) {
    this.store = store;
    this.run = run;
    this.commitIntervalMs = options.commitIntervalMs ?? 0;
    this.maxPendingSamples = options.maxPendingSamples ?? 50_000;
  }

  static async begin(
    store: StoreBackend,
    init: RunInit = {},
    options: RecorderOptions = {},
  ): Promise<RunRecorder> {
    const run = await store.createRun(normalizeRunInit(init), options.writer ?? currentWriter());
    return new RunRecorder(store, run, options);
  }

  get id(): number {
    return this.run.id;
  }

  /**
   * Declares actors (or re-declares them, e.g. to change their record switch). The recorder knows them
   * at once: streams of them may be declared, and their samples appended, without waiting for this
   * promise, which resolves once the store has them (written after everything handed over before,
   * before every sample after: durable with the run's next samples, which cannot be durable without
   * them; docs/recording-engine.md, Durability).
   */
  async declareActors(decls: ActorDecl[]): Promise<ActorInfo[]> {
    this.checkOpen();
    if (!Array.isArray(decls))
      throw invalid(`declareActors: expected an array of actors, got ${describeValue(decls)}`);
    const actors = decls.map(normalizeActor);
    const ids = new Set<string>();
    for (const a of actors) {
      if (ids.has(a.id)) throw invalid(`actor ${a.id} is declared twice in one call`);
      ids.add(a.id);
    }
    this.actorsVersion++;
    for (const a of actors) {
      this.actors.set(a.id, a);
      for (const s of this.streams.values()) if (s.actor?.id === a.id) s.actor = a;
    }
    await this.storeInOrder(() => this.store.putActors(this.run.id, actors));
    return actors;
  }

  async declareActor(decl: ActorDecl): Promise<ActorInfo> {
    return (await this.declareActors([decl]))[0]!;
  }

  /**
   * Declares streams; returns their ids (`actor/name`, or `name` for run-level streams). Known to the
   * recorder at once (samples may follow without waiting), stored in order, as declareActors.
   */
  async declareStreams(decls: StreamDecl[]): Promise<string[]> {
    this.checkOpen();
    if (!Array.isArray(decls))
      throw invalid(`declareStreams: expected an array of streams, got ${describeValue(decls)}`);
    const schemas = decls.map(normalizeStream);
    const ids = new Set<string>();
    for (const schema of schemas) {
      if (schema.actor !== null && !this.actors.has(schema.actor))
        throw invalid(
          `stream ${schema.id}: actor ${JSON.stringify(schema.actor)} is not declared in run ${this.run.id}`,
        );
      if (this.streams.has(schema.id) || ids.has(schema.id))
        throw conflict(`stream ${schema.id} is already declared in run ${this.run.id}`);
      ids.add(schema.id);
    }
    const stored = this.storeInOrder(() => this.store.putStreams(this.run.id, schemas));
    for (const schema of schemas) {
      if (schema.actor !== null)
        this.namedStreams.set(schema.name, (this.namedStreams.get(schema.name) ?? 0) + 1);
      this.streams.set(schema.id, {
        schema,
        signature: JSON.stringify(schema.fields),
        actor: schema.actor === null ? null : this.actors.get(schema.actor)!,
        lastT: -Infinity,
        isPlainValid: plainSampleCheck(schema),
      });
    }
    await stored;
    return schemas.map((s) => s.id);
  }

  /**
   * Writes a declaration to the store after everything handed to it before (the commits and
   * declarations before) and before the next commit (inOrder), so that its caller need not wait for it
   * before appending. A declaration written at once, on the appending thread's connection, waited for the
   * writer thread's commit to let go of the database, in SQLite's busy sleeps, for every departing
   * vehicle of a busy simulation. A declaration that cannot be stored fails the
   * recording, as a failed commit does: samples of its streams could not be stored either.
   */
  private storeInOrder(write: () => Promise<void>): Promise<void> {
    return this.inOrder(async () => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the store's failure, rethrown as it came
      if (this.failure) throw this.failure;
      try {
        await write();
      } catch (error) {
        this.failure ??= error;
        throw error;
      }
    });
  }

  /**
   * Hands a write to the store after every write handed over before it: now when `now` is true and the
   * store keeps the order of its writes (`StoreBackend.keepsWriteOrder`: SQLite's writer thread takes
   * them in one queue), else once the write before has settled. Waiting for the write before where the
   * store keeps the order anyway held up a simulator that appends without yielding (the demo): a write
   * handed over when the one before settles goes in a later turn of its event loop, and its loop turned
   * only at its checkpoints, where it then waited for its departing vehicles' declarations and the
   * commit one after another, each a round trip to the writer thread, while that thread idled.
   */
  private inOrder<T>(write: () => Promise<T>, now = true): Promise<T> {
    const done = now && this.store.keepsWriteOrder ? write() : this.writes.then(write);
    const before = this.writes;
    this.writes = done.then(
      () => before,
      () => before,
    );
    return done;
  }

  async declareStream(decl: StreamDecl): Promise<string> {
    return (await this.declareStreams([decl]))[0]!;
  }

  /** The per-actor record switch: while off, the actor's samples are accepted and dropped. */
  async setRecording(actorId: string, record: boolean): Promise<void> {
    const actor = this.actors.get(actorId);
    if (!actor) throw invalid(`actor ${JSON.stringify(actorId)} is not declared in run ${this.run.id}`);
    if (actor.record !== record) await this.declareActors([{ ...actor, record }]);
  }

  /** Appends one sample. Throws at once on bad input; resolves when the sample is durable. */
  append(stream: string, sample: Sample): Promise<void> {
    return this.appendBatch(stream, [sample]);
  }

  /** Appends samples of one stream, all or none. Throws at once on bad input; resolves when durable. */
  appendBatch(stream: string, samples: Sample[]): Promise<void> {
    return this.appendMany([{ stream, samples }]);
  }

  /** Appends samples of several streams (a frame of the whole scene, say), all or none. */
  appendMany(appends: StreamAppend[]): Promise<void> {
    this.checkOpen();
    if (!Array.isArray(appends))
      throw invalid(`appendMany: expected an array of {stream, samples}, got ${describeValue(appends)}`);
    const accepted: { state: StreamState; samples: Sample[]; lastT: number; plain: boolean }[] = [];
    const lastT = new Map<StreamState, number>();
    for (const entry of appends) {
      if (typeof entry !== 'object' || entry === null)
        throw invalid(`appendMany: expected {stream, samples}, got ${describeValue(entry)}`);
      const { stream, samples } = entry;
      const state = this.streams.get(stream);
      if (!state) throw invalid(`run ${this.run.id} has no declared stream ${describeValue(stream)}`);
      if (!Array.isArray(samples))
        throw invalid(`stream ${stream}: expected an array of samples, got ${describeValue(samples)}`);
      let previous = lastT.has(state) ? lastT.get(state)! : state.lastT;
      // Plain: declared scalar fields only, so there is no undeclared field's type to infer.
      let plain = true;
      for (const sample of samples) {
        if (!state.isPlainValid(sample, previous)) {
          validateSample(state.schema, sample, previous);
          plain = false;
        }
        previous = sample.t;
      }
      lastT.set(state, previous);
      if (samples.length && (state.actor === null || state.actor.record))
        accepted.push({ state, samples, lastT: previous, plain });
    }
    for (const [state, t] of lastT) state.lastT = t;
    if (accepted.length === 0) return Promise.resolve();
    for (const { state, samples, lastT: t, plain } of accepted) {
      if (state.actor !== null) this.sawActor(state.actor.id, samples[0]!.t);
      const builder = this.builderOf(state);
      const types = plain ? NO_TYPES : undeclaredTypes(state.schema, samples);
      for (const s of samples) builder.appendSample(s, types);
      this.pendingCount += samples.length;
      if (this.lastSampleT === null || t > this.lastSampleT) this.lastSampleT = t;
    }
    return this.joinCommit();
  }

  /**
   * Appends a batch of one stream as columns (typed arrays or plain arrays, see model/columns.ts):
   * validated column by column, with no object per sample. All or none; the caller may reuse its
   * arrays as soon as this returns. Resolves when durable.
   */
  appendColumns(stream: string, input: ColumnBatchInput): Promise<void> {
    return this.appendColumnsMany([{ stream, input }]);
  }

  /** Batches of several streams as columns (see appendColumns), all or none. Resolves when durable. */
  appendColumnsMany(appends: readonly { stream: string; input: ColumnBatchInput }[]): Promise<void> {
    this.checkOpen();
    const accepted: { state: StreamState; batch: ColumnBatch }[] = [];
    // Validated against the time each stream reached earlier in the same call, applied once all pass.
    const lastT = new Map<StreamState, number>();
    for (const { stream, input } of appends) {
      const state = this.streams.get(stream);
      if (!state) throw invalid(`run ${this.run.id} has no declared stream ${describeValue(stream)}`);
      const previous = lastT.has(state) ? lastT.get(state)! : state.lastT;
      const batch = normalizeColumns(state.schema, input, previous);
      const n = batch.t.length;
      if (n === 0) continue;
      lastT.set(state, batch.t[n - 1]!);
      accepted.push({ state, batch });
    }
    for (const [state, t] of lastT) state.lastT = t;
    let recorded = false;
    for (const { state, batch } of accepted) {
      if (state.actor !== null && !state.actor.record) continue;
      if (state.actor !== null) this.sawActor(state.actor.id, batch.t[0]!);
      this.builderOf(state).appendBatch(batch);
      this.pendingCount += batch.t.length;
      const t = batch.t[batch.t.length - 1]!;
      if (this.lastSampleT === null || t > this.lastSampleT) this.lastSampleT = t;
      recorded = true;
    }
    return recorded ? this.joinCommit() : Promise.resolve();
  }

  /**
   * How many actors' streams named `name` are declared (`<actor>/name`): a frame of that name lists at
   * most that many actors, which the ingest server checks before it decodes their ids.
   */
  actorStreamsNamed(name: string): number {
    return this.namedStreams.get(name) ?? 0;
  }

  /** A declared stream's fields (undefined if the run has no such stream): what binary batches refer to. */
  streamFields(stream: string): readonly FieldDecl[] | undefined {
    return this.streams.get(stream)?.schema.fields;
  }

  /**
   * The streams `actor/name` of a frame's actors, in their order. A simulator sends the same actors step
   * after step: the last frame's list of each name is kept and reused when its actors are the same
   * (streams are never removed from a run), since building and looking up a stream id per actor every
   * step was a large share of the appending thread's time.
   */
  private frameOf(name: string, actors: readonly string[]): FrameActors {
    const last = this.lastFrames.get(name);
    if (last && last.actors.length === actors.length) {
      let i = 0;
      while (i < actors.length && actors[i] === last.actors[i]) i++;
      if (i === actors.length) return last;
    }
    const states: StreamState[] = new Array<StreamState>(actors.length);
    // Looked at only when the list differs from the last frame's (a simulator sends the same actors
    // step after step): an actor twice in a frame is a caller's mistake, not two samples.
    const places = new Map<StreamState, number>();
    for (let i = 0; i < actors.length; i++) {
      const state = this.streams.get(`${actors[i]}/${name}`);
      if (!state)
        throw invalid(
          `run ${this.run.id} has no declared stream ${describeValue(`${actors[i]}/${name}`)} (frame actor ${i})`,
        );
      const first = places.get(state);
      if (first !== undefined)
        throw invalid(
          `frame of ${name}: actor ${describeValue(actors[i])} is listed twice (places ${first} and ${i}); a frame holds one row per actor`,
        );
      places.set(state, i);
      states[i] = state;
    }
    const known: FrameActors = {
      actors: actors.slice(),
      states,
      ids: states.map((s) => s.schema.id),
      sameFields: states.every((s) => s.signature === states[0]!.signature),
      recordedAt: -1,
      allRecorded: false,
      presentAt: -1,
    };
    this.lastFrames.set(name, known);
    return known;
  }

  /** The last frame's actors, by frame name (a simulator's `state` and `signal` frames alternate). */
  private readonly lastFrames = new Map<string, FrameActors>();
  /** Counts declareActors calls: a frame's record switches are looked at again after one. */
  private actorsVersion = 0;
  /** Counts changes that may close an actor's stretch of presence (leave, setPresence). */
  private presenceVersion = 0;

  /**
   * Appends one step of many actors' streams named `name` (their `state`, say): each column holds one
   * value per actor, in the order of `frame.actors`. Validated column by column across the actors (once
   * for all actors whose streams share a schema); all or none. The values are copied before this
   * returns: the caller may fill the same arrays for its next frame (the ingest server decodes every
   * frame into the same ones). Resolves when durable.
   */
  appendFrame(name: string, frame: FrameInput): Promise<void> {
    this.checkOpen();
    if (typeof frame !== 'object' || frame === null)
      throw invalid(
        `frame of ${describeValue(name)}: expected an object {t, step, actors, columns}, got ${describeValue(frame)}`,
      );
    const actors = frame.actors;
    if (!Array.isArray(actors))
      throw invalid(`frame of ${name}: actors: expected an array of actor ids, got ${describeValue(actors)}`);
    const n = actors.length;
    if (n === 0) return Promise.resolve();
    if (!Number.isSafeInteger(frame.t))
      throw invalid(
        `frame of ${name}: t: expected an integer number of microseconds, got ${describeValue(frame.t)}`,
      );
    if (!Number.isSafeInteger(frame.step))
      throw invalid(
        `frame of ${name} at t=${frame.t}: step: expected an integer, got ${describeValue(frame.step)}`,
      );
    const known = this.frameOf(name, actors);
    const states = known.states;
    for (let i = 0; i < n; i++) {
      const state = states[i]!;
      if (frame.t < state.lastT)
        throw invalid(
          `stream ${state.schema.id} sample at t=${frame.t}: time goes backwards (previous sample at t=${state.lastT})`,
        );
    }
    const schema = states[0]!.schema;
    if (!known.sameFields)
      throw invalid(
        `frame of ${name}: the actors' ${name} streams declare different fields; append them apart`,
      );
    // Every row has the frame's time: no array of times is made, nor checked.
    const batch = normalizeFieldColumns(
      schema,
      frame.columns,
      n,
      () => frame.t,
      (i, ti) => `stream ${states[i]!.schema.id} sample at t=${ti}`,
    );
    if (known.recordedAt !== this.actorsVersion) {
      known.allRecorded = states.every((state) => state.actor === null || state.actor.record);
      known.recordedAt = this.actorsVersion;
    }
    let recorded = states;
    let ids = known.ids;
    if (!known.allRecorded) {
      recorded = states.filter((state) => state.actor === null || state.actor.record);
      ids = recorded.map((s) => s.schema.id);
    }
    for (const state of states) state.lastT = frame.t;
    if (recorded.length === 0) return Promise.resolve();
    // Presence is looked at per actor only when it may change: not when every actor of these streams
    // was present (an open stretch) at their last frame and nothing has closed a stretch since (200
    // lookups a frame saved).
    if (known.presentAt !== this.presenceVersion || !known.allRecorded) {
      let allOpen = true;
      for (const state of recorded)
        if (state.actor !== null) allOpen = this.sawActor(state.actor.id, frame.t) && allOpen;
      // Known only when every actor was looked at: one whose record switch is off was not, and may
      // have left meanwhile (found by the random run in test/store-engine.test.ts).
      known.presentAt = allOpen && known.allRecorded ? this.presenceVersion : -1;
    }
    let columns = batch.columns;
    if (recorded.length < n) {
      // Actors whose record switch is off: their values are dropped before the buffer.
      const keep = states.map((s, i) => (recorded.includes(s) ? i : -1)).filter((i) => i >= 0);
      columns = {};
      for (const name in batch.columns) {
        const v = batch.columns[name]!;
        const width = v instanceof Float64Array ? v.length / n : 1;
        if (v instanceof Float64Array) {
          const out = new Float64Array(keep.length * width);
          keep.forEach((i, j) => out.set(v.subarray(i * width, (i + 1) * width), j * width));
          columns[name] = out;
        } else columns[name] = keep.map((i) => v[i]);
      }
    }
    const signature = states[0]!.signature;
    let buffer = this.frameBuffers.get(name);
    if (!buffer || buffer.signature !== signature || !buffer.accepts(batch.types)) {
      if (buffer) this.drainFrames(buffer);
      this.frameBuffers.set(name, (buffer = new FrameBuffer(signature, batch.types)));
    }
    buffer.append(frame.t, frame.step, ids, columns);
    this.pendingCount += recorded.length;
    if (this.lastSampleT === null || frame.t > this.lastSampleT) this.lastSampleT = frame.t;
    return this.joinCommit();
  }

  /** Moves buffered frames into the streams' builders, so that rows of other kinds follow them in order. */
  private drainFrames(frames: FrameBuffer): void {
    if (!frames.length) return;
    for (const { stream, batch } of frames.take())
      this.builderOf(this.streams.get(stream)!).appendBatch(batch);
  }

  /**
   * An actor appears with a sample unless the recorder was told otherwise: a sample after the end of
   * everything known of the actor (never seen, or left before t) opens a new stretch of presence.
   * A sample inside or between stretches someone set is theirs to explain and changes nothing.
   */
  private sawActor(actor: string, t: number): boolean {
    let intervals = this.presence.get(actor);
    if (!intervals) this.presence.set(actor, (intervals = []));
    const last = intervals[intervals.length - 1];
    if (last !== undefined && last.to === null) return true;
    if (last !== undefined && t < last.to!) return false;
    // Back at the very moment it left: one stretch, not two touching ones.
    if (last !== undefined && t === last.to) last.to = null;
    else intervals.push({ from: t, to: null });
    this.presenceChanged.add(actor);
    return true;
  }

  private presenceOf(actorId: string, t: number, what: string): PresenceInterval[] {
    this.checkOpen();
    if (!this.actors.has(actorId))
      throw invalid(`${what}: actor ${describeValue(actorId)} is not declared in run ${this.run.id}`);
    checkMicros(t, `${what} of actor ${JSON.stringify(actorId)}: t`);
    let intervals = this.presence.get(actorId);
    if (!intervals) this.presence.set(actorId, (intervals = []));
    return intervals;
  }

  /**
   * Says that an actor has gone at t (absent from t on), until a later sample or `appear` brings it
   * back. An actor that is not present is left as it is. Resolves when durable.
   */
  leave(actorId: string, t: number): Promise<void> {
    const intervals = this.presenceOf(actorId, t, 'leave');
    const last = intervals[intervals.length - 1];
    if (last === undefined || last.to !== null) return Promise.resolve();
    if (t < last.from)
      throw invalid(
        `leave of actor ${JSON.stringify(actorId)} at t=${t}: it appeared at t=${last.from}, after that`,
      );
    if (t === last.from) intervals.pop();
    else last.to = t;
    this.presenceVersion++;
    this.presenceChanged.add(actorId);
    return this.joinCommit();
  }

  /**
   * Says that an actor is present from t, whether or not a sample comes with it (a vehicle that enters
   * before its first state is sent, say). An actor already present is left as it is. Resolves when durable.
   */
  appear(actorId: string, t: number): Promise<void> {
    const intervals = this.presenceOf(actorId, t, 'appear');
    const last = intervals[intervals.length - 1];
    if (last !== undefined && last.to === null) return Promise.resolve();
    if (last !== undefined && t < last.to!)
      throw invalid(
        `appear of actor ${JSON.stringify(actorId)} at t=${t}: it left at t=${last.to}; presence cannot go back in time`,
      );
    this.sawActor(actorId, t);
    return this.joinCommit();
  }

  /**
   * Sets an actor's whole presence at once, replacing what samples said: for importers that know from
   * their source when each actor was there (LimSim's frames, say). Resolves when durable.
   */
  setPresence(actorId: string, intervals: readonly PresenceInterval[]): Promise<void> {
    this.presenceOf(actorId, 0, 'setPresence');
    this.presence.set(actorId, checkPresence(actorId, intervals));
    this.presenceVersion++;
    this.presenceChanged.add(actorId);
    return this.joinCommit();
  }

  private builderOf(state: StreamState): ColumnBuilder {
    // A stream with frames waiting gets its other rows after them.
    const frames = this.frameBuffers.get(state.schema.name);
    if (frames?.holds(state.schema.id)) this.drainFrames(frames);
    let builder = this.pending.get(state);
    if (!builder) this.pending.set(state, (builder = new ColumnBuilder(state.schema.fields)));
    return builder;
  }

  private joinCommit(): Promise<void> {
    this.group ??= newGroup();
    const promise = this.group.promise;
    this.scheduleCommit();
    return promise;
  }

  /** Keeps a blob with the run; resolves when durable. */
  async attach(attachment: Attachment): Promise<void> {
    this.checkOpen();
    await this.store.putAttachment(this.run.id, validateAttachment(attachment));
  }

  /** Commits everything appended so far; resolves when it is durable. */
  async flush(): Promise<void> {
    if (this.pendingCount > 0 || this.presenceChanged.size > 0) this.commitNow();
    await this.writes;
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the store's failure, rethrown as it came
    if (this.failure) throw this.failure;
  }

  /**
   * Ends the run. Its end time is `options.end`, else the last sample's time, else now (so a run
   * simulated faster than real time ends where its data ends).
   */
  async end(reason: EndReason = 'user_request', options: { end?: number } = {}): Promise<RunInfo> {
    checkEndReason(reason);
    if (options.end !== undefined) checkMicros(options.end, 'end');
    if (this.ended) throw conflict(`run ${this.run.id} has already ended`);
    // After a failed write (a full disk, say) the run is still closed, with what was acknowledged, and
    // then the failure is thrown: whoever ends the run must hear that samples were lost.
    await this.flush().catch(() => {});
    this.ended = true;
    const failed = this.failure;
    const end = options.end ?? (failed ? this.lastDurableT : this.lastSampleT) ?? Date.now() * 1000;
    const info = await this.store.endRun(this.run.id, {
      end: Math.max(end, this.run.begin),
      endReason: reason,
    });
    if (failed)
      throw new SimrecError(
        'io',
        `run ${this.run.id} was closed (${reason}) with its acknowledged samples only; a write had failed: ${(failed as Error).message}`,
        { cause: failed },
      );
    return info;
  }

  private checkOpen(): void {
    if (this.ended) throw conflict(`run ${this.run.id} has ended; nothing more can be recorded in it`);
    if (this.failure)
      throw new SimrecError(
        'io',
        `run ${this.run.id}: recording stopped after a failed write: ${(this.failure as Error).message}`,
        {
          cause: this.failure,
        },
      );
  }

  private scheduleCommit(): void {
    if (this.pendingCount >= this.maxPendingSamples) {
      this.commitNow();
      return;
    }
    if (this.cancelScheduled !== null) return;
    if (this.commitIntervalMs > 0) {
      const timer = setTimeout(() => this.commitWhenIdle(), this.commitIntervalMs);
      this.cancelScheduled = () => clearTimeout(timer);
    } else {
      const immediate = setImmediate(() => this.commitWhenIdle());
      this.cancelScheduled = () => clearImmediate(immediate);
    }
  }

  /**
   * Group commit: while the store makes one commit durable, whatever is appended waits for it to finish
   * and then goes in one commit, not one each. A caller that sends batches as they come (the ingest
   * server, which reads them off a socket) would otherwise pay a commit, an fsync, per batch; one that
   * awaits each append is never behind a commit and commits at once, as before.
   */
  private commitWhenIdle(): void {
    this.cancelScheduled = null;
    if (this.commitsInFlight > 0) this.commitDeferred = true;
    else this.commitNow();
  }

  /**
   * Gives a commit's columns to the store, and lets go of them: what waits for the store's answer (an
   * async function's frame, the commit's closure) must not hold them. Held through a commit's flight,
   * the columns of the commit before survived the appending thread's young collections, and doubled
   * what each of them had to copy.
   */
  private handOver(handover: Handover): Promise<void> {
    const { appends, presence } = handover;
    handover.appends = [];
    // Presence changed with these samples goes with them (in the same transaction where the store has
    // one); alone, it is written as it is, except to a store that keeps the order of writes: there it
    // goes as an append of no samples, into the same queue as the declarations.
    if (appends.length || (presence.length && this.store.keepsWriteOrder))
      return this.store.appendColumns(this.run.id, appends, presence);
    return presence.length ? this.store.putPresence(this.run.id, presence) : Promise.resolve();
  }

  private commitNow(): void {
    this.cancelScheduled?.();
    this.cancelScheduled = null;
    const group = this.group;
    const appends: ColumnAppend[] = [];
    let batchEnd: number | null = null;
    // A stream's frames follow its rows of other kinds (builderOf empties the frames into the builders
    // before such rows join them), so where a stream has both they go into one batch, builder first.
    const framed: ColumnAppend[] = [];
    for (const frames of this.frameBuffers.values()) {
      if (!frames.length) continue;
      const t = frames.lastT!;
      if (batchEnd === null || t > batchEnd) batchEnd = t;
      for (const a of frames.take()) {
        const builder = this.pending.get(this.streams.get(a.stream)!);
        if (builder?.length) builder.appendBatch(a.batch);
        else framed.push(a);
      }
    }
    for (const [state, builder] of this.pending) {
      if (builder.length === 0) continue;
      const t = builder.lastT!;
      if (batchEnd === null || t > batchEnd) batchEnd = t;
      appends.push({ stream: state.schema.id, batch: builder.take() });
    }
    for (const a of framed) appends.push(a);
    const presence = [...this.presenceChanged].map((actor) => ({
      actor,
      intervals: this.presence.get(actor)!.map((iv) => ({ ...iv })),
    }));
    this.presenceChanged.clear();
    this.pendingCount = 0;
    this.group = null;
    if (!group) return;
    // At once when no commit is in flight; after the one in flight otherwise, as before, so that a store
    // under a flood (the ingest server) holds the commits' packed columns one or two at a time.
    const alone = this.commitsInFlight === 0;
    this.commitsInFlight++;
    const handover: Handover = { appends, presence };
    const committed = this.inOrder(async () => {
      if (this.failure) return group.reject(this.failure);
      try {
        await this.handOver(handover);
        if (batchEnd !== null && (this.lastDurableT === null || batchEnd > this.lastDurableT))
          this.lastDurableT = batchEnd;
        group.resolve();
      } catch (error) {
        // The first failure is the cause: a declaration that could not be stored (a full disk) makes
        // the commit handed over behind it fail for want of its stream ("run 1 has no stream").
        this.failure ??= error;
        group.reject(this.failure);
      }
    }, alone);
    // committed never rejects: a failed commit goes to its group's promise above.
    void committed.then(() => {
      this.commitsInFlight--;
      if (this.commitsInFlight === 0 && this.commitDeferred) {
        this.commitDeferred = false;
        this.commitNow();
      }
    });
  }
}

/** A commit's columns and presence until they are given to the store (RunRecorder.handOver). */
interface Handover {
  appends: ColumnAppend[];
  presence: ActorPresence[];
}

const NO_TYPES: ReadonlyMap<string, FieldType> = new Map();

/** The types of a batch's undeclared fields, as its values show them (empty in the usual case). */
function undeclaredTypes(schema: StreamSchema, samples: readonly Sample[]): Map<string, FieldType> {
  const types = new Map<string, FieldType>();
  const declared = new Set(schema.fields.map((f) => f.name));
  const names = new Set<string>();
  for (const s of samples)
    for (const key in s) if (key !== 't' && key !== 'step' && !declared.has(key)) names.add(key);
  for (const name of names) types.set(name, inferFieldType(samples.map((s) => s[name])));
  return types;
}
