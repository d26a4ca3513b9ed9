import { invalid } from '../../model/errors.js';
import type { JsonValue } from '../../model/json.js';
import { ByteWriter, Bytes, readJsonF32, writeJsonF32 } from './carla-bytes.js';
import { LIGHT_LETTERS, PACKET, RECORD_SIZE, VEHICLE_LIGHTS } from './carla-layout.js';
import {
  angularToCarla,
  angularToSimrec,
  extentToCarla,
  extentToSimrec,
  locationToCarla,
  locationToSimrec,
  rotationToCarla,
  rotationToSimrec,
  speedToCarla,
  speedToSimrec,
  velocityToCarla,
  velocityToSimrec,
} from './carla-units.js';

/**
 * One record of each packet, both ways: its bytes to the fields simrec keeps (in simrec's units and
 * frame, see carla-units.ts) and those fields back to the same bytes. The importer decodes a record,
 * encodes what it decoded and compares: a record that would not come back byte for byte (a NaN, an
 * infinity, a bool byte other than 0 or 1, text that is not UTF-8) is kept as its bytes instead.
 */

export type Fields = Record<string, unknown>;

export interface Codec {
  /** Reads one record; `actor` is the CARLA id it belongs to, when it has one. */
  decode(b: Bytes): { actor?: number; fields: Fields };
  encode(out: ByteWriter, actor: number | undefined, fields: Fields, where: string): void;
  /**
   * For a record of fixed size whose fields are each a float (one that comes back as itself when
   * finite: carla-units.ts only scales and mirrors), a bool or an integer, and whose first is its actor
   * id: whether the record at `at` gives its bytes back, judged from the bytes alone (floats finite,
   * bools 0 or 1). The importer uses it instead of encoding the record again, and its first pass, which
   * only gathers actors, reads no more of such a record (test/carla.test.ts compares the two on random
   * bytes).
   */
  givesBackBytes?: (buf: Buffer, at: number) => boolean;
  /**
   * For a record of fixed size read as values (the importer's columns): its fields after the actor id,
   * and how to read them; such a codec's `decode` is made from it (fieldsCodec).
   */
  values?: FieldReader;
}

/** A fixed-size record's fields, read straight from its bytes into `out` from `o`, in `fields` order. */
export interface FieldReader {
  /** The record's size in bytes (its packet's RECORD_SIZE), its actor id (u32) first. */
  size: number;
  fields: readonly string[];
  read(buf: Buffer, at: number, out: unknown[], o: number): void;
}

/** A codec whose decode reads a record's values with `values` (one reading for objects and columns). */
function fieldsCodec(values: FieldReader, rest: Pick<Codec, 'encode' | 'givesBackBytes'>): Codec {
  const out: unknown[] = [];
  return {
    ...rest,
    values,
    decode(b) {
      b.need(values.size, 'record');
      const actor = b.buf.readUInt32LE(b.pos);
      values.read(b.buf, b.pos, out, 0);
      b.pos += values.size;
      const fields: Fields = {};
      values.fields.forEach((name, i) => (fields[name] = out[i]));
      return { actor, fields };
    },
  };
}

/** Whether the float32 at `at` is finite (its eight exponent bits not all set). */
const finiteAt = (buf: Buffer, at: number): boolean => (buf.readUInt32LE(at) & 0x7f800000) !== 0x7f800000;
/** Whether the C++ bool at `at` is one CARLA writes (0 or 1; another byte reads true, written back 1). */
const boolAt = (buf: Buffer, at: number): boolean => buf[at]! <= 1;

const num = (fields: Fields, name: string, where: string, fallback?: number): number => {
  const v = fields[name];
  if (typeof v === 'number') return v;
  if ((v === undefined || v === null) && fallback !== undefined) return fallback;
  throw invalid(
    `${where}: field ${name} is ${v === undefined ? 'absent' : JSON.stringify(v)}, expected a number`,
  );
};
const bool = (fields: Fields, name: string, fallback = false): boolean =>
  typeof fields[name] === 'boolean' ? fields[name] : fallback;
