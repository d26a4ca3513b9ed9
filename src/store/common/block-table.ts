/**
 * A chunk's block table as its readers see it: how many blocks, and each block's rows and time span.
 */
export interface BlockSpans {
  readonly length: number;
  rows(i: number): number;
  /** Block i's first time and last time (µs). */
  begin(i: number): number;
  end(i: number): number;
  /** Bytes of memory the table holds, for a cache that weighs what it keeps. */
  readonly memoryBytes: number;
}

/** Values per block in `places`: rows, offset, bytes, crc. */
const PLACE_FIELDS = 4;
/** What the table costs beyond its arrays' bytes: itself and its two typed arrays. */
const TABLE_OBJECT_BYTES = 256;

/**
 * A chunk's block table, kept in two typed arrays instead of an object a block. A server's cache holds
 * many thousands of opened chunks on a long run, each of a few dozen blocks: as objects, their times
 * and CRCs (beyond the small integers V8 keeps in place) were numbers of their own on the heap, the
 * tables weighed close to what the chunks' bytes did, and the collector traced every one of them.
 */
export class BlockTable implements BlockSpans {
  readonly length: number;
  /** begin, end of each block: times since the epoch need a double. */
  private readonly spans: Float64Array;
  /** rows, offset, bytes, crc of each block. */
  private readonly places: Uint32Array;

  /** A table of `length` blocks, each to be given by `set`. */
  constructor(length: number) {
    this.length = length;
    this.spans = new Float64Array(length * 2);
    this.places = new Uint32Array(length * PLACE_FIELDS);
  }

  /**
   * Block i: its rows, its first and last time, where its bytes begin in the chunk and how many they
   * are, and their CRC-32 (checked before the block is decoded).
   */
  set(i: number, rows: number, begin: number, end: number, offset: number, bytes: number, crc: number): void {
    this.spans[2 * i] = begin;
    this.spans[2 * i + 1] = end;
    const at = PLACE_FIELDS * i;
    this.places[at] = rows;
    this.places[at + 1] = offset;
    this.places[at + 2] = bytes;
    this.places[at + 3] = crc;
  }

  rows(i: number): number {
    return this.places[PLACE_FIELDS * i]!;
  }

  begin(i: number): number {
    return this.spans[2 * i]!;
  }

  end(i: number): number {
    return this.spans[2 * i + 1]!;
  }

  offset(i: number): number {
    return this.places[PLACE_FIELDS * i + 1]!;
  }

  bytes(i: number): number {
    return this.places[PLACE_FIELDS * i + 2]!;
  }

  crc(i: number): number {
    return this.places[PLACE_FIELDS * i + 3]!;
  }

  /** Bytes of memory the table holds, for a cache that weighs what it keeps. */
  get memoryBytes(): number {
    return this.spans.byteLength + this.places.byteLength + TABLE_OBJECT_BYTES;
  }
}
