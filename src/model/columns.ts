import { describeValue, invalid } from './errors.js';
import { checkJsonValue, copyJsonValue } from './json.js';
import {
  F32_EXPECTED,
  inferFieldType,
  isFieldName,
  type FieldDecl,
  type FieldType,
  type Sample,
  type StreamSchema,
} from './stream.js';

/**
 * Samples as columns: the form recording, ingest, reads for exports and the viewer use on their hot
 * paths, because a typed array per field costs nothing per sample while an object per sample costs an
 * allocation, a hidden class and a garbage collection.
 *
 * How each field type is held (one entry per row):
 * - f64, f32, i32, i64, bool: a Float64Array; NaN marks a row without a value (NaN is never a value:
 *   simrec refuses it). bool is 0 or 1. f32 holds values already rounded to float32.
 * - vec: a Float64Array of rows x length, row-major; NaN in a row's first component marks it absent.
 * - string: an array of strings, undefined where absent.
 * - json: an array of JSON values, undefined where absent (null is a value).
 */
export type ColumnValues = Float64Array | unknown[];

export interface ColumnBatch {
  /** Sample times, integer microseconds, never decreasing. */
  t: Float64Array;
  /** Steps, integers. */
  step: Float64Array;
  /** Values by field name. A field without a column is absent in every row. */
  columns: Record<string, ColumnValues>;
  /** The types of undeclared columns, as the sender's values showed them (else inferred from the array). */
  types?: Record<string, FieldType>;
}

/** What a caller may hand over for a column: typed arrays of any kind, or plain arrays. */
export type ColumnInput =
  | Float64Array
  | Float32Array
  | Int32Array
  | Uint32Array
  | Int16Array
  | Uint16Array
  | Int8Array
  | Uint8Array
  | readonly unknown[];

export interface ColumnBatchInput {
  t: ArrayLike<number>;
  step: ArrayLike<number>;
  columns: Record<string, ColumnInput>;
}

/**
 * One step of many actors' streams of the same name (a whole scene's `state`, say): one value per actor
 * in each column, in the order of `actors`. Actor i's sample goes to stream `actors[i]/name`.
 */
export interface FrameInput {
  t: number;
  step: number;
  actors: readonly string[];
  columns: Record<string, ColumnInput>;
}

const isNumeric = (type: FieldType): boolean =>
  type === 'f64' || type === 'f32' || type === 'i32' || type === 'i64' || type === 'bool';

