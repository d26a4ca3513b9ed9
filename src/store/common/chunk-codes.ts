import type { FloatPacking } from './bit-codec.js';
import type { FieldType } from '../../model/stream.js';

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
 *
 * This file holds the format's codes and the shapes both sides share; chunk-encoder.ts writes chunks,
 * chunk-decoder.ts reads them, chunk-rows.ts gathers decoded rows into columns.
 */

export const MAGIC = 'SRC2';
export const T_INDEX = 0;
export const STEP_INDEX = 1;
export const FIRST_FIELD_INDEX = 2;

export const CODEC = {
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
  /** Float64 values as they are, 8 bytes each (tail blocks of older simrec; see BlockPacking). */
  raw: 15,
  /** floatLinear and floatPrevious with residuals XOR-ed and rotated (bit-codec.ts FloatResidual). */
  floatLinearRotated: 16,
  floatPreviousRotated: 17,
  /**
   * The predictors with residuals the difference of the bit patterns (bit-codec.ts FloatResidual) and
   * group widths in a prefix code, since store schema 5; floatLinear and floatPrevious,
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
 * are, how simrec wrote tail chunks before they were packed at commit; such tails, left by a
 * run that did not end, are read and packed again when sealed. Written only by tests of that.
 */
export type BlockPacking = 'packed' | 'raw';

/** The float codecs and the packing each stands for: the one place that pairs them, both ways. */
export const FLOAT_PACKINGS = new Map<number, FloatPacking>([
  [CODEC.floatLinear, { predictor: 'linear', residual: 'xor' }],
  [CODEC.floatPrevious, { predictor: 'previous', residual: 'xor' }],
  [CODEC.floatLinearRotated, { predictor: 'linear', residual: 'xor-rotated' }],
  [CODEC.floatPreviousRotated, { predictor: 'previous', residual: 'xor-rotated' }],
  [CODEC.floatLinearDifference, { predictor: 'linear', residual: 'difference' }],
  [CODEC.floatPreviousDifference, { predictor: 'previous', residual: 'difference' }],
]);

/** The same for f32 columns (codec float32, before store schema 5, the linear prediction's plain XOR). */
export const FLOAT32_PACKINGS = new Map<number, FloatPacking>([
  [CODEC.float32, { predictor: 'linear', residual: 'xor' }],
  [CODEC.float32LinearDifference, { predictor: 'linear', residual: 'difference' }],
  [CODEC.float32PreviousDifference, { predictor: 'previous', residual: 'difference' }],
  [CODEC.float32LinearRotated, { predictor: 'linear', residual: 'xor-rotated' }],
  [CODEC.float32PreviousRotated, { predictor: 'previous', residual: 'xor-rotated' }],
]);

/** Bit 7 of the codec byte: a presence bitmap precedes the values. */
export const FLAG_PRESENCE = 0x80;

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

export const describeColumn = (c: ChunkColumn): string =>
  c.type === 'vec' ? `${c.name}:vec:${c.length}` : `${c.name}:${c.type}`;

export const isChunkV2 = (data: Uint8Array): boolean =>
  data.length >= 4 && data[0] === 0x53 && data[1] === 0x52 && data[2] === 0x43 && data[3] === 0x32;

/**
 * How many of a chunk's first bytes are its frame (magic, lengths, checksum, header, block table): its
 * blocks follow. 0 for a chunk of the first layout, which has no blocks to read apart.
 */
export function chunkFrameLength(data: Uint8Array): number {
  if (!isChunkV2(data) || data.length < 16) return 0;
  const view = new DataView(data.buffer, data.byteOffset, 16);
  return Math.min(data.length, 16 + view.getUint32(4, true) + view.getUint32(8, true));
}