const actorOf = (actor: number | undefined, where: string): number => {
  if (actor === undefined) throw invalid(`${where}: the record has no actor`);
  return actor;
};
const str = (fields: Fields, name: string, where: string): string => {
  const v = fields[name];
  if (typeof v !== 'string')
    throw invalid(`${where}: field ${name} is ${JSON.stringify(v)}, expected a string`);
  return v;
};

/** The names of the lights a VehicleLight state has on, as CarlaRecorderQuery prints them. */
export function vehicleLightNames(bits: number): string {
  const on = VEHICLE_LIGHTS.filter(([, bit]) => (bits & bit) !== 0).map(([name]) => name);
  return on.length ? on.join(' ') : 'None';
}

/** Packets whose records are an actor id and six float32s: the importer reads them as columns. */
export const SIX_FLOAT_PACKETS: ReadonlySet<number> = new Set([PACKET.Position, PACKET.Kinematics]);

const sixFloatsFinite = (buf: Buffer, at: number): boolean => {
  for (let k = at + 4; k < at + 28; k += 4) if (!finiteAt(buf, k)) return false;
  return true;
};

const position: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    const [x, y, z] = locationToSimrec(b.f32('location.x'), b.f32('location.y'), b.f32('location.z'));
    const [roll, pitch, yaw] = rotationToSimrec(
      b.f32('rotation.x'),
      b.f32('rotation.y'),
      b.f32('rotation.z'),
    );
    return { actor, fields: { x, y, z, roll, pitch, yaw } };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    const loc = locationToCarla(num(f, 'x', where), num(f, 'y', where), num(f, 'z', where, 0));
    const rot = rotationToCarla(num(f, 'roll', where, 0), num(f, 'pitch', where, 0), num(f, 'yaw', where));
    out.f32x3(loc);
    out.f32x3(rot);
  },
  givesBackBytes: sixFloatsFinite,
};

const kinematics: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    const [vx, vy, vz] = velocityToSimrec(b.f32('velocity.x'), b.f32('velocity.y'), b.f32('velocity.z'));
    const [wx, wy, wz] = angularToSimrec(
      b.f32('angular_velocity.x'),
      b.f32('angular_velocity.y'),
      b.f32('angular_velocity.z'),
    );
    return { actor, fields: { vx, vy, vz, wx, wy, wz } };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    const v = velocityToCarla(num(f, 'vx', where, 0), num(f, 'vy', where, 0), num(f, 'vz', where, 0));
    const w = angularToCarla(num(f, 'wx', where, 0), num(f, 'wy', where, 0), num(f, 'wz', where, 0));
    out.f32x3(v);
    out.f32x3(w);
  },
  givesBackBytes: sixFloatsFinite,
};

const trafficLight = fieldsCodec(
  {
    size: RECORD_SIZE[PACKET.State]!,
    fields: ['state', 'carlaState', 'frozen', 'elapsed'],
    read(buf, at, out, o) {
      const carlaState = buf[at + 9]!;
      out[o] = LIGHT_LETTERS[carlaState] ?? 'O';
      out[o + 1] = carlaState;
      out[o + 2] = buf[at + 4] !== 0; // IsFrozen
      out[o + 3] = buf.readFloatLE(at + 5); // ElapsedTime
    },
  },
  {
    encode(out, actor, f, where) {
      out.u32(actorOf(actor, where));
      out.bool(bool(f, 'frozen'));
      out.f32(num(f, 'elapsed', where, 0));
      out.u8(num(f, 'carlaState', where));
    },
    givesBackBytes: (buf, at) => boolAt(buf, at + 4) && finiteAt(buf, at + 5),
  },
);

