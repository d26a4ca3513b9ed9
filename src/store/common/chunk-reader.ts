import {
  entryAt,
  sampleAt,
  type ColumnBatch,
  type ColumnValues,
  type EntryHead,
  type SampleEntry,
} from '../../model/columns.js';
import type { Sample } from '../../model/stream.js';
import { isChunkV2, type ChunkColumn } from './chunk-codes.js';
import { BlockTable, type BlockSpans } from './block-table.js';
import { ParsedChunk } from './chunk-decoder.js';
import {
  isNumeric,
  markAbsentRows,
  packedTarget,
  targetColumn,
  valuesPerRow,
  type RowsTarget,
} from './chunk-rows.js';
import { decodeChunk as decodeChunkV1, type DecodedChunk } from './chunk-v1.js';
import { LruCache } from './lru-cache.js';
import { copyJsonValue, type JsonValue } from '../../model/json.js';

/** A stored chunk, whichever layout wrote it: its blocks, decoded on demand. */
export interface ChunkView {
  /** The chunk's stored bytes: at most what the view holds of them. */
  readonly size: number;
  readonly n: number;
  readonly columns: readonly ChunkColumn[];
  readonly blocks: BlockSpans;
  blockAtOrBefore(t: number): number;
  decodeBlock(i: number, fields?: ReadonlySet<string>): ColumnBatch;
  decodeAll(fields?: ReadonlySet<string>): ColumnBatch;
  /** Every row decoded into `target` from its row `row` on, which it moves past them. */
  decodeInto(target: RowsTarget, fields?: ReadonlySet<string>): void;
  /** Reads the whole chunk at once (its blocks are about to be decoded one after another). */
  loadAll(): void;
  /** Forgets the bytes of its blocks read so far (it is cached decoded whole); read again when asked. */
  releaseBytes?(): void;
  /**
   * Block i's last row at or before t as a sample, decoding no block whole (undefined: the block begins
   * after t); a layout without it has its block decoded.
   */
  sampleAtOrBefore?(i: number, t: number, head?: EntryHead): Sample | SampleEntry | undefined;
}

/** Opens a chunk of either layout; damage is an `io` error naming `where`. */
export function openChunk(data: Uint8Array, where: string): ChunkView {
  return isChunkV2(data)
    ? ParsedChunk.parse(data, where)
    : new V1Chunk(decodeChunkV1(data, where), data.length);
}

/** A chunk of the first layout: one block, decoded whole (it has no blocks, nor a checksum). */
class V1Chunk implements ChunkView {
  readonly size: number;
  readonly n: number;
  readonly columns: ChunkColumn[];
  readonly blocks: BlockTable;
  private readonly batch: ColumnBatch;
  constructor(decoded: DecodedChunk, size: number) {
    this.size = size;
    this.n = decoded.n;
    this.columns = decoded.columns.map((c) => ({
      name: c.name,
      type: c.type,
      ...(c.length ? { length: c.length } : {}),
    }));
    this.blocks = new BlockTable(1);
    // One block of the whole chunk; a v1 chunk has no block records (no offsets, no CRCs of its own).
    this.blocks.set(0, decoded.n, decoded.t[0]!, decoded.t[decoded.n - 1]!, 0, size, 0);
    const columns: Record<string, ColumnValues> = {};
    for (const c of decoded.columns) {
      const numeric = isNumeric(c);
      const width = valuesPerRow(c);
      const count = c.values.length / width;
      const out: ColumnValues = numeric
        ? new Float64Array(decoded.n * width).fill(NaN)
        : new Array<unknown>(decoded.n);
      for (let row = 0; row < decoded.n; row++) {
        const index = c.rowIndex ? c.rowIndex[row]! : row;
        if (index < 0) continue;
        if (c.type === 'vec')
          for (let k = 0; k < width; k++)
            (out as Float64Array)[row * width + k] = c.values[k * count + index] as number;
        else if (numeric) (out as Float64Array)[row] = Number(c.values[index]);
        else (out as unknown[])[row] = c.values[index];
      }
      columns[c.name] = out;
    }
    this.batch = { t: decoded.t, step: decoded.step, columns };
  }

  blockAtOrBefore(t: number): number {
    return this.blocks.begin(0) <= t ? 0 : -1;
  }

