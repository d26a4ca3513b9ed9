import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import type { ColumnBatch, ColumnValues } from '../../model/columns.js';
import { SimrecError } from '../../model/errors.js';
import { FIELD_TYPES, type FieldType } from '../../model/stream.js';
import {
  FloatPackingMemo,
  packFloat32,
  packFloat64,
  type FloatPacking,
  packIntegers,
  unpackFloat32,
  unpackFloat64,
  unpackIntegers,
} from './bit-codec.js';
import { ByteReader, ByteWriter, decodeUtf8 } from '../../model/bytes.js';

/**
 * The chunk: many consecutive samples of one stream, column by column, in blocks.
 *
 * A block is the unit of decoding: its columns are packed on their own (no prediction crosses into
 * the block before), so the scene at t decodes one block of each actor's chunk, and only the fields it
 * asks for. A chunk is the unit of storage: one row (SQLite) or document (MongoDB), large enough that
 * the database's per-row cost and its last half-filled page are small beside it. When a recording
 * commits, each stream's new samples become one block of a small tail chunk; when a stream's tail holds
 * a full chunk's worth, its blocks are concatenated into a sealed chunk as they are (no re-encoding),
 * only blocks too small to compress well being merged and packed again.
 *
 * Layout ("SRC2", little-endian):
 *   "SRC2" | u32 header length | u32 table length | u32 CRC-32 of the frame (all but the blocks)
 *   | header JSON {n, begin, columns: ["name:type[:length]", ...]}
 *   | table: varint block count, per block: varint rows, varint bytes, varint first t - begin,
 *     varint last t - first t, u32 CRC-32 of the block
 *   | blocks
 * A block is a sequence of column records: varint index (0 t, 1 step, 2 + the column's place in the
 * header's list), u8 codec (bit 7: a presence bitmap precedes the values), varint payload length, payload.
 * Every byte counts: at 100 samples a block, each byte of framing is 0.01 byte per sample.
 *
 * Checksums are checked on every read, the frame's when the chunk is opened and a block's before it is
 * decoded (a scene reads one block of a chunk: checking the whole chunk cost more than decoding it).
 * Damage becomes an error naming the chunk, never wrong samples.
 */

const MAGIC = 'SRC2';
const T_INDEX = 0;
const STEP_INDEX = 1;
const FIRST_FIELD_INDEX = 2;

const CODEC = {
  constant: 1,
  floatLinear: 2,
  floatPrevious: 3,
  float32: 4,
  intDelta: 5,
  intDeltaOfDelta: 6,
  bits: 7,
  dictionary: 8,
  jsonText: 9,
  jsonShape: 10,
  jsonDeflated: 11,
  vector: 12,
  /** A safe integer repeated: zig-zag varint. */
  constantInteger: 13,
  /** start (zig-zag varint; for t, from the block's first time) and step (zig-zag varint). */
  arithmetic: 14,
  /** Float64 values as they are, 8 bytes each (tail blocks of simrec before 2026-11; see BlockPacking). */
  raw: 15,
  /** floatLinear and floatPrevious with residuals XOR-ed and rotated (bit-codec.ts FloatResidual). */
  floatLinearRotated: 16,
  floatPreviousRotated: 17,
  /**
   * The predictors with residuals the difference of the bit patterns (bit-codec.ts FloatResidual) and
   * group widths in a prefix code, since store schema 5 (2026-11-26); floatLinear and floatPrevious,
   * their XOR with 3-bit width changes, are read as before.
   */
  floatLinearDifference: 18,
  floatPreviousDifference: 19,
  /**
   * f32 columns packed as float64 ones are (bit-codec.ts packFloat32), since store schema 5:
   * differences (prefix-coded widths) or rotated XOR, each with either predictor; `float32`, the linear
   * prediction's XOR, is read as before.
   */
  float32LinearDifference: 20,
  float32PreviousDifference: 21,
  float32LinearRotated: 22,
  float32PreviousRotated: 23,
} as const;

/**
 * `packed`: each column in its smallest form (tail and sealed chunks alike). `raw`: the numbers as they
 * are, how simrec wrote tail chunks before they were packed at commit (2026-11); such tails, left by a
 * run that did not end, are read and packed again when sealed. Written only by tests of that.
 */
export type BlockPacking = 'packed' | 'raw';

/** The float codecs and the packing each stands for: the one place that pairs them, both ways. */
const FLOAT_PACKINGS = new Map<number, FloatPacking>([
  [CODEC.floatLinear, { predictor: 'linear', residual: 'xor' }],
  [CODEC.floatPrevious, { predictor: 'previous', residual: 'xor' }],
  [CODEC.floatLinearRotated, { predictor: 'linear', residual: 'xor-rotated' }],
  [CODEC.floatPreviousRotated, { predictor: 'previous', residual: 'xor-rotated' }],
  [CODEC.floatLinearDifference, { predictor: 'linear', residual: 'difference' }],
  [CODEC.floatPreviousDifference, { predictor: 'previous', residual: 'difference' }],
]);

/** The same for f32 columns (codec float32, before store schema 5, the linear prediction's plain XOR). */
const FLOAT32_PACKINGS = new Map<number, FloatPacking>([
  [CODEC.float32, { predictor: 'linear', residual: 'xor' }],
  [CODEC.float32LinearDifference, { predictor: 'linear', residual: 'difference' }],
  [CODEC.float32PreviousDifference, { predictor: 'previous', residual: 'difference' }],
  [CODEC.float32LinearRotated, { predictor: 'linear', residual: 'xor-rotated' }],
  [CODEC.float32PreviousRotated, { predictor: 'previous', residual: 'xor-rotated' }],
]);

/**
 * Each map the other way, by predictor then residual: iterating a Map made an entry array per step, a
 * tenth of what the writer thread allocated on the record benchmark (38 of 366 MB).
 */
const codecsOf = (packings: ReadonlyMap<number, FloatPacking>): Record<string, Record<string, number>> => {
  const byPredictor: Record<string, Record<string, number>> = { linear: {}, previous: {} };
  for (const [codec, p] of packings) byPredictor[p.predictor]![p.residual] = codec;
  return byPredictor;
};
const FLOAT_CODECS = codecsOf(FLOAT_PACKINGS);
const FLOAT32_CODECS = codecsOf(FLOAT32_PACKINGS);

function floatCodec(packing: FloatPacking, codecs = FLOAT_CODECS): number {
  const codec = codecs[packing.predictor]?.[packing.residual];
  if (codec === undefined) throw new Error(`no codec for float packing ${JSON.stringify(packing)}`);
  return codec;
}

/** Bit 7 of the codec byte: a presence bitmap precedes the values. */
const FLAG_PRESENCE = 0x80;

/** JSON text at least this long is tried with deflate: labels and small objects are not worth a call. */
const DEFLATE_JSON_FROM = 512;

