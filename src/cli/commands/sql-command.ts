import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { invalid } from '../../model/errors.js';
import type { RunSource } from '../../model/run-ports.js';
import { querySql, loadDuckDB, type SqlResult } from '../../formats/parquet/duckdb-sql.js';
import { streamTableName, writeParquetTables } from '../../formats/parquet/write-parquet.js';
import { storeRunSource } from '../../replay/run-source.js';
import { parseRunId } from '../args.js';
import { abortOnInterrupt } from '../output-target.js';
import { formatNumber, formatTable, Progress } from '../output.js';
import { withExistingStore } from '../with-store.js';
import { printWarnings } from '../warnings.js';

/**
 * `simrec sql "SELECT ..."`: SQL across the store's runs, with DuckDB. The runs' streams are written
 * as Parquet tables into a temporary folder (only the tables the query names, a row group at a time,
 * so a long run never sits whole in memory), DuckDB sees each as a view, and the result streams out.
 * Tables: every stream name (`state`, `control`, `events`...) with `run` and `actor` columns, plus
 * `actors` and `runs`: the tables of `simrec export RUN parquet DIR`, so a query moves between them.
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
      // Before any work: a missing DuckDB is said at once, not after the tables are written.
      await loadDuckDB();
      const folder = mkdtempSync(join(tmpdir(), 'simrec-sql-'));
      try {
        await withExistingStore(command, (store) =>
          abortOnInterrupt('the query was stopped', async (signal) => {
            const ids = opts.runs ?? (await store.listRuns()).map((r) => r.id);
            const sources: RunSource[] = [];
            for (const id of ids) sources.push(await storeRunSource(store, id, signal));
            const { wanted, known } = await tablesNamedIn(query, sources);
            const warnings: string[] = [];
            const progress = new Progress('reading runs');
            const written = await writeParquetTables(sources, folder, {
              warn: (where, message) => warnings.push(`${where}: ${message}`),
              onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
              signal,
              tables: wanted,
            });
            progress.done();
            printWarnings(warnings);
            const files = Object.fromEntries(
              Object.entries(written.tables).map(([name, t]) => [name, join(folder, t.file)]),
            );
            await querySql(
              files,
              query,
              (result) =>
                opts.json ? printJsonRows(result) : opts.csv ? printCsv(result) : printRowsTable(result),
              known,
            );
          }),
        );
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    });
}

/**
 * The stream tables a query may read: every stream name that appears in its text (case-insensitive).
 * A word that only looks like a table costs one table written for nothing; a table the query reads
 * is always named in it.
 */
async function tablesNamedIn(
  query: string,
  sources: readonly RunSource[],
): Promise<{ wanted: Set<string>; known: string[] }> {
  const text = query.toLowerCase();
  const wanted = new Set<string>();
  const known = new Set(['actors', 'runs']);
  for (const source of sources)
    for (const stream of await source.streams()) {
      const table = streamTableName(stream.name);
      known.add(table);
      if (text.includes(table.toLowerCase())) wanted.add(table);
    }
  return { wanted, known: [...known] };
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
