import { Hono, type Context } from 'hono';
import { invalid } from '../model/errors.js';
import { whileAsked } from '../model/event-loop-turns.js';
import type { StoreBackend } from '../model/store-port.js';
import { diffRuns, type DiffOptions } from '../compare/run-diff.js';
import { answerError, json } from './http-api.js';

/**
 * `GET /api/diff?a=1&b=2[&actors=][&streams=][&fields=][&from=][&to=][&tolerance=x=0.01,*=1e-9]`: two
 * runs compared as `simrec diff` compares them (compare/run-diff.ts), for the viewer's comparison.
 * Comparisons run one at a time: each reads both runs through, seconds for runs of an hour. Meanwhile
 * the server answers its other requests (the comparison gives its thread up between slices of work);
 * a comparison whose asker has gone is stopped, or never started; past `maxWaiting` comparisons
 * waiting their turn, another is refused (503, Retry-After).
 */
export function createDiffApi(store: StoreBackend, maxWaiting = MAX_WAITING): Hono {
  const api = new Hono();
  api.onError(answerError);
  let queue: Promise<unknown> = Promise.resolve();
  /** Comparisons asked and not answered, the one running included. */
  let asked = 0;
  api.get('/', async (c) => {
    if (asked > maxWaiting)
      return c.json(
        {
          error: `${asked} comparisons are running or waiting (each reads two runs through); ask again later`,
          code: 'busy',
        },
        503,
        { 'Retry-After': '10' },
      );
    const options: DiffOptions = { maxDivergences: 1000 };
    const names = (key: string): string[] | undefined =>
      c.req
        .query(key)
        ?.split(',')
        .filter((x) => x !== '');
    const actors = names('actors');
    const streams = names('streams');
    const fields = names('fields');
    if (actors) options.actors = actors;
    if (streams) options.streams = streams;
    if (fields) options.fields = fields;
    const from = seconds(c, 'from');
    const to = seconds(c, 'to');
    if (from !== undefined) options.from = from;
    if (to !== undefined) options.to = to;
    const tolerance = c.req.query('tolerance');
    if (tolerance) {
      const tolerances: Record<string, number> = {};
      for (const part of tolerance.split(',')) {
        const [name, n] = part.includes('=') ? part.split('=', 2) : ['*', part];
        const value = Number(n);
        if (!name || !Number.isFinite(value) || value < 0)
          throw invalid(
            `query parameter tolerance: ${JSON.stringify(part.slice(0, 80))}, expected FIELD=NUMBER`,
          );
        tolerances[name] = value;
      }
      options.tolerances = tolerances;
    }
    // The asker gone (the connection closed), the comparison stops at its next slice of work.
    options.signal = c.req.raw.signal;
    const a = run(c, 'a');
    const b = run(c, 'b');
    const ask = () => diffRuns(store, a, b, options);
    asked++;
    const answer = queue.then(ask, ask).finally(() => asked--);
    // The queue only keeps the questions in turn: a failure reaches its asker through `answer`.
    queue = answer.catch(() => undefined);
    return json(c, await whileAsked(options.signal, `runs ${a} and ${b} compared`, () => answer));
  });
  return api;
}

/** Comparisons waiting behind the one running before another is refused. */
const MAX_WAITING = 4;

function run(c: Context, key: string): number {
  const raw = c.req.query(key) ?? '';
  const id = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(id) || id < 1)
    throw invalid(`query parameter ${key}: ${JSON.stringify(raw.slice(0, 40))}, expected a run id`);
  return id;
}

function seconds(c: Context, key: string): number | undefined {
  const raw = c.req.query(key);
  if (raw === undefined) return undefined;
  const s = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(s))
    throw invalid(
      `query parameter ${key}: ${JSON.stringify(raw.slice(0, 40))}, expected seconds from the start`,
    );
  return s;
}
