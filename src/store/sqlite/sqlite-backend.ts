import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Attachment, AttachmentInfo } from '../../model/attachment.js';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import { samplesToColumns, type ColumnBatch } from '../../model/columns.js';
import { notFound, SimrecError } from '../../model/errors.js';
import { deepFreeze, type JsonObject } from '../../model/json.js';
import type { ActorInfo, ActorPresence, EndReason, RunInfo, RunSummary } from '../../model/run.js';
import type {
  BracketArgs,
  CatalogPort,
  ColumnAppend,
  IntegrityProblem,
  IntegrityReport,
  ListRunsArgs,
  ReadColumnsArgs,
  ReadSamplesArgs,
  SampleBracket,
  StoreBackend,
  WriterIdentity,
} from '../../model/store-port.js';
import type { InferredField, Sample, StreamInfo, StreamSchema } from '../../model/stream.js';
import { orderedColumns, rowsTarget } from '../common/chunk-rows.js';
import {
  bracketRows,
  ChunkCache,
  chunksCovering,
  copyRowsInto,
  firstAtOrAfter,
  lastAtOrBefore,
  openChunk,
  ownSampleAt,
  sliceBatch,
  type ChunkRef,
  type ChunkView,
} from '../common/chunk-reader.js';
import { scenarioCatalog, vehicleCatalog } from '../common/catalogs.js';
import { checkStoreIntegrity } from '../common/integrity-check.js';
import {
  readColumnsJoinedViaBatches,
  readSamplesViaColumns,
  sampleBracketViaMany,
} from '../common/sample-reads.js';
import { DEFAULT_TAIL_OPTIONS, encodeChunks, type StreamTailOptions } from '../common/stream-tail.js';
import {
  SCHEMA_DDL,
  SCHEMA_VERSION,
  SET_STREAM_COUNTS,
  SIMREC_APPLICATION_ID,
  streamCounters,
  upgradeSchema,
} from './sqlite-schema.js';
import { SqliteChunkWriter, wrapIoError } from './sqlite-chunk-writer.js';
import { StreamSchemaTexts } from './stream-schema-texts.js';
import {
  configureConnection,
  InlineWriter,
  WriterThread,
  type ChunkWriterPort,
} from './sqlite-writer-thread.js';

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
}

type Row = Record<string, unknown>;

/** How much of the file reads may map (SQLite maps what it reads, up to this). */
const MMAP_BYTES = 1024 * 1024 * 1024;

const json = (value: unknown): string => JSON.stringify(value);
const parse = <T>(text: unknown): T => JSON.parse(text as string) as T;

interface StreamMeta {
  id: string;
}

interface RunLists {
  actors?: ActorInfo[];
  streams?: StreamInfo[];
  byId?: Map<string, StreamInfo>;
}

/**
 * The embedded store: one SQLite file (better-sqlite3). Runs, actors, streams and attachments are
 * rows; samples are chunks (chunk-codes.ts) written by the store's writer thread. Reads go through an
 * index of each run's chunks, read in one query the first time a run is read and dropped when another
 * connection commits (SQLite's data_version), and through a cache of opened chunks and decoded blocks.
 */
export class SqliteBackend implements StoreBackend {
  readonly kind = 'sqlite';
  /** Declarations and appends go, at the call, to the writer thread's queue (or are written at once). */
  readonly keepsWriteOrder = true;
  readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;
  readonly location: string;

  private readonly db: Database.Database;
  private readonly tailOptions: StreamTailOptions;
  private readonly cache: ChunkCache<number>;
  private readonly schemaTexts = new StreamSchemaTexts();
  private readonly writer: ChunkWriterPort;
  /** Per run: each stream's chunks by (begin, id), keyed by stream id; loaded on the first read. */
  private readonly indexes = new Map<number, Map<string, ChunkRef<number>[]>>();

  /** Where this store's version keeps the streams' counters (sqlite-schema.ts). */
  private readonly counters: { join: string; columns: string };

  private constructor(db: Database.Database, path: string, options: SqliteStoreOptions, version: number) {
    this.db = db;
    // For runVersions: a row's text summed in SQL, not carried into JavaScript row by row.
    db.function('simrec_crc32', { deterministic: true }, (text: unknown) =>
      text === null ? 0 : crc32(String(text)),
    );
    this.counters = streamCounters(version);
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
    this.scenarios = scenarioCatalog(this.scenarioRows());
    this.vehicles = vehicleCatalog(this.vehicleRows());
  }

