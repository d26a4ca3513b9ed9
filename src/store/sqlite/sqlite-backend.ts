import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Attachment, AttachmentInfo } from '../../model/attachment.js';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import { notFound, SimrecError } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { ActorInfo, EndReason, RunInfo, RunSummary } from '../../model/run.js';
import type {
  CatalogPort,
  ListRunsArgs,
  ReadSamplesArgs,
  SampleBracket,
  StoreBackend,
  IntegrityProblem,
  IntegrityReport,
  StreamAppend,
  WriterIdentity,
} from '../../model/store-port.js';
import {
  mergeInferredFields,
  type InferredField,
  type Sample,
  type StreamInfo,
  type StreamSchema,
} from '../../model/stream.js';
import { decodeChunk, encodeChunk, type DecodedChunk } from '../common/chunk-codec.js';
import { LruCache } from '../common/lru-cache.js';
import { SCHEMA_DDL, SCHEMA_VERSION, SIMREC_APPLICATION_ID } from './sqlite-schema.js';

export interface SqliteStoreOptions {
  /**
   * `full` (default): a commit is on disk before it is acknowledged, even across a power cut.
   * `normal`: survives a crash of the process but not of the machine; faster on slow disks.
   */
  durability?: 'full' | 'normal';
  /** Samples per sealed chunk. */
  chunkSamples?: number;
  /**
   * zlib level for sealed chunk bodies, 0 = none. The default, 1, makes the store ~15% smaller than 0
   * and records ~20% slower (measured by `npm run bench`); tail chunks are never deflated.
   */
  deflateLevel?: number;
  /** Decoded chunks kept in memory for queries. */
  cacheChunks?: number;
}

/** Samples of a stream that are in small chunks at its tail, waiting to be merged into a sealed one. */
interface StreamTail {
  chunkIds: number[];
  samples: Sample[];
}

/** Where a chunk is, for the in-memory index that replaces an SQL query per seek. */
interface ChunkRef {
  id: number;
  begin: number;
  end: number;
}

interface StreamEntry {
  key: number;
  schema: StreamSchema;
  extra: InferredField[];
  tail: StreamTail;
  /** The stream's chunks by (begin, id), loaded on the first read; null until then. */
  index: ChunkRef[] | null;
}

/** What one write did to a stream's chunks, applied to its index once the write has committed. */
interface ChunkChanges {
  deleted: Set<number>;
  inserted: ChunkRef[];
}

type Row = Record<string, unknown>;

const json = (value: unknown): string => JSON.stringify(value);
const parse = <T>(text: unknown): T => JSON.parse(text as string) as T;

export class SqliteBackend implements StoreBackend {
  readonly kind = 'sqlite';
  private readonly streamCache = new Map<string, StreamEntry>();
  private readonly decoded: LruCache<number, DecodedChunk>;
  private readonly chunkSamples: number;
  private readonly deflateLevel: number;
  readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;

  private readonly db: Database.Database;
  readonly location: string;

  private constructor(db: Database.Database, location: string, options: SqliteStoreOptions) {
    this.db = db;
    this.location = location;
    this.chunkSamples = options.chunkSamples ?? 1024;
    this.deflateLevel = options.deflateLevel ?? 1;
    this.decoded = new LruCache(options.cacheChunks ?? 2048);
    this.scenarios = this.scenarioCatalog();
    this.vehicles = this.vehicleCatalog();
  }

  /** Opens (creating if absent) a store file; refuses files that are not simrec stores. */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteBackend {
    let fresh = !existsSync(path) || statSync(path).size === 0;
    let db: Database.Database;
    try {
      db = new Database(path);
      // First of all: another process may hold the file (creating it, switching it to WAL), and
      // every statement after this one must wait for it rather than fail at once.
      db.pragma('busy_timeout = 10000');
    } catch (error) {
      throw new SimrecError('io', `${path}: cannot open the store: ${(error as Error).message}`, {
        cause: error,
      });
    }
    try {
      const prepare = (): void => {
        // Switching to WAL needs the file to itself for a moment, and SQLite answers "busy" at once
        // (without its busy timeout) when another process is opening the same new store.
        retryWhileBusy(() => db.pragma('journal_mode = WAL'));
        db.pragma(`synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`);
        db.pragma('foreign_keys = ON');
      };
      // A file another process is creating this very moment has no schema yet: it is new, not foreign.
      if (!fresh) fresh = isEmptyDatabase(db);
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
        checkStoreFile(db, path);
        prepare();
      }
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteBackend(db, path, options);
  }

