/**
 * Writes a run as Unity Perception's SOLO dataset, the layout pysolotools reads: `metadata.json`,
 * `sensor_definitions.json`, `annotation_definitions.json`, `metric_definitions.json` and one
 * `sequence.N/stepM.frame_data.json` per step with the step's files beside it. A run read from SOLO
 * is written back as it came (its `@type`s, file names, frame numbers); one read from the legacy
 * layout is converted: 2D boxes to `origin`/`dimension`, values to camelCase, colours to byte arrays,
 * keypoint templates out of `spec`, sensor poses composed with their ego's into the world pose SOLO
 * records, sequences numbered in clock order. Like the legacy export, the definitions are written
 * first and again at the end.
 */
import { extname, join } from 'node:path';
import type { JsonObject, JsonValue } from '../../model/json.js';
import {
  multiplyQuaternions,
  rotateVector,
  unityProjectionFromK,
  type AnnotationDefinition,
  type MetricDefinition,
  type PerceptionAnnotation,
  type PerceptionCapture,
  type PerceptionMetric,
  type QuaternionTuple,
  type Vec3Tuple,
} from '../../model/perception.js';
import type { RunSource } from '../../model/run-ports.js';
import { canonicalPositionToUnity, canonicalQuaternionToUnity } from '../../model/units.js';
import { loadDataset, type LoadedDataset } from '../common/labelled-images/perception-run.js';
import { isObject, type Warn } from '../common/labelled-images/source-values.js';
import {
  camelCase,
  metricKind,
  renameKeys,
  SOLO_ANNOTATION_TYPES,
  soloKeypointTemplate,
  soloMetricType,
  soloMetricValues,
  soloValue,
} from '../common/labelled-images/value-shapes.js';
import { box3dRecord } from '../common/labelled-images/boxes-3d.js';
import {
  copyAttachments,
  requireEmptyTarget,
  writeFileAtomic,
} from '../common/labelled-images/dataset-files.js';

