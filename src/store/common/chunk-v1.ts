import { inflateRawSync } from 'node:zlib';
import { SimrecError } from '../../model/errors.js';
import { FIELD_TYPES, type FieldType } from '../../model/stream.js';
import { decodeUtf8 } from '../../model/bytes.js';

/**
 * The first chunk layout ("SRC1", simrec 0.1.0), kept to read the stores it wrote; nothing writes it
 * any more (chunk-codes.ts is today's). What follows is its original description.
 *
 * A chunk holds many consecutive samples of one stream, column by column, so that recording 200 actors
 * at 100 Hz writes a few large rows rather than millions of small ones. Chunks describe themselves
 * (field names and types are in their header), so a stream's schema may grow - undeclared fields
 * appear - without rewriting what is stored.
 *
 * Layout: "SRC1" | u32 header length | header JSON | body. The body is the columns' bytes one after
 * another, deflated when `deflate` is set. Each column names its codec; a column without one is in the
 * first layout (XOR with the previous value, byte-transposed), which stays readable.
 *
 * - `lin-lzb` (f64, i64): each value XOR-ed with a linear prediction from the two before it, stored as
 *   a 4-bit count of leading zero bytes and the remaining bytes. Positions and headings of moving actors
 *   are nearly linear over a step, so a prediction shares about half of their 8 bytes; lossless, every
 *   bit kept. Close to XOR + transpose + deflate in size at a fraction of the cost, which is what let
 *   recording stay ahead of the simulator.
 * - `lin-xor` (f64, i64): the same residuals at full width, byte-transposed: uncompressed, or for
 *   deflated chunks, since deflate entropy-codes the mostly-zero high byte planes better than counts do.
 * - `dict-rle` (string): distinct values once, then runs of indexes. A lane id changes a few times a
 *   minute, so 1,024 lane ids cost a few bytes instead of 8 KB of JSON.
 */

const MAGIC = 'SRC1';

/** Time and step columns: an arithmetic progression (fixed rate, the usual case) costs no bytes. */
type SequenceHeader = { kind: 'arith'; start: number; delta: number } | { kind: 'f64'; bytes: number };

interface ColumnHeader {
  name: string;
  type: FieldType;
  length?: number;
  /** Number of rows that have a value; when less than n, a presence bitmap precedes the values. */
  present: number;
  bytes: number;
  /** Absent in chunks of the first layout. */
  codec?: ColumnCodec;
}

type ColumnCodec = 'lin-lzb' | 'lin-xor' | 'dict-rle';

interface ChunkHeader {
  n: number;
  t: SequenceHeader;
  step: SequenceHeader;
  columns: ColumnHeader[];
  deflate: boolean;
}

/** The linear prediction of value i from the two before it; finite, so its bits are the same everywhere. */
function predict(values: Float64Array, i: number): number {
  if (i < 2) return i === 0 ? 0 : values[0]!;
  const p = 2 * values[i - 1]! - values[i - 2]!;
  return Number.isFinite(p) ? p : values[i - 1]!;
}

function undoLinearResiduals(residuals: Uint8Array, n: number): Float64Array {
  const values = new Float64Array(n);
  const words = new Uint32Array(values.buffer);
  const r = new Uint32Array(residuals.buffer, residuals.byteOffset, n * 2);
  const prediction = new Float64Array(1);
  const p = new Uint32Array(prediction.buffer);
  for (let i = 0; i < n; i++) {
    prediction[0] = predict(values, i);
    words[2 * i] = r[2 * i]! ^ p[0]!;
    words[2 * i + 1] = r[2 * i + 1]! ^ p[1]!;
  }
  return values;
}

