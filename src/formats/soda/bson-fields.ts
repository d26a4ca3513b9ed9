import { Binary, BSON, Double, Int32, Long } from 'mongodb';
import { describeValue, invalid } from '../../model/errors.js';
import type { JsonObject, JsonValue } from '../../model/json.js';

/**
 * SODA.Sim's documents are read with their BSON types kept (js-bson's `promoteValues: false`, or
 * canonical Extended JSON parsed with `relaxed: false`): an int64 is a `Long`, an int32 an `Int32`, a
 * double a `Double`. Both the files and the live server give this one shape, so one set of checks
 * serves both, and each check names where the value sits when it refuses it.
 */
export type BsonDoc = Record<string, unknown>;

/** The BSON type of a decoded value, in the words of the MongoDB manual. */
export function bsonTypeOf(value: unknown): string {
  if (value instanceof Double) return 'double';
  if (value instanceof Int32) return 'int32';
  if (value instanceof Long) return 'int64';
  if (value instanceof Binary) return 'binary';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (value === null) return 'null';
  if (value === undefined) return 'absent';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return 'number (untyped)';
  const bsontype = (value as { _bsontype?: unknown })._bsontype;
  return typeof bsontype === 'string' ? bsontype : 'document';
}

const wrongType = (where: string, expected: string, value: unknown): Error =>
  invalid(
    `${where}: expected BSON ${expected}, got ${bsonTypeOf(value)}${value === undefined ? '' : ` ${describePlain(value)}`}`,
  );

function describePlain(value: unknown): string {
  if (value instanceof Double || value instanceof Int32) return String(value.value);
  if (value instanceof Long) return value.toString();
  return describeValue(value);
}

export function int64(value: unknown, where: string): number {
  if (!(value instanceof Long)) throw wrongType(where, 'int64', value);
  const n = value.toNumber();
  if (!Number.isSafeInteger(n)) throw invalid(`${where}: int64 ${value.toString()} is beyond +-2^53`);
  return n;
}

export function int32(value: unknown, where: string): number {
  if (!(value instanceof Int32)) throw wrongType(where, 'int32', value);
  return value.value;
}

export function double(value: unknown, where: string): number {
  if (!(value instanceof Double)) throw wrongType(where, 'double', value);
  if (!Number.isFinite(value.value)) throw invalid(`${where}: expected a finite double, got ${value.value}`);
  return value.value;
}

export function string(value: unknown, where: string): string {
  if (typeof value !== 'string') throw wrongType(where, 'string', value);
  return value;
}

export function doc(value: unknown, where: string): BsonDoc {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || '_bsontype' in value)
    throw wrongType(where, 'document', value);
  return value as BsonDoc;
}

export function array(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw wrongType(where, 'array', value);
  return value;
}

export function binary(value: unknown, where: string): Uint8Array {
  if (!(value instanceof Binary)) throw wrongType(where, 'binary', value);
  return value.value();
}

/** `[x, y, z]` of doubles: every location, rotator and vector SODA.Sim writes. */
export function vec3(value: unknown, where: string): [number, number, number] {
  const items = array(value, where);
  if (items.length !== 3) throw invalid(`${where}: expected 3 doubles, got ${items.length} values`);
  return [double(items[0], `${where}[0]`), double(items[1], `${where}[1]`), double(items[2], `${where}[2]`)];
}

/** Writers: SODA.Sim's BSON types made explicit, so neither the driver nor EJSON guesses them. */
// Adding 0 turns -0 into 0: SODA.Sim never writes a negative zero, and EJSON would spell it "-0.0".
export const toDouble = (v: number): Double => new Double(v + 0);
export const toInt32 = (v: number): Int32 => new Int32(v);
export const toInt64 = (v: number): Long => Long.fromNumber(v);
export const toVec3 = (v: readonly [number, number, number]): Double[] => v.map(toDouble);

/**
 * A decoded BSON value as plain JSON, for what simrec keeps as JSON (component data, vehicle
 * configurations): numbers of any BSON type become numbers, binaries base64 strings.
 */
export function toPlainJson(value: unknown, where: string): JsonValue {
  if (value instanceof Double || value instanceof Int32) return value.value;
  if (value instanceof Long) return int64(value, where);
  if (value instanceof Binary) return Buffer.from(value.value()).toString('base64');
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return value;
  if (Array.isArray(value)) return value.map((v, i) => toPlainJson(v, `${where}[${i}]`));
  if (typeof value === 'object' && !('_bsontype' in value)) {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) out[k] = toPlainJson(v, `${where}.${k}`);
    return out;
  }
  throw invalid(`${where}: BSON ${bsonTypeOf(value)} has no JSON form simrec keeps`);
}

/** Plain JSON as BSON the way SODA.Sim's from_json makes it: integers int32 (or int64), others double. */
export function fromPlainJson(value: JsonValue): unknown {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || Object.is(value, -0)) return new Double(value);
    return value >= -(2 ** 31) && value < 2 ** 31 ? new Int32(value) : Long.fromNumber(value);
  }
  if (Array.isArray(value)) return value.map(fromPlainJson);
  if (value !== null && typeof value === 'object') {
    const out: BsonDoc = {};
    for (const [k, v] of Object.entries(value)) out[k] = fromPlainJson(v);
    return out;
  }
  return value;
}

/** A BSON value kept exactly inside simrec's JSON (attributes): canonical Extended JSON. */
export const toCanonicalJson = (value: unknown): JsonValue => BSON.EJSON.serialize(value, { relaxed: false });
export const fromCanonicalJson = (value: JsonValue): unknown =>
  BSON.EJSON.deserialize(value as object, { relaxed: false });
