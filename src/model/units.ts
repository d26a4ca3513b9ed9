/**
 * Canonical units and frames (docs/architecture.md, "Units and frames"): SI, right-handed, z up, yaw
 * counter-clockwise from +x, roll/pitch/yaw intrinsic Z-Y-X, quaternions (x, y, z, w), time in integer
 * microseconds. These helpers are pure; each format codec calls them at its own boundary and nowhere else.
 */

export const MICROS_PER_SECOND = 1_000_000;

export const degToRad = (deg: number): number => (deg * Math.PI) / 180;
export const radToDeg = (rad: number): number => (rad * 180) / Math.PI;
export const secondsToMicros = (s: number): number => Math.round(s * MICROS_PER_SECOND);
export const microsToSeconds = (us: number): number => us / MICROS_PER_SECOND;

/** Wraps an angle into (-pi, pi]. */
export function wrapAngle(rad: number): number {
  const wrapped = rad - 2 * Math.PI * Math.floor((rad + Math.PI) / (2 * Math.PI));
  return wrapped === -Math.PI ? Math.PI : wrapped;
}

/** Interpolates angles along the shorter arc. */
export const lerpAngle = (a: number, b: number, u: number): number => a + wrapAngle(b - a) * u;

/** SUMO's angle: degrees, clockwise from north. */
export const sumoAngleToYaw = (deg: number): number => wrapAngle(degToRad(90 - deg));
export const yawToSumoAngle = (yaw: number): number => {
  const deg = 90 - radToDeg(yaw);
  return ((deg % 360) + 360) % 360;
};

/**
 * SUMO places a vehicle or person at its front bumper (its position, and its lane position, are the
 * front's); simrec at its centre, half its length back along its heading. `along` is the heading's
 * component for the coordinate: cos(yaw) for x, sin(yaw) for y, 1 for a position along the lane.
 * Scalars, not a point: `record sumo` converts every actor of every step with it, allocating nothing.
 */
export const sumoFrontToCentre = (front: number, along: number, length: number): number =>
  front - (length / 2) * along;
export const centreToSumoFront = (centre: number, along: number, length: number): number =>
  centre + (length / 2) * along;

export interface Vec3 {
  x: number;
  y: number;
  z: number;
}
export interface Euler {
  roll: number;
  pitch: number;
  yaw: number;
}
export interface Quaternion {
  x: number;
  y: number;
  z: number;
  w: number;
}

/** Quaternion of intrinsic Z-Y-X (yaw, then pitch, then roll) rotations. */
export function eulerToQuaternion({ roll, pitch, yaw }: Euler): Quaternion {
  const [cr, sr] = [Math.cos(roll / 2), Math.sin(roll / 2)];
  const [cp, sp] = [Math.cos(pitch / 2), Math.sin(pitch / 2)];
  const [cy, sy] = [Math.cos(yaw / 2), Math.sin(yaw / 2)];
  return {
    x: sr * cp * cy - cr * sp * sy,
    y: cr * sp * cy + sr * cp * sy,
    z: cr * cp * sy - sr * sp * cy,
    w: cr * cp * cy + sr * sp * sy,
  };
}

export function quaternionToEuler({ x, y, z, w }: Quaternion): Euler {
  const sinp = 2 * (w * y - z * x);
  return {
    roll: Math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)),
    pitch: Math.abs(sinp) >= 1 ? (Math.sign(sinp) * Math.PI) / 2 : Math.asin(sinp),
    yaw: Math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)),
  };
}

/**
 * Unreal (SODA.Sim, deepdrive): centimetres, left-handed with y to the right, degrees; FRotator yaw is
 * clockwise seen from above, pitch positive nose-up, roll positive clockwise looking forward.
 * Mirroring y makes the frame right-handed: yaw and pitch change sign (canonical pitch is positive
 * nose-down, as in ISO 8855), roll keeps it.
 */
export const unrealLocationToCanonical = (p: Vec3): Vec3 => ({ x: p.x / 100, y: -p.y / 100, z: p.z / 100 });
export const canonicalLocationToUnreal = (p: Vec3): Vec3 => ({ x: p.x * 100, y: -p.y * 100, z: p.z * 100 });
export const unrealRotatorToCanonical = (r: { roll: number; pitch: number; yaw: number }): Euler => ({
  roll: degToRad(r.roll),
  pitch: -degToRad(r.pitch),
  yaw: -degToRad(r.yaw),
});
export const canonicalToUnrealRotator = (e: Euler): { roll: number; pitch: number; yaw: number } => ({
  roll: radToDeg(e.roll),
  pitch: -radToDeg(e.pitch),
  yaw: -radToDeg(e.yaw),
});

/**
 * Unity: metres, left-handed, y up, z forward, x right. Canonical x (forward/east) is Unity z,
 * canonical y (left/north) is Unity -x, canonical z (up) is Unity y.
 */
export const unityPositionToCanonical = (p: Vec3): Vec3 => ({ x: p.z, y: -p.x, z: p.y });
export const canonicalPositionToUnity = (p: Vec3): Vec3 => ({ x: -p.y, y: p.z, z: p.x });
/** The same change of basis applied to a rotation's axis; the handedness flip negates the angle. */
export const unityQuaternionToCanonical = (q: Quaternion): Quaternion => ({
  x: -q.z,
  y: q.x,
  z: -q.y,
  w: q.w,
});
export const canonicalQuaternionToUnity = (q: Quaternion): Quaternion => ({
  x: q.y,
  y: -q.z,
  z: -q.x,
  w: q.w,
});

/**
 * The units of the attributes simulators give an actor's type, by name, as simrec keeps them (SI):
 * SUMO's and LimSim's vType limits, the demo's and SODA.Sim's vehicle figures. The viewer shows them
 * beside the values; an attribute not named here is shown as it is.
 */
export const ATTRIBUTE_UNITS: Readonly<Record<string, string>> = {
  maxSpeed: 'm/s',
  speed: 'm/s',
  accel: 'm/s^2',
  decel: 'm/s^2',
  maxAccel: 'm/s^2',
  maxDecel: 'm/s^2',
  emergencyDecel: 'm/s^2',
  apparentDecel: 'm/s^2',
  minGap: 'm',
  length: 'm',
  width: 'm',
  height: 'm',
  wheelRadius: 'm',
  wheelbase: 'm',
  track: 'm',
  mass: 'kg',
  tau: 's',
};
