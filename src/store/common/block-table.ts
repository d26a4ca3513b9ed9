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

/** One block of a chunk: its rows, time span, and where its bytes are in the chunk, with their CRC-32. */
export interface BlockRef {
  rows: number;
  begin: number;
  end: number;
  offset: number;
  bytes: number;
  /** CRC-32 of the block's bytes, checked before the block is decoded. */
  crc: number;
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

  constructor(blocks: readonly BlockRef[]) {
    this.length = blocks.length;
    this.spans = new Float64Array(blocks.length * 2);
    this.places = new Uint32Array(blocks.length * PLACE_FIELDS);
    blocks.forEach((b, i) => {
      this.spans[2 * i] = b.begin;
      this.spans[2 * i + 1] = b.end;
      this.places.set([b.rows, b.offset, b.bytes, b.crc], PLACE_FIELDS * i);
    });
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

  /** Block i as one object (for the few callers that hand blocks on, not for the read paths). */
  at(i: number): BlockRef {
    return {
      rows: this.rows(i),
      begin: this.begin(i),
      end: this.end(i),
      offset: this.offset(i),
      bytes: this.bytes(i),
      crc: this.crc(i),
    };
  }

  /** Every block's rows, in order. */
  rowCounts(): number[] {
    return Array.from({ length: this.length }, (_, i) => this.rows(i));
  }

  /** Bytes of memory the table holds, for a cache that weighs what it keeps. */
  get memoryBytes(): number {
    return this.spans.byteLength + this.places.byteLength + TABLE_OBJECT_BYTES;
  }
}
