import { join } from 'node:path';
import type { RunSummary } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { writeParquetTables } from '../formats/parquet/write-parquet.js';
import { storeRunSource } from '../replay/run-source.js';
import { TablesFolder } from './tables-folder.js';

/**
 * Keeps a store's tables folder in step with the store. A closed run's files are written once, and
 * written again, whole, when the store's version of the run (StoreBackend.runVersions) is no longer
 * the one they were written from: new streams (`simrec eval`), presence put after an import, chunks a
 * repair removed. A run gone from the store has its files removed. Runs still recording are never
 * written here: a query reads them from the store (writeLiveTables).
 */

export interface KeepTablesOptions {
  warn?: (where: string, message: string) => void;
  /** Samples written so far of those to write. */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

export interface KeepTablesResult {
  /** Closed runs whose files were (re)written. */
  written: number[];
  /** Closed runs whose files were already current. */
  current: number[];
  /** Runs still recording, not written. */
  recording: number[];
  /** Runs whose files were removed, the store having them no more. */
  removed: number[];
  /** Runs asked for that the store does not have. */
  absent: number[];
  /** The store's version of each closed run in scope, as the files now hold it. */
  versions: Map<number, string>;
}

/**
 * Brings the tables of `runs` (every run of the store when absent) up to date, and removes the files
 * of runs the store no longer has.
 */
export async function keepTablesInStep(
  store: StoreBackend,
  folder: TablesFolder,
  runs?: readonly number[],
  options: KeepTablesOptions = {},
): Promise<KeepTablesResult> {
  const signal = options.signal ?? new AbortController().signal;
  const all = await store.listRuns({ newestFirst: false });
  const byId = new Map(all.map((r) => [r.id, r]));
  const scope = (runs ?? all.map((r) => r.id)).filter((id) => byId.has(id));
  const result: KeepTablesResult = {
    written: [],
    current: [],
    recording: [],
    removed: [],
    absent: (runs ?? []).filter((id) => !byId.has(id)),
    versions: new Map(),
  };
  const manifests = folder.manifests();
  for (const run of manifests.keys())
    if (!byId.has(run)) {
      folder.removeRun(run);
      result.removed.push(run);
    }
  folder.sweepStaging();

  const closed = scope.filter((id) => byId.get(id)!.state === 'closed');
  result.recording = scope.filter((id) => byId.get(id)!.state !== 'closed');
  const versions = await store.runVersions(closed);
  const stale: RunSummary[] = [];
  for (const id of closed) {
    const version = versions.get(id);
    if (version === undefined) continue; // deleted meanwhile
    result.versions.set(id, version);
    if (manifests.get(id)?.version === version) result.current.push(id);
    else stale.push(byId.get(id)!);
  }
  const total = stale.reduce((sum, r) => sum + r.samples, 0);
  let before = 0;
  for (const summary of stale) {
    const staged = folder.staging();
    try {
      const source = await storeRunSource(store, summary.id, signal);
      const written = await writeParquetTables([source], staged, {
        warn: options.warn ?? (() => {}),
        onProgress: (done) => options.onProgress?.(before + done, total),
        signal,
        runColumn: false,
      });
      folder.replaceRun(summary.id, versions.get(summary.id)!, staged, written.tables);
    } catch (error) {
      folder.discard(staged);
      throw error;
    }
    before += summary.samples;
    result.written.push(summary.id);
  }
  return result;
}

/** Files of runs still recording, written for one query from what the store holds now. */
export interface LiveTables {
  /** By table: the files of the live runs. */
  files: Record<string, string[]>;
  /** Removes the files (after the query). */
  discard(): void;
}

/**
 * Writes what the store holds of runs still recording, laid out as the folder's partitions, in a
 * folder of their own under the tables folder (the one folder a query may read). Not kept: the run
 * changes at every commit.
 */
export async function writeLiveTables(
  store: StoreBackend,
  folder: TablesFolder,
  runs: readonly number[],
  options: KeepTablesOptions = {},
): Promise<LiveTables> {
  const files: Record<string, string[]> = {};
  if (runs.length === 0) return { files, discard: () => {} };
  const root = folder.staging('live');
  const signal = options.signal ?? new AbortController().signal;
  try {
    for (const run of runs) {
      const dir = join(root, `run-${run}`);
      const written = await writeParquetTables([await storeRunSource(store, run, signal)], dir, {
        warn: options.warn ?? (() => {}),
        onProgress: () => {},
        signal,
        runColumn: false,
      });
      for (const table of Object.keys(written.tables)) {
        const file = folder.livePartFile(root, table, run, join(dir, `${table}.parquet`));
        (files[table] ??= []).push(file);
      }
    }
  } catch (error) {
    folder.discard(root);
    throw error;
  }
  return { files, discard: () => folder.discard(root) };
}
