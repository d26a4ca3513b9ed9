import type { Connection, RoadLane, RoadNetwork, RoadPoint } from '../../model/roadnet.js';

/**
 * LimSim's lane geometry, as its code builds it from the database (utils/cubic_spline.py and
 * simModel/common/networkBuild.py, Rebuild.getData): a lane's shape resampled by point index to 50
 * points and fitted with a natural cubic spline in each coordinate over the cumulative chord length;
 * a junction lane only as a spline through the last 0.1 m of the lane before it and the first 0.1 m
 * of the lane after it. LimSim measures lateral offset, heading and lane positions against these
 * curves, not against SUMO's shapes; simrec needs them wherever it must give LimSim's own numbers.
 * numpy's linspace, interp and arange are followed to the operation, so values agree to float noise.
 */

/** A natural cubic spline y(x) (Numerical Analysis, Burden & Faires, Algorithm 3.4, as LimSim has it). */
class NaturalSpline {
  private readonly b: number[] = [];
  private readonly c: number[];
  private readonly d: number[] = [];
  private readonly x: readonly number[];
  private readonly a: readonly number[];
  constructor(x: readonly number[], a: readonly number[]) {
    this.x = x;
    this.a = a;
    const n = x.length;
    const h = x.slice(1).map((v, i) => v - x[i]!);
    // The tridiagonal system LimSim solves with numpy: c[0] = c[n-1] = 0 (natural ends).
    const lower = new Array<number>(n).fill(0);
    const diag = new Array<number>(n).fill(1);
    const upper = new Array<number>(n).fill(0);
    const rhs = new Array<number>(n).fill(0);
    for (let i = 1; i < n - 1; i++) {
      lower[i] = h[i - 1]!;
      diag[i] = 2 * (h[i]! + h[i - 1]!);
      upper[i] = h[i]!;
      rhs[i] = 3 * ((a[i + 1]! - a[i]!) / h[i]! - (a[i]! - a[i - 1]!) / h[i - 1]!);
    }
    for (let i = 1; i < n; i++) {
      const m = lower[i]! / diag[i - 1]!;
      diag[i] = diag[i]! - m * upper[i - 1]!;
      rhs[i] = rhs[i]! - m * rhs[i - 1]!;
    }
    this.c = new Array<number>(n).fill(0);
    for (let i = n - 1; i >= 0; i--) this.c[i] = (rhs[i]! - upper[i]! * (this.c[i + 1] ?? 0)) / diag[i]!;
    for (let i = 0; i < n - 1; i++) {
      this.d.push((this.c[i + 1]! - this.c[i]!) / (3 * h[i]!));
      this.b.push((a[i + 1]! - a[i]!) / h[i]! - (h[i]! * (this.c[i + 1]! + 2 * this.c[i]!)) / 3);
    }
  }
  /** bisect.bisect(x, v) - 1, kept within the pieces: values outside are extrapolated, as LimSim does. */
  private piece(v: number): number {
    let lo = 0;
    let hi = this.x.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (v < this.x[mid]!) hi = mid;
      else lo = mid + 1;
    }
    return Math.max(Math.min(lo - 1, this.x.length - 2), 0);
  }
  value(v: number): number {
    const i = this.piece(v);
    const dx = v - this.x[i]!;
    return this.a[i]! + this.b[i]! * dx + this.c[i]! * dx ** 2 + this.d[i]! * dx ** 3;
  }
  derivative(v: number): number {
    const i = this.piece(v);
    const dx = v - this.x[i]!;
    return this.b[i]! + 2 * this.c[i]! * dx + 3 * this.d[i]! * dx ** 2;
  }
}

/** numpy.linspace(start, stop, num): start + i * step, the last exactly stop. */
function linspace(start: number, stop: number, num: number): number[] {
  const step = (stop - start) / (num - 1);
  return Array.from({ length: num }, (_, i) => (i === num - 1 ? stop : start + i * step));
}

/** numpy.arange(start, stop, step). */
function arange(start: number, stop: number, step: number): number[] {
  const n = Math.max(0, Math.ceil((stop - start) / step));
  return Array.from({ length: n }, (_, i) => start + i * step);
}

