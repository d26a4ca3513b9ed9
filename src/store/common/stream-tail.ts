import { columnFields, type ColumnBatch } from '../../model/columns.js';
import type { FieldDecl, InferredField } from '../../model/stream.js';
import type { ChunkColumn, EncodedBlock } from './chunk-codes.js';
import { decodeEncodedBlock } from './chunk-decoder.js';
import { assembleChunk, encodeBlock, type ChunkBuffers } from './chunk-encoder.js';
import { concatBatches } from './chunk-rows.js';
import { openChunk } from './chunk-reader.js';
import { FloatPackingMemo } from './bit-codec.js';

export interface StreamTailOptions {
  /** A stream's tail is sealed into chunks of about this many samples once it holds as many. */
  chunkSamples: number;
  /** Samples a sealed block holds (at most): the scene at t decodes one block per actor. */
  maxBlockRows: number;
}

/**
 * Blocks of 256 samples cost less a sample than smaller ones (each block restarts its predictions and
 * has its own framing); chunks of 2,048 samples (about 64 KB) lose little to SQLite's half-filled last
 * page. A commit's blocks are kept as they are when they hold at least a quarter of maxBlockRows (a
 * simulator committing 100 steps at a time makes blocks of 100), since packing them again at the seal
 * cost more than the bytes it saves. The sizes' measurements: docs/performance-history.md.
 */
export const DEFAULT_TAIL_OPTIONS: StreamTailOptions = { chunkSamples: 2048, maxBlockRows: 256 };

/** A chunk to write: its bytes and the time range and count its row or document keeps beside it. */
export interface ChunkToWrite {
  data: Uint8Array;
  begin: number;
  end: number;
  count: number;
}

/** A tail chunk as its store gives it back to be sealed, and how to name it in an error. */
export interface StoredTailChunk {
  data: Uint8Array;
  where: string;
}

/**
 * Where a tail chunk's blocks lie: at its end, one after another, as assembleChunk lays them out. Their
 * checksums travel with them into the sealed chunk, so a block damaged in the store since it was written
 * is found at its first read, as any damaged chunk is; one whose chunk is not the size it was written at
 * is decoded and packed again instead.
 */
interface TailLayout {
  size: number;
  blockBytes: number;
  blocks: { rows: number; begin: number; end: number; bytes: number; crc: number }[];
}

function layoutOf(chunk: ChunkToWrite, blocks: readonly EncodedBlock[]): TailLayout {
  let blockBytes = 0;
  const layout = blocks.map((b) => {
    blockBytes += b.bytes.length;
    return { rows: b.rows, begin: b.begin, end: b.end, bytes: b.bytes.length, crc: b.crc! };
  });
  return { size: chunk.data.length, blockBytes, blocks: layout };
}

/**
 * One stream's unsealed samples, as the writer of a backend keeps them. Each commit's samples become
 * one tail chunk, already packed as they will be stored: in blocks that end at the stream's chunk
 * boundaries (every `chunkSamples`-th sample) and hold at most `maxBlockRows`. Once the tail holds a
 * chunk's worth it is sealed: the tail chunks' blocks are assembled, as they are, into the chunks that
 * replace them; only runs of small blocks (commits of a few samples) are decoded and packed again as
 * one. Tails written raw and packed at the seal cost the writer thread twice the bytes through SQLite
 * (its per-page WAL writes, not fsync, are most of a commit) plus a decode and a second encoding of
 * every sample. Backend-neutral: the
 * SQLite writer keeps tails in it; the MongoDB backend packs whole commits.
 */
