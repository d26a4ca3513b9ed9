/**
 * Writes a run as Unity Perception's legacy dataset, the way its writer emits it: a `Dataset/` folder
 * of JSON tables with a root `"version"`, captures and metrics in files of at most 150 records, and
 * the files they name copied beside it. Unlike Unity's writer, which writes the definitions only when
 * the run ends (so a crashed run has none, Unity issue #470), the definitions are written first and
 * again at the end: an interrupted export is still a readable dataset.
 */
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { conflict } from '../../model/errors.js';
import type { JsonObject, JsonValue } from '../../model/json.js';
import type {
  PerceptionAnnotation,
  PerceptionCapture,
  PerceptionMetric,
  QuaternionTuple,
  Vec3Tuple,
} from '../../model/perception.js';
import type { StoreBackend } from '../../model/store-port.js';
import { canonicalPositionToUnity, canonicalQuaternionToUnity } from '../../model/units.js';
import { loadDataset, type LoadedDataset } from './perception-run.js';
import { isObject, type Warn } from './source-values.js';

/** Unity's PerceptionEndpoint flushes at this many records (`capturesPerFile`, `metricsPerFile`). */
export const RECORDS_PER_FILE = 150;
/** What datasetinsights accepts (it refuses any other version). */
export const DEFAULT_SCHEMA_VERSION = '0.0.1';

export interface ExportOptions {
  warn: Warn;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

export interface ExportResult {
  captures: number;
  metrics: number;
  files: number;
  jsonFiles: string[];
}

/** Writes a file through a temporary name, so a reader never sees half of it. */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, data);
  await rename(temporary, path);
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

/** Refuses a folder that already holds a dataset: merging two would make neither. */
export async function requireEmptyTarget(dir: string, what: string): Promise<void> {
  const entries = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return [] as string[];
    throw e;
  });
  if (entries.length > 0)
    throw conflict(`${dir}: the folder is not empty; ${what} writes into a new or empty folder`);
}

/** Copies the attachments the dataset names to `dir`; returns how many were copied. */
export async function copyAttachments(
  store: StoreBackend,
  runId: number,
  names: Iterable<string>,
  target: (name: string) => string,
  warn: Warn,
): Promise<number> {
  let copied = 0;
  for (const name of new Set(names)) {
    const attachment = await store.getAttachment(runId, name);
    if (!attachment) {
      warn(`run ${runId}`, `file ${name} is referenced but was never imported; not written`);
      continue;
    }
    await writeFileAtomic(target(name), attachment.data);
    copied++;
  }
  return copied;
}

export async function exportPerception(
  store: StoreBackend,
  runId: number,
  dir: string,
  options: ExportOptions,
): Promise<ExportResult> {
  const dataset = await loadDataset(store, runId);
  await requireEmptyTarget(dir, 'a Perception export');
  const datasetDir = join(dir, 'Dataset');
  const version = dataset.info.version ?? DEFAULT_SCHEMA_VERSION;
  const jsonFiles: string[] = [];
  const writeTable = async (file: string, table: string, rows: JsonValue[]): Promise<void> => {
    await writeFileAtomic(join(datasetDir, file), json({ version, [table]: rows }));
    if (!jsonFiles.includes(file)) jsonFiles.push(file);
  };
  const writeDefinitions = async (): Promise<void> => {
    await writeTable(
      'egos.json',
      'egos',
      dataset.egos.map((e) => ({ id: e.id, description: e.description, ...e.extra })),
    );
    await writeTable(
      'sensors.json',
      'sensors',
      dataset.sensors.map((s) => ({
        id: s.id,
        ...(s.ego === null ? {} : { ego_id: s.ego }),
        modality: s.modality,
        description: s.description,
        ...s.extra,
      })),
    );
    // The writer skips these two when empty.
    if (dataset.annotationDefinitions.length)
      await writeTable(
        'annotation_definitions.json',
        'annotation_definitions',
        dataset.annotationDefinitions.map((d) => ({
          id: d.id,
          name: d.name,
          description: d.description,
          format: d.format,
          spec: d.spec,
          ...d.extra,
        })),
      );
    if (dataset.metricDefinitions.length)
      await writeTable(
        'metric_definitions.json',
        'metric_definitions',
        dataset.metricDefinitions.map((d) => ({
          id: d.id,
          name: d.name,
          description: d.description,
          spec: d.spec,
          ...d.extra,
        })),
      );
  };
  await writeDefinitions();

  const total = dataset.captures.length;
  let files = 0;
  for (let i = 0, index = 0; i < total; i += RECORDS_PER_FILE, index++) {
    options.signal?.throwIfAborted();
    const chunk = dataset.captures.slice(i, i + RECORDS_PER_FILE);
    files += await copyAttachments(
      store,
      runId,
      chunk.flatMap((c) => [
        ...(c.file === undefined ? [] : [c.file]),
        ...c.annotations.flatMap((a) => (a.file === undefined ? [] : [a.file])),
      ]),
      (name) => join(dir, name),
      options.warn,
    );
    await writeTable(
      `captures_${String(index).padStart(3, '0')}.json`,
      'captures',
      chunk.map((c) => captureRecord(c, dataset)),
    );
    options.onProgress?.(Math.min(i + RECORDS_PER_FILE, total), total);
  }
  for (let i = 0, index = 0; i < dataset.metrics.length; i += RECORDS_PER_FILE, index++)
    await writeTable(
      `metrics_${String(index).padStart(3, '0')}.json`,
      'metrics',
      dataset.metrics.slice(i, i + RECORDS_PER_FILE).map(metricRecord),
    );
  await writeDefinitions();
  return { captures: total, metrics: dataset.metrics.length, files, jsonFiles };
}