  // ---- runs ----------------------------------------------------------------------------------------

  async createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo> {
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
           (SELECT COALESCE(SUM(s.samples), 0) FROM streams s WHERE s.run_id = r.id) AS sample_count
         FROM runs r ORDER BY r.id ${order} LIMIT ?`,
    ).all(args.limit ?? -1) as Row[];
    return rows.map((row) => ({
      ...runFromRow(row),
      actors: row.actor_count as number,
      streams: row.stream_count as number,
      samples: row.sample_count as number,
    }));
  }

  async endRun(id: number, end: { end: number; endReason: EndReason }): Promise<RunInfo> {
    this.lists.delete(id);
    let sealed: (() => void)[] = [];
    this.db
      .transaction(() => {
        sealed = this.sealTails(id);
        const changed = this.stmt(
          `UPDATE runs SET end_us = ?, end_reason = ?, state = 'closed', writer = NULL WHERE id = ? AND state = 'recording'`,
        ).run(end.end, end.endReason, id).changes;
        if (changed === 0) throw this.runStateError(id);
      })
      .immediate();
    for (const apply of sealed) apply();
    this.db.pragma('incremental_vacuum');
    return (await this.getRun(id))!;
  }

  async deleteRun(id: number): Promise<boolean> {
    this.lists.delete(id);
    for (const key of this.streamCache.keys()) if (key.startsWith(`${id}\0`)) this.streamCache.delete(key);
    return this.stmt('DELETE FROM runs WHERE id = ?').run(id).changes > 0;
  }

  async closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]> {
    const rows = this.stmt(`SELECT id, begin_us, writer FROM runs WHERE state = 'recording'`).all() as Row[];
    const closed: number[] = [];
    for (const row of rows) {
      const writer = row.writer ? parse<WriterIdentity>(row.writer) : null;
      if (writer && isAlive(writer)) continue;
      const last = this.stmt('SELECT MAX(end_us) AS t FROM streams WHERE run_id = ?').get(row.id) as Row;
      const end = (last.t as number | null) ?? (row.begin_us as number);
      const changed = this.stmt(
        `UPDATE runs SET end_us = ?, end_reason = 'interrupted', state = 'closed', writer = NULL WHERE id = ? AND state = 'recording'`,
      ).run(end, row.id).changes;
      if (changed) closed.push(row.id as number);
    }
    return closed;
  }

  // ---- actors and streams --------------------------------------------------------------------------

  async putActors(run: number, actors: ActorInfo[]): Promise<void> {
    this.requireRun(run);
    this.lists.delete(run);
    const ordRow = this.stmt('SELECT COALESCE(MAX(ord), -1) AS ord FROM actors WHERE run_id = ?').get(
      run,
    ) as Row;
    let ord = (ordRow.ord as number) + 1;
    const upsert = this.stmt(
      `INSERT INTO actors (run_id, id, ord, kind, source_class, extents, attributes, options, record)
       VALUES (@run, @id, @ord, @kind, @sourceClass, @extents, @attributes, @options, @record)
       ON CONFLICT (run_id, id) DO UPDATE SET kind = excluded.kind, source_class = excluded.source_class,
         extents = excluded.extents, attributes = excluded.attributes, options = excluded.options, record = excluded.record`,
    );
    this.db
      .transaction(() => {
        for (const a of actors)
          upsert.run({
            run,
            id: a.id,
            ord: ord++,
            kind: a.kind,
            sourceClass: a.sourceClass ?? null,
            extents: a.extents ? json(a.extents) : null,
            attributes: json(a.attributes),
            options: json(a.options),
            record: a.record ? 1 : 0,
          });
      })
      .immediate();
  }

  async listActors(run: number): Promise<ActorInfo[]> {
    const lists = this.listsOf(run);
    lists.actors ??= this.queryActors(run);
    return lists.actors.map((a) => ({ ...a }));
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
      return actor;
    });
  }

  async putStreams(run: number, streams: StreamSchema[]): Promise<void> {
    this.requireRun(run);
    this.lists.delete(run);
    const upsert = this.stmt(
      `INSERT INTO streams (run_id, id, schema) VALUES (?, ?, ?)
       ON CONFLICT (run_id, id) DO UPDATE SET schema = excluded.schema`,
    );
    this.db
      .transaction(() => {
        for (const s of streams) {
          upsert.run(run, s.id, json(s));
          this.streamCache.delete(`${run}\0${s.id}`);
        }
      })
      .immediate();
  }

  async listStreams(run: number): Promise<StreamInfo[]> {
    const lists = this.listsOf(run);
    lists.streams ??= this.queryStreams(run);
    return lists.streams.map((s) => ({ ...s }));
  }

  private queryStreams(run: number): StreamInfo[] {
    const rows = this.stmt('SELECT * FROM streams WHERE run_id = ? ORDER BY key').all(run) as Row[];
    return rows.map((row) => ({
      ...parse<StreamSchema>(row.schema),
      samples: row.samples as number,
      begin: row.begin_us as number | null,
      end: row.end_us as number | null,
      extraFields: parse<InferredField[]>(row.extra_fields),
    }));
  }

  // ---- samples -------------------------------------------------------------------------------------

  async appendSamples(run: number, appends: StreamAppend[]): Promise<void> {
    const insertChunk = this.stmt(
      'INSERT INTO chunks (stream_key, begin_us, end_us, count, data) VALUES (?, ?, ?, ?, ?)',
    );
    const deleteChunk = this.stmt('DELETE FROM chunks WHERE id = ?');
    const updateStream = this.stmt(
      `UPDATE streams SET samples = samples + ?, begin_us = COALESCE(begin_us, ?), end_us = ?, extra_fields = ? WHERE key = ?`,
    );
    // The in-memory tails and indexes change only once the transaction has committed.
    const newTails = new Map<StreamEntry, StreamTail>();
    const newExtras = new Map<StreamEntry, InferredField[]>();
    const changes = new Map<StreamEntry, ChunkChanges>();
    const changesOf = (entry: StreamEntry): ChunkChanges => {
      let c = changes.get(entry);
      if (!c) changes.set(entry, (c = { deleted: new Set(), inserted: [] }));
      return c;
    };
    // A tail chunk lives until its stream has a full chunk's worth, so it is written the cheap way; the
    // sealed chunk that replaces it is the one kept, in the store's chosen compression.
    const write = (entry: StreamEntry, samples: Sample[], sealed: boolean): number => {
      const first = samples[0]!;
      const last = samples[samples.length - 1]!;
      const data = encodeChunk(samples, entry.schema.fields, {
        deflateLevel: sealed ? this.deflateLevel : 0,
        floatPacking: 'leading-zero-bytes',
      });
      const id = Number(insertChunk.run(entry.key, first.t, last.t, samples.length, data).lastInsertRowid);
      changesOf(entry).inserted.push({ id, begin: first.t, end: last.t });
      return id;
    };
    try {
      this.db
        .transaction(() => {
          const state = this.stmt('SELECT state FROM runs WHERE id = ?').get(run) as Row | undefined;
          if (!state || state.state !== 'recording') throw this.runStateError(run);
          for (const { stream, samples } of appends) {
            if (samples.length === 0) continue;
            const entry = this.streamEntry(run, stream);
            const tail = newTails.get(entry) ?? entry.tail;
            const pending = tail.samples.concat(samples);
            let next: StreamTail;
            if (pending.length >= this.chunkSamples) {
              // Merge the small tail chunks with the new samples into sealed chunks.
              for (const id of tail.chunkIds) {
                deleteChunk.run(id);
                changesOf(entry).deleted.add(id);
              }
              let start = 0;
              for (; pending.length - start >= this.chunkSamples; start += this.chunkSamples)
                write(entry, pending.slice(start, start + this.chunkSamples), true);
              const rest = pending.slice(start);
              next = rest.length
                ? { chunkIds: [write(entry, rest, false)], samples: rest }
                : { chunkIds: [], samples: [] };
            } else {
              next = { chunkIds: [...tail.chunkIds, write(entry, samples, false)], samples: pending };
            }
            newTails.set(entry, next);
            const extras = mergeInferredFields(
              newExtras.get(entry) ?? entry.extra,
              samples,
              entry.schema.fields,
            );
            newExtras.set(entry, extras);
            updateStream.run(
              samples.length,
              samples[0]!.t,
              samples[samples.length - 1]!.t,
              json(extras),
              entry.key,
            );
          }
        })
        .immediate();
    } catch (error) {
      throw wrapIoError(error, `${this.location}: appending to run ${run}`);
    }
    this.lists.delete(run);
    for (const [entry, tail] of newTails) entry.tail = tail;
    for (const [entry, extra] of newExtras) entry.extra = extra;
    for (const [entry, change] of changes) applyChanges(entry, change);
  }

  async putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void> {
    this.requireRun(run);
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
          for (let start = 0; start < samples.length; start += this.chunkSamples) {
            const part = samples.slice(start, start + this.chunkSamples);
            const data = encodeChunk(part, schema.fields, { deflateLevel: this.deflateLevel });
            this.stmt(
              'INSERT INTO chunks (stream_key, begin_us, end_us, count, data) VALUES (?, ?, ?, ?, ?)',
            ).run(key, part[0]!.t, part[part.length - 1]!.t, part.length, data);
          }
          this.stmt(
            'UPDATE streams SET samples = ?, begin_us = ?, end_us = ?, extra_fields = ? WHERE key = ?',
          ).run(
            samples.length,
            samples[0]?.t ?? null,
            samples.at(-1)?.t ?? null,
            json(mergeInferredFields([], samples, schema.fields)),
            key,
          );
        })
        .immediate();
    } catch (error) {
      throw wrapIoError(error, `${this.location}: writing derived stream ${schema.id} of run ${run}`);
    }
    this.streamCache.delete(`${run}\0${schema.id}`);
    this.lists.delete(run);
  }

  async *readSamples(args: ReadSamplesArgs): AsyncIterable<Sample[]> {
    const entry = this.streamEntry(args.run, args.stream);
    let from = args.from ?? Number.MIN_SAFE_INTEGER;
    const to = args.to ?? Number.MAX_SAFE_INTEGER;
    // Samples already yielded at time `from`: skipped when a read resumes there (time may stand still).
    let alreadyAtFrom = 0;
    reading: for (;;) {
      const index = this.chunkIndex(entry);
      // Chunks that may hold samples in [from, to]: those that begin with the one containing `from`
      // (every chunk that begins at the same time as it, too), up to the last that begins by `to`.
      const last = lastBeginAtOrBefore(index, from);
      const first = last < 0 ? 0 : firstBeginAtOrAfter(index, index[last]!.begin);
      // Copied: a write while this generator is paused replaces the index, it does not change this one.
      const refs = index.slice(first, lastBeginAtOrBefore(index, to) + 1);
      for (const ref of refs) {
        args.signal?.throwIfAborted();
        if (ref.end < from) continue;
        const chunk = this.chunkIfPresent(ref.id);
        if (!chunk) {
          // Another process merged this stream's small chunks while we read: read on from where we
          // were in the merged ones.
          this.forgetIndexes();
          continue reading;
        }
        let lo = chunk.firstAtOrAfter(from);
        const hi = chunk.lastAtOrBefore(to) + 1;
        for (let skip = alreadyAtFrom; skip > 0 && lo < hi && chunk.t[lo] === from; skip--) lo++;
        if (hi <= lo) continue;
        const batch = chunk.samples(lo, hi);
        const lastT = batch[batch.length - 1]!.t;
        let atLast = 0;
        for (let i = batch.length - 1; i >= 0 && batch[i]!.t === lastT; i--) atLast++;
        alreadyAtFrom = lastT === from ? alreadyAtFrom + atLast : atLast;
        from = lastT;
        yield batch;
      }
      return;
    }
  }

  async sampleBracket(run: number, stream: string, t: number): Promise<SampleBracket> {
    const entry = this.streamEntry(run, stream);
    // A chunk can vanish under a stale index when another process merges a stream's tail: look again.
    for (let attempt = 0; ; attempt++) {
      const bracket = this.bracketFromIndex(this.chunkIndex(entry), t);
      if (bracket || attempt === 3) return bracket ?? {};
      this.forgetIndexes();
    }
  }

  private bracketFromIndex(index: ChunkRef[], t: number): SampleBracket | undefined {
    const bracket: SampleBracket = {};
    const k = lastBeginAtOrBefore(index, t);
    if (k >= 0) {
      const chunk = this.chunkIfPresent(index[k]!.id);
      if (!chunk) return undefined;
      const row = chunk.lastAtOrBefore(t);
      bracket.before = chunk.sample(row);
      if (row + 1 < chunk.n) {
        bracket.after = chunk.sample(row + 1);
        return bracket;
      }
    }
    const next = index[k + 1];
    if (next) {
      const chunk = this.chunkIfPresent(next.id);
      if (!chunk) return undefined;
      bracket.after = chunk.sample(0);
    }
    return bracket;
  }

  // ---- attachments ---------------------------------------------------------------------------------

  async putAttachment(run: number, a: Attachment): Promise<void> {
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
    const problems: IntegrityProblem[] = [];
    const repair = options.repair === true;
    const integrity = this.db.pragma('integrity_check') as { integrity_check: string }[];
    for (const row of integrity)
      if (row.integrity_check !== 'ok')
        problems.push({ where: 'database', problem: row.integrity_check, repaired: false });
    const foreign = this.db.pragma('foreign_key_check') as { table: string; rowid: number; parent: string }[];
    for (const row of foreign)
      problems.push({
        where: `${row.table} row ${row.rowid}`,
        problem: `refers to a missing ${row.parent} row`,
        repaired: false,
      });
    const streams = this.stmt(
      'SELECT key, run_id, id, samples, begin_us, end_us FROM streams ORDER BY key',
    ).all() as Row[];
    let chunks = 0;
    let samples = 0;
    for (const s of streams) {
      const where = `run ${s.run_id} stream ${s.id}`;
      const rows = this.stmt(
        'SELECT id, begin_us, end_us, count, data FROM chunks WHERE stream_key = ? ORDER BY begin_us, id',
      ).all(s.key) as Row[];
      let count = 0;
      let begin: number | null = null;
      let end: number | null = null;
      for (const row of rows) {
        chunks++;
        let chunk: DecodedChunk;
        try {
          chunk = decodeChunk(row.data as Buffer, `${where} chunk ${row.id}`);
          if (chunk.n !== row.count) throw new Error(`holds ${chunk.n} samples, its row says ${row.count}`);
          if (chunk.t[0] !== row.begin_us || chunk.t[chunk.n - 1] !== row.end_us)
            throw new Error('its time range disagrees with its row');
        } catch (error) {
          if (repair) this.stmt('DELETE FROM chunks WHERE id = ?').run(row.id);
          problems.push({
            where: `${where} chunk ${row.id}`,
            problem: `unreadable: ${(error as Error).message}`,
            repaired: repair,
          });
          continue;
        }
        count += chunk.n;
        begin ??= row.begin_us as number;
        end = row.end_us as number;
      }
      samples += count;
      if (count !== s.samples || (count > 0 && (begin !== s.begin_us || end !== s.end_us))) {
        problems.push({
          where,
          problem: `counters say ${s.samples} samples over [${s.begin_us}, ${s.end_us}], its chunks hold ${count} over [${begin}, ${end}]`,
          repaired: repair,
        });
        if (repair)
          this.stmt('UPDATE streams SET samples = ?, begin_us = ?, end_us = ? WHERE key = ?').run(
            count,
            begin,
            end,
            s.key,
          );
      }
    }
    if (repair) {
      this.lists.clear();
      this.streamCache.clear();
    }
    const runs = (this.stmt('SELECT COUNT(*) AS n FROM runs').get() as Row).n as number;
    return {
      ok: problems.every((p) => p.repaired),
      runs,
      streams: streams.length,
      chunks,
      samples,
      problems,
    };
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  // ---- internals -----------------------------------------------------------------------------------

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

  private runStateError(run: number): SimrecError {
    const row = this.stmt('SELECT state FROM runs WHERE id = ?').get(run) as Row | undefined;
    return row
      ? new SimrecError('conflict', `run ${run} is closed; it cannot be changed`)
      : notFound(`run ${run} does not exist in ${this.location}`);
  }

  private streamEntry(run: number, stream: string): StreamEntry {
    const cacheKey = `${run}\0${stream}`;
    let entry = this.streamCache.get(cacheKey);
    if (!entry) {
      const row = this.stmt('SELECT key, schema, extra_fields FROM streams WHERE run_id = ? AND id = ?').get(
        run,
        stream,
      ) as Row | undefined;
      if (!row) {
        this.requireRun(run);
        throw notFound(`run ${run} has no stream ${JSON.stringify(stream)}`);
      }
      entry = {
        key: row.key as number,
        schema: parse(row.schema),
        extra: parse(row.extra_fields),
        tail: { chunkIds: [], samples: [] },
        index: null,
      };
      this.streamCache.set(cacheKey, entry);
    }
    return entry;
  }

  /**
   * Merges each stream's small tail chunks into one, so a finished run is compact. Returns what to
   * change in memory once the transaction has committed.
   */
  private sealTails(run: number): (() => void)[] {
    const afterCommit: (() => void)[] = [];
    for (const [key, entry] of this.streamCache) {
      if (!key.startsWith(`${run}\0`) || entry.tail.chunkIds.length < 2) continue;
      const deleteChunk = this.stmt('DELETE FROM chunks WHERE id = ?');
      for (const id of entry.tail.chunkIds) deleteChunk.run(id);
      const samples = entry.tail.samples;
      const data = encodeChunk(samples, entry.schema.fields, {
        deflateLevel: this.deflateLevel,
        floatPacking: 'leading-zero-bytes',
      });
      const begin = samples[0]!.t;
      const end = samples[samples.length - 1]!.t;
      const id = this.stmt(
        'INSERT INTO chunks (stream_key, begin_us, end_us, count, data) VALUES (?, ?, ?, ?, ?)',
      ).run(entry.key, begin, end, samples.length, data).lastInsertRowid;
      const change = { deleted: new Set(entry.tail.chunkIds), inserted: [{ id: Number(id), begin, end }] };
      afterCommit.push(() => {
        applyChanges(entry, change);
        entry.tail = { chunkIds: [], samples: [] };
      });
    }
    return afterCommit;
  }

  /** Runs, actors and streams change rarely and are read on every scene: kept until a write. */
  private readonly lists = new Map<number, { actors?: ActorInfo[]; streams?: StreamInfo[] }>();
  private listsOf(run: number): { actors?: ActorInfo[]; streams?: StreamInfo[] } {
    this.syncWithOtherConnections();
    let lists = this.lists.get(run);
    if (!lists) this.lists.set(run, (lists = {}));
    return lists;
  }

  private chunkIndex(entry: StreamEntry): ChunkRef[] {
    this.syncWithOtherConnections();
    entry.index ??= (
      this.stmt('SELECT id, begin_us, end_us FROM chunks WHERE stream_key = ? ORDER BY begin_us, id').all(
        entry.key,
      ) as Row[]
    ).map((row) => ({ id: row.id as number, begin: row.begin_us as number, end: row.end_us as number }));
    return entry.index;
  }

  /**
   * Another process may be writing the store (a recorder while a viewer reads): SQLite's data_version
   * changes when another connection commits, and then the in-memory indexes and lists are dropped.
   * Checked once per turn of the event loop, so a scene of 200 actors asks once, not 200 times.
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
    if (this.dataVersion !== null && version !== this.dataVersion) this.forgetIndexes();
    this.dataVersion = version;
  }

  /** The chunk, or undefined when another connection has just replaced it (tail chunks merged). */
  private chunkIfPresent(id: number): DecodedChunk | undefined {
    let chunk = this.decoded.get(id);
    if (!chunk) {
      const row = this.stmt('SELECT data FROM chunks WHERE id = ?').get(id) as Row | undefined;
      if (!row) return undefined;
      chunk = decodeChunk(row.data as Buffer, `${this.location} chunk ${id}`);
      this.decoded.set(id, chunk);
    }
    return chunk;
  }

  private forgetIndexes(): void {
    this.lists.clear();
    for (const entry of this.streamCache.values()) entry.index = null;
  }

  private scenarioCatalog(): CatalogPort<Scenario, ScenarioSummary, bigint> {
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

  private vehicleCatalog(): CatalogPort<VehicleConfig, VehicleConfig, string> {
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

function checkStoreFile(db: Database.Database, path: string): void {
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

/** Index of the last chunk that begins at or before t, or -1. */
function lastBeginAtOrBefore(index: readonly ChunkRef[], t: number): number {
  let lo = 0;
  let hi = index.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (index[mid]!.begin <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Index of the first chunk that begins at or after t, or the index's length. */
function firstBeginAtOrAfter(index: readonly ChunkRef[], t: number): number {
  let lo = 0;
  let hi = index.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (index[mid]!.begin < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Writes only ever replace chunks at a stream's tail and add after them, so order is kept by appending. */
function applyChanges(entry: StreamEntry, change: ChunkChanges): void {
  if (!entry.index) return;
  const kept = change.deleted.size
    ? entry.index.filter((r) => !change.deleted.has(r.id))
    : entry.index.slice();
  for (const ref of change.inserted) kept.push(ref);
  entry.index = kept;
}

/** SQLite's own errors (disk full, I/O) become `io` errors naming the store; ours pass through. */
function wrapIoError(error: unknown, where: string): unknown {
  if (error instanceof SimrecError) return error;
  return new SimrecError('io', `${where}: ${(error as Error).message}`, { cause: error });
}
