import { samplesToColumns, type ColumnBatch, type EntryHead, type SampleEntry } from '../../model/columns.js';
import { SimrecError } from '../../model/errors.js';
import type { ActorPresence } from '../../model/run.js';
import type {
  BracketArgs,
  ColumnAppend,
  LatestEntriesArgs,
  ReadColumnsArgs,
  SampleBracket,
  StoreBackend,
} from '../../model/store-port.js';
import type { Sample, StreamSchema } from '../../model/stream.js';
import {
  bracketRows,
  chunksCovering,
  copyRowsInto,
  decodedRowBytes,
  firstAtOrAfter,
  lastAtOrBefore,
  ownEntryAt,
  ownSampleAt,
  sliceBatch,
  type ChunkRef,
  type ChunkView,
  type LookedRow,
  type RowLook,
} from '../common/chunk-reader.js';
import { orderedColumns, rowsTarget } from '../common/chunk-rows.js';
import { loadStoredChunk } from './sqlite-chunk-rows.js';
import { readColumnsJoinedViaBatches } from '../common/sample-reads.js';
import { encodeChunks } from '../common/stream-tail.js';
import { INSERT_SEALED_CHUNK, sealedChunkParts, wrapIoError } from './sqlite-chunk-writer.js';
import type { SqliteRuns } from './sqlite-runs.js';
import { SET_STREAM_COUNTS } from './sqlite-schema.js';
import { json, type Row, type SqliteStoreFile } from './sqlite-store-file.js';

/**
 * Every run's index at open, for stores of up to this many chunks: what opening costs every command on
 * the store, one that reads nothing included. Larger stores look a run's first scene up and read the
 * chunk lists of the streams later reads need (chunksAt, chunkIndex).
 */
export const PRELOAD_INDEX_CHUNKS = 5_000;

/** A stream's key in the chunks table, from its run and id (@run, @stream): through streams' unique index. */
const STREAM_KEY = '(SELECT key FROM streams WHERE run_id = @run AND id = @stream)';

/** A chunk's id, begin and end, as its index gives them (raw rows). */
type ChunkRow = [id: number, begin: number, end: number];

function chunkRefs(rows: readonly ChunkRow[], stream: string): ChunkRef<number>[] {
  return rows.map(([id, begin, end]) => ({ id, begin, end, stream }));
}

/** At most this many blocks decoded when the store opens, to warm the read path (warmDecoders). */
const WARM_BLOCKS = 32;

/**
 * SqliteBackend's samples: appends handed to the writer, derived streams written whole, and reads
 * through each run's chunk index and the cache of opened chunks and decoded blocks.
 */
export class SqliteSamples {
  private readonly file: SqliteStoreFile;
  private readonly runs: SqliteRuns;
  /** The backend as a whole, for reads built on its other reads (sample-reads.ts). */
  private readonly backend: StoreBackend;

  constructor(file: SqliteStoreFile, runs: SqliteRuns, backend: StoreBackend) {
    this.file = file;
    this.runs = runs;
    this.backend = backend;
  }

  appendColumns(run: number, appends: ColumnAppend[], presence?: ActorPresence[]): Promise<void> {
    // Presence goes with the samples into the writer thread's transaction: one fsync, off this thread,
    // and never samples durable without the leave that came with them. Not an async function: the
    // columns are packed and posted at the call, and a suspended async frame would keep them alive,
    // through the young collections of the commit's whole flight, until the writer answers.
    let written: Promise<void>;
    try {
      written = this.file.writer.append(run, appends, presence);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the writer's failure, rejected as it came
      written = Promise.reject(error);
    }
    // The writer committed on its own connection: what this one cached of the run is stale.
    return written.finally(() => this.file.forgetRun(run));
  }

