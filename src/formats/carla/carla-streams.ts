import type { FieldDecl } from '../../model/stream.js';
import { CONTROL_FIELDS, CONTROL_STREAM, STATE_FIELDS, STATE_STREAM } from '../../model/standard-streams.js';
import { PACKET } from './carla-layout.js';

/**
 * The streams a CARLA recording becomes. Per actor: `state` (Position, and Kinematics where the
 * recording has it), `control` (AnimVehicle), `lights` (VehicleLight), `walker` (AnimWalker), `signal`
 * (State of a traffic light), `carla_wheels`, `carla_biker`, `carla_bones`. For the run: `carla_frame`
 * (one sample a frame: CARLA's frame id, elapsed time, platform and visual time, the packets the frame
 * held), the events CARLA records in its frames (`carla_event`: actors created, destroyed, attached;
 * `carla_collision`, `carla_scene_light`, `carla_bbox`, `carla_trigger_volume`, `carla_physics`,
 * `carla_light_time`, `carla_door`), and `events` (a `collision` per contact, as
 * show_recorder_collisions lists them). Every sample's `step` is CARLA's frame id.
 */

const f64 = (name: string, unit: string, description?: string, optional = true): FieldDecl => ({
  name,
  type: 'f64',
  unit,
  optional,
  ...(description ? { description } : {}),
});
const opt = (field: FieldDecl): FieldDecl => ({ ...field, optional: true });

const STATE_DESCRIPTIONS: Record<string, string> = {
  x: "CARLA's actor location (the actor's origin: a vehicle's is on the ground under its centre, a walker's at its middle), x = X / 100",
  y: 'y = -Y / 100 (CARLA is left-handed, y to the right)',
  z: 'z = Z / 100',
  roll: "roll = CARLA's roll in radians",
  pitch: "pitch = -CARLA's pitch in radians (positive nose down)",
  yaw: "yaw = -CARLA's yaw in radians (counter-clockwise from +x; not wrapped)",
  speed: 'along the heading: from Kinematics where recorded, else from poses',
  vx: "Kinematics' linear velocity x where recorded, else from poses (central differences)",
  vy: "-Kinematics' linear velocity y where recorded, else from poses",
  vz: "Kinematics' linear velocity z where recorded, else from poses",
  wx: "-Kinematics' angular velocity x (deg/s) in rad/s",
  wy: "Kinematics' angular velocity y (deg/s) in rad/s",
  wz: "-Kinematics' angular velocity z (deg/s) in rad/s where recorded, else the change of yaw",
};

export const CARLA_STATE_FIELDS: FieldDecl[] = STATE_FIELDS.filter(
  (f) => !['lane', 'lanePos', 'accel', 'ax', 'ay', 'az'].includes(f.name),
).map((f) => (STATE_DESCRIPTIONS[f.name] ? { ...f, description: STATE_DESCRIPTIONS[f.name]! } : f));

export const LIGHTS_FIELDS: FieldDecl[] = [
  {
    name: 'state',
    type: 'i64',
    description:
      'carla.VehicleLightState bits: Position 1, LowBeam 2, HighBeam 4, Brake 8, RightBlinker 16, LeftBlinker 32, Reverse 64, Fog 128, Interior 256, Special1 512, Special2 1024',
  },
  {
    name: 'on',
    type: 'string',
    optional: true,
    description: 'the lights on, as show_recorder_file_info prints them',
  },
];

export const WALKER_FIELDS: FieldDecl[] = [
  f64('speed', 'm/s', "the walker's animation speed (AnimWalker)", false),
];

export const CARLA_SIGNAL_FIELDS: FieldDecl[] = [
  { name: 'state', type: 'string', description: 'r red, y yellow, G green, O off' },
  { name: 'carlaState', type: 'i32', description: 'ETrafficLightState: 0 Red, 1 Yellow, 2 Green, 3 Off' },
  { name: 'frozen', type: 'bool', optional: true },
  f64('elapsed', 's', 'time in the current state (the controller elapsed time)'),
];