export interface ChunkColumn {
  name: string;
  type: FieldType;
  length?: number;
}

export interface EncodedBlock {
  rows: number;
  begin: number;
  end: number;
  bytes: Uint8Array;
  /** CRC-32 of `bytes`, once computed (a block assembled twice, at commit and at the seal, is summed once). */
  crc?: number;
}

const columnLists = new WeakMap<readonly ChunkColumn[], { count: number; json: string }>();
/** The header's JSON list of columns, kept per list (which only grows: undeclared fields are appended). */
function columnList(columns: readonly ChunkColumn[]): string {
  const known = columnLists.get(columns);
  if (known && known.count === columns.length && !columns.some((c) => c.type === 'json')) return known.json;
  const json = JSON.stringify(columns.map(describeColumn));
  columnLists.set(columns, { count: columns.length, json });
  return json;
}

export const describeColumn = (c: ChunkColumn): string =>
  c.type === 'vec' ? `${c.name}:vec:${c.length}` : `${c.name}:${c.type}`;

/**
 * Column lists already parsed, by the header text from their key on: every chunk of a stream, and the
 * state streams of every actor, share one list (one object for the row builders to key on, and a
 * fresh process's first scene parses a list once, not once per actor).
 */
const parsedColumnLists = new Map<string, readonly ChunkColumn[]>();

function parsedColumns(
  list: unknown[],
  headerText: string,
  corrupt: (why: string) => Error,
): readonly ChunkColumn[] {
  const key = headerText.slice(headerText.indexOf('"columns":'));
  let columns = parsedColumnLists.get(key);
  if (!columns) {
    columns = Object.freeze(list.map((c) => Object.freeze(parseColumn(c, corrupt))));
    if (parsedColumnLists.size < 4096) parsedColumnLists.set(key, columns);
  }
  return columns;
}

function parseColumn(text: unknown, corrupt: (why: string) => Error): ChunkColumn {
  if (typeof text !== 'string') throw corrupt('a column description is not a string');
  const [name, type, length] = text.split(':');
  if (!name || !(FIELD_TYPES as readonly string[]).includes(type!))
    throw corrupt(`column description ${JSON.stringify(text).slice(0, 60)} is malformed`);
  const column: ChunkColumn = { name, type: type as FieldType };
  if (type === 'vec') {
    const len = Number(length);
    if (!(Number.isInteger(len) && len > 0 && len <= 4096))
      throw corrupt(`vec column ${name} has length ${length}`);
    column.length = len;
  }
  return column;
}

// ---- encoding --------------------------------------------------------------------------------------

/**
 * Rows [from, to) of a batch as one block. `columns` is the stream's column list (its declared fields,
 * then the undeclared ones in order of appearance); a column of the batch must be in it.
 */
export function encodeBlock(
  batch: ColumnBatch,
  columns: readonly ChunkColumn[],
  indexOf: ReadonlyMap<string, number>,
  from: number,
  to: number,
  packing: BlockPacking = 'packed',
  /** The stream's float packings, kept from block to block (its writer's); chosen per block without. */
  floatPackings?: FloatPackingMemo,
): EncodedBlock {
  const rows = to - from;
  if (rows <= 0) throw new Error('encodeBlock: a block needs at least one row');
  const raw = packing === 'raw';
  const out = blockScratch;
  out.reset();
  writeIntegerRecord(out, T_INDEX, rowsOf(batch.t, from, to), 2);
  writeIntegerRecord(out, STEP_INDEX, rowsOf(batch.step, from, to), 1);
  // In the list's order (declared fields first), so that samples read back list their fields as declared.
  let written = 0;
  for (let index = 0; index < columns.length; index++) {
    const values = batch.columns[columns[index]!.name];
    if (values === undefined) continue;
    writeColumnRecord(out, index + FIRST_FIELD_INDEX, columns[index]!, values, from, to, raw, floatPackings);
    written++;
  }
  if (written !== Object.keys(batch.columns).length)
    for (const name in batch.columns)
      if (!indexOf.has(name))
        throw new Error(`encodeBlock: column ${name} is not in the stream's column list`);
  return { rows, begin: batch.t[from]!, end: batch.t[to - 1]!, bytes: out.finish().slice() };
}

/**
 * Rows [from, to) of a column: the column itself when that is all of it (a commit's batch of a stream is
 * usually one block), as a view only otherwise. A view per column and block was a tenth of what the
 * writer thread allocated on the record benchmark.
 */
const rowsOf = (values: Float64Array, from: number, to: number): Float64Array =>
  from === 0 && to === values.length ? values : values.subarray(from, to);

/**
 * Where blocks are encoded: one writer, reused (it grows to the largest block), each block copied out at
 * its size. A writer allocated per block, at twice a block's usual size, was 3% of the writer thread's
 * time in sealing (measured on the benchmark) and kept the slack alive until the chunk was assembled.
 */
const blockScratch = new ByteWriter(64 * 1024);

function writeRecord(
  out: ByteWriter,
  index: number,
  codec: number,
  presence: Uint8Array | null,
  payload: Uint8Array,
): void {
  out.varint(index);
  out.u8(presence ? codec | FLAG_PRESENCE : codec);
  out.varint((presence?.length ?? 0) + payload.length);
  if (presence) out.bytes(presence);
  out.bytes(payload);
}

function writeIntegerRecord(out: ByteWriter, index: number, values: Float64Array, order: 1 | 2): void {
  const arithmetic = arithmeticBytes(values, index === T_INDEX ? values[0]! : 0);
  if (arithmetic) return writeRecord(out, index, CODEC.arithmetic, null, arithmetic);
  const packed = packIntegers(values, order);
  if (packed) writeRecord(out, index, order === 2 ? CODEC.intDeltaOfDelta : CODEC.intDelta, null, packed);
  else writeFloatRecord(out, index, null, values);
}

function writeFloatRecord(
  out: ByteWriter,
  index: number,
  presence: Uint8Array | null,
  values: Float64Array,
  raw = false,
  floatPackings?: FloatPackingMemo,
): void {
  if (raw)
    return writeRecord(
      out,
      index,
      CODEC.raw,
      presence,
      new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
    );
  if (isConstant(values)) return writeConstant(out, index, presence, values[0]!);
  const { packing, bytes } = floatPackings ? floatPackings.pack(index, values) : packFloat64(values);
  writeRecord(out, index, floatCodec(packing), presence, bytes);
}

function writeFloat32Record(
  out: ByteWriter,
  index: number,
  presence: Uint8Array | null,
  values: Float64Array,
): void {
  const { packing, bytes } = packFloat32(values);
  writeRecord(out, index, floatCodec(packing, FLOAT32_CODECS), presence, bytes);
}