const animVehicle = fieldsCodec(
  {
    size: RECORD_SIZE[PACKET.AnimVehicle]!,
    fields: ['throttle', 'brake', 'steer', 'gear', 'handbrake'],
    read(buf, at, out, o) {
      out[o] = buf.readFloatLE(at + 8); // Throttle
      out[o + 1] = buf.readFloatLE(at + 12); // Brake
      out[o + 2] = buf.readFloatLE(at + 4); // Steering
      out[o + 3] = buf.readInt32LE(at + 17); // Gear
      out[o + 4] = buf[at + 16] !== 0; // bHandbrake
    },
  },
  {
    encode(out, actor, f, where) {
      out.u32(actorOf(actor, where));
      out.f32(num(f, 'steer', where, 0));
      out.f32(num(f, 'throttle', where, 0));
      out.f32(num(f, 'brake', where, 0));
      out.bool(bool(f, 'handbrake'));
      out.i32(num(f, 'gear', where, 0));
    },
    givesBackBytes: (buf, at) =>
      finiteAt(buf, at + 4) && finiteAt(buf, at + 8) && finiteAt(buf, at + 12) && boolAt(buf, at + 16),
  },
);

const animWalker = fieldsCodec(
  {
    size: RECORD_SIZE[PACKET.AnimWalker]!,
    fields: ['speed'],
    read(buf, at, out, o) {
      out[o] = speedToSimrec(buf.readFloatLE(at + 4));
    },
  },
  {
    encode(out, actor, f, where) {
      out.u32(actorOf(actor, where));
      out.f32(speedToCarla(num(f, 'speed', where, 0)));
    },
    givesBackBytes: (buf, at) => finiteAt(buf, at + 4),
  },
);

/** vehicleLightNames of each state met: a recording's lights take few states, in millions of records. */
const lightNames = new Map<number, string>();

const vehicleLight = fieldsCodec(
  {
    size: RECORD_SIZE[PACKET.VehicleLight]!,
    fields: ['state', 'on'],
    read(buf, at, out, o) {
      const state = buf.readUInt32LE(at + 4);
      let on = lightNames.get(state);
      if (on === undefined) {
        on = vehicleLightNames(state);
        if (lightNames.size < 4096) lightNames.set(state, on);
      }
      out[o] = state;
      out[o + 1] = on;
    },
  },
  {
    encode(out, actor, f, where) {
      out.u32(actorOf(actor, where));
      out.u32(num(f, 'state', where, 0));
    },
    givesBackBytes: () => true,
  },
);

const sceneLight: Codec = {
  decode(b) {
    const light = b.i32('LightId');
    const intensity = b.f32('Intensity');
    const [r, g, bl, a] = [b.f32('Color.R'), b.f32('Color.G'), b.f32('Color.B'), b.f32('Color.A')];
    const on = b.bool('bOn');
    const type = b.u8('Type');
    return { fields: { light, intensity, r, g, b: bl, a, on, type } };
  },
  encode(out, _actor, f, where) {
    out.i32(num(f, 'light', where));
    for (const k of ['intensity', 'r', 'g', 'b', 'a']) out.f32(num(f, k, where, 0));
    out.bool(bool(f, 'on'));
    out.u8(num(f, 'type', where, 0));
  },
};

/** BoundingBox (in the actor's frame) and TriggerVolume (in the world's). Half sizes, as CARLA's extent. */
const box: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    const [x, y, z] = locationToSimrec(b.f32('Origin.x'), b.f32('Origin.y'), b.f32('Origin.z'));
    const extentX = extentToSimrec(b.f32('Extension.x'));
    const extentY = extentToSimrec(b.f32('Extension.y'));
    const extentZ = extentToSimrec(b.f32('Extension.z'));
    return { actor, fields: { x, y, z, extentX, extentY, extentZ } };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    for (const v of locationToCarla(num(f, 'x', where), num(f, 'y', where), num(f, 'z', where))) out.f32(v);
    for (const k of ['extentX', 'extentY', 'extentZ']) out.f32(extentToCarla(num(f, k, where)));
  },
};

const lightTime: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    return {
      actor,
      fields: { green: b.f32('GreenTime'), yellow: b.f32('YellowTime'), red: b.f32('RedTime') },
    };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    for (const k of ['green', 'yellow', 'red']) out.f32(num(f, k, where));
  },
};

const door: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    return { actor, fields: { door: b.u8('Doors'), open: b.bool('bIsOpen') } };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    out.u8(num(f, 'door', where));
    out.bool(bool(f, 'open'));
  },
};