export interface SoloExportResult {
  frames: number;
  sequences: number;
  captures: number;
  metrics: number;
  files: number;
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;
const GENERIC_ANNOTATION = 'type.unity.com/unity.solo.GenericAnnotation';
const RGB_CAMERA = 'type.unity.com/unity.solo.RGBCamera';

interface Frame {
  sequence: number;
  step: number;
  frame: number;
  /** The frame's own `sequence` when it disagreed with its folder (kept from a SOLO source). */
  saidSequence?: JsonValue;
  timestamp: number;
  t: number;
  captures: PerceptionCapture[];
  metrics: PerceptionMetric[];
}

export async function exportSolo(
  source: RunSource,
  dir: string,
  options: { warn: Warn; onProgress?: (done: number, total: number) => void; signal?: AbortSignal },
): Promise<SoloExportResult> {
  const dataset = await loadDataset(source, options.warn, { name: 'a SOLO dataset', metrics: true });
  await requireEmptyTarget(dir, 'a SOLO export');
  const solo = dataset.info.layout === 'solo';
  const frames = groupFrames(dataset, solo);
  placeMetrics(dataset, frames, options.warn);
  checkIterable(frames, options.warn);

  const definitions = dataset.annotationDefinitions.map((d) => soloAnnotationDefinition(d, solo));
  const metricDefinitions = new Map(dataset.metricDefinitions.map((d) => [d.id, d] as const));
  const writeDefinitions = async (): Promise<void> => {
    await writeFileAtomic(join(dir, 'metadata.json'), json(metadata(dataset, frames)));
    await writeFileAtomic(
      join(dir, 'sensor_definitions.json'),
      json({
        sensorDefinitions: dataset.sensors
          .filter((s) => s.declared !== false)
          .map((s) => ({
            '@type': s.modality === 'camera' ? RGB_CAMERA : `type.unity.com/unity.solo.${s.modality}`,
            id: s.id,
            modality: s.modality,
            description: s.description,
            ...(solo ? s.extra : {}),
          })),
      }),
    );
    await writeFileAtomic(
      join(dir, 'annotation_definitions.json'),
      json({ annotationDefinitions: definitions }),
    );
    await writeFileAtomic(
      join(dir, 'metric_definitions.json'),
      json({
        metricDefinitions: dataset.metricDefinitions.map((d) => ({
          '@type': soloMetricType(d),
          id: d.id,
          description: d.description,
          ...(d.spec === undefined ? {} : { spec: d.spec }),
          ...(solo ? withoutKeys(d.extra, ['@type']) : {}),
        })),
      }),
    );
  };
  await writeDefinitions();

  const definitionOf = new Map(dataset.annotationDefinitions.map((d) => [d.id, d] as const));
  const annotationOwner = new Map<string, PerceptionAnnotation>();
  for (const c of dataset.captures) for (const a of c.annotations) annotationOwner.set(a.id, a);
  let files = 0;
  for (const [i, frame] of frames.entries()) {
    options.signal?.throwIfAborted();
    const folder = `sequence.${frame.sequence}`;
    const names = new Map<string, string>();
    const fileName = (attachment: string, fallback: string): string => {
      // A name already in its sequence folder (read from SOLO) stays; others get SOLO's naming.
      const inFolder = attachment.startsWith(`${folder}/`) ? attachment.slice(folder.length + 1) : undefined;
      const name = inFolder && !inFolder.includes('/') ? inFolder : `${fallback}${extname(attachment)}`;
      names.set(attachment, name);
      return name;
    };
    const record: JsonObject = {
      frame: frame.frame,
      sequence: frame.saidSequence ?? frame.sequence,
      step: frame.step,
      timestamp: frame.timestamp,
      captures: frame.captures.map((c) =>
        captureRecord(c, dataset, definitionOf, solo, fileName, frame.step),
      ),
      metrics: frame.metrics.map((m) => metricRecord(m, dataset, metricDefinitions, annotationOwner, solo)),
    };
    files += await copyAttachments(
      source,
      names.keys(),
      (name) => join(dir, folder, names.get(name)!),
      options.warn,
    );
    await writeFileAtomic(join(dir, folder, `step${frame.step}.frame_data.json`), json(record));
    options.onProgress?.(i + 1, frames.length);
  }
  await writeDefinitions();
  return {
    frames: frames.length,
    sequences: new Set(frames.map((f) => f.sequence)).size,
    captures: dataset.captures.length,
    metrics: dataset.metrics.length,
    files,
  };
}

const withoutKeys = (o: JsonObject | undefined, keys: readonly string[]): JsonObject =>
  Object.fromEntries(Object.entries(o ?? {}).filter(([k]) => !keys.includes(k)));

/**
 * Captures grouped by sequence and step, in clock order. A SOLO source's sequences keep their numbers
 * (its folder names); a legacy source's GUIDs are numbered 0, 1, ... in the order they were recorded.
 */
function groupFrames(dataset: LoadedDataset, solo: boolean): Frame[] {
  const order = dataset.info.sequences;
  const numeric = solo && order.every((s) => /^\d+$/.test(s));
  const number = new Map(order.map((s, i) => [s, numeric ? Number(s) : i] as const));
  const frames = new Map<string, Frame>();
  for (const c of dataset.captures) {
    if (!number.has(c.sequence)) number.set(c.sequence, number.size);
    const key = `${c.sequence}\0${c.step}`;
    let frame = frames.get(key);
    if (!frame) {
      const info = isObject(c.extra?.frame) ? c.extra.frame : {};
      frame = {
        sequence: number.get(c.sequence)!,
        step: c.step,
        frame: typeof info.frame === 'number' ? info.frame : frames.size,
        timestamp: c.timestamp,
        t: c.t,
        captures: [],
        metrics: [],
      };
      if (info.sequence !== undefined) frame.saidSequence = info.sequence;
      frames.set(key, frame);
    }
    frame.captures.push(c);
  }
  return [...frames.values()].sort((a, b) => a.t - b.t || a.sequence - b.sequence || a.step - b.step);
}

/** Each metric goes into the frame of its capture, else of its sequence and step, else the last frame before it. */
function placeMetrics(dataset: LoadedDataset, frames: Frame[], warn: Warn): void {
  const byCapture = new Map<string, Frame>();
  for (const f of frames) for (const c of f.captures) byCapture.set(c.id, f);
  const byStep = new Map<string, Frame>();
  for (const f of frames) for (const c of f.captures) byStep.set(`${c.sequence}\0${c.step}`, f);
  let moved = 0;
  for (const m of dataset.metrics) {
    let frame =
      (m.capture !== undefined ? byCapture.get(m.capture) : undefined) ??
      (m.sequence !== undefined ? byStep.get(`${m.sequence}\0${m.step}`) : undefined);
    if (!frame) {
      moved++;
      frame = frames.filter((f) => f.t <= m.t).at(-1) ?? frames[0];
    }
    frame?.metrics.push(m);
  }
  if (moved)
    warn(
      `run ${dataset.run.id}`,
      `${moved} metrics name no capture or step that was recorded; each is written in the last frame before its time`,
    );
}

/**
 * pysolotools' FramesIterator finds frame i at sequence i // (totalFrames / totalSequences), step
 * i % that: it reads only datasets whose sequences all have the same number of steps, numbered from
 * 0 (the mock's steps start at 1). Such a dataset is still written as it is, with a warning.
 */
function checkIterable(frames: Frame[], warn: Warn): void {
  const steps = new Map<number, number[]>();
  for (const f of frames) steps.set(f.sequence, [...(steps.get(f.sequence) ?? []), f.step]);
  const lengths = new Set([...steps.values()].map((s) => s.length));
  const sequences = [...steps.keys()].sort((a, b) => a - b);
  const regular =
    lengths.size <= 1 &&
    sequences.every((s, i) => s === i) &&
    [...steps.values()].every((s) =>
      s
        .slice()
        .sort((a, b) => a - b)
        .every((step, i) => step === i),
    );
  if (!regular)
    warn(
      'metadata.json',
      "the sequences are not numbered 0..n-1 with steps 0..k-1 of equal length; pysolotools' FramesIterator, which assumes so, will not find every frame (Unity issue #550)",
    );
}

function metadata(dataset: LoadedDataset, frames: Frame[]): JsonObject {
  const source = dataset.info.metadata ?? {};
  const types = new Map(dataset.annotationDefinitions.map((d) => [d.id, soloType(d)] as const));
  return {
    unityVersion: 'unknown',
    perceptionVersion: dataset.info.version ?? 'unknown',
    ...source,
    totalFrames: frames.length,
    totalSequences: new Set(frames.map((f) => f.sequence)).size,
    sensors: dataset.sensors.filter((s) => s.declared !== false).map((s) => s.id),
    metricCollectors: dataset.metricDefinitions.map((d) => d.id),
    annotators:
      isObject(source) && Array.isArray(source.annotators)
        ? source.annotators
        : dataset.annotationDefinitions.map((d) => ({ name: d.id, type: types.get(d.id)! })),
    ...(source.simulationStartTime === undefined
      ? { simulationStartTime: new Date(dataset.run.begin / 1000).toISOString() }
      : {}),
    ...(source.simulationEndTime === undefined && dataset.run.end !== undefined && dataset.run.end !== null
      ? { simulationEndTime: new Date(dataset.run.end / 1000).toISOString() }
      : {}),
  };
}

const soloType = (d: AnnotationDefinition): string =>
  typeof d.extra?.['@type'] === 'string'
    ? d.extra['@type']
    : (SOLO_ANNOTATION_TYPES[d.kind] ?? GENERIC_ANNOTATION);

function soloAnnotationDefinition(d: AnnotationDefinition, solo: boolean): JsonObject {
  const record: JsonObject = { '@type': soloType(d), id: d.id, description: d.description };
  if (solo)
    return {
      ...record,
      ...(d.spec === undefined ? {} : { spec: d.spec }),
      ...withoutKeys(d.extra, ['@type']),
    };
  const template =
    d.kind === 'keypoints'
      ? (d.spec ?? []).find((s) => isObject(s) && Array.isArray(s.key_points))
      : undefined;
  if (isObject(template)) record.template = soloKeypointTemplate(template);
  else if (d.spec !== undefined) record.spec = d.spec;
  return record;
}

// ---- poses ---------------------------------------------------------------------------------------

const toUnityVector = (v: Vec3Tuple): number[] => {
  const u = canonicalPositionToUnity({ x: v[0], y: v[1], z: v[2] });
  return [u.x, u.y, u.z];
};
const toUnityRotation = (q: QuaternionTuple): number[] => {
  const u = canonicalQuaternionToUnity({ x: q[0], y: q[1], z: q[2], w: q[3] });
  return [u.x, u.y, u.z, u.w];
};

/** SOLO records a sensor's world pose; the legacy layout its pose on its ego, and the ego's. */
function worldPose(c: PerceptionCapture, solo: boolean): { position: Vec3Tuple; rotation: QuaternionTuple } {
  const sensor = c.sensorPose ?? {
    position: [0, 0, 0] as Vec3Tuple,
    rotation: [0, 0, 0, 1] as QuaternionTuple,
  };
  if (solo || !c.ego) return sensor;
  const { position, rotation } = c.ego.pose;
  const offset = rotateVector(rotation, sensor.position);
  return {
    position: [position[0] + offset[0], position[1] + offset[1], position[2] + offset[2]],
    rotation: multiplyQuaternions(rotation, sensor.rotation),
  };
}

// ---- records ---------------------------------------------------------------------------------------

const imageFormat = (format: string | undefined, name: string | undefined): string => {
  const f = (format ?? extname(name ?? '').slice(1) ?? 'png').toLowerCase() || 'png';
  return f[0]!.toUpperCase() + f.slice(1);
};

function captureRecord(
  c: PerceptionCapture,
  dataset: LoadedDataset,
  definitions: ReadonlyMap<string, AnnotationDefinition>,
  solo: boolean,
  fileName: (attachment: string, fallback: string) => string,
  step: number,
): JsonObject {
  const sensor = dataset.sensors.find((s) => s.id === c.sensor);
  const extra = isObject(c.extra?.capture) ? c.extra.capture : {};
  const pose = worldPose(c, solo);
  const zero = [0, 0, 0];
  const velocity = c.sensorVelocity ?? (solo ? undefined : c.ego?.velocity);
  const acceleration = c.sensorAcceleration ?? (solo ? undefined : c.ego?.acceleration);
  const intrinsics = c.intrinsics;
  const columns =
    intrinsics?.unityProjection ??
    (intrinsics?.K && c.imageSize ? unityProjectionFromK(intrinsics.K, c.imageSize) : undefined);
  const record: JsonObject = {
    '@type':
      sensor?.modality === 'camera' || sensor === undefined
        ? RGB_CAMERA
        : `type.unity.com/unity.solo.${sensor.modality}`,
    id: c.sensor,
    description: sensor?.description ?? '',
    position: toUnityVector(pose.position),
    rotation: toUnityRotation(pose.rotation),
    velocity: velocity ? toUnityVector(velocity) : zero,
    acceleration: acceleration ? toUnityVector(acceleration) : zero,
  };
  if (c.file !== undefined) record.filename = fileName(c.file, `step${step}.${c.sensor}`);
  record.imageFormat = imageFormat(c.format, c.file);
  record.dimension = c.imageSize ? [c.imageSize.width, c.imageSize.height] : [0, 0];
  record.projection = intrinsics?.projection === 'orthographic' ? 'Orthographic' : 'Perspective';
  record.matrix = columns ? columns.flat() : [];
  record.annotations = c.annotations.map((a) =>
    annotationRecord(a, c, definitions.get(a.definition), solo, fileName, step),
  );
  return { ...record, ...extra };
}

function annotationRecord(
  a: PerceptionAnnotation,
  c: PerceptionCapture,
  def: AnnotationDefinition | undefined,
  solo: boolean,
  fileName: (attachment: string, fallback: string) => string,
  step: number,
): JsonObject {
  const extra = a.extra ?? {};
  const valuesKey =
    extra.valuesKey === 'instances' ||
    a.kind === 'instance_segmentation' ||
    a.kind === 'semantic_segmentation'
      ? 'instances'
      : 'values';
  const record: JsonObject = {
    '@type': def ? soloType(def) : (SOLO_ANNOTATION_TYPES[a.kind] ?? GENERIC_ANNOTATION),
    id: a.definition,
    sensorId: c.sensor,
    description: def?.description ?? '',
  };
  if (a.file !== undefined) {
    record.imageFormat = imageFormat(undefined, a.file);
    record.dimension = c.imageSize ? [c.imageSize.width, c.imageSize.height] : [0, 0];
    record.filename = fileName(a.file, `step${step}.${c.sensor}.${a.definition}`);
  }
  if (a.kind === 'keypoints' && !solo) {
    const first = a.values?.find(isObject);
    if (first?.template_guid !== undefined) record.templateId = first.template_guid;
  }
  if (a.values !== undefined) record[valuesKey] = a.values.map((v) => soloAnnotationValue(a, v));
  const kept = solo ? withoutKeys(extra, ['valuesKey']) : {};
  return { ...record, ...kept };
}

/** A value as SOLO writes it: 2D boxes at `origin`/`dimension`, 3D boxes as Unity arrays, camelCase. */
function soloAnnotationValue(a: PerceptionAnnotation, v: JsonValue): JsonValue {
  if (!isObject(v)) return v;
  if (a.kind === 'bbox2d') {
    const { x, y, width, height, ...rest } = v;
    return {
      ...(renameKeys(rest, camelCase) as JsonObject),
      origin: [x ?? 0, y ?? 0],
      dimension: [width ?? 0, height ?? 0],
    };
  }
  if (a.kind === 'bbox3d') return renameKeys(box3dRecord(v), camelCase);
  return soloValue(a.kind, v);
}

function metricRecord(
  m: PerceptionMetric,
  dataset: LoadedDataset,
  definitions: ReadonlyMap<string, MetricDefinition>,
  annotations: ReadonlyMap<string, PerceptionAnnotation>,
  solo: boolean,
): JsonObject {
  const def = definitions.get(m.definition);
  const capture = m.capture === undefined ? undefined : dataset.captures.find((c) => c.id === m.capture);
  const annotation = m.annotation === undefined ? undefined : annotations.get(m.annotation);
  const record: JsonObject = {
    '@type': soloMetricType(def),
    id: m.definition,
    sensorId: capture?.sensor ?? '',
    annotationId: annotation?.definition ?? (solo ? (m.annotation ?? '') : ''),
    description: def?.description ?? '',
  };
  const values = solo
    ? Array.isArray(m.values)
      ? { values: m.values }
      : { value: m.values }
    : soloMetricValues(metricKind(def), m.values);
  return { ...record, ...values, ...(solo ? m.extra : {}) };
}
