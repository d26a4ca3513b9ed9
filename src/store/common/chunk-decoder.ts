import { crc32, inflateRawSync } from 'node:zlib';
import type { ColumnBatch, ColumnValues, EntryHead, SampleEntry } from '../../model/columns.js';
import { SimrecError } from '../../model/errors.js';
import { FIELD_TYPES, type FieldType, type Sample } from '../../model/stream.js';
import { unpackFloat32, unpackFloat64, unpackIntegers } from './bit-codec.js';
import { ByteReader, decodeUtf8 } from '../../model/bytes.js';
import { BlockTable } from './block-table.js';
import {
  CODEC,
  FIRST_FIELD_INDEX,
  FLAG_PRESENCE,
  FLOAT32_PACKINGS,
  FLOAT_PACKINGS,
  isChunkV2,
  STEP_INDEX,
  T_INDEX,
  type ChunkColumn,
  type EncodedBlock,
} from './chunk-codes.js';
import {
  markAbsentRows,
  orderedColumns,
  packedTarget,
  rowsTarget,
  targetColumn,
  valuesPerRow,
  type RowsTarget,
} from './chunk-rows.js';

/**
 * The chunk's reading side (its layout: chunk-codes.ts): a chunk's frame checked and parsed, its blocks
 * checked and decoded on demand, into columns of their own or straight into a read's (chunk-rows.ts).
 */

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

/** No chunk simrec writes comes near these; a header claiming more is damage, not data. */
const MAX_CHUNK_SAMPLES = 1 << 22;
const MAX_INFLATED_BYTES = 256 * 1024 * 1024;
/** A block's record in a chunk's table: rows, bytes, begin and length as varints, then its CRC-32. */
const MIN_BLOCK_RECORD_BYTES = 4 + 4;

/**
 * Where a chunk's bytes come from: all of them in memory, or ranges read on demand (a backend whose
 * storage can read part of a chunk cheaply; SQLite cannot: it loads a blob whole before substr()).
 */
export interface ChunkBytes {
  readonly size: number;
  /** Bytes [offset, offset + length). */
  read(offset: number, length: number): Uint8Array;
  /** Drops what it holds of the blocks (read again when asked); a source in memory holds on. */
  release?(): void;
}

export function bytesInMemory(data: Uint8Array): ChunkBytes {
  const bytes = plainBytes(data);
  return { size: bytes.length, read: (offset, length) => bytes.subarray(offset, offset + length) };
}

/**
 * A plain Uint8Array over a Buffer's bytes: a Buffer's subarray (every block, every column record) is
 * Node's own JavaScript, a tenth of a cold trajectory's time; a Uint8Array's is V8's.
 */
