import { numbersOf } from '../model/columns.js';
import { fieldsOfStream } from '../model/stream.js';
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

/** One actor's states, column by column, with a cursor that moves forward in time. */
export class ActorTrack {
  readonly actor: ActorInfo;
  readonly length: number;
  readonly width: number;
  readonly t: number[] = [];
  readonly step: number[] = [];
  readonly x: number[] = [];
  readonly y: number[] = [];
  readonly yaw: number[] = [];
  readonly speed: number[] = [];
  readonly accel: (number | null)[] = [];
  readonly lane: (string | null)[] = [];
  readonly lanePos: (number | null)[] = [];
  private cursor = -1;

  constructor(actor: ActorInfo) {
    this.actor = actor;
    const fallback = DEFAULT_EXTENTS[actor.kind] ?? VEHICLE_EXTENTS;
    this.length = actor.extents?.length || fallback.length;
    this.width = actor.extents?.width || fallback.width;
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
      const stretch = presenceAt(presence, t);
      if (!stretch || this.t[this.cursor]! < stretch.from) return -1;
      if (stretch.to !== null) return this.cursor;
    }
    return t - this.t[this.cursor]! > maxAge ? -1 : this.cursor;
  }

  rewind(): void {
    this.cursor = -1;
  }
}

/** The fields a track keeps, read as columns (the store decodes no other). */
const TRACK_FIELDS = ['x', 'y', 'yaw', 'speed', 'vx', 'vy', 'accel', 'ax', 'lane', 'lanePos'];

/**
 * Every actor on the road with its `state` stream, loaded whole (the evaluator walks them in step),
 * each with the states taken while it was present (all of them when its presence was never kept):
 * each stream read once as columns of the fields a track keeps, not as sample objects of every field
 * through the store's cache, which held a long run whole.
 */
export async function loadTracks(
  store: StoreBackend,
  run: number,
  signal?: AbortSignal,
): Promise<ActorTrack[]> {
  const [actors, streams] = await Promise.all([store.listActors(run), store.listStreams(run)]);
  const stateOf = new Map(
    streams.filter((s) => s.name === STATE_STREAM && s.samples > 0).map((s) => [s.actor, s] as const),
  );
  const tracks: ActorTrack[] = [];
  for (const actor of actors) {
    const stream = stateOf.get(actor.id);
    if (NOT_ON_ROAD.has(actor.kind) || !stream) continue;
    // Transient: each stream is read once; kept, its chunks filled the store's cache for nothing.
    const read: Parameters<StoreBackend['readColumnsJoined']>[0] = {
      run,
      stream: stream.id,
      fields: TRACK_FIELDS,
      transient: true,
    };
    if (signal) read.signal = signal;
    const batch = await store.readColumnsJoined(read);
    const fields = fieldsOfStream(stream);
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
    const track = new ActorTrack(actor);
    // As a sample gives them: a row without a number for x or y is left out; a missing yaw is 0, a
    // missing speed the length of (vx, vy), a missing accel ax.
    const value = (values: Float64Array, i: number): number | null =>
      Number.isNaN(values[i]!) ? null : values[i]!;
    const presence = actor.presence?.length ? actor.presence : undefined;
    for (let i = 0; i < batch.t.length; i++) {
      if (Number.isNaN(x[i]!) || Number.isNaN(y[i]!)) continue;
      if (presence && presenceAt(presence, batch.t[i]!) === undefined) continue;
      track.t.push(batch.t[i]!);
      track.step.push(batch.step[i]!);
      track.x.push(x[i]!);
      track.y.push(y[i]!);
      track.yaw.push(value(yaw, i) ?? 0);
      track.speed.push(value(speed, i) ?? Math.hypot(value(vx, i) ?? 0, value(vy, i) ?? 0));
      track.accel.push(value(accel, i) ?? value(ax, i));
      const lane = Array.isArray(lanes) ? lanes[i] : undefined;
      track.lane.push(typeof lane === 'string' ? lane : null);
      track.lanePos.push(value(lanePos, i));
    }
    tracks.push(track);
  }
  return tracks;
}