  async putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void> {
    this.file.requireRun(run);
    const batch = samplesToColumns(samples, schema.fields);
    const { chunks, extras } = encodeChunks(schema.fields, batch, this.file.tailOptions);
    try {
      this.file.db
        .transaction(() => {
          this.file
            .stmt(
              `INSERT INTO streams (run_id, id, schema) VALUES (?, ?, ?)
           ON CONFLICT (run_id, id) DO UPDATE SET schema = excluded.schema`,
            )
            .run(run, schema.id, json(schema));
          const key = (
            this.file.stmt('SELECT key FROM streams WHERE run_id = ? AND id = ?').get(run, schema.id) as Row
          ).key as number;
          this.file.stmt('DELETE FROM chunks WHERE stream_key = ?').run(key);
          for (const c of chunks)
            this.file
              .stmt(INSERT_SEALED_CHUNK)
              .run(key, c.begin, c.end, c.count, ...sealedChunkParts(c.data));
          this.file.stmt('UPDATE streams SET extra_fields = ? WHERE key = ?').run(json(extras), key);
          this.file
            .stmt(SET_STREAM_COUNTS)
            .run(key, samples.length, samples[0]?.t ?? null, samples.at(-1)?.t ?? null);
        })
        .immediate();
    } catch (error) {
      throw wrapIoError(error, `${this.file.location}: writing derived stream ${schema.id} of run ${run}`);
    }
    this.file.forgetRun(run);
  }

  async *readColumns(args: ReadColumnsArgs): AsyncIterable<ColumnBatch> {
    const stream = this.runs.streamMeta(args.run, args.stream);
    let from = args.from ?? Number.MIN_SAFE_INTEGER;
    const to = args.to ?? Number.MAX_SAFE_INTEGER;
    const fields = args.fields ? new Set(args.fields) : undefined;
    // Rows at time `from` already yielded. Time may stand still, so after an index reload the chunks
    // read again from `from` on hold some of them: that many are skipped then, and only then (the next
    // chunk of one pass may begin at the time the last one ended, with rows not yet yielded).
    let yieldedAtFrom = 0;
    reading: for (;;) {
      let skip = yieldedAtFrom;
      const index = this.chunkIndex(args.run, stream.id);
      // Copied (a slice): a write while this generator is paused replaces the index, not this list.
      const refs = chunksCovering(index, from, to);
      for (const ref of refs) {
        args.signal?.throwIfAborted();
        if (ref.end < from) continue;
        const view = this.openChunk(args.run, stream.id, ref.id, !args.transient);
        if (!view) {
          // Another connection merged this stream's tail chunks while we read: read on from where we
          // were, in the merged ones.
          this.file.forgetRun(args.run);
          continue reading;
        }
        const batches = unlessReplaced(() =>
          this.file.cache.covering(ref.id, view, from, to, fields, !args.transient),
        );
        if (!batches) {
          this.file.forgetRun(args.run);
          continue reading;
        }
        for (const batch of batches) {
          let lo = firstAtOrAfter(batch.t, from);
          const hi = lastAtOrBefore(batch.t, to) + 1;
          for (; skip > 0 && lo < hi && batch.t[lo] === from; skip--) lo++;
          if (hi <= lo) continue;
          skip = 0;
          const lastT = batch.t[hi - 1]!;
          let atLast = 0;
          for (let i = hi - 1; i >= lo && batch.t[i] === lastT; i--) atLast++;
          yieldedAtFrom = lastT === from ? yieldedAtFrom + atLast : atLast;
          from = lastT;
          yield sliceBatch(batch, view.columns, lo, hi);
        }
      }
      return;
    }
  }

  async readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch> {
    const stream = this.runs.streamMeta(args.run, args.stream);
    const from = args.from ?? Number.MIN_SAFE_INTEGER;
    const to = args.to ?? Number.MAX_SAFE_INTEGER;
    const fields = args.fields ? new Set(args.fields) : undefined;
    // Another connection (this process's writer thread, another process) may merge tails under the
    // index between two chunk reads: then a chunk is gone, and the read starts again on a fresh index.
    for (let attempt = 0; attempt < 3; attempt++) {
      args.signal?.throwIfAborted();
      const joined = this.joinChunks(args.run, stream.id, from, to, fields, args.transient === true);
      if (joined) return joined;
      this.file.forgetRun(args.run);
    }
    // A stream sealed under every attempt: readColumns, which reads on from where it was, joined.
    return readColumnsJoinedViaBatches(this.backend, args);
  }

