import { absenceAt, usualSampleInterval } from '../../src/model/presence.js';
import type { PresenceInterval } from '../../src/model/run.js';
import { lastAtOrBefore } from '../../src/model/sorted-search.js';
import { api, type ActorInfo, type StateWindow, type StreamInfo } from './api.js';

/** Seconds of states fetched at once: a one-hour run starts playing after one window, not all of it. */
const WINDOW_MICROS = 60_000_000;
/**
 * Samples a window holds at most, about 9 MB of JSON: a minute of 200 actors at 100 Hz was 110 MB, 1.5
 * s for the server to answer before the browser had parsed it. A run that samples that fast gets shorter
 * windows (5 s at 200 actors and 100 Hz), never shorter than 2 s nor than twice its slowest stream's
 * usual interval (an actor's last sample must be in the window before).
 */
const WINDOW_SAMPLES = 100_000;
const MIN_WINDOW_MICROS = 2_000_000;

/**
 * How long a window of this run is: a minute, shorter when its actors sample fast (WINDOW_SAMPLES), from
 * the usual intervals of the actors' state streams (null: fewer than two samples).
 */
function windowLength(intervals: Iterable<number | null>): number {
  let samplesPerMicro = 0;
  let slowest = 0;
  for (const interval of intervals) {
    if (interval === null) continue;
    samplesPerMicro += 1 / interval;
    slowest = Math.max(slowest, interval);
  }
  if (samplesPerMicro === 0) return WINDOW_MICROS;
  const length = Math.min(WINDOW_MICROS, Math.max(MIN_WINDOW_MICROS, WINDOW_SAMPLES / samplesPerMicro));
  return Math.ceil(Math.max(length, Math.min(WINDOW_MICROS, 2 * slowest)));
}

export interface Pose {
  x: number;
  y: number;
  yaw: number;
  speed: number;
}

type Columns = StateWindow['actors'][string];

const lerpAngle = (a: number, b: number, u: number): number => {
  let d = b - a;
  d -= 2 * Math.PI * Math.floor((d + Math.PI) / (2 * Math.PI));
  return a + d * u;
};

/** What decides whether an actor is in the scene: its presence, and its state stream's usual interval. */
interface PresenceRule {
  presence: PresenceInterval[] | undefined;
  usualInterval: number | null;
}

/**
 * Every actor's pose over the run, fetched a window at a time around the cursor and interpolated
 * between samples so playback is smooth at any speed. Only actors present at t are posed, by the same
 * rules as the server's scenes (model/presence.ts): an actor that left, or whose latest state has gone
 * stale, is not drawn where it last stood.
 */
export class PlaybackData {
  private readonly windows = new Map<number, StateWindow | Promise<StateWindow>>();
  private readonly runId: number;
  private readonly begin: number;
  private readonly rules = new Map<string, PresenceRule>();
  /** Microseconds a window covers: fixed for the view's life, since windows are kept by their index. */
  private readonly windowMicros: number;
  onLoaded: () => void = () => {};

  constructor(runId: number, begin: number, actors: ActorInfo[], streams: StreamInfo[]) {
    this.runId = runId;
    this.begin = begin;
    this.setActors(actors, streams);
    this.windowMicros = windowLength([...this.rules.values()].map((r) => r.usualInterval));
  }

  /** The actors' presence and their state streams' counts (again when a live run grew). */
  setActors(actors: ActorInfo[], streams: StreamInfo[]): void {
    const stateStreams = new Map(
      streams.filter((s) => s.name === 'state' && s.actor !== null).map((s) => [s.actor!, s]),
    );
    this.rules.clear();
    for (const a of actors) {
      const stream = stateStreams.get(a.id);
      this.rules.set(a.id, {
        presence: a.presence,
        usualInterval: stream ? usualSampleInterval(stream, a.presence) : null,
      });
    }
  }

  private windowIndex(t: number): number {
    return Math.floor((t - this.begin) / this.windowMicros);
  }

