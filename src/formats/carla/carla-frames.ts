import {
  ByteWriter,
  malformed,
  readFrameStart,
  type Bytes,
  type CarlaFile,
  type FrameStart,
  type RawPacket,
} from './carla-bytes.js';
import {
  EVENT_PACKETS,
  FRAME_VALUE_PACKETS,
  PACKET,
  PER_ACTOR_PACKETS,
  RECORD_SIZE,
  packetName,
} from './carla-layout.js';
import {
  RECORD_CODECS,
  SIX_FLOAT_PACKETS,
  WHEEL_PHYSICS_SIZES,
  decodePhysics,
  type FieldReader,
  type Fields,
} from './carla-records.js';
import { sixFloatsToSimrec } from './carla-units.js';

/*
 * A recording read frame by frame: each packet decoded into records (carla-records.ts), each record
 * checked to give its bytes back, and the frame's layout written down (`packets`, see FRAME_FIELDS), so
 * that the writer can put every byte back where it was. The per-actor records of fixed size, most of a
 * recording, are read as columns and judged from their bytes (Codec.givesBackBytes): Position and
 * Kinematics as numbers (SixFloatRecords), State, AnimVehicle, AnimWalker and VehicleLight as values
 * (ValueRecords). Every other record is decoded into an object, encoded again and compared.
 */

/**
 * A per-actor packet's records as columns: their actors, and which are kept as bytes (those that would
 * not come back byte for byte, Codec.givesBackBytes says from their bytes).
 */
export interface RecordColumns {
  packet: number;
  count: number;
  /** CARLA ids. */
  actors: Uint32Array;
  /** Per record, its bytes (base64) when kept as bytes, else undefined. */
  raw: (string | undefined)[];
  /** File offset of the first record (each is its packet's RECORD_SIZE long). */
  offset: number;
}

/**
 * A packet of records read as values (Codec.values: State, AnimVehicle, AnimWalker, VehicleLight): per
 * record, its fields in `reader.fields` order; null when skimmed (FrameReadHooks.skim).
 */
export interface ValueRecords extends RecordColumns {
  reader: FieldReader;
  /** Record i's fields from i x reader.fields.length; undefined for a record kept as bytes. */
  values: unknown[] | null;
}

/** A packet of Position or Kinematics records, as columns with their values. */
export interface SixFloatRecords extends RecordColumns {
  /**
   * Six values a record in simrec's units (x, y, z, roll, pitch, yaw; or vx, vy, vz, wx, wy, wz), and for
   * a Position six more: the velocities of the Kinematics joined to it, NaN where none was.
   */
  values: Float64Array;
}

/** Values a Position record takes in SixFloatRecords.values: its pose, then the velocities joined to it. */
export const POSE_WIDTH = 12;
/** Where in a Position's values the velocities joined to it begin. */
export const POSE_VELOCITIES = 6;

/** A record of a per-actor packet, or of an event packet. `raw` (base64) when it is kept as bytes. */
export interface FrameRecord {
  packet: number;
  actor?: number;
  fields: Fields;
  raw?: string;
  /** File offset of the record. */
  offset: number;
}

export interface DecodedFrame {
  /** Offset of its FrameStart. */
  offset: number;
  start: FrameStart;
  platformTime?: number;
  visualTime?: number;
  frameCounter?: number;
  /** The frame's packets, as FRAME_FIELDS `packets` says (made when the frame is whole). */
  tokens: string[];
  /** The packets as read: a token, or a per-actor packet's records (its token waits for Kinematics). */
  parts: (string | { packet: number; records: FrameRecord[] } | RecordColumns)[];
  /**
   * Per-actor records in file order, but Position and Kinematics; those kept as bytes (`raw` set) are
   * also in `raw`.
   */
  actorRecords: FrameRecord[];
  /** The frame's Position packets, each Kinematics joined to its actor's Position (else kept as bytes). */
  poses: SixFloatRecords[];
  /** Per-actor packets read as values (Codec.values), in file order. */
  valued: ValueRecords[];
  eventRecords: FrameRecord[];
  /** Per-actor records kept as bytes: [packet id, base64]. */
  raw: [number, string][];
  /** Packets kept as bytes: [packet id, base64]. */
  unknown: [number, string][];
  /** A FrameEnd closed it (the last frame of a recording cut at a packet boundary has none). */
  complete: boolean;
}

