/**
 * Tolerant readers for the values Perception datasets hold, each naming the file and JSON path of what
 * it refuses. Real data mixes shapes (Unity's writer emits Vector3 as arrays in captures and as
 * `{x,y,z}` inside labeler structs; ids are ints in the mock and GUID strings from the writer), so
 * each accepts every shape seen and converts Unity's frame to the canonical one.
 */
import { readFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { describeValue, invalid } from '../../../model/errors.js';
import type { JsonObject, JsonValue } from '../../../model/json.js';
import type { QuaternionTuple, Vec3Tuple } from '../../../model/perception.js';
import {
  canonicalPositionToUnity,
  canonicalQuaternionToUnity,
  unityPositionToCanonical,
  unityQuaternionToCanonical,
} from '../../../model/units.js';

export type Warn = (where: string, message: string) => void;

export const isObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses a JSON file, saying where (line and column) it is broken. */
export async function readJsonFile(path: string, shownAs: string): Promise<JsonValue> {
  const text = await readFile(path, 'utf8');
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    const message = (error as Error).message.replace(/\s+/g, ' ');
    const position = Number(/position (\d+)/.exec(message)?.[1] ?? jsonErrorOffset(text));
    const before = text.slice(0, position);
    const where = `line ${before.split('\n').length}, column ${position - before.lastIndexOf('\n')}`;
    throw invalid(`${shownAs}: invalid JSON at ${where}: ${message}`);
  }
}

/**
 * Where JSON text first goes wrong. Node 20's JSON.parse often names no position ("Unexpected token
 * ','"), and a user with a 40 MB captures file needs one; this runs only after a parse failed.
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const space = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const fail = (): never => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the offset itself, caught below: an unwind, not an error
    throw i;
  };
  const value = (): void => {
    space();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      space();
      if (text[i] === close) return void i++;
      for (;;) {
        if (c === '{') {
          space();
          if (text[i] !== '"') fail();
          value();
          space();
          if (text[i] !== ':') fail();
          i++;
        }
        value();
        space();
        if (text[i] === ',') i++;
        else if (text[i] === close) return void i++;
        else fail();
      }
    }
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      if (i >= text.length) fail();
      return void i++;
    }
    const literal = /^(true|false|null|-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (!literal) fail();
    i += literal![0].length;
  };
  try {
    value();
    space();
    return i < text.length ? i : text.length;
  } catch (offset) {
    return offset as number;
  }
}

/** An id as the model keeps it: a string. Ints (the mock) and strings (the writer) are both ids. */
export function readId(v: unknown, where: string): string {
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  throw invalid(`${where}: expected an id (a string or an integer), got ${describeValue(v)}`);
}

export const readOptionalId = (v: unknown, where: string): string | undefined =>
  v === undefined || v === null ? undefined : readId(v, where);

export function readNumber(v: unknown, where: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  throw invalid(`${where}: expected a number, got ${describeValue(v)}`);
}

export function readString(v: unknown, where: string, fallback = ''): string {
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'string') return v;
  throw invalid(`${where}: expected a string, got ${describeValue(v)}`);
}

function readTuple(v: unknown, keys: readonly string[], where: string): number[] | undefined {
  if (v === undefined || v === null) return undefined;
  const values = Array.isArray(v) ? v : isObject(v) ? keys.map((k) => v[k]) : null;
  if (
    values === null ||
    values.length !== keys.length ||
    !values.every((x) => typeof x === 'number' && Number.isFinite(x))
  )
    throw invalid(
      `${where}: expected [${keys.join(', ')}] or {${keys.join(', ')}} of numbers, got ${describeValue(v)}`,
    );
  return values as number[];
}

/** A Unity Vector3 (array or object), in Unity's own frame. */
export const readVector = (v: unknown, where: string): Vec3Tuple | undefined =>
  readTuple(v, ['x', 'y', 'z'], where) as Vec3Tuple | undefined;

/** A Unity quaternion: `[x, y, z, w]` as the writer emits it (never the doc's "w, x, y, z"). */
export const readQuaternion = (v: unknown, where: string): QuaternionTuple | undefined =>
  readTuple(v, ['x', 'y', 'z', 'w'], where) as QuaternionTuple | undefined;

export function unityToCanonicalPosition(v: Vec3Tuple): Vec3Tuple {
  const p = unityPositionToCanonical({ x: v[0], y: v[1], z: v[2] });
  return [p.x, p.y, p.z];
}

export function unityToCanonicalRotation(q: QuaternionTuple): QuaternionTuple {
  const r = unityQuaternionToCanonical({ x: q[0], y: q[1], z: q[2], w: q[3] });
  return [r.x, r.y, r.z, r.w];
}

/** Extents along Unity's x, y, z become extents along canonical x (Unity z), y (Unity x), z (Unity y). */
export const unityToCanonicalSize = (v: Vec3Tuple): Vec3Tuple => [v[2], v[0], v[1]];

/** The writers' way back: canonical tuples in Unity's frame. */
export const toUnityVector = (v: Vec3Tuple): Vec3Tuple => {
  const u = canonicalPositionToUnity({ x: v[0], y: v[1], z: v[2] });
  return [u.x, u.y, u.z];
};
export const toUnityRotation = (q: QuaternionTuple): QuaternionTuple => {
  const u = canonicalQuaternionToUnity({ x: q[0], y: q[1], z: q[2], w: q[3] });
  return [u.x, u.y, u.z, u.w];
};
/** Canonical extents (x, y, z) back to Unity's (x, y, z) = canonical (y, z, x). */
export const toUnitySize = (v: Vec3Tuple): Vec3Tuple => [v[1], v[2], v[0]];

/** Keys of `source` not in `known`, or undefined if there are none. */
export function extraFields(source: JsonObject, known: readonly string[]): JsonObject | undefined {
  let extra: JsonObject | undefined;
  for (const [key, value] of Object.entries(source)) {
    if (known.includes(key) || value === undefined) continue;
    (extra ??= {})[key] = value;
  }
  return extra;
}

/**
 * A file name from the dataset, as an attachment name relative to `root`. Names that leave the dataset
 * (`../`, absolute paths, drive letters) are refused: a dataset must not make simrec read other files.
 */
export function datasetFileName(root: string, base: string, name: string, where: string): string {
  if (name === '' || name.includes('\0'))
    throw invalid(`${where}: expected a file name, got ${describeValue(name)}`);
  const normalised = name.replace(/\\/g, '/');
  if (isAbsolute(normalised) || /^[A-Za-z]:/.test(normalised))
    throw invalid(
      `${where}: file name ${describeValue(name)} is absolute; refused (it must lie in the dataset)`,
    );
  const rel = relative(root, resolve(base, normalised));
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel))
    throw invalid(`${where}: file name ${describeValue(name)} points outside the dataset folder; refused`);
  return rel.split(sep).join('/');
}
