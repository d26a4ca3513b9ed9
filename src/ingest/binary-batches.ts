/**
 * Protocol 2's binary sample batches (docs/protocol.md, "Binary batches"): the body of a `columns`
 * message (rows of several streams, each stream's values as columns) and of a `frame` message (one step
 * of many actors' streams of one name, a column holding one value per actor). Little-endian arrays after
 * a few counts: a simulator writes them with one `array.tobytes()` or `memcpy` per field, and the
 * server reads them into the recorder's columns without an object per sample or a JSON parse.
 *
 * A column is named by its field id, the field's index in the stream's declaration; its values are laid
 * out as the declared type says (VALUE_LAYOUT). The same code encodes (the TypeScript client) and decodes
 * (the server), so the two cannot drift apart; the document gives the layout byte for byte.
 */
import { endianness } from 'node:os';
import type { ColumnBatchInput, FrameInput } from '../model/columns.js';
import { describeValue } from '../model/errors.js';
import { checkJsonValue } from '../model/json.js';
import type { FieldDecl, FieldType } from '../model/stream.js';
import { ByteWriter } from '../model/bytes.js';
import { MAX_NAME_BYTES, MAX_STREAM_ID_BYTES, ProtocolError } from './protocol.js';

/** The bytes one row of a field takes (vec: per component); strings and JSON are length-prefixed. */
export const VALUE_LAYOUT: Record<FieldType, { bytes: number; wire: string }> = {
  f64: { bytes: 8, wire: 'f64 (NaN: absent)' },
  f32: { bytes: 4, wire: 'f32 (NaN: absent)' },
  i32: { bytes: 4, wire: 'i32 (absent: presence bitmap)' },
  i64: { bytes: 8, wire: 'i64 (absent: presence bitmap)' },
  bool: { bytes: 1, wire: 'u8, 0 or 1 (absent: presence bitmap)' },
  vec: { bytes: 8, wire: 'f64 x length (NaN first: absent)' },
  string: { bytes: 0, wire: 'u32 length + UTF-8 (0xFFFFFFFF: absent)' },
  json: { bytes: 0, wire: 'u32 length + UTF-8 JSON (0xFFFFFFFF: absent)' },
};

/** A string or JSON value that is absent in its row. */
const ABSENT = 0xffffffff;
/**
 * Set in a column's field id when a presence bitmap follows it (a bit per row, 1 where the row has a
 * value): integers and booleans have no value to spare for "absent", as NaN is for floats.
 */
const PRESENCE_FLAG = 0x8000;
/** Float64 arrays are copied byte for byte on a little-endian machine, read one by one elsewhere. */
const LITTLE_ENDIAN = endianness() === 'LE';

/** Rows of one stream, as the client hands them over. */
export interface StreamColumns {
  stream: string;
  t: ArrayLike<number>;
  step: ArrayLike<number>;
  /** By field name; fields without a column are absent in every row. */
  columns: Record<string, ArrayLike<unknown>>;
}

// ---- encoding (the TypeScript client) ---------------------------------------------------------------

/** A u16 byte length and the UTF-8 bytes: how stream, actor and field names travel. */
function writeStr16(w: ByteWriter, s: string, what: string): void {
  const b = Buffer.from(s, 'utf8');
  if (b.length > 0xffff) throw new RangeError(`${what}: ${b.length} bytes of UTF-8 is over 65535`);
  w.u16(b.length);
  w.bytes(b);
}

function fieldIds(fields: readonly FieldDecl[], names: string[], where: string): number[] {
  return names.map((name) => {
    const id = fields.findIndex((f) => f.name === name);
    if (id < 0)
      throw new RangeError(
        `${where}: field ${JSON.stringify(name)} is not declared (binary batches carry declared fields; send others as samples)`,
      );
    return id;
  });
}

/** Whether a row's value is left out: what RunRecorder's columns take as absent (NaN, undefined, null). */
const isAbsent = (v: unknown): boolean =>
  v === undefined || v === null || (typeof v === 'number' && isNaN(v));

/**
 * The rows of an integer or boolean column that have a value, as the wire's presence bitmap, or
 * undefined when every row has one (the column then travels without a bitmap, as before there was one).
 */