export interface FrameReadHooks {
  /** A packet simrec does not know: kept as bytes, said once per id. */
  unknownPacket?: (id: number, offset: number, size: number) => void;
  /**
   * Records read as values (`valued`) are read only for their actors and which are kept as bytes: what
   * a pass that gathers actors and streams needs.
   */
  skim?: boolean;
}

const scratch = new ByteWriter(1 << 12);

/** Whether the record's fields give back its bytes (the record at [from, to) of `b`). */
function givesBack(
  packet: number,
  b: Bytes,
  from: number,
  to: number,
  actor: number | undefined,
  fields: Fields,
): boolean {
  scratch.reset();
  try {
    RECORD_CODECS[packet]!.encode(scratch, actor, fields, packetName(packet));
  } catch {
    return false;
  }
  return scratch.equals(b.buf, from, to);
}

function allFinite(fields: Fields): boolean {
  for (const k in fields) {
    const v = fields[k];
    if (typeof v === 'number' && !Number.isFinite(v)) return false;
  }
  return true;
}

/** Numbers JSON and the store cannot hold (NaN, infinities) left out of a record kept as bytes. */
function finiteOnly(fields: Fields): Fields {
  const out: Fields = {};
  for (const [k, v] of Object.entries(fields)) if (typeof v !== 'number' || Number.isFinite(v)) out[k] = v;
  return out;
}

function decodeRecords(p: RawPacket, file: string, count: number, into: FrameRecord[]): void {
  const codec = RECORD_CODECS[p.id]!;
  for (let i = 0; i < count; i++) {
    const from = p.body.pos;
    const offset = p.body.offset;
    const { actor, fields } = codec.decode(p.body);
    const record: FrameRecord = { packet: p.id, fields, offset };
    if (actor !== undefined) record.actor = actor;
    // The store holds finite numbers only: a NaN or an infinity (a sensor's bounding box) keeps the bytes.
    if (!allFinite(fields) || !givesBack(p.id, p.body, from, p.body.pos, actor, fields)) {
      record.raw = p.body.buf.subarray(from, p.body.pos).toString('base64');
      record.fields = finiteOnly(fields);
    }
    into.push(record);
  }
  if (p.body.left !== 0)
    throw malformed(
      file,
      p.offset,
      `${packetName(p.id)} (id ${p.id}) has ${p.body.left} bytes left after its ${count} records: its size is not theirs`,
    );
}

const floats = new Float64Array(6);

/** Position or Kinematics records as columns; the packet's size was checked against their count. */
function sixFloatRecords(p: RawPacket, count: number): SixFloatRecords {
  const { buf, pos } = p.body;
  const isPosition = p.id === PACKET.Position;
  const width = isPosition ? POSE_WIDTH : 6;
  const size = RECORD_SIZE[p.id]!;
  const records: SixFloatRecords = {
    ...recordColumns(p, count),
    values: new Float64Array(count * width).fill(NaN),
  };
  for (let i = 0; i < count; i++) {
    if (records.raw[i] !== undefined) continue;
    const at = pos + size * i;
    for (let k = 0; k < 6; k++) floats[k] = buf.readFloatLE(at + 4 + 4 * k);
    sixFloatsToSimrec(isPosition ? 'position' : 'kinematics', floats, records.values, i * width);
  }
  return records;
}

