/**
 * CARLA's recorder file, as its code writes it (Unreal/CarlaUE4/Plugins/Carla/Source/Carla/Recorder/,
 * CarlaRecorder*.cpp; Docs/ref_recorder_binary_file_format.md is older than the code and lists ten
 * packets). Little-endian, packed structs (`#pragma pack(push, 1)`):
 *
 * - the header: `u16 version` (always 1), `FString magic` ("CARLA_RECORDER"), `i64 date` (std::time_t,
 *   seconds since the Unix epoch, not 1900 as the document says), `FString map`. An FString is `u16
 *   length` then that many bytes of UTF-8, no terminator;
 * - then packets, each `u8 id`, `u32 size`, `size` bytes; CARLA's readers skip an id they do not know
 *   by its size. Frames are bracketed by FrameStart and FrameEnd; most packets are `u16 count` then
 *   count records.
 */

/** CarlaRecorderPacketId, in the order of the enum (its values are the ids). */
export const PACKET = {
  FrameStart: 0,
  FrameEnd: 1,
  EventAdd: 2,
  EventDel: 3,
  EventParent: 4,
  Collision: 5,
  Position: 6,
  State: 7,
  AnimVehicle: 8,
  AnimWalker: 9,
  VehicleLight: 10,
  SceneLight: 11,
  Kinematics: 12,
  BoundingBox: 13,
  PlatformTime: 14,
  PhysicsControl: 15,
  TrafficLightTime: 16,
  TriggerVolume: 17,
  FrameCounter: 18,
  WalkerBones: 19,
  VisualTime: 20,
  VehicleDoor: 21,
  AnimVehicleWheels: 22,
  AnimBiker: 23,
} as const;
export type PacketId = (typeof PACKET)[keyof typeof PACKET];

export const PACKET_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(PACKET).map(([name, id]) => [id, name]),
);

export const packetName = (id: number): string => PACKET_NAMES[id] ?? `unknown packet ${id}`;

/**
 * Packets whose records each belong to one actor and come from the recorder's walk over its actor
 * registry (ACarlaRecorder::Ticking), one record per actor and frame: their records are the actors'
 * per-frame streams, and the frame keeps which actors, in which order, each packet held.
 */
export const PER_ACTOR_PACKETS: ReadonlySet<number> = new Set([
  PACKET.Position,
  PACKET.State,
  PACKET.AnimVehicle,
  PACKET.AnimWalker,
  PACKET.VehicleLight,
  PACKET.Kinematics,
  PACKET.WalkerBones,
  PACKET.AnimVehicleWheels,
  PACKET.AnimBiker,
]);

/**
 * Packets whose records are events of the frame (creations, collisions, light changes, the boxes and
 * physics written when an actor is created, doors opened): kept in order in run-level streams.
 */
export const EVENT_PACKETS: ReadonlySet<number> = new Set([
  PACKET.EventAdd,
  PACKET.EventDel,
  PACKET.EventParent,
  PACKET.Collision,
  PACKET.SceneLight,
  PACKET.BoundingBox,
  PACKET.PhysicsControl,
  PACKET.TrafficLightTime,
  PACKET.TriggerVolume,
  PACKET.VehicleDoor,
]);

/** Packets that hold one value of the frame and no count: their size is the value's. */
export const FRAME_VALUE_PACKETS: Readonly<Record<number, number>> = {
  [PACKET.PlatformTime]: 8,
  [PACKET.FrameCounter]: 8,
  [PACKET.VisualTime]: 8,
};

/** Bytes of one record of the packets whose records are of fixed size (sizeof the packed struct). */
export const RECORD_SIZE: Readonly<Record<number, number>> = {
  [PACKET.EventDel]: 4,
  [PACKET.EventParent]: 8,
  [PACKET.Collision]: 14,
  [PACKET.Position]: 28,
  [PACKET.State]: 10,
  [PACKET.AnimVehicle]: 21,
  [PACKET.AnimWalker]: 8,
  [PACKET.VehicleLight]: 8,
  [PACKET.SceneLight]: 26,
  [PACKET.Kinematics]: 28,
  [PACKET.BoundingBox]: 28,
  [PACKET.TrafficLightTime]: 16,
  [PACKET.TriggerVolume]: 28,
  [PACKET.VehicleDoor]: 6,
  [PACKET.AnimBiker]: 12,
};

