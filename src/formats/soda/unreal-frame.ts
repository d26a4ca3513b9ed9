import type { Sample } from '../../model/stream.js';
import {
  canonicalLocationToUnreal,
  canonicalToUnrealRotator,
  unrealLocationToCanonical,
  unrealRotatorToCanonical,
  type Euler,
} from '../../model/units.js';

/**
 * The one place SODA.Sim's Unreal frame meets the canonical one (centimetres, left-handed with y to
 * the right, degrees; vel and acc in the vehicle's own frame). Everything else in this folder
 * handles numbers already in one frame or the other.
 */
export type Triple = [number, number, number];

/** Canonical state fields that a SODA.Sim row holds (anything else has no place in a row). */
export interface UnrealState {
  /** World location, cm. */
  loc: Triple;
  /** FRotator, degrees. */
  rot: { pitch: number; yaw: number; roll: number };
  /** Vehicle frame (x forward, y right, z up), cm/s and cm/s^2. */
  vel: Triple;
  acc: Triple;
  /** rad/s, Unreal's world axes (inferred: PhysX reports world-frame angular velocity). */
  angVel: Triple;
}

/** Local (vehicle) to world, both canonical: R = Rz(yaw) Ry(pitch) Rx(roll), intrinsic Z-Y-X. */
function toWorld({ roll, pitch, yaw }: Euler, [x, y, z]: Triple): Triple {
  const [cr, sr, cp, sp, cy, sy] = [
    Math.cos(roll),
    Math.sin(roll),
    Math.cos(pitch),
    Math.sin(pitch),
    Math.cos(yaw),
    Math.sin(yaw),
  ];
  return [
    cy * cp * x + (cy * sp * sr - sy * cr) * y + (cy * sp * cr + sy * sr) * z,
    sy * cp * x + (sy * sp * sr + cy * cr) * y + (sy * sp * cr - cy * sr) * z,
    -sp * x + cp * sr * y + cp * cr * z,
  ];
}

/** World to local: the transpose of toWorld's rotation. */
function toLocal({ roll, pitch, yaw }: Euler, [x, y, z]: Triple): Triple {
  const [cr, sr, cp, sp, cy, sy] = [
    Math.cos(roll),
    Math.sin(roll),
    Math.cos(pitch),
    Math.sin(pitch),
    Math.cos(yaw),
    Math.sin(yaw),
  ];
  return [
    cy * cp * x + sy * cp * y - sp * z,
    (cy * sp * sr - sy * cr) * x + (sy * sp * sr + cy * cr) * y + cp * sr * z,
    (cy * sp * cr + sy * sr) * x + (sy * sp * cr - cy * sr) * y + cp * cr * z,
  ];
}

// A vector in the vehicle frame: canonical y is left, Unreal's is right; cm against m.
const localToUnreal = ([x, y, z]: Triple): Triple => [x * 100, -y * 100, z * 100];
const unrealToLocal = ([x, y, z]: Triple): Triple => [x / 100, -y / 100, z / 100];

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

function vector(sample: Sample, keys: readonly [string, string, string]): Triple | undefined {
  const [a, b, c] = keys.map((k) => num(sample[k]));
  return a === undefined && b === undefined && c === undefined ? undefined : [a ?? 0, b ?? 0, c ?? 0];
}

/**
 * Unreal's `loc` is the actor's pivot (a car's is on the ground); simrec's position is the centre of
 * the actor's box. The offset from pivot to centre, in Unreal's vehicle frame (cm), follows from the
 * extents SODA.Sim records: {forward, backward, left, right, up, down} measured from the pivot.
 */
export function pivotToCentre(extents: {
  forward: number;
  backward: number;
  left: number;
  right: number;
  up: number;
  down: number;
}): Triple {
  return [
    (extents.forward - extents.backward) / 2,
    (extents.right - extents.left) / 2,
    (extents.up - extents.down) / 2,
  ];
}

function centreOffsetWorld(euler: Euler, pivotOffset: Triple | undefined): Triple {
  if (!pivotOffset || (pivotOffset[0] === 0 && pivotOffset[1] === 0 && pivotOffset[2] === 0))
    return [0, 0, 0];
  return toWorld(euler, unrealToLocal(pivotOffset));
}

