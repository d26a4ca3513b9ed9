/*
 * The messages of the export's Foxglove channels, one builder each, as JSON in Foxglove's schemas
 * (@foxglove/schemas): the scene (actors and traffic-light heads), the map, the ego's transforms,
 * path and location on the earth, the log. The scene, most of a run's bytes, is written as bytes from
 * templates (SceneUpdates); the others as text, which the writer encodes.
 */

import { LocationFix } from '@foxglove/schemas/jsonschema.js';
import type { RoadNetwork, RoadPoint } from '../../model/roadnet.js';
import type { ActorInfo } from '../../model/run.js';
import type { NumbersWindow } from '../../model/sample-series.js';
import type { Sample } from '../../model/stream.js';
import type { Quaternion, Vec3 } from '../../model/units.js';
import { geoLocator, type GeoPosition } from '../../roadnet/geo-location.js';
import { laneBordersOf } from '../../roadnet/lane-borders.js';
import { headHeight, signalLamp, type SignalHead, type SignalLamp } from '../../roadnet/signal-heads.js';
import { JsonBytes, JsonTemplate } from './json-template.js';
import { foxgloveTime, kindColour, quaternion, WORLD_FRAME, type FoxgloveTime } from './mcap-layout.js';
import {
  extentsOf,
  latest,
  num,
  presentIndex,
  presentSample,
  type LightTrack,
  type Track,
} from '../common/scene-tracks.js';

const encoder = new TextEncoder();
/** A value's JSON as bytes of its own (a schema, a file). */
export const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));

const ZERO = { sec: 0, nsec: 0 };

function entity(
  id: string,
  time: FoxgloveTime,
  parts: Partial<Record<string, unknown[]>>,
  metadata: [string, string][] = [],
) {
  return {
    timestamp: time,
    frame_id: WORLD_FRAME,
    id,
    lifetime: ZERO,
    frame_locked: false,
    metadata: metadata.map(([key, value]) => ({ key, value })),
    arrows: [],
    cubes: [],
    spheres: [],
    cylinders: [],
    lines: [],
    triangles: [],
    texts: [],
    models: [],
    ...parts,
  };
}

const LAMP_COLOURS: Record<SignalLamp, [number, number, number, number]> = {
  red: [0.95, 0.1, 0.1, 1],
  yellow: [1, 0.8, 0.1, 1],
  green: [0.1, 0.85, 0.2, 1],
  red_yellow: [1, 0.5, 0.1, 1],
  flashing_yellow: [1, 0.8, 0.1, 0.5],
  off: [0.25, 0.25, 0.25, 1],
};

/** A light's head as a sphere in the colour of `ch`, its link's state letter (undefined: none known). */
function headEntity(head: SignalHead, ch: string | undefined, time: FoxgloveTime) {
  const [r, g, b, a] = LAMP_COLOURS[signalLamp(ch)];
  const [x, y, z] = head.position;
  const size = head.pedestrian ? 0.3 : 0.45;
  return entity(
    `${head.light}:${head.linkIndex}`,
    time,
    {
      spheres: [
        {
          pose: {
            position: { x, y, z: z + headHeight(head) },
            orientation: { x: 0, y: 0, z: 0, w: 1 },
          },
          size: { x: size, y: size, z: size },
          color: { r, g, b, a },
        },
      ],
    },
    [
      ['kind', 'traffic_light'],
      ['state', ch ?? ''],
    ],
  );
}

/**
 * Where an actor's box is drawn at a sample: its centre (half its height up), its orientation, and the
 * height of its top, where its id is written.
 */
function actorPose(
  actor: ActorInfo,
  at: (field: (typeof POSE_FIELDS)[number]) => number,
): { position: Vec3; orientation: Quaternion; labelZ: number } {
  return boxPose(extentsOf(actor).height, at('x'), at('y'), at('z'), at('yaw'), at('pitch'), at('roll'));
}

/** The fields an actor's pose is read from, in boxPose's order. */
const POSE_FIELDS = ['x', 'y', 'z', 'yaw', 'pitch', 'roll'] as const;

/** actorPose from the box's height and the pose's numbers. */
function boxPose(height: number, x: number, y: number, z: number, yaw: number, pitch: number, roll: number) {
  const position = { x, y, z: z + height / 2 };
  const orientation = quaternion(yaw, pitch, roll);
  return { position, orientation, labelZ: position.z + height };
}

/** An actor as a cube at its pose and its id written above it (`labelZ`, the box's top). */
function actorEntity(
  actor: ActorInfo,
  time: FoxgloveTime,
  position: Vec3,
  orientation: Quaternion,
  labelZ: number,
) {
  const size = extentsOf(actor);
  return entity(
    actor.id,
    time,
    {
      cubes: [
        {
          pose: { position, orientation },
          size: { x: size.length, y: size.width, z: size.height },
          color: kindColour(actor.kind),
        },
      ],
      texts: [
        {
          pose: {
            position: { x: position.x, y: position.y, z: labelZ },
            orientation: { x: 0, y: 0, z: 0, w: 1 },
          },
          billboard: true,
          font_size: 14,
          scale_invariant: true,
          color: { r: 1, g: 1, b: 1, a: 1 },
          text: actor.id,
        },
      ],
    },
    [['kind', actor.kind]],
  );
}

