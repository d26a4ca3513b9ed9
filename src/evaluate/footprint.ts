/** Oriented rectangles (actor footprints) and the separating-axis overlap test. */

export interface Box {
  x: number;
  y: number;
  yaw: number;
  length: number;
  width: number;
}

export type Corners = [number, number][];

export function corners(b: Box): Corners {
  const c = Math.cos(b.yaw);
  const s = Math.sin(b.yaw);
  const hl = b.length / 2;
  const hw = b.width / 2;
  return [
    [b.x + c * hl - s * hw, b.y + s * hl + c * hw],
    [b.x - c * hl - s * hw, b.y - s * hl + c * hw],
    [b.x - c * hl + s * hw, b.y - s * hl - c * hw],
    [b.x + c * hl + s * hw, b.y + s * hl - c * hw],
  ];
}

/**
 * Whether two convex polygons overlap (touching counts), by the separating axis theorem. `axesOf`
 * `'first'` tests only the first polygon's edge normals: LimSim's utils/separate_axis_theorem.py, used
 * in its real-time evaluation, builds the second polygon's edges from the first one's vertices, so it
 * tests the first polygon's axes twice and the second's never.
 */
export function polygonsOverlap(a: Corners, b: Corners, axesOf: 'both' | 'first' = 'both'): boolean {
  for (const poly of axesOf === 'both' ? [a, b] : [a])
    for (let i = 0; i < poly.length; i++) {
      const [x1, y1] = poly[i]!;
      const [x2, y2] = poly[(i + 1) % poly.length]!;
      // The edge's normal is the axis; each polygon's own edges (see `axesOf`).
      const nx = y2 - y1;
      const ny = x1 - x2;
      let minA = Infinity;
      let maxA = -Infinity;
      let minB = Infinity;
      let maxB = -Infinity;
      for (const [x, y] of a) {
        const p = x * nx + y * ny;
        minA = Math.min(minA, p);
        maxA = Math.max(maxA, p);
      }
      for (const [x, y] of b) {
        const p = x * nx + y * ny;
        minB = Math.min(minB, p);
        maxB = Math.max(maxB, p);
      }
      if (maxA < minB || maxB < minA) return false;
    }
  return true;
}

export const boxesOverlap = (a: Box, b: Box): boolean =>
  Math.hypot(a.x - b.x, a.y - b.y) <= (Math.hypot(a.length, a.width) + Math.hypot(b.length, b.width)) / 2 &&
  polygonsOverlap(corners(a), corners(b));

/**
 * LimSim's overlap test (utils/obstacles.py Rectangle.in_collision): the axis-aligned bounding boxes
 * first, then its separating-axis test on the first box's axes only. Two boxes at an angle whose
 * bounding boxes meet, with a gap only along the second box's axes, overlap for LimSim.
 */
export function limsimBoxesOverlap(a: Box, b: Box): boolean {
  const ca = corners(a);
  const cb = corners(b);
  const range = (c: Corners, k: 0 | 1): [number, number] => [
    Math.min(...c.map((p) => p[k])),
    Math.max(...c.map((p) => p[k])),
  ];
  for (const k of [0, 1] as const) {
    const [minA, maxA] = range(ca, k);
    const [minB, maxB] = range(cb, k);
    if (maxA < minB || minA > maxB) return false;
  }
  return polygonsOverlap(ca, cb, 'first');
}

/** The box moved `seconds` ahead at constant speed and heading. */
export const advance = (b: Box, speed: number, seconds: number): Box => ({
  ...b,
  x: b.x + Math.cos(b.yaw) * speed * seconds,
  y: b.y + Math.sin(b.yaw) * speed * seconds,
});