function presenceOf(field: FieldDecl, values: ArrayLike<unknown>, rows: number): Uint8Array | undefined {
  if (field.type !== 'i32' && field.type !== 'i64' && field.type !== 'bool') return undefined;
  let bitmap: Uint8Array | undefined;
  for (let i = 0; i < rows; i++)
    if (isAbsent(values[i])) {
      bitmap ??= new Uint8Array((rows + 7) >> 3).fill(0xff);
      bitmap[i >> 3]! &= ~(1 << (i & 7));
    }
  // The last byte's bits past the rows are zero.
  if (bitmap && rows & 7) bitmap[bitmap.length - 1]! &= (1 << (rows & 7)) - 1;
  return bitmap;
}

/** A float row (a vec's component) as the wire carries it: NaN where absent; anything else but a number refused. */
function wireFloat(field: FieldDecl, v: unknown, where: string, i: number): number {
  if (v === undefined || v === null) return NaN;
  if (typeof v !== 'number')
    throw new RangeError(
      `${where}.${field.name}[${i}]: expected a number (NaN, undefined or null: absent), got ${describeValue(v)}`,
    );
  return v;
}

/** An integer or boolean row as the wire carries it; what it cannot carry faithfully is refused. */
function wireInteger(field: FieldDecl, v: unknown, where: string, row: number): number {
  const fail = (expected: string): never => {
    throw new RangeError(`${where}.${field.name}[${row}]: expected ${expected}, got ${describeValue(v)}`);
  };
  if (field.type === 'bool') {
    if (v === true || v === 1) return 1;
    if (v === false || v === 0) return 0;
    return fail('a boolean (true, false, 1 or 0)');
  }
  if (typeof v !== 'number' || !Number.isInteger(v)) return fail(`an integer (${field.type})`);
  if (field.type === 'i32' && (v < -(2 ** 31) || v > 2 ** 31 - 1))
    return fail('an integer within -2^31..2^31-1 (i32)');
  if (field.type === 'i64' && !Number.isSafeInteger(v)) return fail('an integer within +-2^53 (i64)');
  return v;
}

