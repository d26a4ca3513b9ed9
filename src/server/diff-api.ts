import { Hono, type Context } from 'hono';
import { invalid } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';
import { diffRuns, type DiffOptions } from '../compare/run-diff.js';
import { answerError, json } from './http-api.js';

/**
 * `GET /api/diff?a=1&b=2[&actors=][&streams=][&fields=][&from=][&to=][&tolerance=x=0.01,*=1e-9]`: two
 * runs compared as `simrec diff` compares them (compare/run-diff.ts), for the viewer's comparison.
 * Comparisons run one at a time: each reads both runs through.
 */
export function createDiffApi(store: StoreBackend): Hono {
  const api = new Hono();
  api.onError(answerError);
  let queue: Promise<unknown> = Promise.resolve();
  api.get('/', async (c) => {
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
    const ask = () => diffRuns(store, run(c, 'a'), run(c, 'b'), options);
    const answer = queue.then(ask, ask);
    // The queue only keeps the questions in turn: a failure reaches its asker through `answer`.
    queue = answer.catch(() => undefined);
    return json(c, await answer);
  });
  return api;
}

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
