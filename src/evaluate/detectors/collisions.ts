import type { EvaluationEvent } from '../evaluation-types.js';
import { boxesOverlap, type Box } from '../footprint.js';
import { movingBox, type Detector, type Frame } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/** The grid's cell size, m: wider than any vehicle's footprint, so overlapping ones are in neighbouring cells. */
const CELL = 10;

/**
 * A cell's key as one number (a string made for each of nine cells around every actor, every frame, was
 * most of an hour-long run's evaluation): unique while a coordinate stays within 2^25 cells of the
 * origin, 335,000 km, which any position on Earth does.
 */
const cellKey = (cx: number, cy: number): number => cx * 2 ** 26 + cy;

/** Collisions between any two actors present, not only the scored one: their footprints overlap. */
export class Collisions implements Detector {
  private readonly episodes = new EpisodeTracker('collision');

  frame({ t, present }: Frame): void {
    // Actors by cell of a 10 m grid: only those in neighbouring cells are compared.
    const grid = new Map<number, number[]>();
    const boxes: Box[] = present.map(({ track, k }) => movingBox(track, k));
    const cells = new Float64Array(boxes.length * 2);
    for (let n = 0; n < boxes.length; n++) {
      const cx = Math.floor(boxes[n]!.x / CELL);
      const cy = Math.floor(boxes[n]!.y / CELL);
      cells[2 * n] = cx;
      cells[2 * n + 1] = cy;
      const key = cellKey(cx, cy);
      const cell = grid.get(key);
      if (cell) cell.push(n);
      else grid.set(key, [n]);
    }
    for (let n = 0; n < boxes.length; n++) {
      const b = boxes[n]!;
      const cx = cells[2 * n]!;
      const cy = cells[2 * n + 1]!;
      for (let gx = cx - 1; gx <= cx + 1; gx++)
        for (let gy = cy - 1; gy <= cy + 1; gy++) {
          const cell = grid.get(cellKey(gx, gy));
          if (cell === undefined) continue;
          for (const m of cell) {
            if (m <= n || !boxesOverlap(b, boxes[m]!)) continue;
            // Pedestrians brushing past each other are no driving event, nor two props standing
            // in each other (a CARLA town's garden table and its chairs).
            const kinds = [present[n]!.track.actor.kind, present[m]!.track.actor.kind];
            if (kinds.every((k) => k === 'pedestrian') || kinds.every((k) => k === 'static')) continue;
            const ids = [present[n]!.track.actor.id, present[m]!.track.actor.id].sort();
            const key = ids.join('\u0000');
            this.episodes.hold(
              key,
              t,
              { x: (b.x + boxes[m]!.x) / 2, y: (b.y + boxes[m]!.y) / 2 },
              ids,
              'footprints overlap',
            );
          }
        }
    }
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}
