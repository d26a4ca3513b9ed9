/**
 * CARLA's recorder keeps Unreal's world: centimetres, left-handed with x forward (east on CARLA's
 * maps), y to the right (south), z up; rotations in degrees as FRotator's Euler() gives them,
 * (roll, pitch, yaw) = (X, Y, Z): yaw clockwise seen from above, pitch positive nose up, roll positive
 * clockwise looking forward. simrec is metres, radians, right-handed z up (x east, y north), yaw
 * counter-clockwise from +x, pitch positive nose down (ISO 8855), roll as CARLA's.
 *
 * Mirroring y makes the frame right-handed; the conversions below are exact both ways for every
 * float32 CARLA writes (a value converted to simrec and back rounds to the same float32: the double
 * arithmetic errs by a few units in the 16th digit, float32 keeps 7), which the importer checks record
 * by record. OpenDRIVE's (x, y) are simrec's: CARLA builds its maps from OpenDRIVE with y negated.
 */

const RAD = Math.PI / 180;

/** The three conversions every one below is made of, one value at a time. */
const metresOf = (centimetres: number): number => centimetres / 100;
const radiansOf = (degrees: number): number => (degrees * Math.PI) / 180;
const radiansPerSecondOf = (degreesPerSecond: number): number => degreesPerSecond * RAD;

/** A location in centimetres, Unreal's frame, to metres in simrec's. */
export const locationToSimrec = (x: number, y: number, z: number): [number, number, number] => [
  metresOf(x),
  -metresOf(y),
  metresOf(z),
];
export const locationToCarla = (x: number, y: number, z: number): [number, number, number] => [
  x * 100,
  -y * 100,
  z * 100,
];

/** A local offset or a half size: centimetres to metres, y mirrored for offsets only. */
export const extentToSimrec = (v: number): number => v / 100;
export const extentToCarla = (v: number): number => v * 100;

/** FRotator's Euler() (roll, pitch, yaw in degrees) to simrec's roll, pitch, yaw in radians. */
export const rotationToSimrec = (roll: number, pitch: number, yaw: number): [number, number, number] => [
  radiansOf(roll),
  -radiansOf(pitch),
  -radiansOf(yaw),
];
export const rotationToCarla = (roll: number, pitch: number, yaw: number): [number, number, number] => [
  (roll * 180) / Math.PI,
  -((pitch * 180) / Math.PI),
  -((yaw * 180) / Math.PI),
];

/** A velocity CARLA already keeps in m/s (the recorder multiplies Unreal's cm/s by 1e-2): y mirrored. */
export const velocityToSimrec = (x: number, y: number, z: number): [number, number, number] => [x, -y, z];
export const velocityToCarla = velocityToSimrec;

/**
 * An angular velocity in degrees/s, Unreal's frame (GetPhysicsAngularVelocityInDegrees: positive z
 * turns +x toward +y, which is CARLA's yaw increasing), to rad/s in simrec's: an axial vector under a
 * mirror changes sign except along the mirrored axis, so (-x, y, -z).
 */
export const angularToSimrec = (x: number, y: number, z: number): [number, number, number] => [
  -radiansPerSecondOf(x),
  radiansPerSecondOf(y),
  -radiansPerSecondOf(z),
];
export const angularToCarla = (x: number, y: number, z: number): [number, number, number] => [
  -(x / RAD),
  y / RAD,
  -(z / RAD),
];

/** Walker and biker speeds: CARLA keeps Unreal's cm/s. */
export const speedToSimrec = (cmPerSecond: number): number => cmPerSecond / 100;
export const speedToCarla = (metresPerSecond: number): number => metresPerSecond * 100;

/**
 * A Position's six floats (location, rotation) or a Kinematics' (velocity, angular velocity), as
 * CARLA wrote them, to simrec's units in `out` from `at`: what locationToSimrec and rotationToSimrec,
 * or velocityToSimrec and angularToSimrec, give, without an array per record (the importer reads
 * millions).
 */
export function sixFloatsToSimrec(
  kind: 'position' | 'kinematics',
  f: ArrayLike<number>,
  out: Float64Array,
  at: number,
): void {
  if (kind === 'position') {
    out[at] = metresOf(f[0]!);
    out[at + 1] = -metresOf(f[1]!);
    out[at + 2] = metresOf(f[2]!);
    out[at + 3] = radiansOf(f[3]!);
    out[at + 4] = -radiansOf(f[4]!);
    out[at + 5] = -radiansOf(f[5]!);
  } else {
    out[at] = f[0]!;
    out[at + 1] = -f[1]!;
    out[at + 2] = f[2]!;
    out[at + 3] = -radiansPerSecondOf(f[3]!);
    out[at + 4] = radiansPerSecondOf(f[4]!);
    out[at + 5] = -radiansPerSecondOf(f[5]!);
  }
}
