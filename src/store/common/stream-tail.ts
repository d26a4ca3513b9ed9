import { columnFields, type ColumnBatch } from '../../model/columns.js';
import type { FieldDecl, FieldType, InferredField } from '../../model/stream.js';
import {
  assembleChunk,
  concatBatches,
  decodeEncodedBlock,
  encodeBlock,
  type ChunkColumn,
  type EncodedBlock,
} from './chunk-format.js';

export interface StreamTailOptions {
  /** A stream's tail is sealed into one chunk once it holds this many samples. */
  chunkSamples: number;
  /** No block holds more rows than this: the scene at t decodes one block per actor. */
  maxBlockRows: number;
  /** Sealing packs blocks smaller than this again, merged: a block per committed step compresses badly. */
  minBlockRows: number;
}

export const DEFAULT_TAIL_OPTIONS: StreamTailOptions = {
  chunkSamples: 2048,
  maxBlockRows: 256,
  minBlockRows: 64,
};

/** A chunk to write: its bytes and the time range and count its row or document keeps beside it. */
export interface ChunkToWrite {
  data: Uint8Array;
  begin: number;
  end: number;
  count: number;
}

/**
 * One stream's unsealed samples, as the writer of a backend keeps them: each append becomes one tail
 * chunk (durable at once), and when the tail holds a chunk's worth its encoded blocks are assembled
 * into one sealed chunk that replaces the tail chunks. Backend-neutral: the SQLite writer thread and
 * the MongoDB backend both keep their streams' tails in it and differ only in where chunks go.
 */
export class StreamTail<Id> {
  readonly declared: readonly FieldDecl[];
  /** Declared fields, then undeclared ones in order of appearance: what chunk headers list. */
  private readonly columns: ChunkColumn[];
  private readonly indexOf = new Map<string, number>();
  private readonly extras: InferredField[];
  private blocks: EncodedBlock[] = [];
  private rows = 0;
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

  get tailChunkIds(): readonly Id[] {
    return this.chunkIds;
  }

  /** Adopts tail chunks already in the store (a writer that reopens a run, crash recovery). */
  adopt(id: Id, blocks: EncodedBlock[]): void {
    this.chunkIds.push(id);
    for (const b of blocks) {
      this.blocks.push(b);
      this.rows += b.rows;
    }
  }

  /**
   * Encodes a batch as the tail chunk of one commit. Returns it, whether the tail is now due to be
   * sealed, and whether the undeclared fields changed (their list is kept with the stream).
   */
  append(input: ColumnBatch): { chunk: ChunkToWrite; blocks: EncodedBlock[]; extrasChanged: boolean } {
    const { batch: fitted, changed: extrasChanged } = this.learnColumns(input);
    const batch = fitted;
    const n = batch.t.length;
    const blocks: EncodedBlock[] = [];
    const per = this.options.maxBlockRows;
    // Even parts, so a batch of 300 is two blocks of 150, not 256 and 44.
    const parts = Math.ceil(n / per);
    for (let k = 0; k < parts; k++) {
      const from = Math.floor((k * n) / parts);
      const to = Math.floor(((k + 1) * n) / parts);
      blocks.push(encodeBlock(batch, this.columns, this.indexOf, from, to));
    }
    return { chunk: this.chunkOf(blocks), blocks, extrasChanged };
  }

  /** Records that the tail chunk of `blocks` was written as `id`. */
  appended(id: Id, blocks: EncodedBlock[]): void {
    this.adopt(id, blocks);
  }

  get dueForSeal(): boolean {
    return this.rows >= this.options.chunkSamples;
  }

  get hasTail(): boolean {
    return this.chunkIds.length > 0;
  }

  /**
   * The sealed chunks (about `chunkSamples` rows each) that replace the tail chunks, or null when there
   * is nothing to gain (a tail of one chunk of a right size whose blocks are all large enough is already
   * as good as sealed). Blocks are regrouped as they are; only small ones are packed again. Call
   * `sealed()` once the replacement is durable.
   */
  seal(): { chunks: ChunkToWrite[]; replaces: Id[] } | null {
    if (this.chunkIds.length === 0) return null;
    const blocks = this.repack(this.blocks);
    if (this.chunkIds.length === 1 && blocks === this.blocks && this.rows <= this.options.chunkSamples * 1.5)
      return null;
    const groups: EncodedBlock[][] = [[]];
    let rows = 0;
    for (const b of blocks) {
      if (rows >= this.options.chunkSamples) {
        groups.push([]);
        rows = 0;
      }
      groups[groups.length - 1]!.push(b);
      rows += b.rows;
    }
    // A short remainder joins the chunk before it rather than standing alone.
    if (groups.length > 1 && rows < this.options.chunkSamples / 2)
      groups[groups.length - 2]!.push(...groups.pop()!);
    const chunks = groups.map((g) => this.chunkOf(g));
    return { chunks, replaces: this.chunkIds.slice() };
  }

  sealed(): void {
    this.blocks = [];
    this.rows = 0;
    this.chunkIds = [];
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

  /** Runs of small blocks decoded, merged and packed again; large blocks kept as they are. */
  private repack(blocks: EncodedBlock[]): EncodedBlock[] {
    const min = this.options.minBlockRows;
    if (blocks.every((b) => b.rows >= min)) return blocks;
    const out: EncodedBlock[] = [];
    let run: EncodedBlock[] = [];
    const flush = (): void => {
      if (run.length === 0) return;
      if (run.length === 1) out.push(run[0]!);
      else {
        const batch = concatBatches(
          run.map((b) => decodeEncodedBlock(b, this.columns)),
          this.columns,
        );
        const n = batch.t.length;
        const parts = Math.ceil(n / this.options.maxBlockRows);
        for (let k = 0; k < parts; k++)
          out.push(
            encodeBlock(
              batch,
              this.columns,
              this.indexOf,
              Math.floor((k * n) / parts),
              Math.floor(((k + 1) * n) / parts),
            ),
          );
      }
      run = [];
    };
    for (const b of blocks) {
      if (b.rows >= min) {
        flush();
        out.push(b);
      } else run.push(b);
    }
    flush();
    return out;
  }

  /**
   * Adds the batch's undeclared columns to the list. A column seen with two types becomes json from then
   * on (blocks already written keep their records: readers decode each record by its codec), and the
   * batch's values of it are converted to JSON values.
   */
  private learnColumns(batch: ColumnBatch): { batch: ColumnBatch; changed: boolean } {
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
  const chunks: ChunkToWrite[] = [];
  const n = batch.t.length;
  for (let from = 0; from < n; from += options.chunkSamples) {
    const to = Math.min(n, from + options.chunkSamples);
    chunks.push(tail.append(sliceRows(batch, from, to)).chunk);
  }
  return { chunks, extras: tail.extraFields };
}

function sliceRows(batch: ColumnBatch, from: number, to: number): ColumnBatch {
  if (from === 0 && to === batch.t.length) return batch;
  const columns: ColumnBatch['columns'] = {};
  for (const name in batch.columns) {
    const v = batch.columns[name]!;
    const width = v instanceof Float64Array ? v.length / batch.t.length : 1;
    columns[name] = v instanceof Float64Array ? v.subarray(from * width, to * width) : v.slice(from, to);
  }
  const out: ColumnBatch = { t: batch.t.subarray(from, to), step: batch.step.subarray(from, to), columns };
  if (batch.types) out.types = batch.types;
  return out;
}
