import { join } from 'node:path';
import { SimrecError } from '../../model/errors.js';

type DuckDBApi = typeof import('@duckdb/node-api');

/**
 * SQL over Parquet tables with DuckDB (`@duckdb/node-api`, DuckDB's own Node client). It is an
 * optional dependency, loaded only here: a 68 MB native library that only `simrec sql` needs, and that
 * may have no build for a user's platform, must not stop simrec from installing or starting.
 */
export async function loadDuckDB(): Promise<DuckDBApi> {
  try {
    return await import('@duckdb/node-api');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new SimrecError(
      'unsupported',
      "simrec sql needs DuckDB's Node client, @duckdb/node-api, which is not installed " +
        '(it is an optional dependency: install it with `npm install @duckdb/node-api`, ' +
        'or query the files of `simrec export RUN parquet DIR` with any DuckDB)',
      { cause: error },
    );
  }
}

export interface SqlColumn {
  name: string;
  /** DuckDB's name of the type: DOUBLE, BIGINT, VARCHAR, TIMESTAMP WITH TIME ZONE... */
  type: string;
}

export interface SqlResult {
  columns: SqlColumn[];
  /**
   * The rows, a vector (2,048 rows) at a time as DuckDB produces them, so a large result never sits
   * whole in memory. Values are plain: numbers, strings, booleans, null, arrays and objects; 64-bit
   * integers are numbers when exact (beyond 2^53, strings); times are DuckDB's own text
   * (`2026-11-23 22:58:56.685+00`, microseconds kept).
   */
  chunks: AsyncIterable<unknown[][]>;
}

export interface SqlQuery {
  sql: string;
  /**
   * Each table's Parquet files, one Hive-partitioned dataset a table (`TABLE/run=ID/part-0.parquet`):
   * `run` comes from the folder's name; files of different runs may hold different columns.
   */
  tables: Readonly<Record<string, readonly string[]>>;
  /**
   * The one folder a query may read (the tables). Everything else is refused: files elsewhere,
   * statements that write (COPY, CREATE, INSERT...), ATTACH, INSTALL and LOAD, settings.
   */
  root: string;
  /** Every table there is to query, for the error of a query that names another (default: `tables`). */
  known?: readonly string[];
  /** The query is cancelled after this many milliseconds (an error that says so). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The statements a query may be: reads (EXPLAIN of a read too). */
const READ_STATEMENTS = new Set(['SELECT', 'EXPLAIN']);

/**
 * Runs one read-only statement over the tables, each a view, and hands the result to `read`; the
 * database lives in memory for this query only (DuckDB spills to a temporary folder of its own what
 * does not fit).
 */
export async function querySql<T>(query: SqlQuery, read: (result: SqlResult) => Promise<T>): Promise<T> {
  const duckdb = await loadDuckDB();
  const known = query.known ?? Object.keys(query.tables);
  const fail = (error: unknown): SimrecError =>
    new SimrecError(
      'invalid',
      `SQL: ${(error as Error).message.split('\n')[0]} (tables: ${[...known].sort().join(', ')})`,
      { cause: error },
    );
  // Never reach for the network or the user's extension folder behind their back.
  const instance = await duckdb.DuckDBInstance.create(':memory:', {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
  });
  const connection = await instance.connect();
  let timedOut = false;
  const interrupt = (): void => connection.interrupt();
  const timer =
    query.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          interrupt();
        }, query.timeoutMs);
  query.signal?.addEventListener('abort', interrupt);
  const stopped = (error: unknown): SimrecError => {
    if (timedOut)
      return new SimrecError(
        'invalid',
        `SQL: stopped after ${query.timeoutMs} ms, the time limit of a query (narrow it: fewer runs, a WHERE on run or t)`,
        { cause: error },
      );
    query.signal?.throwIfAborted();
    return error instanceof SimrecError ? error : fail(error);
  };
  try {
    // Times print in UTC, as everywhere in simrec, whatever the machine's zone.
    await connection.run("SET TimeZone = 'UTC'");
    const root = query.root.endsWith('/') ? query.root : `${query.root}/`;
    await connection.run(`SET temp_directory = ${quoteString(join(root, '_simrec', 'duckdb-tmp'))}`);
    await connection.run(`SET allowed_directories = [${quoteString(root)}]`);
    await connection.run('SET enable_external_access = false');
    await connection.run('SET lock_configuration = true');
    // `run` first, as in the export's files: it is the partition, which DuckDB puts last.
    for (const [name, files] of Object.entries(query.tables))
      await connection.run(
        `CREATE VIEW ${quoteIdentifier(name)} AS SELECT run, * EXCLUDE (run) FROM read_parquet([${files.map(quoteString).join(', ')}], hive_partitioning = true, hive_types = {'run': BIGINT}, union_by_name = true)`,
      );
    let result: Awaited<ReturnType<typeof connection.stream>>;
    try {
      const statements = await connection.extractStatements(query.sql);
      if (statements.count !== 1)
        throw new SimrecError('invalid', `SQL: expected one statement, got ${statements.count}`);
      const prepared = await statements.prepare(0);
      const type = duckdb.StatementType[prepared.statementType];
      if (!READ_STATEMENTS.has(type))
        throw new SimrecError(
          'invalid',
          `SQL: a ${type} statement: expected a query that reads (SELECT, WITH ... SELECT, FROM ..., EXPLAIN); the tables are read-only`,
        );
      result = await prepared.stream();
    } catch (error) {
      throw stopped(error);
    }
    const columns = result
      .columnNames()
      .map((name, i) => ({ name, type: result.columnTypes()[i]!.toString() }));
    const streamed = result;
    async function* chunks(): AsyncGenerator<unknown[][]> {
      try {
        for await (const rows of streamed.yieldRows()) yield rows.map((row) => row.map(plainValue));
      } catch (error) {
        throw stopped(error);
      }
    }
    return await read({ columns, chunks: chunks() });
  } finally {
    clearTimeout(timer);
    query.signal?.removeEventListener('abort', interrupt);
    connection.closeSync();
    instance.closeSync();
  }
}

/** A DuckDB value as plain JSON-able JavaScript (see SqlResult.chunks). */
function plainValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'bigint')
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value)
        : String(value);
    return value;
  }
  // Lists and arrays have `items`, maps an array of `entries`, structs an object of them, decimals
  // `toDouble`; everything else (times, dates, intervals, UUIDs, blobs) prints as DuckDB prints it.
  const v = value as { items?: unknown[]; entries?: unknown; toDouble?: () => number };
  if (Array.isArray(v.items)) return v.items.map(plainValue);
  if (Array.isArray(v.entries))
    return (v.entries as { key: unknown; value: unknown }[]).map((e) => ({
      key: plainValue(e.key),
      value: plainValue(e.value),
    }));
  if (v.entries && typeof v.entries === 'object')
    return Object.fromEntries(
      Object.entries(v.entries as Record<string, unknown>).map(([k, x]) => [k, plainValue(x)]),
    );
  if (typeof v.toDouble === 'function') return v.toDouble();
  return String(value);
}

const quoteIdentifier = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const quoteString = (text: string): string => `'${text.replaceAll("'", "''")}'`;
