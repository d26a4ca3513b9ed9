import { crc32, deflateRawSync } from 'node:zlib';
import type { ColumnBatch, ColumnValues } from '../../model/columns.js';
import { FloatPackingMemo, packFloat32, packFloat64, type FloatPacking, packIntegers } from './bit-codec.js';
import { ByteWriter } from '../../model/bytes.js';
import {
  CODEC,
  describeColumn,
  FIRST_FIELD_INDEX,
  FLAG_PRESENCE,
  FLOAT32_PACKINGS,
  FLOAT_PACKINGS,
  MAGIC,
  STEP_INDEX,
  T_INDEX,
  type BlockPacking,
  type ChunkColumn,
  type EncodedBlock,
} from './chunk-codes.js';

/**
 * The chunk's writing side (its layout: chunk-codes.ts): a batch's rows encoded as a block, each column
 * in its smallest form, and blocks assembled into a chunk.
 */

/**
 * Each map the other way, by predictor then residual: iterating a Map made an entry array per step, a
 * large share of what the writer thread allocated (performance-history.md).
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

/** JSON text at least this long is tried with deflate: labels and small objects are not worth a call. */
const DEFLATE_JSON_FROM = 512;

const columnLists = new WeakMap<readonly ChunkColumn[], { count: number; json: string }>();
/** The header's JSON list of columns, kept per list (which only grows: undeclared fields are appended). */
function columnList(columns: readonly ChunkColumn[]): string {
  const known = columnLists.get(columns);
  if (known && known.count === columns.length && !columns.some((c) => c.type === 'json')) return known.json;
  const json = JSON.stringify(columns.map(describeColumn));
  columnLists.set(columns, { count: columns.length, json });
  return json;
}

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
 * its size. A writer allocated per block, at twice a block's usual size, cost the writer thread time in
 * sealing and kept the slack alive until the chunk was assembled.
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
  const list = values;
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
 * it, found by walking both instead of writing its text (a string per value cost the writer
 * thread time on every wheel state). Its numbers are pushed to `leaves`.
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
 * a seal here and calls `reuse()` once they are written. A buffer of their own per chunk (each commit's
 * tail chunks and each seal's chunks) was garbage whose memory the writer thread's collector gave back
 * late: sealed chunks often outlived a young collection and then waited for one of the old generation,
 * which raised peak resident memory and slowed recording (performance-history.md).
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
    // runs once a stream a commit, and sorting copies of the lists was garbage the writer thread
    // collected on every commit.
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