const biker: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    return {
      actor,
      fields: {
        forwardSpeed: speedToSimrec(b.f32('ForwardSpeed')),
        engineRotation: b.f32('EngineRotation'),
      },
    };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    out.f32(speedToCarla(num(f, 'forwardSpeed', where, 0)));
    out.f32(num(f, 'engineRotation', where, 0));
  },
};

/** AnimVehicleWheels: per wheel [location (EVehicleWheelLocation), steering angle, tire rotation], degrees as recorded. */
const wheels: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    const n = b.u32('wheel count');
    const list: JsonValue[] = [];
    for (let i = 0; i < n; i++)
      list.push([
        b.u8(`wheel ${i} location`),
        readJsonF32(b, `wheel ${i} steering`),
        readJsonF32(b, `wheel ${i} rotation`),
      ]);
    return { actor, fields: { wheels: list } };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    const list = Array.isArray(f.wheels) ? (f.wheels as unknown[][]) : [];
    out.u32(list.length);
    for (const w of list) {
      out.u8(Number(w[0]));
      writeJsonF32(out, w[1], `${where} wheels`);
      writeJsonF32(out, w[2], `${where} wheels`);
    }
  },
};

/** WalkerBones: per bone [name, location x, y, z (cm), rotation x, y, z (deg)], relative, as recorded. */
const bones: Codec = {
  decode(b) {
    const actor = b.u32('actor id');
    const n = b.u16('bone count');
    const list: JsonValue[] = [];
    for (let i = 0; i < n; i++) {
      const bone: JsonValue[] = [b.fstring(`bone ${i} name`)];
      for (let k = 0; k < 6; k++) bone.push(readJsonF32(b, `bone ${i} transform`));
      list.push(bone);
    }
    return { actor, fields: { bones: list } };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    const list = Array.isArray(f.bones) ? (f.bones as unknown[][]) : [];
    out.u16(list.length);
    for (const bone of list) {
      out.fstring(String(bone[0]));
      for (let k = 1; k <= 6; k++) writeJsonF32(out, bone[k], `${where} bones`);
    }
  },
};

const collision: Codec = {
  decode(b) {
    return {
      fields: {
        collision: b.u32('Id'),
        actor1: b.u32('DatabaseId1'),
        actor2: b.u32('DatabaseId2'),
        hero1: b.bool('IsActor1Hero'),
        hero2: b.bool('IsActor2Hero'),
      },
    };
  },
  encode(out, _actor, f, where) {
    out.u32(num(f, 'collision', where));
    out.u32(num(f, 'actor1', where));
    out.u32(num(f, 'actor2', where));
    out.bool(bool(f, 'hero1'));
    out.bool(bool(f, 'hero2'));
  },
};

/** EventAdd: the actor, its type, where it was created, and its description (blueprint and attributes). */
const eventAdd: Codec = {
  decode(b) {
    const actor = b.u32('DatabaseId');
    const type = b.u8('Type');
    const [x, y, z] = locationToSimrec(b.f32('Location.x'), b.f32('Location.y'), b.f32('Location.z'));
    const [roll, pitch, yaw] = rotationToSimrec(
      b.f32('Rotation.x'),
      b.f32('Rotation.y'),
      b.f32('Rotation.z'),
    );
    const uid = b.u32('Description.UId');
    const id = b.fstring('Description.Id');
    const n = b.u16('attribute count');
    const attributes: JsonValue[] = [];
    for (let i = 0; i < n; i++)
      attributes.push([
        b.u8(`attribute ${i} type`),
        b.fstring(`attribute ${i} id`),
        b.fstring(`attribute ${i} value`),
      ]);
    return {
      actor,
      fields: { kind: 'add', type, x, y, z, roll, pitch, yaw, description: { uid, id, attributes } },
    };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    out.u8(num(f, 'type', where));
    for (const v of locationToCarla(num(f, 'x', where), num(f, 'y', where), num(f, 'z', where, 0)))
      out.f32(v);
    const rot = rotationToCarla(num(f, 'roll', where, 0), num(f, 'pitch', where, 0), num(f, 'yaw', where, 0));
    for (const v of rot) out.f32(v);
    const d = (f.description ?? {}) as { uid?: unknown; id?: unknown; attributes?: unknown };
    out.u32(typeof d.uid === 'number' ? d.uid : 0);
    out.fstring(typeof d.id === 'string' ? d.id : '');
    const attributes = Array.isArray(d.attributes) ? (d.attributes as unknown[][]) : [];
    out.u16(attributes.length);
    for (const a of attributes) {
      out.u8(Number(a[0]));
      out.fstring(String(a[1]));
      out.fstring(String(a[2]));
    }
  },
};