  /**
   * The samples in [from, to] as one batch: chunks wholly inside decoded straight into its columns (not
   * cached: a trajectory of a long run would push out what a viewer reads), the one or two a window
   * cuts taken from the cache and copied in. Against readColumns joined afterwards, a whole-run
   * trajectory allocates and copies a third as much. `transient`: chunks it opens and cuts are not
   * cached either (a writer walking a run a window at a time filled the cache with chunks it had done
   * with: the MCAP export's peak up to its 256 MiB of decoded chunks). Undefined when a chunk vanished
   * (see readColumnsJoined).
   */
  private joinChunks(
    run: number,
    stream: string,
    from: number,
    to: number,
    fields: ReadonlySet<string> | undefined,
    transient: boolean,
  ): ColumnBatch | undefined {
    const parts: {
      ref: ChunkRef<number>;
      view: ChunkView;
      cut?: { batch: ColumnBatch; lo: number; hi: number };
    }[] = [];
    let n = 0;
    for (const ref of chunksCovering(this.chunkIndex(run, stream), from, to)) {
      if (ref.end < from) continue;
      const view = this.openChunk(run, stream, ref.id, !transient);
      if (!view) return undefined;
      if (ref.begin >= from && ref.end <= to) {
        parts.push({ ref, view });
        n += view.n;
        continue;
      }
      const batch = unlessReplaced(() => this.file.cache.whole(ref.id, view, fields, !transient));
      if (!batch) return undefined;
      const lo = firstAtOrAfter(batch.t, from);
      const hi = lastAtOrBefore(batch.t, to) + 1;
      if (hi <= lo) continue;
      parts.push({ ref, view, cut: { batch, lo, hi } });
      n += hi - lo;
    }
    const target = rowsTarget(n);
    for (const { ref, view, cut } of parts) {
      const cached = cut ? cut.batch : this.file.cache.cachedWhole(ref.id, fields);
      if (cached) copyRowsInto(cached, view.columns, cut?.lo ?? 0, cut?.hi ?? view.n, target);
      else
        try {
          view.decodeInto(target, fields);
        } catch (error) {
          // Its blocks are read now, and the chunk may have been replaced since its frame was.
          if (error instanceof SimrecError && error.code === 'conflict') return undefined;
          throw error;
        }
    }
    return orderedColumns(
      target,
      parts.map((p) => p.view.columns),
    );
  }

  async bracketMany(run: number, args: BracketArgs): Promise<SampleBracket[]> {
    const rows = this.rowsAt(run, args.streams, args.t, {
      after: args.after !== false,
      fieldNames: args.fields,
      readAhead: args.readAhead !== false,
    });
    return rows.map((found) => {
      const bracket: SampleBracket = {};
      // Without heads a row decoded alone is a sample.
      if (found?.looked) {
        bracket.before = found.looked as Sample;
        return bracket;
      }
      const { before, after } = found ?? {};
      if (before) bracket.before = ownSampleAt(before.batch, before.view.columns, before.row);
      if (after && args.after !== false)
        bracket.after = ownSampleAt(after.batch, after.view.columns, after.row);
      return bracket;
    });
  }

  async latestEntries(run: number, args: LatestEntriesArgs): Promise<(SampleEntry | undefined)[]> {
    const rows = this.rowsAt(run, args.streams, args.t, {
      after: false,
      heads: args.heads,
      readAhead: args.readAhead !== false,
    });
    return rows.map((found, i) => {
      if (found?.looked) return found.looked as SampleEntry;
      const before = found?.before;
      return before && ownEntryAt(before.batch, before.view.columns, before.row, args.heads[i]!);
    });
  }

