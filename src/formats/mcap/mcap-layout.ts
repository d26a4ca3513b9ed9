import type { FieldDecl, StreamInfo } from '../../model/stream.js';
import { eulerToQuaternion, quaternionToEuler, type Quaternion } from '../../model/units.js';

/*
 * How a run is laid out in an MCAP file (docs/formats/mcap.md). Times are the run's own
 * clock (Unix time) in nanoseconds, as MCAP's logTime and in every Foxglove timestamp.
 */

/** Every present actor as a cube with its id, one SceneUpdate per recorded frame. */
export const SCENE_TOPIC = '/scene';
/** The road network, once, at the run's begin: lanes and marks as lines, junction outlines. */
export const MAP_TOPIC = '/map';
/** world -> each ego's frame, per frame. */
export const TF_TOPIC = '/tf';
/** The run's events (stream `events`) as Foxglove log lines. */
export const LOG_TOPIC = '/log';
/** A camera's 2-D boxes and keypoints (foxglove.ImageAnnotations), beside its images. */
export const annotationsTopic = (sensor: string): string => `/${sensor}/annotations`;
/** Each ego's whole path (foxglove.PosesInFrame), once, at its first sample. */
export const trajectoryTopic = (ego: string): string => `/${ego}/trajectory`;
/** Where each ego is on the earth (foxglove.LocationFix), when the road network is geo-referenced. */
export const locationTopic = (ego: string): string => `/${ego}/location_fix`;
/** Each stream of the run on its own JSON channel, `/<stream id>`: `/ego/state`, `/ego/wheels`... */
export const streamTopic = (stream: string): string => `/${stream}`;

/** The metadata record that lets simrec read its own export back whole. */
export const RUN_METADATA = 'simrec.run';
/** Schema names of the stream channels: `simrec.samples.<stream id>`. */
export const SAMPLES_SCHEMA_PREFIX = 'simrec.samples.';
export const WORLD_FRAME = 'world';

export interface FoxgloveTime {
  sec: number;
  nsec: number;
}

/** Microseconds since the epoch as MCAP's nanoseconds. */
export const nanos = (micros: number): bigint => BigInt(micros) * 1000n;
export const foxgloveTime = (micros: number): FoxgloveTime => ({
  sec: Math.floor(micros / 1e6),
  nsec: (micros - Math.floor(micros / 1e6) * 1e6) * 1000,
});
export const microsOf = (time: FoxgloveTime): number => time.sec * 1e6 + Math.round(time.nsec / 1000);

/** Intrinsic Z-Y-X (yaw, pitch, roll) as a unit quaternion: Foxglove's orientation. */
export const quaternion = (yaw: number, pitch = 0, roll = 0): Quaternion =>
  eulerToQuaternion({ roll, pitch, yaw });

/** The yaw of a quaternion (rotation about z), for poses read from other tools. */
export const yawOf = (q: Quaternion): number => quaternionToEuler(q).yaw;

/** Colours by actor kind, as the viewer draws them. */
const KIND_COLOURS: Record<string, [number, number, number]> = {
  ego: [0.9, 0.3, 0.1],
  vehicle: [0.2, 0.5, 0.9],
  pedestrian: [0.2, 0.75, 0.3],
  cyclist: [0.8, 0.7, 0.1],
  traffic_light: [0.9, 0.9, 0.9],
};
export const kindColour = (kind: string): { r: number; g: number; b: number; a: number } => {
  const [r, g, b] = KIND_COLOURS[kind] ?? [0.6, 0.6, 0.6];
  return { r, g, b, a: 0.9 };
};

const JSON_TYPES: Record<string, object> = {
  f64: { type: 'number' },
  f32: { type: 'number' },
  i32: { type: 'integer' },
  // simrec holds int64 as doubles (model/columns.ts), so a JSON number carries it exactly.
  i64: { type: 'integer' },
  bool: { type: 'boolean' },
  string: { type: 'string' },
  json: {},
  vec: { type: 'array', items: { type: 'number' } },
};

/** A stream's samples as a JSON schema: Foxglove's plot panel offers every numeric field by name. */
export function streamJsonSchema(stream: StreamInfo): object {
  const properties: Record<string, object> = {
    t: { type: 'integer', description: 'time, microseconds since the Unix epoch' },
    step: { type: 'integer', description: 'simulation step' },
  };
  const fields: FieldDecl[] = [
    ...stream.fields,
    ...stream.extraFields.map((f) => ({ name: f.name, type: f.type })),
  ];
  for (const f of fields)
    properties[f.name] = {
      ...(JSON_TYPES[f.type] ?? {}),
      ...(f.unit || f.description ? { description: [f.unit, f.description].filter(Boolean).join('; ') } : {}),
    };
  return {
    title: `${SAMPLES_SCHEMA_PREFIX}${stream.id}`,
    type: 'object',
    properties,
    required: ['t', 'step', ...stream.fields.filter((f) => !f.optional).map((f) => f.name)],
  };
}
