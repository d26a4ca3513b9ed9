/**
 * Writes a run as Unity Perception's legacy dataset, the way its writer emits it: a `Dataset/` folder
 * of JSON tables with a root `"version"`, captures and metrics in files of at most 150 records, and
 * the files they name copied beside it. Unlike Unity's writer, which writes the definitions only when
 * the run ends (so a crashed run has none, Unity issue #470), the definitions are written first and
 * again at the end: an interrupted export is still a readable dataset.
 */
import { join } from 'node:path';
import type { JsonObject, JsonValue } from '../../model/json.js';
import {
  sourceIds,
  type AnnotationDefinition,
  type IdNamespace,
  type MetricDefinition,
  type PerceptionAnnotation,
  type PerceptionCapture,
  type PerceptionMetric,
} from '../../model/perception.js';
import type { RunSource } from '../../model/run-ports.js';
import { loadDataset, type LoadedDataset } from '../common/labelled-images/perception-run.js';
import { box3dRecord } from '../common/labelled-images/boxes-3d.js';
import {
  copyAttachments,
  requireEmptyTarget,
  writeFileAtomic,
} from '../common/labelled-images/dataset-files.js';
import {
  isObject,
  toUnityRotation,
  toUnityVector,
  type Warn,
} from '../common/labelled-images/source-values.js';
import {
  labelSpec,
  legacyAnnotationDefinition,
  legacyMetricDefinition,
  legacyMetricValues,
  legacyValue,
  metricKind,
  SOLO_ANNOTATION_KEYS,
} from '../common/labelled-images/value-shapes.js';

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

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