  /**
   * Each stream's rows either side of t (the one at or before only, without `after`), from the blocks
   * the cache holds or decodes. Without `after` or `fields`, a chunk not read before gives its one row
   * decoded alone (ChunkCache.block), as an entry with `heads[i]` when given. Without `readAhead`, only
   * the blocks holding t are decoded (ChunkCache.blockAlone).
   */
  private rowsAt(
    run: number,
    streams: readonly string[],
    t: number,
    how: {
      after: boolean;
      fieldNames?: readonly string[] | undefined;
      heads?: readonly EntryHead[];
      readAhead: boolean;
    },
  ): ReturnType<typeof bracketRows<number>>[] {
    const { after, fieldNames, heads, readAhead } = how;
    const fields = fieldNames ? new Set(fieldNames) : undefined;
    this.runs.requireStreams(run, streams);
    const lists = this.file.listsOf(run);
    // The run's first read at a moment looks up each stream's chunks at t; the next ones read the chunk
    // lists of the streams they need (chunksAt).
    const lookUp = !lists.readAtMoment;
    lists.readAtMoment = true;
    // Streams that would not fit the cache decoded whole (an hour of a town) are read a block or a row
    // at a time: reading their chunks on only fills the cache in one burst (ChunkCache.fitsDecoded).
    // What they take is learnt from the rows the list's first read finds; that read reads on as before.
    const decodedBytes = lists.decoded?.get(streams);
    const mayReadOn = readAhead && (decodedBytes === undefined || this.file.cache.fitsDecoded(decodedBytes));
    // Made once for the scene, not per actor: a scene of 200 actors is 200 brackets.
    const open = (ref: ChunkRef<number>): ChunkView | undefined => this.openChunk(run, ref.stream!, ref.id);
    const decode = (ref: ChunkRef<number>, view: ChunkView, b: number): ColumnBatch | undefined => {
      try {
        return readAhead
          ? this.file.cache.block(ref.id, view, b, fields, run, ref.stream, mayReadOn)
          : this.file.cache.blockAlone(ref.id, view, b, fields);
      } catch (error) {
        return undefinedIfReplaced(error);
      }
    };
    // A scene's first look at a chunk gives its row decoded alone; the look's head is set to each
    // stream's before its read (one look, not an object per stream).
    const look: RowLook = { t };
    const decodeBefore =
      !after && fields === undefined && readAhead
        ? (ref: ChunkRef<number>, view: ChunkView, b: number): ColumnBatch | LookedRow | undefined => {
            try {
              return this.file.cache.blockOrRow(ref.id, view, b, run, ref.stream!, look, mayReadOn);
            } catch (error) {
              return undefinedIfReplaced(error);
            }
          }
        : undefined;
    // Every row is found (and its block decoded) before any sample is made: samples made while later
    // blocks are decoded live through the collections decoding causes, which tells V8 to make later
    // ones in the old generation (see SceneEntry in replay/run-queries.ts), and young collections
    // and scenes take longer (performance-history.md).
    const rows = streams.map((id, i) => {
      look.head = heads?.[i];
      // A chunk can vanish under a stale index when another connection merges a tail: look again.
      for (let attempt = 0; ; attempt++) {
        const refs =
          this.file.indexes.get(run)?.get(id) ??
          (lookUp ? this.chunksAt(run, id, t) : this.chunkIndex(run, id));
        const found = bracketRows(refs, t, open, decode, after, decodeBefore);
        if (found || attempt === 3) return found;
        this.file.forgetRun(run);
      }
    });
    if (decodedBytes === undefined) {
      let bytes = 0;
      streams.forEach((id, i) => {
        const samples = lists.byId?.get(id)?.samples ?? 0;
        bytes += samples * decodedRowBytes(rows[i]);
      });
      (lists.decoded ??= new WeakMap()).set(streams, bytes);
    }
    this.readAroundBrowsed();
    return rows;
  }

