import { Hono } from 'hono';
import { invalid } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';
import { FleetSql } from '../tables/fleet-sql.js';
import type { TablesFolder } from '../tables/tables-folder.js';
import { answerError, json } from './http-api.js';
import type { SqlAnswer } from './wire-types.js';

/**
 * `GET /api/sql?q=SELECT...[&runs=1,2][&limit=N]`: SQL across the store's runs, as `simrec sql`
 * answers it (tables/fleet-sql.ts), for the viewer's Find panel and scripts. Read-only as the command
 * is (one SELECT over the tables folder; no other file, no write, extension or ATTACH), with a row
 * limit and a time limit past which the query is cancelled. Queries run one at a time: DuckDB uses
 * every core for one, and a second would only share them.
 */

export interface SqlApiLimits {
  /** Rows answered when the request names no limit. */
  defaultRows: number;
  /** The most rows a request may ask for. */
  maxRows: number;
  /** A query running longer is cancelled (milliseconds). */
  timeoutMs: number;
  /** The longest SQL text accepted (characters; a URL of more than 16 KiB is refused by Node.js anyway). */
  maxQueryLength: number;
}

export const SQL_LIMITS: SqlApiLimits = {
  defaultRows: 1000,
  maxRows: 10_000,
  timeoutMs: 10_000,
  maxQueryLength: 10_000,
};

export function createSqlApi(
  store: StoreBackend,
  folder: TablesFolder,
  limits: SqlApiLimits = SQL_LIMITS,
): Hono {
  const api = new Hono();
  api.onError(answerError);
  // One DuckDB for the server's life: its views and the footers it has read serve the next question.
  const fleet = new FleetSql(store, folder);
  let queue: Promise<unknown> = Promise.resolve();

  api.get('/', async (c) => {
    const sql = c.req.query('q') ?? '';
    if (sql.trim() === '') throw invalid('query parameter q: expected SQL, got nothing');
    if (sql.length > limits.maxQueryLength)
      throw invalid(`query parameter q: ${sql.length} characters, at most ${limits.maxQueryLength}`);
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? limits.defaultRows : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > limits.maxRows)
      throw invalid(
        `query parameter limit: ${JSON.stringify(limitText)}, expected 1 to ${limits.maxRows} rows`,
      );
    const runsText = c.req.query('runs');
    const runs = runsText?.split(',').map((v) => {
      const id = Number(v);
      if (!Number.isSafeInteger(id) || id < 1)
        throw invalid(`query parameter runs: ${JSON.stringify(v)}, expected run ids separated by commas`);
      return id;
    });
    const started = performance.now();
    const warnings: string[] = [];
    const ask = async (): Promise<SqlAnswer> =>
      fleet.query(
        {
          sql,
          ...(runs ? { runs } : {}),
          timeoutMs: limits.timeoutMs,
          warn: (where, message) => warnings.push(`${where}: ${message}`),
        },
        async (result) => {
          const rows: unknown[][] = [];
          let truncated = false;
          for await (const chunk of result.chunks) {
            const room = limit - rows.length;
            if (chunk.length > room) {
              rows.push(...chunk.slice(0, room));
              truncated = true;
              break;
            }
            rows.push(...chunk);
          }
          return {
            columns: result.columns,
            rows,
            truncated,
            limit,
            elapsedMs: Math.round(performance.now() - started),
            warnings,
          };
        },
      );
    const answer = queue.then(ask, ask);
    // The queue only keeps the questions in turn: a failure reaches its asker through `answer`.
    queue = answer.catch(() => undefined);
    return json<SqlAnswer>(c, await answer);
  });
  return api;
}