function writeColumnRecord(
  out: ByteWriter,
  index: number,
  column: ChunkColumn,
  values: ColumnValues,
  from: number,
  to: number,
  raw: boolean,
  floatPackings: FloatPackingMemo | undefined,
): void {
  const rows = to - from;
  if (column.type === 'vec') {
    const len = column.length!;
    const all = values as Float64Array;
    const present: number[] = [];
    for (let i = from; i < to; i++) if (!Number.isNaN(all[i * len]!)) present.push(i);
    if (present.length === 0) return;
    const presence =
      present.length < rows ? bitmapOf(rows, (i) => !Number.isNaN(all[(from + i) * len]!)) : null;
    // Component by component, so each one's prediction runs over its own history.
    const parts = new ByteWriter(present.length * len * 6);
    const component = new Float64Array(present.length);
    for (let k = 0; k < len; k++) {
      for (let j = 0; j < present.length; j++) component[j] = all[present[j]! * len + k]!;
      writeFloatRecord(parts, k, null, component, raw);
    }
    return writeRecord(out, index, CODEC.vector, presence, parts.finish());
  }
  if (values instanceof Float64Array) {
    const slice = rowsOf(values, from, to);
    let count = 0;
    for (let i = 0; i < rows; i++) if (!Number.isNaN(slice[i]!)) count++;
    if (count === 0) return;
    let presence: Uint8Array | null = null;
    let dense = slice;
    if (count < rows) {
      presence = bitmapOf(rows, (i) => !Number.isNaN(slice[i]!));
      dense = new Float64Array(count);
      for (let i = 0, j = 0; i < rows; i++) if (!Number.isNaN(slice[i]!)) dense[j++] = slice[i]!;
    }
    if (raw && column.type !== 'bool') return writeFloatRecord(out, index, presence, dense, true);
    switch (column.type) {
      case 'bool':
        return writeRecord(
          out,
          index,
          CODEC.bits,
          presence,
          bitmapOf(count, (i) => dense[i] === 1),
        );
      case 'f32':
        if (isConstant(dense)) return writeConstant(out, index, presence, dense[0]!);
        return writeFloat32Record(out, index, presence, dense);
      case 'i32':
      case 'i64': {
        if (isConstant(dense)) return writeConstant(out, index, presence, dense[0]!);
        const packed = packIntegers(dense, 1);
        if (packed) return writeRecord(out, index, CODEC.intDelta, presence, packed);
        return writeFloatRecord(out, index, presence, dense, false, floatPackings);
      }
      default:
        return writeFloatRecord(out, index, presence, dense, false, floatPackings);
    }
  }
  const list = values as unknown[];
  let count = 0;
  for (let i = from; i < to; i++) if (list[i] !== undefined) count++;
  if (count === 0) return;
  const presence = count < rows ? bitmapOf(rows, (i) => list[from + i] !== undefined) : null;
  // Strings straight from the column: an array of the present ones, grown a push at a time, was a
  // fifth of what the writer thread allocated on the record benchmark (a lane id column per actor).
  if (column.type === 'string')
    return writeRecord(
      out,
      index,
      CODEC.dictionary,
      presence,
      dictionaryBytes(list as readonly (string | undefined)[], from, to),
    );
  const dense: unknown[] = [];
  for (let i = from; i < to; i++) if (list[i] !== undefined) dense.push(list[i]);
  const shaped = raw ? null : jsonShapeBytes(dense);
  if (shaped) return writeRecord(out, index, CODEC.jsonShape, presence, shaped);
  const text = Buffer.from(JSON.stringify(dense), 'utf8');
  if (text.length >= DEFLATE_JSON_FROM && !raw) {
    const deflated = deflateRawSync(text, { level: 1 });
    if (deflated.length < text.length * 0.8)
      return writeRecord(out, index, CODEC.jsonDeflated, presence, deflated);
  }
  writeRecord(out, index, CODEC.jsonText, presence, text);
}

/** A fixed-rate sequence (the usual time and step column): two small varints for the whole block. */
function arithmeticBytes(values: Float64Array, origin: number): Uint8Array | null {
  const n = values.length;
  const start = values[0]! - origin;
  const delta = n > 1 ? values[1]! - values[0]! : 0;
  if (!(Math.abs(start) < 2 ** 52 && Math.abs(delta) < 2 ** 52)) return null;
  for (let i = 1; i < n; i++) if (values[i] !== values[0]! + delta * i) return null;
  const out = smallScratch;
  out.reset();
  out.zigzag(start);
  out.zigzag(delta);
  return out.finish();
}

/** For the few bytes of arithmetic and constant records: valid until the next, copied into the block at once. */
const smallScratch = new ByteWriter(32);

/** A repeated value: a small integer as a varint, anything else as its eight bytes. */
function writeConstant(out: ByteWriter, index: number, presence: Uint8Array | null, v: number): void {
  if (Number.isSafeInteger(v) && !Object.is(v, -0) && Math.abs(v) < 2 ** 52) {
    const w = smallScratch;
    w.reset();
    w.zigzag(v);
    return writeRecord(out, index, CODEC.constantInteger, presence, w.finish());
  }
  writeRecord(out, index, CODEC.constant, presence, float64Bytes(v));
}

/**
 * Whether every value has the first one's bits. Compared as numbers, a zero's sign apart (NaN is never a
 * value here: it marks an absent one), without a view of their words: one per column and block was
 * garbage the writer thread collected.
 */
function isConstant(values: Float64Array): boolean {
  const n = values.length;
  if (n < 2) return n === 1;
  const first = values[0]!;
  if (first !== 0) {
    for (let i = 1; i < n; i++) if (values[i] !== first) return false;
    return true;
  }
  const negative = Object.is(first, -0);
  for (let i = 1; i < n; i++) if (values[i] !== 0 || Object.is(values[i], -0) !== negative) return false;
  return true;
}

function float64Bytes(v: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setFloat64(0, v, true);
  return out;
}

function bitmapOf(n: number, has: (i: number) => boolean): Uint8Array {
  const bitmap = new Uint8Array((n + 7) >> 3);
  for (let i = 0; i < n; i++) if (has(i)) bitmap[i >> 3]! |= 1 << (i & 7);
  return bitmap;
}

/**
 * Distinct strings once, then runs of their indexes: a lane id changes a few times a minute. The bytes
 * are valid until the next call.
 */
/** The strings of values[from, to), absent ones (undefined) left out, as distinct values and runs. */
function dictionaryBytes(values: readonly (string | undefined)[], from: number, to: number): Uint8Array {
  const dict = dictionaryScratch.dict;
  const index = dictionaryScratch.index;
  const runs = dictionaryScratch.runs;
  dict.length = 0;
  index.clear();
  runs.length = 0;
  let current = -1;
  for (let i = from; i < to; i++) {
    const v = values[i];
    if (v === undefined) continue;
    let k = index.get(v);
    if (k === undefined) {
      k = dict.length;
      dict.push(v);
      index.set(v, k);
    }
    if (k === current) runs[runs.length - 1]!++;
    else {
      runs.push(k, 1);
      current = k;
    }
  }
  const out = dictionaryScratch.out;
  out.reset();
  out.varint(dict.length);
  for (let i = 0; i < dict.length; i++) out.string(dict[i]!);
  out.varint(runs.length / 2);
  for (let i = 0; i < runs.length; i++) out.varint(runs[i]!);
  return out.finish();
}

