/**
 * Unity Perception's model (sensors, captures, annotations, metrics and their definitions) and how it
 * is kept in a run without a port of its own: sensors and egos are actors, captures are one stream per
 * sensor, metrics a run-level stream, definitions a JSON attachment, image files attachments.
 *
 * Everything here is canonical (docs/architecture.md): positions in metres, right-handed, z up; quaternions
 * (x, y, z, w); time in microseconds on the run's clock. The source's own time stamp (seconds since
 * its sequence began) and ids are kept beside it, so an exporter can write the source back.
 */
import type { ActorDecl, ActorInfo } from './run.js';
import { describeValue, invalid } from './errors.js';
import type { JsonObject, JsonValue } from './json.js';
import type { FieldDecl, Sample, StreamDecl } from './stream.js';

export type Vec3Tuple = [number, number, number];
/** (x, y, z, w). */
export type QuaternionTuple = [number, number, number, number];

export interface Pose {
  position: Vec3Tuple;
  rotation: QuaternionTuple;
}

/** The rotation `a` then `b` in `a`'s frame (the Hamilton product a * b), quaternions x, y, z, w. */
export function multiplyQuaternions(a: QuaternionTuple, b: QuaternionTuple): QuaternionTuple {
  const [ax, ay, az, aw] = a;
  const [bx, by, bz, bw] = b;
  return [
    aw * bx + ax * bw + ay * bz - az * by,
    aw * by - ax * bz + ay * bw + az * bx,
    aw * bz + ax * by - ay * bx + az * bw,
    aw * bw - ax * bx - ay * by - az * bz,
  ];
}

/** `v` rotated by the unit quaternion `q`. */
export function rotateVector(q: QuaternionTuple, v: Vec3Tuple): Vec3Tuple {
  const [x, y, z] = multiplyQuaternions(multiplyQuaternions(q, [v[0], v[1], v[2], 0]), [
    -q[0],
    -q[1],
    -q[2],
    q[3],
  ]);
  return [x, y, z];
}

export interface ImageSize {
  width: number;
  height: number;
}

export const PROJECTIONS = ['perspective', 'orthographic'] as const;
export type Projection = (typeof PROJECTIONS)[number];

export interface CameraIntrinsics {
  projection: Projection;
  /**
   * The pixel camera matrix, row-major [[fx, 0, cx], [0, fy, cy], [0, 0, 1]], for an image with y down.
   * Null when it cannot be known: an orthographic camera, no image size, or a source matrix that is not
   * a projection.
   */
  K: number[][] | null;
  /**
   * Unity's legacy `camera_intrinsic` as written: the top-left 3x3 of the projection matrix, as three
   * column arrays (Unity issue #388: it is not K). Kept so that an export writes it back unchanged.
   */
  unityProjection?: number[][];
}

export const ANNOTATION_KINDS = [
  'bbox2d',
  'bbox3d',
  'semantic_segmentation',
  'instance_segmentation',
  'keypoints',
  'generic',
] as const;
export type AnnotationKind = (typeof ANNOTATION_KINDS)[number];

export interface AnnotationDefinition {
  id: string;
  name: string;
  description: string;
  /** The file format of its annotation files (PNG, PCD) or JSON for values only. */
  format: string;
  kind: AnnotationKind;
  /** Absent when the source has none (an export must not add `"spec": []`). */
  spec?: JsonValue[];
  /** Fields of the source the model has no name for, kept as they came. */
  extra?: JsonObject;
}

export interface MetricDefinition {
  id: string;
  name: string;
  description: string;
  spec?: JsonValue[];
  extra?: JsonObject;
}

/**
 * An annotation of one capture. Values of a 2D box are pixels, `{instance_id, label_id, label_name,
 * x, y, width, height}` (SOLO's origin/dimension are converted to this). Values of a 3D box are in the
 * sensor's frame, canonical: `translation`, `size` (along canonical x, y, z), `rotation` (x, y, z, w),
 * `velocity`, `acceleration`, all arrays. Other kinds keep the source's values.
 */