const eventDel: Codec = {
  decode(b) {
    return { actor: b.u32('DatabaseId'), fields: { kind: 'del' } };
  },
  encode(out, actor, _f, where) {
    out.u32(actorOf(actor, where));
  },
};

const eventParent: Codec = {
  decode(b) {
    const actor = b.u32('DatabaseId');
    return { actor, fields: { kind: 'parent', parent: String(b.u32('DatabaseIdParent')) } };
  },
  encode(out, actor, f, where) {
    out.u32(actorOf(actor, where));
    out.u32(Number(str(f, 'parent', where)));
  },
};

/**
 * PhysicsControl: carla::rpc::VehiclePhysicsControl written field by field. Its last vector holds
 * WheelPhysicsControl, 36 bytes up to 0.9.11 and 48 from 0.9.12 (lat_stiff_max_load, lat_stiff_value,
 * long_stiff_value added); a record's length depends on it, so the reader tries both. The record is
 * kept as its bytes (`raw`) with what it says decoded beside it (`control`, CARLA's units).
 */
export const WHEEL_PHYSICS_SIZES = [48, 36] as const;

export function decodePhysics(b: Bytes, wheelSize: number): { actor: number; control: JsonValue } {
  const actor = b.u32('DatabaseId');
  const f = (name: string): number => b.f32(name);
  const control: Record<string, JsonValue> = {
    max_rpm: f('max_rpm'),
    moi: f('moi'),
    damping_rate_full_throttle: f('damping_rate_full_throttle'),
    damping_rate_zero_throttle_clutch_engaged: f('damping_rate_zero_throttle_clutch_engaged'),
    damping_rate_zero_throttle_clutch_disengaged: f('damping_rate_zero_throttle_clutch_disengaged'),
    use_gear_autobox: b.bool('use_gear_autobox'),
    clutch_strength: f('clutch_strength'),
    final_ratio: f('final_ratio'),
    mass: f('mass'),
    drag_coefficient: f('drag_coefficient'),
    center_of_mass: [f('center_of_mass.x'), f('center_of_mass.y'), f('center_of_mass.z')],
  };
  const vectors = (name: string, floats: number): number[][] => {
    const n = b.u32(`${name} count`);
    b.need(n * floats * 4, name);
    return Array.from({ length: n }, () => Array.from({ length: floats }, () => f(name)));
  };
  control.torque_curve = vectors('torque_curve', 2);
  control.forward_gears = vectors('forward_gears', 3);
  control.steering_curve = vectors('steering_curve', 2);
  control.wheels = vectors('wheels', wheelSize / 4);
  // A NaN cannot be JSON: the bytes are kept anyway, the decoded copy says null there.
  return { actor, control: JSON.parse(JSON.stringify(control)) as JsonValue };
}

export const RECORD_CODECS: Readonly<Record<number, Codec>> = {
  [PACKET.EventAdd]: eventAdd,
  [PACKET.EventDel]: eventDel,
  [PACKET.EventParent]: eventParent,
  [PACKET.Collision]: collision,
  [PACKET.Position]: position,
  [PACKET.State]: trafficLight,
  [PACKET.AnimVehicle]: animVehicle,
  [PACKET.AnimWalker]: animWalker,
  [PACKET.VehicleLight]: vehicleLight,
  [PACKET.SceneLight]: sceneLight,
  [PACKET.Kinematics]: kinematics,
  [PACKET.BoundingBox]: box,
  [PACKET.TrafficLightTime]: lightTime,
  [PACKET.TriggerVolume]: box,
  [PACKET.WalkerBones]: bones,
  [PACKET.VehicleDoor]: door,
  [PACKET.AnimVehicleWheels]: wheels,
  [PACKET.AnimBiker]: biker,
};
