import { BSON } from 'mongodb';
import type { JsonValue } from '../../model/json.js';
import { fromCanonicalJson } from './bson-fields.js';

/**
 * Canonical Extended JSON read as `BSON.EJSON.parse(text, { relaxed: false })` reads it, the same
 * values out, at a fraction of its cost on a SODA.Sim recording. The library parses with a reviver,
 * which calls back for every value of the text; a recording is almost all `$numberDouble`,
 * `$numberInt` and `$numberLong` wrappers, so here the text is parsed plainly and those three are
 * made into their BSON values directly, each as the library makes it. Anything else with a `$` key
 * (dates, ids, binaries, references, a `$numberLong` outside the plain form) is handed whole to the
 * library, so its meaning and its errors stay the library's.
 */
export function parseCanonicalExtendedJson(text: string): unknown {
  return revive(JSON.parse(text));
}

/** A `$numberLong` the library takes without question: it would go to Long.fromString as well. */
const PLAIN_INT64 = /^(0|-?[1-9][0-9]{0,17})$/;

function revive(value: unknown): unknown {
  if (typeof value === 'number') return reviveNumber(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = revive(value[i]);
    return value;
  }
  const object = value as Record<string, unknown>;
  let keys = 0;
  let wrapped = false;
  for (const key in object) {
    keys++;
    if (key.startsWith('$')) wrapped = true;
    else if (key.includes('\0'))
      throw new Error(`BSON Document field names cannot contain null bytes, found: ${JSON.stringify(key)}`);
  }
  if (wrapped) return keys === 1 ? reviveWrapper(object) : libraryReads(object);
  for (const key in object) object[key] = revive(object[key]);
  return object;
}

function reviveWrapper(object: Record<string, unknown>): unknown {
  const { $numberDouble: double, $numberInt: int, $numberLong: long } = object;
  if (typeof double === 'string') return new BSON.Double(parseFloat(double));
  if (typeof int === 'string') return new BSON.Int32(int);
  if (typeof long === 'string' && PLAIN_INT64.test(long)) return BSON.Long.fromString(long);
  return libraryReads(object);
}

/** The driver's reading of a wrapper it alone knows, bottom-up as its own parser would. */
function libraryReads(object: Record<string, unknown>): unknown {
  return fromCanonicalJson(object as JsonValue);
}

/** A bare number, as canonical mode reads it: an Int32 or Long when integral, else a Double. */
function reviveNumber(value: number): unknown {
  if (Number.isInteger(value) && !Object.is(value, -0)) {
    if (value >= -0x80000000 && value <= 0x7fffffff) return new BSON.Int32(value);
    if (value >= -(2 ** 63) && value <= 2 ** 63 - 1) return BSON.Long.fromNumber(value);
  }
  return new BSON.Double(value);
}
