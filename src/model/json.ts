import { describeValue, invalid } from './errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Nesting deeper than this is refused: it is never real simulator data and it can exhaust the stack. */
export const MAX_JSON_DEPTH = 64;

/**
 * Checks that a value survives JSON unchanged: no NaN or Infinity (JSON would turn them into null),
 * no undefined inside arrays, no functions, class instances, cycles or absurd depth.
 */
export function checkJsonValue(value: unknown, where: string, depth = 0): asserts value is JsonValue {
  if (depth > MAX_JSON_DEPTH) throw invalid(`${where}: nested deeper than ${MAX_JSON_DEPTH} levels`);
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw invalid(`${where}: expected a finite number, got ${value}`);
      return;
    case 'object': {
      if (value === null) return;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) checkJsonValue(value[i], `${where}[${i}]`, depth + 1);
        return;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null)
        throw invalid(
          `${where}: expected plain JSON data, got an instance of ${proto?.constructor?.name ?? '?'}`,
        );
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined) continue; // dropped by JSON, like an absent key
        checkJsonValue(item, `${where}.${key}`, depth + 1);
      }
      return;
    }
    default:
      throw invalid(`${where}: expected JSON data, got ${describeValue(value)}`);
  }
}

/** JSON text in which bigints (int64 scenario ids) are numbers when exact, else decimal strings. */
export function toJson(value: unknown, indent = 2): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) =>
      typeof v === 'bigint'
        ? v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)
          ? Number(v)
          : v.toString()
        : v,
    indent,
  );
}
