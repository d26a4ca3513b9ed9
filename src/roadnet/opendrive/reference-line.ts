/** A point on a road's reference line: position in metres, heading in radians from +x. */
export interface Pose {
  x: number;
  y: number;
  hdg: number;
}

/** One `<geometry>` record: evaluates the pose `ds` metres after its start. */
export interface GeometryRecord {
  s: number;
  length: number;
  at(ds: number): Pose;
}

/** OpenDRIVE's polynomial records (`a + b·ds + c·ds² + d·ds³`), starting at `s`. */
export interface Cubic {
  s: number;
  a: number;
  b: number;
  c: number;
  d: number;
}

export function cubicAt(records: readonly Cubic[], s: number, fallback = 0): number {
  const record = recordAt(records, s);
  if (!record) return fallback;
  const ds = s - record.s;
  return record.a + ds * (record.b + ds * (record.c + ds * record.d));
}

/** The last record starting at or before s (the first one when s is before them all). */
export function recordAt<T extends { s: number }>(records: readonly T[], s: number): T | undefined {
  let lo = 0;
  let hi = records.length - 1;
  if (hi < 0) return undefined;
  // A tolerance, because record starts are written with ~16 digits and sums of lengths drift.
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (records[mid]!.s <= s + 1e-9) lo = mid;
    else hi = mid - 1;
  }
  return records[lo];
}

export const line = (x: number, y: number, hdg: number, s: number, length: number): GeometryRecord => {
  const cos = Math.cos(hdg);
  const sin = Math.sin(hdg);
  return { s, length, at: (ds) => ({ x: x + ds * cos, y: y + ds * sin, hdg }) };
};

export function arc(
  x: number,
  y: number,
  hdg: number,
  s: number,
  length: number,
  curvature: number,
): GeometryRecord {
  if (Math.abs(curvature) < 1e-12) return line(x, y, hdg, s, length);
  const sin0 = Math.sin(hdg);
  const cos0 = Math.cos(hdg);
  return {
    s,
    length,
    at: (ds) => {
      const h = hdg + curvature * ds;
      return { x: x + (Math.sin(h) - sin0) / curvature, y: y - (Math.cos(h) - cos0) / curvature, hdg: h };
    },
  };
}

// Five-point Gauss-Legendre nodes and weights on [-1, 1].
const GL_NODES = [0, -0.5384693101056831, 0.5384693101056831, -0.906179845938664, 0.906179845938664];
const GL_WEIGHTS = [
  0.5688888888888889, 0.47862867049936647, 0.47862867049936647, 0.23692688505618908, 0.23692688505618908,
];
/** Metres per quadrature chunk: with heading quadratic in s, the error is far below a millimetre. */
const SPIRAL_CHUNK = 2;

/**
 * An Euler spiral (clothoid): curvature changes linearly from `curvStart` to `curvEnd`. The heading is
 * a quadratic in ds, so the position is an integral of cos/sin of that quadratic; it is integrated by
 * Gauss-Legendre quadrature, continuing from the last point asked for since samples come in order.
 */
export function spiral(
  x: number,
  y: number,
  hdg: number,
  s: number,
  length: number,
  curvStart: number,
  curvEnd: number,
): GeometryRecord {
  const rate = length > 0 ? (curvEnd - curvStart) / length : 0;
  const heading = (u: number): number => hdg + curvStart * u + (rate * u * u) / 2;
  let last = { ds: 0, x, y };
  const integrate = (from: number, to: number): [number, number] => {
    let dx = 0;
    let dy = 0;
    const chunks = Math.max(1, Math.ceil((to - from) / SPIRAL_CHUNK));
    const h = (to - from) / chunks;
    for (let k = 0; k < chunks; k++) {
      const mid = from + (k + 0.5) * h;
      for (let i = 0; i < GL_NODES.length; i++) {
        const th = heading(mid + (GL_NODES[i]! * h) / 2);
        dx += GL_WEIGHTS[i]! * Math.cos(th);
        dy += GL_WEIGHTS[i]! * Math.sin(th);
      }
    }
    return [(dx * h) / 2, (dy * h) / 2];
  };
  return {
    s,
    length,
    at: (ds) => {
      const start = ds >= last.ds ? last : { ds: 0, x, y };
      const [dx, dy] = integrate(start.ds, ds);
      last = { ds, x: start.x + dx, y: start.y + dy };
      return { x: last.x, y: last.y, hdg: heading(ds) };
    },
  };
}

/**
 * A cubic `v(u)` in the frame of the start pose (OpenDRIVE's deprecated `poly3`). Its parameter is u,
 * not arc length, so a table of arc length against u is built once and looked up.
 */
export function poly3(
  x: number,
  y: number,
  hdg: number,
  s: number,
  length: number,
  p: Omit<Cubic, 's'>,
): GeometryRecord {
  const v = (u: number): number => p.a + u * (p.b + u * (p.c + u * p.d));
  const dv = (u: number): number => p.b + u * (2 * p.c + 3 * u * p.d);
  const step = 0.05;
  const us = [0];
  const lengths = [0];
  for (let u = 0; lengths[lengths.length - 1]! < length && us.length < 1e6;) {
    const next = u + step;
    lengths.push(lengths[lengths.length - 1]! + Math.hypot(step, v(next) - v(u)));
    us.push(next);
    u = next;
  }
  const cos = Math.cos(hdg);
  const sin = Math.sin(hdg);
  return {
    s,
    length,
    at: (ds) => {
      let k = recordIndex(lengths, ds);
      if (k >= lengths.length - 1) k = lengths.length - 2;
      const l0 = lengths[k]!;
      const l1 = lengths[k + 1]!;
      const u = us[k]! + ((ds - l0) / (l1 - l0)) * (us[k + 1]! - us[k]!);
      const vu = v(u);
      return { x: x + u * cos - vu * sin, y: y + u * sin + vu * cos, hdg: hdg + Math.atan(dv(u)) };
    },
  };
}

function recordIndex(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (sorted[mid]! <= value) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export interface ParamPoly3 {
  aU: number;
  bU: number;
  cU: number;
  dU: number;
  aV: number;
  bV: number;
  cV: number;
  dV: number;
  /** `arcLength`: p runs over [0, length]; `normalized`: over [0, 1]. */
  pRange: 'arcLength' | 'normalized';
}

export function paramPoly3(
  x: number,
  y: number,
  hdg: number,
  s: number,
  length: number,
  q: ParamPoly3,
): GeometryRecord {
  const cos = Math.cos(hdg);
  const sin = Math.sin(hdg);
  return {
    s,
    length,
    at: (ds) => {
      const p = q.pRange === 'normalized' ? (length > 0 ? ds / length : 0) : ds;
      const u = q.aU + p * (q.bU + p * (q.cU + p * q.dU));
      const v = q.aV + p * (q.bV + p * (q.cV + p * q.dV));
      const du = q.bU + p * (2 * q.cU + 3 * p * q.dU);
      const dv = q.bV + p * (2 * q.cV + 3 * p * q.dV);
      return { x: x + u * cos - v * sin, y: y + u * sin + v * cos, hdg: hdg + Math.atan2(dv, du) };
    },
  };
}

/** A road's plan view: its geometry records in s order. */
export class ReferenceLine {
  readonly records: readonly GeometryRecord[];
  constructor(records: readonly GeometryRecord[]) {
    this.records = records;
  }

  pose(s: number): Pose {
    const record = recordAt(this.records, s);
    if (!record) return { x: 0, y: 0, hdg: 0 };
    return record.at(Math.min(Math.max(s - record.s, 0), record.length));
  }
}
