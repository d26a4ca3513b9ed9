/**
 * The benchmark's traffic: a deterministic, seeded generator of N actors stepping at a fixed rate on a
 * grid of straight lanes, the ego also carrying driver inputs and four wheels. Every peer receives the
 * same frames; each converts them to its own input form, and that conversion is part of its cost.
 *
 * Motion is integrated from noisy accelerations, so positions and speeds are full-precision floats like a
 * simulator's (not rounded, not exactly periodic): compression gets no easier data than it would in use.
 */
import { seededRandom } from './stats.js';

export interface BenchSize {
  actors: number;
  steps: number;
  hz: number;
}

export const FULL_SIZE: BenchSize = { actors: 200, steps: 10_000, hz: 100 };
export const QUICK_SIZE: BenchSize = { actors: 20, steps: 300, hz: 100 };

/** The run's begin, microseconds since the epoch; frame i is at BEGIN_US + i * period. */
export const BEGIN_US = 1_750_000_000_000_000;
export const SEED = 20_261_122;

export const periodUs = (size: BenchSize): number => Math.round(1_000_000 / size.hz);
export const timeOfStep = (size: BenchSize, step: number): number => BEGIN_US + step * periodUs(size);
/** The step whose frame is the latest at or before t. */
export const stepAtOrBefore = (size: BenchSize, t: number): number =>
  Math.floor((t - BEGIN_US) / periodUs(size));

const ACTOR_IDS: string[] = [];
/** Memoised: peers call it per row, and building the string each time would bill them for the generator. */
export const actorId = (i: number): string =>
  (ACTOR_IDS[i] ??= i === 0 ? 'ego' : `v${String(i).padStart(3, '0')}`);
/** LimSim's vtag: the ego, or a vehicle in its area of interest. */
export const actorTag = (i: number): string => (i === 0 ? 'ego' : 'AoI');

const LANE_LENGTH = 500; // m
const LANES_PER_EDGE = 3;
const EDGES = 16;
export const LANE_IDS: string[] = Array.from({ length: EDGES * LANES_PER_EDGE }, (_, k) => {
  const edge = Math.floor(k / LANES_PER_EDGE);
  return `E${edge}_${k % LANES_PER_EDGE}`;
});

export interface WheelState {
  angularVelocity: number;
  torque: number;
  steer: number;
  suspension: number;
  slipLong: number;
  slipLat: number;
}

/** One step of the whole scene, column by column (index = actor). */
export interface Frame {
  step: number;
  t: number;
  x: Float64Array;
  y: Float64Array;
  yaw: Float64Array;
  speed: Float64Array;
  accel: Float64Array;
  lanePos: Float64Array;
  /** Index into LANE_IDS. */
  lane: Int32Array;
  /** LimSim's index into the vehicle's route. */
  routeIdx: Int32Array;
  control: { throttle: number; brake: number; steer: number; gear: number };
  wheels: WheelState[];
}

export class TrafficGenerator {
  readonly size: BenchSize;
  private readonly random: () => number;
  private readonly frame: Frame;
  private readonly targetSpeed: Float64Array;
  private readonly origin: Float64Array;
  private readonly heading: Float64Array;
  private stepIndex = 0;

