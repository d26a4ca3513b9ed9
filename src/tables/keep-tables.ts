import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { jsonDigest } from '../model/json-digest.js';
import type { RunSummary } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { streamTableName, writeParquetTables, type TablePart } from '../formats/parquet/write-parquet.js';
import { storeRunSource } from '../replay/run-source.js';
import { TablesFolder, type RunTablesManifest, type StagedPart } from './tables-folder.js';

/**
 * Keeps a store's tables folder in step with the store. A closed run's files are written once, and
 * written again when the store's version of the run (StoreBackend.runVersions) is no longer the one
 * they were written from: new streams (`simrec eval`), presence put after an import, chunks a repair
 * removed. Then only the stream tables whose streams changed are written (their schemas, counters and
 * chunks, hashed in the manifest's `sources`), with the run's `actors` and `runs`: an evaluation wrote
 * a long run's states again for its two new streams. A run gone from the store has its files
 * removed. Runs still recording are never written here: a query reads them from the store
 * (writeLiveTables).
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

/** keepTablesInStep, or a function that does the same elsewhere (the server's: on a worker thread). */
export type KeepTables = (
  store: StoreBackend,
  folder: TablesFolder,
  runs?: readonly number[],
  options?: KeepTablesOptions,
) => Promise<KeepTablesResult>;

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
  const { result, stale } = await staleRuns(store, folder, runs);
  const manifests = folder.manifests();
  const plans = [];
  for (const summary of stale)
    plans.push(await planRun(store, folder, summary.id, manifests.get(summary.id)));
  const total = plans.reduce((sum, p) => sum + p.samples, 0);
  let before = 0;
  for (const [n, summary] of stale.entries()) {
    const plan = plans[n]!;
    const part = await writeRunPart(
      store,
      folder,
      { run: summary.id, tables: plan.write },
      {
        ...options,
        onProgress: (done) => options.onProgress?.(before + done, total),
        signal,
      },
    );
    folder.replaceRun(summary.id, result.versions.get(summary.id)!, [part], plan);
    before += plan.samples;
    result.written.push(summary.id);
  }
  return result;
}

/** What one writer writes of a run: its stream tables to write, or part of each. */
export interface RunPartJob {
  run: number;
  /** The stream tables written (RunPlan.write); the run's actors and runs always are, with part 0. */
  tables: ReadonlySet<string>;
  /** Part of each stream table (writeParquetTables' `part`); the whole when absent. */
  part?: TablePart;
}

/** Writes a run's files, or a part of them, in a staging folder of their own (removed if it fails). */
export async function writeRunPart(
  store: StoreBackend,
  folder: TablesFolder,
  job: RunPartJob,
  options: KeepTablesOptions & { signal: AbortSignal },
): Promise<StagedPart> {
  const staged = folder.staging();
  try {
    const source = await storeRunSource(store, job.run, options.signal);
    const written = await writeParquetTables([source], staged, {
      warn: options.warn ?? (() => {}),
      onProgress: (done, total) => options.onProgress?.(done, total),
      signal: options.signal,
      runColumn: false,
      tables: job.tables,
      ...(job.part ? { part: job.part } : {}),
    });
    return { staged, tables: written.tables };
  } catch (error) {
    folder.discard(staged);
    throw error;
  }
}

/**
 * The first half of keepTablesInStep, which writes nothing but what a deleted run leaves: the files of
 * runs the store no longer has removed, and the closed runs in scope whose files are not from the
 * store's version of them. A caller that writes elsewhere (keepTablesOnWorker) asks this first: a
 * question over tables already in step starts no writer.
 */
export async function staleRuns(
  store: StoreBackend,
  folder: TablesFolder,
  runs?: readonly number[],
): Promise<{ result: KeepTablesResult; stale: RunSummary[] }> {
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
  return { result, stale };
}

/** What a stale run's writing does: the stream tables it writes, those whose files it keeps. */
export interface RunPlan {
  /** Each stream table's sources now (RunTablesManifest.sources). */
  sources: Record<string, string>;
  /** Stream tables written (the run's actors and runs always are). */
  write: Set<string>;
  /** Stream tables whose files stay, as the manifest lists them. */
  kept: RunTablesManifest['tables'];
  /** Samples of the streams written. */
  samples: number;
  /** Samples of the largest stream table written (what decides whether the run is cut into parts). */
  largest: number;
}

/** Which of a stale run's stream tables are written again, from the sources its manifest kept. */
export async function planRun(
  store: StoreBackend,
  folder: TablesFolder,
  run: number,
  previous: RunTablesManifest | undefined,
): Promise<RunPlan> {
  const [streams, versions] = await Promise.all([store.listStreams(run), store.streamVersions(run)]);
  const parts = new Map<string, unknown[]>();
  const samples = new Map<string, number>();
  for (const stream of [...streams].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const table = streamTableName(stream.name);
    const of = parts.get(table);
    if (of) of.push(stream, versions.get(stream.id) ?? null);
    else parts.set(table, [stream, versions.get(stream.id) ?? null]);
    samples.set(table, (samples.get(table) ?? 0) + stream.samples);
  }
  const sources: Record<string, string> = {};
  for (const [table, of] of parts) sources[table] = jsonDigest(of);
  const plan: RunPlan = { sources, write: new Set(), kept: {}, samples: 0, largest: 0 };
  for (const table of Object.keys(sources)) {
    const file = previous?.tables[table];
    // Kept only when written from the same sources and still there; a manifest from before sources
    // were kept has none, and its run is written whole.
    const there = (): boolean => folder.partFiles(table, run, file!).every((f) => existsSync(f));
    if (file && previous?.sources?.[table] === sources[table] && there()) plan.kept[table] = file;
    else {
      plan.write.add(table);
      plan.samples += samples.get(table)!;
      plan.largest = Math.max(plan.largest, samples.get(table)!);
    }
  }
  return plan;
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