function writeColumn(
  w: ByteWriter,
  field: FieldDecl,
  values: ArrayLike<unknown>,
  rows: number,
  where: string,
  present: Uint8Array | undefined,
): void {
  const count = field.type === 'vec' ? rows * field.length! : rows;
  if (values.length !== count)
    throw new RangeError(`field ${field.name}: expected ${count} values, got ${values.length}`);
  // A Float64Array is already the wire's f64 column on a little-endian machine: one copy.
  if ((field.type === 'f64' || field.type === 'vec') && values instanceof Float64Array && LITTLE_ENDIAN) {
    w.bytes(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    return;
  }
  for (let i = 0; i < count; i++) {
    const v = values[i];
    switch (field.type) {
      case 'f64':
      case 'vec':
        w.f64(wireFloat(field, v, where, i));
        break;
      case 'f32':
        w.f32(wireFloat(field, v, where, i));
        break;
      case 'i32':
      case 'i64':
      case 'bool': {
        // An absent row's value is ignored by the reader: zero.
        const value = present && !(present[i >> 3]! & (1 << (i & 7))) ? 0 : wireInteger(field, v, where, i);
        if (field.type === 'i32') w.i32(value);
        else if (field.type === 'i64') w.i64(value);
        else w.u8(value);
        break;
      }
      case 'string':
      case 'json': {
        // null is a JSON value, and a string's absence as in RunRecorder's columns (model/columns.ts).
        if (v === undefined || (v === null && field.type === 'string')) {
          w.u32(ABSENT);
          break;
        }
        // JSON.stringify would write NaN, infinity and undefined in an array as null: refused, as RunRecorder does.
        if (field.type === 'json')
          try {
            checkJsonValue(v, () => `${where}.${field.name}[${i}]`);
          } catch (error) {
            throw new RangeError((error as Error).message, { cause: error });
          }
        if (field.type === 'string' && typeof v !== 'string')
          throw new RangeError(
            `${where}.${field.name}[${i}]: expected a string (undefined: absent), got ${describeValue(v)}`,
          );
        const b = Buffer.from(field.type === 'json' ? JSON.stringify(v) : (v as string), 'utf8');
        w.u32(b.length);
        w.bytes(b);
        break;
      }
    }
  }
}

function writeColumns(
  w: ByteWriter,
  fields: readonly FieldDecl[],
  columns: Record<string, ArrayLike<unknown>>,
  rows: number,
  where: string,
): void {
  const names = Object.keys(columns).filter((name) => columns[name] !== undefined);
  const ids = fieldIds(fields, names, where);
  w.u16(ids.length);
  ids.forEach((id, k) => {
    const field = fields[id]!;
    const values = columns[names[k]!]!;
    const present = presenceOf(field, values, rows);
    w.u16(present ? id | PRESENCE_FLAG : id);
    if (present) w.bytes(present);
    writeColumn(w, field, values, rows, where, present);
  });
}

/** The body of a `columns` message. `fieldsOf` gives each stream's declared fields. */
export function encodeColumnsBody(
  batches: readonly StreamColumns[],
  fieldsOf: (stream: string) => readonly FieldDecl[] | undefined,
): Uint8Array {
  const w = new ByteWriter();
  w.u16(batches.length);
  for (const batch of batches) {
    const fields = fieldsOf(batch.stream);
    if (!fields) throw new RangeError(`columns: stream ${JSON.stringify(batch.stream)} is not declared`);
    const n = batch.t.length;
    writeStr16(w, batch.stream, 'columns: stream id');
    w.u32(n);
    for (let i = 0; i < n; i++) w.i64(batch.t[i]!);
    for (let i = 0; i < n; i++) w.i64(batch.step[i]!);
    writeColumns(w, fields, batch.columns, n, `columns: stream ${batch.stream}`);
  }
  return w.finish();
}

/**
 * The last actor list a frame carried, and its bytes: a simulator sends the same actors step after
 * step, so each end keeps them once (the client its encoding, the server its decoding) and compares.
 * One per stream name; the wire is the same with or without it.
 */
export interface ActorBlockCache {
  actors: string[];
  bytes: Uint8Array;
}

const sameActors = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/**
 * The body of a `frame` message; `fields` are the declared fields of the actors' `name` streams. With
 * `into`, it is written there (emptied first) and the bytes returned are a view of it, valid until its
 * next use: a client copies them into the message at once, and a new zeroed buffer a frame was a fifth
 * of what sending one cost it.
 */
export function encodeFrameBody(
  name: string,
  frame: FrameInput,
  fields: readonly FieldDecl[],
  cache?: Map<string, ActorBlockCache>,
  into?: ByteWriter,
): Uint8Array {
  const known = cache?.get(name);
  const columns = Object.keys(frame.columns).length;
  // Sized for the usual frame (f64 columns), so it is written without growing.
  const size = 64 + (known?.bytes.byteLength ?? 0) + frame.actors.length * (24 + 8 * columns);
  into?.reset();
  const w = into ?? new ByteWriter(size);
  writeStr16(w, name, 'frame: stream name');
  w.i64(frame.t);
  w.i64(frame.step);
  if (known && sameActors(known.actors, frame.actors)) w.bytes(known.bytes);
  else {
    const block = new ByteWriter();
    block.u32(frame.actors.length);
    for (const actor of frame.actors) writeStr16(block, actor, 'frame: actor id');
    const bytes = block.finish();
    cache?.set(name, { actors: [...frame.actors], bytes });
    w.bytes(bytes);
  }
  // A frame of no actors ends at its count (it has no columns to name: the decoder reads none).
  if (frame.actors.length > 0)
    writeColumns(w, fields, frame.columns, frame.actors.length, `frame of ${name}`);
  return w.finish();
}

// ---- decoding (the server) --------------------------------------------------------------------------

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads a body front to back; every read checks that the bytes are there and names what it reads. */
class Reader {
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  private readonly type: string;
  offset = 0;

  constructor(bytes: Uint8Array, type: string) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.type = type;
  }

  fail(field: string, message: string): ProtocolError {
    return new ProtocolError('bad_message', `${this.type} ${field}: ${message}`, { field });
  }

  need(n: number, field: string, what: string): void {
    if (this.offset + n > this.bytes.byteLength)
      throw this.fail(
        field,
        `${what} needs ${n} bytes at byte ${this.offset} of the body, which ends at byte ${this.bytes.byteLength}`,
      );
  }
  u16(field: string): number {
    this.need(2, field, 'a u16 count');
    const v = this.view.getUint16(this.offset, true);
    this.offset += 2;
    return v;
  }
  u32(field: string, what = 'a u32 count'): number {
    this.need(4, field, what);
    const v = this.view.getUint32(this.offset, true);
    this.offset += 4;
    return v;
  }
  /** An i64 as a number; one beyond +-2^53 would not survive the conversion and is refused. */
  i64(field: string): number {
    this.need(8, field, 'an i64');
    const v = this.i64At(this.offset, field);
    this.offset += 8;
    return v;
  }
  i64At(at: number, field: string): number {
    const lo = this.view.getUint32(at, true);
    const hi = this.view.getInt32(at + 4, true);
    if (hi > 0x1fffff || hi < -0x200000)
      throw this.fail(
        field,
        `${this.view.getBigInt64(at, true)} is outside +-2^53, expected an integer within it`,
      );
    return hi * 4294967296 + lo;
  }
  /** A str16 name of at most `max` bytes: a longer one is refused before it is decoded. */
  name(field: string, max: number, what = 'a name'): string {
    const n = this.u16(field);
    if (n > max) {
      // A prefix, enough for describeValue to shorten with its "...".
      const prefix = new TextDecoder().decode(
        this.bytes.subarray(this.offset, this.offset + Math.min(n, 61)),
      );
      throw this.fail(
        field,
        `expected ${what} of at most ${max} bytes of UTF-8, got ${n} bytes (${describeValue(prefix)})`,
      );
    }
    return this.text(n, field);
  }
  text(n: number, field: string): string {
    this.need(n, field, `a UTF-8 string of ${n} bytes`);
    try {
      return utf8.decode(this.bytes.subarray(this.offset, (this.offset += n)));
    } catch {
      throw this.fail(field, `the ${n} bytes at byte ${this.offset - n} are not UTF-8`);
    }
  }
  /**
   * `count` float64s, copied out (a view of the frame could not be aligned): into `into`'s array when
   * given (see FrameScratch), else into a new one.
   */
  f64s(count: number, field: string, what: string, into?: ScratchColumn): Float64Array {
    this.need(count * 8, field, what);
    const out = into?.values ?? new Float64Array(count);
    const end = this.offset + count * 8;
    if (LITTLE_ENDIAN) (into?.bytes ?? new Uint8Array(out.buffer)).set(this.bytes.subarray(this.offset, end));
    else for (let i = 0; i < count; i++) out[i] = this.view.getFloat64(this.offset + i * 8, true);
    this.offset = end;
    return out;
  }
  i64s(count: number, field: string, what: string): Float64Array {
    this.need(count * 8, field, what);
    const out = new Float64Array(count);
    for (let i = 0; i < count; i++) out[i] = this.i64At(this.offset + i * 8, field);
    this.offset += count * 8;
    return out;
  }
  /** f32, i32 or u8 values, widened to float64 as the recorder holds every number. */
  narrow(type: 'f32' | 'i32' | 'bool', count: number, field: string, what: string): Float64Array {
    const size = VALUE_LAYOUT[type].bytes;
    this.need(count * size, field, what);
    const out = new Float64Array(count);
    const v = this.view;
    const at = this.offset;
    if (type === 'f32') for (let i = 0; i < count; i++) out[i] = v.getFloat32(at + i * 4, true);
    else if (type === 'i32') for (let i = 0; i < count; i++) out[i] = v.getInt32(at + i * 4, true);
    else for (let i = 0; i < count; i++) out[i] = v.getUint8(at + i);
    this.offset += count * size;
    return out;
  }
  /** A presence bitmap of `rows` bits (1: the row has a value); bits past the rows must be zero. */
  presence(rows: number, field: string): Uint8Array {
    const size = (rows + 7) >> 3;
    this.need(size, field, `a presence bitmap of ${rows} rows`);
    const bitmap = this.bytes.subarray(this.offset, (this.offset += size));
    if (rows & 7 && bitmap[size - 1]! >> (rows & 7) !== 0)
      throw this.fail(field, `the presence bitmap has bits set past its ${rows} rows, expected zeros`);
    return bitmap;
  }
  /** Whether the body holds `bytes` at `at`. */
  startsWith(bytes: Uint8Array, at: number): boolean {
    if (at + bytes.byteLength > this.bytes.byteLength) return false;
    return Buffer.compare(bytes, this.bytes.subarray(at, at + bytes.byteLength)) === 0;
  }
  /** A copy of bytes [from, to) of the body (a view would keep the whole message alive). */
  copy(from: number, to: number): Uint8Array {
    return Uint8Array.prototype.slice.call(this.bytes, from, to);
  }
  end(): void {
    if (this.offset !== this.bytes.byteLength)
      throw this.fail(
        'body',
        `${this.bytes.byteLength - this.offset} bytes follow the last batch at byte ${this.offset}, expected none`,
      );
  }
}