/** The type a column of an undeclared field is kept as. */
export function inferColumnType(values: ColumnValues | ColumnInput): FieldType {
  if (ArrayBuffer.isView(values))
    return values instanceof Float64Array || values instanceof Float32Array ? 'f64' : 'i64';
  return inferFieldType(values as readonly unknown[]);
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** Why a numeric value does not fit its field type, or null when it fits. */
function numericMismatch(type: FieldType, v: number): string | null {
  switch (type) {
    case 'f64':
      return Number.isFinite(v) ? null : 'a finite number';
    case 'f32':
      return Number.isFinite(Math.fround(v)) ? null : F32_EXPECTED;
    case 'i32':
      return Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX ? null : 'a 32-bit integer';
    case 'i64':
      return Number.isSafeInteger(v) ? null : 'an integer within +-2^53';
    case 'bool':
      return v === 0 || v === 1 ? null : 'a boolean (0 or 1 in a column)';
    default:
      return null;
  }
}

/**
 * Validates a batch against its stream's schema, column by column (no object per sample), and returns
 * it in the engine's form (see ColumnValues). A column already in that form (a Float64Array of valid
 * values, an array of strings) is returned as it is, not copied: whoever keeps the rows copies them
 * (RunRecorder does, before it returns), so the caller may reuse its arrays once the append returns.
 * Time must not go backwards from `previousT` nor within the batch.
 */
export function normalizeColumns(
  schema: StreamSchema,
  input: ColumnBatchInput,
  previousT: number | null,
  /** How errors name a row; by default the stream and the row's time. */
  rowName: (i: number, t: number) => string = (_i, t) => `stream ${schema.id} sample at t=${t}`,
): ColumnBatch {
  if (typeof input !== 'object' || input === null)
    throw invalid(`stream ${schema.id}: expected a column batch, got ${describeValue(input)}`);
  const n = input.t?.length;
  if (!Number.isInteger(n))
    throw invalid(`stream ${schema.id}: batch.t: expected an array of times, got ${describeValue(input.t)}`);
  if (input.step?.length !== n)
    throw invalid(
      `stream ${schema.id}: batch.step: expected ${n} steps (one per time), got ${describeValue(input.step)}`,
    );
  const t = new Float64Array(n);
  const step = new Float64Array(n);
  let last = previousT;
  for (let i = 0; i < n; i++) {
    const ti = input.t[i]!;
    if (!Number.isSafeInteger(ti))
      throw invalid(
        `stream ${schema.id} row ${i}: t: expected an integer number of microseconds, got ${describeValue(ti)}`,
      );
    if (last !== null && ti < last)
      throw invalid(`${rowName(i, ti)}: time goes backwards (previous sample at t=${last})`);
    const si = input.step[i]!;
    if (!Number.isSafeInteger(si))
      throw invalid(`${rowName(i, ti)}: field step: expected an integer, got ${describeValue(si)}`);
    t[i] = ti;
    step[i] = si;
    last = ti;
  }
  const { columns, types } = normalizeFieldColumns(schema, input.columns, n, (i) => t[i]!, rowName);
  return types ? { t, step, columns, types } : { t, step, columns };
}

/** A schema's fields by name, made once per schema: a frame of 200 actors is validated 100 times a second. */
const fieldsByName = new WeakMap<StreamSchema, Map<string, FieldDecl>>();

function declaredFields(schema: StreamSchema): Map<string, FieldDecl> {
  let declared = fieldsByName.get(schema);
  if (!declared) fieldsByName.set(schema, (declared = new Map(schema.fields.map((f) => [f.name, f]))));
  return declared;
}

/**
 * The field columns of `n` rows validated against a stream's schema (see normalizeColumns), with the
 * types of undeclared ones. `timeOf` gives a row's time for error messages: a frame's rows share one
 * time, so validating a frame needs no array of times (two typed arrays a frame, the most of what its
 * validation cost the appending thread).
 */
export function normalizeFieldColumns(
  schema: StreamSchema,
  input: Record<string, ColumnInput> | undefined,
  n: number,
  timeOf: (row: number) => number,
  rowName: (i: number, t: number) => string,
): { columns: Record<string, ColumnValues>; types?: Record<string, FieldType> } {
  const columns: Record<string, ColumnValues> = {};
  let types: Record<string, FieldType> | undefined;
  const declared = declaredFields(schema);
  for (const name in input) {
    if (!Object.hasOwn(input, name)) continue;
    const values = input[name]!;
    if (values === undefined) continue;
    if (!ArrayBuffer.isView(values) && !Array.isArray(values))
      throw invalid(`stream ${schema.id}: column ${name}: expected an array, got ${describeValue(values)}`);
    let field = declared.get(name);
    if (!field) {
      if (!isFieldName(name))
        throw invalid(`stream ${schema.id}: field name ${describeValue(name)} is not a valid name`);
      field = { name, type: inferColumnType(values), optional: true };
      (types ??= {})[name] = field.type;
    }
    columns[name] = normalizeColumn(schema, field, values, n, timeOf, rowName);
  }
  if (n > 0)
    for (const field of schema.fields)
      if (!field.optional && !(field.name in columns))
        throw invalid(`${rowName(0, timeOf(0))}: field ${field.name} is required (${field.type}) but absent`);
  return types ? { columns, types } : { columns };
}

function normalizeColumn(
  schema: StreamSchema,
  field: FieldDecl,
  values: ColumnInput,
  n: number,
  timeOf: (row: number) => number,
  rowName: (i: number, t: number) => string,
): ColumnValues {
  // Errors are worded by functions (rowWhere, absentError), not closures made per call: a frame's
  // columns are validated 100 times a second, and nothing need be allocated unless a value is wrong.
  if (field.type === 'vec') {
    const len = field.length!;
    if (values.length !== n * len)
      throw invalid(
        `stream ${schema.id}: column ${field.name}: expected ${n} rows x ${len} components = ${n * len} numbers, got ${values.length}`,
      );
    const out = new Float64Array(n * len);
    for (let i = 0; i < n; i++) {
      const first = values[i * len];
      if (typeof first === 'number' && Number.isNaN(first)) {
        if (!field.optional) absentError(field, rowWhere(field, i, timeOf, rowName));
        for (let k = 0; k < len; k++) out[i * len + k] = NaN;
        continue;
      }
      for (let k = 0; k < len; k++) {
        const v = values[i * len + k];
        if (typeof v !== 'number' || !Number.isFinite(v))
          throw invalid(
            `${rowWhere(field, i, timeOf, rowName)}: expected an array of ${len} finite numbers${unitOf(field)}, got ${describeValue(v)} at [${k}]`,
          );
        out[i * len + k] = v;
      }
    }
    return out;
  }
  if (values.length !== n)
    throw invalid(
      `stream ${schema.id}: column ${field.name}: expected ${n} values (one per time), got ${values.length}`,
    );
  if (isNumeric(field.type)) {
    const fast = numericFastPath(field.type, values, n, field.optional === true);
    if (fast) return fast;
    const out = new Float64Array(n);
    const typed = ArrayBuffer.isView(values);
    for (let i = 0; i < n; i++) {
      let v = values[i];
      if (!typed) {
        if (v === undefined || v === null) v = NaN;
        else if (field.type === 'bool' && typeof v === 'boolean') v = v ? 1 : 0;
        else if (typeof v !== 'number')
          throw invalid(
            `${rowWhere(field, i, timeOf, rowName)}: expected ${field.type === 'bool' ? 'a boolean' : 'a number'}${unitOf(field)}, got ${describeValue(v)}`,
          );
      }
      const x = v as number;
      if (Number.isNaN(x)) {
        if (!field.optional) absentError(field, rowWhere(field, i, timeOf, rowName));
        out[i] = NaN;
        continue;
      }
      const expected = numericMismatch(field.type, x);
      if (expected !== null)
        throw invalid(
          `${rowWhere(field, i, timeOf, rowName)}: expected ${expected}${unitOf(field)}, got ${describeValue(x)}`,
        );
      out[i] = field.type === 'f32' ? Math.fround(x) : x;
    }
    return out;
  }
  if (ArrayBuffer.isView(values))
    throw invalid(
      `stream ${schema.id}: column ${field.name}: a ${field.type} field needs a plain array, got a typed array`,
    );
  if (field.type === 'string' && everyString(values, n)) return values as unknown[];
  const out = new Array<unknown>(n);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === undefined || (v === null && field.type !== 'json')) {
      if (!field.optional) absentError(field, rowWhere(field, i, timeOf, rowName));
      out[i] = undefined;
      continue;
    }
    if (field.type === 'string' && typeof v !== 'string')
      throw invalid(`${rowWhere(field, i, timeOf, rowName)}: expected a string, got ${describeValue(v)}`);
    if (field.type === 'json') {
      checkJsonValue(v, rowWhere(field, i, timeOf, rowName));
      // Copied: the caller may change its object once the append returns (json.ts copyJsonValue).
      out[i] = copyJsonValue(v);
    } else out[i] = v;
  }
  return out;
}

