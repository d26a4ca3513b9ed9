import { isCannotWrite } from './sqlite-errors.js';
import { notFound, SimrecError } from '../../model/errors.js';
import { deepFreeze } from '../../model/json.js';
import { jsonDigest } from '../../model/json-digest.js';
import type { ActorInfo, ActorPresence, EndReason, RunInfo, RunSummary } from '../../model/run.js';
import type { ListOptions, ListRunsArgs, WriterIdentity } from '../../model/store-port.js';
import type { InferredField, StreamInfo, StreamSchema } from '../../model/stream.js';
import { SqliteChunkWriter, wrapIoError } from './sqlite-chunk-writer.js';
import { json, parse, type Row, type SqliteStoreFile } from './sqlite-store-file.js';

export interface StreamMeta {
  id: string;
}

/** SqliteBackend's runs, actors and streams: rows of their own tables, the lists of them cached. */
export class SqliteRuns {
  private readonly file: SqliteStoreFile;

  constructor(file: SqliteStoreFile) {
    this.file = file;
  }

  // ---- runs ----------------------------------------------------------------------------------------

  async createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo> {
    const created = this.file.guard('creating a run', () => this.createRunNow(run, writer));
    // The writer thread takes tens of milliseconds to start: it does while the run's actors are declared.
    this.file.writer.prepare();
    return created;
  }

