import { numbersOf, type ColumnBatch } from '../model/columns.js';
import { fieldsOfStream, type StreamInfo } from '../model/stream.js';
import { presenceAt, type ActorInfo } from '../model/run.js';
import { STATE_STREAM } from '../model/standard-streams.js';
import type { StoreBackend } from '../model/store-port.js';

/** Kinds that have no footprint on the road: signs stand beside it, a spectator is a camera. */
const NOT_ON_ROAD = new Set(['traffic_light', 'traffic_sign', 'sensor', 'map', 'spectator']);

const DEFAULT_EXTENTS: Record<string, { length: number; width: number }> = {
  pedestrian: { length: 0.5, width: 0.5 },
  cyclist: { length: 1.8, width: 0.6 },
};
const VEHICLE_EXTENTS = { length: 4.5, width: 1.8 };

/** The number columns of a track: a missing accel or lanePos is NaN. */
const NUMBER_COLUMNS = ['t', 'step', 'x', 'y', 'yaw', 'speed', 'accel', 'lanePos'] as const;
type NumberColumn = (typeof NUMBER_COLUMNS)[number];

/**
 * One actor's states, column by column, with a cursor that moves forward in time: the whole run (the
 * scored actor), or a stretch of it that RunTracks moves along the run (every other actor).
 *
 * The numbers are kept in typed arrays, each column a view of the rows held (`t.length` of them) over
 * storage that grows by a quarter and from which the rows before the cursor are dropped in place, a
 * missing accel or lane position NaN. Plain arrays pushed a row at a time kept spare room each, became
 * arrays of pointers where a `null` stood for a missing value, and the pushing itself was one of the
 * larger parts of an evaluation's profile (docs/performance-history.md).
 */
export class ActorTrack {
  readonly actor: ActorInfo;
  /** Its state stream. */
  readonly stream: StreamInfo;
  readonly length: number;
  readonly width: number;
  /** Half the footprint's diagonal (m): how far from its centre the footprint reaches. */
  readonly reach: number;
  t: Float64Array = new Float64Array(0);
  step: Float64Array = new Float64Array(0);
  x: Float64Array = new Float64Array(0);
  y: Float64Array = new Float64Array(0);
  yaw: Float64Array = new Float64Array(0);
  speed: Float64Array = new Float64Array(0);
  /** NaN where the state has none. */
  accel: Float64Array = new Float64Array(0);
  readonly lane: (string | null)[] = [];
  /** NaN where the state has none. */
  lanePos: Float64Array = new Float64Array(0);
  /** The columns' storage, of which each column is a view of the first rows. */
  private storage: Record<NumberColumn, Float64Array> | null = null;
  private cursor = -1;
  /** The last presence interval begun by the time indexAt was last asked, -1 before the first. */
  private presenceCursor = -1;

  constructor(actor: ActorInfo, stream: StreamInfo) {
    this.actor = actor;
    this.stream = stream;
    const fallback = DEFAULT_EXTENTS[actor.kind] ?? VEHICLE_EXTENTS;
    this.length = actor.extents?.length || fallback.length;
    this.width = actor.extents?.width || fallback.width;
    this.reach = Math.hypot(this.length, this.width) / 2;
  }

  /**
   * Index of the state that stands for the actor at t, or -1 when the actor is not on the road at t;
   * calls must come in non-decreasing t. The actor's presence decides first (the rules of scenes,
   * model/presence.ts): outside its intervals it has left, or not come yet, and is in no collision,
   * near miss, blocking or time to collision; a state from before the interval that holds t (the
   * actor left and came back, with no state since) is not its position. Inside an interval that a
   * leave ended the latest state stands, however old. Where nothing said the actor left (an open
   * interval, or a store from before presence was kept) it is gone once its latest state is older than
   * maxAge.
   */
  indexAt(t: number, maxAge: number): number {
    while (this.cursor + 1 < this.t.length && this.t[this.cursor + 1]! <= t) this.cursor++;
    if (this.cursor < 0) return -1;
    const presence = this.actor.presence;
    if (presence?.length) {
      // presenceAt's answer, found by a cursor: the times asked only grow.
      while (this.presenceCursor + 1 < presence.length && presence[this.presenceCursor + 1]!.from <= t)
        this.presenceCursor++;
      const stretch = this.presenceCursor >= 0 ? presence[this.presenceCursor]! : undefined;
      if (!stretch || (stretch.to !== null && t >= stretch.to) || this.t[this.cursor]! < stretch.from)
        return -1;
      if (stretch.to !== null) return this.cursor;
    }
    return t - this.t[this.cursor]! > maxAge ? -1 : this.cursor;
  }

