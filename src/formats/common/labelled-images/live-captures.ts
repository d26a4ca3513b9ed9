/**
 * A camera recorded live (ingest's `sensors` and `capture` messages) read as a Perception dataset, so
 * that its frames can be exported as COCO, YOLO, Perception or SOLO like an imported dataset's: images
 * without labels, for a labelling tool or a detector's own pass.
 *
 * Ingest keeps a sensor's declaration in its actor's `sensor` attribute and each capture as a sample
 * `{ t, step, name, mediaType, bytes }` (the image is the attachment `name`), where an imported
 * dataset keeps Perception's own sensor (`perception`) and capture fields (CAPTURE_FIELDS).
 */
import type {
  CameraIntrinsics,
  EgoState,
  ImageSize,
  PerceptionCapture,
  PerceptionEgo,
  PerceptionSensor,
  Pose,
} from '../../../model/perception.js';
import { LIVE_SENSOR_ATTRIBUTE, SENSOR_ACTOR_KIND, unityProjectionFromK } from '../../../model/perception.js';
import type { RunSource } from '../../../model/run-ports.js';
import type { ActorInfo } from '../../../model/run.js';
import { STATE_STREAM } from '../../../model/standard-streams.js';
import { numbersOf } from '../../../model/columns.js';
import { fieldsOfStream, type Sample, type StreamInfo } from '../../../model/stream.js';
import { eulerToQuaternion } from '../../../model/units.js';
import { isObject } from './source-values.js';

/** Every live capture is one sequence: a run is one continuous recording. */
const LIVE_SEQUENCE = '0';

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const positiveInteger = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0;
const numbers = (v: unknown, n: number): boolean =>
  Array.isArray(v) && v.length === n && v.every((x) => finite(x));

/**
 * The sensor an actor recorded live declares, as Perception sees one: its image size, a pinhole
 * camera's matrix from its horizontal field of view (square pixels, centred: what CARLA's cameras
 * are), where it is mounted on its actor. Undefined for an actor that is no live sensor.
 */
export function liveSensorOf(actor: ActorInfo): PerceptionSensor | undefined {
  const decl = actor.attributes[LIVE_SENSOR_ATTRIBUTE];
  if (actor.kind !== SENSOR_ACTOR_KIND || !isObject(decl) || typeof decl.modality !== 'string')
    return undefined;
  const sensor: PerceptionSensor = {
    id: actor.id,
    modality: decl.modality,
    ego: typeof decl.actor === 'string' ? decl.actor : null,
    description: `${decl.modality} ${actor.id}, recorded live`,
  };
  const mount = decl.mount;
  if (isObject(mount) && numbers(mount.position, 3) && numbers(mount.rotation, 4))
    sensor.mount = mount as unknown as Pose;
  if (positiveInteger(decl.width) && positiveInteger(decl.height)) {
    sensor.imageSize = { width: decl.width, height: decl.height };
    if (finite(decl.fov) && decl.fov > 0 && decl.fov < Math.PI)
      sensor.intrinsics = pinholeIntrinsics(sensor.imageSize, decl.fov);
  }
  return sensor;
}

function pinholeIntrinsics(size: ImageSize, horizontalFov: number): CameraIntrinsics {
  const f = size.width / 2 / Math.tan(horizontalFov / 2);
  const K = [
    [f, 0, size.width / 2],
    [0, f, size.height / 2],
    [0, 0, 1],
  ];
  // The legacy Perception writer writes Unity's own matrix (`camera_intrinsic`), not K.
  return { projection: 'perspective', K, unityProjection: unityProjectionFromK(K, size) };
}

/** The actor a live sensor is mounted on, as the dataset's ego. */
export const liveEgoOf = (actor: ActorInfo): PerceptionEgo => ({
  id: actor.id,
  description: [actor.kind, actor.sourceClass].filter(Boolean).join(' '),
});

/** Perception's name of an image's format (`format: "PNG"`), from its media type. */
function imageFormat(mediaType: unknown): string | undefined {
  if (typeof mediaType !== 'string' || !mediaType.startsWith('image/')) return undefined;
  const subtype = mediaType.slice('image/'.length);
  return subtype === 'jpeg' ? 'JPG' : subtype.toUpperCase();
}

/**
 * A live capture as a Perception capture: its image, the sensor's size, matrix and mount, the pose
 * of the actor it is mounted on at that moment (`egoAt`), no labels. Its `t` is the simulator's until
 * countFromFirstLiveCapture makes it count from the sequence's first capture.
 */