  decodeBlock(_i: number, fields?: ReadonlySet<string>): ColumnBatch {
    if (!fields) return this.batch;
    const columns: Record<string, ColumnValues> = {};
    for (const name of fields) if (name in this.batch.columns) columns[name] = this.batch.columns[name]!;
    return { t: this.batch.t, step: this.batch.step, columns };
  }

  decodeAll(fields?: ReadonlySet<string>): ColumnBatch {
    return this.decodeBlock(0, fields);
  }

  decodeInto(target: RowsTarget, fields?: ReadonlySet<string>): void {
    copyRowsInto(this.decodeBlock(0, fields), this.columns, 0, this.n, target);
  }

  loadAll(): void {}
}

/** Where a chunk is: what an index of a stream's chunks holds, in (begin, id) order. */
export interface ChunkRef<Id> {
  id: Id;
  begin: number;
  end: number;
  /** The stream it belongs to, for error messages. */
  stream?: string;
}

/** The share of the bound on chunks decoded whole that chunks read on (and ahead) may take. */
const READ_ON_ROOM = 0.75;
/** How many chunks touched once are remembered per stream for the read-ahead. */
const TOUCHED_CHUNKS_KEPT = 16;
/** Streams newly browsed kept for a backend that has not asked for them (takeBrowsed). */
const MAX_BROWSED_LATELY = 4096;

/**
 * Opened chunks and decoded blocks, the least recently used out first. A scene touches one block per
 * actor; with 200 actors and a few hundred samples a block the cache holds minutes of a run.
 *
 * Read-ahead: the first block read from a chunk is decoded alone (a fresh process's first scene decodes
 * one block per actor, not whole chunks), and when a second block of the same chunk is wanted the whole
 * chunk is decoded, because a chunk read twice is read on (playback, scrubbing, random scenes over a
 * run). The stream is then being browsed: the chunks of it touched once so far are decoded whole with
 * it, and its next chunks at their first touch. A reader moving about a run pays one decoding burst per
 * chunk window, which keeps the 99th percentile of a scene's time low. A chunk decoded whole is kept as
 * one batch (chunk-wide columns), not as a batch per block: a twentieth of the objects for the garbage
 * collector to trace and move once a run is cached.
 */
export class ChunkCache<Id> {
  private readonly chunks: LruCache<Id, ChunkView>;
  /** Blocks decoded alone (a chunk's first touch, or a read of some fields). */
  private readonly blocks: LruCache<string | number, ColumnBatch>;
  /** Chunks decoded whole, as one batch each. */
  private readonly wholes: LruCache<string | number, ColumnBatch>;
  /** Chunks with exactly one block decoded: the next block of them reads the whole chunk. */
  private readonly touchedOnce = new LruCache<Id, number>(4096);
  /** Streams (as the backend names them) that have had a chunk read on. */
  private readonly browsed = new LruCache<string, true>(16_384);
  /**
   * Of each stream not browsed yet, the last chunks touched once (ids only: their views stay in the
   * chunk cache, or are not read on): read on with the first one read on.
   */
  private readonly touchedOfStream = new LruCache<string, Id[]>(16_384);
  /** Streams browsed since the backend last asked (takeBrowsed), for its read-ahead around them. */
  private browsedLately: { run: number; stream: string }[] = [];

  /**
   * Bounds: opened chunks by their stored bytes and their block tables, 128 MiB (a view holds at most
   * those bytes, and a long run's many small chunks hold their tables beside them; a bound on their
   * number held as many full chunks as a smooth stream's chunks of a few pages, and scenes over an hour
   * of a town loaded most of theirs again from the file), decoded data by its bytes: blocks decoded
   * alone, 32 MiB by default, chunks decoded whole, 256 MiB (a 200-actor run of 100 s at 100 Hz is about
   * 160 MiB decoded). A count of decoded chunks bounded a server's memory
   * by the width of the runs it served rather than by what it can spare. The blocks are sized for what
   * a server's pages play, the window playing and the next for a few pages: twice that, the blocks of
   * windows sought and left behind were most of a server's memory on a long run (performance-history.md).
   */
  constructor(options: { chunkBytes?: number; blockBytes?: number; wholeBytes?: number } = {}) {
    this.chunks = new LruCache(
      options.chunkBytes ?? 128 * 2 ** 20,
      (view) => view.size + view.blocks.memoryBytes,
    );
    this.blocks = new LruCache(options.blockBytes ?? 32 * 2 ** 20, batchBytes);
    this.wholes = new LruCache(options.wholeBytes ?? 256 * 2 ** 20, batchBytes);
  }

