import { crc32 } from 'node:zlib';
import type Database from 'better-sqlite3';
import { notFound } from '../../model/errors.js';
import type { ActorInfo } from '../../model/run.js';
import type { StreamInfo } from '../../model/stream.js';
import { ChunkCache, type ChunkRef } from '../common/chunk-reader.js';
import { DEFAULT_TAIL_OPTIONS, type StreamTailOptions } from '../common/stream-tail.js';
import { SqliteChunkWriter, wrapIoError } from './sqlite-chunk-writer.js';
import { streamCounters } from './sqlite-schema.js';
import { InlineWriter, localWrites, WriterThread, type ChunkWriterPort } from './sqlite-writer-thread.js';
import { StreamSchemaTexts } from './stream-schema-texts.js';

export interface SqliteStoreOptions {
  /**
   * `full` (default): a commit is on disk before it is acknowledged, even across a power cut.
   * `normal`: survives a crash of the process but not of the machine; faster on slow disks.
   */
  durability?: 'full' | 'normal';
  /** Samples per sealed chunk (see stream-tail.ts). */
  chunkSamples?: number;
  /** Most samples in a block, the unit a scene decodes. */
  blockSamples?: number;
  /** Bytes of decoded chunks kept in memory for queries (256 MiB by default; see ChunkCache). */
  cacheBytes?: number;
  /**
   * Encode and write chunks on a worker thread (the default), so that the appending thread only
   * appends; `false` writes them on the caller's thread (simpler to debug, and what tests of the
   * writer itself use).
   */
  writerThread?: boolean;
  /** Open for reading only: nothing is written, not even the closing of abandoned runs. */
  readonly?: boolean;
  /**
   * Every run's chunk index is read when the store opens if it holds at most this many chunks
   * (PRELOAD_INDEX_CHUNKS by default). Otherwise a stream's chunk list is read by the first read that
   * needs it, and a run's first scene looks its chunks up in SQLite's own index (SqliteSamples.chunksAt).
   */
  preloadIndexChunks?: number;
}

export type Row = Record<string, unknown>;

export const json = (value: unknown): string => JSON.stringify(value);
export const parse = <T>(text: unknown): T => JSON.parse(text as string) as T;

export interface RunLists {
  actors?: ActorInfo[];
  streams?: StreamInfo[];
  byId?: Map<string, StreamInfo>;
  /** Lists of stream ids found in the run (SqliteRuns.requireStreams). */
  checked?: WeakSet<readonly string[]>;
  /** What lists of streams take decoded whole, about (SqliteSamples.rowsAt). */
  decoded?: WeakMap<readonly string[], number>;
  /** Whether a read at a moment has been made: the next ones read chunk lists (SqliteSamples.chunksAt). */
  readAtMoment?: true;
}

/**
 * An open store file and what the SQLite backend's parts share of it: the connection and its prepared
 * statements, the writer, the lists and chunk indexes read from the file (dropped when another connection
 * commits), and the cache of opened chunks and decoded blocks. Each part of SqliteBackend (runs and
 * streams, sample reads, attachments, integrity, catalogs) works through one.
 */
export class SqliteStoreFile {
  readonly location: string;

  readonly db: Database.Database;
  readonly tailOptions: StreamTailOptions;
  readonly cache: ChunkCache<number>;
  readonly schemaTexts = new StreamSchemaTexts();
  readonly writer: ChunkWriterPort;
  /** Per run: each stream's chunks by (begin, id), keyed by stream id; read when first needed. */
  readonly indexes = new Map<number, Map<string, ChunkRef<number>[]>>();

  /** Whether this store's version may keep a chunk's frame apart from its blocks (chunks.frame, schema 6). */
  readonly framesApart: boolean;

  /** Where this store's version keeps the streams' counters (sqlite-schema.ts). */
  readonly counters: { join: string; columns: string };

  constructor(db: Database.Database, path: string, options: SqliteStoreOptions, version: number) {
    this.db = db;
    // For runVersions: a row's text summed in SQL, not carried into JavaScript row by row.
    db.function('simrec_crc32', { deterministic: true }, (text: unknown) =>
      text === null ? 0 : crc32(String(text)),
    );
    this.counters = streamCounters(version);
    this.framesApart = version >= 6;
    this.location = path;
    this.tailOptions = {
      ...DEFAULT_TAIL_OPTIONS,
      ...(options.chunkSamples ? { chunkSamples: options.chunkSamples } : {}),
      ...(options.blockSamples ? { maxBlockRows: options.blockSamples } : {}),
    };
    this.cache = new ChunkCache(options.cacheBytes ? { wholeBytes: options.cacheBytes } : {});
    this.writer =
      options.writerThread === false || options.readonly
        ? new InlineWriter(new SqliteChunkWriter(db, path, this.tailOptions, options.durability))
        : new WriterThread(
            { path, location: path, durability: options.durability ?? 'full', tail: this.tailOptions },
            new SqliteChunkWriter(db, path, this.tailOptions, options.durability),
          );
  }

  /** SQLite's failures (a full disk, a read-only file) become `io` errors that say what was being done. */
  guard<T>(what: string, work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw wrapIoError(error, `${this.location}: ${what}`);
    }
  }

  /** Prepared statements, compiled once per store: the hot paths run them millions of times. */
  private readonly statements = new Map<string, Database.Statement>();
  stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  requireRun(run: number): void {
    if (!this.stmt('SELECT 1 FROM runs WHERE id = ?').get(run))
      throw notFound(`run ${run} does not exist in ${this.location}`);
  }

  forgetRun(run: number): void {
    this.lists.delete(run);
    this.indexes.delete(run);
  }

  /** Runs, actors and streams change rarely and are read on every scene: kept until a write. */
  readonly lists = new Map<number, RunLists>();
  listsOf(run: number): RunLists {
    this.syncWithOtherConnections();
    let lists = this.lists.get(run);
    if (!lists) this.lists.set(run, (lists = {}));
    return lists;
  }

  /**
   * Another connection may be writing the store (this store's writer thread, a recorder in another
   * process while a viewer reads): SQLite's data_version changes when another connection commits, and
   * then the in-memory indexes and lists are dropped. Asked once per turn of the event loop, so a
   * scene of 200 actors asks once, not 200 times, nor once per stream of a window read (a turn of the
   * microtask queue each), and again within the turn once a writer of this process has committed
   * (localWrites), so that a write the caller awaited is read. Another process's commit is seen from the
   * next turn. Chunk ids are never reused (AUTOINCREMENT), so the cache of opened chunks stays valid.
   */
  private dataVersion: number | null = null;
  private checkedThisTurn = false;
  private writesWhenChecked = -1;
  syncWithOtherConnections(): void {
    if (this.checkedThisTurn && this.writesWhenChecked === localWrites.count) return;
    if (!this.checkedThisTurn) {
      this.checkedThisTurn = true;
      setImmediate(() => {
        this.checkedThisTurn = false;
      });
    }
    this.writesWhenChecked = localWrites.count;
    const version = (this.stmt('PRAGMA data_version').get() as Row).data_version as number;
    if (this.dataVersion !== null && version !== this.dataVersion) {
      this.lists.clear();
      this.indexes.clear();
    }
    this.dataVersion = version;
  }
}
