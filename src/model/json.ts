import { describeValue, invalid } from './errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Nesting deeper than this is refused: it is never real simulator data and it can exhaust the stack. */
export const MAX_JSON_DEPTH = 64;

/**
 * Checks that a value survives JSON unchanged: no NaN or Infinity (JSON would turn them into null),
 * no undefined inside arrays, no functions, class instances, cycles or absurd depth. The error names
 * where in the value the problem is (`where[2].pressure`); `where` may be a function, called only for
 * a problem (a caller checking every field of every sample need not put its name together each time).
 */
export function checkJsonValue(value: unknown, where: string | (() => string)): asserts value is JsonValue {
  const problem = jsonProblem(value, 0);
  if (problem)
    throw invalid(`${typeof where === 'string' ? where : where()}${problem.path}: ${problem.message}`);
}

/**
 * What makes a value not JSON, and where in it; null when it is JSON. The path is put together only
 * for a problem: built at every element, it was most of the time a recorder spent on a sample with a
 * JSON field (the demo's wheels, four objects a sample).
 */
function jsonProblem(value: unknown, depth: number): { path: string; message: string } | null {
  if (depth > MAX_JSON_DEPTH) return { path: '', message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(value) ? null : { path: '', message: `expected a finite number, got ${value}` };
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const problem = jsonProblem(value[i], depth + 1);
          if (problem) return { path: `[${i}]${problem.path}`, message: problem.message };
        }
        return null;
      }
      const proto = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null;
      if (proto !== Object.prototype && proto !== null)
        return {
          path: '',
          message: `expected plain JSON data, got an instance of ${proto?.constructor?.name ?? '?'}`,
        };
      for (const key in value) {
        if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
        const item = (value as Record<string, unknown>)[key];
        if (item === undefined) continue; // dropped by JSON, like an absent key
        const problem = jsonProblem(item, depth + 1);
        if (problem) return { path: `.${key}${problem.path}`, message: problem.message };
      }
      return null;
    }
    default:
      return { path: '', message: `expected JSON data, got ${describeValue(value)}` };
  }
}

/**
 * A deep copy of a value checkJsonValue accepted: what a recorder keeps of a sample's JSON field while
 * its caller goes on with the original (a simulator that fills the same wheels object every step would
 * otherwise have every sample of a commit recorded with the last step's values). Strings, numbers,
 * booleans and null are returned as they are.
 */
export function copyJsonValue(value: JsonValue): JsonValue {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array<JsonValue>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyJsonValue(value[i]!);
    return out;
  }
  const out: JsonObject = {};
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const item = value[key];
    if (item === undefined) continue; // dropped by JSON, as checkJsonValue allows
    // A key "__proto__" (JSON.parse makes one) must stay a key, not become the copy's prototype.
    if (key === '__proto__')
      Object.defineProperty(out, key, {
        value: copyJsonValue(item),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else out[key] = copyJsonValue(item);
  }
  return out;
}

/**
 * Freezes a JSON value and everything in it: what a cache hands out to many callers (a store's list of
 * a run's streams), so that a caller changing it gets an error instead of changing every later answer.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const item of Object.values(value)) deepFreeze(item);
  return Object.freeze(value);
}

/** JSON text in which bigints (int64 scenario ids) are numbers when exact, else decimal strings. */
export function toJson(value: unknown, indent = 2): string {
  // Written without a replacer first: one is called for every value of a server's pages of samples, and
  // only a value holding a bigint needs it (JSON.stringify refuses those).
  try {
    return JSON.stringify(value, null, indent);
  } catch (error) {
    if (!(error instanceof TypeError && /bigint/i.test(error.message))) throw error;
    return JSON.stringify(value, bigintAsJson, indent);
  }
}

function bigintAsJson(_key: string, v: unknown): unknown {
  if (typeof v !== 'bigint') return v;
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(v)
    : v.toString();
}
