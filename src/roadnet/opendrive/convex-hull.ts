import type { RoadPoint } from '../../model/roadnet.js';

/**
 * The convex hull of points in the plane (Andrew's monotone chain), counter-clockwise, z dropped.
 * OpenDRIVE junctions have no outline of their own; the hull of their connecting lanes stands in.
 */
export function convexHull(points: readonly RoadPoint[]): RoadPoint[] {
  const sorted = points.map((p): [number, number] => [p[0], p[1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (sorted.length < 3) return sorted;
  const cross = (o: [number, number], a: [number, number], b: [number, number]): number =>
    (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const lower: [number, number][] = [];
  for (const p of sorted) {
    while (lower.length >= 2 && cross(lower[lower.length - 2]!, lower[lower.length - 1]!, p) <= 0)
      lower.pop();
    lower.push(p);
  }
  const upper: [number, number][] = [];
  for (let i = sorted.length - 1; i >= 0; i--) {
    const p = sorted[i]!;
    while (upper.length >= 2 && cross(upper[upper.length - 2]!, upper[upper.length - 1]!, p) <= 0)
      upper.pop();
    upper.push(p);
  }
  return [...lower.slice(0, -1), ...upper.slice(0, -1)];
}
