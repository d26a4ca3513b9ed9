import { notFound } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';
import { loadDuckDB, querySql, type SqlResult } from '../formats/parquet/duckdb-sql.js';
import { keepTablesInStep, writeLiveTables, type KeepTablesOptions } from './keep-tables.js';
import type { TablesFolder } from './tables-folder.js';

/**
 * SQL across a store's runs: the tables folder brought up to date for the runs asked (only runs whose
 * store version changed are written), runs still recording written for this query from the store,
 * and one read-only DuckDB over the files. `run` is the partition of every table, so `--runs` chooses
 * the files and a `WHERE run = ...` prunes the rest unread.
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

export async function queryFleet<T>(
  store: StoreBackend,
  folder: TablesFolder,
  query: FleetQuery,
  read: (result: SqlResult) => Promise<T>,
): Promise<T> {
  // Before any work: a missing DuckDB is said at once, not after the tables are written.
  await loadDuckDB();
  if (query.runs) {
    const versions = await store.runVersions(query.runs);
    // Every run the store has, recording or closed, has a version.
    const missing = query.runs.find((id) => !versions.has(id));
    if (missing !== undefined) throw notFound(`run ${missing} not found`);
  }
  const kept = await keepTablesInStep(store, folder, query.runs, query);
  const live = await writeLiveTables(store, folder, kept.recording, query);
  try {
    const tables: Record<string, string[]> = {};
    for (const run of kept.versions.keys())
      for (const table of Object.keys(folder.manifest(run)?.tables ?? {}))
        (tables[table] ??= []).push(folder.partFile(table, run));
    for (const [table, files] of Object.entries(live.files)) (tables[table] ??= []).push(...files);
    const known = [...new Set([...OWN_TABLES, ...Object.keys(tables)])];
    const sqlQuery: Parameters<typeof querySql>[0] = { sql: query.sql, tables, root: folder.path, known };
    if (query.timeoutMs !== undefined) sqlQuery.timeoutMs = query.timeoutMs;
    if (query.signal) sqlQuery.signal = query.signal;
    return await querySql(sqlQuery, read);
  } finally {
    live.discard();
  }
}