/** Records of a packet whose codec judges them from their bytes, read for their actors only. */
function recordColumns(p: RawPacket, count: number): RecordColumns {
  const { buf, pos } = p.body;
  const size = RECORD_SIZE[p.id]!;
  const comesBack = RECORD_CODECS[p.id]!.givesBackBytes!;
  const records: RecordColumns = {
    packet: p.id,
    count,
    actors: new Uint32Array(count),
    raw: new Array<string | undefined>(count),
    offset: p.body.offset,
  };
  for (let i = 0; i < count; i++) {
    const at = pos + size * i;
    records.actors[i] = buf.readUInt32LE(at);
    if (!comesBack(buf, at)) records.raw[i] = buf.toString('base64', at, at + size);
  }
  p.body.pos += size * count;
  return records;
}

/** Records of a codec with a FieldReader: as columns, each one's values read unless skimmed. */
function valueRecords(p: RawPacket, count: number, reader: FieldReader, skim: boolean): ValueRecords {
  const { buf, pos } = p.body;
  const records: ValueRecords = { ...recordColumns(p, count), reader, values: null };
  if (skim) return records;
  const width = reader.fields.length;
  const values = (records.values = new Array<unknown>(count * width));
  for (let i = 0; i < count; i++)
    if (records.raw[i] === undefined) reader.read(buf, pos + reader.size * i, values, i * width);
  return records;
}

/** PhysicsControl's records, split by trying each wheel size CARLA wrote; null if none fits. */
function physicsRecords(p: RawPacket, count: number): FrameRecord[] | null {
  const start = p.body.pos;
  for (const wheelSize of WHEEL_PHYSICS_SIZES) {
    p.body.pos = start;
    const records: FrameRecord[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const from = p.body.pos;
        const offset = p.body.offset;
        const { actor, control } = decodePhysics(p.body, wheelSize);
        records.push({
          packet: p.id,
          actor,
          fields: { control },
          raw: p.body.buf.subarray(from, p.body.pos).toString('base64'),
          offset,
        });
      }
    } catch {
      continue;
    }
    if (p.body.left === 0) return records;
  }
  p.body.pos = start;
  return null;
}

function readPacket(p: RawPacket, file: string, frame: DecodedFrame, hooks: FrameReadHooks): void {
  const id = p.id;
  const keepWhole = (): void => {
    frame.parts.push(`${id}?`);
    frame.unknown.push([id, p.body.buf.subarray(p.body.pos, p.body.end).toString('base64')]);
  };
  if (id in FRAME_VALUE_PACKETS) {
    const size = FRAME_VALUE_PACKETS[id]!;
    const key =
      id === PACKET.PlatformTime ? 'platformTime' : id === PACKET.VisualTime ? 'visualTime' : 'frameCounter';
    if (p.body.left !== size)
      throw malformed(
        file,
        p.offset,
        `${packetName(id)} (id ${id}) has ${p.body.left} bytes, expected ${size}`,
      );
    // A second one in a frame has nowhere to go, nor a NaN or a counter past 2^53 in the store: kept as bytes.
    const storable =
      id === PACKET.FrameCounter
        ? p.body.buf.readBigUInt64LE(p.body.pos) <= BigInt(Number.MAX_SAFE_INTEGER)
        : Number.isFinite(p.body.buf.readDoubleLE(p.body.pos));
    if (frame[key] !== undefined || !storable) return keepWhole();
    frame[key] = id === PACKET.FrameCounter ? p.body.u64('FrameCounter') : p.body.f64(packetName(id));
    frame.parts.push(String(id));
    return;
  }
  if (!PER_ACTOR_PACKETS.has(id) && !EVENT_PACKETS.has(id)) {
    hooks.unknownPacket?.(id, p.offset, p.body.left);
    return keepWhole();
  }
  const count = p.body.u16('record count');
  const fixed = RECORD_SIZE[id];
  if (fixed !== undefined && p.body.left !== count * fixed)
    throw malformed(
      file,
      p.offset,
      `${packetName(id)} (id ${id}) declares ${p.body.left + 2} bytes, but ${count} records of ${fixed} bytes take ${2 + count * fixed}`,
    );
  if (id === PACKET.PhysicsControl) {
    const records = physicsRecords(p, count);
    if (!records) return keepWhole();
    frame.eventRecords.push(...records);
    frame.parts.push(`${id}#${count}`);
    return;
  }
  if (EVENT_PACKETS.has(id)) {
    decodeRecords(p, file, count, frame.eventRecords);
    frame.parts.push(`${id}#${count}`);
    return;
  }
  if (SIX_FLOAT_PACKETS.has(id)) {
    const records = sixFloatRecords(p, count);
    frame.parts.push(records);
    if (id === PACKET.Position) frame.poses.push(records);
    return;
  }
  const reader = RECORD_CODECS[id]!.values;
  if (reader) {
    const records = valueRecords(p, count, reader, hooks.skim === true);
    frame.parts.push(records);
    frame.valued.push(records);
    return;
  }
  const records: FrameRecord[] = [];
  decodeRecords(p, file, count, records);
  frame.parts.push({ packet: id, records });
}