  rewind(): void {
    this.cursor = -1;
    this.presenceCursor = -1;
  }

  /**
   * Forgets the states before the cursor's: indexAt, asked for later times, can answer no earlier one.
   * Indexes it gave before no longer hold.
   */
  dropBeforeCursor(): void {
    const n = this.cursor;
    if (n <= 0 || !this.storage) return;
    const rows = this.t.length;
    for (const name of NUMBER_COLUMNS) this.storage[name].copyWithin(0, n, rows);
    this.lane.splice(0, n);
    this.cursor = 0;
    this.view(rows - n);
  }

  /** Appends the rows of a batch read from its stream (TRACK_FIELDS), in time order after its own. */
  append(batch: ColumnBatch): void {
    const fields = fieldsOfStream(this.stream);
    const column = (name: string): Float64Array => numbersOf(batch, fields, name);
    const [x, y, yaw, speed, vx, vy] = [
      column('x'),
      column('y'),
      column('yaw'),
      column('speed'),
      column('vx'),
      column('vy'),
    ];
    const [accel, ax, lanePos] = [column('accel'), column('ax'), column('lanePos')];
    const lanes = batch.columns.lane;
    const storage = this.room(batch.t.length);
    // As a sample gives them: a row without a number for x or y is left out; a missing yaw is 0, a
    // missing speed the length of (vx, vy), a missing accel ax.
    const or = (value: number, otherwise: number): number => (Number.isNaN(value) ? otherwise : value);
    const presence = this.actor.presence?.length ? this.actor.presence : undefined;
    let row = this.t.length;
    for (let i = 0; i < batch.t.length; i++) {
      if (Number.isNaN(x[i]!) || Number.isNaN(y[i]!)) continue;
      if (presence && presenceAt(presence, batch.t[i]!) === undefined) continue;
      storage.t[row] = batch.t[i]!;
      storage.step[row] = batch.step[i]!;
      storage.x[row] = x[i]!;
      storage.y[row] = y[i]!;
      storage.yaw[row] = or(yaw[i]!, 0);
      storage.speed[row] = or(speed[i]!, Math.hypot(or(vx[i]!, 0), or(vy[i]!, 0)));
      storage.accel[row] = or(accel[i]!, ax[i]!);
      const lane = Array.isArray(lanes) ? lanes[i] : undefined;
      this.lane.push(typeof lane === 'string' ? lane : null);
      storage.lanePos[row] = lanePos[i]!;
      row++;
    }
    this.view(row);
  }

  /** The storage, with room for `more` rows after those held. */
  private room(more: number): Record<NumberColumn, Float64Array> {
    const rows = this.t.length;
    const capacity = this.storage?.t.length ?? 0;
    if (this.storage && rows + more <= capacity) return this.storage;
    // By a quarter: a track moved along the run holds about a window's rows at every read.
    const grown = Math.max(rows + more, Math.ceil(capacity * 1.25));
    const storage = {} as Record<NumberColumn, Float64Array>;
    for (const name of NUMBER_COLUMNS) {
      storage[name] = new Float64Array(grown);
      storage[name].set(this[name]);
    }
    return (this.storage = storage);
  }

  /** Points the columns at the first `rows` rows of the storage. */
  private view(rows: number): void {
    for (const name of NUMBER_COLUMNS) this[name] = this.storage![name].subarray(0, rows);
  }
}

