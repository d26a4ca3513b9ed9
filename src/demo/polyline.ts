import type { RoadPoint } from '../model/roadnet.js';

export type Point = readonly [number, number];

/**
 * A lane's centre line as a path: positions are on the lane's declared length, which SUMO uses for
 * positions and which can differ from the drawn shape's length; points are spread over the shape in
 * proportion, as SUMO does.
 */
export class Path {
  readonly points: Point[];
  /** Cumulative drawn length at each point. */
  private readonly cumulative: number[];
  readonly length: number;
  private readonly scale: number;

  constructor(points: readonly RoadPoint[], declaredLength?: number) {
    this.points = points.map((p) => [p[0], p[1]] as const);
    this.cumulative = [0];
    for (let i = 1; i < this.points.length; i++) {
      const a = this.points[i - 1]!;
      const b = this.points[i]!;
      this.cumulative.push(this.cumulative[i - 1]! + Math.hypot(b[0] - a[0], b[1] - a[1]));
    }
    const drawn = this.cumulative[this.cumulative.length - 1]!;
    this.length = declaredLength !== undefined && declaredLength > 0 ? declaredLength : drawn;
    this.scale = this.length > 0 ? drawn / this.length : 1;
  }

  /** Position and heading (radians, counter-clockwise from +x) at `s` metres, clamped to the path. */
  at(s: number): { x: number; y: number; heading: number } {
    const pts = this.points;
    if (pts.length === 1) return { x: pts[0]![0], y: pts[0]![1], heading: 0 };
    const d = Math.max(0, Math.min(s * this.scale, this.cumulative[this.cumulative.length - 1]!));
    let i = 1;
    while (i < pts.length - 1 && this.cumulative[i]! < d) i++;
    const a = pts[i - 1]!;
    const b = pts[i]!;
    const segment = this.cumulative[i]! - this.cumulative[i - 1]!;
    const f = segment > 0 ? (d - this.cumulative[i - 1]!) / segment : 0;
    return {
      x: a[0] + (b[0] - a[0]) * f,
      y: a[1] + (b[1] - a[1]) * f,
      heading: Math.atan2(b[1] - a[1], b[0] - a[0]),
    };
  }

  get start(): Point {
    return this.points[0]!;
  }

  get end(): Point {
    return this.points[this.points.length - 1]!;
  }
}

function pointSegmentDistance(p: Point, a: Point, b: Point): number {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const len2 = dx * dx + dy * dy;
  const f = len2 > 0 ? Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2)) : 0;
  return Math.hypot(p[0] - a[0] - f * dx, p[1] - a[1] - f * dy);
}

export function pointPolylineDistance(p: Point, line: readonly Point[]): number {
  if (line.length === 1) return Math.hypot(p[0] - line[0]![0], p[1] - line[0]![1]);
  let best = Infinity;
  for (let i = 1; i < line.length; i++)
    best = Math.min(best, pointSegmentDistance(p, line[i - 1]!, line[i]!));
  return best;
}

function segmentsCross(a: Point, b: Point, c: Point, d: Point): boolean {
  const cross = (o: Point, p: Point, q: Point): number =>
    (p[0] - o[0]) * (q[1] - o[1]) - (p[1] - o[1]) * (q[0] - o[0]);
  const d1 = cross(c, d, a);
  const d2 = cross(c, d, b);
  const d3 = cross(a, b, c);
  const d4 = cross(a, b, d);
  return d1 * d2 < 0 && d3 * d4 < 0;
}

/** The least distance between two polylines (0 when they cross). */
export function polylineDistance(p: readonly Point[], q: readonly Point[]): number {
  let best = Infinity;
  for (let i = 1; i < p.length; i++)
    for (let k = 1; k < q.length; k++) if (segmentsCross(p[i - 1]!, p[i]!, q[k - 1]!, q[k]!)) return 0;
  for (const point of p) best = Math.min(best, pointPolylineDistance(point, q));
  for (const point of q) best = Math.min(best, pointPolylineDistance(point, p));
  return best;
}

/** The part of a polyline from `from` metres (drawn length) to its end. */
export function trimStart(line: readonly Point[], from: number): Point[] {
  let remaining = from;
  for (let i = 1; i < line.length; i++) {
    const a = line[i - 1]!;
    const b = line[i]!;
    const len = Math.hypot(b[0] - a[0], b[1] - a[1]);
    if (remaining < len) {
      const f = remaining / len;
      return [[a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f], ...line.slice(i)];
    }
    remaining -= len;
  }
  return [line[line.length - 1]!];
}

export function pointInPolygon(p: Point, polygon: readonly Point[]): boolean {
  let inside = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const a = polygon[i]!;
    const b = polygon[j]!;
    if (a[1] > p[1] !== b[1] > p[1] && p[0] < ((b[0] - a[0]) * (p[1] - a[1])) / (b[1] - a[1]) + a[0])
      inside = !inside;
  }
  return inside;
}
