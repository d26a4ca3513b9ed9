import type { ActorInfo } from '../model/run.js';
import { STATE_STREAM } from '../model/standard-streams.js';
import type { StoreBackend } from '../model/store-port.js';
import { streamId } from '../model/stream.js';

/** Kinds that have no footprint on the road. */
const NOT_ON_ROAD = new Set(['traffic_light', 'sensor', 'map']);

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

  /** Index of the latest state at or before t, or -1; calls must come in non-decreasing t. */
  indexAt(t: number, maxAge: number): number {
    while (this.cursor + 1 < this.t.length && this.t[this.cursor + 1]! <= t) this.cursor++;
    if (this.cursor < 0 || t - this.t[this.cursor]! > maxAge) return -1;
    return this.cursor;
  }

  rewind(): void {
    this.cursor = -1;
  }
}

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/** Every actor on the road with its `state` stream, loaded whole (the evaluator walks them in step). */
export async function loadTracks(
  store: StoreBackend,
  run: number,
  signal?: AbortSignal,
): Promise<ActorTrack[]> {
  const [actors, streams] = await Promise.all([store.listActors(run), store.listStreams(run)]);
  const hasState = new Set(
    streams.filter((s) => s.name === STATE_STREAM && s.samples > 0).map((s) => s.actor),
  );
  const tracks: ActorTrack[] = [];
  for (const actor of actors) {
    if (NOT_ON_ROAD.has(actor.kind) || !hasState.has(actor.id)) continue;
    const track = new ActorTrack(actor);
    const read: Parameters<StoreBackend['readSamples']>[0] = {
      run,
      stream: streamId(actor.id, STATE_STREAM),
    };
    if (signal) read.signal = signal;
    for await (const batch of store.readSamples(read))
      for (const s of batch) {
        const x = num(s.x);
        const y = num(s.y);
        if (x === null || y === null) continue;
        track.t.push(s.t);
        track.step.push(s.step);
        track.x.push(x);
        track.y.push(y);
        track.yaw.push(num(s.yaw) ?? 0);
        track.speed.push(num(s.speed) ?? Math.hypot(num(s.vx) ?? 0, num(s.vy) ?? 0));
        track.accel.push(num(s.accel) ?? num(s.ax));
        track.lane.push(typeof s.lane === 'string' ? s.lane : null);
        track.lanePos.push(num(s.lanePos));
      }
    tracks.push(track);
  }
  return tracks;
}