  /** Loaded window at t (starting the fetch, and the next window's, if needed). */
  private window(t: number): StateWindow | null {
    const index = Math.max(0, this.windowIndex(t));
    for (const i of [index, index + 1]) {
      if (!this.windows.has(i)) {
        const from = this.begin + i * this.windowMicros;
        const pending = api.states(this.runId, from, from + this.windowMicros - 1).then((w) => {
          this.windows.set(i, w);
          this.onLoaded();
          return w;
        });
        pending.catch(() => this.windows.delete(i));
        this.windows.set(i, pending);
      }
    }
    const w = this.windows.get(index);
    return w && !(w instanceof Promise) ? w : null;
  }

  /** Forget the windows from t on (a live run grew there). */
  invalidateFrom(t: number): void {
    const first = this.windowIndex(t);
    for (const i of [...this.windows.keys()]) if (i >= first) this.windows.delete(i);
  }

  /** Poses of the actors present at t, and whether the window holding t has loaded. */
  posesAt(t: number): { poses: Map<string, Pose>; loaded: boolean } {
    const poses = new Map<string, Pose>();
    const current = this.window(t);
    if (!current) return { poses, loaded: false };
    const previous = this.windows.get(this.windowIndex(t) - 1);
    for (const [id, cols] of Object.entries(current.actors)) {
      let pose = this.interpolate(id, cols, t);
      // An actor whose last sample is in the previous window may still be present (a slow stream).
      if (pose === undefined && previous && !(previous instanceof Promise)) {
        const before = previous.actors[id];
        if (before) pose = this.interpolate(id, before, t);
      }
      if (pose) poses.set(id, pose);
    }
    // Actors with no sample in this window at all may still be present, from the previous one.
    if (previous && !(previous instanceof Promise))
      for (const [id, cols] of Object.entries(previous.actors)) {
        if (id in current.actors) continue;
        const pose = this.interpolate(id, cols, t);
        if (pose) poses.set(id, pose);
      }
    return { poses, loaded: true };
  }

  /** The pose at t from the latest sample at or before it; null when the actor is not present then. */
  private interpolate(id: string, c: Columns, t: number): Pose | null | undefined {
    const i = lastAtOrBefore(c.t, t);
    if (i < 0) return undefined;
    const rule = this.rules.get(id);
    if (rule && absenceAt(rule.presence, rule.usualInterval, c.t[i]!, t) !== null) return null;
    const x0 = c.x[i];
    const y0 = c.y[i];
    if (x0 == null || y0 == null) return null;
    const pose: Pose = { x: x0, y: y0, yaw: c.yaw[i] ?? 0, speed: c.speed[i] ?? 0 };
    const j = i + 1;
    if (j < c.t.length && c.x[j] != null && c.y[j] != null) {
      const u = (t - c.t[i]!) / (c.t[j]! - c.t[i]!);
      if (u > 0 && u < 1) {
        pose.x += (c.x[j] - x0) * u;
        pose.y += (c.y[j] - y0) * u;
        pose.yaw = lerpAngle(pose.yaw, c.yaw[j] ?? pose.yaw, u);
        pose.speed += ((c.speed[j] ?? pose.speed) - pose.speed) * u;
      }
    }
    return pose;
  }

  /** An actor's positions over [from, to] from the loaded windows (trails and future paths). */
  path(actor: string, from: number, to: number): [number, number][] {
    const out: [number, number][] = [];
    for (let i = Math.max(0, this.windowIndex(from)); i <= this.windowIndex(to); i++) {
      const w = this.windows.get(i);
      if (!w || w instanceof Promise) continue;
      const c = w.actors[actor];
      if (!c) continue;
      for (let k = 0; k < c.t.length; k++)
        if (c.t[k]! >= from && c.t[k]! <= to && c.x[k] != null) out.push([c.x[k]!, c.y[k]!]);
    }
    return out;
  }
}
