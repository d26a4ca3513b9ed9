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

/** A location in centimetres, Unreal's frame, to metres in simrec's. */
export const locationToSimrec = (x: number, y: number, z: number): [number, number, number] => [
  x / 100,
  -y / 100,
  z / 100,
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
  (roll * Math.PI) / 180,
  -((pitch * Math.PI) / 180),
  -((yaw * Math.PI) / 180),
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
  -(x * RAD),
  y * RAD,
  -(z * RAD),
];
export const angularToCarla = (x: number, y: number, z: number): [number, number, number] => [
  -(x / RAD),
  y / RAD,
  -(z / RAD),
];

/** Walker and biker speeds: CARLA keeps Unreal's cm/s. */
export const speedToSimrec = (cmPerSecond: number): number => cmPerSecond / 100;
export const speedToCarla = (metresPerSecond: number): number => metresPerSecond * 100;