/**
 * A canonical state sample in Unreal terms. World velocity and acceleration (vx.., ax..) are turned
 * into the vehicle frame; without them the scalar speed and accel stand for the forward component,
 * which is all SODA.Sim's ghost actors record anyway.
 */
export function stateToUnreal(sample: Sample, pivotOffset?: Triple): UnrealState {
  const euler: Euler = {
    roll: num(sample.roll) ?? 0,
    pitch: num(sample.pitch) ?? 0,
    yaw: num(sample.yaw) ?? 0,
  };
  const [ox, oy, oz] = centreOffsetWorld(euler, pivotOffset);
  const loc = canonicalLocationToUnreal({
    x: (num(sample.x) ?? 0) - ox,
    y: (num(sample.y) ?? 0) - oy,
    z: (num(sample.z) ?? 0) - oz,
  });
  const velWorld = vector(sample, ['vx', 'vy', 'vz']);
  const accWorld = vector(sample, ['ax', 'ay', 'az']);
  const vel = velWorld ? toLocal(euler, velWorld) : ([num(sample.speed) ?? 0, 0, 0] as Triple);
  const acc = accWorld ? toLocal(euler, accWorld) : ([num(sample.accel) ?? 0, 0, 0] as Triple);
  const w = vector(sample, ['wx', 'wy', 'wz']) ?? [0, 0, 0];
  return {
    loc: [loc.x, loc.y, loc.z],
    rot: canonicalToUnrealRotator(euler),
    vel: localToUnreal(vel),
    acc: localToUnreal(acc),
    // Angular velocity is a pseudo-vector: mirroring y flips its x and z components, keeps y.
    angVel: [-w[0], w[1], -w[2]],
  };
}

/** The canonical state fields of a SODA.Sim row (acc and angVel only when the row has them). */
export function unrealToState(
  u: Partial<UnrealState> & Pick<UnrealState, 'loc' | 'rot' | 'vel'>,
  pivotOffset?: Triple,
): { [field: string]: number } {
  const p = unrealLocationToCanonical({ x: u.loc[0], y: u.loc[1], z: u.loc[2] });
  const e = unrealRotatorToCanonical(u.rot);
  // The yaw is kept as recorded, not wrapped: an FRotator may hold 270 degrees, and a run exported
  // and imported again must give the same yaw back, not only the same heading.
  const euler: Euler = { roll: e.roll + 0, pitch: e.pitch + 0, yaw: e.yaw + 0 };
  const [ox, oy, oz] = centreOffsetWorld(euler, pivotOffset);
  const velLocal = unrealToLocal(u.vel);
  const [vx, vy, vz] = toWorld(euler, velLocal);
  // speed is the velocity's magnitude, negative when moving backwards, and accel its derivative: a
  // car pitched on its suspension while it drives on the level has a forward velocity component
  // below its speed, and the exported run must come back with the speed it was recorded with.
  const magnitude = Math.hypot(...velLocal);
  const direction = velLocal[0] < 0 ? -1 : 1;
  const along = (v: Triple): number =>
    magnitude > 0
      ? (direction * (v[0] * velLocal[0] + v[1] * velLocal[1] + v[2] * velLocal[2])) / magnitude
      : v[0];
  const out: { [field: string]: number } = {
    x: p.x + ox,
    y: p.y + oy,
    z: p.z + oz,
    roll: euler.roll,
    pitch: euler.pitch,
    yaw: euler.yaw,
    speed: direction * magnitude + 0,
    vx,
    vy,
    vz,
  };
  if (u.acc) {
    const accLocal = unrealToLocal(u.acc);
    const [ax, ay, az] = toWorld(euler, accLocal);
    Object.assign(out, { accel: along(accLocal) + 0, ax, ay, az });
  }
  if (u.angVel) Object.assign(out, { wx: -u.angVel[0] + 0, wy: u.angVel[1] + 0, wz: -u.angVel[2] + 0 });
  return out;
}