  /** The chunk opened earlier, if the cache still holds it. */
  opened(id: Id): ChunkView | undefined {
    return this.chunks.get(id);
  }

  /**
   * The chunk opened earlier, or loaded now. `keep` false: a transient read (ReadColumnsArgs.transient),
   * which uses what the cache holds and adds nothing to it.
   */
  chunk(id: Id, load: () => ChunkView | undefined, keep = true): ChunkView | undefined {
    let view = this.chunks.get(id);
    if (!view) {
      view = load();
      if (view && keep) this.chunks.set(id, view);
    }
    return view;
  }

  /**
   * A chunk's rows as one batch (the fields asked for, t and step always): every block decoded straight
   * into chunk-wide columns, so that a trajectory or a window is a few arrays per chunk, not a few per
   * block copied again.
   */
  whole(id: Id, view: ChunkView, fields?: ReadonlySet<string>, keep = true): ColumnBatch {
    const key = this.keyOf(id, 0, fields);
    let batch = this.wholes.get(key);
    if (batch === undefined) {
      batch = view.decodeAll(fields);
      if (keep) this.wholes.set(key, batch);
      // Kept decoded, every field: its stored bytes are not needed until the batch is evicted.
      if (keep && fields === undefined) view.releaseBytes?.();
    }
    return batch;
  }

  /**
   * What a read of [from, to] needs of a chunk, in time order: the chunk as one batch when it is cached
   * whole or the window takes all its blocks, else only the blocks the window touches, each decoded
   * alone (and kept with `keep`). A viewer's window of seconds over chunks of minutes decodes a block or
   * two of each, not every chunk whole: a server playing an hour-long run to several pages holds what
   * they look at, not the run.
   */
  covering(
    id: Id,
    view: ChunkView,
    from: number,
    to: number,
    fields?: ReadonlySet<string>,
    keep = true,
  ): ColumnBatch[] {
    const whole = this.wholes.get(this.keyOf(id, 0, fields));
    if (whole) return [whole];
    const blocks = view.blocks;
    let first = Math.max(0, view.blockAtOrBefore(from));
    // Time may stand still across a block boundary: the block before may hold rows at `from` too.
    while (first > 0 && blocks.end(first - 1) >= from) first--;
    let last = first;
    while (last + 1 < blocks.length && blocks.begin(last + 1) <= to) last++;
    if (first === 0 && last === blocks.length - 1) return [this.whole(id, view, fields, keep)];
    const out: ColumnBatch[] = [];
    for (let i = first; i <= last; i++) {
      const key = this.keyOf(id, i, fields);
      let batch = this.blocks.get(key);
      if (!batch) {
        batch = view.decodeBlock(i, fields);
        if (keep) this.blocks.set(key, batch);
      }
      out.push(batch);
    }
    return out;
  }

  /** A chunk decoded whole earlier (the fields asked for), if the cache still holds it; decodes nothing. */
  cachedWhole(id: Id, fields?: ReadonlySet<string>): ColumnBatch | undefined {
    return this.wholes.get(this.keyOf(id, 0, fields));
  }

  /**
   * Rows holding block i of a chunk: the block alone, or the whole chunk once it has been read on (a
   * caller finds its row by time in what it gets; a batch of `view.n` rows is the whole chunk). `run` and
   * `stream` name the chunk's stream for the read-ahead; without them a chunk is read on at its second
   * block only.
   */
  block(
    id: Id,
    view: ChunkView,
    i: number,
    fields?: ReadonlySet<string>,
    run?: number,
    streamName?: string,
    mayReadOn = true,
  ): ColumnBatch {
    // Without a look, never a LookedRow.
    return this.read(id, view, i, fields, run, streamName, undefined, mayReadOn) as ColumnBatch;
  }

