import { notFound } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';
import { loadDuckDB, SqlSession, type SqlQuery, type SqlResult } from '../formats/parquet/duckdb-sql.js';
import { keepTablesInStep, writeLiveTables, type KeepTables, type KeepTablesOptions } from './keep-tables.js';
import type { TablesFolder } from './tables-folder.js';

/**
 * SQL across a store's runs: the tables folder brought up to date for the runs asked (only runs whose
 * store version changed are written), runs still recording written for this query from the store,
 * and one read-only DuckDB over the files. `run` is the partition of every table, so `--runs` chooses
 * the files and a `WHERE run = ...` skips the other runs' data (their footers are still read, to
 * unify the columns of runs whose streams declare different fields).
 */

export interface FleetQuery extends KeepTablesOptions {
  sql: string;
  /** Only these runs (each must exist); every run of the store when absent. */
  runs?: readonly number[];
  /** The query is cancelled after this many milliseconds. */
  timeoutMs?: number;
}

/** The tables every store has, named in errors even when no run has written them yet. */
const OWN_TABLES = ['actors', 'runs'];

/**
 * SQL over one store's tables folder, for one question or many: the server and the benchmark keep one,
 * so that DuckDB, its views and the files' footers it has read are there for the next question.
 */
export class FleetSql {
  private readonly store: StoreBackend;
  private readonly folder: TablesFolder;
  private readonly keep: KeepTables;
  private session: Promise<SqlSession> | null = null;

  /** `keep`: how the folder is brought up to date before a question (keepTablesInStep by default). */
  constructor(store: StoreBackend, folder: TablesFolder, keep: KeepTables = keepTablesInStep) {
    this.store = store;
    this.folder = folder;
    this.keep = keep;
  }

  async query<T>(query: FleetQuery, read: (result: SqlResult) => Promise<T>): Promise<T> {
    // Before any work: a missing DuckDB is said at once, not after the tables are written.
    await loadDuckDB();
    const kept = await this.keep(this.store, this.folder, query.runs, query);
    if (kept.absent.length) throw notFound(`run ${kept.absent[0]} not found`);
    const live = await writeLiveTables(this.store, this.folder, kept.recording, query);
    try {
      const tables: Record<string, string[]> = {};
      // A table is read by column name only where its files' columns differ (or are not known: files
      // of runs still recording, manifests from before columns were kept).
      const columnsOf = new Map<string, string | null>();
      const mixed = new Set<string>();
      const manifests = this.folder.manifests();
      for (const run of kept.versions.keys())
        for (const [table, t] of Object.entries(manifests.get(run)?.tables ?? {})) {
          (tables[table] ??= []).push(...this.folder.partFiles(table, run, t));
          const columns = t.columns?.join(',') ?? null;
          if (columns === null || (columnsOf.has(table) && columnsOf.get(table) !== columns))
            mixed.add(table);
          columnsOf.set(table, columns);
        }
      for (const [table, files] of Object.entries(live.files)) {
        (tables[table] ??= []).push(...files);
        mixed.add(table);
      }
      const known = [...new Set([...OWN_TABLES, ...Object.keys(tables)])];
      const sqlQuery: SqlQuery = { sql: query.sql, tables, known, mixed };
      if (query.timeoutMs !== undefined) sqlQuery.timeoutMs = query.timeoutMs;
      if (query.signal) sqlQuery.signal = query.signal;
      this.session ??= SqlSession.open(this.folder.path);
      const session = this.session;
      session.catch(() => (this.session = null));
      return await (await session).query(sqlQuery, read);
    } finally {
      live.discard();
    }
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = null;
    // A session that failed to open has nothing to close, and its failure went to the query that opened it.
    (await session?.catch(() => null))?.close();
  }
}

/** One question (what `simrec sql` asks): a session opened for it and closed after. */
export async function queryFleet<T>(
  store: StoreBackend,
  folder: TablesFolder,
  query: FleetQuery,
  read: (result: SqlResult) => Promise<T>,
  keep?: KeepTables,
): Promise<T> {
  const fleet = new FleetSql(store, folder, keep);
  try {
    return await fleet.query(query, read);
  } finally {
    await fleet.close();
  }
}
