import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SimrecError } from '../../model/errors.js';
import { inferFieldType, type FieldDecl, type FieldType, type Sample } from '../../model/stream.js';

/**
 * A chunk holds many consecutive samples of one stream, column by column, so that recording 200 actors
 * at 100 Hz writes a few large rows rather than millions of small ones. Chunks describe themselves
 * (field names and types are in their header), so a stream's schema may grow - undeclared fields
 * appear - without rewriting what is stored.
 *
 * Layout: "SRC1" | u32 header length | header JSON | body. The body is the columns' bytes one after
 * another, deflated when `deflate` is set. Float columns are stored XOR-ed with the previous value and
 * byte-transposed first: a smooth trajectory then has long runs of equal high bytes, which is what lets
 * deflate shrink lossless float64 data by about half (measured in `npm run bench`).
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
}

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
}

/** The stream's declared fields plus every undeclared field that appears, with its inferred type. */
function chunkFields(samples: readonly Sample[], declared: readonly FieldDecl[]): FieldDecl[] {
  const fields: FieldDecl[] = [...declared];
  const known = new Set(declared.map((f) => f.name));
  known.add('t');
  known.add('step');
  const extra: string[] = [];
  for (const s of samples)
    for (const key in s) {
      if (known.has(key)) continue;
      known.add(key);
      extra.push(key);
    }
  for (const name of extra) fields.push({ name, type: inferFieldType(samples.map((s) => s[name])) });
  return fields;
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
  for (const field of chunkFields(samples, declared)) {
    const column = encodeColumn(samples, field, parts);
    if (column) columns.push(column);
  }
  let body = concat(parts);
  const level = options.deflateLevel ?? 0;
  const deflate = level > 0;
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
): ColumnHeader | null {
  const n = samples.length;
  const name = field.name;
  let present = 0;
  for (let i = 0; i < n; i++) {
    const v = samples[i]![name];
    if (v !== undefined && (v !== null || field.type === 'json')) present++;
  }
  if (present === 0) return null;
  const isPresent = (v: unknown): boolean => v !== undefined && (v !== null || field.type === 'json');
  let bytes = 0;
  if (present < n) {
    const bitmap = new Uint8Array((n + 7) >> 3);
    for (let i = 0; i < n; i++) if (isPresent(samples[i]![name])) bitmap[i >> 3]! |= 1 << (i & 7);
    parts.push(bitmap);
    bytes += bitmap.length;
  }
  const values: unknown[] = [];
  for (let i = 0; i < n; i++) {
    const v = samples[i]![name];
    if (isPresent(v)) values.push(v);
  }
  const data = encodeValues(field, values);
  parts.push(data);
  bytes += data.length;
  const header: ColumnHeader = { name, type: field.type, present, bytes };
  if (field.type === 'vec') header.length = field.length!;
  return header;
}

function encodeValues(field: FieldDecl, values: unknown[]): Uint8Array {
  switch (field.type) {
    case 'f64':
    case 'i64':
      return xorShuffle(Float64Array.from(values as number[]));
    case 'f32':
      return shuffleBytes(new Uint8Array(Float32Array.from(values as number[]).buffer), 4);
    case 'i32':
      return new Uint8Array(Int32Array.from(values as number[]).buffer);
    case 'bool':
      return Uint8Array.from(values as boolean[], (b) => (b ? 1 : 0));
    case 'vec': {
      const len = field.length!;
      const flat = new Float64Array(values.length * len);
      // Stored component by component so each component's XOR runs over its own history.
      for (let c = 0; c < len; c++)
        for (let i = 0; i < values.length; i++) flat[c * values.length + i] = (values[i] as number[])[c]!;
      return xorShuffle(flat);
    }
    case 'string':
    case 'json':
      return Buffer.from(JSON.stringify(values), 'utf8');
  }
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

export function decodeChunk(data: Uint8Array, where: string): DecodedChunk {
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
  let body: Uint8Array = buf.subarray(8 + headerLength);
  if (header.deflate) body = inflateRawSync(body);
  const n = header.n;
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
      return unXorShuffle(raw, c.present);
    case 'vec':
      return unXorShuffle(raw, c.present * c.length!);
    case 'f32':
      return new Float32Array(unshuffleBytes(raw, 4, c.present).buffer);
    case 'i32':
      return new Int32Array(raw.buffer, raw.byteOffset, c.present);
    case 'bool':
      return raw;
    case 'string':
    case 'json': {
      try {
        return JSON.parse(
          Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8'),
        ) as unknown[];
      } catch {
        throw corrupt(`column ${c.name} is not JSON`);
      }
    }
  }
}