/**
 * Where string columns are packed (`out`: valid until the next, copied into the block at once) and the
 * lists that packing them uses, kept: a writer per block and column was a tenth of what the writer
 * thread allocated on the benchmark (a lane id column).
 */
const dictionaryScratch = {
  out: new ByteWriter(1024),
  dict: [] as string[],
  index: new Map<string, number>(),
  runs: [] as number[],
};

/**
 * JSON values of one shape (per-wheel states: the same keys, the same strings, only numbers change) as
 * the shape once and a float column per number: the numbers compress like any other float column
 * instead of as decimal text. Null when the values differ in shape, or a key would be unsafe to rebuild.
 */
function jsonShapeBytes(values: readonly unknown[]): Uint8Array | null {
  const leaves: number[] = [];
  const shape = shapeOf(values[0], leaves);
  if (shape === null) return null;
  const perValue = leaves.length;
  if (perValue === 0) return null;
  for (let i = 1; i < values.length; i++) if (!sameShape(values[i], values[0], leaves)) return null;
  const out = new ByteWriter(leaves.length * 6 + shape.length + 16);
  const shapeBytes = Buffer.from(shape, 'utf8');
  out.varint(shapeBytes.length);
  out.bytes(shapeBytes);
  out.varint(perValue);
  const column = new Float64Array(values.length);
  for (let k = 0; k < perValue; k++) {
    for (let i = 0; i < values.length; i++) column[i] = leaves[i * perValue + k]!;
    writeFloatRecord(out, k, null, column);
  }
  return out.finish();
}

/**
 * Whether `value` has the shape of `reference` (a value shapeOf accepted): what shapeOf would give for
 * it, found by walking both instead of writing its text (a string per value was 2% of the writer
 * thread's time on the benchmark, for the ego's wheels alone). Its numbers are pushed to `leaves`.
 */
function sameShape(value: unknown, reference: unknown, leaves: number[]): boolean {
  if (typeof reference === 'number') {
    if (typeof value !== 'number') return false;
    leaves.push(value === 0 ? 0 : value);
    return true;
  }
  // A string, a boolean or null is part of the shape itself.
  if (typeof reference !== 'object' || reference === null) return value === reference;
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(reference)) {
    if (!Array.isArray(value) || value.length !== reference.length) return false;
    for (let i = 0; i < value.length; i++) if (!sameShape(value[i], reference[i], leaves)) return false;
    return true;
  }
  if (Array.isArray(value)) return false;
  // The same keys in the same order, keys of undefined values left out (as JSON and shapeOf do). The
  // value's keys are walked with for-in, not listed: Object.keys made an array per object of every
  // value. for-in gives own keys in Object.keys' order, then inherited enumerable ones, which plain
  // objects and structured clones have none of (a value that had one would not be of the shape, and
  // the column would be kept as JSON text: never wrong, only larger).
  const r = reference as Record<string, unknown>;
  const v = value as Record<string, unknown>;
  let rKeys = referenceKeys.get(r);
  if (!rKeys) referenceKeys.set(r, (rKeys = Object.keys(r).filter((k) => r[k] !== undefined)));
  let i = 0;
  for (const key in v) {
    const item = v[key];
    if (item === undefined) continue;
    if (i === rKeys.length || rKeys[i] !== key || !sameShape(item, r[key], leaves)) return false;
    i++;
  }
  return i === rKeys.length;
}

/** A reference value's objects' keys (of defined values), listed once for every value compared with it. */
const referenceKeys = new WeakMap<object, string[]>();

/** A value's JSON with every number as `#`, its numbers pushed to `leaves`; null if not rebuildable. */
function shapeOf(value: unknown, leaves: number[]): string | null {
  switch (typeof value) {
    case 'number':
      // As JSON keeps it: a json field's -0 reads back as 0 whichever way its column was stored.
      leaves.push(value === 0 ? 0 : value);
      return '#';
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let s = '[';
        for (let i = 0; i < value.length; i++) {
          const item = shapeOf(value[i], leaves);
          if (item === null) return null;
          s += (i ? ',' : '') + item;
        }
        return s + ']';
      }
      let s = '{';
      let first = true;
      for (const key of Object.keys(value)) {
        const item = (value as Record<string, unknown>)[key];
        if (item === undefined) continue;
        if (key === '__proto__') return null;
        const inner = shapeOf(item, leaves);
        if (inner === null) return null;
        s += (first ? '' : ',') + JSON.stringify(key) + ':' + inner;
        first = false;
      }
      return s + '}';
    }
    default:
      return null;
  }
}

/**
 * Memory a writer assembles chunks into and uses again once it has handed them to its store. SQLite
 * copies a chunk when it is bound to its INSERT, so the SQLite writer assembles the chunks of a commit or
 * a seal here and calls `reuse()` once they are written. A buffer of their own per chunk (61 MB over the
 * record benchmark's run, each commit's tail chunks and each seal's chunks) was garbage whose memory the
 * writer thread's collector gave back late: sealed chunks often outlived a young collection and then
 * waited for one of the old generation, a few a run. The benchmark's peak resident memory was about 11
 * MiB higher (medians of six alternating runs, 184 against 173 MiB) and recording a few percent slower.
 */
export class ChunkBuffers {
  private readonly free: Buffer[] = [];
  private readonly taken: Buffer[] = [];

  /** `size` bytes, which stay this chunk's until the next `reuse()`. */
  take(size: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++)
      if (this.free[i]!.length >= size && (best < 0 || this.free[i]!.length < this.free[best]!.length))
        best = i;
    // A quarter more than asked: the next chunk is often a little larger than this one.
    let buffer: Buffer;
    if (best < 0) buffer = Buffer.allocUnsafeSlow(Math.ceil(size * 1.25));
    else {
      buffer = this.free[best]!;
      this.free[best] = this.free[this.free.length - 1]!;
      this.free.pop();
    }
    this.taken.push(buffer);
    return buffer.subarray(0, size);
  }

  /** The chunks taken since the last call are written: their memory may be overwritten from now on. */
  reuse(): void {
    // The largest are kept: a seal of a long tail takes several at once, a commit one. In place: it
    // runs once a stream a commit, and sorting copies of the lists was 17 MB of the writer thread's
    // garbage on the record benchmark.
    for (const buffer of this.taken) this.free.push(buffer);
    this.taken.length = 0;
    while (this.free.length > CHUNK_BUFFERS_KEPT) {
      let smallest = 0;
      for (let i = 1; i < this.free.length; i++)
        if (this.free[i]!.length < this.free[smallest]!.length) smallest = i;
      this.free[smallest] = this.free[this.free.length - 1]!;
      this.free.pop();
    }
  }
}