  constructor(size: BenchSize, seed = SEED) {
    this.size = size;
    this.random = seededRandom(seed);
    const n = size.actors;
    this.frame = {
      step: 0,
      t: BEGIN_US,
      x: new Float64Array(n),
      y: new Float64Array(n),
      yaw: new Float64Array(n),
      speed: new Float64Array(n),
      accel: new Float64Array(n),
      lanePos: new Float64Array(n),
      lane: new Int32Array(n),
      routeIdx: new Int32Array(n),
      control: { throttle: 0, brake: 0, steer: 0, gear: 1 },
      wheels: Array.from({ length: 4 }, () => ({
        angularVelocity: 0,
        torque: 0,
        steer: 0,
        suspension: 0,
        slipLong: 0,
        slipLat: 0,
      })),
    };
    this.targetSpeed = new Float64Array(n);
    this.origin = new Float64Array(n * 2);
    this.heading = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      this.frame.lane[i] = Math.floor(this.random() * LANE_IDS.length);
      this.frame.lanePos[i] = this.random() * LANE_LENGTH * 0.5;
      this.frame.speed[i] = 5 + this.random() * 10;
      this.targetSpeed[i] = 8 + this.random() * 8;
      this.placeOnLane(i);
    }
    this.updatePoses();
  }

  /** The next frame. The returned object is reused: copy what must outlive the next call. */
  next(): Frame {
    const f = this.frame;
    if (this.stepIndex > 0) this.advance();
    f.step = this.stepIndex;
    f.t = timeOfStep(this.size, this.stepIndex);
    this.stepIndex++;
    return f;
  }

  private advance(): void {
    const f = this.frame;
    const dt = 1 / this.size.hz;
    for (let i = 0; i < this.size.actors; i++) {
      const jitter = (this.random() - 0.5) * 0.8;
      const a = Math.max(-4, Math.min(2.6, 0.4 * (this.targetSpeed[i]! - f.speed[i]!) + jitter));
      f.accel[i] = a;
      f.speed[i] = Math.max(0, f.speed[i]! + a * dt);
      f.lanePos[i] = f.lanePos[i]! + f.speed[i]! * dt;
      if (f.lanePos[i]! >= LANE_LENGTH) {
        f.lanePos[i] = f.lanePos[i]! - LANE_LENGTH;
        f.lane[i] = (f.lane[i]! + LANES_PER_EDGE + Math.floor(this.random() * 2)) % LANE_IDS.length;
        f.routeIdx[i] = f.routeIdx[i]! + 1;
        this.targetSpeed[i] = 8 + this.random() * 8;
        this.placeOnLane(i);
      }
    }
    this.updatePoses();
    const ego = f.control;
    const a0 = f.accel[0]!;
    ego.throttle = a0 > 0 ? a0 / 2.6 : 0;
    ego.brake = a0 < 0 ? -a0 / 4 : 0;
    ego.steer = Math.sin(this.stepIndex / 170) * 0.05 + (this.random() - 0.5) * 0.01;
    ego.gear = 1 + Math.min(4, Math.floor(f.speed[0]! / 5));
    const wheelSpeed = f.speed[0]! / 0.33;
    f.wheels.forEach((w, k) => {
      w.angularVelocity = wheelSpeed * (1 + (this.random() - 0.5) * 0.002);
      w.torque = (k < 2 ? 1 : 0.6) * 300 * ego.throttle - 900 * ego.brake;
      w.steer = k < 2 ? ego.steer * 0.6 : 0;
      w.suspension = 0.05 + (this.random() - 0.5) * 0.004;
      w.slipLong = (this.random() - 0.5) * 0.02;
      w.slipLat = (this.random() - 0.5) * 0.01;
    });
  }

  /** Each edge is a straight road from a point on a 2 km square, in one of 16 headings. */
  private placeOnLane(i: number): void {
    const lane = this.frame.lane[i]!;
    const edge = Math.floor(lane / LANES_PER_EDGE);
    const offset = (lane % LANES_PER_EDGE) * 3.2;
    const heading = (edge / EDGES) * 2 * Math.PI;
    this.heading[i] = heading;
    this.origin[2 * i] = 1000 * Math.cos(edge * 1.7) - Math.sin(heading) * offset;
    this.origin[2 * i + 1] = 1000 * Math.sin(edge * 2.3) + Math.cos(heading) * offset;
  }

  private updatePoses(): void {
    const f = this.frame;
    for (let i = 0; i < this.size.actors; i++) {
      const h = this.heading[i]!;
      const wobble = Math.sin(f.lanePos[i]! / 37 + i) * 0.15;
      f.x[i] = this.origin[2 * i]! + Math.cos(h) * f.lanePos[i]! - Math.sin(h) * wobble;
      f.y[i] = this.origin[2 * i + 1]! + Math.sin(h) * f.lanePos[i]! + Math.cos(h) * wobble;
      f.yaw[i] = h + Math.atan2(Math.cos(f.lanePos[i]! / 37 + i) * 0.15, 37);
    }
  }
}
