/** 3D boxes between Unity's frame (as Perception's writers emit them) and the canonical one, both ways. */
import { invalid } from '../../../model/errors.js';
import type { JsonObject, JsonValue } from '../../../model/json.js';
import type { QuaternionTuple, Vec3Tuple } from '../../../model/perception.js';
import {
  isObject,
  readQuaternion,
  readVector,
  toUnityRotation,
  toUnitySize,
  toUnityVector,
  unityToCanonicalPosition,
  unityToCanonicalRotation,
  unityToCanonicalSize,
} from './source-values.js';

const VECTOR_KEYS = ['translation', 'size', 'rotation', 'velocity', 'acceleration'] as const;

/**
 * A 3D box in the sensor's frame, converted to canonical. The writer emits objects here (JsonUtility)
 * and the mock arrays; `vectors: "object"` remembers which, so an export writes what was read.
 */
export function readBox3D(v: JsonValue, where: string): JsonValue {
  if (!isObject(v)) throw invalid(`${where}: expected an object`);
  const out: JsonObject = {};
  let objects = false;
  for (const [key, value] of Object.entries(v)) {
    if (!(VECTOR_KEYS as readonly string[]).includes(key)) {
      out[key] = value;
      continue;
    }
    if (isObject(value)) objects = true;
    if (key === 'rotation') {
      const q = readQuaternion(value, `${where}.rotation`);
      out.rotation = q ? unityToCanonicalRotation(q) : null;
    } else {
      const vec = readVector(value, `${where}.${key}`);
      out[key] = vec ? (key === 'size' ? unityToCanonicalSize(vec) : unityToCanonicalPosition(vec)) : null;
    }
  }
  if (objects) out.vectors = 'object';
  return out;
}

export function box3dRecord(v: JsonValue, objects = false): JsonValue {
  if (!isObject(v)) return v;
  const { vectors, ...rest } = v;
  const asObject = objects || vectors === 'object';
  const shape = (values: number[], keys: string[]): JsonValue =>
    asObject ? Object.fromEntries(keys.map((k, i) => [k, values[i]!])) : values;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(rest)) {
    if (
      !Array.isArray(value) ||
      !['translation', 'size', 'rotation', 'velocity', 'acceleration'].includes(key)
    ) {
      out[key] = value;
      continue;
    }
    if (key === 'rotation') out[key] = shape(toUnityRotation(value as QuaternionTuple), ['x', 'y', 'z', 'w']);
    else if (key === 'size') out[key] = shape(toUnitySize(value as Vec3Tuple), ['x', 'y', 'z']);
    else out[key] = shape(toUnityVector(value as Vec3Tuple), ['x', 'y', 'z']);
  }
  return out;
}