/** Buffers a ChunkBuffers keeps for reuse: a seal's chunk and its rest, with room to spare. */
const CHUNK_BUFFERS_KEPT = 4;

/**
 * Assembles blocks (of one stream, in time order) into a chunk, in memory of its own or, when given,
 * taken from `buffers` (valid until their next `reuse()`).
 */
export function assembleChunk(
  columns: readonly ChunkColumn[],
  blocks: readonly EncodedBlock[],
  buffers?: ChunkBuffers,
): Uint8Array {
  const n = blocks.reduce((sum, b) => sum + b.rows, 0);
  const begin = blocks[0]!.begin;
  // Written by hand: the column list is the same string for every chunk of a stream.
  const header = `{"n":${n},"begin":${begin},"columns":${columnList(columns)}}`;
  const headerLength = Buffer.byteLength(header, 'utf8');
  const table = tableScratch;
  table.reset();
  table.varint(blocks.length);
  for (const b of blocks) {
    table.varint(b.rows);
    table.varint(b.bytes.length);
    table.varint(b.begin - begin);
    table.varint(b.end - b.begin);
    table.u32((b.crc ??= crc32(b.bytes)));
  }
  const tableBytes = table.finish();
  const size = 16 + headerLength + tableBytes.length + blocks.reduce((sum, b) => sum + b.bytes.length, 0);
  const out = buffers ? buffers.take(size) : Buffer.allocUnsafe(size);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(headerLength, 4);
  out.writeUInt32LE(tableBytes.length, 8);
  out.write(header, 16, 'utf8');
  let offset = 16 + headerLength;
  out.set(tableBytes, offset);
  offset += tableBytes.length;
  out.writeUInt32LE(crc32(out.subarray(16, offset), crc32(out.subarray(0, 12))), 12);
  for (const b of blocks) {
    out.set(b.bytes, offset);
    offset += b.bytes.length;
  }
  return out;
}

/** The block table of the chunk being assembled (copied into it): one writer, not one per chunk. */
const tableScratch = new ByteWriter(1024);

// ---- decoding --------------------------------------------------------------------------------------

/** No chunk simrec writes comes near these; a header claiming more is damage, not data. */
const MAX_CHUNK_SAMPLES = 1 << 22;
const MAX_INFLATED_BYTES = 256 * 1024 * 1024;

export interface BlockRef {
  rows: number;
  begin: number;
  end: number;
  offset: number;
  bytes: number;
  /** CRC-32 of the block's bytes, checked before the block is decoded. */
  crc: number;
}

/**
 * Where a chunk's bytes come from: all of them in memory, or ranges read on demand (a backend whose
 * storage can read part of a chunk cheaply; SQLite cannot: it loads a blob whole before substr()).
 */
export interface ChunkBytes {
  readonly size: number;
  /** Bytes [offset, offset + length). */
  read(offset: number, length: number): Uint8Array;
}