/** The fields a track keeps, read as columns (the store decodes no other). */
const TRACK_FIELDS = ['x', 'y', 'yaw', 'speed', 'vx', 'vy', 'accel', 'ax', 'lane', 'lanePos'];

/** About this many states of the other actors are held at once (RunTracks.reach). */
export const STATES_HELD = 1_000_000;

/**
 * Every actor on the road with its `state` stream, each with the states taken while it was present
 * (all of them when its presence was never kept), read as columns of the fields a track keeps, not as
 * sample objects through the store's cache. The scored actor's track is read whole (its kinematics
 * look along it); the others a window at a time as the evaluation moves along the run (`reach`), each
 * keeping the one state before the window that still stands for it: every actor's whole track, held
 * at once, made a long run's evaluation take memory in proportion to the run.
 */
export class RunTracks {
  readonly tracks: ActorTrack[];
  private readonly store: StoreBackend;
  private readonly run: number;
  private readonly signal: AbortSignal | undefined;
  /** Read whole: not moved along the run by reach. */
  private readonly whole = new Set<ActorTrack>();
  /** Microseconds of the run read at once. */
  private readonly window: number;
  /** The others' states are read up to here (inclusive). */
  private readTo = -Infinity;

  private constructor(
    store: StoreBackend,
    run: number,
    tracks: ActorTrack[],
    window: number,
    signal?: AbortSignal,
  ) {
    this.store = store;
    this.run = run;
    this.tracks = tracks;
    this.window = window;
    this.signal = signal;
  }

  /**
   * The run's tracks, none read yet. `window`: microseconds of the run read at once; by default as
   * much as holds about STATES_HELD states of all the actors at the run's rate.
   */
  static async open(
    store: StoreBackend,
    run: number,
    options: { signal?: AbortSignal; window?: number } = {},
  ): Promise<RunTracks> {
    const [actors, streams] = await Promise.all([store.listActors(run), store.listStreams(run)]);
    const stateOf = new Map(
      streams.filter((s) => s.name === STATE_STREAM && s.samples > 0).map((s) => [s.actor, s] as const),
    );
    const tracks: ActorTrack[] = [];
    let samples = 0;
    let begin = Infinity;
    let end = -Infinity;
    for (const actor of actors) {
      const stream = stateOf.get(actor.id);
      if (NOT_ON_ROAD.has(actor.kind) || !stream) continue;
      tracks.push(new ActorTrack(actor, stream));
      samples += stream.samples;
      begin = Math.min(begin, stream.begin ?? Infinity);
      end = Math.max(end, stream.end ?? -Infinity);
    }
    const span = Math.max(1, end - begin);
    const window =
      options.window ?? Math.max(1_000_000, Math.ceil((span * STATES_HELD) / Math.max(1, samples)));
    return new RunTracks(store, run, tracks, window, options.signal);
  }

  /** Reads a track whole: it is not moved along the run by reach. */
  async readWhole(track: ActorTrack): Promise<void> {
    this.whole.add(track);
    track.append(await this.read(track));
  }

  /**
   * Every other track holds its states up to t at least: the states before each one's cursor are
   * dropped (indexAt answers later times only), and the next window of the run is read.
   */
  async reach(t: number): Promise<void> {
    if (t <= this.readTo) return;
    const from = this.readTo === -Infinity ? undefined : this.readTo + 1;
    const to = t + this.window;
    for (const track of this.tracks) {
      if (this.whole.has(track)) continue;
      track.dropBeforeCursor();
      track.append(await this.read(track, from, to));
    }
    this.readTo = to;
  }

  private read(track: ActorTrack, from?: number, to?: number): Promise<ColumnBatch> {
    // Transient: each stretch is read once; kept, its chunks filled the store's cache for nothing.
    const read: Parameters<StoreBackend['readColumnsJoined']>[0] = {
      run: this.run,
      stream: track.stream.id,
      fields: TRACK_FIELDS,
      transient: true,
    };
    if (from !== undefined) read.from = from;
    if (to !== undefined) read.to = to;
    if (this.signal) read.signal = this.signal;
    return this.store.readColumnsJoined(read);
  }
}