  /** Opens (creating if absent) a store file; refuses files that are not simrec stores. */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteBackend {
    let fresh = !options.readonly && (!existsSync(path) || statSync(path).size === 0);
    let db: Database.Database;
    let version = SCHEMA_VERSION;
    try {
      db = new Database(path, options.readonly ? { readonly: true, fileMustExist: true } : {});
      // First of all: another process may hold the file (creating it, switching it to WAL), and
      // every statement after this one must wait for it rather than fail at once.
      db.pragma('busy_timeout = 10000');
    } catch (error) {
      throw new SimrecError('io', `${path}: cannot open the store: ${(error as Error).message}`, {
        cause: error,
      });
    }
    try {
      const durability = options.durability ?? 'full';
      const prepare = (): void => {
        // Switching to WAL needs the file to itself for a moment, and SQLite answers "busy" at once
        // (without its busy timeout) when another process is opening the same new store.
        if (!options.readonly) retryWhileBusy(() => db.pragma('journal_mode = WAL'));
        configureConnection(db, durability);
        // Reads through a memory map: a fresh process's first scene reads a chunk per actor (16 MB at
        // 200 actors), and mapped pages cost a quarter of the time of SQLite's reads into its cache
        // (measured: 3 ms against 12 for the benchmark's 202 chunks). Writes are unchanged.
        db.pragma(`mmap_size = ${MMAP_BYTES}`);
      };
      // A file another process is creating this very moment has no schema yet: it is new, not foreign.
      if (!fresh && !options.readonly) fresh = isEmptyDatabase(db);
      if (fresh) {
        // Before any table exists, or it has no effect: lets endRun hand back the pages that tail
        // chunks freed, so a finished run's file holds its data and little else.
        db.pragma('auto_vacuum = INCREMENTAL');
        prepare();
        // Immediate, and checked again inside: two processes may create the same new store at once.
        db.transaction(() => {
          if (db.pragma('application_id', { simple: true }) === SIMREC_APPLICATION_ID) return;
          db.exec(SCHEMA_DDL);
          db.pragma(`application_id = ${SIMREC_APPLICATION_ID}`);
          db.pragma(`user_version = ${SCHEMA_VERSION}`);
        }).immediate();
      } else {
        version = checkStoreFile(db, path);
        prepare();
        if (version < SCHEMA_VERSION && !options.readonly) {
          upgradeSchema(db, version);
          version = SCHEMA_VERSION;
        }
      }
    } catch (error) {
      db.close();
      throw error;
    }
    const backend = new SqliteBackend(db, path, options, version);
    backend.preloadIndexes();
    return backend;
  }

  // ---- runs ----------------------------------------------------------------------------------------

  async createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo> {
    const created = await this.guard('creating a run', () => this.createRunNow(run, writer));
    // The writer thread takes tens of milliseconds to start: it does while the run's actors are declared.
    this.writer.prepare();
    return created;
  }

  private createRunNow(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): RunInfo {
    const result = this.stmt(
      `INSERT INTO runs (begin_us, end_us, end_reason, state, simulator, simulator_version, description, metadata, writer)
         VALUES (?, NULL, NULL, 'recording', ?, ?, ?, ?, ?)`,
    ).run(
      run.begin,
      run.simulator.name,
      run.simulator.version ?? null,
      run.description,
      json(run.metadata),
      json(writer),
    );
    return { ...run, id: Number(result.lastInsertRowid) };
  }

  async getRun(id: number): Promise<RunInfo | undefined> {
    const row = this.stmt('SELECT * FROM runs WHERE id = ?').get(id) as Row | undefined;
    return row && runFromRow(row);
  }

  async listRuns(args: ListRunsArgs = {}): Promise<RunSummary[]> {
    const order = args.newestFirst === false ? 'ASC' : 'DESC';
    const rows = this.stmt(
      `SELECT r.*,
           (SELECT COUNT(*) FROM actors a WHERE a.run_id = r.id) AS actor_count,
           (SELECT COUNT(*) FROM streams s WHERE s.run_id = r.id) AS stream_count,
           (SELECT COALESCE(SUM(samples), 0) FROM (SELECT ${this.counters.columns} FROM streams s ${this.counters.join} WHERE s.run_id = r.id)) AS sample_count
         FROM runs r ORDER BY r.id ${order} LIMIT ?`,
    ).all(args.limit ?? -1) as Row[];
    return rows.map((row) => ({
      ...runFromRow(row),
      actorCount: row.actor_count as number,
      streamCount: row.stream_count as number,
      samples: row.sample_count as number,
    }));
  }

  async endRun(id: number, end: { end: number; endReason: EndReason }): Promise<RunInfo> {
    this.forgetRun(id);
    await this.writer.endRun(id, end.end, end.endReason);
    this.forgetRun(id);
    return (await this.getRun(id))!;
  }

  async deleteRun(id: number): Promise<boolean> {
    this.forgetRun(id);
    this.writer.forgetRun(id);
    try {
      return this.stmt('DELETE FROM runs WHERE id = ?').run(id).changes > 0;
    } catch (error) {
      throw wrapIoError(error, `${this.location}: deleting run ${id}`);
    }
  }

  /**
   * Versions already worked out, while nothing has been committed since: SQLite's data_version changes
   * when another connection (the writer thread's, another process's) commits, total_changes when this
   * one does. A server or a session asking again and again reads nothing when nothing changed.
   */
  private versionCache: { stamp: string; versions: Map<number, string | null> } | null = null;

