import type { Command } from 'commander';
import { invalid } from '../../model/errors.js';
import type { SqlResult } from '../../formats/parquet/duckdb-sql.js';
import { parseRunId } from '../args.js';
import { abortOnInterrupt } from '../output-target.js';
import { formatNumber, formatTable, Progress } from '../output.js';
import { tablesFolderOf, withExistingStore } from '../with-store.js';
import { printWarnings } from '../warnings.js';
import { tablesWriterFor } from './tables-command.js';

/**
 * `simrec sql "SELECT ..."`: SQL across the store's runs, with DuckDB over the store's tables folder
 * (tables/fleet-sql.ts): runs written there once, written again only when they change, so a question
 * costs DuckDB's time over the files plus what changed since the last one. Tables: every stream name
 * (`state`, `control`, `events`...) with `run` and `actor` columns, plus `actors` and `runs`: the
 * tables of `simrec export RUN parquet DIR`, so a query moves between them.
 */

/** A table result holds at most this many rows (widths need them all); --csv and --json stream any number. */
const TABLE_ROWS = 10_000;

interface SqlOptions {
  runs?: number[];
  json?: boolean;
  csv?: boolean;
}

export function registerSqlCommand(program: Command): void {
  program
    .command('sql')
    .description(
      'SQL across runs with DuckDB: a table per stream name (state, control, events...) with run and actor columns, plus actors and runs',
    )
    .argument(
      '<query>',
      'the SQL, e.g. "SELECT run, max(speed) FROM state WHERE actor = \'ego\' GROUP BY run"',
    )
    .option('--runs <ids>', 'only these runs, comma-separated (default: every run in the store)', (v) =>
      v.split(',').map(parseRunId),
    )
    .option('--json', 'print a JSON array of rows (objects by column name)')
    .option('--csv', 'print CSV with a header line')
    .action(async (query: string, opts: SqlOptions, command: Command) => {
      if (opts.json && opts.csv) throw invalid('--json and --csv: expected one output format, got both');
      if (query.trim() === '') throw invalid('QUERY: expected SQL, got an empty string');
      const { queryFleet } = await import('../../tables/fleet-sql.js');
      await withExistingStore(command, (store) =>
        abortOnInterrupt('the query was stopped', async (signal) => {
          const warnings: string[] = [];
          const progress = new Progress('writing tables');
          const fleet: Parameters<typeof queryFleet>[2] = {
            sql: query,
            warn: (where, message) => warnings.push(`${where}: ${message}`),
            onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
            signal,
          };
          if (opts.runs) fleet.runs = opts.runs;
          const keep = await tablesWriterFor(store);
          await queryFleet(
            store,
            tablesFolderOf(command, store),
            fleet,
            async (result) => {
              progress.done();
              printWarnings(warnings);
              await (opts.json
                ? printJsonRows(result)
                : opts.csv
                  ? printCsv(result)
                  : printRowsTable(result));
            },
            keep,
          );
        }),
      );
    });
}

async function printJsonRows(result: SqlResult): Promise<void> {
  const names = result.columns.map((c) => c.name);
  let first = true;
  process.stdout.write('[');
  for await (const rows of result.chunks) {
    const lines = rows.map((row) => JSON.stringify(Object.fromEntries(names.map((n, i) => [n, row[i]]))));
    if (lines.length === 0) continue;
    process.stdout.write(`${first ? '\n' : ',\n'}${lines.join(',\n')}`);
    first = false;
  }
  process.stdout.write(first ? ']\n' : '\n]\n');
}

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled; null is empty. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

async function printCsv(result: SqlResult): Promise<void> {
  process.stdout.write(`${result.columns.map((c) => csvField(c.name)).join(',')}\n`);
  for await (const rows of result.chunks)
    if (rows.length) process.stdout.write(`${rows.map((row) => row.map(csvField).join(',')).join('\n')}\n`);
}

async function printRowsTable(result: SqlResult): Promise<void> {
  const shown: unknown[][] = [];
  let more = 0;
  for await (const rows of result.chunks) {
    const room = TABLE_ROWS - shown.length;
    shown.push(...rows.slice(0, Math.max(0, room)).map((row) => row.map(tableCell)));
    more += Math.max(0, rows.length - Math.max(0, room));
  }
  process.stdout.write(
    `${formatTable(
      result.columns.map((c) => c.name),
      shown,
    )}\n`,
  );
  if (more > 0) process.stdout.write(`... and ${more} more rows (--csv or --json print them all)\n`);
  else process.stdout.write(`(${shown.length} row${shown.length === 1 ? '' : 's'})\n`);
}

const tableCell = (value: unknown): unknown => (value === null ? null : formatNumber(value));
