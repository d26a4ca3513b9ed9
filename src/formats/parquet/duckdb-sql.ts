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

/**
 * Runs `sql` with each table of `tables` (name -> Parquet file) as a view, and hands the result to
 * `read`; the database lives in memory for this query only (DuckDB spills to its temporary folder
 * what does not fit).
 */
export async function querySql<T>(
  tables: Readonly<Record<string, string>>,
  sql: string,
  read: (result: SqlResult) => Promise<T>,
  /** Every table there is to query, for the error of a query that names another (default: `tables`). */
  known: readonly string[] = Object.keys(tables),
): Promise<T> {
  const duckdb = await loadDuckDB();
  const instance = await duckdb.DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    // Times print in UTC, as everywhere in simrec, whatever the machine's zone.
    await connection.run("SET TimeZone = 'UTC'");
    for (const [name, path] of Object.entries(tables))
      await connection.run(
        `CREATE VIEW ${quoteIdentifier(name)} AS SELECT * FROM read_parquet(${quoteString(path)})`,
      );
    let result: Awaited<ReturnType<typeof connection.stream>>;
    try {
      result = await connection.stream(sql);
    } catch (error) {
      throw new SimrecError(
        'invalid',
        `SQL: ${(error as Error).message.split('\n')[0]} (tables: ${[...known].sort().join(', ')})`,
        { cause: error },
      );
    }
    const columns = result
      .columnNames()
      .map((name, i) => ({ name, type: result.columnTypes()[i]!.toString() }));
    const streamed = result;
    async function* chunks(): AsyncGenerator<unknown[][]> {
      for await (const rows of streamed.yieldRows()) yield rows.map((row) => row.map(plainValue));
    }
    return await read({ columns, chunks: chunks() });
  } finally {
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
