import type { EvaluationEvent } from '../evaluation-types.js';
import { boxesOverlap, type Box } from '../footprint.js';
import { movingBox, type Detector, type Frame } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/** Collisions between any two actors present, not only the scored one: their footprints overlap. */
export class Collisions implements Detector {
  private readonly episodes = new EpisodeTracker('collision');

  frame({ t, present }: Frame): void {
    // Actors by cell of a 10 m grid: only those in neighbouring cells are compared.
    const grid = new Map<string, number[]>();
    const boxes: Box[] = present.map(({ track, k }) => movingBox(track, k));
    boxes.forEach((b, n) => {
      const key = `${Math.floor(b.x / 10)},${Math.floor(b.y / 10)}`;
      grid.set(key, [...(grid.get(key) ?? []), n]);
    });
    boxes.forEach((b, n) => {
      const cx = Math.floor(b.x / 10);
      const cy = Math.floor(b.y / 10);
      for (let gx = cx - 1; gx <= cx + 1; gx++)
        for (let gy = cy - 1; gy <= cy + 1; gy++)
          for (const m of grid.get(`${gx},${gy}`) ?? []) {
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
    });
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}
