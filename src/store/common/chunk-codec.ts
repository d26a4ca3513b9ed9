import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SimrecError } from '../../model/errors.js';
import {
  FIELD_TYPES,
  inferFieldType,
  type FieldDecl,
  type FieldType,
  type Sample,
} from '../../model/stream.js';

/**
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
 *   are nearly linear over 10 ms, so a prediction shares 4-5 of their 8 bytes; lossless, every bit kept.
 *   On the benchmark's traffic it is within 7% of XOR + transpose + deflate in size at a fraction of the
 *   cost, which is what lets recording stay ahead of the simulator.
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

export interface ChunkEncodeOptions {
  /** zlib level 1..9, or 0 for no compression. */
  deflateLevel?: number;
  /**
   * How float columns are laid out when the chunk is not deflated: `fixed` (8 bytes a value, the
   * default: no compression at all) or `leading-zero-bytes` (lin-lzb, compact and cheap to write).
   * Deflated chunks always use fixed-width transposed residuals, which deflate codes best.
   */
  floatPacking?: 'fixed' | 'leading-zero-bytes';
}

/**
 * The fields the chunk stores: the declared ones that some sample has (an optional field nobody sent
 * costs no pass over the samples), then every undeclared field that appears, with its inferred type.
 */
function chunkFields(samples: readonly Sample[], declared: readonly FieldDecl[]): FieldDecl[] {
  const seen = new Set<string>();
  // Samples of one stream nearly always share their keys; one object's keys stand for a run of them.
  let previousKeys: string[] = [];
  for (const s of samples) {
    const keys = Object.keys(s);
    if (sameKeys(keys, previousKeys)) continue;
    for (const key of keys) seen.add(key);
    previousKeys = keys;
  }
  const fields = declared.filter((f) => seen.has(f.name));
  const declaredNames = new Set(declared.map((f) => f.name));
  for (const name of seen)
    if (name !== 't' && name !== 'step' && !declaredNames.has(name))
      fields.push({ name, type: inferFieldType(samples.map((s) => s[name])) });
  return fields;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function encodeChunk(
  samples: readonly Sample[],
  declared: readonly FieldDecl[],
  options: ChunkEncodeOptions = {},
): Uint8Array {
  const n = samples.length;
  if (n === 0) throw new Error('encodeChunk: a chunk needs at least one sample');
  const parts: Uint8Array[] = [];
  const t = encodeSequence(samples, 't', parts);
  const step = encodeSequence(samples, 'step', parts);
  const columns: ColumnHeader[] = [];
  const level = options.deflateLevel ?? 0;
  const deflate = level > 0;
  const packFloats = !deflate && options.floatPacking === 'leading-zero-bytes';
  for (const field of chunkFields(samples, declared)) {
    const column = encodeColumn(samples, field, parts, packFloats);
    if (column) columns.push(column);
  }
  let body = concat(parts);
  if (deflate) body = deflateRawSync(body, { level });
  const header: ChunkHeader = { n, t, step, columns, deflate };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const out = Buffer.allocUnsafe(8 + headerBytes.length + body.length);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(headerBytes.length, 4);
  headerBytes.copy(out, 8);
  out.set(body, 8 + headerBytes.length);
  return out;
}

function encodeSequence(samples: readonly Sample[], key: 't' | 'step', parts: Uint8Array[]): SequenceHeader {
  const first = samples[0]![key];
  const delta = samples.length > 1 ? samples[1]![key] - first : 0;
  let arithmetic = true;
  for (let i = 1; i < samples.length; i++)
    if (samples[i]![key] !== first + delta * i) {
      arithmetic = false;
      break;
    }
  if (arithmetic) return { kind: 'arith', start: first, delta };
  const values = new Float64Array(samples.length);
  for (let i = 0; i < samples.length; i++) values[i] = samples[i]![key];
  const bytes = xorShuffle(values);
  parts.push(bytes);
  return { kind: 'f64', bytes: bytes.length };
}

function encodeColumn(
  samples: readonly Sample[],
  field: FieldDecl,
  parts: Uint8Array[],
  packFloats: boolean,
): ColumnHeader | null {
  const n = samples.length;
  const name = field.name;
  const keepsNull = field.type === 'json';
  const values: unknown[] = [];
  for (let i = 0; i < n; i++) {
    const v = samples[i]![name];
    if (v !== undefined && (v !== null || keepsNull)) values.push(v);
  }
  const present = values.length;
  if (present === 0) return null;
  let bytes = 0;
  if (present < n) {
    const bitmap = new Uint8Array((n + 7) >> 3);
    for (let i = 0; i < n; i++) {
      const v = samples[i]![name];
      if (v !== undefined && (v !== null || keepsNull)) bitmap[i >> 3]! |= 1 << (i & 7);
    }
    parts.push(bitmap);
    bytes += bitmap.length;
  }
  const { data, codec } = encodeValues(field, values, packFloats);
  parts.push(data);
  bytes += data.length;
  const header: ColumnHeader = { name, type: field.type, present, bytes };
  if (codec) header.codec = codec;
  if (field.type === 'vec') header.length = field.length!;
  return header;
}

function encodeValues(
  field: FieldDecl,
  values: unknown[],
  packFloats: boolean,
): { data: Uint8Array; codec?: ColumnCodec } {
  switch (field.type) {
    case 'f64':
    case 'i64': {
      const floats = toFloat64(values as number[]);
      return packFloats
        ? { data: encodeLinLzb(floats), codec: 'lin-lzb' }
        : { data: shuffleBytes(linearResiduals(floats), 8), codec: 'lin-xor' };
    }
    case 'f32':
      return { data: shuffleBytes(new Uint8Array(Float32Array.from(values as number[]).buffer), 4) };
    case 'i32':
      // Counters and indexes (gear, route index) mostly stand still or step by one: predicted, they cost
      // half a byte a value instead of four.
      return packFloats
        ? { data: encodeLinLzb(toFloat64(values as number[])), codec: 'lin-lzb' }
        : { data: new Uint8Array(Int32Array.from(values as number[]).buffer) };
    case 'bool':
      return { data: Uint8Array.from(values as boolean[], (b) => (b ? 1 : 0)) };
    case 'vec': {
      const len = field.length!;
      const flat = new Float64Array(values.length * len);
      // Stored component by component so each component's XOR runs over its own history.
      for (let c = 0; c < len; c++)
        for (let i = 0; i < values.length; i++) flat[c * values.length + i] = (values[i] as number[])[c]!;
      return { data: xorShuffle(flat) };
    }
    case 'string':
      return { data: encodeDictRle(values as string[]), codec: 'dict-rle' };
    case 'json':
      return { data: Buffer.from(JSON.stringify(values), 'utf8') };
  }
}

/** A plain loop: Float64Array.from goes through the iterator protocol, several times slower. */
function toFloat64(values: readonly number[]): Float64Array {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i]!;
  return out;
}

