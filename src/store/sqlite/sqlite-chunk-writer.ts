import type Database from 'better-sqlite3';
import type { ColumnBatch } from '../../model/columns.js';
import { notFound, SimrecError } from '../../model/errors.js';
import type { ActorInfo, ActorPresence, EndReason } from '../../model/run.js';
import type { InferredField, StreamSchema } from '../../model/stream.js';
import { chunkFrameLength } from '../common/chunk-codes.js';
import { ChunkBuffers } from '../common/chunk-encoder.js';
import { StreamTail, type StoredTailChunk, type StreamTailOptions } from '../common/stream-tail.js';
import { ADD_STREAM_COUNTS } from './sqlite-schema.js';

export interface ColumnAppendWithKey {
  stream: string;
  batch: ColumnBatch;
}

type Row = Record<string, unknown>;

/** A stream's tail as the writer keeps it; one object per stream, so a set of them holds each once. */
interface TailEntry {
  run: number;
  key: number;
  /** The stream's id in its run. */
  stream: string;
  /** The actor the stream is of (null: the run's own stream). */
  actor: string | null;
  tail: StreamTail<number>;
}

/**
 * Everything that writes a recording into an SQLite store: its actors and streams as they are declared,
 * tail chunks at each commit, sealed chunks that replace them, the streams' counters, the closing of a
 * run. Synchronous, on a connection of its own: it runs on the store's writer thread
 * (sqlite-writer-thread.ts), so that encoding, SQLite and fsync never hold up the thread a simulator
 * appends from, and that thread never waits for the writer's lock. It is the only writer of the
 * `actors`, `streams` and `chunks` tables while a run records; the main thread writes runs and
 * attachments, and reads.
 */
export class SqliteChunkWriter {
  private readonly db: Database.Database;
  private readonly options: StreamTailOptions;
  private readonly location: string;
  /** Tails by run, then stream id; loaded from the store on first use (sealed = 0 chunks). */
  private readonly tails = new Map<number, Map<string, TailEntry>>();
  private readonly statements = new Map<string, Database.Statement>();
  /** What tail and sealed chunks are assembled into: SQLite copies each as it is bound, and it is reused. */
  private readonly chunkBuffers = new ChunkBuffers();
  /**
   * Tails waiting for sealDue (the writer thread calls it between commits): those that hold a chunk's
   * worth, and (`true`: sealed whole, then let go) those of actors that have left the run.
   */
  private readonly due = new Map<TailEntry, boolean>();
  /**
   * By run, the actors whose presence ends (its last interval's end), until the run's samples reach
   * that time: an importer that knows every actor's presence gives it with its first samples.
   */
  private readonly leaving = new Map<number, Map<string, number>>();
  private readonly durability: 'full' | 'normal';
  /**
   * Each run's largest actor order number, once known: asking SQLite at every declaration scanned
   * every actor of the run (a recorder declaring each departure as it comes spent most of its store
   * time there).
   */
  private readonly maxActorOrd = new Map<number, number>();