export class StreamTail<Id> {
  readonly declared: readonly FieldDecl[];
  private readonly declaredNames: ReadonlySet<string>;
  /** Declared fields, then undeclared ones in order of appearance: what chunk headers list. */
  private readonly columns: ChunkColumn[];
  private readonly indexOf = new Map<string, number>();
  /** The packing of each float column, kept from one commit's block to the next. */
  private readonly floatPackings = new FloatPackingMemo();
  private readonly extras: InferredField[];
  private rowCount = 0;
  /** Samples of the stream already in sealed chunks: where the tail's first row stands in the stream. */
  private sealedRows = 0;
  /** The tail chunks (their ids in the backend) that a seal replaces. */
  private chunkIds: Id[] = [];
  /**
   * Where the blocks are in the tail chunks this tail packed itself, by chunk id: their blocks end at
   * chunk boundaries, so a seal reads those chunks back and cuts their blocks out as they are, with the
   * checksums computed when they were packed, neither parsing nor decoding them. Others (found in the
   * store: a writer that reopens a run, crash recovery, a tail written raw by simrec before this layout)
   * are read, decoded and packed again when sealed. The blocks themselves are not kept: held from
   * commit to seal, they were a large part of recording's peak memory.
   */
  private own = new Map<Id, TailLayout>();
  /** The layout of the last `append`'s chunk, until `appended` says under which id it was written. */
  private lastLayout: TailLayout | null = null;
  private readonly options: StreamTailOptions;

  constructor(declared: readonly FieldDecl[], extras: readonly InferredField[], options: StreamTailOptions) {
    this.declared = declared;
    this.declaredNames = new Set(declared.map((f) => f.name));
    this.options = options;
    this.extras = extras.map((f) => ({ ...f }));
    this.columns = [];
    for (const f of declared)
      this.addColumn({ name: f.name, type: f.type, ...(f.type === 'vec' ? { length: f.length! } : {}) });
    for (const f of extras) this.addColumn({ name: f.name, type: f.type });
  }

  private addColumn(c: ChunkColumn): void {
    this.indexOf.set(c.name, this.columns.length);
    this.columns.push(c);
  }

  get extraFields(): InferredField[] {
    return this.extras.map((f) => ({ ...f }));
  }

  /**
   * Counts in a tail chunk already in the store (a writer that reopens a run, crash recovery). Its
   * samples stay in the store, not in memory, until the seal reads them.
   */
  adopt(id: Id, rows: number): void {
    this.chunkIds.push(id);
    this.rowCount += rows;
  }

  /**
   * Packs a batch as the tail chunk of one commit. Returns it, and whether the undeclared fields changed
   * (their list is kept with the stream). Call `appended` once it is written. The chunk's bytes are taken
   * from `buffers` when given (see ChunkBuffers).
   */
  append(input: ColumnBatch, buffers?: ChunkBuffers): { chunk: ChunkToWrite; extrasChanged: boolean } {
    const { batch, changed: extrasChanged } = this.learn(input);
    const blocks = this.blocksOf(batch, this.sealedRows + this.rowCount);
    const chunk = this.chunkOf(blocks, buffers);
    this.lastLayout = layoutOf(chunk, blocks);
    return { chunk, extrasChanged };
  }

  /** Records that the tail chunk of `rows` samples made by the last `append` was written as `id`. */
  appended(id: Id, rows: number): void {
    this.adopt(id, rows);
    if (this.lastLayout) this.own.set(id, this.lastLayout);
    this.lastLayout = null;
  }

  /** Samples in the tail. */
  get rows(): number {
    return this.rowCount;
  }

  get dueForSeal(): boolean {
    return this.rowCount >= this.options.chunkSamples;
  }

  /** Samples of the stream already sealed (a writer that reopens a run learns it from the store). */
  setSealedRows(rows: number): void {
    this.sealedRows = rows;
  }

  /**
   * The sealed chunks that replace the tail chunks, given a way to open each (as stored). Chunks begin at
   * every `chunkSamples`-th sample of the stream, so the chunks of streams sampled together cover the
   * same times: a scene then reads one chunk window of every actor, and a reader's cache holds whole
   * windows. Unless `final`, the blocks past the last boundary stay in the tail, as one tail chunk
   * (`rest`). Call `sealed()` once it is durable. The chunks' bytes are taken from `buffers` when given.
   */
  seal(
    read: (id: Id) => StoredTailChunk,
    options: { final?: boolean; buffers?: ChunkBuffers } = {},
  ): { chunks: ChunkToWrite[]; rest: ChunkToWrite | null; replaces: Id[] } | null {
    if (this.chunkIds.length === 0) return null;
    const blocks = this.tailBlocks(read);
    const { chunkSamples } = this.options;
    const n = this.rowCount;
    // The last boundary within the tail (a multiple of chunkSamples in the stream's own count).
    const firstBoundary = chunkSamples - (this.sealedRows % chunkSamples);
    let cut =
      firstBoundary > n ? 0 : firstBoundary + Math.floor((n - firstBoundary) / chunkSamples) * chunkSamples;
    if (options.final) cut = n;
    if (cut === 0) return null;
    const chunks: ChunkToWrite[] = [];
    let current: EncodedBlock[] = [];
    let row = 0;
    let b = 0;
    for (; b < blocks.length && row < cut; b++) {
      current.push(blocks[b]!);
      row += blocks[b]!.rows;
      if ((this.sealedRows + row) % chunkSamples === 0 || row === cut) {
        chunks.push(this.chunkOf(this.mergeSmallBlocks(current), options.buffers));
        current = [];
      }
    }
    if (row !== cut) throw new Error(`sealing: tail blocks end at row ${row}, not at ${cut}`);
    const restBlocks = blocks.slice(b);
    const rest = restBlocks.length ? this.chunkOf(restBlocks, options.buffers) : null;
    this.restLayout = rest && layoutOf(rest, restBlocks);
    this.pendingRest = n - cut;
    this.pendingSealed = cut;
    return { chunks, rest, replaces: this.chunkIds.slice() };
  }