/**
 * What finish keeps of the frame before, per packet: its actors and token. A recorder writes the same
 * actors frame after frame, so a frame's token and the check that no actor has two Positions are
 * mostly the last frame's again.
 */
type FrameMemory = Map<number, { actors: Uint32Array; token: string; unique: boolean }>;

const sameActors = (a: Uint32Array, b: Uint32Array): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/**
 * The frame made whole: Kinematics joins its actor's Position (one `state` sample carries both), a
 * Kinematics record that has no single Position to join is kept as bytes, and the tokens are written.
 */
function finish(frame: DecodedFrame, memory: FrameMemory): DecodedFrame {
  joinKinematics(frame, memory);
  for (const part of frame.parts) {
    if (typeof part === 'string') {
      frame.tokens.push(part);
      continue;
    }
    if ('actors' in part) {
      let anyRaw = false;
      for (let i = 0; i < part.count; i++) {
        const raw = part.raw[i];
        if (raw === undefined) continue;
        frame.raw.push([part.packet, raw]);
        anyRaw = true;
      }
      const before = memory.get(part.packet);
      if (!anyRaw && before && sameActors(before.actors, part.actors)) {
        frame.tokens.push(before.token);
        continue;
      }
      const ids: string[] = [];
      for (let i = 0; i < part.count; i++)
        ids.push(part.raw[i] === undefined ? String(part.actors[i]) : `!${part.actors[i]}`);
      const token = `${part.packet}:${ids.join(',')}`;
      frame.tokens.push(token);
      if (!anyRaw)
        memory.set(part.packet, { actors: part.actors, token, unique: uniqueActors(part, memory) });
      else memory.delete(part.packet);
      continue;
    }
    const ids: string[] = [];
    for (const r of part.records) {
      if (r.raw !== undefined) {
        frame.raw.push([part.packet, r.raw]);
        ids.push(`!${r.actor}`);
      } else ids.push(String(r.actor));
      frame.actorRecords.push(r);
    }
    frame.tokens.push(`${part.packet}:${ids.join(',')}`);
  }
  return frame;
}

/** Whether no actor is twice in the packet (known from the frame before when its actors are the same). */
function uniqueActors(part: RecordColumns, memory: FrameMemory): boolean {
  const before = memory.get(part.packet);
  if (before && sameActors(before.actors, part.actors)) return before.unique;
  return new Set(part.actors).size === part.count;
}

/**
 * Each Kinematics record joins its actor's Position of the frame, if the actor has exactly one kept
 * as values, and is kept as bytes otherwise. When the frame has one Position packet, with no actor twice,
 * and the Kinematics packet lists the same actors in the same order (as CARLA writes them), they are
 * joined place by place.
 */