  /**
   * Streams that became browsed in this read (a chunk of each read on): the chunks next to those they
   * had decoded whole are decoded too, in the same burst. A reader seeking about a run touched a few
   * chunk windows before it came back to one; without this, each window it had not touched yet cost a
   * burst of its own later, each a slow scene.
   */
  private readAroundBrowsed(): void {
    const cache = this.file.cache;
    for (const { run, stream } of cache.takeBrowsed()) {
      const index = this.chunkIndex(run, stream);
      const around = new Set<number>();
      for (let k = 0; k < index.length; k++) {
        if (!cache.cachedWhole(index[k]!.id)) continue;
        if (k > 0) around.add(k - 1);
        if (k + 1 < index.length) around.add(k + 1);
      }
      for (const k of around) {
        const ref = index[k]!;
        if (cache.cachedWhole(ref.id)) continue;
        try {
          const view = this.openChunk(run, stream, ref.id);
          if (!view || !cache.readAhead(ref.id, view)) break;
        } catch (error) {
          // Replaced meanwhile, or damaged: the read that needs it will say so.
          if (error instanceof SimrecError) break;
          throw error;
        }
      }
    }
  }

  /**
   * Of a stream's chunks, those a read at t looks at (bracketRows): those that begin last at or before t
   * and those that begin first after it, found in SQLite's index on (stream, begin) without reading the
   * stream's chunk list. A run's first scene, which for a command that asks once is its only one, reads
   * a chunk reference or two an actor, not every chunk of the actors present: its time does not grow
   * with the run's length. Each side is the chunks of one begin, found by the begin's MIN or MAX: an
   * `ORDER BY begin_us, id` sorted every chunk of the stream on that side of t (the index orders by begin,
   * then end), which took most of a long run's look-up. Chunks that share a begin (a stream's samples of
   * one time filling a chunk) all come, in the chunk list's order, so that bracketRows picks among them as
   * it does from the list.
   */
  private chunksAt(run: number, stream: string, t: number): ChunkRef<number>[] {
    const rows = this.file
      .stmt(
        `SELECT id, begin_us, end_us FROM chunks WHERE stream_key = ${STREAM_KEY} AND begin_us =
           (SELECT MAX(begin_us) FROM chunks WHERE stream_key = ${STREAM_KEY} AND begin_us <= @t)
         UNION ALL
         SELECT id, begin_us, end_us FROM chunks WHERE stream_key = ${STREAM_KEY} AND begin_us =
           (SELECT MIN(begin_us) FROM chunks WHERE stream_key = ${STREAM_KEY} AND begin_us > @t)`,
      )
      .raw(true)
      .all({ run, stream, t }) as ChunkRow[];
    // In the index's order, (begin, end, id); the list's is (begin, id).
    if (rows.length > 1) rows.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
    return chunkRefs(rows, stream);
  }

  /**
   * A stream's chunks in (begin, id) order: from every run's chunk index, read at open for a small store,
   * else read for this stream alone the first time it is needed and kept with its run's until a write.
   * A trajectory or a window of a few actors reads their chunk lists, not the run's.
   */
  private chunkIndex(run: number, stream: string): ChunkRef<number>[] {
    this.file.syncWithOtherConnections();
    let index = this.file.indexes.get(run);
    if (!index) this.file.indexes.set(run, (index = new Map<string, ChunkRef<number>[]>()));
    let refs = index.get(stream);
    if (!refs) {
      const rows = this.file
        .stmt(
          `SELECT id, begin_us, end_us FROM chunks WHERE stream_key = ${STREAM_KEY} ORDER BY begin_us, id`,
        )
        .raw(true)
        .all({ run, stream }) as ChunkRow[];
      refs = chunkRefs(rows, stream);
      index.set(stream, refs);
    }
    return refs;
  }