  constructor(
    db: Database.Database,
    location: string,
    options: StreamTailOptions,
    durability: 'full' | 'normal' = 'full',
  ) {
    this.durability = durability;
    this.db = db;
    this.location = location;
    this.options = options;
  }

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }

  /** Inserts or replaces actors by id (their presence is kept); see `declaration`. */
  putActors(run: number, actors: readonly ActorInfo[]): void {
    this.declaration(`declaring actors of run ${run}`, run, () => {
      let max = this.maxActorOrd.get(run);
      if (max === undefined)
        max = (this.stmt('SELECT COALESCE(MAX(ord), -1) AS ord FROM actors WHERE run_id = ?').get(run) as Row)
          .ord as number;
      let ord = max + 1;
      const upsert = this.stmt(
        `INSERT INTO actors (run_id, id, ord, kind, source_class, extents, attributes, options, record)
         VALUES (@run, @id, @ord, @kind, @sourceClass, @extents, @attributes, @options, @record)
         ON CONFLICT (run_id, id) DO UPDATE SET kind = excluded.kind, source_class = excluded.source_class,
           extents = excluded.extents, attributes = excluded.attributes, options = excluded.options, record = excluded.record
         RETURNING ord`,
      );
      for (const a of actors) {
        const row = upsert.get({
          run,
          id: a.id,
          ord: ord++,
          kind: a.kind,
          sourceClass: a.sourceClass ?? null,
          extents: a.extents ? JSON.stringify(a.extents) : null,
          attributes: JSON.stringify(a.attributes),
          options: JSON.stringify(a.options),
          record: a.record ? 1 : 0,
        }) as Row;
        // A new actor takes the order offered; one declared before keeps its own.
        max = Math.max(max, row.ord as number);
      }
      return () => this.maxActorOrd.set(run, max);
    });
  }

  /** Inserts or replaces stream schemas by id (counts and time ranges are kept); see `declaration`. */
  putStreams(run: number, streams: readonly StreamSchema[]): void {
    this.declaration(`declaring streams of run ${run}`, run, () => {
      const upsert = this.stmt(
        `INSERT INTO streams (run_id, id, schema) VALUES (?, ?, ?)
         ON CONFLICT (run_id, id) DO UPDATE SET schema = excluded.schema`,
      );
      for (const s of streams) upsert.run(run, s.id, JSON.stringify(s));
    });
  }

  /**
   * Commits a run's declarations (actors, streams) without an fsync of their own. A declaration is
   * promised declared, not durable (docs/protocol.md: declarations are acknowledged once declared); the
   * samples that name it come in later commits, which fsync the WAL (one file, written in order) and so
   * make it durable with them, and a run's end is fsynced too: no sample is ever durable without its
   * declarations. Measured: a departing vehicle's two fsyncs, actor and stream, were 7% of record sumo
   * (LimSim's bigInter) and 12% of the demo, while the simulator waited. `work` may return what to do
   * once committed.
   */
  private declaration(what: string, run: number, work: () => (() => void) | void): void {
    if (this.durability === 'full') this.db.pragma('synchronous = NORMAL');
    try {
      const committed = this.db
        .transaction(() => {
          if (!this.stmt('SELECT 1 FROM runs WHERE id = ?').get(run))
            throw notFound(`run ${run} does not exist in ${this.location}`);
          return work();
        })
        .immediate();
      committed?.();
    } catch (error) {
      throw wrapIoError(error, `${this.location}: ${what}`);
    } finally {
      if (this.durability === 'full') this.db.pragma('synchronous = FULL');
    }
  }

  /**
   * Appends to several streams of a run in one durable transaction, with the presence of actors that
   * changed with them (written as putPresence writes it).
   */
  append(run: number, appends: Iterable<ColumnAppendWithKey>, presence: readonly ActorPresence[] = []): void {
    const touched: TailEntry[] = [];
    // The latest time of the commit's samples: actors that left by then are gone (sealWhenGone).
    let latest = -Infinity;
    try {
      this.db
        .transaction(() => {
          const state = this.stmt('SELECT state FROM runs WHERE id = ?').get(run) as Row | undefined;
          if (!state || state.state !== 'recording') throw this.runStateError(run);
          const insert = this.stmt(
            'INSERT INTO chunks (stream_key, begin_us, end_us, count, sealed, data) VALUES (?, ?, ?, ?, ?, ?)',
          );
          const counters = this.stmt(ADD_STREAM_COUNTS);
          for (const { stream, batch } of appends) {
            const n = batch.t.length;
            if (n === 0) continue;
            latest = Math.max(latest, batch.t[n - 1]!);
            const entry = this.tailOf(run, stream);
            touched.push(entry);
            const { chunk, extrasChanged } = entry.tail.append(batch, this.chunkBuffers);
            const id = Number(
              insert.run(entry.key, chunk.begin, chunk.end, chunk.count, 0, chunk.data).lastInsertRowid,
            );
            this.chunkBuffers.reuse();
            entry.tail.appended(id, n);
            counters.run(entry.key, n, batch.t[0]!, batch.t[n - 1]!);
            if (extrasChanged) this.saveExtras(entry.key, entry.tail.extraFields);
            if (entry.tail.dueForSeal && !this.due.has(entry)) this.due.set(entry, false);
          }
          if (presence.length) {
            const update = this.stmt('UPDATE actors SET presence = ? WHERE run_id = ? AND id = ?');
            for (const p of presence)
              if (update.run(JSON.stringify(p.intervals), run, p.actor).changes === 0)
                throw notFound(`run ${run} has no actor ${JSON.stringify(p.actor)}`);
          }
        })
        .immediate();
    } catch (error) {
      // What the failed transaction did to the tails in memory is undone by loading them again.
      for (const entry of touched) this.forgetStream(run, entry.key);
      this.chunkBuffers.reuse();
      throw wrapIoError(error, `${this.location}: appending to run ${run}`);
    }
    this.sealWhenGone(run, presence, latest);
  }

  /**
   * The streams of actors that have left (their presence's last interval ended, and the run's samples
   * reached its end) are sealed whole between commits and their tails let go, rather than all at the
   * run's end: a run of many actors that come and go (a town's traffic, SUMO's FCD) kept every departed
   * actor's tail in memory and sealed thousands of them while its end waited. An actor that comes back
   * starts a tail again.
   */
  private sealWhenGone(run: number, presence: readonly ActorPresence[], latest: number): void {
    let leaving = this.leaving.get(run);
    for (const p of presence) {
      const end = p.intervals.at(-1)?.to ?? null;
      if (end === null) leaving?.delete(p.actor);
      else {
        if (!leaving) this.leaving.set(run, (leaving = new Map<string, number>()));
        leaving.set(p.actor, end);
      }
    }
    if (!leaving?.size) return;
    const gone = new Set<string>();
    for (const [actor, end] of leaving)
      if (end <= latest) {
        gone.add(actor);
        leaving.delete(actor);
      }
    if (gone.size === 0) return;
    for (const entry of this.tails.get(run)?.values() ?? [])
      if (entry.actor !== null && gone.has(entry.actor) && entry.tail.rows > 0) this.due.set(entry, true);
  }

  get hasDue(): boolean {
    return this.due.size > 0;
  }

  /**
   * Seals tails that hold a chunk's worth, about `budgetRows` samples' worth at a time, in one
   * transaction. It commits without an fsync of its own: it replaces durable samples with the same
   * samples, so a seal lost in a power cut leaves the tails, and the next commit's fsync (the WAL is one
   * file, in order) makes it durable. Returns whether more are due.
   */
  sealDue(budgetRows = 16_384): boolean {
    const batch: [TailEntry, boolean][] = [];
    let rows = 0;
    for (const [entry, gone] of this.due) {
      batch.push([entry, gone]);
      this.due.delete(entry);
      rows += entry.tail.rows;
      if (rows >= budgetRows) break;
    }
    if (batch.length === 0) return false;
    if (this.durability === 'full') this.db.pragma('synchronous = NORMAL');
    try {
      this.db
        .transaction(() => {
          for (const [entry, gone] of batch) this.sealTail(entry, gone);
        })
        .immediate();
      // Sealed whole: nothing of the stream is held until its actor comes back (tailOf loads it then).
      for (const [entry, gone] of batch) if (gone) this.tails.get(entry.run)?.delete(entry.stream);
    } catch (error) {
      // Nothing lost: the tails are still there; their in-memory state is loaded again on next use.
      for (const [entry] of batch) this.forgetStream(entry.run, entry.key);
      throw wrapIoError(error, `${this.location}: sealing chunks of run ${batch[0]![0].run}`);
    } finally {
      if (this.durability === 'full') this.db.pragma('synchronous = FULL');
    }
    return this.due.size > 0;
  }

  /** Seals every tail of the run and closes it, in one transaction. */
  endRun(run: number, end: number, reason: EndReason): void {
    try {
      this.db
        .transaction(() => {
          this.sealRun(run);
          const changed = this.stmt(
            `UPDATE runs SET end_us = ?, end_reason = ?, state = 'closed', writer = NULL WHERE id = ? AND state = 'recording'`,
          ).run(end, reason, run).changes;
          if (changed === 0) throw this.runStateError(run);
        })
        .immediate();
    } catch (error) {
      this.forgetRun(run);
      throw wrapIoError(error, `${this.location}: ending run ${run}`);
    }
    this.forgetRun(run);
    this.db.pragma('incremental_vacuum');
  }

  /** Drops what it keeps of a run (deleted by the main thread, or closed). */
  forgetRun(run: number): void {
    this.tails.delete(run);
    this.leaving.delete(run);
    this.maxActorOrd.delete(run);
    for (const entry of this.due.keys()) if (entry.run === run) this.due.delete(entry);
  }

  private forgetStream(run: number, key: number): void {
    const streams = this.tails.get(run);
    if (streams) for (const [id, entry] of streams) if (entry.key === key) streams.delete(id);
    for (const entry of this.due.keys()) if (entry.run === run && entry.key === key) this.due.delete(entry);
  }

  /** Merges every stream's tail chunks of a run into sealed chunks (inside the caller's transaction). */
  private sealRun(run: number): void {
    const keys = this.stmt(
      `SELECT DISTINCT s.id FROM chunks c JOIN streams s ON c.stream_key = s.key WHERE s.run_id = ? AND c.sealed = 0`,
    ).all(run) as Row[];
    for (const row of keys) this.sealTail(this.tailOf(run, row.id as string), true);
  }

  /** Seals what the tail holds up to its last chunk boundary (all of it when `final`). */
  private sealTail(entry: TailEntry, final = false): void {
    const select = this.stmt('SELECT data FROM chunks WHERE id = ?');
    const read = (id: number): StoredTailChunk => {
      const row = select.get(id) as Row | undefined;
      if (!row)
        throw new SimrecError('io', `${this.location}: tail chunk ${id} of run ${entry.run} vanished`);
      return { data: row.data as Buffer, where: `${this.location} run ${entry.run} chunk ${id}` };
    };
    const seal = entry.tail.seal(read, { final, buffers: this.chunkBuffers });
    if (!seal) return;
    let restId: number | undefined;
    try {
      const remove = this.stmt('DELETE FROM chunks WHERE id = ?');
      for (const id of seal.replaces) remove.run(id);
      const insertSealed = this.stmt(INSERT_SEALED_CHUNK);
      for (const c of seal.chunks)
        insertSealed.run(entry.key, c.begin, c.end, c.count, ...sealedChunkParts(c.data));
      const rest = seal.rest;
      if (rest)
        restId = Number(
          this.stmt(
            'INSERT INTO chunks (stream_key, begin_us, end_us, count, sealed, data) VALUES (?, ?, ?, ?, ?, ?)',
          ).run(entry.key, rest.begin, rest.end, rest.count, 0, rest.data).lastInsertRowid,
        );
    } finally {
      // SQLite copied each chunk as it was bound.
      this.chunkBuffers.reuse();
    }
    entry.tail.sealed(restId);
  }

  private saveExtras(key: number, extras: InferredField[]): void {
    this.stmt('UPDATE streams SET extra_fields = ? WHERE key = ?').run(JSON.stringify(extras), key);
  }

  private tailOf(run: number, stream: string): TailEntry {
    let streams = this.tails.get(run);
    if (!streams) this.tails.set(run, (streams = new Map<string, TailEntry>()));
    let entry = streams.get(stream);
    if (entry) return entry;
    const row = this.stmt(
      `SELECT s.key, s.schema, s.extra_fields, COALESCE(k.samples, 0) AS samples
       FROM streams s LEFT JOIN stream_counts k ON k.stream_key = s.key WHERE s.run_id = ? AND s.id = ?`,
    ).get(run, stream) as Row | undefined;
    if (!row) throw notFound(`run ${run} has no stream ${JSON.stringify(stream)}`);
    const schema = JSON.parse(row.schema as string) as StreamSchema;
    const tail = new StreamTail<number>(
      schema.fields,
      JSON.parse(row.extra_fields as string) as InferredField[],
      this.options,
    );
    const key = row.key as number;
    const tailRows = this.stmt(
      'SELECT id, count FROM chunks WHERE stream_key = ? AND sealed = 0 ORDER BY begin_us, id',
    ).all(key) as Row[];
    let tailSamples = 0;
    for (const r of tailRows) {
      tail.adopt(r.id as number, r.count as number);
      tailSamples += r.count as number;
    }
    tail.setSealedRows((row.samples as number) - tailSamples);
    entry = { run, key, stream, actor: schema.actor ?? null, tail };
    streams.set(stream, entry);
    return entry;
  }

  private runStateError(run: number): SimrecError {
    const row = this.stmt('SELECT state FROM runs WHERE id = ?').get(run) as Row | undefined;
    return row
      ? new SimrecError('conflict', `run ${run} is closed; it cannot be changed`)
      : notFound(`run ${run} does not exist in ${this.location}`);
  }
}

/**
 * A sealed chunk's row (schema 6): its frame in `frame`, its blocks in `data`, so that a reader fetches
 * the frame and then the one block it decodes (sqlite-samples.ts). Parameters: stream key, begin, end,
 * count, and the chunk's two parts (sealedChunkParts).
 */
export const INSERT_SEALED_CHUNK =
  'INSERT INTO chunks (stream_key, begin_us, end_us, count, sealed, frame, data) VALUES (?, ?, ?, ?, 1, ?, ?)';

/** A chunk cut into its frame and its blocks (views of its bytes), as INSERT_SEALED_CHUNK stores it. */
export function sealedChunkParts(data: Uint8Array): [Uint8Array | null, Uint8Array] {
  const frame = chunkFrameLength(data);
  return frame === 0 ? [null, data] : [data.subarray(0, frame), data.subarray(frame)];
}

/** SQLite's own errors (disk full, I/O) become `io` errors naming the store; ours pass through. */
export function wrapIoError(error: unknown, where: string): unknown {
  if (error instanceof SimrecError) return error;
  return new SimrecError('io', `${where}: ${(error as Error).message}`, { cause: error });
}