export const WHEELS_FIELDS: FieldDecl[] = [
  {
    name: 'wheels',
    type: 'json',
    description:
      'AnimVehicleWheels as recorded: per wheel [location (0 FL, 1 FR, 2 BL, 3 BR, 4 ML, 5 MR), steering angle deg, tire rotation deg]',
  },
];

export const BIKER_FIELDS: FieldDecl[] = [
  f64('forwardSpeed', 'm/s'),
  f64('engineRotation', '1', 'engine rotation speed over its maximum'),
];

export const BONES_FIELDS: FieldDecl[] = [
  {
    name: 'bones',
    type: 'json',
    description:
      "WalkerBones as recorded: per bone [name, x, y, z (cm), roll, pitch, yaw (deg)], relative to its parent, in Unreal's frame",
  },
];

export const FRAME_FIELDS: FieldDecl[] = [
  { name: 'frame', type: 'i64', description: "CARLA's frame id (FrameStart), counted from 1" },
  f64('elapsed', 's', 'seconds since the recording began (FrameStart)', false),
  f64(
    'duration',
    's',
    "this frame's duration (FrameStart's durationThis; -1 on the last, never patched)",
    false,
  ),
  f64('platformTime', 's', "the recorder's wall clock since it started (PlatformTime)"),
  f64('visualTime', 's', "the episode's visual game time (VisualTime, 0.9.14 on)"),
  { name: 'frameCounter', type: 'i64', optional: true, description: 'FrameCounter' },
  {
    name: 'packets',
    type: 'string',
    description:
      'the packets of the frame in order: `ID` alone, `ID:a,b,...` the actors of a per-actor packet in record order (`!a` kept as bytes in `raw`), `ID#n` an event packet of n records, `ID?` a packet kept as bytes in `unknown`',
  },
  {
    name: 'raw',
    type: 'json',
    optional: true,
    description: 'records kept as bytes (base64), in order: [packet id, base64]',
  },
  {
    name: 'unknown',
    type: 'json',
    optional: true,
    description: 'packets simrec does not read, kept as bytes (base64), in order: [packet id, base64]',
  },
];

/** `actorId`, not `actor`: run-level streams have no actor, and tables keep `actor` for the stream's own. */
const actorField = (description: string): FieldDecl => ({
  name: 'actorId',
  type: 'string',
  optional: true,
  description,
});
const rawField: FieldDecl = {
  name: 'raw',
  type: 'string',
  optional: true,
  description: 'the record as bytes (base64), where its fields would not give them back',
};

export const EVENT_RECORD_FIELDS: FieldDecl[] = [
  { name: 'kind', type: 'string', description: 'add (EventAdd), del (EventDel), parent (EventParent)' },
  actorField("the actor's CARLA id"),
  { name: 'parent', type: 'string', optional: true, description: 'parent: the actor it is attached to' },
  { name: 'type', type: 'i32', optional: true, description: 'add: FCarlaActor::ActorType' },
  ...['x', 'y', 'z', 'roll', 'pitch', 'yaw'].map((n) =>
    opt({ ...STATE_FIELDS.find((f) => f.name === n)!, description: 'add: where the actor was created' }),
  ),
  {
    name: 'description',
    type: 'json',
    optional: true,
    description: 'add: {uid, id (the blueprint), attributes: [[type, id, value]]}',
  },
  rawField,
];

export const COLLISION_RECORD_FIELDS: FieldDecl[] = [
  { name: 'collision', type: 'i64', optional: true, description: "the recorder's collision id" },
  { name: 'actor1', type: 'i64', optional: true, description: 'CARLA id, 4294967295 for no actor' },
  { name: 'actor2', type: 'i64', optional: true, description: 'CARLA id, 4294967295 for no actor' },
  { name: 'hero1', type: 'bool', optional: true },
  { name: 'hero2', type: 'bool', optional: true },
  rawField,
];

export const SCENE_LIGHT_FIELDS: FieldDecl[] = [
  { name: 'light', type: 'i32', optional: true, description: 'the street light id' },
  f64('intensity', 'lm'),
  f64('r', '1'),
  f64('g', '1'),
  f64('b', '1'),
  f64('a', '1'),
  { name: 'on', type: 'bool', optional: true },
  { name: 'type', type: 'i32', optional: true, description: 'ELightType' },
  rawField,
];

