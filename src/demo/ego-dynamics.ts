/**
 * The ego's body, drivetrain and wheels, derived from the motion the traffic model gives it, so that
 * its recording carries everything SODA.Sim records for an ego: control inputs, and per wheel the
 * angular velocity, drive and brake torque, steer angle, suspension travel and slips. A front-wheel
 * drive sedan; the numbers are a mid-size car's.
 */
export const EGO_CAR = {
  mass: 1500,
  wheelbase: 2.8,
  track: 1.6,
  wheelRadius: 0.33,
  /** Centre of mass height, m. */
  comHeight: 0.55,
  maxSteer: 0.6,
  /** Force at full throttle and full brake, N. */
  maxDrive: 6000,
  maxBrake: 12000,
  /** Suspension spring per wheel, N/m, and its travel at rest, m. */
  spring: 35000,
  restTravel: 0.1,
  dragArea: 0.65,
  rollingResistance: 0.012,
  /** Tyre stiffness: longitudinal per unit slip, lateral per radian, as a multiple of the wheel load. */
  slipStiffness: 25,
  corneringStiffness: 16,
  /** Upshift speeds, m/s: gear n above the (n-1)th. */
  gears: [0, 4.5, 9, 14, 20, 27],
} as const;

const G = 9.81;
const AIR = 1.2;
export const WHEEL_POSITIONS = ['fl', 'fr', 'rl', 'rr'] as const;

export interface EgoMotion {
  speed: number;
  accel: number;
  yaw: number;
  yawRate: number;
  curvature: number;
}

export interface EgoDetails {
  roll: number;
  pitch: number;
  /** Body-frame accelerations turned to the world frame. */
  ax: number;
  ay: number;
  wx: number;
  wy: number;
  control: { throttle: number; brake: number; steer: number; gear: number; handbrake: boolean };
  wheels: {
    position: string;
    angularVelocity: number;
    torque: number;
    brakeTorque: number;
    steer: number;
    suspension: number;
    slipLong: number;
    slipLat: number;
  }[];
}

const clamp = (v: number, lo: number, hi: number): number => Math.max(lo, Math.min(hi, v));

export class EgoDynamics {
  private roll = 0;
  private pitch = 0;
  private gear = 1;

  update(m: EgoMotion, dt: number): EgoDetails {
    const c = EGO_CAR;
    const v = m.speed;
    const lateral = v * m.yawRate;
    const resistance = v > 0.05 ? 0.5 * AIR * c.dragArea * v * v + c.rollingResistance * c.mass * G : 0;
    const force = c.mass * m.accel + resistance;
    const drive = Math.max(0, force);
    const brakeForce = Math.max(0, -force);
    const standing = v < 0.05 && m.accel <= 0;
    // Load transfer: forward under braking, outward in a turn.
    const static_ = (c.mass * G) / 4;
    const pitchLoad = (c.mass * m.accel * c.comHeight) / c.wheelbase / 2;
    const rollLoad = (c.mass * lateral * c.comHeight) / c.track / 2;
    const roll = clamp(-(rollLoad / c.spring) / (c.track / 2), -0.1, 0.1);
    const pitch = clamp(-(pitchLoad / c.spring) / (c.wheelbase / 2), -0.1, 0.1);
    const wx = dt > 0 ? (roll - this.roll) / dt : 0;
    const wy = dt > 0 ? (pitch - this.pitch) / dt : 0;
    this.roll = roll;
    this.pitch = pitch;
    const up = c.gears.findLastIndex((speed) => v >= speed) + 1;
    // Hysteresis: shift down only well below the upshift speed.
    if (up > this.gear || v < (c.gears[this.gear - 1] ?? 0) * 0.8) this.gear = Math.max(1, up);
    const steerAngle = Math.atan(c.wheelbase * m.curvature);
    const wheels = WHEEL_POSITIONS.map((position, w) => {
      const front = w < 2;
      const left = w % 2 === 0;
      // Wheel position from the centre, body frame (x forward, y left).
      const px = front ? c.wheelbase / 2 : -c.wheelbase / 2;
      const py = left ? c.track / 2 : -c.track / 2;
      const vx = v - m.yawRate * py;
      const vy = m.yawRate * px;
      const ground = Math.hypot(vx, vy);
      const load = static_ + (front ? -pitchLoad : pitchLoad) + (left ? -rollLoad : rollLoad);
      const driveShare = front ? drive / 2 : 0;
      const brakeShare = (brakeForce * (front ? 0.6 : 0.4)) / 2;
      const slipLong =
        ground > 0.5 ? clamp((driveShare - brakeShare) / (c.slipStiffness * load), -0.2, 0.2) : 0;
      const lateralForce = (c.mass * lateral) / 4;
      const slipLat = ground > 0.5 ? clamp(lateralForce / (c.corneringStiffness * load), -0.2, 0.2) : 0;
      const radius = Math.abs(m.curvature) > 1e-6 ? 1 / m.curvature : Infinity;
      const steer = front && Number.isFinite(radius) ? Math.atan(c.wheelbase / (radius - py)) : 0;
      return {
        position,
        angularVelocity: (ground * (1 + slipLong)) / c.wheelRadius,
        torque: driveShare * c.wheelRadius,
        brakeTorque: (standing ? (c.maxBrake * 0.3 * (front ? 0.6 : 0.4)) / 2 : brakeShare) * c.wheelRadius,
        steer,
        suspension: clamp(c.restTravel + (load - static_) / c.spring, 0, 0.2),
        slipLong,
        slipLat,
      };
    });
    const cos = Math.cos(m.yaw);
    const sin = Math.sin(m.yaw);
    return {
      roll,
      pitch,
      ax: m.accel * cos - lateral * sin,
      ay: m.accel * sin + lateral * cos,
      wx,
      wy,
      control: {
        throttle: clamp(drive / c.maxDrive, 0, 1),
        brake: standing ? 0.3 : clamp(brakeForce / c.maxBrake, 0, 1),
        // Negative steers left (CONTROL_FIELDS), and a left turn has a positive curvature.
        steer: clamp(-steerAngle / c.maxSteer, -1, 1),
        gear: this.gear,
        handbrake: false,
      },
      wheels,
    };
  }
}