function joinKinematics(frame: DecodedFrame, memory: FrameMemory): void {
  const kinematics = frame.parts.filter(
    (p): p is SixFloatRecords => typeof p !== 'string' && p.packet === PACKET.Kinematics,
  );
  if (kinematics.length === 0) return;
  const [pose] = frame.poses;
  if (
    kinematics.length === 1 &&
    frame.poses.length === 1 &&
    sameActors(pose!.actors, kinematics[0]!.actors) &&
    uniqueActors(pose!, memory)
  ) {
    const k = kinematics[0]!;
    for (let i = 0; i < k.count; i++) {
      if (k.raw[i] !== undefined) continue;
      if (pose!.raw[i] === undefined)
        pose!.values.set(k.values.subarray(6 * i, 6 * i + 6), POSE_WIDTH * i + POSE_VELOCITIES);
      else k.raw[i] = kinematicsBytes(k.actors[i]!, k.values, 6 * i);
    }
    return;
  }
  // Each actor's one Position kept as values: [its packet, its place]; null when it has two.
  const positions = new Map<number, [SixFloatRecords, number] | null>();
  for (const p of frame.poses)
    for (let i = 0; i < p.count; i++)
      if (p.raw[i] === undefined) {
        const actor = p.actors[i]!;
        positions.set(actor, positions.has(actor) ? null : [p, i]);
      }
  const joined = new Set<number>();
  for (const k of kinematics)
    for (let i = 0; i < k.count; i++) {
      if (k.raw[i] !== undefined) continue;
      const actor = k.actors[i]!;
      const position = positions.get(actor);
      if (position && !joined.has(actor)) {
        joined.add(actor);
        const [p, j] = position;
        p.values.set(k.values.subarray(6 * i, 6 * i + 6), POSE_WIDTH * j + POSE_VELOCITIES);
      } else k.raw[i] = kinematicsBytes(actor, k.values, 6 * i);
    }
}

/** A Kinematics record's bytes (base64), from its values in simrec's units. */
function kinematicsBytes(actor: number, values: Float64Array, at: number): string {
  const [vx, vy, vz, wx, wy, wz] = values.subarray(at, at + 6);
  scratch.reset();
  RECORD_CODECS[PACKET.Kinematics]!.encode(scratch, actor, { vx, vy, vz, wx, wy, wz }, 'Kinematics');
  return scratch.view().toString('base64');
}

/**
 * The recording's frames, in order. Refuses (naming file and offset) a packet outside a frame, a
 * FrameStart or FrameEnd of the wrong size, a packet whose records do not fill it, and a record cut by
 * its packet's end; a packet longer than the file is refused by CarlaFile.
 */
export function* readFrames(carla: CarlaFile, hooks: FrameReadHooks = {}): Generator<DecodedFrame> {
  const file = carla.file;
  const memory: FrameMemory = new Map();
  let frame: DecodedFrame | null = null;
  let lastEnded: { id: number; offset: number } | null = null;
  for (const p of carla.packets()) {
    if (p.id === PACKET.FrameStart) {
      // A frame left open (no FrameEnd) ends where the next begins; CARLA's readers take it so too.
      if (frame) yield finish(frame, memory);
      frame = {
        offset: p.offset,
        start: readFrameStart(p, file),
        tokens: [],
        parts: ['0'],
        actorRecords: [],
        poses: [],
        valued: [],
        eventRecords: [],
        raw: [],
        unknown: [],
        complete: false,
      };
      continue;
    }
    if (!frame)
      throw malformed(
        file,
        p.offset,
        `${packetName(p.id)} (id ${p.id}) is outside a frame (${lastEnded ? `after the FrameEnd of frame ${lastEnded.id}` : 'before the first FrameStart'}); every packet must be between a FrameStart and a FrameEnd`,
      );
    if (p.id === PACKET.FrameEnd) {
      if (p.body.left !== 0)
        throw malformed(file, p.offset, `FrameEnd has ${p.body.left} bytes, expected none`);
      frame.parts.push('1');
      frame.complete = true;
      lastEnded = { id: frame.start.id, offset: p.offset };
      yield finish(frame, memory);
      frame = null;
      continue;
    }
    readPacket(p, file, frame, hooks);
  }
  if (frame) yield finish(frame, memory);
}