export async function exportPerception(
  source: RunSource,
  dir: string,
  options: ExportOptions,
): Promise<ExportResult> {
  const dataset = await loadDataset(source, options.warn);
  await requireEmptyTarget(dir, 'a Perception export');
  const shapes = legacyShapes(dataset);
  const datasetDir = join(dir, 'Dataset');
  const version = dataset.info.version ?? DEFAULT_SCHEMA_VERSION;
  const jsonFiles: string[] = [];
  const writeTable = async (file: string, table: string, rows: JsonValue[]): Promise<void> => {
    await writeFileAtomic(join(datasetDir, file), json({ version, [table]: rows }));
    if (!jsonFiles.includes(file)) jsonFiles.push(file);
  };
  const writeDefinitions = async (): Promise<void> => {
    const { id } = shapes;
    await writeTable(
      'egos.json',
      'egos',
      dataset.egos.map((e) => ({ id: id('ego', e.id), description: e.description, ...e.extra })),
    );
    // Only what the source declared: a sensor only captures named stays undeclared (a warning on import).
    await writeTable(
      'sensors.json',
      'sensors',
      dataset.sensors
        .filter((s) => s.declared !== false)
        .map((s) => ({
          id: id('sensor', s.id),
          ...(s.ego === null ? {} : { ego_id: id('ego', s.ego) }),
          modality: s.modality,
          description: s.description,
          ...(shapes.solo ? {} : s.extra),
        })),
    );
    // The writer skips these two when empty.
    if (shapes.annotationDefinitions.length)
      await writeTable(
        'annotation_definitions.json',
        'annotation_definitions',
        shapes.annotationDefinitions.map((d) => ({
          id: id('annotation_definition', d.id),
          name: d.name,
          description: d.description,
          format: d.format,
          ...(d.spec === undefined ? {} : { spec: d.spec }),
          ...d.extra,
        })),
      );
    if (shapes.metricDefinitions.length)
      await writeTable(
        'metric_definitions.json',
        'metric_definitions',
        shapes.metricDefinitions.map((d) => ({
          id: id('metric_definition', d.id),
          name: d.name,
          description: d.description,
          ...(d.spec === undefined ? {} : { spec: d.spec }),
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
      source,
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
      chunk.map((c) => captureRecord(c, dataset, shapes)),
    );
    options.onProgress?.(Math.min(i + RECORDS_PER_FILE, total), total);
  }
  for (let i = 0, index = 0; i < dataset.metrics.length; i += RECORDS_PER_FILE, index++)
    await writeTable(
      `metrics_${String(index).padStart(3, '0')}.json`,
      'metrics',
      dataset.metrics.slice(i, i + RECORDS_PER_FILE).map((m) => metricRecord(m, shapes)),
    );
  await writeDefinitions();
  return { captures: total, metrics: dataset.metrics.length, files, jsonFiles };
}

const sub = (extra: JsonObject | undefined, key: string): JsonObject =>
  isObject(extra?.[key]) ? extra[key] : {};

/**
 * What the legacy tables are written from: the definitions in legacy shape, ids typed as the source
 * typed them, and whether the values came from SOLO and need converting (value-shapes.ts).
 */
interface LegacyShapes {
  solo: boolean;
  id: (namespace: IdNamespace, id: string) => string | number;
  annotationDefinitions: AnnotationDefinition[];
  metricDefinitions: MetricDefinition[];
  metricDefinition: Map<string, MetricDefinition>;
}

function legacyShapes(dataset: LoadedDataset): LegacyShapes {
  const solo = dataset.info.layout === 'solo';
  const labels = labelSpec(dataset.annotationDefinitions);
  return {
    solo,
    id: sourceIds(dataset.info),
    annotationDefinitions: solo
      ? dataset.annotationDefinitions.map(legacyAnnotationDefinition)
      : dataset.annotationDefinitions,
    metricDefinitions: solo
      ? dataset.metricDefinitions.map((d) => legacyMetricDefinition(d, labels))
      : dataset.metricDefinitions,
    metricDefinition: new Map(dataset.metricDefinitions.map((d) => [d.id, d] as const)),
  };
}

/** Capture fields SOLO has and the legacy layout does not (the sensor's `@type`, its description). */
const SOLO_CAPTURE_KEYS = ['@type', 'description'];

const without = (o: JsonObject, keys: readonly string[]): JsonObject =>
  Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));

function captureRecord(c: PerceptionCapture, dataset: LoadedDataset, shapes: LegacyShapes): JsonObject {
  const { id } = shapes;
  const sensor = dataset.sensors.find((s) => s.id === c.sensor);
  const egoId = c.ego?.id ?? sensor?.ego ?? null;
  const sensorBlock: JsonObject = {
    sensor_id: id('sensor', c.sensor),
    ego_id: egoId === null ? null : id('ego', egoId),
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
          ego_id: id('ego', c.ego.id),
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
  if (c.annotations.length) record.annotations = c.annotations.map((a) => annotationRecord(a, shapes));
  const captureExtra = sub(c.extra, 'capture');
  return { ...record, ...(shapes.solo ? without(captureExtra, SOLO_CAPTURE_KEYS) : captureExtra) };
}

function annotationRecord(a: PerceptionAnnotation, shapes: LegacyShapes): JsonObject {
  const record: JsonObject = {
    id: a.id,
    annotation_definition: shapes.id('annotation_definition', a.definition),
  };
  if (a.file !== undefined) record.filename = a.file;
  if (a.values !== undefined) {
    // SOLO's 3D boxes become the objects the legacy writer emits (JsonUtility's Vector3).
    const values = a.kind === 'bbox3d' ? a.values.map((v) => box3dRecord(v, shapes.solo)) : a.values;
    record.values = shapes.solo ? values.map((v) => legacyValue(a.kind, v, a.extra?.templateId)) : values;
  }
  return { ...record, ...(shapes.solo ? without(a.extra ?? {}, SOLO_ANNOTATION_KEYS) : a.extra) };
}

function metricRecord(m: PerceptionMetric, shapes: LegacyShapes): JsonObject {
  const record: JsonObject = {
    capture_id: m.capture ?? null,
    annotation_id: m.annotation ?? null,
    sequence_id: m.sequence ?? null,
    step: m.step,
    metric_definition: shapes.id('metric_definition', m.definition),
    values: m.values,
  };
  if (!shapes.solo) return { ...record, ...m.extra };
  const def = shapes.metricDefinition.get(m.definition);
  record.values = legacyMetricValues(metricKind(def), def, m.values);
  return { ...record, ...without(m.extra ?? {}, ['@type', 'description']) };
}
