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
  SPEED_FACTOR: 0x5e,
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

export const TYPE = {
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

/**
 * The short ASCII strings of one connection's answers, kept by their bytes, so that the same bytes read
 * again give the same string instead of a new one. SUMO sends every vehicle's id and lane id at every
 * step; made anew, they lived until the recorder's next commit, and on LimSim's bigInter 30,000 of them
 * were alive at once, copied by every young collection of the recording thread. Emptied when it holds
 * `capacity` strings (vehicles come and go over a long run).
 */
export class StringTable {
  private readonly strings = new Map<number, string>();
  private readonly capacity: number;

  constructor(capacity = 65_536) {
    this.capacity = capacity;
  }

  /** The UTF-8 string in bytes [start, end) of `buf`. */
  read(buf: Buffer, start: number, end: number): string {
    const n = end - start;
    if (n > 64) return buf.toString('utf8', start, end);
    // FNV-1a over the bytes, kept to a small integer (a Map keyed by small integers hashes fastest).
    let hash = 0x811c9dc5 ^ n;
    for (let i = start; i < end; i++) {
      const byte = buf[i]!;
      if (byte >= 0x80) return buf.toString('utf8', start, end); // kept only when one byte is one char
      hash = Math.imul(hash ^ byte, 0x01000193);
    }
    hash &= 0x3fffffff;
    const known = this.strings.get(hash);
    if (known !== undefined && known.length === n) {
      let i = 0;
      while (i < n && known.charCodeAt(i) === buf[start + i]) i++;
      if (i === n) return known;
    }
    const value = buf.toString('latin1', start, end);
    if (this.strings.size >= this.capacity) this.strings.clear();
    this.strings.set(hash, value);
    return value;
  }
}

/** Reads TraCI values; every read names what it expected when the bytes run out. */
export class TraciReader {
  offset = 0;
  readonly buf: Buffer;
  /** Where strings are kept from one answer to the next (a connection's), if anywhere. */
  readonly strings: StringTable | undefined;
  constructor(buf: Buffer, offset = 0, strings?: StringTable) {
    this.buf = buf;
    this.offset = offset;
    this.strings = strings;
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
  /**
   * A double written straight into `target[index]`, read through a DataView (which V8 compiles to a
   * load): Buffer.readDoubleBE returned it through a call, boxed, a heap number per value.
   */
  doubleInto(target: unknown[], index: number): void {
    this.need(8, 'a double');
    this.view ??= new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    target[index] = this.view.getFloat64(this.offset);
    this.offset += 8;
  }
  private view: DataView | undefined;
  string(): string {
    const n = this.int();
    this.need(n, 'a string');
    const v = this.strings
      ? this.strings.read(this.buf, this.offset, this.offset + n)
      : this.buf.toString('utf8', this.offset, this.offset + n);
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

/**
 * One subscribed variable's values for every object of a context subscription's answer, in the
 * objects' order, kept by the kind SUMO sends. Numbers and positions go into plain arrays of doubles,
 * which V8 keeps unboxed: a step of a few hundred vehicles decodes without an object per value (the
 * generic reading made an array per position and a heap number per double, 43 KB a step on LimSim's
 * bigInter, whose collections took CPU from SUMO on a two-core machine).
 */
export type ContextColumn =
  /** Doubles, integers and bytes; NaN where SUMO gave the object no value. */
  | { kind: 'number'; values: number[] }
  /** 2D or 3D positions, a column per coordinate; NaN where there was none (z is NaN for 2D). */
  | { kind: 'position'; dims: 2 | 3; x: number[]; y: number[]; z: number[] }
  /** Strings; undefined where there was none. */
  | { kind: 'string'; values: (string | undefined)[] }
  /** Any other type (lists, compounds, colours), as read. */
  | { kind: 'value'; values: (TraciValue | undefined)[] };

/** A context subscription's answer: the objects in range and each variable's column. */
export interface ContextColumns {
  ids: string[];
  columns: Map<number, ContextColumn>;
}

/** `rows` NaNs in an array V8 keeps as unboxed doubles. */
function doubles(rows: number): number[] {
  // Made at its length (an array pushed to grows, and is copied, several times); past V8's limit for
  // a preallocated array it would be a dictionary, so a very large one is pushed to.
  if (rows <= 50_000) return new Array<number>(rows).fill(NaN);
  const values: number[] = [];
  for (let i = 0; i < rows; i++) values.push(NaN);
  return values;
}

/**
 * The objects and columns of a context subscription's answer, read from after its variable count:
 * for each of `objects` objects its id, then for each of `variables` variables its id, a status byte
 * and a typed value. A value SUMO refused (status not OK; its value is the error text) leaves the
 * object's row empty.
 */
export function readContextColumns(reader: TraciReader, objects: number, variables: number): ContextColumns {
  const ids = new Array<string>(objects);
  const columns = new Map<number, ContextColumn>();
  for (let o = 0; o < objects; o++) {
    ids[o] = reader.string();
    for (let v = 0; v < variables; v++) {
      const variable = reader.ubyte();
      const status = reader.ubyte();
      if (status !== TRACI.RTYPE_OK) {
        reader.typed();
        continue;
      }
      const column = columns.get(variable);
      const written = readIntoColumn(reader, column, o, objects);
      if (written !== column) columns.set(variable, written);
    }
  }
  return { ids, columns };
}

/**
 * Reads one typed value into row `row` of `column` (made for `rows` objects when absent); returns the
 * column written, which is a new one when the value's kind differs from the column's (it then holds
 * plain values: SUMO sends a variable in one type, so this is for a server that does not).
 */
function readIntoColumn(
  reader: TraciReader,
  column: ContextColumn | undefined,
  row: number,
  rows: number,
): ContextColumn {
  const type = reader.ubyte();
  switch (type) {
    case TYPE.DOUBLE:
    case TYPE.INTEGER:
    case TYPE.UBYTE:
    case TYPE.BYTE: {
      column ??= { kind: 'number', values: doubles(rows) };
      if (column.kind !== 'number') column = plainValues(column, rows);
      // Each read stored where it is made: a value passed on through one variable (a double here, an
      // integer there) was boxed, a heap number per value.
      const values = column.values;
      if (type === TYPE.DOUBLE) reader.doubleInto(values, row);
      else if (type === TYPE.INTEGER) values[row] = reader.int();
      else if (type === TYPE.UBYTE) values[row] = reader.ubyte();
      else values[row] = reader.byte();
      return column;
    }
    case TYPE.POSITION_2D:
    case TYPE.POSITION_3D: {
      const dims = type === TYPE.POSITION_3D ? 3 : 2;
      column ??= { kind: 'position', dims, x: doubles(rows), y: doubles(rows), z: doubles(rows) };
      if (column.kind === 'position' && column.dims === dims) {
        reader.doubleInto(column.x, row);
        reader.doubleInto(column.y, row);
        if (dims === 3) reader.doubleInto(column.z, row);
        return column;
      }
      const position = [reader.double(), reader.double()];
      if (dims === 3) position.push(reader.double());
      (column = plainValues(column, rows)).values[row] = position;
      return column;
    }
    case TYPE.STRING: {
      const value = reader.string();
      column ??= { kind: 'string', values: new Array<string | undefined>(rows).fill(undefined) };
      if (column.kind === 'string') column.values[row] = value;
      else (column = plainValues(column, rows)).values[row] = value;
      return column;
    }
    default: {
      reader.offset--;
      const value = reader.typed();
      (column = plainValues(column, rows)).values[row] = value;
      return column;
    }
  }
}

/** A column as plain values (itself when it is one already). */
function plainValues(
  column: ContextColumn | undefined,
  rows: number,
): Extract<ContextColumn, { kind: 'value' }> {
  if (column?.kind === 'value') return column;
  const values = new Array<TraciValue | undefined>(rows);
  for (let o = 0; o < rows; o++) values[o] = column ? contextValueAt(column, o) : undefined;
  return { kind: 'value', values };
}

/** Row `o` of a column as TraciReader.typed() reads it, undefined where the object had no value. */
export function contextValueAt(column: ContextColumn, o: number): TraciValue | undefined {
  switch (column.kind) {
    case 'number':
      return Number.isNaN(column.values[o]) ? undefined : column.values[o];
    case 'position':
      if (Number.isNaN(column.x[o])) return undefined;
      return column.dims === 3 ? [column.x[o]!, column.y[o]!, column.z[o]!] : [column.x[o]!, column.y[o]!];
    default:
      return column.values[o];
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
  const content = new TraciReader(reader.buf.subarray(0, contentEnd), reader.offset, reader.strings);
  reader.offset = contentEnd;
  return { id, content };
}