  /**
   * Reads every run's chunk index (each stream's chunk time ranges) in one query: at open, for a store
   * of at most PRELOAD_INDEX_CHUNKS chunks, so that a fresh process's scenes look nothing up.
   */
  private loadIndexes(): void {
    const rows = this.file
      .stmt(
        `SELECT s.run_id AS run, s.id AS stream, c.id, c.begin_us, c.end_us FROM chunks c JOIN streams s ON c.stream_key = s.key
         ORDER BY c.stream_key, c.begin_us, c.id`,
      )
      .all() as Row[];
    for (const row of rows) {
      const r = row.run as number;
      let index = this.file.indexes.get(r);
      if (!index) this.file.indexes.set(r, (index = new Map<string, ChunkRef<number>[]>()));
      const id = row.stream as string;
      let refs = index.get(id);
      if (!refs) index.set(id, (refs = []));
      refs.push({
        id: row.id as number,
        begin: row.begin_us as number,
        end: row.end_us as number,
        stream: id,
      });
    }
  }

  preloadIndexes(upToChunks: number): void {
    // Counted no further than the bound: a count of every chunk would cost a large store's open what
    // the bound spares it.
    const counted = this.file
      .stmt('SELECT COUNT(*) FROM (SELECT 1 FROM chunks LIMIT ?)')
      .pluck()
      .get(upToChunks + 1) as number;
    if (counted > upToChunks) return;
    this.file.syncWithOtherConnections();
    this.loadIndexes();
  }

  /**
   * Decodes the blocks of one stored chunk (the store's middle one: most likely of the streams most of
   * the store holds) and makes a sample of each: what a server does when it starts (StoreBackend.warm).
   * A fresh process's first scene decodes a block of every actor's chunk, and most of its time went to
   * code V8 had not compiled yet; run here once, the decoder's loops are compiled (on V8's other
   * thread) and its type feedback gathered before a reader waits for it. It moves time more than it
   * saves it: as much as the first scene gains, the caller spends here, which a server (started long
   * before its first view) gains and a command that opens, asks once and exits does not, so the open
   * does not do it (performance-history.md). Best effort: damage is reported by the read that needs the
   * chunk.
   */
  warmDecoders(): void {
    try {
      const row = this.file
        .stmt(
          'SELECT id FROM chunks WHERE id >= (SELECT (MIN(id) + MAX(id)) / 2 FROM chunks) ORDER BY id LIMIT 1',
        )
        .get() as Row | undefined;
      if (!row) return;
      const id = row.id as number;
      const view = loadStoredChunk(this.file, id, `${this.file.location} chunk ${id}`);
      if (!view) return;
      for (let b = 0; b < Math.min(view.blocks.length, WARM_BLOCKS); b++)
        ownSampleAt(view.decodeBlock(b), view.columns, 0);
    } catch {
      // Nothing warmed: reads run cold.
    }
  }

  /**
   * The chunk, or undefined when another connection has just replaced it (tail chunks merged). A chunk
   * stored with its frame apart (schema 6) is read a block at a time (sqlite-chunk-rows.ts).
   */
  private openChunk(run: number, stream: string, id: number, keep = true): ChunkView | undefined {
    // Opened already, as most are: without the loader and the chunk's name made for nothing (200 of
    // each a scene).
    return this.file.cache.opened(id) ?? this.loadChunk(run, stream, id, keep);
  }

  private loadChunk(run: number, stream: string, id: number, keep: boolean): ChunkView | undefined {
    return this.file.cache.chunk(
      id,
      () => loadStoredChunk(this.file, id, `${this.file.location} run ${run} stream ${stream} chunk ${id}`),
      keep,
    );
  }
}

/**
 * A read of a chunk's blocks that failed because the chunk was replaced since it was opened (the writer
 * thread sealed a tail whose frame this connection had read) gives undefined: the caller reloads the
 * index and reads again. Any other error is thrown on.
 */
function undefinedIfReplaced(error: unknown): undefined {
  if (error instanceof SimrecError && error.code === 'conflict') return undefined;
  throw error;
}

/** `read()`, or undefined when its chunk was replaced (undefinedIfReplaced). */
function unlessReplaced<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    return undefinedIfReplaced(error);
  }
}