/** A light's state letters at t, one a link (undefined: none recorded yet). */
function lightState(light: LightTrack, t: number): string | undefined {
  const state = latest(light, t)?.state;
  return typeof state === 'string' ? state : undefined;
}

/**
 * The scene at t as Foxglove's SceneUpdate: the traffic lights' heads in their colours, then the actors
 * present at t, each a cube at its pose and its id. Each update replaces the whole scene (its deletion
 * of every entity first): an actor that has left is not drawn on. SceneUpdates writes the same message
 * as bytes, frame after frame; this is the message as objects.
 */
export function sceneUpdateMessage(tracks: readonly Track[], lights: readonly LightTrack[], t: number) {
  const time = foxgloveTime(t);
  const entities: ReturnType<typeof entity>[] = [];
  for (const light of lights) {
    const state = lightState(light, t);
    for (const head of light.heads) entities.push(headEntity(head, state?.[head.linkIndex], time));
  }
  for (const track of tracks) {
    const s = presentSample(track, t);
    if (!s) continue;
    const { position, orientation, labelZ } = actorPose(track.actor, (field) => num(s[field]));
    entities.push(actorEntity(track.actor, time, position, orientation, labelZ));
  }
  return { deletions: [{ timestamp: time, type: 1, id: '' }], entities };
}

const ACTOR_VALUES = 10;

const orZero = (v: number): number => (Number.isNaN(v) ? 0 : v);

/**
 * The scene's SceneUpdate frame after frame, as the bytes JSON.stringify gives sceneUpdateMessage:
 * each actor's entity and each head's in each of its colours is a template (json-template.ts) made at
 * its first frame, filled with the frame's time and the actor's pose. The tracks' cursors move forward:
 * frames are asked for in time order.
 */
export class SceneUpdates {
  private readonly tracks: readonly Track[];
  private readonly lights: readonly LightTrack[];
  private readonly out = new JsonBytes();
  private readonly actorTemplates = new Map<Track, JsonTemplate | undefined>();
  private readonly headTemplates = new Map<SignalHead, Map<string | undefined, JsonTemplate | undefined>>();
  private readonly values: number[] = new Array<number>(ACTOR_VALUES).fill(0);
  /** Each track's box height, and its pose fields over the window that holds its current sample. */
  private readonly heights: number[];
  private readonly poses: (NumbersWindow | undefined)[];

  constructor(tracks: readonly Track[], lights: readonly LightTrack[]) {
    this.tracks = tracks;
    this.lights = lights;
    this.heights = tracks.map((track) => extentsOf(track.actor).height);
    this.poses = tracks.map(() => undefined);
  }

  /** The update at t, valid until the next call (the writer copies it before it asks for another). */
  at(t: number): Uint8Array {
    const time = foxgloveTime(t);
    const values = this.values;
    values[0] = time.sec;
    values[1] = time.nsec;
    const headValues = [time.sec, time.nsec];
    const out = this.out;
    out.reset();
    const frame = JSON.stringify({ deletions: [{ timestamp: time, type: 1, id: '' }], entities: [] });
    out.ascii(frame.slice(0, -2));
    let first = true;
    const comma = (): void => {
      if (!first) out.ascii(',');
      first = false;
    };
    for (const light of this.lights) {
      const state = lightState(light, t);
      for (const head of light.heads) {
        const ch = state?.[head.linkIndex];
        comma();
        const template = this.headTemplate(head, ch);
        if (template) template.write(out, headValues);
        else out.bytes(json(headEntity(head, ch, time)));
      }
    }
    const tracks = this.tracks;
    for (let k = 0; k < tracks.length; k++) {
      const track = tracks[k]!;
      const i = presentIndex(track, t);
      if (i < 0) continue;
      comma();
      // The pose read from the columns, without the sample's object (num's 0 where it has no number).
      let pose = this.poses[k];
      if (pose === undefined || i < pose.first || i >= pose.end)
        this.poses[k] = pose = track.samples.numbersAround(i, POSE_FIELDS);
      const j = i - pose.first;
      const field = pose.values; // POSE_FIELDS' order
      const { position, orientation, labelZ } = boxPose(
        this.heights[k]!,
        orZero(field[0]![j]!),
        orZero(field[1]![j]!),
        orZero(field[2]![j]!),
        orZero(field[3]![j]!),
        orZero(field[4]![j]!),
        orZero(field[5]![j]!),
      );
      const template = this.actorTemplate(track);
      if (!template) {
        out.bytes(json(actorEntity(track.actor, time, position, orientation, labelZ)));
        continue;
      }
      values[2] = position.x;
      values[3] = position.y;
      values[4] = position.z;
      values[5] = orientation.x;
      values[6] = orientation.y;
      values[7] = orientation.z;
      values[8] = orientation.w;
      values[9] = labelZ;
      template.write(out, values);
    }
    out.ascii(']}');
    return out.view();
  }