/** LimSim's Spline2D: x(s) and y(s) over the cumulative distance s between the given points. */
export class LimSimSpline {
  /** The knots' s: 0, then the cumulative point-to-point distance. */
  readonly s: number[];
  private readonly sx: NaturalSpline;
  private readonly sy: NaturalSpline;
  constructor(xs: readonly number[], ys: readonly number[]) {
    this.s = [0];
    for (let i = 1; i < xs.length; i++)
      this.s.push(this.s[i - 1]! + Math.hypot(xs[i]! - xs[i - 1]!, ys[i]! - ys[i - 1]!));
    this.sx = new NaturalSpline(this.s, xs);
    this.sy = new NaturalSpline(this.s, ys);
  }
  /** LimSim's `spline_length`: the last knot's s. */
  get length(): number {
    return this.s[this.s.length - 1]!;
  }
  position(s: number): [number, number] {
    return [this.sx.value(s), this.sy.value(s)];
  }
  yaw(s: number): number {
    return Math.atan2(this.sy.derivative(s), this.sx.derivative(s));
  }
  /**
   * LimSim's cartesian_to_frenet1D: s by a search from coarse to fine (5 m, 1 m, then 0.05 m steps
   * around the best so far), d the signed distance to the point at s (positive to the left).
   */
  toFrenet(x: number, y: number): { s: number; d: number } {
    let left = this.s[0]!;
    let right = this.length;
    let best = left;
    for (const precision of [5, 1, 0.05]) {
      let bestDistance = Infinity;
      for (const s of arange(left, right + precision, precision)) {
        const [px, py] = this.position(s);
        const distance = Math.hypot(px - x, py - y);
        if (distance < bestDistance) {
          bestDistance = distance;
          best = s;
        }
      }
      left = best - precision;
      right = best + precision;
    }
    const [rx, ry] = this.position(best);
    const yaw = this.yaw(best);
    const dx = x - rx;
    const dy = y - ry;
    const cross = Math.cos(yaw) * dy - Math.sin(yaw) * dx;
    const d = Math.hypot(dx, dy);
    return { s: best, d: cross < 0 || Object.is(cross, -0) ? -d : d };
  }
}

/** A normal lane as LimSim rebuilds it: the shape resampled by point index to 50 points (np.interp). */
export function limsimLaneSpline(shape: readonly RoadPoint[]): LimSimSpline {
  const n = shape.length;
  const at = linspace(0, n - 1, 50);
  const resample = (k: 0 | 1): number[] =>
    at.map((v) => {
      const i = Math.min(Math.floor(v), n - 2);
      if (v >= n - 1) return shape[n - 1]![k];
      const a = shape[i]![k];
      const b = shape[i + 1]![k];
      return a + (v - i) * (b - a);
    });
  return new LimSimSpline(resample(0), resample(1));
}

/** The distance over which LimSim joins a junction lane to its neighbours (OVERLAP_DISTANCE). */
const OVERLAP = 0.1;

/**
 * A junction lane as LimSim rebuilds it: 20 points over the last 0.1 m of the lane before and 20 over
 * the first 0.1 m of the lane after, splined. Between them the curve is nearly a straight chord.
 */
export function limsimJunctionSpline(from: LimSimSpline, to: LimSimSpline): LimSimSpline {
  const points = [
    ...linspace(from.length - OVERLAP, from.length, 20).map((s) => from.position(s)),
    ...linspace(0, OVERLAP, 20).map((s) => to.position(s)),
  ];
  return new LimSimSpline(
    points.map((p) => p[0]),
    points.map((p) => p[1]),
  );
}

/**
 * A network's lanes as LimSim sees them: normal lanes as its splines through their shapes, junction
 * lanes (the `via` of a link between normal lanes) as its splines joining the two lanes. Built on
 * first use, lane by lane.
 */
export class LimSimLanes {
  private readonly splines = new Map<string, LimSimSpline | null>();
  private readonly viaLink = new Map<string, Connection>();
  private readonly lanes: Map<string, RoadLane>;
  constructor(net: RoadNetwork) {
    const lanes = new Map(net.lanes.map((l) => [l.id, l]));
    this.lanes = lanes;
    for (const c of net.connections)
      if (
        c.via !== undefined &&
        lanes.get(c.fromLane)?.function === 'normal' &&
        lanes.get(c.toLane)?.function === 'normal'
      )
        this.viaLink.set(c.via, c);
  }
  /** The lane's spline; undefined for a lane LimSim builds none for (it would fail on it). */
  spline(id: string): LimSimSpline | undefined {
    if (!this.splines.has(id)) {
      const lane = this.lanes.get(id);
      const link = this.viaLink.get(id);
      let spline: LimSimSpline | null = null;
      if (lane?.function === 'normal' && lane.centerLine.length >= 2)
        spline = limsimLaneSpline(lane.centerLine);
      else if (link && (lane?.length ?? 0) >= 1) {
        const from = this.spline(link.fromLane);
        const to = this.spline(link.toLane);
        if (from && to) spline = limsimJunctionSpline(from, to);
      }
      this.splines.set(id, spline);
    }
    return this.splines.get(id) ?? undefined;
  }
  isNormal(id: string): boolean {
    return this.lanes.get(id)?.function === 'normal';
  }
}
