import type { FieldDecl, StreamDecl } from './stream.js';

/**
 * The streams simrec's own tools understand: every format maps its actor poses to `state`, its
 * driver inputs to `control` and its wheel data to `wheels`. Simulators may add any other stream.
 * Positions are of the actor's centre (not SUMO's front bumper, not Unreal's pivot).
 *
 * Frames: x, y, z and the vectors vx..vz, ax..az and wx..wz are in the world frame (right-handed,
 * z up), not the vehicle's; `speed` is the signed speed along the heading (negative reversing) and
 * `accel` its derivative, the longitudinal acceleration. roll, pitch, yaw are intrinsic Z-Y-X.
 */
export const STATE_STREAM = 'state';
export const CONTROL_STREAM = 'control';
export const WHEELS_STREAM = 'wheels';
/** A traffic light's signal (SUMO's view of a traffic-light program; LimSim's own rows add their own fields). */
export const SIGNAL_STREAM = 'signal';
/**
 * The criteria a scenario was judged by (ScenarioRunner's, imported with a CARLA recording): a stream
 * of the run, not of an actor, one sample a criterion (name, status, actual and expected values).
 */
export const CRITERIA_STREAM = 'criteria';

const f = (name: string, unit: string, optional = true): FieldDecl => ({ name, type: 'f64', unit, optional });

export const STATE_FIELDS: FieldDecl[] = [
  f('x', 'm', false),
  f('y', 'm', false),
  f('z', 'm'),
  f('roll', 'rad'),
  f('pitch', 'rad'),
  f('yaw', 'rad', false),
  f('speed', 'm/s'),
  f('vx', 'm/s'),
  f('vy', 'm/s'),
  f('vz', 'm/s'),
  f('accel', 'm/s^2'),
  f('ax', 'm/s^2'),
  f('ay', 'm/s^2'),
  f('az', 'm/s^2'),
  f('wx', 'rad/s'),
  f('wy', 'rad/s'),
  f('wz', 'rad/s'),
  { name: 'lane', type: 'string', optional: true, description: 'lane id the actor is on' },
  // Of the actor's centre, like x and y (SUMO counts from the front bumper; LimSim, like simrec, not).
  {
    name: 'lanePos',
    type: 'f64',
    unit: 'm',
    optional: true,
    description: "distance along the lane to the actor's centre",
  },
];

export const CONTROL_FIELDS: FieldDecl[] = [
  { name: 'throttle', type: 'f64', unit: '1', optional: true, description: '0..1' },
  { name: 'brake', type: 'f64', unit: '1', optional: true, description: '0..1' },
  { name: 'steer', type: 'f64', unit: '1', optional: true, description: '-1 (left)..1 (right)' },
  {
    name: 'gear',
    type: 'i32',
    optional: true,
    description: 'engaged gear: 1.. forward, 0 neutral, -1 reverse (as CARLA and Unreal report it)',
  },
  { name: 'handbrake', type: 'bool', optional: true },
];

/**
 * Per-wheel state, one object per wheel (front-left, front-right, rear-left, rear-right for a car):
 * { angularVelocity rad/s, torque N*m, brakeTorque N*m, steer rad, suspension m, slipLong, slipLat }.
 */
export const WHEELS_FIELDS: FieldDecl[] = [
  { name: 'wheels', type: 'json', description: 'array of per-wheel states' },
];

/** What SUMO's TraCI and the demo's lights say of a traffic light at each step. */
export const SIGNAL_FIELDS: FieldDecl[] = [
  { name: 'state', type: 'string', description: 'one character per controlled link: r y g G o O u s' },
  { name: 'phase', type: 'i32' },
  { name: 'program', type: 'string' },
  { name: 'timeToSwitch', type: 'f64', unit: 's' },
];

export const stateStream = (actor: string, extra: Partial<StreamDecl> = {}): StreamDecl => ({
  name: STATE_STREAM,
  actor,
  fields: STATE_FIELDS,
  ...extra,
});
export const controlStream = (actor: string, extra: Partial<StreamDecl> = {}): StreamDecl => ({
  name: CONTROL_STREAM,
  actor,
  fields: CONTROL_FIELDS,
  ...extra,
});
export const wheelsStream = (actor: string, extra: Partial<StreamDecl> = {}): StreamDecl => ({
  name: WHEELS_STREAM,
  actor,
  fields: WHEELS_FIELDS,
  ...extra,
});
export const signalStream = (actor: string, extra: Partial<StreamDecl> = {}): StreamDecl => ({
  name: SIGNAL_STREAM,
  actor,
  fields: SIGNAL_FIELDS,
  ...extra,
});