  private actorTemplate(track: Track): JsonTemplate | undefined {
    if (this.actorTemplates.has(track)) return this.actorTemplates.get(track);
    const template = JsonTemplate.of(ACTOR_VALUES, (v) =>
      actorEntity(
        track.actor,
        { sec: v[0]!, nsec: v[1]! },
        { x: v[2]!, y: v[3]!, z: v[4]! },
        { x: v[5]!, y: v[6]!, z: v[7]!, w: v[8]! },
        v[9]!,
      ),
    );
    this.actorTemplates.set(track, template);
    return template;
  }

  private headTemplate(head: SignalHead, ch: string | undefined): JsonTemplate | undefined {
    let byState = this.headTemplates.get(head);
    if (!byState)
      this.headTemplates.set(head, (byState = new Map<string | undefined, JsonTemplate | undefined>()));
    if (byState.has(ch)) return byState.get(ch);
    const template = JsonTemplate.of(2, (v) => headEntity(head, ch, { sec: v[0]!, nsec: v[1]! }));
    byState.set(ch, template);
    return template;
  }
}

export function trajectory(samples: readonly Sample[], t: number): string {
  return JSON.stringify({
    timestamp: foxgloveTime(t),
    frame_id: WORLD_FRAME,
    poses: samples.map((s) => ({
      position: { x: num(s.x), y: num(s.y), z: num(s.z) },
      orientation: quaternion(num(s.yaw), num(s.pitch), num(s.roll)),
    })),
  });
}

/** The network's geo-reference as a locator, or a warning when its projection cannot be read. */
export function locatorOf(network: RoadNetwork | undefined, warn: (message: string) => void) {
  try {
    return geoLocator(network?.geoReference);
  } catch (error) {
    warn(`${(error as Error).message}; no ${LocationFix.title} channel`);
    return undefined;
  }
}

/** Where the ego is on the earth (WGS84), for Foxglove's map panel. */
export function locationFix(ego: string, s: Sample, locate: (x: number, y: number) => GeoPosition): string {
  const { latitude, longitude } = locate(num(s.x), num(s.y));
  return JSON.stringify({
    timestamp: foxgloveTime(s.t),
    frame_id: ego,
    latitude,
    longitude,
    altitude: num(s.z),
    position_covariance: [0, 0, 0, 0, 0, 0, 0, 0, 0],
    position_covariance_type: 0,
  });
}

export function egoTransforms(egos: readonly Track[], t: number): string {
  const transforms = [];
  for (const ego of egos) {
    const s = latest(ego, t);
    if (!s) continue;
    transforms.push({
      timestamp: foxgloveTime(t),
      parent_frame_id: WORLD_FRAME,
      child_frame_id: ego.actor.id,
      translation: { x: num(s.x), y: num(s.y), z: num(s.z) },
      rotation: quaternion(num(s.yaw), num(s.pitch), num(s.roll)),
    });
  }
  return JSON.stringify({ transforms });
}

/** The road network as line lists (lanes grey, marks white) and junction outlines, kept forever. */
export function mapUpdate(network: RoadNetwork, t: number): string {
  const identity = { position: { x: 0, y: 0, z: 0 }, orientation: { x: 0, y: 0, z: 0, w: 1 } };
  const point = (p: RoadPoint) => ({ x: p[0], y: p[1], z: p[2] ?? 0 });
  const segments = (shapes: Iterable<readonly RoadPoint[]>) => {
    const points = [];
    for (const shape of shapes)
      for (let i = 1; i < shape.length; i++) points.push(point(shape[i - 1]!), point(shape[i]!));
    return points;
  };
  const line = (points: object[], thickness: number, color: object) => ({
    type: 2,
    pose: identity,
    thickness,
    scale_invariant: false,
    points,
    color,
    colors: [],
    indices: [],
  });
  const lines = [
    line(segments(network.lanes.map((l) => l.centerLine)), 0.15, { r: 0.55, g: 0.55, b: 0.55, a: 1 }),
    line(segments(laneBordersOf(network).map((b) => b.mark.shape)), 0.12, {
      r: 0.95,
      g: 0.95,
      b: 0.95,
      a: 1,
    }),
    line(
      segments(
        network.junctions.filter((j) => j.outline.length > 2).map((j) => [...j.outline, j.outline[0]!]),
      ),
      0.1,
      { r: 0.35, g: 0.35, b: 0.45, a: 1 },
    ),
  ];
  return JSON.stringify({
    deletions: [],
    entities: [entity('roadnet', foxgloveTime(t), { lines }, [['format', network.format]])],
  });
}

export function logLine(event: Sample): string {
  const actors = Array.isArray(event.actors) ? event.actors.join(', ') : '';
  const detail = typeof event.detail === 'string' ? event.detail : '';
  return JSON.stringify({
    timestamp: foxgloveTime(event.t),
    level: 3,
    message: [String(event.kind ?? 'event'), actors, detail].filter(Boolean).join(': '),
    name: 'simrec',
    file: '',
    line: 0,
  });
}
