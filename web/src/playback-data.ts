import { absenceAt, usualSampleInterval } from '../../src/model/presence.js';
import type { PresenceInterval } from '../../src/model/run.js';
import { lastAtOrBefore } from '../../src/model/sorted-search.js';
import {
  windowGrid,
  windowIndex,
  windowSpan,
  type BinaryStateWindow,
  type StateWindowColumns,
  type WindowGrid,
} from '../../src/server/state-window-wire.js';
import { api, type ActorInfo, type StreamInfo } from './api.js';

/**
 * Samples the page keeps at most over its windows (about 20 MB of columns): those far from the cursor
 * are dropped first, so the page's memory is bounded by the windows, not by the run.
 */
const KEEP_SAMPLES = 600_000;
/** Wall-clock seconds of playback fetched ahead of the cursor, at the speed playing. */
const AHEAD_SECONDS = 3;
/** Windows asked for at once: the one the cursor needs is never queued behind many prefetches. */
const IN_FLIGHT = 2;

export interface Pose {
  x: number;
  y: number;
  yaw: number;
  speed: number;
}

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
 *
 * Windows lie on a grid from the run's first sample (windowGrid, which the server runs too). The one
 * holding the cursor is asked for first, then, once it is in, the ones ahead of it (as far as
 * AHEAD_SECONDS of playback at the speed playing) and the one behind it. A fetch no longer wanted after
 * a seek is cancelled (and the server stops reading it); windows beyond KEEP_SAMPLES are dropped, the
 * farthest from the cursor first.
 */
export class PlaybackData {
  private readonly loaded = new Map<number, BinaryStateWindow>();
  private readonly fetching = new Map<number, AbortController>();
  private readonly runId: number;
  private readonly rules = new Map<string, PresenceRule>();
  /** How the run is cut into windows: fixed for the view's life, since windows are kept by their index. */
  private readonly grid: WindowGrid;
  /** The windows wanted now, most wanted first. */
  private wanted: number[] = [];
  onLoaded: () => void = () => {};

  constructor(runId: number, actors: ActorInfo[], streams: StreamInfo[]) {
    this.runId = runId;
    this.setActors(actors, streams);
    this.grid = windowGrid(actors, streams);
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
    return windowIndex(this.grid, t);
  }

  /**
   * The window holding t, asked for before this view knew the run (`GET /states?moment=`): kept as that
   * window when the server cut the run as this view does (a live run may have grown meanwhile).
   */
  adopt(t: number, answer: Promise<BinaryStateWindow>, controller: AbortController): void {
    const i = this.windowIndex(t);
    if (this.loaded.has(i) || this.fetching.has(i)) return;
    const { from, to } = windowSpan(this.grid, i);
    this.fetching.set(i, controller);
    this.arrive(
      i,
      controller,
      answer.then((w) => {
        if (w.from !== from || w.to !== to) throw new Error(`window ${w.from}..${w.to}, not ${from}..${to}`);
        return w;
      }),
    );
  }

  /**
   * Asks for what the cursor at t needs, playing at `rate` times real time (0: paused): the window
   * holding t, those ahead, the one behind; cancels fetches no longer wanted and drops far windows.
   */
  want(t: number, rate = 0): void {
    const index = this.windowIndex(t);
    const ahead = Math.max(1, this.windowIndex(t + rate * AHEAD_SECONDS * 1e6) - index);
    const wanted = [index];
    for (let i = 1; i <= ahead; i++) wanted.push(index + i);
    if (index > 0) wanted.push(index - 1);
    this.wanted = wanted;
    for (const [i, controller] of this.fetching)
      if (!wanted.includes(i)) {
        controller.abort();
        this.fetching.delete(i);
      }
    this.fetchNext();
    this.dropFarFrom(index);
  }

  private fetchNext(): void {
    const cursor = this.wanted[0];
    for (const i of this.wanted) {
      if (this.fetching.size >= IN_FLIGHT) return;
      if (this.loaded.has(i) || this.fetching.has(i)) continue;
      // Until the cursor's window is in, nothing else is asked for: after a seek, a prefetch would share
      // the server with the one window the page is waiting for.
      if (i !== cursor && cursor !== undefined && !this.loaded.has(cursor)) return;
      const controller = new AbortController();
      this.fetching.set(i, controller);
      const { from, to } = windowSpan(this.grid, i);
      this.arrive(i, controller, api.stateWindow(this.runId, from, to, controller.signal));
    }
  }

  /** A window on its way: kept when it arrives, unless cancelled meanwhile. */
  private arrive(i: number, controller: AbortController, answer: Promise<BinaryStateWindow>): void {
    answer.then(
      (window) => {
        if (this.fetching.get(i) !== controller) return; // cancelled, or the run grew meanwhile
        this.fetching.delete(i);
        this.loaded.set(i, window);
        this.dropFarFrom(this.wanted[0] ?? i);
        this.fetchNext();
        this.onLoaded();
      },
      () => {
        // Cancelled, or failed (the server went away): asked for again when next wanted.
        if (this.fetching.get(i) === controller) this.fetching.delete(i);
        this.fetchNext();
      },
    );
  }

