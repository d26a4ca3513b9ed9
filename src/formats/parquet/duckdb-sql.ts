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
   * Each table's Parquet files, one Hive-partitioned dataset a table (`TABLE/run=ID/part-0.parquet`,
   * a big run's table in parts `part-1.parquet`...):
   * `run` comes from the folder's name; files of different runs may hold different columns.
   */
  tables: Readonly<Record<string, readonly string[]>>;
  /**
   * Tables whose files may hold different columns (runs whose streams declare different fields):
   * read by column name, which makes DuckDB read every file's schema before anything else. Others are
   * read as files of one schema.
   */
  mixed?: ReadonlySet<string>;
  /** Every table there is to query, for the error of a query that names another (default: `tables`). */
  known?: readonly string[];
  /** The query is cancelled after this many milliseconds (an error that says so). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The statements a query may be: reads (EXPLAIN of a read too). */
const READ_STATEMENTS = new Set(['SELECT', 'EXPLAIN']);

type Connection = Awaited<ReturnType<Awaited<ReturnType<DuckDBApi['DuckDBInstance']['create']>>['connect']>>;

/**
 * A read-only DuckDB over one folder of tables, for one query or many (the server keeps one). It may
 * read only that folder: files elsewhere, statements that write (COPY, CREATE, INSERT...), ATTACH,
 * INSTALL and LOAD, and settings are all refused. It lives in memory (spilling to a folder of its own
 * under the root what does not fit). Each table is a view over its files, made when a query first
 * names it and made again when its files change: binding a view reads every file's footer, which a
 * query that does not name the table should not pay for.
 */
export class SqlSession {
  private readonly duckdb: DuckDBApi;
  private readonly instance: { closeSync(): void };
  private readonly connection: Connection;
  /** By table: the file list its view was made over. */
  private readonly views = new Map<string, string>();
  private busy: Promise<unknown> = Promise.resolve();

  private constructor(duckdb: DuckDBApi, instance: { closeSync(): void }, connection: Connection) {
    this.duckdb = duckdb;
    this.instance = instance;
    this.connection = connection;
  }

  /** Opens a session that may read only `root` (the tables folder). */
  static async open(root: string): Promise<SqlSession> {
    const duckdb = await loadDuckDB();
    // Never reach for the network or the user's extension folder behind their back.
    const instance = await duckdb.DuckDBInstance.create(':memory:', {
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
    });
    const connection = await instance.connect();
    const folder = root.endsWith('/') ? root : `${root}/`;
    // Times print in UTC, as everywhere in simrec, whatever the machine's zone.
    await connection.run("SET TimeZone = 'UTC'");
    await connection.run(`SET temp_directory = ${quoteString(join(folder, '_simrec', 'duckdb-tmp'))}`);
    // Footers read once per session, not once by each view and again by each query that binds it.
    await connection.run('SET enable_object_cache = true');
    await connection.run(`SET allowed_directories = [${quoteString(folder)}]`);
    await connection.run('SET enable_external_access = false');
    await connection.run('SET lock_configuration = true');
    return new SqlSession(duckdb, instance, connection);
  }

  /** Runs one read-only statement and hands the result to `read`; queries of a session run one at a time. */
  query<T>(query: SqlQuery, read: (result: SqlResult) => Promise<T>): Promise<T> {
    const run = (): Promise<T> => this.run(query, read);
    const done = this.busy.then(run, run);
    // `busy` only keeps the queries in turn: a failure reaches its caller through `done`.
    this.busy = done.catch(() => undefined);
    return done;
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
  }

  private async run<T>(query: SqlQuery, read: (result: SqlResult) => Promise<T>): Promise<T> {
    const known = query.known ?? Object.keys(query.tables);
    const connection = this.connection;
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
      if (error instanceof SimrecError) return error;
      return new SimrecError(
        'invalid',
        `SQL: ${(error as Error).message.split('\n')[0]} (tables: ${[...known].sort().join(', ')})`,
        { cause: error },
      );
    };
    try {
      let result: Awaited<ReturnType<Connection['stream']>>;
      try {
        await this.viewsFor(query);
        const statements = await connection.extractStatements(query.sql);
        if (statements.count !== 1)
          throw new SimrecError('invalid', `SQL: expected one statement, got ${statements.count}`);
        const prepared = await statements.prepare(0);
        const type = this.duckdb.StatementType[prepared.statementType];
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
    }
  }

  /** The views of the tables the query names, made (again) where their files changed. */
  private async viewsFor(query: SqlQuery): Promise<void> {
    const text = query.sql.toLowerCase();
    for (const [name, files] of Object.entries(query.tables)) {
      if (!new RegExp(`(^|[^a-z0-9_])${escapeRegExp(name.toLowerCase())}($|[^a-z0-9_])`).test(text)) continue;
      const union = query.mixed?.has(name) ?? false;
      const list = files.map(quoteString).join(', ');
      const key = `${union}:${list}`;
      if (this.views.get(name) === key) continue;
      // `run` first, as in the export's files: it is the partition, which DuckDB puts last.
      await this.connection.run(
        `CREATE OR REPLACE VIEW ${quoteIdentifier(name)} AS SELECT run, * EXCLUDE (run) FROM read_parquet([${list}], hive_partitioning = true, hive_types = {'run': BIGINT}${union ? ', union_by_name = true' : ''})`,
      );
      this.views.set(name, key);
    }
    // A table whose runs are all gone: its view goes too, so the query says there is no such table.
    for (const name of [...this.views.keys()])
      if (!(name in query.tables)) {
        await this.connection.run(`DROP VIEW IF EXISTS ${quoteIdentifier(name)}`);
        this.views.delete(name);
      }
  }
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

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
