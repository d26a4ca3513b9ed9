/**
 * SUMO's TraCI binary protocol (https://sumo.dlr.de/docs/TraCI/Protocol.html): big-endian; a message
 * is an int32 total length and commands; a command is a ubyte length (or 0 and an int32 length when
 * longer than 255), a ubyte id and its content. Only what simrec's SUMO recorder uses is here.
 */

export const TRACI = {
  CMD_GETVERSION: 0x00,
  CMD_SIMSTEP: 0x02,
  CMD_SETORDER: 0x03,
  CMD_CLOSE: 0x7f,
  RTYPE_OK: 0x00,
  RTYPE_NOTIMPLEMENTED: 0x01,
  RTYPE_ERR: 0xff,
  TRACI_ID_LIST: 0x00,
} as const;

/** Get/subscribe command ids per domain, and their response ids (get + 0x10, subscribe + 0x10). */
export const DOMAINS = {
  vehicle: { get: 0xa4, subscribe: 0xd4, subscribeContext: 0x84 },
  person: { get: 0xae, subscribe: 0xde, subscribeContext: 0x8e },
  trafficLight: { get: 0xa2, subscribe: 0xd2, subscribeContext: 0x82 },
  simulation: { get: 0xab, subscribe: 0xdb, subscribeContext: 0x8b },
  vehicleType: { get: 0xa5, subscribe: 0xd5, subscribeContext: 0x85 },
  junction: { get: 0xa9, subscribe: 0xd9, subscribeContext: 0x89 },
} as const;
export type Domain = keyof typeof DOMAINS;

export const VAR = {
  SPEED: 0x40,
  MAXSPEED: 0x41,
  ACCEL: 0x46,
  DECEL: 0x47,
  EDGES: 0x54,
  POSITION3D: 0x39,
  ANGLE: 0x43,
  LENGTH: 0x44,
  WIDTH: 0x4d,
  TYPE: 0x4f,
  VEHICLECLASS: 0x49,
  LANE_ID: 0x51,
  LANEPOSITION: 0x56,
  SIGNALS: 0x5b,
  ROUTE_INDEX: 0x69,
  ACCELERATION: 0x72,
  TIME: 0x66,
  DEPARTED_VEHICLES_IDS: 0x74,
  ARRIVED_VEHICLES_IDS: 0x7a,
  TELEPORT_STARTING_VEHICLES_IDS: 0x76,
  DELTA_T: 0x7b,
  MIN_EXPECTED_VEHICLES: 0x7d,
  DEPARTED_PERSONS_IDS: 0x25,
  ARRIVED_PERSONS_IDS: 0x27,
  TL_RED_YELLOW_GREEN_STATE: 0x20,
  TL_CURRENT_PHASE: 0x28,
  TL_CURRENT_PROGRAM: 0x29,
  TL_NEXT_SWITCH: 0x2d,
} as const;

const TYPE = {
  POSITION_2D: 0x01,
  POSITION_3D: 0x03,
  BOUNDINGBOX: 0x05,
  POLYGON: 0x06,
  UBYTE: 0x07,
  BYTE: 0x08,
  INTEGER: 0x09,
  DOUBLE: 0x0b,
  STRING: 0x0c,
  STRINGLIST: 0x0e,
  COMPOUND: 0x0f,
  DOUBLELIST: 0x10,
  COLOR: 0x11,
} as const;

export type TraciValue = number | string | string[] | number[] | TraciValue[];