/** FrameStart's record: `u64 id`, `f64 durationThis` (patched when the next frame starts), `f64 elapsed`. */
export const FRAME_START_SIZE = 24;

/**
 * The layouts CARLA releases wrote, read from the recorder's code at each release tag (the history of
 * Recorder/CarlaRecorder.cpp, `ACarlaRecorder::Write`). Every record layout that a release wrote has
 * stayed the same since it was added; releases only added packets. The header is version 1 in all.
 */
export const CARLA_LAYOUTS = [
  {
    releases: '0.9.4 - 0.9.5',
    frame: 'FrameStart EventAdd EventDel EventParent Collision Position State FrameEnd',
  },
  {
    releases: '0.9.6 - 0.9.9',
    frame: '... State AnimVehicle AnimWalker FrameEnd',
  },
  {
    releases: '0.9.10 - 0.9.13',
    frame:
      '... AnimWalker VehicleLight SceneLight(when any changed); with additional_data: Kinematics(when any) BoundingBox TriggerVolume(when any) PlatformTime PhysicsControl(when any) TrafficLightTime(when any) FrameEnd',
  },
  {
    releases: '0.9.14',
    frame:
      'FrameStart VisualTime EventAdd ... SceneLight; with additional_data: ... TrafficLightTime(when any) WalkerBones FrameEnd',
  },
  {
    releases: '0.9.15 - 0.9.16',
    frame:
      '... SceneLight AnimVehicleWheels AnimBiker; with additional_data as 0.9.14; VehicleDoor (0.9.16, doors opened or closed)',
  },
] as const;

/** FCarlaActor::ActorType (FActorView::ActorType before 0.9.12), the `type` byte of EventAdd. */
export const ACTOR_TYPE = {
  Other: 0,
  Vehicle: 1,
  Walker: 2,
  TrafficLight: 3,
  /** 0.9.10 on; 4 was INVALID before. */
  TrafficSign: 4,
  /** 0.9.12 on; sensors were Other before. */
  Sensor: 5,
} as const;

/**
 * The letter CarlaRecorderQuery::QueryCollisions prints for an actor's type: it indexes
 * `{'o', 'v', 'w', 't', 'h', 'a'}` with the type byte, so a traffic sign (4) prints `h` and a sensor
 * (5) `a`, and a type past the table reads beyond it (simrec prints `?`). An id of 0xFFFFFFFF (not a
 * CARLA actor: a wall, the ground) is `o`.
 */
export const QUERY_CATEGORY = ['o', 'v', 'w', 't', 'h', 'a'] as const;

/** ETrafficLightState: the `state` byte of a State record. */
export const LIGHT_STATES = ['Red', 'Yellow', 'Green', 'Off'] as const;

/**
 * The light's state as one character of simrec's signal strings (SUMO's letters): red `r`, yellow
 * `y`, green `G`, off `O`. A byte CARLA never writes (ETrafficLightState has four values) is `O`.
 */
export const LIGHT_LETTERS = ['r', 'y', 'G', 'O'] as const;

/** carla::rpc::VehicleLightState::LightState, bit by bit, in the order CarlaRecorderQuery prints them. */
export const VEHICLE_LIGHTS: readonly (readonly [string, number])[] = [
  ['Position', 0x1],
  ['LowBeam', 0x2],
  ['HighBeam', 0x4],
  ['Brake', 0x8],
  ['RightBlinker', 0x10],
  ['LeftBlinker', 0x20],
  ['Reverse', 0x40],
  ['Interior', 0x100],
  ['Fog', 0x80],
  ['Special1', 0x200],
  ['Special2', 0x400],
];

/** EActorAttributeType, the type byte of an actor's attribute. */
export const ATTRIBUTE_TYPE = { Bool: 0, Int: 1, Float: 2, String: 3, RGBColor: 4 } as const;

/** The CARLA id a collision gives an object that is not a CARLA actor (a wall, the ground). */
export const NOT_AN_ACTOR = 0xffffffff;

export const MAGIC = 'CARLA_RECORDER';