export interface PerceptionAnnotation {
  id: string;
  definition: string;
  kind: AnnotationKind;
  /** Attachment name of its file (a segmentation image, a point cloud), if it has one. */
  file?: string;
  values?: JsonValue[];
  extra?: JsonObject;
}

export interface EgoState {
  id: string;
  pose: Pose;
  velocity?: Vec3Tuple;
  acceleration?: Vec3Tuple;
}

export interface PerceptionCapture {
  id: string;
  /** The sensor's Perception id (not its actor id, which may differ: see sensorActorId). */
  sensor: string;
  sequence: string;
  step: number;
  /** Microseconds on the run's clock; sequences are laid end to end. */
  t: number;
  /** The source's time stamp: seconds since its sequence began (float in real data, int in the mock). */
  timestamp: number;
  ego?: EgoState;
  /** The sensor relative to its ego (legacy) or in the world (SOLO). */
  sensorPose?: Pose;
  sensorVelocity?: Vec3Tuple;
  sensorAcceleration?: Vec3Tuple;
  intrinsics?: CameraIntrinsics;
  /** Attachment name of the captured file. */
  file?: string;
  /** PNG, JPG, PCD... as the source names it. */
  format?: string;
  imageSize?: ImageSize;
  annotations: PerceptionAnnotation[];
  /** Source fields the model has no name for: `{capture: {...}, sensor: {...}, ego: {...}}`. */
  extra?: JsonObject;
}

export interface PerceptionSensor {
  id: string;
  /**
   * False for a sensor no table declares, known only because captures name it (the mock's sensor 1):
   * its captures need a stream, so it is kept in the run, but an export does not declare it either.
   */
  declared?: boolean;
  modality: string;
  /** The ego's Perception id, null for a sensor on no ego (SOLO). */
  ego: string | null;
  description: string;
  /** Where it is mounted on its ego (legacy) or its first world pose (SOLO). */
  mount?: Pose;
  intrinsics?: CameraIntrinsics;
  imageSize?: ImageSize;
  extra?: JsonObject;
}

export interface PerceptionEgo {
  id: string;
  description: string;
  extra?: JsonObject;
}

export const METRIC_LEVELS = ['run', 'capture', 'annotation'] as const;
export type MetricLevel = (typeof METRIC_LEVELS)[number];

export interface PerceptionMetric {
  definition: string;
  capture?: string;
  annotation?: string;
  sequence?: string;
  step: number;
  t: number;
  /** An array of records (object counts...) or one scalar (SOLO's GenericMetric). */
  values: JsonValue;
  extra?: JsonObject;
}

export const metricLevel = (m: PerceptionMetric): MetricLevel =>
  m.annotation !== undefined ? 'annotation' : m.capture !== undefined ? 'capture' : 'run';

/** What a dataset says about itself: the schema version, the writer, SOLO's metadata.json. */
export interface PerceptionDatasetInfo {
  /** `perception` (legacy JSON) or `solo`. */
  layout: 'perception' | 'solo';
  /** The legacy root `"version"`; SOLO has none. */
  version?: string;
  /** Sequence ids in the order they are laid on the run's clock. */
  sequences: string[];
  /** SOLO's metadata.json, or anything else the source says about the dataset. */
  metadata?: JsonObject;
  /**
   * The model keeps ids as strings; these were JSON integers in the source (the mock's definition
   * ids, sensor 1, ego 1), so that an export writes them back as integers: datasetinsights compares
   * ids with `==`, and `filter(1)` finds nothing in `"1"`.
   */
  integerIds?: Partial<Record<IdNamespace, string[]>>;
}

export const ID_NAMESPACES = ['sensor', 'ego', 'annotation_definition', 'metric_definition'] as const;
export type IdNamespace = (typeof ID_NAMESPACES)[number];