  /** Drops the windows farthest from `index` until the kept ones hold at most KEEP_SAMPLES. */
  private dropFarFrom(index: number): void {
    let kept = 0;
    for (const w of this.loaded.values()) kept += w.rows;
    if (kept <= KEEP_SAMPLES) return;
    const byDistance = [...this.loaded.keys()]
      .filter((i) => !this.wanted.includes(i))
      .sort((a, b) => Math.abs(b - index) - Math.abs(a - index));
    for (const i of byDistance) {
      if (kept <= KEEP_SAMPLES) return;
      kept -= this.loaded.get(i)!.rows;
      this.loaded.delete(i);
    }
  }

  /** Samples held by the page's windows (for the tests of its bound). */
  get keptSamples(): number {
    let kept = 0;
    for (const w of this.loaded.values()) kept += w.rows;
    return kept;
  }

  /** Forget the windows from t on (a live run grew there). */
  invalidateFrom(t: number): void {
    const first = this.windowIndex(t);
    for (const i of [...this.loaded.keys()]) if (i >= first) this.loaded.delete(i);
    for (const [i, controller] of [...this.fetching])
      if (i >= first) {
        controller.abort();
        this.fetching.delete(i);
      }
  }

  /**
   * Poses of the actors present at t, and whether the window holding t has loaded. Asks for the
   * windows around t first (`rate`: the speed playing, 0 when paused).
   */
  posesAt(t: number, rate = 0): { poses: Map<string, Pose>; loaded: boolean } {
    this.want(t, rate);
    const poses = new Map<string, Pose>();
    const index = this.windowIndex(t);
    const current = this.loaded.get(index);
    if (!current) return { poses, loaded: false };
    const previous = this.loaded.get(index - 1);
    for (const [id, cols] of current.actors) {
      let pose = this.interpolate(id, cols, t);
      // An actor whose last sample is in the previous window may still be present (a slow stream).
      if (pose === undefined && previous) {
        const before = previous.actors.get(id);
        if (before) pose = this.interpolate(id, before, t);
      }
      if (pose) poses.set(id, pose);
    }
    // Actors with no sample in this window at all may still be present, from the previous one.
    if (previous)
      for (const [id, cols] of previous.actors) {
        if (current.actors.has(id)) continue;
        const pose = this.interpolate(id, cols, t);
        if (pose) poses.set(id, pose);
      }
    return { poses, loaded: true };
  }

  /** The pose at t from the latest sample at or before it; null when the actor is not present then. */
  private interpolate(id: string, c: StateWindowColumns, t: number): Pose | null | undefined {
    const i = lastAtOrBefore(c.t, t);
    if (i < 0) return undefined;
    const rule = this.rules.get(id);
    if (rule && absenceAt(rule.presence, rule.usualInterval, c.t[i]!, t) !== null) return null;
    const x0 = c.x[i]!;
    const y0 = c.y[i]!;
    if (Number.isNaN(x0) || Number.isNaN(y0)) return null;
    const yaw = c.yaw[i]!;
    const speed = c.speed[i]!;
    const pose: Pose = {
      x: x0,
      y: y0,
      yaw: Number.isNaN(yaw) ? 0 : yaw,
      speed: Number.isNaN(speed) ? 0 : speed,
    };
    const j = i + 1;
    if (j < c.t.length && !Number.isNaN(c.x[j]!) && !Number.isNaN(c.y[j]!)) {
      const u = (t - c.t[i]!) / (c.t[j]! - c.t[i]!);
      if (u > 0 && u < 1) {
        pose.x += (c.x[j]! - x0) * u;
        pose.y += (c.y[j]! - y0) * u;
        const yawNext = c.yaw[j]!;
        const speedNext = c.speed[j]!;
        pose.yaw = lerpAngle(pose.yaw, Number.isNaN(yawNext) ? pose.yaw : yawNext, u);
        pose.speed += ((Number.isNaN(speedNext) ? pose.speed : speedNext) - pose.speed) * u;
      }
    }
    return pose;
  }

  /** An actor's positions over [from, to] from the loaded windows (trails and future paths). */
  path(actor: string, from: number, to: number): [number, number][] {
    const out: [number, number][] = [];
    for (let i = this.windowIndex(from); i <= this.windowIndex(to); i++) {
      const c = this.loaded.get(i)?.actors.get(actor);
      if (!c) continue;
      for (let k = 0; k < c.t.length; k++)
        if (c.t[k]! >= from && c.t[k]! <= to && !Number.isNaN(c.x[k]!)) out.push([c.x[k]!, c.y[k]!]);
    }
    return out;
  }
}