export function bytesInMemory(data: Uint8Array): ChunkBytes {
  // A plain Uint8Array over a Buffer's bytes: a Buffer's subarray (every block, every column record) is
  // Node's own JavaScript, a tenth of a cold trajectory's time; a Uint8Array's is V8's.
  const bytes = Buffer.isBuffer(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : data;
  return { size: bytes.length, read: (offset, length) => bytes.subarray(offset, offset + length) };
}

export const isChunkV2 = (data: Uint8Array): boolean =>
  data.length >= 4 && data[0] === 0x53 && data[1] === 0x52 && data[2] === 0x43 && data[3] === 0x32;

/** A chunk whose checksum and layout have been checked; blocks are decoded on demand. */
export class ParsedChunk {
  readonly n: number;
  readonly columns: readonly ChunkColumn[];
  readonly blocks: readonly BlockRef[];
  private readonly source: ChunkBytes;
  /** The whole chunk, once read at once (a chunk read on): blocks are cut from it. */
  private whole: Uint8Array | null = null;
  private readonly where: string;

  private constructor(
    source: ChunkBytes,
    where: string,
    n: number,
    columns: readonly ChunkColumn[],
    blocks: BlockRef[],
  ) {
    this.source = source;
    this.where = where;
    this.n = n;
    this.columns = columns;
    this.blocks = blocks;
  }

  /** Checks the chunk's checksum and structure; `where` names it in errors (run, stream, chunk id). */
  static parse(data: Uint8Array, where: string): ParsedChunk {
    return ParsedChunk.open(bytesInMemory(data), where);
  }

  /** The same, reading from the source only the frame now, and each block when it is decoded. */
  static open(source: ChunkBytes, where: string): ParsedChunk {
    const corrupt = (why: string): SimrecError => new SimrecError('io', `${where}: corrupt chunk (${why})`);
    if (source.size < 16) throw corrupt('shorter than its frame');
    const start = source.read(0, 16);
    if (!isChunkV2(start)) throw corrupt('bad magic');
    const lengths = Buffer.from(start.buffer, start.byteOffset, 16);
    const frameEnd = 16 + lengths.readUInt32LE(4) + lengths.readUInt32LE(8);
    if (frameEnd > source.size) throw corrupt(`frame of ${frameEnd} bytes in a chunk of ${source.size}`);
    const frame = source.read(0, frameEnd);
    const buf = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
    const headerLength = buf.readUInt32LE(4);
    const stored = buf.readUInt32LE(12);
    const actual = crc32(buf.subarray(16, frameEnd), crc32(buf.subarray(0, 12)));
    if (stored !== actual)
      throw corrupt(
        `checksum mismatch: stored ${hex(stored)}, computed ${hex(actual)}; the stored bytes are damaged`,
      );
    try {
      const headerText = buf.toString('utf8', 16, 16 + headerLength);
      const header = JSON.parse(headerText) as {
        n: unknown;
        begin: unknown;
        columns: unknown;
      };
      if (!Number.isSafeInteger(header.begin)) throw corrupt(`header's begin is ${String(header.begin)}`);
      const chunkBegin = header.begin as number;
      const n = header.n;
      if (!Number.isSafeInteger(n) || (n as number) < 1 || (n as number) > MAX_CHUNK_SAMPLES)
        throw corrupt(`header claims ${String(n)} samples, expected 1..${MAX_CHUNK_SAMPLES}`);
      if (!Array.isArray(header.columns)) throw corrupt('header has no column list');
      const columns = parsedColumns(header.columns, headerText, corrupt);
      const table = new ByteReader(buf.subarray(16 + headerLength, frameEnd));
      const count = table.varint();
      const blocks: BlockRef[] = [];
      let rows = 0;
      let offset = frameEnd;
      for (let i = 0; i < count; i++) {
        const r = table.varint();
        const b = table.varint();
        const begin = chunkBegin + table.varint();
        const end = begin + table.varint();
        const crc = table.u32();
        if (r < 1) throw corrupt(`block ${i} has ${r} rows`);
        blocks.push({ rows: r, begin, end, offset, bytes: b, crc });
        rows += r;
        offset += b;
      }
      if (rows !== n) throw corrupt(`blocks hold ${rows} rows, the header says ${n}`);
      if (offset !== source.size) throw corrupt(`blocks end at byte ${offset}, the chunk has ${source.size}`);
      return new ParsedChunk(source, where, n as number, columns, blocks);
    } catch (error) {
      if (error instanceof SimrecError) throw error;
      throw corrupt((error as Error).message);
    }
  }

  /** Index of the last block that begins at or before t, or -1. */
  blockAtOrBefore(t: number): number {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.blocks[mid]!.begin <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** Decodes block i; only the fields named in `fields` when given (t and step always). */
  decodeBlock(i: number, fields?: ReadonlySet<string>, into?: RowsTarget): ColumnBatch {
    const ref = this.blocks[i]!;
    const bytes = this.checkedBlock(i);
    try {
      return decodeBlockBytes(bytes, ref.rows, ref.begin, this.columns, fields, into);
    } catch (error) {
      if (error instanceof SimrecError) throw error;
      throw new SimrecError('io', `${this.where}: corrupt chunk (block ${i}: ${(error as Error).message})`);
    }
  }

  /** Block i as it is encoded, once its checksum holds (to be assembled into another chunk). */
  encodedBlock(i: number): EncodedBlock {
    const ref = this.blocks[i]!;
    return { rows: ref.rows, begin: ref.begin, end: ref.end, bytes: this.checkedBlock(i), crc: ref.crc };
  }

  /** Block i's bytes, once its checksum holds. */
  private checkedBlock(i: number): Uint8Array {
    const ref = this.blocks[i]!;
    const bytes = this.whole
      ? this.whole.subarray(ref.offset, ref.offset + ref.bytes)
      : this.source.read(ref.offset, ref.bytes);
    if (bytes.length !== ref.bytes)
      throw new SimrecError(
        'io',
        `${this.where}: corrupt chunk (block ${i}: ${bytes.length} bytes read, ${ref.bytes} expected)`,
      );
    const actual = crc32(bytes);
    if (actual !== ref.crc)
      throw new SimrecError(
        'io',
        `${this.where}: corrupt chunk (block ${i}: checksum mismatch: stored ${hex(ref.crc)}, computed ${hex(actual)}; the stored bytes are damaged)`,
      );
    return bytes;
  }

  /** Reads the rest of the chunk at once: its blocks are about to be decoded one after another. */
  loadAll(): void {
    this.whole ??= this.source.read(0, this.source.size);
  }

  /**
   * The whole chunk as one batch: each block decoded straight into chunk-wide columns (rows of a block
   * without a column are NaN or undefined there, as a block's absent values; a column no block has is
   * left out).
   */
  decodeAll(fields?: ReadonlySet<string>): ColumnBatch {
    this.loadAll();
    if (this.blocks.length === 1) return this.decodeBlock(0, fields);
    const target = rowsTarget(this.n);
    this.decodeInto(target, fields);
    return orderedColumns(target, [this.columns]);
  }

  /**
   * Every block decoded straight into `target` from its row `row` on, which it moves past them: a
   * chunk-wide column (decodeAll), or the columns of a read that joins chunks (a trajectory).
   */
  decodeInto(target: RowsTarget, fields?: ReadonlySet<string>): void {
    this.loadAll();
    for (let i = 0; i < this.blocks.length; i++) {
      const rows = this.blocks[i]!.rows;
      const block = this.decodeBlock(i, fields, target);
      markAbsentRows(target, block, rows);
      target.row += rows;
    }
  }
}

/**
 * Columns `n` rows long that rows are decoded or copied into. Its columns are made as rows first bring
 * them (targetColumn): made for every declared column up front, those no block has (12 of the
 * benchmark's 20) were a tenth of a trajectory's time, allocated, filled and deleted again.
 */
export function rowsTarget(n: number): RowsTarget {
  return { batch: { t: new Float64Array(n), step: new Float64Array(n), columns: {} }, row: 0, n };
}

/** A target's column for `column`, made when rows first bring it (no value in the rows before). */
export function targetColumn(target: RowsTarget, column: ChunkColumn): ColumnValues {
  let whole = target.batch.columns[column.name];
  if (whole === undefined) {
    whole =
      column.type === 'string' || column.type === 'json'
        ? new Array<unknown>(target.n)
        : new Float64Array(target.n * (column.length ?? 1));
    markAbsent(whole, 0, target.row, column.length ?? 1);
    target.batch.columns[column.name] = whole;
  }
  return whole;
}

/**
 * A filled target as a batch, its columns in the chunks' column order (declared fields first, then the
 * undeclared ones as chunks brought them).
 */
export function orderedColumns(
  target: RowsTarget,
  chunkColumns: readonly (readonly ChunkColumn[])[],
): ColumnBatch {
  const columns: Record<string, ColumnValues> = {};
  for (const list of chunkColumns)
    for (const c of list) {
      const values = target.batch.columns[c.name];
      if (values !== undefined && !(c.name in columns)) columns[c.name] = values;
    }
  return { t: target.batch.t, step: target.batch.step, columns };
}

/**
 * The target's next `rows` rows marked as having no value in the columns earlier rows brought and
 * `rowsBatch` (what those rows hold) lacks.
 */
export function markAbsentRows(target: RowsTarget, rowsBatch: ColumnBatch, rows: number): void {
  for (const name in target.batch.columns) {
    if (rowsBatch.columns[name] !== undefined) continue;
    const values = target.batch.columns[name]!;
    markAbsent(values, target.row, rows, values instanceof Float64Array ? values.length / target.n : 1);
  }
}

/** Rows [from, from + rows) of a chunk-wide column marked as having no value (NaN, undefined). */
function markAbsent(values: ColumnValues, from: number, rows: number, width: number): void {
  if (values instanceof Float64Array) values.fill(NaN, from * width, (from + rows) * width);
  else values.fill(undefined, from, from + rows);
}

/** An encoded block on its own (a tail block about to be packed again with its neighbours). */
export function decodeEncodedBlock(block: EncodedBlock, columns: readonly ChunkColumn[]): ColumnBatch {
  try {
    return decodeBlockBytes(block.bytes, block.rows, block.begin, columns, undefined);
  } catch (error) {
    if (error instanceof SimrecError) throw error;
    throw new SimrecError('io', `corrupt block (${(error as Error).message})`);
  }
}

const hex = (v: number): string => `0x${v.toString(16).padStart(8, '0')}`;

/** Where decoded rows go: columns `n` rows long (a whole chunk's, or a joined read's), from row `row` on. */
export interface RowsTarget {
  batch: ColumnBatch;
  row: number;
  /** The length of a column made for a column rows bring first. */
  n: number;
}

/**
 * A block's columns. With `into`, they are written into the chunk-wide columns instead, and the batch
 * returned names those (its columns say which ones the block had).
 */
function decodeBlockBytes(
  bytes: Uint8Array,
  rows: number,
  begin: number,
  columns: readonly ChunkColumn[],
  fields: ReadonlySet<string> | undefined,
  into?: RowsTarget,
): ColumnBatch {
  const input = new ByteReader(bytes);
  let t: Float64Array | null = null;
  let step: Float64Array | null = null;
  const out: Record<string, ColumnValues> = {};
  while (!input.done) {
    const index = input.varint();
    const codecByte = input.u8();
    const codec = codecByte & ~FLAG_PRESENCE;
    const length = input.varint();
    const payload = input.take(length);
    if (index === T_INDEX || index === STEP_INDEX) {
      const target = into && (index === T_INDEX ? into.batch.t : into.batch.step);
      const values = decodeNumbers(
        codec,
        payload,
        rows,
        index === T_INDEX ? begin : 0,
        target ? target.subarray(into.row, into.row + rows) : undefined,
      );
      if (index === T_INDEX) t = values;
      else step = values;
      continue;
    }
    const column = columns[index - FIRST_FIELD_INDEX];
    if (!column)
      throw new Error(`record for column ${index - FIRST_FIELD_INDEX}, the chunk has ${columns.length}`);
    if (fields && !fields.has(column.name)) continue;
    let presence: Uint8Array | null = null;
    let body = payload;
    let present = rows;
    if (codecByte & FLAG_PRESENCE) {
      const size = (rows + 7) >> 3;
      if (payload.length < size) throw new Error(`column ${column.name}: presence bitmap cut short`);
      presence = payload.subarray(0, size);
      body = payload.subarray(size);
      present = 0;
      for (let i = 0; i < rows; i++) if (presence[i >> 3]! & (1 << (i & 7))) present++;
    }
    const whole = into && targetColumn(into, column);
    if (whole === undefined) out[column.name] = decodeColumn(column, codec, body, present, rows, presence);
    else {
      decodeColumnInto(column, codec, body, present, rows, presence, whole, into!.row);
      out[column.name] = whole;
    }
  }
  if (!t || !step) throw new Error('block has no time or step column');
  return { t, step, columns: out };
}

/** A numeric record's n values, into `target` when given (n values long), else into an array of their own. */
function decodeNumbers(
  codec: number,
  payload: Uint8Array,
  n: number,
  origin = 0,
  target?: Float64Array,
): Float64Array {
  switch (codec) {
    case CODEC.constantInteger:
      return (target ?? new Float64Array(n)).fill(new ByteReader(payload).zigzag());
    case CODEC.raw: {
      if (payload.length !== n * 8) throw new Error(`raw column of ${payload.length} bytes for ${n} values`);
      // Copied: the payload may sit at any offset, and a Float64Array needs 8-byte alignment.
      const out = target ?? new Float64Array(n);
      new Uint8Array(out.buffer, out.byteOffset, n * 8).set(payload);
      return out;
    }
    case CODEC.arithmetic: {
      const input = new ByteReader(payload);
      const start = origin + input.zigzag();
      const delta = input.zigzag();
      const out = target ?? new Float64Array(n);
      for (let i = 0; i < n; i++) out[i] = start + delta * i;
      return out;
    }
    case CODEC.constant: {
      if (payload.length !== 8) throw new Error(`constant of ${payload.length} bytes`);
      return (target ?? new Float64Array(n)).fill(readFloat64(payload));
    }
    case CODEC.floatLinear:
    case CODEC.floatPrevious:
    case CODEC.floatLinearRotated:
    case CODEC.floatPreviousRotated:
    case CODEC.floatLinearDifference:
    case CODEC.floatPreviousDifference:
      return unpackFloat64(aligned(payload), n, FLOAT_PACKINGS.get(codec)!, target);
    case CODEC.float32:
    case CODEC.float32LinearDifference:
    case CODEC.float32PreviousDifference:
    case CODEC.float32LinearRotated:
    case CODEC.float32PreviousRotated:
      return unpackFloat32(aligned(payload), n, FLOAT32_PACKINGS.get(codec)!, target);
    case CODEC.intDelta:
      return unpackIntegers(aligned(payload), n, 1, target);
    case CODEC.intDeltaOfDelta:
      return unpackIntegers(aligned(payload), n, 2, target);
    default:
      throw new Error(`codec ${codec} is not a numeric codec`);
  }
}

/**
 * A column's block of rows written into a chunk-wide column from row `row` on: numbers and dictionary
 * strings decoded in place, anything else decoded on its own and copied.
 */
function decodeColumnInto(
  column: ChunkColumn,
  codec: number,
  body: Uint8Array,
  present: number,
  rows: number,
  presence: Uint8Array | null,
  whole: ColumnValues,
  row: number,
): void {
  if (presence === null && whole instanceof Float64Array && column.type !== 'vec' && codec !== CODEC.bits) {
    decodeNumbers(codec, body, rows, 0, whole.subarray(row, row + rows));
    return;
  }
  if (presence === null && Array.isArray(whole) && codec === CODEC.dictionary) {
    decodeDictionary(body, rows, whole, row);
    return;
  }
  const values = decodeColumn(column, codec, body, present, rows, presence);
  if (whole instanceof Float64Array) whole.set(values as Float64Array, row * (column.length ?? 1));
  else for (let i = 0; i < rows; i++) whole[row + i] = values[i];
}

function decodeColumn(
  column: ChunkColumn,
  codec: number,
  body: Uint8Array,
  present: number,
  rows: number,
  presence: Uint8Array | null,
): ColumnValues {
  const has = (i: number): boolean => presence === null || (presence[i >> 3]! & (1 << (i & 7))) !== 0;
  if (column.type === 'vec') {
    if (codec !== CODEC.vector) throw new Error(`vec column ${column.name} with codec ${codec}`);
    const len = column.length!;
    const components = readSubRecords(body, present, len);
    const out = new Float64Array(rows * len);
    for (let i = 0, j = 0; i < rows; i++) {
      if (!has(i)) {
        for (let k = 0; k < len; k++) out[i * len + k] = NaN;
        continue;
      }
      for (let k = 0; k < len; k++) out[i * len + k] = components[k]![j]!;
      j++;
    }
    return out;
  }
  if (column.type === 'string' || column.type === 'json') {
    let dense: unknown[];
    if (codec === CODEC.bits) dense = Array.from(decodeBits(body, present), (v) => v === 1);
    else if (
      codec !== CODEC.dictionary &&
      codec !== CODEC.jsonShape &&
      codec !== CODEC.jsonText &&
      codec !== CODEC.jsonDeflated
    )
      // A field that changed type mid-recording became json; its earlier records are numbers.
      dense = Array.from(decodeNumbers(codec, body, present));
    else if (codec === CODEC.dictionary) dense = decodeDictionary(body, present);
    else if (codec === CODEC.jsonShape) dense = decodeJsonShape(body, present);
    else if (codec === CODEC.jsonText || codec === CODEC.jsonDeflated) {
      const text =
        codec === CODEC.jsonText ? body : inflateRawSync(body, { maxOutputLength: MAX_INFLATED_BYTES });
      const parsed = JSON.parse(decodeUtf8(text)) as unknown;
      if (!Array.isArray(parsed) || parsed.length !== present)
        throw new Error(
          `column ${column.name} holds ${Array.isArray(parsed) ? parsed.length : 'no'} values, expected ${present}`,
        );
      dense = parsed;
    } else throw new Error(`column ${column.name} (${column.type}) with codec ${codec}`);
    if (presence === null) return dense;
    const out = new Array<unknown>(rows);
    for (let i = 0, j = 0; i < rows; i++) out[i] = has(i) ? dense[j++] : undefined;
    return out;
  }
  const dense = codec === CODEC.bits ? decodeBits(body, present) : decodeNumbers(codec, body, present);
  if (presence === null) return dense;
  const out = new Float64Array(rows);
  for (let i = 0, j = 0; i < rows; i++) out[i] = has(i) ? dense[j++]! : NaN;
  return out;
}

function decodeBits(body: Uint8Array, n: number): Float64Array {
  if (body.length < (n + 7) >> 3) throw new Error('bool column cut short');
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = body[i >> 3]! & (1 << (i & 7)) ? 1 : 0;
  return out;
}

/** Float sub-records (vector components, JSON leaves), indexed 0..count-1. */
function readSubRecords(body: Uint8Array, n: number, count: number): Float64Array[] {
  const input = new ByteReader(body);
  const out: Float64Array[] = [];
  while (!input.done) {
    const index = input.varint();
    const codec = input.u8() & ~FLAG_PRESENCE;
    const payload = input.take(input.varint());
    if (index !== out.length) throw new Error(`sub-record ${index} out of order`);
    out.push(decodeNumbers(codec, payload, n));
  }
  if (out.length !== count) throw new Error(`${out.length} sub-records, expected ${count}`);
  return out;
}

/**
 * A dictionary record's n strings, into `out` from `offset` on when given. A fresh array is made n long
 * (holey), as chunk-wide columns are (targetColumn): one grown from empty was another kind of array to V8,
 * and the scene code optimised for either was thrown away at the first row of the other.
 */
function decodeDictionary(
  body: Uint8Array,
  n: number,
  out: unknown[] = new Array<unknown>(n),
  offset = 0,
): unknown[] {
  const input = new ByteReader(body);
  const size = input.varint();
  if (size > n) throw new Error(`string dictionary of ${size} values for ${n} rows`);
  const dict: string[] = [];
  for (let i = 0; i < size; i++) dict.push(input.string());
  const runs = input.varint();
  let filled = 0;
  for (let r = 0; r < runs; r++) {
    const v = dict[input.varint()];
    const count = input.varint();
    if (v === undefined) throw new Error('string column names a value it does not have');
    if (filled + count > n) throw new Error(`string column has more than ${n} values`);
    for (let k = 0; k < count; k++) out[offset + filled + k] = v;
    filled += count;
  }
  if (filled !== n) throw new Error(`string column has ${filled} values, expected ${n}`);
  return out;
}

function decodeJsonShape(body: Uint8Array, n: number): unknown[] {
  const input = new ByteReader(body);
  const shape = decodeUtf8(input.take(input.varint()));
  const perValue = input.varint();
  const leaves = readSubRecords(body.subarray(input.offset), n, perValue);
  // The shape with zeros parses to a skeleton; each value is the skeleton with its own numbers.
  const skeleton = JSON.parse(shape.replace(/#/g, '0')) as unknown;
  const out = new Array<unknown>(n);
  for (let i = 0; i < n; i++) {
    let k = 0;
    const fill = (node: unknown): unknown => {
      if (typeof node === 'number') return leaves[k++]![i]!;
      if (typeof node !== 'object' || node === null) return node;
      if (Array.isArray(node)) return node.map(fill);
      const o: Record<string, unknown> = {};
      for (const key of Object.keys(node)) o[key] = fill((node as Record<string, unknown>)[key]);
      return o;
    };
    out[i] = fill(skeleton);
    if (k !== perValue) throw new Error(`JSON shape has ${k} numbers, its column ${perValue}`);
  }
  return out;
}

function readFloat64(bytes: Uint8Array): number {
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getFloat64(0, true);
}

/**
 * Bit streams are read as 32-bit words: a payload at an odd offset is copied to an aligned one, a buffer
 * reused for every payload (the decoders read it and return arrays of their own; a copy allocated per
 * column was most of a scene's garbage).
 */
let alignedScratch = new Uint32Array(1024);
function aligned(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset % 4 === 0) return bytes;
  const words = (bytes.length + 3) >>> 2;
  if (alignedScratch.length < words)
    alignedScratch = new Uint32Array(Math.max(words, 2 * alignedScratch.length));
  const copy = new Uint8Array(alignedScratch.buffer, 0, bytes.length);
  copy.set(bytes);
  return copy;
}

/** Batches of one stream, in time order, as one (columns absent in some are absent in those rows). */
export function concatBatches(batches: readonly ColumnBatch[], columns: readonly ChunkColumn[]): ColumnBatch {
  if (batches.length === 1) return batches[0]!;
  const n = batches.reduce((sum, b) => sum + b.t.length, 0);
  const t = new Float64Array(n);
  const step = new Float64Array(n);
  let offset = 0;
  for (const b of batches) {
    t.set(b.t, offset);
    step.set(b.step, offset);
    offset += b.t.length;
  }
  const out: Record<string, ColumnValues> = {};
  for (const column of columns) {
    if (!batches.some((b) => column.name in b.columns)) continue;
    const width = column.type === 'vec' ? column.length! : 1;
    const numeric = column.type !== 'string' && column.type !== 'json';
    const values: ColumnValues = numeric ? new Float64Array(n * width).fill(NaN) : new Array<unknown>(n);
    let row = 0;
    for (const b of batches) {
      const part = b.columns[column.name];
      if (part !== undefined) {
        if (numeric) (values as Float64Array).set(part as Float64Array, row * width);
        else for (let i = 0; i < b.t.length; i++) (values as unknown[])[row + i] = (part as unknown[])[i];
      }
      row += b.t.length;
    }
    out[column.name] = values;
  }
  return { t, step, columns: out };
}