function rowWhere(
  field: FieldDecl,
  i: number,
  timeOf: (row: number) => number,
  rowName: (i: number, t: number) => string,
): string {
  return `${rowName(i, timeOf(i))}: field ${field.name}`;
}

/** The error for a required value found absent, `where` naming its row and field. */
function absentError(field: FieldDecl, where: string): never {
  throw invalid(`${where} is required (${field.type}) but absent`);
}

const unitOf = (field: FieldDecl): string => (field.unit ? ` (${field.unit})` : '');

/**
 * The usual case without a copy or a per-value branch on the type: every value present and valid in
 * the engine's own form (a Float64Array of finite numbers for an f64 field, say). The caller's array is
 * returned as it is (whoever keeps the rows copies them: the recorder does, at once). Null when any
 * value needs a look (absent, out of range, another representation): the general path words the error.
 */
function numericFastPath(
  type: FieldType,
  values: ColumnInput,
  n: number,
  /** NaN (absent) is a valid value: a simulator's frame leaves out what some actors do not have. */
  optional: boolean,
): Float64Array | null {
  if (values instanceof Float64Array) {
    switch (type) {
      case 'f64':
        for (let i = 0; i < n; i++) {
          const v = values[i]!;
          // NaN or +-Infinity; then NaN where absence is allowed.
          if (v - v !== 0 && !(optional && v !== v)) return null;
        }
        return values;
      case 'i64':
        for (let i = 0; i < n; i++) if (!Number.isSafeInteger(values[i])) return null;
        return values;
      case 'i32':
        for (let i = 0; i < n; i++) if ((values[i]! | 0) !== values[i]) return null;
        return values;
      default:
        return null;
    }
  }
  if (values instanceof Int32Array && (type === 'i32' || type === 'i64' || type === 'f64'))
    return Float64Array.from(values);
  if (values instanceof Float32Array && type === 'f32') {
    for (let i = 0; i < n; i++) if (values[i]! - values[i]! !== 0) return null;
    return Float64Array.from(values);
  }
  return null;
}