/** Model ids as their source typed them: an integer if it was one there. */
export function sourceIds(
  info: PerceptionDatasetInfo,
): (namespace: IdNamespace, id: string) => string | number {
  const sets = new Map(ID_NAMESPACES.map((n) => [n, new Set(info.integerIds?.[n] ?? [])] as const));
  return (namespace, id) => (sets.get(namespace)!.has(id) ? Number(id) : id);
}

// ---- how it is kept in a run ----------------------------------------------------------------------

export const SENSOR_ACTOR_KIND = 'sensor';
/** The attribute a sensor declared live (ingest's `sensors`) keeps its declaration in. */
export const LIVE_SENSOR_ATTRIBUTE = 'sensor';
export const EGO_ACTOR_KIND = 'ego';
export const CAPTURES_STREAM = 'captures';
export const METRICS_STREAM = 'perception.metrics';
export const DEFINITIONS_ATTACHMENT = 'perception/definitions.json';
export const DEFINITIONS_MEDIA_TYPE = 'application/vnd.simrec.perception-definitions+json';
/** Run metadata key under which PerceptionDatasetInfo is kept. */
export const RUN_METADATA_KEY = 'perception';

/**
 * Actor ids are unique in a run, while Perception's ego and sensor ids are separate namespaces (the mock
 * has ego 1 and sensor 1). Egos keep their id; a sensor whose id is taken gets a prefix.
 */
export function sensorActorId(sensorId: string, egoIds: ReadonlySet<string>): string {
  return egoIds.has(sensorId) ? `sensor:${sensorId}` : sensorId;
}

export function sensorToActor(sensor: PerceptionSensor, egoIds: ReadonlySet<string>): ActorDecl {
  return {
    id: sensorActorId(sensor.id, egoIds),
    kind: SENSOR_ACTOR_KIND,
    sourceClass: sensor.modality,
    attributes: { perception: sensor as unknown as JsonObject },
  };
}

export function egoToActor(ego: PerceptionEgo): ActorDecl {
  return { id: ego.id, kind: EGO_ACTOR_KIND, attributes: { perception: ego as unknown as JsonObject } };
}

/** The Perception sensor an actor holds, or undefined for actors that are not Perception sensors. */
export function actorToSensor(actor: ActorInfo): PerceptionSensor | undefined {
  const p = actor.attributes.perception;
  if (actor.kind !== SENSOR_ACTOR_KIND || typeof p !== 'object' || p === null || Array.isArray(p))
    return undefined;
  return p as unknown as PerceptionSensor;
}

export function actorToEgo(actor: ActorInfo): PerceptionEgo | undefined {
  const p = actor.attributes.perception;
  if (actor.kind !== EGO_ACTOR_KIND || typeof p !== 'object' || p === null || Array.isArray(p))
    return undefined;
  return p as unknown as PerceptionEgo;
}

const opt = (name: string, type: FieldDecl['type'], extra: Partial<FieldDecl> = {}): FieldDecl => ({
  name,
  type,
  optional: true,
  ...extra,
});
const vec = (name: string, length: number, unit?: string): FieldDecl =>
  opt(name, 'vec', unit === undefined ? { length } : { length, unit });

export const CAPTURE_FIELDS: FieldDecl[] = [
  { name: 'id', type: 'string' },
  { name: 'sequence', type: 'string' },
  { name: 'timestamp', type: 'f64', unit: 's', description: 'since the sequence began, as the source says' },
  opt('ego_id', 'string'),
  vec('ego_position', 3, 'm'),
  vec('ego_rotation', 4),
  vec('ego_velocity', 3, 'm/s'),
  vec('ego_acceleration', 3, 'm/s^2'),
  vec('sensor_position', 3, 'm'),
  vec('sensor_rotation', 4),
  vec('sensor_velocity', 3, 'm/s'),
  vec('sensor_acceleration', 3, 'm/s^2'),
  opt('intrinsics', 'json'),
  opt('file', 'string', { description: 'attachment name' }),
  opt('format', 'string'),
  opt('width', 'i32', { unit: 'px' }),
  opt('height', 'i32', { unit: 'px' }),
  { name: 'annotations', type: 'json' },
  opt('extra', 'json'),
];

