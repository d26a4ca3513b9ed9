import { existsSync, statSync } from 'node:fs';
import type { IntegrityProblem, StoreBackend } from '../model/store-port.js';
import { keepTablesInStep, type KeepTablesOptions } from './keep-tables.js';
import type { TablesFolder } from './tables-folder.js';

/**
 * What the tables folder holds against what the store holds: `simrec tables` prints it, `simrec
 * check` reports its problems (and mends them with --repair).
 */

/** current: files written from the store's version of the run; stale: from an older one (rewritten
 * at the next query); missing: no files yet; recording: read from the store by each query. */
export type RunTablesState = 'current' | 'stale' | 'missing' | 'recording';

export interface RunTablesStatus {
  run: number;
  state: RunTablesState;
  tables: number;
  rows: number;
  bytes: number;
}

export interface TablesStatus {
  folder: string;
  /** Bytes of the tables' files. */
  bytes: number;
  /** Bytes of the store's file (with its write-ahead log); null for a server's store. */
  storeBytes: number | null;
  runs: RunTablesStatus[];
  /** Runs with files that the store no longer has (removed at the next query or build). */
  orphans: number[];
}

export async function tablesStatus(store: StoreBackend, folder: TablesFolder): Promise<TablesStatus> {
  const all = await store.listRuns({ newestFirst: false });
  const versions = await store.runVersions(all.filter((r) => r.state === 'closed').map((r) => r.id));
  const runs = all.map((summary): RunTablesStatus => {
    const manifest = folder.manifest(summary.id);
    const tables = Object.values(manifest?.tables ?? {});
    const state: RunTablesState =
      summary.state !== 'closed'
        ? 'recording'
        : !manifest
          ? 'missing'
          : manifest.version === versions.get(summary.id)
            ? 'current'
            : 'stale';
    return {
      run: summary.id,
      state,
      tables: tables.length,
      rows: tables.reduce((sum, t) => sum + t.rows, 0),
      bytes: tables.reduce((sum, t) => sum + t.bytes, 0),
    };
  });
  const known = new Set(all.map((r) => r.id));
  const orphans = new Set(folder.runs().filter((run) => !known.has(run)));
  for (const table of folder.tables())
    for (const run of folder.partitions(table)) if (!known.has(run)) orphans.add(run);
  return {
    folder: folder.path,
    bytes: folder.bytes(),
    storeBytes: storeFileBytes(store),
    runs,
    orphans: [...orphans].sort((a, b) => a - b),
  };
}

function storeFileBytes(store: StoreBackend): number | null {
  if (store.kind !== 'sqlite') return null;
  let total = 0;
  for (const suffix of ['', '-wal'])
    if (existsSync(store.location + suffix)) total += statSync(store.location + suffix).size;
  return total;
}

/**
 * The folder checked against the store: every closed run's files written from its current version,
 * every file its manifest names there with the size it names, no partition of a run the store lacks
 * nor one without a manifest. With `repair`, the runs in question are written again and the rest
 * removed (the tables are derived: nothing is lost).
 */
export async function checkTables(
  store: StoreBackend,
  folder: TablesFolder,
  options: KeepTablesOptions & { repair?: boolean } = {},
): Promise<IntegrityProblem[]> {
  if (!existsSync(folder.path)) return [];
  const status = await tablesStatus(store, folder);
  const problems: (IntegrityProblem & { run: number })[] = [];
  const where = (run: number): string => `tables of run ${run} (${folder.path})`;
  for (const run of status.orphans)
    problems.push({
      run,
      where: where(run),
      problem: 'files of a run the store does not have',
      repaired: false,
    });
  for (const r of status.runs) {
    if (r.state === 'stale')
      problems.push({
        run: r.run,
        where: where(r.run),
        problem: 'written from an older version of the run (a query would write them again)',
        repaired: false,
      });
    const manifest = folder.manifest(r.run);
    for (const [table, t] of Object.entries(manifest?.tables ?? {})) {
      const files = folder.partFiles(table, r.run, t);
      const expected = t.parts?.map((p) => p.bytes) ?? [t.bytes];
      files.forEach((file, part) => {
        const size = existsSync(file) ? statSync(file).size : null;
        if (size !== expected[part])
          problems.push({
            run: r.run,
            where: file,
            problem: size === null ? 'missing' : `${size} bytes, expected ${expected[part]}`,
            repaired: false,
          });
      });
      for (const file of folder.filesIn(table, r.run))
        if (!files.includes(file))
          problems.push({
            run: r.run,
            where: file,
            problem: `a file its manifest does not list (a reader of the folder would read its rows as the run's)`,
            repaired: false,
          });
    }
    if (!manifest && r.state !== 'recording')
      for (const table of folder.tables())
        if (folder.partitions(table).includes(r.run))
          problems.push({
            run: r.run,
            where: where(r.run),
            problem: `a partition in ${table} without a manifest (written by a process that stopped half way)`,
            repaired: false,
          });
  }
  if (options.repair && problems.length) {
    const runs = [...new Set(problems.map((p) => p.run))];
    for (const run of runs) folder.removeRun(run);
    await keepTablesInStep(
      store,
      folder,
      runs.filter((run) => status.runs.some((r) => r.run === run)),
      options,
    );
    for (const p of problems) p.repaired = true;
  }
  return problems.map(({ run: _run, ...p }) => p);
}