  private pendingRest = 0;
  private pendingSealed = 0;
  private restLayout: TailLayout | null = null;

  /** The tail chunks' ids, oldest first. */
  get tailIds(): readonly Id[] {
    return this.chunkIds;
  }

  /**
   * The tail's samples as blocks none of which crosses a chunk boundary: the blocks of its own tail
   * chunks as they are, the samples of others packed again.
   */
  private tailBlocks(read: (id: Id) => StoredTailChunk): EncodedBlock[] {
    const out: EncodedBlock[] = [];
    let position = this.sealedRows;
    let others: ColumnBatch[] = [];
    const packOthers = (): void => {
      if (others.length === 0) return;
      const batch = concatBatches(others, this.columns);
      out.push(...this.blocksOf(batch, position));
      position += batch.t.length;
      others = [];
    };
    for (const id of this.chunkIds) {
      const { data, where } = read(id);
      const own = this.own.get(id);
      if (own && own.size === data.length) {
        packOthers();
        let offset = data.length - own.blockBytes;
        for (const { rows, begin, end, bytes, crc } of own.blocks) {
          out.push({ rows, begin, end, bytes: data.subarray(offset, offset + bytes), crc });
          offset += bytes;
          position += rows;
        }
      } else others.push(openChunk(data, where).decodeAll());
    }
    packOthers();
    return out;
  }

  /**
   * Rows of a batch that begins at `position` in the stream, packed in blocks that end at the stream's
   * chunk boundaries and hold at most maxBlockRows.
   */
  private blocksOf(batch: ColumnBatch, position: number): EncodedBlock[] {
    const { chunkSamples, maxBlockRows } = this.options;
    const n = batch.t.length;
    const blocks: EncodedBlock[] = [];
    for (let from = 0; from < n;) {
      const toBoundary = chunkSamples - ((position + from) % chunkSamples);
      const to = Math.min(n, from + toBoundary, from + maxBlockRows);
      blocks.push(encodeBlock(batch, this.columns, this.indexOf, from, to, 'packed', this.floatPackings));
      from = to;
    }
    return blocks;
  }

  /**
   * A sealed chunk's blocks, where each run of two or more small blocks (commits of a few samples each:
   * a simulator that commits every step) is packed again as blocks of up to maxBlockRows: a block restarts
   * its predictions and has its own framing, which small blocks pay for every few samples.
   */
  private mergeSmallBlocks(blocks: EncodedBlock[]): EncodedBlock[] {
    const small = Math.max(2, Math.floor(this.options.maxBlockRows / 4));
    const out: EncodedBlock[] = [];
    for (let i = 0; i < blocks.length;) {
      let j = i;
      while (j < blocks.length && blocks[j]!.rows < small) j++;
      if (j - i >= 2) {
        const batch = concatBatches(
          blocks.slice(i, j).map((b) => decodeEncodedBlock(b, this.columns)),
          this.columns,
        );
        for (let from = 0; from < batch.t.length; from += this.options.maxBlockRows)
          out.push(
            encodeBlock(
              batch,
              this.columns,
              this.indexOf,
              from,
              Math.min(batch.t.length, from + this.options.maxBlockRows),
            ),
          );
        i = j;
      } else {
        // One small block among large ones, or a large one: as it is.
        const end = Math.max(j, i + 1);
        for (; i < end; i++) out.push(blocks[i]!);
      }
    }
    return out;
  }