function everyString(values: readonly unknown[], n: number): boolean {
  for (let i = 0; i < n; i++) if (typeof values[i] !== 'string') return false;
  return true;
}

/** Sample objects as columns (the convenience path; samples already validated by validateSample). */
export function samplesToColumns(samples: readonly Sample[], fields: readonly FieldDecl[]): ColumnBatch {
  const n = samples.length;
  const t = new Float64Array(n);
  const step = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    t[i] = samples[i]!.t;
    step[i] = samples[i]!.step;
  }
  const columns: Record<string, ColumnValues> = {};
  const declared = new Map(fields.map((f) => [f.name, f] as const));
  const names = new Set<string>();
  let previousKeys: string[] = [];
  for (const s of samples) {
    const keys = Object.keys(s);
    if (keys.length === previousKeys.length && keys.every((k, i) => k === previousKeys[i])) continue;
    for (const k of keys) if (k !== 't' && k !== 'step') names.add(k);
    previousKeys = keys;
  }
  const types: Record<string, FieldType> = {};
  for (const name of names) {
    let field = declared.get(name);
    if (!field) {
      const type = inferFieldType(samples.map((s) => s[name]));
      field = { name, type };
      types[name] = type;
    }
    if (isNumeric(field.type)) {
      const out = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const v = samples[i]![name];
        out[i] =
          v === undefined || v === null
            ? NaN
            : typeof v === 'boolean'
              ? v
                ? 1
                : 0
              : field.type === 'f32'
                ? Math.fround(v as number)
                : (v as number);
      }
      columns[name] = out;
    } else if (field.type === 'vec') {
      const len = field.length!;
      const out = new Float64Array(n * len).fill(NaN);
      for (let i = 0; i < n; i++) {
        const v = samples[i]![name] as number[] | undefined | null;
        if (v) for (let k = 0; k < len; k++) out[i * len + k] = v[k]!;
      }
      columns[name] = out;
    } else {
      const keepNull = field.type === 'json';
      const out = new Array<unknown>(n);
      for (let i = 0; i < n; i++) {
        const v = samples[i]![name];
        out[i] = v === null && !keepNull ? undefined : v;
      }
      columns[name] = out;
    }
  }
  return Object.keys(types).length ? { t, step, columns, types } : { t, step, columns };
}

/** The declared type of each column of a batch: declared fields first, undeclared ones inferred. */
export function columnFields(batch: ColumnBatch, declared: readonly FieldDecl[]): FieldDecl[] {
  const byName = new Map(declared.map((f) => [f.name, f] as const));
  const out: FieldDecl[] = [];
  for (const f of declared) if (f.name in batch.columns) out.push(f);
  for (const name of Object.keys(batch.columns))
    if (!byName.has(name))
      out.push({ name, type: batch.types?.[name] ?? inferColumnType(batch.columns[name]!) });
  return out;
}

const typesOf = new WeakMap<readonly FieldDecl[], Map<string, FieldDecl>>();

/** Builds a whole row of plain columns as one object literal (see rowBuilder). */
type RowBuilder = (t: number, step: number, columns: readonly ColumnValues[], i: number) => Sample;
type EntryBuilder = (
  id: string,
  kind: string,
  t: number,
  columns: readonly ColumnValues[],
  i: number,
) => SampleEntry;

/** What an entry carries before its sample: the actor's id and kind. */
export interface EntryHead {
  id: string;
  kind: string;
}

/**
 * A row made for a scene: the actor's id and kind first, then the sample's time and fields, without
 * its step (replay/run-queries.ts's SceneActor; StoreBackend.latestEntries).
 */
export interface SampleEntry {
  id: string;
  kind: string;
  t: number;
  [field: string]: unknown;
}

/**
 * Each batch's row builder and its columns in the builder's order, found at its first row and kept on
 * the batch under this symbol, not enumerable (a copy of the batch does not take another's columns).
 * Not in a WeakMap from batches: a property is found sooner at each row, and the read-ahead's
 * thousand chunks decoded at once each met the map at their first row (performance-history.md).
 */