/** The linear prediction of value i from the two before it; finite, so its bits are the same everywhere. */
function predict(values: Float64Array, i: number): number {
  if (i < 2) return i === 0 ? 0 : values[0]!;
  const p = 2 * values[i - 1]! - values[i - 2]!;
  return Number.isFinite(p) ? p : values[i - 1]!;
}

function linearResiduals(values: Float64Array): Uint8Array {
  const words = new Uint32Array(values.buffer, values.byteOffset, values.length * 2);
  const out = new Uint32Array(words.length);
  const prediction = new Float64Array(1);
  const p = new Uint32Array(prediction.buffer);
  for (let i = 0; i < values.length; i++) {
    prediction[0] = predict(values, i);
    out[2 * i] = words[2 * i]! ^ p[0]!;
    out[2 * i + 1] = words[2 * i + 1]! ^ p[1]!;
  }
  return new Uint8Array(out.buffer);
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

function encodeLinLzb(values: Float64Array): Uint8Array {
  const n = values.length;
  const words = new Uint32Array(values.buffer, values.byteOffset, n * 2);
  const prediction = new Float64Array(1);
  const p = new Uint32Array(prediction.buffer);
  const nibbles = (n + 1) >> 1;
  const out = new Uint8Array(nibbles + n * 8);
  let pos = nibbles;
  for (let i = 0; i < n; i++) {
    prediction[0] = predict(values, i);
    const lo = (words[2 * i]! ^ p[0]!) >>> 0;
    const hi = (words[2 * i + 1]! ^ p[1]!) >>> 0;
    const zeros = hi !== 0 ? Math.clz32(hi) >> 3 : lo !== 0 ? 4 + (Math.clz32(lo) >> 3) : 8;
    out[i >> 1]! |= zeros << ((i & 1) << 2);
    const length = 8 - zeros;
    for (let k = 0; k < length; k++) out[pos++] = k < 4 ? lo >>> (k << 3) : hi >>> ((k - 4) << 3);
  }
  return out.subarray(0, pos);
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

function encodeDictRle(values: readonly string[]): Uint8Array {
  const dict: string[] = [];
  const index = new Map<string, number>();
  const runs: number[] = [];
  let current = -1;
  for (const v of values) {
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
  return Buffer.from(JSON.stringify({ dict, runs }), 'utf8');
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

/** XOR each float64 with its predecessor, then transpose bytes (all byte 0s, then all byte 1s...). */
function xorShuffle(values: Float64Array): Uint8Array {
  const words = new Uint32Array(values.buffer, values.byteOffset, values.length * 2);
  const xored = new Uint32Array(words.length);
  if (words.length > 0) {
    xored[0] = words[0]!;
    xored[1] = words[1]!;
  }
  for (let i = 2; i < words.length; i++) xored[i] = words[i]! ^ words[i - 2]!;
  return shuffleBytes(new Uint8Array(xored.buffer), 8);
}

function unXorShuffle(bytes: Uint8Array, count: number): Float64Array {
  const words = new Uint32Array(unshuffleBytes(bytes, 8, count).buffer);
  for (let i = 2; i < words.length; i++) words[i] = words[i]! ^ words[i - 2]!;
  return new Float64Array(words.buffer, 0, count);
}

function shuffleBytes(bytes: Uint8Array, width: number): Uint8Array {
  const count = bytes.length / width;
  const out = new Uint8Array(bytes.length);
  for (let b = 0; b < width; b++) {
    const base = b * count;
    for (let i = 0; i < count; i++) out[base + i] = bytes[i * width + b]!;
  }
  return out;
}

function unshuffleBytes(bytes: Uint8Array, width: number, count: number): Uint8Array {
  const out = new Uint8Array(count * width);
  for (let b = 0; b < width; b++) {
    const base = b * count;
    for (let i = 0; i < count; i++) out[i * width + b] = bytes[base + i]!;
  }
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
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

/** A decoded chunk: columns stay columnar; rows are built only for the samples asked for. */
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

  /** Index of the last sample with t <= time, or -1. */
  lastAtOrBefore(time: number): number {
    let lo = 0;
    let hi = this.n - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.t[mid]! <= time) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** Index of the first sample with t >= time, or n. */
  firstAtOrAfter(time: number): number {
    let lo = 0;
    let hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.t[mid]! < time) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  sample(row: number): Sample {
    const s: Sample = { t: this.t[row]!, step: this.step[row]! };
    for (const c of this.columns) {
      const index = c.rowIndex ? c.rowIndex[row]! : row;
      if (index < 0) continue;
      if (c.type === 'vec') {
        const len = c.length!;
        const count = c.values.length / len;
        const v = new Array<number>(len);
        for (let k = 0; k < len; k++) v[k] = c.values[k * count + index] as number;
        s[c.name] = v;
      } else if (c.type === 'bool') s[c.name] = c.values[index] === 1;
      else s[c.name] = c.values[index];
    }
    return s;
  }

  samples(fromRow = 0, toRow = this.n): Sample[] {
    const out: Sample[] = [];
    for (let i = fromRow; i < toRow; i++) out.push(this.sample(i));
    return out;
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
      const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
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