/** Writes TraCI values into a growing buffer. */
export class TraciWriter {
  private parts: Buffer[] = [];
  ubyte(v: number): this {
    this.parts.push(Buffer.from([v & 0xff]));
    return this;
  }
  int(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }
  double(v: number): this {
    const b = Buffer.alloc(8);
    b.writeDoubleBE(v);
    this.parts.push(b);
    return this;
  }
  string(v: string): this {
    const bytes = Buffer.from(v, 'utf8');
    return this.int(bytes.length).raw(bytes);
  }
  raw(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  toBuffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** One command: its length prefix (short or extended), id and content. */
export function encodeCommand(id: number, content: Buffer = Buffer.alloc(0)): Buffer {
  const short = 2 + content.length;
  if (short <= 255) return Buffer.concat([Buffer.from([short, id]), content]);
  const head = Buffer.alloc(6);
  head.writeUInt8(0, 0);
  head.writeInt32BE(6 + content.length, 1);
  head.writeUInt8(id, 5);
  return Buffer.concat([head, content]);
}

export function encodeMessage(commands: Buffer[]): Buffer {
  const body = Buffer.concat(commands);
  const head = Buffer.alloc(4);
  head.writeInt32BE(4 + body.length);
  return Buffer.concat([head, body]);
}

/** Reads TraCI values; every read names what it expected when the bytes run out. */
export class TraciReader {
  offset = 0;
  readonly buf: Buffer;
  constructor(buf: Buffer, offset = 0) {
    this.buf = buf;
    this.offset = offset;
  }
  get remaining(): number {
    return this.buf.length - this.offset;
  }
  private need(n: number, what: string): void {
    if (this.offset + n > this.buf.length)
      throw new Error(
        `TraCI: message ends at byte ${this.buf.length} while reading ${what} at byte ${this.offset}`,
      );
  }
  ubyte(): number {
    this.need(1, 'a ubyte');
    return this.buf.readUInt8(this.offset++);
  }
  byte(): number {
    this.need(1, 'a byte');
    return this.buf.readInt8(this.offset++);
  }
  int(): number {
    this.need(4, 'an int');
    const v = this.buf.readInt32BE(this.offset);
    this.offset += 4;
    return v;
  }
  double(): number {
    this.need(8, 'a double');
    const v = this.buf.readDoubleBE(this.offset);
    this.offset += 8;
    return v;
  }
  string(): string {
    const n = this.int();
    this.need(n, 'a string');
    const v = this.buf.toString('utf8', this.offset, this.offset + n);
    this.offset += n;
    return v;
  }
  stringList(): string[] {
    const n = this.int();
    return Array.from({ length: n }, () => this.string());
  }
  /** A value preceded by its type byte. */
  typed(): TraciValue {
    const type = this.ubyte();
    switch (type) {
      case TYPE.POSITION_2D:
        return [this.double(), this.double()];
      case TYPE.POSITION_3D:
        return [this.double(), this.double(), this.double()];
      case TYPE.BOUNDINGBOX:
        return [this.double(), this.double(), this.double(), this.double()];
      case TYPE.POLYGON: {
        const n = this.ubyte();
        return Array.from({ length: n * 2 }, () => this.double());
      }
      case TYPE.UBYTE:
        return this.ubyte();
      case TYPE.BYTE:
        return this.byte();
      case TYPE.INTEGER:
        return this.int();
      case TYPE.DOUBLE:
        return this.double();
      case TYPE.STRING:
        return this.string();
      case TYPE.STRINGLIST:
        return this.stringList();
      case TYPE.COMPOUND: {
        const n = this.int();
        return Array.from({ length: n }, () => this.typed());
      }
      case TYPE.DOUBLELIST: {
        const n = this.int();
        return Array.from({ length: n }, () => this.double());
      }
      case TYPE.COLOR:
        return [this.ubyte(), this.ubyte(), this.ubyte(), this.ubyte()];
      default:
        throw new Error(`TraCI: unknown value type 0x${type.toString(16)} at byte ${this.offset - 1}`);
    }
  }
}

export interface TraciCommand {
  id: number;
  /** A reader over the command's content only. */
  content: TraciReader;
}

/** Splits a message body (after its int32 length) into commands. */
export function* commandsOf(reader: TraciReader, end: number): Generator<TraciCommand> {
  for (let command = nextCommand(reader, end); command; command = nextCommand(reader, end)) yield command;
}

/** The command at the reader's place (the reader moves past it), or undefined at `end`. */
export function nextCommand(reader: TraciReader, end = reader.buf.length): TraciCommand | undefined {
  if (reader.offset >= end) return undefined;
  const start = reader.offset;
  let length = reader.ubyte();
  if (length === 0) length = reader.int();
  const id = reader.ubyte();
  const contentEnd = start + length;
  if (contentEnd > end || length < 2)
    throw new Error(`TraCI: command 0x${id.toString(16)} at byte ${start} claims ${length} bytes`);
  const content = new TraciReader(reader.buf.subarray(0, contentEnd), reader.offset);
  reader.offset = contentEnd;
  return { id, content };
}