/**
 * The attachment a `captures` sample's image is kept as: `file` in an imported dataset's captures
 * (CAPTURE_FIELDS), `name` in a camera's recorded live (ingest's `capture`).
 */
export function captureImageName(sample: Sample): string | undefined {
  if (typeof sample.file === 'string') return sample.file;
  return typeof sample.name === 'string' ? sample.name : undefined;
}

export const capturesStreamDecl = (actorId: string): StreamDecl => ({
  actor: actorId,
  name: CAPTURES_STREAM,
  fields: CAPTURE_FIELDS,
  metadata: { model: 'perception.capture', frame: 'canonical: right-handed, z up, quaternions x,y,z,w' },
});

export const METRIC_FIELDS: FieldDecl[] = [
  { name: 'definition', type: 'string' },
  { name: 'level', type: 'string', description: 'run, capture or annotation' },
  opt('capture', 'string'),
  opt('annotation', 'string'),
  opt('sequence', 'string'),
  { name: 'values', type: 'json' },
  opt('extra', 'json'),
];

export const metricsStreamDecl = (): StreamDecl => ({
  name: METRICS_STREAM,
  fields: METRIC_FIELDS,
  metadata: { model: 'perception.metric' },
});

function setIf(sample: Record<string, unknown>, key: string, value: unknown): void {
  if (value !== undefined) sample[key] = value;
}

export function captureToSample(c: PerceptionCapture): Sample {
  const s: Sample = { t: c.t, step: c.step, id: c.id, sequence: c.sequence, timestamp: c.timestamp };
  if (c.ego) {
    s.ego_id = c.ego.id;
    s.ego_position = c.ego.pose.position;
    s.ego_rotation = c.ego.pose.rotation;
    setIf(s, 'ego_velocity', c.ego.velocity);
    setIf(s, 'ego_acceleration', c.ego.acceleration);
  }
  setIf(s, 'sensor_position', c.sensorPose?.position);
  setIf(s, 'sensor_rotation', c.sensorPose?.rotation);
  setIf(s, 'sensor_velocity', c.sensorVelocity);
  setIf(s, 'sensor_acceleration', c.sensorAcceleration);
  setIf(s, 'intrinsics', c.intrinsics);
  setIf(s, 'file', c.file);
  setIf(s, 'format', c.format);
  setIf(s, 'width', c.imageSize?.width);
  setIf(s, 'height', c.imageSize?.height);
  s.annotations = c.annotations;
  setIf(s, 'extra', c.extra);
  return s;
}

const asVec = <T extends number[]>(v: unknown): T | undefined => (Array.isArray(v) ? (v as T) : undefined);

export function sampleToCapture(sensorId: string, s: Sample): PerceptionCapture {
  const c: PerceptionCapture = {
    id: String(s.id),
    sensor: sensorId,
    sequence: String(s.sequence),
    step: s.step,
    t: s.t,
    timestamp: s.timestamp as number,
    annotations: (s.annotations ?? []) as unknown as PerceptionAnnotation[],
  };
  const egoPosition = asVec<Vec3Tuple>(s.ego_position);
  const egoRotation = asVec<QuaternionTuple>(s.ego_rotation);
  if (typeof s.ego_id === 'string' && egoPosition && egoRotation) {
    c.ego = { id: s.ego_id, pose: { position: egoPosition, rotation: egoRotation } };
    const v = asVec<Vec3Tuple>(s.ego_velocity);
    const a = asVec<Vec3Tuple>(s.ego_acceleration);
    if (v) c.ego.velocity = v;
    if (a) c.ego.acceleration = a;
  }
  const sp = asVec<Vec3Tuple>(s.sensor_position);
  const sr = asVec<QuaternionTuple>(s.sensor_rotation);
  if (sp && sr) c.sensorPose = { position: sp, rotation: sr };
  const sv = asVec<Vec3Tuple>(s.sensor_velocity);
  const sa = asVec<Vec3Tuple>(s.sensor_acceleration);
  if (sv) c.sensorVelocity = sv;
  if (sa) c.sensorAcceleration = sa;
  if (s.intrinsics !== undefined && s.intrinsics !== null) c.intrinsics = s.intrinsics as CameraIntrinsics;
  if (typeof s.file === 'string') c.file = s.file;
  if (typeof s.format === 'string') c.format = s.format;
  if (typeof s.width === 'number' && typeof s.height === 'number')
    c.imageSize = { width: s.width, height: s.height };
  if (s.extra !== undefined && s.extra !== null) c.extra = s.extra as JsonObject;
  return c;
}