export const BOX_FIELDS = (frame: string): FieldDecl[] => [
  actorField("the actor's CARLA id"),
  f64('x', 'm', `box centre in ${frame} (y mirrored from CARLA's)`),
  f64('y', 'm'),
  f64('z', 'm'),
  f64('extentX', 'm', 'half length'),
  f64('extentY', 'm', 'half width'),
  f64('extentZ', 'm', 'half height'),
  rawField,
];

export const PHYSICS_FIELDS: FieldDecl[] = [
  actorField("the actor's CARLA id"),
  {
    name: 'control',
    type: 'json',
    optional: true,
    description: "carla.VehiclePhysicsControl as recorded (CARLA's units: cm, deg)",
  },
  { ...rawField, description: 'the record as bytes (base64)' },
];

export const LIGHT_TIME_FIELDS: FieldDecl[] = [
  actorField("the traffic light's CARLA id"),
  f64('green', 's'),
  f64('yellow', 's'),
  f64('red', 's'),
  rawField,
];

export const DOOR_FIELDS: FieldDecl[] = [
  actorField("the vehicle's CARLA id"),
  {
    name: 'door',
    type: 'i32',
    optional: true,
    description: 'EVehicleDoor: 0 FL, 1 FR, 2 RL, 3 RR, 4 Hood, 5 Trunk, 6 All',
  },
  { name: 'open', type: 'bool', optional: true },
  rawField,
];

/** Per-actor packets: the stream each becomes and its fields. Kinematics joins `state`. */
export const ACTOR_STREAMS: Readonly<Record<number, { name: string; fields: FieldDecl[] }>> = {
  [PACKET.Position]: { name: STATE_STREAM, fields: CARLA_STATE_FIELDS },
  [PACKET.Kinematics]: { name: STATE_STREAM, fields: CARLA_STATE_FIELDS },
  [PACKET.State]: { name: 'signal', fields: CARLA_SIGNAL_FIELDS },
  [PACKET.AnimVehicle]: { name: CONTROL_STREAM, fields: CONTROL_FIELDS },
  [PACKET.AnimWalker]: { name: 'walker', fields: WALKER_FIELDS },
  [PACKET.VehicleLight]: { name: 'lights', fields: LIGHTS_FIELDS },
  [PACKET.WalkerBones]: { name: 'carla_bones', fields: BONES_FIELDS },
  [PACKET.AnimVehicleWheels]: { name: 'carla_wheels', fields: WHEELS_FIELDS },
  [PACKET.AnimBiker]: { name: 'carla_biker', fields: BIKER_FIELDS },
};

/** Event packets: the run-level stream each becomes. */
export const EVENT_STREAMS: Readonly<Record<number, { name: string; fields: FieldDecl[] }>> = {
  [PACKET.EventAdd]: { name: 'carla_event', fields: EVENT_RECORD_FIELDS },
  [PACKET.EventDel]: { name: 'carla_event', fields: EVENT_RECORD_FIELDS },
  [PACKET.EventParent]: { name: 'carla_event', fields: EVENT_RECORD_FIELDS },
  [PACKET.Collision]: { name: 'carla_collision', fields: COLLISION_RECORD_FIELDS },
  [PACKET.SceneLight]: { name: 'carla_scene_light', fields: SCENE_LIGHT_FIELDS },
  [PACKET.BoundingBox]: {
    name: 'carla_bbox',
    fields: BOX_FIELDS("the actor's frame, relative to its location"),
  },
  [PACKET.TriggerVolume]: { name: 'carla_trigger_volume', fields: BOX_FIELDS('the world') },
  [PACKET.PhysicsControl]: { name: 'carla_physics', fields: PHYSICS_FIELDS },
  [PACKET.TrafficLightTime]: { name: 'carla_light_time', fields: LIGHT_TIME_FIELDS },
  [PACKET.VehicleDoor]: { name: 'carla_door', fields: DOOR_FIELDS },
};

export const FRAME_STREAM = 'carla_frame';
export { CONTROL_STREAM, STATE_STREAM };