export function plainBytes(data: Uint8Array): Uint8Array {
  return Buffer.isBuffer(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : data;
}

/** A chunk whose checksum and layout have been checked; blocks are decoded on demand. */
export class ParsedChunk {
  readonly n: number;
  readonly columns: readonly ChunkColumn[];
  readonly blocks: BlockTable;
  private readonly source: ChunkBytes;
  /** Every block, once read at once (a chunk read on): blocks are cut from it. */
  private whole: Uint8Array | null = null;
  /** Where `whole` begins in the chunk: its first block's offset (the frame is read already). */
  private wholeOffset = 0;
  private readonly where: string;

  private constructor(
    source: ChunkBytes,
    where: string,
    n: number,
    columns: readonly ChunkColumn[],
    blocks: BlockTable,
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
    // Read as a Uint8Array: Buffer's readers and subarray are Node's own JavaScript, cold in a fresh
    // process whose first scene opens a chunk of every actor.
    const frameEnd = 16 + u32(start, 4) + u32(start, 8);
    if (frameEnd > source.size) throw corrupt(`frame of ${frameEnd} bytes in a chunk of ${source.size}`);
    const frame = source.read(0, frameEnd);
    const headerLength = u32(frame, 4);
    const stored = u32(frame, 12);
    const actual = crc32(frame.subarray(16, frameEnd), crc32(frame.subarray(0, 12)));
    if (stored !== actual)
      throw corrupt(
        `checksum mismatch: stored ${hex(stored)}, computed ${hex(actual)}; the stored bytes are damaged`,
      );
    try {
      const headerText = decodeUtf8(frame.subarray(16, 16 + headerLength));
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
      const tableBytes = frame.subarray(16 + headerLength, frameEnd);
      const table = new ByteReader(tableBytes);
      const count = table.varint();
      // Each block's record takes at least this many bytes: a larger count is damage, and is not
      // to be given room for.
      if (count > tableBytes.length / MIN_BLOCK_RECORD_BYTES)
        throw corrupt(`block table claims ${count} blocks in ${tableBytes.length} bytes`);
      const blocks = new BlockTable(count);
      let rows = 0;
      let offset = frameEnd;
      for (let i = 0; i < count; i++) {
        const r = table.varint();
        const b = table.varint();
        const begin = chunkBegin + table.varint();
        const end = begin + table.varint();
        const crc = table.u32();
        if (r < 1) throw corrupt(`block ${i} has ${r} rows`);
        blocks.set(i, r, begin, end, offset, b, crc);
        rows += r;
        offset += b;
      }
      if (rows !== n) throw corrupt(`blocks hold ${rows} rows, the header says ${n as number}`);
      if (offset !== source.size) throw corrupt(`blocks end at byte ${offset}, the chunk has ${source.size}`);
      return new ParsedChunk(source, where, n, columns, blocks);
    } catch (error) {
      if (error instanceof SimrecError) throw error;
      throw corrupt((error as Error).message);
    }
  }

  /** The chunk's stored bytes, frame and blocks. */
  get size(): number {
    return this.source.size;
  }

  /** Index of the last block that begins at or before t, or -1. */
  blockAtOrBefore(t: number): number {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.blocks.begin(mid) <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** Decodes block i; only the fields named in `fields` when given (t and step always). */
  decodeBlock(i: number, fields?: ReadonlySet<string>, into?: RowsTarget): ColumnBatch {
    return this.readBlock(i, (bytes) =>
      decodeBlockBytes(bytes, this.blocks.rows(i), this.blocks.begin(i), this.columns, fields, into),
    );
  }

  /**
   * The last row of block i at or before t as a sample (what sampleAt makes of it once the block is
   * decoded), each column decoded only as far as that row and into no array of its own; undefined when
   * the block begins after t. For a chunk's first look (a scene in a fresh process), which decodes one
   * row of 200 blocks and keeps none of them: decoding the blocks whole was most of its time. With
   * `head`, the row is made as a scene's entry instead (entryAt: id and kind first, no step).
   */
  sampleAtOrBefore(i: number, t: number, head?: EntryHead): Sample | SampleEntry | undefined {
    return this.readBlock(i, (bytes) =>
      blockSampleAtOrBefore(bytes, this.blocks.rows(i), this.blocks.begin(i), this.columns, t, head),
    );
  }

  /** `read` of block i's checked bytes; what it finds wrong is damage to the chunk, named so. */
  private readBlock<T>(i: number, read: (bytes: Uint8Array) => T): T {
    const bytes = this.checkedBlock(i);
    try {
      return read(bytes);
    } catch (error) {
      if (error instanceof SimrecError) throw error;
      throw new SimrecError('io', `${this.where}: corrupt chunk (block ${i}: ${(error as Error).message})`);
    }
  }

  /** Block i as it is encoded, once its checksum holds (to be assembled into another chunk). */
  encodedBlock(i: number): EncodedBlock {
    const b = this.blocks;
    return { rows: b.rows(i), begin: b.begin(i), end: b.end(i), bytes: this.checkedBlock(i), crc: b.crc(i) };
  }

  /** Block i's bytes, once its checksum holds. */
  private checkedBlock(i: number): Uint8Array {
    const offset = this.blocks.offset(i);
    const length = this.blocks.bytes(i);
    const stored = this.blocks.crc(i);
    const bytes = this.whole
      ? this.whole.subarray(offset - this.wholeOffset, offset - this.wholeOffset + length)
      : this.source.read(offset, length);
    if (bytes.length !== length)
      throw new SimrecError(
        'io',
        `${this.where}: corrupt chunk (block ${i}: ${bytes.length} bytes read, ${length} expected)`,
      );
    const actual = crc32(bytes);
    if (actual !== stored)
      throw new SimrecError(
        'io',
        `${this.where}: corrupt chunk (block ${i}: checksum mismatch: stored ${hex(stored)}, computed ${hex(actual)}; the stored bytes are damaged)`,
      );
    return bytes;
  }

  /** Reads the rest of the chunk at once: its blocks are about to be decoded one after another. */
  loadAll(): void {
    if (this.whole !== null) return;
    // From the first block on: a source that keeps the frame apart (SQLite's rows since schema 6)
    // gives its blocks as they are stored, without copying them behind the frame.
    this.wholeOffset = this.blocks.offset(0);
    this.whole = this.source.read(this.wholeOffset, this.source.size - this.wholeOffset);
  }

  /**
   * Forgets the blocks' bytes read so far (the frame stays): the chunk has been decoded whole and its
   * batch is kept elsewhere, so its stored bytes would only double what it holds. A later block read
   * fetches them again.
   */
  releaseBytes(): void {
    this.whole = null;
    this.source.release?.();
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
      const rows = this.blocks.rows(i);
      const block = this.decodeBlock(i, fields, target);
      markAbsentRows(target, block, rows);
      target.row += rows;
    }
  }
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

/** The little-endian unsigned 32-bit integer at `offset`. */
const u32 = (bytes: Uint8Array, offset: number): number =>
  (bytes[offset]! | (bytes[offset + 1]! << 8) | (bytes[offset + 2]! << 16) | (bytes[offset + 3]! << 24)) >>>
  0;

const hex = (v: number): string => `0x${v.toString(16).padStart(8, '0')}`;
/**
 * A block's columns. With `target`, they are written into its chunk-wide columns, and the batch
 * returned names those (its columns say which ones the block had); without, into columns of the block's
 * own (blockTarget).
 */
function decodeBlockBytes(
  bytes: Uint8Array,
  rows: number,
  begin: number,
  columns: readonly ChunkColumn[],
  fields: ReadonlySet<string> | undefined,
  target?: RowsTarget,
): ColumnBatch {
  const into = target ?? blockTarget(bytes, rows, columns, fields);
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
      const whole = index === T_INDEX ? into.batch.t : into.batch.step;
      const values = decodeNumbers(
        codec,
        payload,
        rows,
        index === T_INDEX ? begin : 0,
        whole.subarray(into.row, into.row + rows),
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
    const whole = targetColumn(into, column);
    decodeColumnInto(column, codec, body, present, rows, presence, whole, into.row);
    out[column.name] = whole;
  }
  if (!t || !step) throw new Error('block has no time or step column');
  return { t, step, columns: out };
}

/**
 * Where a block decoded on its own goes: a packedTarget for the columns it has records of, in their
 * order, found by reading those records first (a window over 300 actors decodes a block or two of each).
 */
function blockTarget(
  bytes: Uint8Array,
  rows: number,
  columns: readonly ChunkColumn[],
  fields: ReadonlySet<string> | undefined,
): RowsTarget {
  const present: ChunkColumn[] = [];
  for (const input = new ByteReader(bytes); !input.done;) {
    const index = input.varint();
    input.u8();
    input.take(input.varint());
    const column = columns[index - FIRST_FIELD_INDEX];
    if (!column || (fields && !fields.has(column.name)) || present.includes(column)) continue;
    present.push(column);
  }
  return packedTarget(rows, present);
}

/**
 * One row of a block: the last at or before `time` (its time column decoded whole, the one column
 * decoded whole), then each other column only up to that row. Values as sampleAt gives them: absent
 * fields left out, a bool column's 0 and 1 as booleans, a vector as an array of its own.
 */
function blockSampleAtOrBefore(
  bytes: Uint8Array,
  rows: number,
  begin: number,
  columns: readonly ChunkColumn[],
  time: number,
  head: EntryHead | undefined,
): Sample | SampleEntry | undefined {
  let row = -1;
  for (const input = new ByteReader(bytes); !input.done;) {
    const index = input.varint();
    const codec = input.u8() & ~FLAG_PRESENCE;
    const payload = input.take(input.varint());
    if (index !== T_INDEX) continue;
    const t = decodeNumbers(codec, payload, rows, begin, pointScratch(rows, 0));
    let lo = 0;
    let hi = rows;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (t[mid]! <= time) lo = mid + 1;
      else hi = mid;
    }
    row = lo - 1;
    if (row < 0) return undefined;
    break;
  }
  if (row < 0) throw new Error('block has no time column');
  // A sample, or an entry (its head first, no step): made as one of two shapes from the start.
  const sample: Record<string, unknown> & { t: number } = head
    ? { id: head.id, kind: head.kind, t: NaN }
    : { t: NaN, step: NaN };
  for (const input = new ByteReader(bytes); !input.done;) {
    const index = input.varint();
    const codecByte = input.u8();
    const codec = codecByte & ~FLAG_PRESENCE;
    const payload = input.take(input.varint());
    if (index === T_INDEX) sample.t = numberAt(codec, payload, row, begin);
    else if (index === STEP_INDEX && !head) sample.step = numberAt(codec, payload, row, 0);
    if (index === T_INDEX || index === STEP_INDEX) continue;
    const column = columns[index - FIRST_FIELD_INDEX];
    if (!column)
      throw new Error(`record for column ${index - FIRST_FIELD_INDEX}, the chunk has ${columns.length}`);
    let body = payload;
    // The row's place among the present values: rows before it without a value take no place.
    let dense = row;
    let present = rows;
    if (codecByte & FLAG_PRESENCE) {
      const size = (rows + 7) >> 3;
      if (payload.length < size) throw new Error(`column ${column.name}: presence bitmap cut short`);
      body = payload.subarray(size);
      present = 0;
      for (let i = 0; i < rows; i++) if (payload[i >> 3]! & (1 << (i & 7))) present++;
      if ((payload[row >> 3]! & (1 << (row & 7))) === 0) continue;
      dense = 0;
      for (let i = 0; i < row; i++) if (payload[i >> 3]! & (1 << (i & 7))) dense++;
    }
    const value = columnValueAt(column, codec, body, present, dense);
    if (value !== undefined) sample[column.name] = value;
  }
  if (!head && Number.isNaN(sample.step)) throw new Error('block has no step column');
  return sample as Sample | SampleEntry;
}

/** A column's value at its `dense`-th present value, as a sample has it (undefined: absent). */
function columnValueAt(
  column: ChunkColumn,
  codec: number,
  body: Uint8Array,
  present: number,
  dense: number,
): unknown {
  if (
    column.type === 'vec' ||
    codec === CODEC.jsonShape ||
    codec === CODEC.jsonText ||
    codec === CODEC.jsonDeflated
  ) {
    // Rare in a scene: decoded whole (as present values only), the one value taken.
    const values = decodeColumn(column, codec, body, present, present, null);
    if (column.type !== 'vec') return values[dense];
    const len = column.length!;
    const vector = (values as Float64Array).subarray(dense * len, dense * len + len);
    return Number.isNaN(vector[0]) ? undefined : Array.from(vector);
  }
  if (codec === CODEC.dictionary) return dictionaryValueAt(body, present, dense);
  const number =
    codec === CODEC.bits
      ? body.length < (present + 7) >> 3
        ? bitsCutShort()
        : (body[dense >> 3]! >> (dense & 7)) & 1
      : numberAt(codec, body, dense, 0);
  // As decodeColumn and sampleAt have them: a string or JSON column's numbers and bits kept as they are
  // (bits as booleans), a numeric column's NaN absent.
  if (column.type === 'string' || column.type === 'json') return codec === CODEC.bits ? number === 1 : number;
  if (Number.isNaN(number)) return undefined;
  return column.type === 'bool' ? number === 1 : number;
}

const bitsCutShort = (): never => {
  throw new Error('bool column cut short');
};

/** Value `i` of a numeric record, decoding it no further than that value. */
function numberAt(codec: number, payload: Uint8Array, i: number, origin: number): number {
  switch (codec) {
    case CODEC.constantInteger:
      return new ByteReader(payload).zigzag();
    case CODEC.constant:
      if (payload.length !== 8) throw new Error(`constant of ${payload.length} bytes`);
      return readFloat64(payload);
    case CODEC.raw:
      if (payload.length < (i + 1) * 8) throw new Error(`raw column of ${payload.length} bytes cut short`);
      return readFloat64(payload.subarray(i * 8, i * 8 + 8));
    case CODEC.arithmetic: {
      const input = new ByteReader(payload);
      const start = origin + input.zigzag();
      return start + input.zigzag() * i;
    }
    default:
      return decodeNumbers(codec, payload, i + 1, origin, pointScratch(i + 1, 1))[i]!;
  }
}

/** String `i` of a dictionary record, the runs before it skipped. */
function dictionaryValueAt(body: Uint8Array, n: number, i: number): string {
  const input = new ByteReader(body);
  const dict = readDictionary(input, n);
  const runs = input.varint();
  for (let r = 0, filled = 0; r < runs; r++) {
    const v = dict[input.varint()];
    filled += input.varint();
    if (v === undefined) throw new Error('string column names a value it does not have');
    if (filled > i) return v;
  }
  throw new Error(`string column has no value ${i}, expected ${n}`);
}

/** Scratch columns for one row's decoding (0: the time column, 1: the column being read). */
const pointScratches = [new Float64Array(256), new Float64Array(256)];
function pointScratch(n: number, which: 0 | 1): Float64Array {
  if (pointScratches[which]!.length < n)
    pointScratches[which] = new Float64Array(Math.max(n, 2 * pointScratches[which]!.length));
  return pointScratches[which]!.subarray(0, n);
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
  if (whole instanceof Float64Array) whole.set(values as Float64Array, row * valuesPerRow(column));
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
    } else throw new Error(`column ${column.name} (${String(column.type)}) with codec ${String(codec)}`);
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
  const dict = readDictionary(input, n);
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

/** A dictionary record's distinct strings (its first part), for n rows. */
function readDictionary(input: ByteReader, n: number): string[] {
  const size = input.varint();
  if (size > n) throw new Error(`string dictionary of ${size} values for ${n} rows`);
  const dict: string[] = [];
  for (let i = 0; i < size; i++) dict.push(input.string());
  return dict;
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
