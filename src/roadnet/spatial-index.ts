import { invalid } from '../model/errors.js';
import type { LaneFunction, RoadLane, RoadNetwork } from '../model/roadnet.js';

/** Where a point lies relative to a lane's centre line. */
export interface LanePosition {
  lane: RoadLane;
  /** Metres along the centre line (2-D) to the foot of the perpendicular. */
  s: number;
  /** Metres to the left of the centre line (negative: right), in the direction of travel. */
  t: number;
  /** Metres from the point to the centre line. */
  distance: number;
}

export interface LaneIndexOptions {
  /** Grid cell size in metres (default 20). */
  cellSize?: number;
  /** Only these lane functions (default: all). */
  functions?: readonly LaneFunction[];
}

interface Segment {
  lane: number;
  ax: number;
  ay: number;
  bx: number;
  by: number;
  /** s at the segment's start. */
  s: number;
}

/**
 * A uniform grid over the lanes' centre-line segments: answers "which lanes are near this point" and
 * "which lane is this point on, where along it and how far off its centre" without scanning the map.
 */
export class LaneIndex {
  private readonly lanes: RoadLane[];
  private readonly segments: Segment[] = [];
  private readonly cells = new Map<string, number[]>();
  private readonly cellSize: number;

  private constructor(lanes: RoadLane[], cellSize: number) {
    this.lanes = lanes;
    this.cellSize = cellSize;
  }

  static build(net: Pick<RoadNetwork, 'lanes'>, options: LaneIndexOptions = {}): LaneIndex {
    const cellSize = options.cellSize ?? 20;
    if (!(cellSize > 0) || !Number.isFinite(cellSize))
      throw invalid(`cellSize: expected a positive number, got ${cellSize}`);
    const lanes = options.functions
      ? net.lanes.filter((l) => options.functions!.includes(l.function))
      : net.lanes;
    const index = new LaneIndex(lanes, cellSize);
    lanes.forEach((lane, k) => {
      let s = 0;
      const line = lane.centerLine;
      for (let i = 1; i < line.length; i++) {
        const [ax, ay] = line[i - 1]!;
        const [bx, by] = line[i]!;
        index.insert({ lane: k, ax, ay, bx, by, s });
        s += Math.hypot(bx - ax, by - ay);
      }
    });
    return index;
  }

  private insert(segment: Segment): void {
    const id = this.segments.push(segment) - 1;
    const c = this.cellSize;
    for (
      let ix = Math.floor(Math.min(segment.ax, segment.bx) / c);
      ix <= Math.floor(Math.max(segment.ax, segment.bx) / c);
      ix++
    )
      for (
        let iy = Math.floor(Math.min(segment.ay, segment.by) / c);
        iy <= Math.floor(Math.max(segment.ay, segment.by) / c);
        iy++
      ) {
        const key = `${ix},${iy}`;
        const cell = this.cells.get(key);
        if (cell) cell.push(id);
        else this.cells.set(key, [id]);
      }
  }

  /** Every lane whose centre line passes within `radius` metres of (x, y), nearest first, one entry per lane. */
  lanesNear(x: number, y: number, radius: number): LanePosition[] {
    const best = new Map<number, LanePosition>();
    const c = this.cellSize;
    const seen = new Set<number>();
    for (let ix = Math.floor((x - radius) / c); ix <= Math.floor((x + radius) / c); ix++)
      for (let iy = Math.floor((y - radius) / c); iy <= Math.floor((y + radius) / c); iy++)
        for (const id of this.cells.get(`${ix},${iy}`) ?? []) {
          if (seen.has(id)) continue;
          seen.add(id);
          const segment = this.segments[id]!;
          const position = project(segment, x, y);
          if (position.distance > radius) continue;
          const current = best.get(segment.lane);
          if (!current || position.distance < current.distance)
            best.set(segment.lane, { lane: this.lanes[segment.lane]!, ...position });
        }
    return [...best.values()].sort((a, b) => a.distance - b.distance);
  }

  /**
   * The lane a point is on: among lanes whose half width covers the point, the one whose centre is
   * nearest; undefined when the point is on no lane within `maxDistance` (default 10 m).
   */
  locate(
    x: number,
    y: number,
    { maxDistance = 10 }: { maxDistance?: number } = {},
  ): LanePosition | undefined {
    return this.lanesNear(x, y, maxDistance).find((p) => Math.abs(p.t) <= widthAt(p.lane, p.s) / 2 + 1e-9);
  }
}

function project(segment: Segment, x: number, y: number): Omit<LanePosition, 'lane'> {
  const dx = segment.bx - segment.ax;
  const dy = segment.by - segment.ay;
  const length2 = dx * dx + dy * dy;
  const u =
    length2 > 0 ? Math.max(0, Math.min(1, ((x - segment.ax) * dx + (y - segment.ay) * dy) / length2)) : 0;
  const fx = segment.ax + u * dx;
  const fy = segment.ay + u * dy;
  const distance = Math.hypot(x - fx, y - fy);
  const length = Math.sqrt(length2);
  // The cross product's sign says which side: positive is left of the direction of travel.
  const side = length > 0 ? Math.sign(dx * (y - segment.ay) - dy * (x - segment.ax)) : 0;
  return { s: segment.s + u * length, t: side * distance, distance };
}

/** A lane's width at s, from its per-point widths when it has them. */
function widthAt(lane: RoadLane, s: number): number {
  if (!lane.widths) return lane.width;
  let along = 0;
  const line = lane.centerLine;
  for (let i = 1; i < line.length; i++) {
    const step = Math.hypot(line[i]![0] - line[i - 1]![0], line[i]![1] - line[i - 1]![1]);
    if (along + step >= s) {
      const u = step > 0 ? (s - along) / step : 0;
      return lane.widths[i - 1]! + u * (lane.widths[i]! - lane.widths[i - 1]!);
    }
    along += step;
  }
  return lane.widths[lane.widths.length - 1] ?? lane.width;
}