  /** A batch (its columns already learnt) packed in chunks of chunkSamples rows from its start. */
  packBatch(batch: ColumnBatch): ChunkToWrite[] {
    const n = batch.t.length;
    const chunks: ChunkToWrite[] = [];
    for (let from = 0; from < n; from += this.options.chunkSamples)
      chunks.push(this.packRows(batch, from, Math.min(n, from + this.options.chunkSamples)));
    return chunks;
  }

  /** Rows [from, to) as one sealed chunk, in blocks of maxBlockRows from its first row. */
  private packRows(batch: ColumnBatch, from: number, to: number): ChunkToWrite {
    const blocks: EncodedBlock[] = [];
    for (let b = from; b < to; b += this.options.maxBlockRows)
      blocks.push(
        encodeBlock(batch, this.columns, this.indexOf, b, Math.min(to, b + this.options.maxBlockRows)),
      );
    return this.chunkOf(blocks);
  }

  /** The seal is durable; `restId` is the id the rest was written as (when there was a rest). */
  sealed(restId?: Id): void {
    this.sealedRows += this.pendingSealed;
    this.chunkIds = restId === undefined ? [] : [restId];
    this.own = new Map(restId === undefined || !this.restLayout ? [] : [[restId, this.restLayout]]);
    this.restLayout = null;
    this.rowCount = restId === undefined ? 0 : this.pendingRest;
    this.pendingSealed = 0;
    this.pendingRest = 0;
  }

  private chunkOf(blocks: EncodedBlock[], buffers?: ChunkBuffers): ChunkToWrite {
    let count = 0;
    for (const b of blocks) count += b.rows;
    return {
      data: assembleChunk(this.columns, blocks, buffers),
      begin: blocks[0]!.begin,
      end: blocks[blocks.length - 1]!.end,
      count,
    };
  }

  /**
   * Adds the batch's undeclared columns to the list. A column seen with two types becomes json from then
   * on (blocks already written keep their records: readers decode each record by its codec), and the
   * batch's values of it are converted to JSON values.
   */
  learn(batch: ColumnBatch): { batch: ColumnBatch; changed: boolean } {
    // The usual batch: declared fields only, nothing to learn (inferring each column's type every batch
    // is work the writer thread need not do).
    let undeclared = false;
    for (const name in batch.columns)
      if (!this.declaredNames.has(name)) {
        undeclared = true;
        break;
      }
    if (!undeclared) return { batch, changed: false };
    let changed = false;
    let out = batch;
    for (const field of columnFields(batch, this.declared)) {
      const index = this.indexOf.get(field.name);
      if (index === undefined) {
        this.addColumn({ name: field.name, type: field.type });
        this.extras.push({ name: field.name, type: field.type, inferred: true });
        changed = true;
        continue;
      }
      const known = this.columns[index]!;
      if (known.type === field.type || this.declared.some((d) => d.name === field.name)) continue;
      if (known.type !== 'json') {
        known.type = 'json';
        const extra = this.extras.find((e) => e.name === field.name);
        if (extra) extra.type = 'json';
        changed = true;
      }
      const values = batch.columns[field.name]!;
      if (values instanceof Float64Array) {
        const json = Array.from(values, (v): unknown =>
          Number.isNaN(v) ? undefined : field.type === 'bool' ? v === 1 : v,
        );
        out = { ...out, columns: { ...out.columns, [field.name]: json } };
      }
    }
    return { batch: out, changed };
  }
}

/**
 * A whole stream written at once (a derived stream, an import): sealed chunks of `chunkSamples` rows,
 * with the undeclared fields it found.
 */
export function encodeChunks(
  declared: readonly FieldDecl[],
  batch: ColumnBatch,
  options: StreamTailOptions,
): { chunks: ChunkToWrite[]; extras: InferredField[] } {
  const tail = new StreamTail<number>(declared, [], options);
  const { batch: fitted } = tail.learn(batch);
  const chunks = batch.t.length ? tail.packBatch(fitted) : [];
  return { chunks, extras: tail.extraFields };
}
