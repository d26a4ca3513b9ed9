import { describeValue, invalid } from './errors.js';
import { checkJsonValue, copyJsonValue, type JsonObject } from './json.js';

/**
 * Field types a stream schema can declare. Numbers are JavaScript numbers; `i64` holds integers up to
 * 2^53 exactly (microsecond time stamps, ids). `vec` is a fixed-length vector of float64 (`length`),
 * `json` any JSON value (per-wheel states, nested arrays, objects).
 */
export const FIELD_TYPES = ['f64', 'f32', 'i32', 'i64', 'bool', 'string', 'vec', 'json'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface FieldDecl {
  name: string;
  type: FieldType;
  /** SI unit, e.g. `m`, `m/s`, `m/s^2`, `rad`, `rad/s`, `N*m`. Fields in `rad` interpolate on the circle. */
  unit?: string;
  /** Vector length, for `vec`. */
  length?: number;
  /** May be absent (or null, except in a JSON field, where null is a value) in a sample. */
  optional?: boolean;
  description?: string;
}

/** A field that was not declared but arrived in samples: kept, with the type seen. */
export interface InferredField {
  name: string;
  type: FieldType;
  inferred: true;
}

export interface StreamDecl {
  /** The stream's name within its actor, e.g. `state`, `control`, `wheels`. No `/`. */
  name: string;
  /** The actor the stream belongs to; run-level streams (traffic lights table, KPIs) have none. */
  actor?: string;
  fields: FieldDecl[];
  /** Nominal sample rate, if the simulator has one. */
  rateHz?: number;
  metadata?: JsonObject;
}

export interface StreamSchema {
  /** `actor/name`, or `name` for a run-level stream. */
  id: string;
  name: string;
  actor: string | null;
  fields: FieldDecl[];
  rateHz?: number;
  metadata: JsonObject;
}

export interface StreamInfo extends StreamSchema {
  samples: number;
  /** First and last sample time (microseconds), null while empty. */
  begin: number | null;
  end: number | null;
  /** Fields that arrived without being declared, with the type seen. */
  extraFields: InferredField[];
}

/**
 * Field names separated by commas, none empty (`simrec samples --fields`, `/samples?fields=`); `name`
 * says where they came from in the refusal.
 */
export function parseFieldNames(name: string, value: string): string[] {
  const names = value.split(',');
  if (names.some((n) => n.trim() === ''))
    throw invalid(`${name}: expected field names separated by commas, got ${describeValue(value)}`);
  return names;
}

/** A stream's declared fields, then its undeclared ones with the type seen: what its samples may hold. */
export const fieldsOfStream = (stream: Pick<StreamInfo, 'fields' | 'extraFields'>): FieldDecl[] => [
  ...stream.fields,
  ...stream.extraFields,
];

/** One sample: `t` (integer microseconds), `step` (integer) and the stream's fields. */
export interface Sample {
  t: number;
  step: number;
  [field: string]: unknown;
}

/**
 * Names a sample cannot use for a field: they are the sample's own keys, or (`__proto__`) a key every
 * JavaScript object already has, which an assignment would take as its prototype instead of a field.
 */
const RESERVED_FIELD_NAMES = new Set(['t', 'step', '__proto__']);
const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.:-]*$/;

/** Whether an undeclared field (a sample's key, a batch's column) may be kept under this name. */
export const isFieldName = (name: string): boolean => NAME_PATTERN.test(name) && name !== '__proto__';

export const streamId = (actor: string | null | undefined, name: string): string =>
  actor ? `${actor}/${name}` : name;

