import type { EvaluationEvent } from '../evaluation-types.js';

/** Turns per-frame conditions into events: one per run of consecutive frames where it holds. */
export class EpisodeTracker {
  private readonly open = new Map<
    string,
    { t: number; x: number; y: number; actors: string[]; detail: string }
  >();
  /** The keys held this frame so far. */
  private readonly held = new Set<string>();
  private readonly events: EvaluationEvent[] = [];
  private readonly kind: EvaluationEvent['kind'];
  private readonly minDuration: number;
  constructor(kind: EvaluationEvent['kind'], minDuration = 0) {
    this.kind = kind;
    this.minDuration = minDuration;
  }

  /** Marks the condition as holding at t for `key` this frame. */
  hold(key: string, t: number, at: { x: number; y: number }, actors: string[], detail: string): void {
    if (!this.open.has(key)) this.open.set(key, { t, x: at.x, y: at.y, actors, detail });
    this.held.add(key);
  }

  /** Closes the episodes not held this frame (at t, the frame's time). */
  endFrame(t: number): void {
    for (const [key, e] of this.open)
      if (!this.held.has(key)) {
        this.close(e, t);
        this.open.delete(key);
      }
    this.held.clear();
  }

  /** Closes the episodes still open at t, the last frame's time; returns every event found. */
  finish(t: number): EvaluationEvent[] {
    for (const e of this.open.values()) this.close(e, t);
    this.open.clear();
    return this.events;
  }

  private close(e: { t: number; x: number; y: number; actors: string[]; detail: string }, end: number): void {
    const duration = (end - e.t) / 1e6;
    if (duration < this.minDuration) return;
    this.events.push({
      kind: this.kind,
      t: e.t,
      duration,
      actors: e.actors,
      x: e.x,
      y: e.y,
      detail: e.detail,
    });
  }
}
