/*
 * The messages of the export's Foxglove channels, one builder each, as JSON text in Foxglove's
 * schemas (@foxglove/schemas): the scene (actors and traffic-light heads), the map, the ego's
 * transforms, path and location on the earth, the log. The writer encodes the text.
 */

import { LocationFix } from '@foxglove/schemas/jsonschema.js';
import type { RoadNetwork, RoadPoint } from '../../model/roadnet.js';
import type { Sample } from '../../model/stream.js';
import { geoLocator, type GeoPosition } from '../../roadnet/geo-location.js';
import { laneBordersOf } from '../../roadnet/lane-borders.js';
import { headHeight, signalLamp, type SignalLamp } from '../../roadnet/signal-heads.js';
import { foxgloveTime, kindColour, quaternion, WORLD_FRAME } from './mcap-layout.js';
import {
  extentsOf,
  latest,
  num,
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
  t: number,
  parts: Partial<Record<string, unknown[]>>,
  metadata: [string, string][] = [],
) {
  return {
    timestamp: foxgloveTime(t),
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

/** Each head of each light as a sphere in the colour its link shows at t. */
export function lightEntities(lights: readonly LightTrack[], t: number) {
  const entities = [];
  for (const light of lights) {
    const state = latest(light, t)?.state;
    for (const head of light.heads) {
      const ch = typeof state === 'string' ? state[head.linkIndex] : undefined;
      const [r, g, b, a] = LAMP_COLOURS[signalLamp(ch)];
      const [x, y, z] = head.position;
      const size = head.pedestrian ? 0.3 : 0.45;
      entities.push(
        entity(
          `${head.light}:${head.linkIndex}`,
          t,
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
        ),
      );
    }
  }
  return entities;
}

/**
 * The actors present at t, each a cube at its pose (its centre at half its height) and its id, and
 * the traffic lights' heads in their colours.
 */
export function sceneUpdate(tracks: readonly Track[], lights: readonly LightTrack[], t: number): string {
  const entities: object[] = lightEntities(lights, t);
  for (const track of tracks) {
    const s = presentSample(track, t);
    if (!s) continue;
    const size = extentsOf(track.actor);
    const position = { x: num(s.x), y: num(s.y), z: num(s.z) + size.height / 2 };
    const orientation = quaternion(num(s.yaw), num(s.pitch), num(s.roll));
    entities.push(
      entity(
        track.actor.id,
        t,
        {
          cubes: [
            {
              pose: { position, orientation },
              size: { x: size.length, y: size.width, z: size.height },
              color: kindColour(track.actor.kind),
            },
          ],
          texts: [
            {
              pose: {
                position: { ...position, z: position.z + size.height },
                orientation: { x: 0, y: 0, z: 0, w: 1 },
              },
              billboard: true,
              font_size: 14,
              scale_invariant: true,
              color: { r: 1, g: 1, b: 1, a: 1 },
              text: track.actor.id,
            },
          ],
        },
        [['kind', track.actor.kind]],
      ),
    );
  }
  // Each update replaces the whole scene: an actor that has left is not drawn on.
  return JSON.stringify({ deletions: [{ timestamp: foxgloveTime(t), type: 1, id: '' }], entities });
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
    entities: [entity('roadnet', t, { lines }, [['format', network.format]])],
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