  /**
   * Block i of a chunk decoded alone and kept, or the chunk when it is cached whole: never read on nor
   * ahead, whatever was read of the chunk before (MomentReadOptions.readAhead false).
   */
  blockAlone(id: Id, view: ChunkView, i: number, fields?: ReadonlySet<string>): ColumnBatch {
    const whole = this.wholes.get(this.keyOf(id, 0, fields));
    if (whole) return whole;
    const key = this.keyOf(id, i, fields);
    let batch = this.blocks.get(key);
    if (!batch) {
      batch = view.decodeBlock(i, fields);
      this.blocks.set(key, batch);
    }
    return batch;
  }

  /**
   * block() for a scene's row at or before `look.t`: at a chunk's first touch, that one row decoded
   * alone (`LookedRow`), nothing kept; its next read decodes the block, as a first touch otherwise does.
   */
  blockOrRow(
    id: Id,
    view: ChunkView,
    i: number,
    run: number,
    streamName: string,
    look: RowLook,
    mayReadOn = true,
  ): ColumnBatch | LookedRow {
    return this.read(id, view, i, undefined, run, streamName, look, mayReadOn);
  }

  /**
   * What block() and blockOrRow() give: a look is tried at the chunk's first touch only. `mayReadOn`
   * false: the caller's streams would not fit decoded (fitsDecoded), so chunks are not read on (blocks
   * and rows, as when the room is full).
   */
  private read(
    id: Id,
    view: ChunkView,
    i: number,
    fields?: ReadonlySet<string>,
    run?: number,
    streamName?: string,
    look?: RowLook,
    mayReadOn = true,
  ): ColumnBatch | LookedRow {
    const whole = this.wholes.get(this.keyOf(id, 0, fields));
    if (whole) return whole;
    const key = this.keyOf(id, i, fields);
    const cached = this.blocks.get(key);
    if (cached) return cached;
    if (fields || view.blocks.length === 1) {
      const batch = view.decodeBlock(i, fields);
      this.blocks.set(key, batch);
      return batch;
    }
    if (!mayReadOn || !this.hasRoomToReadOn()) return this.readBlockOrRow(id, view, i, key, look);
    // Built on a miss only: a scene of 200 actors is 200 lookups.
    const stream = streamName === undefined ? undefined : `${run}/${streamName}`;
    if (stream !== undefined && this.browsed.get(stream)) {
      this.readOn(id);
      return this.whole(id, view);
    }
    const first = this.touchedOnce.get(id);
    if (first === undefined || first === i) {
      if (first === undefined) {
        this.touchFirst(id, i, stream);
        if (look && view.sampleAtOrBefore) return new LookedRow(view.sampleAtOrBefore(i, look.t, look.head));
      }
      const batch = view.decodeBlock(i);
      this.blocks.set(key, batch);
      return batch;
    }
    if (stream === undefined) {
      this.readOn(id);
      return this.whole(id, view);
    }
    // The stream is being browsed: the other chunks of it read once so far are read on too, in the same
    // burst (a reader that came back to one place will come back to the others).
    this.browsed.set(stream, true);
    if (this.browsedLately.length < MAX_BROWSED_LATELY)
      this.browsedLately.push({ run: run!, stream: streamName! });
    for (const touched of this.touchedOfStream.get(stream) ?? []) {
      if (!this.hasRoomToReadOn()) break;
      const other = this.chunks.get(touched);
      if (other === undefined || this.touchedOnce.get(touched) === undefined) continue;
      this.readOn(touched);
      this.whole(touched, other);
    }
    this.touchedOfStream.delete(stream);
    return this.whole(id, view);
  }

  /**
   * read() once chunks decoded whole fill their room: a run that would not fit decoded (an hour of a
   * town), where chunks read on would push out those the last scenes read on and every scene at a new
   * moment would decode a chunk of every actor whole. The rule moves from chunks to blocks: a block
   * touched for the first time gives its row alone (with a look), and is decoded and kept, in the
   * blocks' own bound, when it is touched again.
   */
  private readBlockOrRow(
    id: Id,
    view: ChunkView,
    i: number,
    key: string | number,
    look: RowLook | undefined,
  ): ColumnBatch | LookedRow {
    if (look && view.sampleAtOrBefore && this.touchedOnce.get(id) !== i) {
      this.touchedOnce.set(id, i);
      return new LookedRow(view.sampleAtOrBefore(i, look.t, look.head));
    }
    const batch = view.decodeBlock(i);
    this.blocks.set(key, batch);
    return batch;
  }