function decodeLinLzb(bytes: Uint8Array, n: number, corrupt: (why: string) => SimrecError): Float64Array {
  const values = new Float64Array(n);
  const words = new Uint32Array(values.buffer);
  const prediction = new Float64Array(1);
  const p = new Uint32Array(prediction.buffer);
  let pos = (n + 1) >> 1;
  for (let i = 0; i < n; i++) {
    const length = 8 - ((bytes[i >> 1]! >> ((i & 1) << 2)) & 15);
    if (length < 0 || pos + length > bytes.length) throw corrupt('float column runs past its end');
    let lo = 0;
    let hi = 0;
    for (let k = 0; k < length; k++) {
      const b = bytes[pos++]!;
      if (k < 4) lo |= b << (k << 3);
      else hi |= b << ((k - 4) << 3);
    }
    prediction[0] = predict(values, i);
    words[2 * i] = lo ^ p[0]!;
    words[2 * i + 1] = hi ^ p[1]!;
  }
  return values;
}

function decodeDictRle(parsed: unknown, n: number, corrupt: (why: string) => SimrecError): string[] {
  const { dict, runs } = parsed as { dict: string[]; runs: number[] };
  if (!Array.isArray(dict) || !Array.isArray(runs)) throw corrupt('string column is not a dictionary');
  const out: string[] = [];
  for (let r = 0; r + 1 < runs.length; r += 2) {
    const v = dict[runs[r]!];
    if (v === undefined) throw corrupt('string column names a value it does not have');
    for (let k = 0; k < runs[r + 1]!; k++) out.push(v);
  }
  if (out.length !== n) throw corrupt(`string column has ${out.length} values, expected ${n}`);
  return out;
}

function unXorShuffle(bytes: Uint8Array, count: number): Float64Array {
  const words = new Uint32Array(unshuffleBytes(bytes, 8, count).buffer);
  for (let i = 2; i < words.length; i++) words[i] = words[i]! ^ words[i - 2]!;
  return new Float64Array(words.buffer, 0, count);
}