export function liveCapture(
  sensor: PerceptionSensor,
  sample: Sample,
  egoAt: (t: number) => EgoState | undefined,
): PerceptionCapture {
  const step = sample.step ?? 0;
  const file = typeof sample.name === 'string' ? sample.name : undefined;
  const capture: PerceptionCapture = {
    id: file ?? `${sensor.id}/${step}`,
    sensor: sensor.id,
    sequence: LIVE_SEQUENCE,
    step,
    t: sample.t,
    timestamp: 0,
    annotations: [],
  };
  const ego = egoAt(sample.t);
  if (ego) capture.ego = ego;
  if (sensor.mount) capture.sensorPose = sensor.mount;
  // The image's own size (ingest reads it from the header) over the declared one; the declared
  // camera matrix only for an image of the declared size.
  const size =
    positiveInteger(sample.width) && positiveInteger(sample.height)
      ? { width: sample.width, height: sample.height }
      : sensor.imageSize;
  if (size) capture.imageSize = size;
  const declared = sensor.imageSize;
  if (sensor.intrinsics && declared && size?.width === declared.width && size.height === declared.height)
    capture.intrinsics = sensor.intrinsics;
  if (file !== undefined) capture.file = file;
  const format = imageFormat(sample.mediaType);
  if (format !== undefined) capture.format = format;
  return capture;
}

/**
 * Live captures' times made to count from the first of them, as Perception's do from their
 * sequence's beginning (`timestamp` in seconds): a simulator's clock may begin anywhere.
 */
export function countFromFirstLiveCapture(
  captures: PerceptionCapture[],
  liveSensorIds: ReadonlySet<string>,
): void {
  const live = captures.filter((c) => liveSensorIds.has(c.sensor));
  let first = Infinity;
  for (const c of live) first = Math.min(first, c.t);
  for (const c of live) {
    c.t -= first;
    c.timestamp = c.t / 1e6;
  }
}

/** The state fields a capture's ego pose, velocity and acceleration are read from. */
const EGO_FIELDS = [
  'x',
  'y',
  'z',
  'roll',
  'pitch',
  'yaw',
  'vx',
  'vy',
  'vz',
  'ax',
  'ay',
  'az',
  'speed',
] as const;
type EgoValues = Record<(typeof EGO_FIELDS)[number], number>;

/**
 * Where an actor was at each moment asked, from its `state` stream: the last state at or before that
 * moment (a capture is taken at a step the state was recorded for). Moments must be asked in time
 * order. The stream is read as columns of the fields needed, not as a sample object a state: an hour
 * of an ego's states at 100 Hz is a third of a million. An actor without states gives none.
 */
export async function egoStates(
  source: RunSource,
  egoId: string,
  streams: readonly StreamInfo[],
): Promise<(t: number) => EgoState | undefined> {
  const stream = streams.find((s) => s.id === `${egoId}/${STATE_STREAM}`);
  if (!stream) return () => undefined;
  const batch = await source.columnsJoined(stream.id, { fields: EGO_FIELDS, transient: true });
  const fields = fieldsOfStream(stream);
  const columns = EGO_FIELDS.map((name) => [name, numbersOf(batch, fields, name)] as const);
  let next = 0;
  return (t) => {
    while (next < batch.t.length && batch.t[next]! <= t) next++;
    if (next === 0) return undefined;
    const values = {} as EgoValues;
    for (const [name, column] of columns) values[name] = column[next - 1]!;
    return egoState(egoId, values);
  };
}

/** Absent values are NaN (numbersOf). */
function egoState(id: string, s: EgoValues): EgoState | undefined {
  if (!finite(s.x) || !finite(s.y) || !finite(s.yaw)) return undefined;
  const q = eulerToQuaternion({
    roll: finite(s.roll) ? s.roll : 0,
    pitch: finite(s.pitch) ? s.pitch : 0,
    yaw: s.yaw,
  });
  const state: EgoState = {
    id,
    pose: { position: [s.x, s.y, finite(s.z) ? s.z : 0], rotation: [q.x, q.y, q.z, q.w] },
  };
  if (finite(s.vx) && finite(s.vy)) state.velocity = [s.vx, s.vy, finite(s.vz) ? s.vz : 0];
  // Without its vector, a state's speed is along its heading (standard-streams.ts).
  else if (finite(s.speed)) state.velocity = [s.speed * Math.cos(s.yaw), s.speed * Math.sin(s.yaw), 0];
  if (finite(s.ax) && finite(s.ay)) state.acceleration = [s.ax, s.ay, finite(s.az) ? s.az : 0];
  return state;
}