  /** Notes a chunk's first touch (at block i), and the chunk among its stream's touched once. */
  private touchFirst(id: Id, i: number, stream: string | undefined): void {
    if (stream !== undefined) {
      let touched = this.touchedOfStream.get(stream);
      if (!touched) this.touchedOfStream.set(stream, (touched = []));
      touched.push(id);
      if (touched.length > TOUCHED_CHUNKS_KEPT) touched.shift();
    }
    this.touchedOnce.set(id, i);
  }

  /**
   * The streams that have become browsed since the last call (a chunk of each was read on): a backend
   * reads ahead around them in the same burst (readAhead).
   */
  takeBrowsed(): { run: number; stream: string }[] {
    const taken = this.browsedLately;
    this.browsedLately = [];
    return taken;
  }

  /**
   * Decodes a chunk whole into the cache ahead of its first touch, while chunks decoded whole take less
   * than three quarters of their bound (what is read ahead must not push out what is being read).
   * Returns whether there was room.
   */
  readAhead(id: Id, view: ChunkView): boolean {
    if (!this.hasRoomToReadOn()) return false;
    this.readOn(id);
    this.whole(id, view);
    return true;
  }

  /**
   * Whether chunks decoded whole take less than three quarters of their bound: room for more without
   * pushing out what is being read. Past it, reads ahead stop and reads decode blocks alone.
   */
  private hasRoomToReadOn(): boolean {
    return this.wholes.weight <= this.wholes.bound * READ_ON_ROOM;
  }

  /**
   * Whether `bytes` decoded (what the streams a reader goes about take: decodedRowBytes) would fit in the
   * room chunks read on may take. When they would not, reading them on only fills the room in one burst
   * (a scene many times slower than the others) with chunks that a reader going about the run will
   * rarely come back to before they are pushed out.
   */
  fitsDecoded(bytes: number): boolean {
    return bytes <= this.wholes.bound * READ_ON_ROOM;
  }

  /** Forgets that a chunk was touched once, and its one block: it is about to be decoded whole. */
  private readOn(id: Id): void {
    const first = this.touchedOnce.get(id);
    if (first === undefined) return;
    this.touchedOnce.delete(id);
    this.blocks.delete(this.keyOf(id, first));
  }

  /** A number when it can be (a string key is an allocation per lookup, 200 of them a scene). */
  private keyOf(id: Id, i: number, fields?: ReadonlySet<string>): string | number {
    return typeof id === 'number' && !fields
      ? id * 65_536 + i
      : `${String(id)}/${i}${fields ? `/${[...fields].join(',')}` : ''}`;
  }

  clear(): void {
    this.chunks.clear();
    this.blocks.clear();
    this.wholes.clear();
    this.touchedOnce.clear();
    this.browsed.clear();
    this.touchedOfStream.clear();
    this.browsedLately = [];
  }
}

/**
 * About what a row of the stream of a row bracketRows found takes decoded, as batchBytes counts: its
 * batch's bytes a row, or for a row decoded alone t and step and a number (a vec's several) or a
 * reference for each field it holds. From the rows found, not the declared fields: a simulator may
 * declare fields it never sends, and a chunk lists every declared field.
 */
export function decodedRowBytes(found: ReturnType<typeof bracketRows> | undefined): number {
  if (found?.before) return batchBytes(found.before.batch) / found.before.batch.t.length;
  if (!found?.looked) return 0;
  const row = found.looked as Record<string, unknown>;
  let bytes = 16;
  // Keys read in place: Object.entries made an array a field, 200 rows of them in a fresh process's
  // first scene.
  for (const name in row) {
    if (ROW_HEAD_NAMES.has(name)) continue;
    const value = row[name];
    bytes += 8 * (Array.isArray(value) && typeof value[0] === 'number' ? value.length : 1);
  }
  return bytes;
}

/** What a sample or a scene's entry holds besides its fields. */
const ROW_HEAD_NAMES = new Set(['id', 'kind', 't', 'step']);

/** About what a decoded batch holds in memory: its numbers, and a reference per value of other columns. */
export function batchBytes(batch: ColumnBatch): number {
  let bytes = batch.t.byteLength + batch.step.byteLength;
  for (const name in batch.columns) {
    const values = batch.columns[name]!;
    bytes += values instanceof Float64Array ? values.byteLength : values.length * 8;
  }
  return bytes;
}