  async runVersions(runs: readonly number[]): Promise<Map<number, string>> {
    const stamp = `${String(this.db.pragma('data_version', { simple: true }))}:${String(
      this.stmt('SELECT total_changes()').pluck().get(),
    )}`;
    if (this.versionCache?.stamp !== stamp) this.versionCache = { stamp, versions: new Map() };
    const cache = this.versionCache.versions;
    const missing = runs.filter((run) => !cache.has(run));
    for (const [run, version] of this.computeRunVersions(missing)) cache.set(run, version);
    for (const run of missing) if (!cache.has(run)) cache.set(run, null);
    const versions = new Map<number, string>();
    for (const run of runs) {
      const version = cache.get(run);
      if (version) versions.set(run, version);
    }
    return versions;
  }

  private computeRunVersions(runs: readonly number[]): Map<number, string> {
    const versions = new Map<number, string>();
    // Each table read once for a few hundred runs and summed per run in SQL: the actors' and streams'
    // rows by the CRC-32 and length of their text (simrec_crc32, registered at open), the chunks by
    // their count and largest id from the chunks' covering index (ids are never reused, so a chunk
    // written, merged, replaced or removed changes one or the other). Turning every row into JSON to
    // hash it was most of a question's time over a hundred runs. The writer's identity is not data.
    const summed = (row: string): string => `COUNT(*), SUM(simrec_crc32(${row})), SUM(LENGTH(${row}))`;
    const joined = (...columns: string[]): string =>
      columns.map((c) => `IFNULL(${c}, '')`).join(' || char(0) || ');
    for (let at = 0; at < runs.length; at += 500) {
      const ids = runs.slice(at, at + 500);
      const list = ids.map(() => '?').join(',');
      const rowsOf = (sql: string): unknown[][] =>
        this.db
          .prepare(sql)
          .raw(true)
          .all(...ids) as unknown[][];
      const parts = new Map<number, unknown[][]>();
      for (const row of rowsOf(`SELECT id, begin_us, end_us, end_reason, state, simulator, simulator_version,
          description, metadata FROM runs WHERE id IN (${list})`))
        parts.set(row[0] as number, [row]);
      for (const sql of [
        `SELECT s.run_id, COUNT(*), MAX(c.id) FROM chunks c JOIN streams s ON c.stream_key = s.key
          WHERE s.run_id IN (${list}) GROUP BY s.run_id`,
        `SELECT run_id, ${summed(joined('id', 'ord', 'kind', 'source_class', 'extents', 'attributes', 'options', 'record', 'presence'))}
          FROM actors WHERE run_id IN (${list}) GROUP BY run_id`,
        `SELECT run_id, ${summed(joined('key', 'id', 'schema', 'extra_fields', 'samples', 'begin_us', 'end_us'))}
          FROM (SELECT s.run_id, s.key, s.id, s.schema, s.extra_fields, ${this.counters.columns}
            FROM streams s ${this.counters.join} WHERE s.run_id IN (${list})) GROUP BY run_id`,
      ])
        for (const row of rowsOf(sql)) parts.get(row[0] as number)?.push(row);
      for (const [run, rows] of parts)
        versions.set(run, createHash('sha256').update(JSON.stringify(rows)).digest('base64url').slice(0, 22));
    }
    return versions;
  }