export function metricToSample(m: PerceptionMetric): Sample {
  const s: Sample = {
    t: m.t,
    step: m.step,
    definition: m.definition,
    level: metricLevel(m),
    values: m.values,
  };
  setIf(s, 'capture', m.capture);
  setIf(s, 'annotation', m.annotation);
  setIf(s, 'sequence', m.sequence);
  setIf(s, 'extra', m.extra);
  return s;
}

export function sampleToMetric(s: Sample): PerceptionMetric {
  const m: PerceptionMetric = {
    definition: String(s.definition),
    step: s.step,
    t: s.t,
    values: s.values as JsonValue,
  };
  if (typeof s.capture === 'string') m.capture = s.capture;
  if (typeof s.annotation === 'string') m.annotation = s.annotation;
  if (typeof s.sequence === 'string') m.sequence = s.sequence;
  if (s.extra !== undefined && s.extra !== null) m.extra = s.extra as JsonObject;
  return m;
}

// ---- definitions, boxes, intrinsics ----------------------------------------------------------------

/** The default definition ids of Perception's labelers (its writer emits GUIDs, not names). */
const KIND_BY_DEFAULT_ID: Record<string, AnnotationKind> = {
  'f9f22e05-443f-4602-a422-ebe4ea9b55cb': 'bbox2d',
  '0bfbe00d-00fa-4555-88d1-471b58449f5c': 'bbox3d',
  '12f94d8d-5425-4deb-9b21-5e53ad957d66': 'semantic_segmentation',
  '1ccebeb4-5886-41ff-8fe0-f911fa8cbcdf': 'instance_segmentation',
  '8b3ef246-daa7-4dd5-a0e8-a943f6e7f8c2': 'keypoints',
};

const KIND_BY_SOLO_TYPE: [RegExp, AnnotationKind][] = [
  [/BoundingBox2D/i, 'bbox2d'],
  [/BoundingBox3D/i, 'bbox3d'],
  [/SemanticSegmentation/i, 'semantic_segmentation'],
  [/InstanceSegmentation/i, 'instance_segmentation'],
  [/Keypoint/i, 'keypoints'],
];

/**
 * What kind of annotation a definition describes, from its default id, SOLO `@type` or name. Names are
 * what datasetinsights goes by too (`^(?:2[dD]\s)?bounding\sbox$`), with the mock's typos tolerated.
 */
export function classifyAnnotationDefinition(def: {
  id: string;
  name?: string;
  type?: string;
}): AnnotationKind {
  const byId = KIND_BY_DEFAULT_ID[def.id];
  if (byId) return byId;
  for (const [pattern, kind] of KIND_BY_SOLO_TYPE) if (def.type && pattern.test(def.type)) return kind;
  const name = (def.name ?? def.id).toLowerCase();
  if (/3d\s*bounding\s*box|bounding\s*box\s*3d/.test(name)) return 'bbox3d';
  if (/^(2d\s*)?bounding\s*box(\s*2d)?$/.test(name) || /2d\s*bounding\s*box/.test(name)) return 'bbox2d';
  if (/semantic\s*seg/.test(name)) return 'semantic_segmentation';
  if (/instance\s*seg/.test(name)) return 'instance_segmentation';
  if (/key\s*point/.test(name)) return 'keypoints';
  return 'generic';
}