function unshuffleBytes(bytes: Uint8Array, width: number, count: number): Uint8Array {
  const out = new Uint8Array(count * width);
  for (let b = 0; b < width; b++) {
    const base = b * count;
    for (let i = 0; i < count; i++) out[i * width + b] = bytes[base + i]!;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

export interface DecodedColumn {
  name: string;
  type: FieldType;
  /** Row -> index into values, or -1 when the row has no value; null when every row has one. */
  rowIndex: Int32Array | null;
  values: ArrayLike<unknown>;
  length?: number;
}

/** A decoded chunk, its columns as they were stored (chunk-reader.ts turns them into a batch). */
export class DecodedChunk {
  readonly n: number;
  readonly t: Float64Array;
  readonly step: Float64Array;
  readonly columns: DecodedColumn[];
  constructor(n: number, t: Float64Array, step: Float64Array, columns: DecodedColumn[]) {
    this.n = n;
    this.t = t;
    this.step = step;
    this.columns = columns;
  }
}

/** No chunk simrec writes comes near this; a header claiming more is damage, not data. */
const MAX_CHUNK_SAMPLES = 1 << 22;
/** Nor does any chunk body inflate past this: a larger claim is a damaged (or hostile) stream. */
const MAX_INFLATED_BYTES = 256 * 1024 * 1024;

/**
 * Decodes a chunk; damage of any kind (a flipped bit in a deflated body, a header that lies about
 * its sizes) becomes a `corrupt chunk` error naming where, never a crash or a huge allocation.
 */
export function decodeChunk(data: Uint8Array, where: string): DecodedChunk {
  try {
    return decodeChunkUnchecked(data, where);
  } catch (error) {
    if (error instanceof SimrecError) throw error;
    throw new SimrecError('io', `${where}: corrupt chunk (${(error as Error).message})`, { cause: error });
  }
}

function decodeChunkUnchecked(data: Uint8Array, where: string): DecodedChunk {
  const corrupt = (why: string): SimrecError => new SimrecError('io', `${where}: corrupt chunk (${why})`);
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf.length < 8 || buf.toString('latin1', 0, 4) !== MAGIC) throw corrupt('bad magic');
  const headerLength = buf.readUInt32LE(4);
  if (8 + headerLength > buf.length) throw corrupt('header runs past the end');
  let header: ChunkHeader;
  try {
    header = JSON.parse(buf.toString('utf8', 8, 8 + headerLength)) as ChunkHeader;
  } catch {
    throw corrupt('header is not JSON');
  }
  if (typeof header !== 'object' || header === null || !Array.isArray(header.columns))
    throw corrupt('header is not a chunk header');
  const n = header.n;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_CHUNK_SAMPLES)
    throw corrupt(`header claims ${String(n)} samples, expected 1..${MAX_CHUNK_SAMPLES}`);
  let body: Uint8Array = buf.subarray(8 + headerLength);
  if (header.deflate) body = inflateRawSync(body, { maxOutputLength: MAX_INFLATED_BYTES });
  let offset = 0;
  const take = (bytes: number): Uint8Array => {
    if (offset + bytes > body.length)
      throw corrupt(`column runs past the end of the body (${offset + bytes} > ${body.length})`);
    // Copied (Buffer#slice would not copy) so that typed arrays over it start aligned.
    const slice = new Uint8Array(bytes);
    slice.set(body.subarray(offset, offset + bytes));
    offset += bytes;
    return slice;
  };
  const sequence = (h: SequenceHeader): Float64Array => {
    if (h.kind === 'f64') return unXorShuffle(take(h.bytes), n);
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = h.start + h.delta * i;
    return out;
  };
  const t = sequence(header.t);
  const step = sequence(header.step);
  const columns = header.columns.map((c): DecodedColumn => {
    if (
      typeof c !== 'object' ||
      c === null ||
      typeof c.name !== 'string' ||
      !(FIELD_TYPES as readonly string[]).includes(c.type) ||
      !Number.isSafeInteger(c.present) ||
      c.present < 0 ||
      c.present > n ||
      !Number.isSafeInteger(c.bytes) ||
      c.bytes < 0 ||
      (c.type === 'vec' && !(Number.isSafeInteger(c.length) && c.length! > 0 && c.length! <= 4096))
    )
      throw corrupt(`column header ${JSON.stringify(c)?.slice(0, 80)} is malformed`);
    let rowIndex: Int32Array | null = null;
    let consumed = 0;
    if (c.present < n) {
      const bitmap = take((n + 7) >> 3);
      consumed = bitmap.length;
      rowIndex = new Int32Array(n);
      let next = 0;
      for (let i = 0; i < n; i++) rowIndex[i] = bitmap[i >> 3]! & (1 << (i & 7)) ? next++ : -1;
    }
    const raw = take(c.bytes - consumed);
    const column: DecodedColumn = {
      name: c.name,
      type: c.type,
      rowIndex,
      values: decodeValues(c, raw, corrupt),
    };
    if (c.length !== undefined) column.length = c.length;
    return column;
  });
  return new DecodedChunk(n, t, step, columns);
}

function decodeValues(
  c: ColumnHeader,
  raw: Uint8Array,
  corrupt: (why: string) => SimrecError,
): ArrayLike<unknown> {
  switch (c.type) {
    case 'f64':
    case 'i64':
      if (c.codec === 'lin-lzb') return decodeLinLzb(raw, c.present, corrupt);
      if (c.codec === 'lin-xor') {
        if (raw.length !== c.present * 8) throw corrupt(`column ${c.name} has ${raw.length} bytes`);
        return undoLinearResiduals(unshuffleBytes(raw, 8, c.present), c.present);
      }
      return unXorShuffle(raw, c.present);
    case 'vec':
      return unXorShuffle(raw, c.present * c.length!);
    case 'f32':
      return new Float32Array(unshuffleBytes(raw, 4, c.present).buffer);
    case 'i32':
      if (c.codec === 'lin-lzb') return decodeLinLzb(raw, c.present, corrupt);
      return new Int32Array(raw.buffer, raw.byteOffset, c.present);
    case 'bool':
      return raw;
    case 'string':
    case 'json': {
      const text = decodeUtf8(raw);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw corrupt(`column ${c.name} is not JSON`);
      }
      return c.codec === 'dict-rle' ? decodeDictRle(parsed, c.present, corrupt) : (parsed as unknown[]);
    }
  }
}
