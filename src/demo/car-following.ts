/**
 * The Intelligent Driver Model (Treiber, Hennecke and Helbing, 2000) for the acceleration a driver
 * chooses, and the speed from which a stop within a distance is still possible with the driver's
 * deceleration, as SUMO bounds its vehicles, so that red lights and queues are never overrun.
 */

export interface DriverParameters {
  /** m/s^2: the comfortable acceleration (SUMO `accel`) and deceleration (`decel`). */
  accel: number;
  decel: number;
  /** s: desired time headway (SUMO `tau`). */
  tau: number;
  /** m: gap kept when standing (SUMO `minGap`). */
  minGap: number;
}

const DELTA = 4;

/** m/s^2, for a desired speed `v0`, and a leader `gap` metres ahead driving at `leaderSpeed` (none: Infinity). */
export function idmAcceleration(
  p: DriverParameters,
  v: number,
  v0: number,
  gap: number,
  leaderSpeed: number,
): number {
  const free = v0 > 0 ? 1 - Math.pow(Math.min(v / v0, 2), DELTA) : -1;
  if (!Number.isFinite(gap)) return p.accel * free;
  const desired =
    p.minGap + Math.max(0, v * p.tau + (v * (v - leaderSpeed)) / (2 * Math.sqrt(p.accel * p.decel)));
  const g = Math.max(gap, 0.01);
  return p.accel * (free - (desired / g) * (desired / g));
}

/**
 * The highest speed for the next step of `dt` seconds after which the vehicle can still be at or
 * below `targetSpeed` at a point `distance` metres ahead, braking at `decel` (positions advance by
 * the new speed times dt, as in SUMO's default update).
 */
export function safeApproachSpeed(distance: number, targetSpeed: number, decel: number, dt: number): number {
  const d = Math.max(0, distance);
  const b = decel;
  return Math.max(0, -b * dt + Math.sqrt(b * b * dt * dt + targetSpeed * targetSpeed + 2 * b * d));
}