export interface Box2D {
  x: number;
  y: number;
  width: number;
  height: number;
  label: string;
  labelId?: number | string;
  instanceId?: JsonValue;
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The 2D boxes of a capture, in pixels: what the viewer draws over the image and COCO/YOLO export. */
export function captureBoxes(c: Pick<PerceptionCapture, 'annotations'>): Box2D[] {
  const boxes: Box2D[] = [];
  for (const a of c.annotations) {
    if (a.kind !== 'bbox2d' || !a.values) continue;
    for (const v of a.values) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) continue;
      const { x, y, width, height } = v;
      if (!isNumber(x) || !isNumber(y) || !isNumber(width) || !isNumber(height)) continue;
      const box: Box2D = { x, y, width, height, label: String(v.label_name ?? v.label_id ?? '') };
      if (typeof v.label_id === 'number' || typeof v.label_id === 'string') box.labelId = v.label_id;
      if (v.instance_id !== undefined) box.instanceId = v.instance_id;
      boxes.push(box);
    }
  }
  return boxes;
}

/**
 * Pixel K from Unity's projection 3x3 (column arrays c0, c1, c2), for an image of the given size. With
 * m[row][col]: fx = m00 W/2, fy = m11 H/2, and the lens shift m02, m12 moves the principal point; image
 * y runs down while clip-space y runs up. Returns null (with the reason) when the matrix is not a
 * perspective projection's: the mock's is not.
 */
export function intrinsicsFromUnityProjection(
  columns: number[][],
  size: ImageSize | undefined,
): { K: number[][] | null; problem?: string } {
  const c0 = columns[0];
  const c1 = columns[1];
  const c2 = columns[2];
  if (columns.length !== 3 || !c0 || !c1 || !c2 || [c0, c1, c2].some((c) => c.length !== 3))
    return { K: null, problem: 'expected three columns of three numbers' };
  const [m00, m10, m20] = c0 as [number, number, number];
  const [m01, m11, m21] = c1 as [number, number, number];
  const [m02, m12] = c2 as [number, number, number];
  if (m10 !== 0 || m20 !== 0 || m01 !== 0 || m21 !== 0 || !(m00 > 0) || !(m11 > 0))
    return {
      K: null,
      problem: `not the top-left 3x3 of a perspective projection matrix (columns ${JSON.stringify(columns)})`,
    };
  if (!size) return { K: null };
  const { width: w, height: h } = size;
  return {
    K: [
      [(m00 * w) / 2, 0, (w / 2) * (1 - m02)],
      [0, (m11 * h) / 2, (h / 2) * (1 + m12)],
      [0, 0, 1],
    ],
  };
}

/** The inverse of intrinsicsFromUnityProjection's K, for writing a legacy `camera_intrinsic`. */
export function unityProjectionFromK(K: number[][], size: ImageSize): number[][] {
  const fx = K[0]?.[0] ?? 0;
  const cx = K[0]?.[2] ?? size.width / 2;
  const fy = K[1]?.[1] ?? 0;
  const cy = K[1]?.[2] ?? size.height / 2;
  return [
    [(2 * fx) / size.width, 0, 0],
    [0, (2 * fy) / size.height, 0],
    [1 - (2 * cx) / size.width, (2 * cy) / size.height - 1, -1],
  ];
}

export function checkImageSize(size: unknown, where: string): asserts size is ImageSize {
  const s = size as ImageSize;
  if (!Number.isInteger(s?.width) || !Number.isInteger(s?.height) || s.width <= 0 || s.height <= 0)
    throw invalid(`${where}: expected a positive integer width and height, got ${describeValue(size)}`);
}