/** Index of the last ref that begins at or before t, or -1. */
export function lastBeginAtOrBefore<Id>(index: readonly ChunkRef<Id>[], t: number): number {
  let lo = 0;
  let hi = index.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (index[mid]!.begin <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Index of the first ref that begins at or after t, or the index's length. */
export function firstBeginAtOrAfter<Id>(index: readonly ChunkRef<Id>[], t: number): number {
  let lo = 0;
  let hi = index.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (index[mid]!.begin < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Row of the last time <= t in sorted times, or -1. */
export function lastAtOrBefore(t: Float64Array, time: number): number {
  let lo = 0;
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (t[mid]! <= time) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Row of the first time >= t in sorted times, or t.length. */
export function firstAtOrAfter(t: Float64Array, time: number): number {
  let lo = 0;
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (t[mid]! < time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Row `row` of a cached batch as a sample its caller may keep and change (a scene's): sampleAt, with
 * its JSON values copied (numbers and strings are values, a vec field an array of its own already).
 */
export function ownSampleAt(batch: ColumnBatch, columns: readonly ChunkColumn[], row: number): Sample {
  return ownJsonValues(sampleAt(batch, columns, row), columns);
}

/** Row `row` of a cached batch as a scene's entry its caller may keep and change (entryAt). */
export function ownEntryAt(
  batch: ColumnBatch,
  columns: readonly ChunkColumn[],
  row: number,
  head: EntryHead,
): SampleEntry {
  return ownJsonValues(entryAt(batch, columns, row, head.id, head.kind), columns);
}

/** A row's JSON values copied: the batch they came from may be the cache's. */
function ownJsonValues<R extends Record<string, unknown>>(row: R, columns: readonly ChunkColumn[]): R {
  const values = row as Record<string, unknown>;
  for (const name of jsonColumnsOf(columns))
    if (values[name] !== undefined) values[name] = copyJsonValue(values[name] as JsonValue);
  return row;
}

/**
 * The names of a column list's JSON columns, found once per list (a scene makes 200 samples: looking
 * at every column of each was a tenth of a scene's time).
 */
const jsonColumns = new WeakMap<readonly ChunkColumn[], readonly string[]>();
function jsonColumnsOf(columns: readonly ChunkColumn[]): readonly string[] {
  let names = jsonColumns.get(columns);
  if (!names) jsonColumns.set(columns, (names = columns.filter((c) => c.type === 'json').map((c) => c.name)));
  return names;
}

/** Rows [from, to) of a batch, as arrays of their own. */
export function sliceBatch(
  batch: ColumnBatch,
  columns: readonly ChunkColumn[],
  from: number,
  to: number,
): ColumnBatch {
  // Copies, not views of the cache's arrays (nor the cached batch itself), JSON values included: a
  // caller may change what it reads (a unit conversion in place, say) without changing what the next
  // read of the chunk gets, in its process or, on a server, another client's.
  const target = packedTarget(
    to - from,
    columns.filter((c) => batch.columns[c.name] !== undefined),
  );
  copyRowsInto(batch, columns, from, to, target);
  const sliced = target.batch;
  if (batch.types) sliced.types = batch.types;
  return sliced;
}

/**
 * Rows [from, to) of a decoded batch copied into `target` from its row `row` on, which it moves past
 * them. Copies, JSON values included: the batch may be the cache's.
 */
export function copyRowsInto(
  batch: ColumnBatch,
  columns: readonly ChunkColumn[],
  from: number,
  to: number,
  target: RowsTarget,
): void {
  const rows = to - from;
  target.batch.t.set(batch.t.subarray(from, to), target.row);
  target.batch.step.set(batch.step.subarray(from, to), target.row);
  for (const c of columns) {
    const values = batch.columns[c.name];
    if (values === undefined) continue;
    const whole = targetColumn(target, c);
    if (values instanceof Float64Array) {
      const width = valuesPerRow(c);
      (whole as Float64Array).set(values.subarray(from * width, to * width), target.row * width);
    } else {
      const list = whole as unknown[];
      for (let i = 0; i < rows; i++)
        list[target.row + i] =
          c.type === 'json' ? copyJsonValue(values[from + i] as JsonValue) : values[from + i];
    }
  }
  markAbsentRows(target, batch, rows);
  target.row += rows;
}

/**
 * The chunks of an index (in begin order) that may hold samples in [from, to]: from the first that
 * contains `from` to the last that begins by `to`. Time may stand still: chunks before the last one
 * beginning at or before `from` may end at `from`.
 */
export function chunksCovering<Id>(index: readonly ChunkRef<Id>[], from: number, to: number): ChunkRef<Id>[] {
  const last = lastBeginAtOrBefore(index, from);
  let first = last < 0 ? 0 : firstBeginAtOrAfter(index, index[last]!.begin);
  while (first > 0 && index[first - 1]!.end >= from) first--;
  return index.slice(first, lastBeginAtOrBefore(index, to) + 1);
}

/**
 * Where block b's first row is in a batch the cache gave for it: 0 in the block alone, its place in the
 * chunk in a whole chunk's batch (the cache may decode the chunk whole when block b is asked for).
 */
export function firstRowOfBlock(view: ChunkView, batch: ColumnBatch, b: number): number {
  if (batch.t.length < view.n) return 0;
  let row = 0;
  for (let k = 0; k < b; k++) row += view.blocks.rows(k);
  return row;
}

/** A row's place: which chunk, which block (decoded), which row of the batch holding it. */
export interface RowAt<Id> {
  ref: ChunkRef<Id>;
  view: ChunkView;
  batch: ColumnBatch;
  row: number;
}

/** A scene's read of a block (ChunkCache.block): its row at or before t, as an entry with `head`. */
export interface RowLook {
  t: number;
  head?: EntryHead;
}

/** What ChunkCache.block gives at a chunk's first look: the row decoded alone (undefined: none). */
export class LookedRow {
  readonly row: Sample | SampleEntry | undefined;
  constructor(row: Sample | SampleEntry | undefined) {
    this.row = row;
  }
}

/**
 * The latest row at or before t and the first after it (unless `wantAfter` is false), over a stream's
 * chunk index. `open` gives a chunk's view, or undefined when it vanished under a stale index (the
 * caller reloads and retries). Without `wantAfter`, `decodeBefore` (decode's when absent) reads the
 * block holding t and may give its row decoded alone (`looked`), where the chunk has not been read.
 */
export function bracketRows<Id>(
  index: readonly ChunkRef<Id>[],
  t: number,
  open: (ref: ChunkRef<Id>) => ChunkView | undefined,
  decode: (ref: ChunkRef<Id>, view: ChunkView, block: number) => ColumnBatch | undefined,
  wantAfter = true,
  decodeBefore?: (ref: ChunkRef<Id>, view: ChunkView, block: number) => ColumnBatch | LookedRow | undefined,
): { before?: RowAt<Id>; after?: RowAt<Id>; looked?: Sample | SampleEntry } | undefined {
  const out: { before?: RowAt<Id>; after?: RowAt<Id> } = {};
  const k = lastBeginAtOrBefore(index, t);
  if (k >= 0) {
    const ref = index[k]!;
    const view = open(ref);
    if (!view) return undefined;
    const b = view.blockAtOrBefore(t);
    const batch = !wantAfter && decodeBefore ? decodeBefore(ref, view, b) : decode(ref, view, b);
    if (!batch) return undefined;
    if (batch instanceof LookedRow) return batch.row === undefined ? {} : { looked: batch.row };
    const row = lastAtOrBefore(batch.t, t);
    out.before = { ref, view, batch, row };
    // A scene without interpolation stops here: the row after may be in a block (or chunk) of its own.
    if (!wantAfter && row >= 0) return out;
    if (row + 1 < batch.t.length) {
      out.after = { ref, view, batch, row: row + 1 };
      return out;
    }
    // The next block, unless what was decoded is the whole chunk already.
    if (batch.t.length < view.n && b + 1 < view.blocks.length) {
      const next = decode(ref, view, b + 1);
      if (!next) return undefined;
      out.after = { ref, view, batch: next, row: firstRowOfBlock(view, next, b + 1) };
      return out;
    }
  }
  const next = index[k + 1];
  if (next) {
    const view = open(next);
    if (!view) return undefined;
    const batch = decode(next, view, 0);
    if (!batch) return undefined;
    out.after = { ref: next, view, batch, row: 0 };
  }
  return out;
}