/** A float64 column's array and a byte view of it, reused from one frame to the next. */
interface ScratchColumn {
  values: Float64Array;
  bytes: Uint8Array;
}

/**
 * The arrays a session decodes its frames' float64 columns into, used again for its next frame: the
 * recorder copies a frame's values before appendFrame returns (model/columns.ts), so they are free once
 * the frame is appended. A new array per column and frame (an allocation outside V8's heap, zeroed, then
 * a finaliser for the garbage collector) was a fifth of what decoding a frame cost the server.
 */
export class FrameScratch {
  private readonly columns: ScratchColumn[] = [];

  /** The array for the frame's k-th column of `count` numbers. */
  column(k: number, count: number): ScratchColumn {
    let column = this.columns[k];
    if (column?.values.length !== count) {
      const values = new Float64Array(count);
      this.columns[k] = column = { values, bytes: new Uint8Array(values.buffer) };
    }
    return column;
  }
}

function readColumn(
  r: Reader,
  field: FieldDecl,
  rows: number,
  where: string,
  /** Where float64 columns are decoded into, this one as the frame's column `k`; new arrays without. */
  scratch?: FrameScratch,
  k = 0,
): ArrayLike<unknown> {
  const what = `${rows} rows of ${field.type}`;
  switch (field.type) {
    case 'f64':
    case 'vec': {
      // The bytes are looked for before an array is sized for them: a count the body cannot hold
      // (a vec[4096] of 100,000 rows in a 200 KB frame) must not reserve what it announces.
      const count = field.type === 'vec' ? rows * field.length! : rows;
      const whatAll = field.type === 'vec' ? `${what}[${field.length}]` : what;
      r.need(count * 8, where, whatAll);
      return r.f64s(count, where, whatAll, scratch?.column(k, count));
    }
    case 'i64':
      return r.i64s(rows, where, what);
    case 'f32':
    case 'i32':
    case 'bool':
      return r.narrow(field.type, rows, where, what);
    case 'string':
    case 'json': {
      r.need(rows * 4, where, `${rows} u32 string lengths at least`);
      const out: unknown[] = new Array(rows);
      for (let i = 0; i < rows; i++) {
        const n = r.u32(`${where}[${i}]`, 'a u32 string length');
        if (n === ABSENT) continue;
        const text = r.text(n, `${where}[${i}]`);
        if (field.type === 'string') out[i] = text;
        else
          try {
            out[i] = JSON.parse(text);
          } catch {
            throw r.fail(`${where}[${i}]`, `expected JSON text, got ${describeValue(text)}`);
          }
      }
      return out;
    }
  }
}