  async closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]> {
    const rows = this.stmt(`SELECT id, begin_us, writer FROM runs WHERE state = 'recording'`).all() as Row[];
    const closed: number[] = [];
    // On this thread: the runs are a dead writer's, and closing seals their tail chunks like endRun.
    const writer = new SqliteChunkWriter(this.db, this.location, this.tailOptions);
    for (const row of rows) {
      const w = row.writer ? parse<WriterIdentity>(row.writer) : null;
      if (w && isAlive(w)) continue;
      const last = this.stmt(
        `SELECT MAX(end_us) AS t FROM (SELECT ${this.counters.columns} FROM streams s ${this.counters.join} WHERE s.run_id = ?)`,
      ).get(row.id) as Row;
      const end = (last.t as number | null) ?? (row.begin_us as number);
      try {
        writer.endRun(row.id as number, end, 'interrupted');
        closed.push(row.id as number);
      } catch (error) {
        // A read-only file or a full disk: the run stays open for a later writer to close; reading
        // must not depend on it.
        if (isCannotWrite(error)) break;
        if (error instanceof SimrecError && error.code === 'conflict') continue; // closed meanwhile
        throw error;
      }
      this.forgetRun(row.id as number);
    }
    return closed;
  }

  // ---- actors and streams --------------------------------------------------------------------------

  async putActors(run: number, actors: ActorInfo[]): Promise<void> {
    // On the writer's connection, in order with the samples: this thread never waits for its lock.
    await this.writer.putActors(run, actors);
    this.lists.delete(run);
  }

  async putPresence(run: number, presence: ActorPresence[]): Promise<void> {
    this.guard(`keeping actors' presence in run ${run}`, () => this.putPresenceNow(run, presence));
  }

  private putPresenceNow(run: number, presence: ActorPresence[]): void {
    this.requireRun(run);
    this.lists.delete(run);
    const update = this.stmt('UPDATE actors SET presence = ? WHERE run_id = ? AND id = ?');
    this.db
      .transaction(() => {
        for (const p of presence)
          if (update.run(json(p.intervals), run, p.actor).changes === 0)
            throw notFound(`run ${run} has no actor ${JSON.stringify(p.actor)}`);
      })
      .immediate();
  }

  async listActors(run: number): Promise<ActorInfo[]> {
    const lists = this.listsOf(run);
    lists.actors ??= this.queryActors(run);
    return lists.actors.map((a) =>
      a.presence ? { ...a, presence: a.presence.map((iv) => ({ ...iv })) } : { ...a },
    );
  }

  private queryActors(run: number): ActorInfo[] {
    const rows = this.stmt('SELECT * FROM actors WHERE run_id = ? ORDER BY ord').all(run) as Row[];
    return rows.map((row) => {
      const actor: ActorInfo = {
        id: row.id as string,
        kind: row.kind as string,
        record: row.record === 1,
        attributes: parse(row.attributes),
        options: parse(row.options),
      };
      if (row.source_class !== null) actor.sourceClass = row.source_class as string;
      if (row.extents !== null) actor.extents = parse(row.extents);
      // undefined in a schema 1 or 2 file opened read-only (no column), null for actors it held before.
      if (row.presence !== null && row.presence !== undefined) actor.presence = parse(row.presence);
      // Cached and handed out (shallow copies, presence copied) to every caller: what is shared is
      // frozen, so that a caller changing it fails instead of changing every later answer.
      deepFreeze(actor.attributes);
      deepFreeze(actor.options);
      deepFreeze(actor.extents);
      return actor;
    });
  }

  async putStreams(run: number, streams: StreamSchema[]): Promise<void> {
    await this.writer.putStreams(run, streams);
    this.lists.delete(run);
  }

  async listStreams(run: number): Promise<StreamInfo[]> {
    const lists = this.listsOf(run);
    lists.streams ??= this.queryStreams(run);
    return lists.streams.map((s) => ({ ...s }));
  }

  private queryStreams(run: number): StreamInfo[] {
    const rows = this.stmt(
      `SELECT s.schema, s.extra_fields, ${this.counters.columns} FROM streams s ${this.counters.join}
       WHERE s.run_id = ? ORDER BY s.key`,
    ).all(run) as Row[];
    // Cached and handed out as shallow copies: what they share is frozen (see queryActors), the fields
    // and metadata of streams of the same schema one frozen object (StreamSchemaTexts).
    return rows.map((row) => {
      const stream: StreamInfo = {
        ...this.schemaTexts.parse(row.schema as string),
        samples: row.samples as number,
        begin: row.begin_us as number | null,
        end: row.end_us as number | null,
        extraFields: parse<InferredField[]>(row.extra_fields),
      };
      deepFreeze(stream.extraFields);
      return stream;
    });
  }

  // ---- samples -------------------------------------------------------------------------------------

  appendColumns(run: number, appends: ColumnAppend[], presence?: ActorPresence[]): Promise<void> {
    // Presence goes with the samples into the writer thread's transaction: one fsync, off this thread,
    // and never samples durable without the leave that came with them. Not an async function: the
    // columns are packed and posted at the call, and a suspended async frame would keep them alive,
    // through the young collections of the commit's whole flight, until the writer answers.
    let written: Promise<void>;
    try {
      written = this.writer.append(run, appends, presence);
    } catch (error) {
      written = Promise.reject(error);
    }
    // The writer committed on its own connection: what this one cached of the run is stale.
    return written.finally(() => this.forgetRun(run));
  }

  async putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void> {
    this.requireRun(run);
    const batch = samplesToColumns(samples, schema.fields);
    const { chunks, extras } = encodeChunks(schema.fields, batch, this.tailOptions);
    try {
      this.db
        .transaction(() => {
          this.stmt(
            `INSERT INTO streams (run_id, id, schema) VALUES (?, ?, ?)
           ON CONFLICT (run_id, id) DO UPDATE SET schema = excluded.schema`,
          ).run(run, schema.id, json(schema));
          const key = (
            this.stmt('SELECT key FROM streams WHERE run_id = ? AND id = ?').get(run, schema.id) as Row
          ).key as number;
          this.stmt('DELETE FROM chunks WHERE stream_key = ?').run(key);
          for (const c of chunks)
            this.stmt(
              'INSERT INTO chunks (stream_key, begin_us, end_us, count, sealed, data) VALUES (?, ?, ?, ?, 1, ?)',
            ).run(key, c.begin, c.end, c.count, c.data);
          this.stmt('UPDATE streams SET extra_fields = ? WHERE key = ?').run(json(extras), key);
          this.stmt(SET_STREAM_COUNTS).run(
            key,
            samples.length,
            samples[0]?.t ?? null,
            samples.at(-1)?.t ?? null,
          );
        })
        .immediate();
    } catch (error) {
      throw wrapIoError(error, `${this.location}: writing derived stream ${schema.id} of run ${run}`);
    }
    this.forgetRun(run);
  }

  async *readColumns(args: ReadColumnsArgs): AsyncIterable<ColumnBatch> {
    const stream = this.streamMeta(args.run, args.stream);
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
          this.forgetRun(args.run);
          continue reading;
        }
        const batch = this.wholeIfPresent(ref.id, view, fields, !args.transient);
        if (!batch) {
          this.forgetRun(args.run);
          continue reading;
        }
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
      return;
    }
  }

  async readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch> {
    const stream = this.streamMeta(args.run, args.stream);
    const from = args.from ?? Number.MIN_SAFE_INTEGER;
    const to = args.to ?? Number.MAX_SAFE_INTEGER;
    const fields = args.fields ? new Set(args.fields) : undefined;
    // Another connection (this process's writer thread, another process) may merge tails under the
    // index between two chunk reads: then a chunk is gone, and the read starts again on a fresh index.
    for (let attempt = 0; attempt < 3; attempt++) {
      args.signal?.throwIfAborted();
      const joined = this.joinChunks(args.run, stream.id, from, to, fields, args.transient === true);
      if (joined) return joined;
      this.forgetRun(args.run);
    }
    // A stream sealed under every attempt: readColumns, which reads on from where it was, joined.
    return readColumnsJoinedViaBatches(this, args);
  }

  /**
   * The samples in [from, to] as one batch: chunks wholly inside decoded straight into its columns (not
   * cached: a trajectory of a long run would push out what a viewer reads), the one or two a window
   * cuts taken from the cache and copied in. Against readColumns joined afterwards, a whole-run
   * trajectory allocates and copies a third as much (measured: a fresh process's second and third
   * 10,000-sample reads). `transient`: chunks it opens and cuts are not cached either (a writer walking
   * a run a window at a time filled the cache with chunks it had done with: the MCAP export's peak up to
   * its 256 MiB of decoded chunks). Undefined when a chunk vanished (see readColumnsJoined).
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
      const batch = this.wholeIfPresent(ref.id, view, fields, !transient);
      if (!batch) return undefined;
      const lo = firstAtOrAfter(batch.t, from);
      const hi = lastAtOrBefore(batch.t, to) + 1;
      if (hi <= lo) continue;
      parts.push({ ref, view, cut: { batch, lo, hi } });
      n += hi - lo;
    }
    const target = rowsTarget(n);
    for (const { ref, view, cut } of parts) {
      const cached = cut ? cut.batch : this.cache.cachedWhole(ref.id, fields);
      if (cached) copyRowsInto(cached, view.columns, cut?.lo ?? 0, cut?.hi ?? view.n, target);
      else view.decodeInto(target, fields);
    }
    return orderedColumns(
      target,
      parts.map((p) => p.view.columns),
    );
  }

  readSamples(args: ReadSamplesArgs): AsyncIterable<Sample[]> {
    return readSamplesViaColumns(this, args);
  }

  async bracketMany(run: number, args: BracketArgs): Promise<SampleBracket[]> {
    const fields = args.fields ? new Set(args.fields) : undefined;
    for (const id of args.streams) this.streamMeta(run, id);
    // Made once for the scene, not per actor: a scene of 200 actors is 200 brackets.
    const open = (ref: ChunkRef<number>): ChunkView | undefined => this.openChunk(run, ref.stream!, ref.id);
    const decode = (ref: ChunkRef<number>, view: ChunkView, b: number): ColumnBatch | undefined =>
      this.blockIfPresent(ref.id, view, b, fields, run, ref.stream!);
    // Every row is found (and its block decoded) before any sample is made: samples made while later
    // blocks are decoded live through the collections decoding causes, which tells V8 to make later
    // ones in the old generation (see SceneEntry in replay/run-queries.ts). Measured on the seek
    // benchmark: young collections 0.65 ms instead of 0.8, scenes 0.63 ms instead of 0.70.
    const rows = args.streams.map((id) => {
      // A chunk can vanish under a stale index when another connection merges a tail: look again.
      for (let attempt = 0; ; attempt++) {
        const found = bracketRows(this.chunkIndex(run, id), args.t, open, decode, args.after !== false);
        if (found || attempt === 3) return found;
        this.forgetRun(run);
      }
    });
    return rows.map((found) => {
      const bracket: SampleBracket = {};
      const { before, after } = found ?? {};
      if (before) bracket.before = ownSampleAt(before.batch, before.view.columns, before.row);
      if (after && args.after !== false)
        bracket.after = ownSampleAt(after.batch, after.view.columns, after.row);
      return bracket;
    });
  }

  sampleBracket(run: number, stream: string, t: number): Promise<SampleBracket> {
    return sampleBracketViaMany(this, run, stream, t);
  }

  // ---- attachments ---------------------------------------------------------------------------------

  async putAttachment(run: number, a: Attachment): Promise<void> {
    this.guard(`attaching ${JSON.stringify(a.name)} to run ${run}`, () => this.putAttachmentNow(run, a));
  }

  private putAttachmentNow(run: number, a: Attachment): void {
    this.requireRun(run);
    this.stmt(
      `INSERT INTO attachments (run_id, name, media_type, t_us, metadata, data) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id, name) DO UPDATE SET media_type = excluded.media_type, t_us = excluded.t_us,
           metadata = excluded.metadata, data = excluded.data`,
    ).run(run, a.name, a.mediaType, a.t ?? null, a.metadata ? json(a.metadata) : null, a.data);
  }

  async getAttachment(run: number, name: string): Promise<Attachment | undefined> {
    const row = this.stmt('SELECT * FROM attachments WHERE run_id = ? AND name = ?').get(run, name) as
      Row | undefined;
    if (!row) return undefined;
    const data = row.data as Buffer;
    return { ...attachmentFromRow(row), data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  }

  async listAttachments(run: number): Promise<AttachmentInfo[]> {
    const rows = this.stmt(
      'SELECT run_id, name, media_type, t_us, metadata, length(data) AS size FROM attachments WHERE run_id = ? ORDER BY name',
    ).all(run) as Row[];
    return rows.map((row) => ({ ...attachmentFromRow(row), size: row.size as number }));
  }

  async checkIntegrity(options: { repair?: boolean } = {}): Promise<IntegrityReport> {
    const db = this.db;
    return checkStoreIntegrity<number, number>(
      {
        databaseProblems: async () => {
          const problems: IntegrityProblem[] = [];
          for (const row of db.pragma('integrity_check') as { integrity_check: string }[])
            if (row.integrity_check !== 'ok')
              problems.push({ where: 'database', problem: row.integrity_check, repaired: false });
          for (const row of db.pragma('foreign_key_check') as {
            table: string;
            rowid: number;
            parent: string;
          }[])
            problems.push({
              where: `${row.table} row ${row.rowid}`,
              problem: `refers to a missing ${row.parent} row`,
              repaired: false,
            });
          return problems;
        },
        streams: async () =>
          (
            this.stmt(
              `SELECT s.key, s.run_id, s.id, ${this.counters.columns} FROM streams s ${this.counters.join} ORDER BY s.key`,
            ).all() as Row[]
          ).map((r) => ({
            key: r.key as number,
            run: r.run_id as number,
            id: r.id as string,
            samples: r.samples as number,
            begin: r.begin_us as number | null,
            end: r.end_us as number | null,
          })),
        chunks: async function* (this: void, stream) {
          const rows = db
            .prepare(
              'SELECT id, begin_us, end_us, count, data FROM chunks WHERE stream_key = ? ORDER BY begin_us, id',
            )
            .all(stream.key) as Row[];
          for (const r of rows)
            yield {
              id: r.id as number,
              begin: r.begin_us as number,
              end: r.end_us as number,
              count: r.count as number,
              data: r.data as Buffer,
            };
        },
        runCount: async () => (this.stmt('SELECT COUNT(*) AS n FROM runs').get() as Row).n as number,
        replaceChunk: async (id, chunk) => {
          this.stmt('UPDATE chunks SET data = ?, count = ?, begin_us = ?, end_us = ? WHERE id = ?').run(
            chunk.data,
            chunk.count,
            chunk.begin,
            chunk.end,
            id,
          );
        },
        deleteChunk: async (id) => {
          this.stmt('DELETE FROM chunks WHERE id = ?').run(id);
        },
        setCounters: async (stream, c) => {
          this.stmt(SET_STREAM_COUNTS).run(stream.key, c.samples, c.begin, c.end);
        },
        forgetCaches: () => {
          this.lists.clear();
          this.indexes.clear();
          this.cache.clear();
        },
      },
      options,
    );
  }

  async close(): Promise<void> {
    // This connection first, at once: a caller that does not await close() finds the file released
    // (the writer thread, if it ever started, has its own connection and finishes what it was given).
    if (this.db.open) this.db.close();
    await this.writer.close();
  }

  // ---- internals -----------------------------------------------------------------------------------

  /** SQLite's failures (a full disk, a read-only file) become `io` errors that say what was being done. */
  private guard<T>(what: string, work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw wrapIoError(error, `${this.location}: ${what}`);
    }
  }

  /** Prepared statements, compiled once per store: the hot paths run them millions of times. */
  private readonly statements = new Map<string, Database.Statement>();
  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private requireRun(run: number): void {
    if (!this.stmt('SELECT 1 FROM runs WHERE id = ?').get(run))
      throw notFound(`run ${run} does not exist in ${this.location}`);
  }

  private streamMeta(run: number, stream: string): StreamMeta {
    const lists = this.listsOf(run);
    lists.streams ??= this.queryStreams(run);
    lists.byId ??= new Map(lists.streams.map((s) => [s.id, s] as const));
    if (!lists.byId.has(stream)) {
      this.requireRun(run);
      throw notFound(`run ${run} has no stream ${JSON.stringify(stream)}`);
    }
    return { id: stream };
  }

  /** A stream's chunks in (begin, id) order; every stream of the run indexed by one query. */
  private chunkIndex(run: number, stream: string): ChunkRef<number>[] {
    this.syncWithOtherConnections();
    let index = this.indexes.get(run);
    if (!index) {
      this.loadIndexes(run);
      index = this.indexes.get(run) ?? new Map();
      this.indexes.set(run, index);
    }
    return index.get(stream) ?? [];
  }

  /**
   * Reads the chunk index (each stream's chunk time ranges) of one run, or of every run: at open, when
   * the store is small enough that it costs a few milliseconds, so that a fresh process's first scene
   * costs one block per actor and nothing else.
   */
  private loadIndexes(run?: number): void {
    const rows = this.stmt(
      `SELECT s.run_id AS run, s.id AS stream, c.id, c.begin_us, c.end_us FROM chunks c JOIN streams s ON c.stream_key = s.key
       WHERE ? IS NULL OR s.run_id = ? ORDER BY c.stream_key, c.begin_us, c.id`,
    ).all(run ?? null, run ?? null) as Row[];
    for (const row of rows) {
      const r = row.run as number;
      let index = this.indexes.get(r);
      if (!index) this.indexes.set(r, (index = new Map()));
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

  /** Every run's index at open, for stores of up to this many chunks (about 1 ms per 2,000). */
  static readonly PRELOAD_INDEX_CHUNKS = 50_000;

  private preloadIndexes(): void {
    const span = this.stmt('SELECT MAX(id) - MIN(id) AS n FROM chunks').get() as Row;
    if (((span.n as number | null) ?? 0) > SqliteBackend.PRELOAD_INDEX_CHUNKS) return;
    this.syncWithOtherConnections();
    this.loadIndexes();
  }

  /**
   * The chunk, or undefined when another connection has just replaced it (tail chunks merged). Only its
   * first bytes are read now (the frame is in them); a block is read when it is decoded.
   */
  private openChunk(run: number, stream: string, id: number, keep = true): ChunkView | undefined {
    return this.cache.chunk(
      id,
      () => {
        // The whole chunk at once: SQLite loads a column's whole value before substr() cuts it (measured
        // on the benchmark's 63 KB chunks: the first 512 bytes cost 93% of the whole), so reading the
        // frame first and each block later read every chunk twice or more.
        const row = this.stmt('SELECT data FROM chunks WHERE id = ?').get(id) as Row | undefined;
        if (!row) return undefined;
        return openChunk(row.data as Buffer, `${this.location} run ${run} stream ${stream} chunk ${id}`);
      },
      keep,
    );
  }

  /**
   * A decoded block, or undefined when its chunk was replaced since it was opened (the writer thread
   * sealed a tail whose frame this connection had read): the caller reloads the index and reads again.
   */
  private blockIfPresent(
    id: number,
    view: ChunkView,
    b: number,
    fields: ReadonlySet<string> | undefined,
    run: number,
    stream: string,
  ): ColumnBatch | undefined {
    try {
      return this.cache.block(id, view, b, fields, run, stream);
    } catch (error) {
      if (error instanceof SimrecError && error.code === 'conflict') return undefined;
      throw error;
    }
  }

  /** The chunk decoded whole, or undefined when it was replaced since it was opened (as blockIfPresent). */
  private wholeIfPresent(
    id: number,
    view: ChunkView,
    fields: ReadonlySet<string> | undefined,
    keep = true,
  ): ColumnBatch | undefined {
    try {
      return this.cache.whole(id, view, fields, keep);
    } catch (error) {
      if (error instanceof SimrecError && error.code === 'conflict') return undefined;
      throw error;
    }
  }

  private forgetRun(run: number): void {
    this.lists.delete(run);
    this.indexes.delete(run);
  }

  /** Runs, actors and streams change rarely and are read on every scene: kept until a write. */
  private readonly lists = new Map<number, RunLists>();
  private listsOf(run: number): RunLists {
    this.syncWithOtherConnections();
    let lists = this.lists.get(run);
    if (!lists) this.lists.set(run, (lists = {}));
    return lists;
  }

  /**
   * Another connection may be writing the store (this store's writer thread, a recorder in another
   * process while a viewer reads): SQLite's data_version changes when another connection commits, and
   * then the in-memory indexes and lists are dropped. Checked once per turn of the event loop, so a
   * scene of 200 actors asks once, not 200 times. Chunk ids are never reused (AUTOINCREMENT), so the
   * cache of opened chunks stays valid.
   */
  private dataVersion: number | null = null;
  private checkedThisTurn = false;
  private syncWithOtherConnections(): void {
    if (this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    queueMicrotask(() => {
      this.checkedThisTurn = false;
    });
    const version = (this.stmt('PRAGMA data_version').get() as Row).data_version as number;
    if (this.dataVersion !== null && version !== this.dataVersion) {
      this.lists.clear();
      this.indexes.clear();
    }
    this.dataVersion = version;
  }

  private scenarioRows(): CatalogPort<Scenario, ScenarioSummary, bigint> {
    const db = this.db;
    return {
      async put(s) {
        db.prepare(
          `INSERT INTO scenarios (id, timestamp_us, description, bin) VALUES (?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET timestamp_us = excluded.timestamp_us, description = excluded.description, bin = excluded.bin`,
        ).run(s.id, s.timestamp, s.description, s.bin);
      },
      async get(id) {
        const row = db.prepare('SELECT * FROM scenarios WHERE id = ?').safeIntegers(true).get(id) as
          Row | undefined;
        if (!row) return undefined;
        const bin = row.bin as Buffer;
        return {
          id: row.id as bigint,
          timestamp: Number(row.timestamp_us),
          description: row.description as string,
          bin: new Uint8Array(bin.buffer, bin.byteOffset, bin.byteLength),
        };
      },
      async list() {
        const rows = db
          .prepare('SELECT id, timestamp_us, description, length(bin) AS size FROM scenarios ORDER BY id')
          .safeIntegers(true)
          .all() as Row[];
        return rows.map((row) => ({
          id: row.id as bigint,
          timestamp: Number(row.timestamp_us),
          description: row.description as string,
          size: Number(row.size),
        }));
      },
      async delete(id) {
        return db.prepare('DELETE FROM scenarios WHERE id = ?').run(id).changes > 0;
      },
    };
  }

  private vehicleRows(): CatalogPort<VehicleConfig, VehicleConfig, string> {
    const db = this.db;
    const fromRow = (row: Row): VehicleConfig => ({
      name: row.name as string,
      timestamp: row.timestamp_us as number,
      doc: parse<JsonObject>(row.doc),
    });
    return {
      async put(v) {
        db.prepare(
          `INSERT INTO vehicles (name, timestamp_us, doc) VALUES (?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET timestamp_us = excluded.timestamp_us, doc = excluded.doc`,
        ).run(v.name, v.timestamp, json(v.doc));
      },
      async get(name) {
        const row = db.prepare('SELECT * FROM vehicles WHERE name = ?').get(name) as Row | undefined;
        return row && fromRow(row);
      },
      async list() {
        return (db.prepare('SELECT * FROM vehicles ORDER BY name').all() as Row[]).map(fromRow);
      },
      async delete(name) {
        return db.prepare('DELETE FROM vehicles WHERE name = ?').run(name).changes > 0;
      },
    };
  }
}

function retryWhileBusy<T>(work: () => T, attempts = 200): T {
  for (let i = 1; ; i++)
    try {
      return work();
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || i >= attempts) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
}

/** An SQLite file with no tables and no application id: one that is being created, or never was. */
function isEmptyDatabase(db: Database.Database): boolean {
  try {
    const tables = (db.prepare('SELECT COUNT(*) AS n FROM sqlite_master').get() as { n: number }).n;
    return tables === 0 && db.pragma('application_id', { simple: true }) === 0;
  } catch {
    // Not SQLite at all: checkStoreFile says so, naming the file.
    return false;
  }
}

/** Checks the file is a simrec store this simrec reads; returns its schema version. */
function checkStoreFile(db: Database.Database, path: string): number {
  let applicationId: number;
  let version: number;
  try {
    applicationId = db.pragma('application_id', { simple: true }) as number;
    version = db.pragma('user_version', { simple: true }) as number;
  } catch (error) {
    throw new SimrecError('unsupported', `${path} is not a simrec store: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (applicationId !== SIMREC_APPLICATION_ID)
    throw new SimrecError(
      'unsupported',
      `${path} is not a simrec store: its SQLite application_id is ${applicationId}, expected ${SIMREC_APPLICATION_ID} ` +
        `(to read another tool's database, use simrec import)`,
    );
  if (version > SCHEMA_VERSION)
    throw new SimrecError(
      'unsupported',
      `${path} is from a newer simrec: store schema version ${version}, this simrec reads up to ${SCHEMA_VERSION}; upgrade simrec`,
    );
  return version;
}

/** SQLite could not write (a read-only file, a full disk): not a reason to refuse reading. */
function isCannotWrite(error: unknown): boolean {
  const code = ((error as { cause?: { code?: string } }).cause?.code ?? (error as { code?: string }).code) as
    string | undefined;
  return (
    code === 'SQLITE_READONLY' ||
    code === 'SQLITE_FULL' ||
    code === 'SQLITE_CANTOPEN' ||
    code === 'SQLITE_IOERR'
  );
}

function runFromRow(row: Row): RunInfo {
  const simulator: RunInfo['simulator'] = { name: row.simulator as string };
  if (row.simulator_version !== null) simulator.version = row.simulator_version as string;
  return {
    id: row.id as number,
    begin: row.begin_us as number,
    end: row.end_us as number | null,
    endReason: row.end_reason as string | null,
    state: row.state as RunInfo['state'],
    simulator,
    description: row.description as string,
    metadata: parse(row.metadata),
  };
}

function attachmentFromRow(row: Row): Omit<AttachmentInfo, 'size'> {
  const info: Omit<AttachmentInfo, 'size'> = {
    name: row.name as string,
    mediaType: row.media_type as string,
  };
  if (row.t_us !== null) info.t = row.t_us as number;
  if (row.metadata !== null) info.metadata = parse(row.metadata);
  return info;
}