const toUnityVector = (v: Vec3Tuple): Vec3Tuple => {
  const u = canonicalPositionToUnity({ x: v[0], y: v[1], z: v[2] });
  return [u.x, u.y, u.z];
};
const toUnityRotation = (q: QuaternionTuple): QuaternionTuple => {
  const u = canonicalQuaternionToUnity({ x: q[0], y: q[1], z: q[2], w: q[3] });
  return [u.x, u.y, u.z, u.w];
};
/** Canonical extents (x, y, z) back to Unity's (x, y, z) = canonical (y, z, x). */
const toUnitySize = (v: Vec3Tuple): Vec3Tuple => [v[1], v[2], v[0]];

const sub = (extra: JsonObject | undefined, key: string): JsonObject =>
  isObject(extra?.[key]) ? (extra[key] as JsonObject) : {};

function captureRecord(c: PerceptionCapture, dataset: LoadedDataset): JsonObject {
  const sensor = dataset.sensors.find((s) => s.id === c.sensor);
  const sensorBlock: JsonObject = {
    sensor_id: c.sensor,
    ego_id: c.ego?.id ?? sensor?.ego ?? null,
    modality: sensor?.modality ?? 'unknown',
    translation: c.sensorPose ? toUnityVector(c.sensorPose.position) : null,
    rotation: c.sensorPose ? toUnityRotation(c.sensorPose.rotation) : null,
    camera_intrinsic: c.intrinsics?.unityProjection ?? null,
    ...(c.intrinsics ? { projection: c.intrinsics.projection } : {}),
    ...sub(c.extra, 'sensor'),
  };
  const record: JsonObject = {
    id: c.id,
    sequence_id: c.sequence,
    step: c.step,
    timestamp: c.timestamp,
    sensor: sensorBlock,
    ego: c.ego
      ? {
          ego_id: c.ego.id,
          translation: toUnityVector(c.ego.pose.position),
          rotation: toUnityRotation(c.ego.pose.rotation),
          velocity: c.ego.velocity ? toUnityVector(c.ego.velocity) : null,
          acceleration: c.ego.acceleration ? toUnityVector(c.ego.acceleration) : null,
          ...sub(c.extra, 'ego'),
        }
      : null,
    filename: c.file ?? null,
    format: c.format ?? null,
  };
  // The writer omits an empty annotation list, and an annotation's null filename and values.
  if (c.annotations.length) record.annotations = c.annotations.map(annotationRecord);
  return { ...record, ...sub(c.extra, 'capture') };
}

function annotationRecord(a: PerceptionAnnotation): JsonObject {
  const record: JsonObject = { id: a.id, annotation_definition: a.definition };
  if (a.file !== undefined) record.filename = a.file;
  if (a.values !== undefined) record.values = a.kind === 'bbox3d' ? a.values.map(box3dRecord) : a.values;
  return { ...record, ...a.extra };
}

function box3dRecord(v: JsonValue): JsonValue {
  if (!isObject(v)) return v;
  const { vectors, ...rest } = v;
  const asObject = vectors === 'object';
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

function metricRecord(m: PerceptionMetric): JsonObject {
  return {
    capture_id: m.capture ?? null,
    annotation_id: m.annotation ?? null,
    sequence_id: m.sequence ?? null,
    step: m.step,
    metric_definition: m.definition,
    values: m.values,
    ...m.extra,
  };
}