export function normalizeStream(decl: StreamDecl): StreamSchema {
  if (typeof decl !== 'object' || decl === null)
    throw invalid(`stream: expected an object, got ${describeValue(decl)}`);
  if (typeof decl.name !== 'string' || !NAME_PATTERN.test(decl.name))
    throw invalid(
      `stream.name: expected a name like "state" (letters, digits, _ . : -), got ${describeValue(decl.name)}`,
    );
  if (decl.actor !== undefined && (typeof decl.actor !== 'string' || decl.actor === ''))
    throw invalid(`stream ${decl.name}.actor: expected an actor id, got ${describeValue(decl.actor)}`);
  const id = streamId(decl.actor, decl.name);
  if (!Array.isArray(decl.fields))
    throw invalid(`stream ${id}.fields: expected an array, got ${describeValue(decl.fields)}`);
  const seen = new Set<string>();
  const fields = decl.fields.map((f, i) => {
    const where = `stream ${id}.fields[${i}]`;
    if (typeof f?.name !== 'string' || !NAME_PATTERN.test(f.name) || RESERVED_FIELD_NAMES.has(f.name))
      throw invalid(
        `${where}.name: expected a field name (letters, digits, _ . : -) other than t, step and __proto__, got ${describeValue(f?.name)}`,
      );
    if (seen.has(f.name)) throw invalid(`${where}.name: field ${f.name} is declared twice`);
    seen.add(f.name);
    if (!(FIELD_TYPES as readonly string[]).includes(f.type))
      throw invalid(`${where}.type: expected one of ${FIELD_TYPES.join(', ')}, got ${describeValue(f.type)}`);
    if (
      f.type === 'vec' &&
      !(Number.isInteger(f.length) && (f.length as number) > 0 && (f.length as number) <= 4096)
    )
      throw invalid(
        `${where}.length: a vec field needs an integer length 1..4096, got ${describeValue(f.length)}`,
      );
    const field: FieldDecl = { name: f.name, type: f.type };
    if (f.unit !== undefined) field.unit = String(f.unit);
    if (f.type === 'vec') field.length = f.length;
    if (f.optional) field.optional = true;
    if (f.description !== undefined) field.description = String(f.description);
    return field;
  });
  if (
    decl.rateHz !== undefined &&
    !(typeof decl.rateHz === 'number' && decl.rateHz > 0 && Number.isFinite(decl.rateHz))
  )
    throw invalid(`stream ${id}.rateHz: expected a positive number, got ${describeValue(decl.rateHz)}`);
  const metadata = decl.metadata ?? {};
  checkJsonValue(metadata, `stream ${id}.metadata`);
  const schema: StreamSchema = {
    id,
    name: decl.name,
    actor: decl.actor ?? null,
    fields,
    // A copy: the schema is written after the commit in flight (json.ts copyJsonValue).
    metadata: copyJsonValue(metadata) as JsonObject,
  };
  if (decl.rateHz !== undefined) schema.rateHz = decl.rateHz;
  return schema;
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** What an f32 field takes: a number that is still finite once rounded to float32. */
export const F32_EXPECTED = 'a finite number within float32 (+-3.4028234663852886e38)';

/** Why a value does not fit a field type, or null if it fits. */
export function fieldTypeMismatch(field: FieldDecl, value: unknown): string | null {
  switch (field.type) {
    case 'f64':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'a finite number';
    case 'f32':
      // Kept rounded to float32: a finite double beyond its range would be kept as infinity.
      return typeof value === 'number' && Number.isFinite(Math.fround(value)) ? null : F32_EXPECTED;
    case 'i32':
      return Number.isInteger(value) && (value as number) >= INT32_MIN && (value as number) <= INT32_MAX
        ? null
        : 'a 32-bit integer';
    case 'i64':
      return Number.isSafeInteger(value) ? null : 'an integer within +-2^53';
    case 'bool':
      return typeof value === 'boolean' ? null : 'a boolean';
    case 'string':
      return typeof value === 'string' ? null : 'a string';
    case 'vec': {
      const expected = `an array of ${field.length} finite numbers`;
      if (!Array.isArray(value) || value.length !== field.length) return expected;
      return value.every((v) => typeof v === 'number' && Number.isFinite(v)) ? null : expected;
    }
    case 'json':
      return null; // checked by checkJsonValue, which names the nested path
  }
}

/**
 * Validates one sample against its stream's schema. Declared fields are checked by type (a declared
 * field that is null counts as absent, but for a JSON field, whose value null is); undeclared fields must
 * be JSON and are kept as they came.
 * `previousT` is the stream's last time stamp: time may stand still but never go backwards.
 */
export function validateSample(
  schema: StreamSchema,
  sample: unknown,
  previousT: number | null,
): asserts sample is Sample {
  if (typeof sample !== 'object' || sample === null || Array.isArray(sample))
    throw invalid(`stream ${schema.id}: expected a sample object, got ${describeValue(sample)}`);
  const s = sample as Record<string, unknown>;
  if (!Number.isSafeInteger(s.t))
    throw invalid(
      `stream ${schema.id} sample.t: expected an integer number of microseconds, got ${describeValue(s.t)}`,
    );
  const where = `stream ${schema.id} sample at t=${s.t as number}`;
  if (!Number.isSafeInteger(s.step))
    throw invalid(`${where}: field step: expected an integer, got ${describeValue(s.step)}`);
  if (previousT !== null && (s.t as number) < previousT)
    throw invalid(`${where}: time goes backwards (previous sample at t=${previousT})`);
  for (const field of schema.fields) {
    const value = s[field.name];
    // null is a JSON field's value, as it is in a column (model/columns.ts); elsewhere it is absence.
    if (value === undefined || (value === null && field.type !== 'json')) {
      if (!field.optional)
        throw invalid(`${where}: field ${field.name} is required (${field.type}) but absent`);
      continue;
    }
    const expected = fieldTypeMismatch(field, value);
    if (expected !== null)
      throw invalid(
        `${where}: field ${field.name}: expected ${expected}${field.unit ? ` (${field.unit})` : ''}, got ${describeValue(value)}`,
      );
    if (field.type === 'json') checkJsonValue(value, `${where}: field ${field.name}`);
  }
  for (const key in s) {
    if (key === 't' || key === 'step' || schema.fields.some((f) => f.name === key)) continue;
    if (!isFieldName(key)) throw invalid(`${where}: field name ${describeValue(key)} is not a valid name`);
    const value = s[key];
    if (value !== undefined) checkJsonValue(value, `${where}: field ${key}`);
  }
}

/** The type an undeclared field is kept as, given the values seen (undefined = absent). */
export function inferFieldType(values: readonly unknown[]): FieldType {
  let kind: 'number' | 'boolean' | 'string' | null = null;
  for (const v of values) {
    if (v === undefined) continue;
    const k = typeof v;
    if (v === null || (k !== 'number' && k !== 'boolean' && k !== 'string')) return 'json';
    if (kind !== null && kind !== k) return 'json';
    kind = k;
  }
  if (kind === 'number') return 'f64';
  if (kind === 'boolean') return 'bool';
  if (kind === 'string') return 'string';
  return 'json';
}

/**
 * Adds to `known` the undeclared fields that appear in `samples`, with the type seen. A field seen
 * with two different types becomes `json`, which holds either.
 */
export function mergeInferredFields(
  known: readonly InferredField[],
  samples: readonly Sample[],
  declared: readonly FieldDecl[],
): InferredField[] {
  const byName = new Map(known.map((f) => [f.name, f] as const));
  const declaredNames = new Set(declared.map((f) => f.name));
  const fresh = new Set<string>();
  for (const s of samples)
    for (const key in s) if (key !== 't' && key !== 'step' && !declaredNames.has(key)) fresh.add(key);
  for (const name of fresh) {
    const type = inferFieldType(samples.map((s) => s[name]));
    const previous = byName.get(name);
    byName.set(name, { name, type: previous && previous.type !== type ? 'json' : type, inferred: true });
  }
  return [...byName.values()];
}
