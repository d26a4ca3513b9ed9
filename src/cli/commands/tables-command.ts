import type { Command } from 'commander';
import type { StoreBackend } from '../../model/store-port.js';
import type { KeepTables, KeepTablesResult } from '../../tables/keep-tables.js';
import type { TablesFolder } from '../../tables/tables-folder.js';
import { parseRunId } from '../args.js';
import { abortOnInterrupt } from '../output-target.js';
import { printJson, printTable, Progress } from '../output.js';
import { printWarnings } from '../warnings.js';
import { tablesFolderOf, withExistingStore } from '../with-store.js';

/**
 * `simrec tables`: the store's tables folder (what `simrec sql` reads, and DuckDB, Polars or Spark
 * can read directly): where it is, its size against the store's, each run's state in it; `build`
 * brings it up to date, `rebuild` writes it anew.
 */

const megabytes = (bytes: number | null): string =>
  bytes === null ? '-' : `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export function registerTablesCommand(program: Command): void {
  const tables = program
    .command('tables')
    .description(
      "the store's tables for SQL (Parquet, one folder a table, a partition a run): status, build, rebuild",
    );
  tables
    .command('status', { isDefault: true })
    .description(
      'where the tables are, their size against the store, and each run: current, stale, missing or recording',
    )
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, command: Command) =>
      withExistingStore(command, async (store) => {
        const { tablesStatus } = await import('../../tables/tables-status.js');
        const status = await tablesStatus(store, tablesFolderOf(command, store));
        if (opts.json) return printJson(status);
        const ratio = status.storeBytes
          ? ` (${((status.bytes / status.storeBytes) * 100).toFixed(0)}% of the store's)`
          : '';
        process.stdout.write(
          `${status.folder}\n${megabytes(status.bytes)} of tables${ratio}; the store: ${megabytes(status.storeBytes)}\n`,
        );
        printTable(
          ['RUN', 'TABLES', 'ROWS', 'SIZE', 'STATE'],
          status.runs.map((r) => [r.run, r.tables, r.rows, megabytes(r.bytes), r.state]),
        );
        if (status.orphans.length)
          process.stdout.write(`files of runs the store no longer has: ${status.orphans.join(', ')}\n`);
      }),
    );
  const build =
    (rebuild: boolean) =>
    async (opts: { runs?: number[]; json?: boolean }, command: Command): Promise<void> =>
      withExistingStore(command, async (store) => {
        const folder = tablesFolderOf(command, store);
        if (rebuild) {
          if (opts.runs) for (const run of opts.runs) folder.removeRun(run);
          else folder.clear();
        }
        const result = await buildTables(store, folder, opts.runs);
        if (opts.json) return printJson({ folder: folder.path, ...result, versions: undefined });
        process.stdout.write(
          `${folder.path}: ${result.written.length} runs written, ${result.current.length} already current` +
            `${result.recording.length ? `, ${result.recording.length} still recording (read from the store by each query)` : ''}` +
            `${result.removed.length ? `, files of ${result.removed.length} deleted runs removed` : ''}\n`,
        );
      });
  tables
    .command('build')
    .description('write the tables of every closed run that has none or whose run changed since')
    .option('--runs <ids>', 'only these runs, comma-separated', (v) => v.split(',').map(parseRunId))
    .option('--json', 'print JSON')
    .action(build(false));
  tables
    .command('rebuild')
    .description('remove the tables (of --runs, or all) and write them anew')
    .option('--runs <ids>', 'only these runs, comma-separated', (v) => v.split(',').map(parseRunId))
    .option('--json', 'print JSON')
    .action(build(true));
}

/** Brings the tables of `runs` (all when absent) up to date, with progress on a terminal. */
export async function buildTables(
  store: StoreBackend,
  folder: TablesFolder,
  runs?: readonly number[],
): Promise<KeepTablesResult> {
  const keep = await tablesWriterFor(store);
  return abortOnInterrupt('writing the tables was stopped', async (signal) => {
    const warnings: string[] = [];
    const progress = new Progress('writing tables');
    try {
      return await keep(store, folder, runs, {
        warn: (where, message) => warnings.push(`${where}: ${message}`),
        onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
        signal,
      });
    } finally {
      progress.done();
      printWarnings(warnings);
    }
  });
}

/**
 * How the command line writes tables: a SQLite store's runs side by side on threads, one a core, and a
 * big run in parts side by side (a store of many runs took the sum of their times, an hour-long run
 * the time of all its rows on one thread); work that is one share (a run too small to cut), or a
 * MongoDB store's (not tried on a worker: no MongoDB server where this was written), on this thread.
 */
export async function tablesWriterFor(store: StoreBackend): Promise<KeepTables> {
  if (store.kind !== 'sqlite') return (await import('../../tables/keep-tables.js')).keepTablesInStep;
  const { keepTablesOnThreads } = await import('../../tables/tables-writer-threads.js');
  return keepTablesOnThreads({ oneHere: true });
}

/**
 * After a command that ended or changed runs (demo, record, import, eval, check --repair): their
 * tables written now, so that the next query finds them. A failure here loses nothing (the runs are
 * in the store; the next query writes their tables) and is said as a warning, not as the command's
 * failure.
 */
export async function writeTablesAfter(
  command: Command,
  store: StoreBackend,
  runs: readonly number[],
): Promise<void> {
  if (runs.length === 0) return;
  try {
    await buildTables(store, tablesFolderOf(command, store), runs);
  } catch (error) {
    printWarnings([
      `tables of run ${runs.join(', ')}: not written (${(error as Error).message}); the next \`simrec sql\` writes them`,
    ]);
  }
}