const BUILDERS = Symbol('row builders');
type BatchBuilders = Builders & { columns: ColumnValues[] };
type BatchWithBuilders = ColumnBatch & { [BUILDERS]?: BatchBuilders };

/** What makes a row of a batch with a given list of columns: as a sample, and as an entry. */
interface Builders {
  names: string[];
  build: RowBuilder | null;
  buildEntry: EntryBuilder | null;
}

/**
 * How a builder reads a column's value: a number, a bool's 0 or 1 as a boolean, a vector (no builder),
 * or a value kept as it is (strings, JSON).
 */
type ColumnKind = 'number' | 'bool' | 'vector' | 'value';

function columnKind(values: ColumnValues, decl: FieldDecl | undefined): ColumnKind {
  if (!(values instanceof Float64Array)) return 'value';
  return decl?.type === 'vec' ? 'vector' : decl?.type === 'bool' ? 'bool' : 'number';
}

/**
 * The row shapes met so far, as a tree: a node's children by the next column's name, then its kind; a
 * shape's builders at the node its last column leads to. A batch's shape is found by walking its
 * columns, where a key made of its names and kinds joined was a new string to build and hash at every
 * batch's first row: the read-ahead decodes a thousand chunks at once, and the scenes after it met them
 * one by one, each paying for its key (performance-history.md).
 */
interface ShapeNode {
  readonly next: Map<string, Partial<Record<ColumnKind, ShapeNode>>>;
  builders?: Builders;
}

const shapeRoot: ShapeNode = { next: new Map() };
/** Shapes with builders kept: past this, a new shape's builders are made for its batch alone. */
const MAX_SHAPES = 1024;
/** More columns than this get no builder (a loop over them serves), so their shapes are not kept. */
const MAX_BUILDER_COLUMNS = 64;
let shapesKept = 0;

/**
 * The builders shared by every batch whose columns have these names, kinds and order. Nodes are added
 * only while shapes are kept: batches of ever new columns (a sender's arbitrary names) cannot grow the
 * tree without bound.
 */
function rowBuilder(batch: ColumnBatch, byName: Map<string, FieldDecl>): Builders {
  const names = Object.keys(batch.columns);
  let node: ShapeNode | undefined = shapeRoot;
  const adding = shapesKept < MAX_SHAPES && names.length <= MAX_BUILDER_COLUMNS;
  for (let k = 0; k < names.length && node; k++) {
    const name = names[k]!;
    const kind = columnKind(batch.columns[name]!, byName.get(name));
    let byKind = node.next.get(name);
    if (!byKind && adding) node.next.set(name, (byKind = {}));
    node = byKind?.[kind] ?? (adding && byKind ? (byKind[kind] = { next: new Map() }) : undefined);
  }
  if (node?.builders) return node.builders;
  const builders = makeBuilders(
    names,
    names.map((name) => columnKind(batch.columns[name]!, byName.get(name))),
  );
  if (node) {
    node.builders = builders;
    shapesKept++;
  }
  return builders;
}

/**
 * A function that builds a row whose columns are all present as one object literal with the columns'
 * names written in: every sample of a stream then has the same shape from its creation, where adding
 * the fields one by one by computed name made each a slow store (building the 200 samples of a scene
 * was half of a scene's time). Names are written as JSON string literals, which JavaScript reads as
 * the same strings; `__proto__` (which a literal would take as the prototype) and anything but plain
 * numbers, booleans and values kept as they are get no builder.
 */
function makeBuilders(names: string[], kinds: readonly ColumnKind[]): Builders {
  if (names.includes('__proto__') || kinds.includes('vector') || names.length > MAX_BUILDER_COLUMNS)
    return { names, build: null, buildEntry: null };
  const body = names
    .map((n, k) => `, ${JSON.stringify(n)}: c[${k}][i]${kinds[k] === 'bool' ? ' === 1' : ''}`)
    .join('');
  return {
    names,
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- a row builder compiled per set of field names (quoted by JSON.stringify) is faster than a loop over them
    build: new Function('t', 'step', 'c', 'i', `return { t, step${body} };`) as RowBuilder,
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- as build
    buildEntry: new Function('id', 'kind', 't', 'c', 'i', `return { id, kind, t${body} };`) as EntryBuilder,
  };
}