  private createRunNow(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): RunInfo {
    const result = this.file
      .stmt(
        `INSERT INTO runs (begin_us, end_us, end_reason, state, simulator, simulator_version, description, metadata, writer)
         VALUES (?, NULL, NULL, 'recording', ?, ?, ?, ?, ?)`,
      )
      .run(
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
    const row = this.file.stmt('SELECT * FROM runs WHERE id = ?').get(id) as Row | undefined;
    return row && runFromRow(row);
  }

  async listRuns(args: ListRunsArgs = {}): Promise<RunSummary[]> {
    const order = args.newestFirst === false ? 'ASC' : 'DESC';
    const rows = this.file
      .stmt(
        `SELECT r.*,
           (SELECT COUNT(*) FROM actors a WHERE a.run_id = r.id) AS actor_count,
           (SELECT COUNT(*) FROM streams s WHERE s.run_id = r.id) AS stream_count,
           (SELECT COALESCE(SUM(samples), 0) FROM (SELECT ${this.file.counters.columns} FROM streams s ${this.file.counters.join} WHERE s.run_id = r.id)) AS sample_count
         FROM runs r ORDER BY r.id ${order} LIMIT ?`,
      )
      .all(args.limit ?? -1) as Row[];
    return rows.map((row) => ({
      ...runFromRow(row),
      actorCount: row.actor_count as number,
      streamCount: row.stream_count as number,
      samples: row.sample_count as number,
    }));
  }

  async endRun(id: number, end: { end: number; endReason: EndReason }): Promise<RunInfo> {
    this.file.forgetRun(id);
    await this.file.writer.endRun(id, end.end, end.endReason);
    this.file.forgetRun(id);
    return (await this.getRun(id))!;
  }

  async deleteRun(id: number): Promise<boolean> {
    this.file.forgetRun(id);
    this.file.writer.forgetRun(id);
    let deleted: boolean;
    try {
      deleted = this.file.stmt('DELETE FROM runs WHERE id = ?').run(id).changes > 0;
    } catch (error) {
      throw wrapIoError(error, `${this.file.location}: deleting run ${id}`);
    }
    // The run's pages given back to the file system (the store is made with incremental auto-vacuum):
    // without it the file kept its size, the pages free for later runs only. Not needed for the
    // delete, so a store too busy or too full to move pages keeps them free, as before.
    try {
      if (deleted) this.file.db.pragma('incremental_vacuum');
    } catch {
      // The pages stay on the free list; the next run recorded reuses them.
    }
    return deleted;
  }

  /**
   * Versions already worked out, while nothing has been committed since: SQLite's data_version changes
   * when another connection (the writer thread's, another process's) commits, total_changes when this
   * one does. A server or a session asking again and again reads nothing when nothing changed.
   */
  private versionCache: { stamp: string; versions: Map<number, string | null> } | null = null;

  async runVersions(runs: readonly number[]): Promise<Map<number, string>> {
    const stamp = `${String(this.file.db.pragma('data_version', { simple: true }))}:${String(
      this.file.stmt('SELECT total_changes()').pluck().get(),
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
        this.file.db
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
          FROM (SELECT s.run_id, s.key, s.id, s.schema, s.extra_fields, ${this.file.counters.columns}
            FROM streams s ${this.file.counters.join} WHERE s.run_id IN (${list})) GROUP BY run_id`,
      ])
        for (const row of rowsOf(sql)) parts.get(row[0] as number)?.push(row);
      for (const [run, rows] of parts) versions.set(run, jsonDigest(rows));
    }
    return versions;
  }

  async streamVersions(run: number): Promise<Map<string, string>> {
    // Chunk ids are never reused: a chunk written, merged or replaced raises the largest, one removed
    // lowers the count.
    const rows = this.file
      .stmt(
        `SELECT s.id, COUNT(c.id), MAX(c.id) FROM streams s LEFT JOIN chunks c ON c.stream_key = s.key
         WHERE s.run_id = ? GROUP BY s.key`,
      )
      .raw(true)
      .all(run) as [string, number, number | null][];
    return new Map(rows.map(([id, count, last]) => [id, `${count}:${last ?? ''}`]));
  }

  async closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]> {
    const rows = this.file
      .stmt(`SELECT id, begin_us, writer FROM runs WHERE state = 'recording'`)
      .all() as Row[];
    const closed: number[] = [];
    // On this thread: the runs are a dead writer's, and closing seals their tail chunks like endRun.
    const writer = new SqliteChunkWriter(this.file.db, this.file.location, this.file.tailOptions);
    for (const row of rows) {
      const w = row.writer ? parse<WriterIdentity>(row.writer) : null;
      if (w && isAlive(w)) continue;
      const last = this.file
        .stmt(
          `SELECT MAX(end_us) AS t FROM (SELECT ${this.file.counters.columns} FROM streams s ${this.file.counters.join} WHERE s.run_id = ?)`,
        )
        .get(row.id) as Row;
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
      this.file.forgetRun(row.id as number);
    }
    return closed;
  }

  // ---- actors and streams --------------------------------------------------------------------------

  async putActors(run: number, actors: ActorInfo[]): Promise<void> {
    // On the writer's connection, in order with the samples: this thread never waits for its lock.
    await this.file.writer.putActors(run, actors);
    this.file.lists.delete(run);
  }

  async putPresence(run: number, presence: ActorPresence[]): Promise<void> {
    this.file.guard(`keeping actors' presence in run ${run}`, () => this.putPresenceNow(run, presence));
  }

  private putPresenceNow(run: number, presence: ActorPresence[]): void {
    this.file.requireRun(run);
    this.file.lists.delete(run);
    const update = this.file.stmt('UPDATE actors SET presence = ? WHERE run_id = ? AND id = ?');
    this.file.db
      .transaction(() => {
        for (const p of presence)
          if (update.run(json(p.intervals), run, p.actor).changes === 0)
            throw notFound(`run ${run} has no actor ${JSON.stringify(p.actor)}`);
      })
      .immediate();
  }

  async listActors(run: number, options?: ListOptions): Promise<ActorInfo[]> {
    const lists = this.file.listsOf(run);
    lists.actors ??= this.queryActors(run);
    if (options?.shared) return lists.actors;
    return lists.actors.map((a) =>
      a.presence ? { ...a, presence: a.presence.map((iv) => ({ ...iv })) } : { ...a },
    );
  }

  private queryActors(run: number): ActorInfo[] {
    const rows = this.file.stmt('SELECT * FROM actors WHERE run_id = ? ORDER BY ord').all(run) as Row[];
    const actors = rows.map((row) => {
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
      // Cached and handed out to every caller, as shallow copies (presence copied) or as they are
      // (ListOptions.shared): frozen, so that a caller changing it fails instead of changing every
      // later answer.
      deepFreeze(actor.attributes);
      deepFreeze(actor.options);
      deepFreeze(actor.extents);
      deepFreeze(actor.presence);
      return Object.freeze(actor);
    });
    return Object.freeze(actors) as ActorInfo[];
  }

  async putStreams(run: number, streams: StreamSchema[]): Promise<void> {
    await this.file.writer.putStreams(run, streams);
    this.file.lists.delete(run);
  }

  async listStreams(run: number, options?: ListOptions): Promise<StreamInfo[]> {
    const lists = this.file.listsOf(run);
    lists.streams ??= this.queryStreams(run);
    if (options?.shared) return lists.streams;
    return lists.streams.map((s) => ({ ...s }));
  }

  private queryStreams(run: number): StreamInfo[] {
    const rows = this.file
      .stmt(
        `SELECT s.schema, s.extra_fields, ${this.file.counters.columns} FROM streams s ${this.file.counters.join}
       WHERE s.run_id = ? ORDER BY s.key`,
      )
      .all(run) as Row[];
    // Cached and handed out as shallow copies or as they are, frozen (see queryActors), the fields and
    // metadata of streams of the same schema one frozen object (StreamSchemaTexts).
    const streams = rows.map((row) => {
      const stream: StreamInfo = {
        ...this.file.schemaTexts.parse(row.schema as string),
        samples: row.samples as number,
        begin: row.begin_us as number | null,
        end: row.end_us as number | null,
        extraFields: parse<InferredField[]>(row.extra_fields),
      };
      deepFreeze(stream.extraFields);
      return Object.freeze(stream);
    });
    return Object.freeze(streams) as StreamInfo[];
  }

  streamMeta(run: number, stream: string): StreamMeta {
    this.requireStream(run, stream);
    return { id: stream };
  }

  /**
   * Not found for the first of `streams` the run does not have. A list of ids checked once is not
   * looked at again while the run's lists stand (a scene asks with the same list every time).
   */
  requireStreams(run: number, streams: readonly string[]): void {
    const lists = this.file.listsOf(run);
    if (lists.checked?.has(streams)) return;
    for (const id of streams) this.requireStream(run, id);
    (lists.checked ??= new WeakSet()).add(streams);
  }

  private requireStream(run: number, stream: string): void {
    const lists = this.file.listsOf(run);
    lists.streams ??= this.queryStreams(run);
    lists.byId ??= new Map(lists.streams.map((s) => [s.id, s] as const));
    if (!lists.byId.has(stream)) {
      this.file.requireRun(run);
      throw notFound(`run ${run} has no stream ${JSON.stringify(stream)}`);
    }
  }
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