/** A decoded column with the rows its presence bitmap leaves out absent: NaN (every component), undefined. */
function withoutAbsentRows(
  values: ArrayLike<unknown>,
  field: FieldDecl,
  rows: number,
  present: Uint8Array,
): ArrayLike<unknown> {
  const width = field.type === 'vec' ? field.length! : 1;
  for (let i = 0; i < rows; i++) {
    if (present[i >> 3]! & (1 << (i & 7))) continue;
    if (values instanceof Float64Array) values.fill(NaN, i * width, (i + 1) * width);
    else (values as unknown[])[i] = undefined;
  }
  return values;
}

function readColumns(
  r: Reader,
  fields: readonly FieldDecl[],
  rows: number,
  where: string,
  scratch?: FrameScratch,
): Record<string, ArrayLike<unknown>> {
  const count = r.u16(`${where}.columns`);
  const columns: Record<string, ArrayLike<unknown>> = {};
  for (let k = 0; k < count; k++) {
    const raw = r.u16(`${where}.columns[${k}]`);
    const id = raw & ~PRESENCE_FLAG;
    const field = fields[id];
    if (!field)
      throw r.fail(
        `${where}.columns[${k}]`,
        `field id ${id} is not declared, expected 0..${fields.length - 1} (${fields.map((f) => f.name).join(', ')})`,
      );
    if (field.name in columns) throw r.fail(`${where}.${field.name}`, `field id ${id} comes twice`);
    const present = raw & PRESENCE_FLAG ? r.presence(rows, `${where}.${field.name}`) : undefined;
    const values = readColumn(r, field, rows, `${where}.${field.name}`, scratch, k);
    columns[field.name] = present ? withoutAbsentRows(values, field, rows, present) : values;
  }
  return columns;
}