/** Field types whose values a sample gives as numbers (a bool column's 0 and 1 are booleans there). */
const NUMBER_TYPES: ReadonlySet<FieldType> = new Set(['f64', 'f32', 'i32', 'i64']);

/**
 * A batch's column `name` as one number a row: the field's value where the row's sample (sampleAt)
 * has a number there, NaN where it has none (absent, a bool, a vector, a string or other JSON value).
 * For readers that want a few numeric fields of many rows without a sample object a row.
 */
export function numbersOf(batch: ColumnBatch, fields: readonly FieldDecl[], name: string): Float64Array {
  const n = batch.t.length;
  const values = batch.columns[name];
  const type = fields.find((f) => f.name === name)?.type ?? batch.types?.[name];
  if (values instanceof Float64Array && values.length === n && type !== undefined && NUMBER_TYPES.has(type))
    return values;
  const out = new Float64Array(n).fill(NaN);
  if (Array.isArray(values))
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (typeof v === 'number') out[i] = v;
    }
  return out;
}

/** Row `i` of a batch as a sample object (absent fields left out, as they were sent). */
export function sampleAt(batch: ColumnBatch, fields: readonly FieldDecl[], i: number): Sample {
  const builders = buildersOf(batch, fields);
  if (builders.build && complete(builders.columns, i))
    return builders.build(batch.t[i]!, batch.step[i]!, builders.columns, i);
  return withFields({ t: batch.t[i]!, step: batch.step[i]! }, batch, typesOf.get(fields)!, i);
}

/**
 * Row `i` of a batch as a scene's entry: `{ id, kind, t, ...fields }`, the fields as sampleAt gives
 * them. Made in one object, not a sample copied into an entry (a third of a scene's garbage).
 */
export function entryAt(
  batch: ColumnBatch,
  fields: readonly FieldDecl[],
  i: number,
  id: string,
  kind: string,
): SampleEntry {
  const builders = buildersOf(batch, fields);
  if (builders.buildEntry && complete(builders.columns, i))
    return builders.buildEntry(id, kind, batch.t[i]!, builders.columns, i);
  return withFields({ id, kind, t: batch.t[i]! }, batch, typesOf.get(fields)!, i);
}

/** A batch's builders, and its columns in their order, made at its first row. */
function buildersOf(batch: ColumnBatch, fields: readonly FieldDecl[]): BatchBuilders {
  // The batch's own columns, looked up in the fields by name: a batch holds the few fields a stream
  // sends, its schema may declare many more (the standard state stream declares 19).
  let byName = typesOf.get(fields);
  if (!byName) typesOf.set(fields, (byName = new Map(fields.map((f) => [f.name, f] as const))));
  let builders = (batch as BatchWithBuilders)[BUILDERS];
  if (!builders) {
    const shared = rowBuilder(batch, byName);
    const columns = shared.names.map((name) => batch.columns[name]!);
    builders = { names: shared.names, build: shared.build, buildEntry: shared.buildEntry, columns };
    // A frozen batch (one a cache hands out deep-frozen) finds them again at each row.
    if (Object.isExtensible(batch)) Object.defineProperty(batch, BUILDERS, { value: builders });
  }
  return builders;
}

/** Whether row `i` has a value in every column (a builder makes it then). */
function complete(columns: readonly ColumnValues[], i: number): boolean {
  for (let k = 0; k < columns.length; k++) {
    const values = columns[k]!;
    const v = values[i];
    if (values instanceof Float64Array ? Number.isNaN(v) : v === undefined) return false;
  }
  return true;
}

/** Row `i`'s present fields added to `row` one by one (a row some column has no value in). */
function withFields<R extends Record<string, unknown>>(
  row: R,
  batch: ColumnBatch,
  byName: Map<string, FieldDecl>,
  i: number,
): R {
  const s = row as Record<string, unknown>;
  for (const name in batch.columns) {
    const values = batch.columns[name]!;
    const f = byName.get(name);
    if (values instanceof Float64Array) {
      if (f?.type === 'vec') {
        const len = f.length!;
        if (Number.isNaN(values[i * len]!)) continue;
        s[name] = Array.from(values.subarray(i * len, i * len + len));
        continue;
      }
      const v = values[i]!;
      if (Number.isNaN(v)) continue;
      s[name] = f?.type === 'bool' ? v === 1 : v;
    } else {
      const v = values[i];
      if (v !== undefined) s[name] = v;
    }
  }
  return row;
}
