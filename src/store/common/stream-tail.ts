import { columnFields, type ColumnBatch } from '../../model/columns.js';
import type { FieldDecl, FieldType, InferredField } from '../../model/stream.js';
import {
  assembleChunk,
  concatBatches,
  encodeBlock,
  type ChunkColumn,
  type EncodedBlock,
} from './chunk-format.js';

export interface StreamTailOptions {
  /** A stream's tail is sealed into chunks of about this many samples once it holds as many. */
  chunkSamples: number;
  /** Samples a sealed block holds (at most): the scene at t decodes one block per actor. */
  maxBlockRows: number;
}

/**
 * Measured on the benchmark (200 actors at 100 Hz): blocks of 256 samples cost 0.7 bytes a sample less
 * than blocks of 100 (each block restarts its predictions and has its own framing); chunks of 2,048
 * samples (about 64 KB) lose under 2% to SQLite's half-filled last page.
 */
export const DEFAULT_TAIL_OPTIONS: StreamTailOptions = { chunkSamples: 2048, maxBlockRows: 256 };

/** A chunk to write: its bytes and the time range and count its row or document keeps beside it. */
export interface ChunkToWrite {
  data: Uint8Array;
  begin: number;
  end: number;
  count: number;
}

/**
 * One stream's unsealed samples, as the writer of a backend keeps them: each append becomes one tail
 * chunk, its numbers raw (a copy, durable at once, nothing spent on packing at commit time), and once
 * the tail holds a chunk's worth it is sealed: decoded, packed in blocks, assembled into chunks that
 * replace the tail chunks. Sealing is the expensive part and is off the commit's path (the SQLite writer
 * thread does it between commits). Backend-neutral: the SQLite writer and the MongoDB backend both keep
 * tails in it and differ only in where chunks go.
 */
export class StreamTail<Id> {
  readonly declared: readonly FieldDecl[];
  /** Declared fields, then undeclared ones in order of appearance: what chunk headers list. */
  private readonly columns: ChunkColumn[];
  private readonly indexOf = new Map<string, number>();
  private readonly extras: InferredField[];
  private rowCount = 0;
  /** Samples of the stream already in sealed chunks: where the tail's first row stands in the stream. */
  private sealedRows = 0;
  /** The tail chunks (their ids in the backend) that a seal replaces. */
  private chunkIds: Id[] = [];
  private readonly options: StreamTailOptions;

  constructor(declared: readonly FieldDecl[], extras: readonly InferredField[], options: StreamTailOptions) {
    this.declared = declared;
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
   * Counts a tail chunk in (one this tail wrote, or one already in the store: a writer that reopens a
   * run, crash recovery). Its samples stay in the store, not in memory, until the seal reads them.
   */
  adopt(id: Id, rows: number): void {
    this.chunkIds.push(id);
    this.rowCount += rows;
  }

  /**
   * Encodes a batch as the tail chunk of one commit. Returns it, whether the tail is now due to be
   * sealed, and whether the undeclared fields changed (their list is kept with the stream).
   */
  append(input: ColumnBatch): { chunk: ChunkToWrite; extrasChanged: boolean } {
    const { batch: fitted, changed: extrasChanged } = this.learn(input);
    const batch = fitted;
    const blocks = [encodeBlock(batch, this.columns, this.indexOf, 0, batch.t.length, 'raw')];
    return { chunk: this.chunkOf(blocks), extrasChanged };
  }

  /** Records that the tail chunk of `rows` samples was written as `id`. */
  appended(id: Id, rows: number): void {
    this.adopt(id, rows);
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
   * The sealed chunks that replace the tail chunks, given their samples (decoded, oldest first). Chunks
   * begin at every `chunkSamples`-th sample of the stream and blocks at every `maxBlockRows`-th of the
   * chunk, so the chunks of streams sampled together cover the same times: a scene then reads one chunk
   * window of every actor, and a reader's cache holds whole windows. Unless `final`, the samples past the
   * last boundary stay in the tail, as one raw tail chunk (`rest`). Call `sealed()` once it is durable.
   */
  seal(
    tails: readonly ColumnBatch[],
    options: { final?: boolean } = {},
  ): { chunks: ChunkToWrite[]; rest: ChunkToWrite | null; replaces: Id[] } | null {
    if (this.chunkIds.length === 0) return null;
    const batch = concatBatches(tails, this.columns);
    const n = batch.t.length;
    const { chunkSamples } = this.options;
    // The last boundary within the tail (a multiple of chunkSamples in the stream's own count).
    const firstBoundary = chunkSamples - (this.sealedRows % chunkSamples);
    let cut =
      firstBoundary > n ? 0 : firstBoundary + Math.floor((n - firstBoundary) / chunkSamples) * chunkSamples;
    if (options.final || cut === 0) cut = options.final ? n : 0;
    if (cut === 0) return null;
    const chunks: ChunkToWrite[] = [];
    for (
      let from = 0, next = Math.min(firstBoundary, cut);
      from < cut;
      from = next, next = Math.min(cut, next + chunkSamples)
    )
      chunks.push(this.packRows(batch, from, next));
    const rest =
      cut < n ? this.chunkOf([encodeBlock(batch, this.columns, this.indexOf, cut, n, 'raw')]) : null;
    this.pendingRest = rest ? n - cut : 0;
    this.pendingSealed = cut;
    return { chunks, rest, replaces: this.chunkIds.slice() };
  }

  private pendingRest = 0;
  private pendingSealed = 0;

  /** The tail chunks' ids, oldest first: the caller reads them (decoded) for `seal`. */
  get tailIds(): readonly Id[] {
    return this.chunkIds;
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
    this.rowCount = restId === undefined ? 0 : this.pendingRest;
    this.pendingSealed = 0;
    this.pendingRest = 0;
  }

  private chunkOf(blocks: EncodedBlock[]): ChunkToWrite {
    let count = 0;
    for (const b of blocks) count += b.rows;
    return {
      data: assembleChunk(this.columns, blocks),
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
        known.type = 'json' as FieldType;
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
