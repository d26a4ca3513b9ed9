import type { EvaluationEvent } from '../evaluation-types.js';
import { boxesOverlap } from '../footprint.js';
import { movingBox, type Detector, type Frame, type Present } from './detector.js';
import { CellGrid } from './cell-grid.js';
import { EpisodeTracker } from './episodes.js';

/** The grid's least cell size, m: wider than a car's footprint, so that most cells hold a few actors. */
const CELL = 10;

/**
 * Collisions between any two actors present, not only the scored one: their footprints overlap.
 *
 * Each frame puts the actors' centres in a grid whose cells are at least as wide as the two largest
 * footprints' reach (the distance from a centre to a corner, added), so that overlapping footprints are
 * in the same or neighbouring cells. The pairs that overlap in a frame are taken in the order of the
 * frame's actors (the scored one first, then the run's), whatever their cells.
 */
export class Collisions implements Detector {
  private readonly episodes = new EpisodeTracker('collision');
  private readonly grid = new CellGrid();
  private xs = new Float64Array(0);
  private ys = new Float64Array(0);
  /** Half each footprint's diagonal, m. */
  private reaches = new Float64Array(0);
  /** Overlapping pairs of this frame, as (n, m) index pairs, n < m. */
  private readonly overlapping: number[] = [];

  frame({ t, present }: Frame): void {
    const count = present.length;
    if (this.xs.length < count) this.grow(count);
    const { xs, ys, reaches, overlapping } = this;
    let widest = 0;
    for (let n = 0; n < count; n++) {
      const { track, k } = present[n]!;
      xs[n] = track.x[k]!;
      ys[n] = track.y[k]!;
      reaches[n] = track.reach;
      if (track.reach > widest) widest = track.reach;
    }
    overlapping.length = 0;
    this.grid.fill(xs, ys, count, Math.max(CELL, 2 * widest));
    this.grid.forEachNearPair((a, b) => this.compare(present, a, b));
    for (let p = 0; p < overlapping.length; p += 2)
      this.hold(t, present, overlapping[p]!, overlapping[p + 1]!);
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }

  private grow(count: number): void {
    const size = Math.max(count, 2 * this.xs.length, 64);
    this.xs = new Float64Array(size);
    this.ys = new Float64Array(size);
    this.reaches = new Float64Array(size);
  }

  /** Notes the pair if their footprints overlap, in the frame's order of pairs. */
  private compare(present: Present[], a: number, b: number): void {
    const { xs, ys, reaches, overlapping } = this;
    const dx = xs[a]! - xs[b]!;
    const dy = ys[a]! - ys[b]!;
    const reach = reaches[a]! + reaches[b]!;
    // Far apart for certain (with room for rounding: boxesOverlap decides the rest exactly).
    if (dx * dx + dy * dy > reach * reach * (1 + 1e-9)) return;
    const n = Math.min(a, b);
    const m = Math.max(a, b);
    if (
      !boxesOverlap(movingBox(present[n]!.track, present[n]!.k), movingBox(present[m]!.track, present[m]!.k))
    )
      return;
    // Kept in (n, m) order: a cell's pairs come before its neighbours', which is no order of the actors.
    let at = this.overlapping.length;
    while (at > 0 && (overlapping[at - 2]! > n || (overlapping[at - 2] === n && overlapping[at - 1]! > m)))
      at -= 2;
    overlapping.splice(at, 0, n, m);
  }

  private hold(t: number, present: Present[], n: number, m: number): void {
    const a = present[n]!.track;
    const b = present[m]!.track;
    // Pedestrians brushing past each other are no driving event, nor two props standing in each other
    // (a CARLA town's garden table and its chairs).
    if (a.actor.kind === b.actor.kind && (a.actor.kind === 'pedestrian' || a.actor.kind === 'static')) return;
    const ids = [a.actor.id, b.actor.id].sort();
    this.episodes.hold(
      ids.join('\u0000'),
      t,
      { x: (this.xs[n]! + this.xs[m]!) / 2, y: (this.ys[n]! + this.ys[m]!) / 2 },
      ids,
      'footprints overlap',
    );
  }
}