/** A `columns` body as the recorder's column batches, by stream id. */
export function decodeColumnsBody(
  body: Uint8Array,
  fieldsOf: (stream: string) => readonly FieldDecl[] | undefined,
): { stream: string; input: ColumnBatchInput }[] {
  const r = new Reader(body, 'columns');
  const count = r.u16('streams');
  const out: { stream: string; input: ColumnBatchInput }[] = [];
  for (let s = 0; s < count; s++) {
    const stream = r.name(`streams[${s}]`, MAX_STREAM_ID_BYTES, 'a stream id');
    const fields = fieldsOf(stream);
    if (!fields) throw r.fail(`streams[${s}]`, `stream ${describeValue(stream)} is not declared in this run`);
    const rows = r.u32(`${stream}.rows`);
    const t = r.i64s(rows, `${stream}.t`, `${rows} times (i64)`);
    const step = r.i64s(rows, `${stream}.step`, `${rows} steps (i64)`);
    out.push({ stream, input: { t, step, columns: readColumns(r, fields, rows, stream) as never } });
  }
  r.end();
  return out;
}

/** What a `frame` body is decoded against: the streams of the run the session may write. */
export interface FrameStreams {
  /** A stream's declared fields, once the session may write to it; undefined if it is not declared. */
  fieldsOf(stream: string, where: string): readonly FieldDecl[] | undefined;
  /** How many actors' streams named `name` are declared: a frame lists at most that many actors. */
  countNamed(name: string): number;
}

/**
 * A `frame` body as the recorder's frame; the field ids are those of the first actor's stream. Its name
 * is looked up and its actor count checked against the streams of that name before any actor id is
 * decoded, and each id against its stream as it is decoded: a frame of ids never declared costs the
 * server no more than its first one. Only a list whose every stream was found is kept in `cache`.
 */
export function decodeFrameBody(
  body: Uint8Array,
  streams: FrameStreams,
  cache?: Map<string, ActorBlockCache>,
  /** Reused arrays for the float64 columns: the frame must be appended before the next is decoded. */
  scratch?: FrameScratch,
): { name: string; frame: FrameInput } {
  const r = new Reader(body, 'frame');
  const name = r.name('name', MAX_NAME_BYTES, 'a stream name');
  const t = r.i64('t');
  const step = r.i64('step');
  const blockStart = r.offset;
  const n = r.u32('actors');
  if (n === 0) {
    r.end();
    return { name, frame: { t, step, actors: [], columns: {} } };
  }
  const declared = streams.countNamed(name);
  if (declared === 0) throw r.fail('name', `no stream named ${describeValue(name)} is declared in this run`);
  if (n > declared)
    throw r.fail(
      'actors',
      `${n} actors, expected at most the ${declared} whose ${describeValue(name)} stream is declared`,
    );
  // Each actor id takes at least its two length bytes: a count the body cannot hold is refused first.
  r.need(n * 2, 'actors', `${n} actor ids`);
  // The same actors as this stream's last frame (byte for byte): their ids, decoded then, are reused.
  const known = cache?.get(name);
  let actors: string[];
  if (known && r.startsWith(known.bytes, blockStart)) {
    actors = known.actors;
    r.offset = blockStart + known.bytes.byteLength;
  } else {
    actors = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const actor = r.name(`actors[${i}]`, MAX_NAME_BYTES, 'an actor id');
      if (!streams.fieldsOf(`${actor}/${name}`, `actors[${i}]`))
        throw r.fail(
          `actors[${i}]`,
          `stream ${describeValue(`${actor}/${name}`)} is not declared in this run`,
        );
      actors[i] = actor;
    }
    cache?.set(name, { actors, bytes: r.copy(blockStart, r.offset) });
  }
  const fields = streams.fieldsOf(`${actors[0]}/${name}`, 'actors[0]');
  if (!fields)
    throw r.fail('actors[0]', `stream ${describeValue(`${actors[0]}/${name}`)} is not declared in this run`);
  const columns = readColumns(r, fields, n, name, scratch);
  r.end();
  return { name, frame: { t, step, actors, columns: columns as never } };
}
