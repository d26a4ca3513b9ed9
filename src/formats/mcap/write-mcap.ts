import { McapWriter } from '@mcap/core';
import {
  CompressedImage,
  FrameTransforms,
  LocationFix,
  ImageAnnotations,
  Log,
  PosesInFrame,
  SceneUpdate,
} from '@foxglove/schemas/jsonschema.js';
import type { RoadNetwork, RoadPoint } from '../../model/roadnet.js';
import { sampleToCapture } from '../../model/perception.js';
import { usualSampleInterval } from '../../model/presence.js';
import type { RunSource } from '../../model/run-ports.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import type { Sample, StreamInfo } from '../../model/stream.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { geoLocator, type GeoPosition } from '../../roadnet/geo-location.js';
import { laneBordersOf } from '../../roadnet/lane-borders.js';
import { signalLamp, type SignalLamp } from '../../roadnet/signal-heads.js';
import { foxgloveLayout } from './foxglove-layout.js';
import {
  annotationsTopic,
  foxgloveTime,
  kindColour,
  locationTopic,
  LOG_TOPIC,
  MAP_TOPIC,
  nanos,
  quaternion,
  RUN_METADATA,
  SAMPLES_SCHEMA_PREFIX,
  SCENE_TOPIC,
  streamJsonSchema,
  streamTopic,
  TF_TOPIC,
  trajectoryTopic,
  WORLD_FRAME,
} from './mcap-layout.js';
import { imageAnnotations, templatesOf } from './image-annotations.js';
import { loadDefinitions } from '../perception/perception-run.js';
import type { KeypointTemplate } from '../perception/value-shapes.js';
import { FileWritable } from './mcap-files.js';
import { OSI_TRACE_METADATA, osiGroundTruth } from './osi-ground-truth.js';
import {
  extentsOf,
  frameTimes,
  latest,
  lightTracks,
  num,
  presentSample,
  rewound,
  type LightTrack,
  type Track,
} from './scene-tracks.js';

export interface McapExportOptions {
  warn?: (message: string) => void;
  onProgress?: (done: number, total: number) => void;
  /** Compresses a chunk (zstd); chunks are stored as they are without it. */
  compress?: (data: Uint8Array) => Uint8Array;
  /** A file to write beside the MCAP: the Foxglove layout. */
  beside?: (name: string, data: Uint8Array) => void;
  /** Adds ASAM OSI ground truth (osi3.GroundTruth per frame), making the file an OSI trace too. */
  osi?: boolean;
}

export interface McapExportResult {
  messages: number;
  frames: number;
  channels: number;
  attachments: number;
  bytes: number;
}

const encoder = new TextEncoder();
const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
/** Chunks of about a megabyte: what Foxglove's own writers use, and small enough to seek well. */
const CHUNK_BYTES = 1 << 20;

/** One channel's messages in time order, produced as the merge asks for them. */
interface MessageSource {
  channel: number;
  /** The time of the message `take` would give, or undefined when done. */
  peek(): number | undefined;
  take(): Uint8Array;
}

/**
 * Writes a run as an MCAP file that Foxglove and Lichtblick open: Foxglove's JSON schemas on their
 * channels (scene, map, transforms, log), every stream of the run on its own JSON channel, the run's
 * attachments as MCAP attachments, and the run itself as a metadata record so that simrec reads the
 * file back whole. Messages are in time order, in indexed chunks, with a summary and statistics.
 */
export async function exportMcap(
  source: RunSource,
  file: string,
  options: McapExportOptions = {},
): Promise<McapExportResult> {
  const warn = options.warn ?? (() => {});
  const { run } = source;
  const [actors, streams, attachments] = await Promise.all([
    source.actors(),
    source.streams(),
    source.attachments(),
  ]);
  const network = await readRoadNetwork(source, run.id);
  const byId = new Map(streams.map((s) => [s.id, s] as const));

  const samplesOf = new Map<string, Sample[]>();
  const total = streams.reduce((n, s) => n + s.samples, 0);
  let done = 0;
  for (const s of streams) {
    const all: Sample[] = [];
    for await (const batch of source.samples(s.id)) for (const sample of batch) all.push(sample);
    samplesOf.set(s.id, all);
    done += all.length;
    options.onProgress?.(done, total);
  }

  const writable = await FileWritable.create(file);
  const writer = new McapWriter({
    writable,
    useStatistics: true,
    useChunks: true,
    useChunkIndex: true,
    useMessageIndex: true,
    useSummaryOffsets: true,
    useAttachmentIndex: true,
    useMetadataIndex: true,
    chunkSize: CHUNK_BYTES,
    ...(options.compress
      ? {
          compressChunk: (data: Uint8Array) => ({
            compression: 'zstd',
            compressedData: options.compress!(data),
          }),
        }
      : {}),
  });
  try {
    await writer.start({ profile: '', library: 'simrec' });
    const foxglove = async (topic: string, schema: { title: string }): Promise<number> => {
      const schemaId = await writer.registerSchema({
        name: schema.title,
        encoding: 'jsonschema',
        data: json(schema),
      });
      return writer.registerChannel({ schemaId, topic, messageEncoding: 'json', metadata: new Map() });
    };
    const sources: MessageSource[] = [];

    // The scene: every present actor's box, one SceneUpdate per recorded frame.
    const tracks: Track[] = actors
      .filter((a) => byId.has(`${a.id}/${STATE_STREAM}`))
      .map((actor) => {
        const stream = byId.get(`${actor.id}/${STATE_STREAM}`)!;
        return {
          actor,
          samples: samplesOf.get(stream.id)!,
          usual: usualSampleInterval(stream, actor.presence),
          next: 0,
        };
      });
    let location: string | undefined;
    const lights = lightTracks(actors, byId, samplesOf, network);
    const frames = frameTimes(tracks);
    if (frames.length) {
      sources.push(
        listSource(await foxglove(SCENE_TOPIC, SceneUpdate), frames, (t) => sceneUpdate(tracks, lights, t)),
      );
      const egos = tracks.filter((t) => t.actor.kind === 'ego');
      if (egos.length) {
        const egoTracks = egos.map(rewound);
        sources.push(
          listSource(await foxglove(TF_TOPIC, FrameTransforms), frames, (t) => egoTransforms(egoTracks, t)),
        );
      }
      // Each ego's whole path, once, at its first sample: Foxglove's 3D panel draws it as a line.
      for (const ego of egos)
        sources.push(
          listSource(
            await foxglove(trajectoryTopic(ego.actor.id), PosesInFrame),
            ego.samples.slice(0, 1).map((s) => s.t),
            (t) => trajectory(ego.samples, t),
          ),
        );
      const locate = locatorOf(network, warn);
      if (locate) {
        location = locationTopic(egos[0]!.actor.id);
        for (const ego of egos)
          sources.push(
            listSource(
              await foxglove(locationTopic(ego.actor.id), LocationFix),
              ego.samples.map((s) => s.t),
              (_t, i) => locationFix(ego.actor.id, ego.samples[i]!, locate),
            ),
          );
      }
    } else warn(`run ${run.id}: no actor has ${STATE_STREAM} samples; the scene is empty`);
    const osi = options.osi
      ? osiGroundTruth(run, tracks.map(rewound), lights.map(rewound), network, warn)
      : undefined;
    if (osi) {
      if (!frames.length) warn(`run ${run.id}: no recorded frame, so no OSI ground truth`);
      const schemaId = await writer.registerSchema(osi.schema);
      const channel = await writer.registerChannel({
        schemaId,
        topic: osi.topic,
        messageEncoding: 'protobuf',
        metadata: osi.channelMetadata,
      });
      sources.push(listSource(channel, frames, osi.encode));
    }
    if (network) {
      const map = await foxglove(MAP_TOPIC, SceneUpdate);
      sources.push(listSource(map, [run.begin], (t) => mapUpdate(network, t)));
    }
    const events = samplesOf.get('events');
    if (events?.length)
      sources.push(
        listSource(
          await foxglove(LOG_TOPIC, Log),
          events.map((e) => e.t),
          (_t, i) => logLine(events[i]!),
        ),
      );
    const captures = await captureImages(source, streams, samplesOf, warn);
    const templates = templatesOf((await loadDefinitions(source)).annotationDefinitions);
    const labelled = labelledCaptures(streams, samplesOf, templates);
    for (const [sensor, list] of labelled)
      sources.push(
        listSource(
          await foxglove(annotationsTopic(sensor), ImageAnnotations),
          list.map((c) => c.t),
          (_t, i) => json(list[i]!.message),
        ),
      );
    for (const [sensor, list] of captures)
      sources.push(
        listSource(
          await foxglove(streamTopic(`${sensor}/image`), CompressedImage),
          list.map((c) => c.t),
          (_t, i) => list[i]!.message(),
        ),
      );

    // Every stream on its own channel, its samples as they are stored.
    for (const s of streams) {
      const schemaId = await writer.registerSchema({
        name: `${SAMPLES_SCHEMA_PREFIX}${s.id}`,
        encoding: 'jsonschema',
        data: json(streamJsonSchema(s)),
      });
      const channel = await writer.registerChannel({
        schemaId,
        topic: streamTopic(s.id),
        messageEncoding: 'json',
        metadata: new Map([['simrec.stream', s.id]]),
      });
      const list = samplesOf.get(s.id)!;
      sources.push(
        listSource(
          channel,
          list.map((x) => x.t),
          (_t, i) => json(list[i]!),
        ),
      );
    }

    let messages = 0;
    await mergeInTimeOrder(sources, async (channel, t, data) => {
      await writer.addMessage({
        channelId: channel,
        sequence: messages++,
        logTime: nanos(t),
        publishTime: nanos(t),
        data,
      });
    });

    for (const a of attachments) {
      const full = await source.attachment(a.name);
      if (!full) continue;
      const at = nanos(full.t ?? run.begin);
      await writer.addAttachment({
        name: a.name,
        logTime: at,
        createTime: at,
        mediaType: full.mediaType,
        data: full.data,
      });
    }
    if (osi) await writer.addMetadata({ name: OSI_TRACE_METADATA, metadata: osi.fileMetadata });
    await writer.addMetadata({
      name: RUN_METADATA,
      metadata: new Map([
        ['run', JSON.stringify(run)],
        ['actors', JSON.stringify(actors)],
        ['streams', JSON.stringify(streams.map(({ samples: _n, begin: _b, end: _e, ...schema }) => schema))],
        ['attachments', JSON.stringify(attachments)],
      ]),
    });
    await writer.end();
    await writable.close();
    options.beside?.(
      'layout.json',
      json(foxgloveLayout(streams, captures.keys(), location, labelled.keys())),
    );
    return {
      messages,
      frames: frames.length,
      channels: sources.length,
      attachments: attachments.length,
      bytes: Number(writable.position()),
    };
  } catch (error) {
    await writable.abandon();
    throw error;
  }
}

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
/** Metres above the ground: a vehicle's signal head, a pedestrian's. */
const HEAD_HEIGHT = { vehicle: 2.5, pedestrian: 1.6 };

/** Each head of each light as a sphere in the colour its link shows at t. */
function lightEntities(lights: readonly LightTrack[], t: number) {
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
                  position: { x, y, z: z + HEAD_HEIGHT[head.pedestrian ? 'pedestrian' : 'vehicle'] },
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
function sceneUpdate(tracks: readonly Track[], lights: readonly LightTrack[], t: number): Uint8Array {
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
  return json({ deletions: [{ timestamp: foxgloveTime(t), type: 1, id: '' }], entities });
}

function trajectory(samples: readonly Sample[], t: number): Uint8Array {
  return json({
    timestamp: foxgloveTime(t),
    frame_id: WORLD_FRAME,
    poses: samples.map((s) => ({
      position: { x: num(s.x), y: num(s.y), z: num(s.z) },
      orientation: quaternion(num(s.yaw), num(s.pitch), num(s.roll)),
    })),
  });
}

/** The network's geo-reference as a locator, or a warning when its projection cannot be read. */
function locatorOf(network: RoadNetwork | undefined, warn: (message: string) => void) {
  try {
    return geoLocator(network?.geoReference);
  } catch (error) {
    warn(`${(error as Error).message}; no ${LocationFix.title} channel`);
    return undefined;
  }
}

/** Where the ego is on the earth (WGS84), for Foxglove's map panel. */
function locationFix(ego: string, s: Sample, locate: (x: number, y: number) => GeoPosition): Uint8Array {
  const { latitude, longitude } = locate(num(s.x), num(s.y));
  return json({
    timestamp: foxgloveTime(s.t),
    frame_id: ego,
    latitude,
    longitude,
    altitude: num(s.z),
    position_covariance: [0, 0, 0, 0, 0, 0, 0, 0, 0],
    position_covariance_type: 0,
  });
}

function egoTransforms(egos: readonly Track[], t: number): Uint8Array {
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
  return json({ transforms });
}

/** The road network as line lists (lanes grey, marks white) and junction outlines, kept forever. */
function mapUpdate(network: RoadNetwork, t: number): Uint8Array {
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
  return json({ deletions: [], entities: [entity('roadnet', t, { lines }, [['format', network.format]])] });
}

function logLine(event: Sample): Uint8Array {
  const actors = Array.isArray(event.actors) ? event.actors.join(', ') : '';
  const detail = typeof event.detail === 'string' ? event.detail : '';
  return json({
    timestamp: foxgloveTime(event.t),
    level: 3,
    message: [String(event.kind ?? 'event'), actors, detail].filter(Boolean).join(': '),
    name: 'simrec',
    file: '',
    line: 0,
  });
}

/** Each camera's captures that have 2-D boxes or keypoints, as ImageAnnotations messages. */
function labelledCaptures(
  streams: readonly StreamInfo[],
  samplesOf: ReadonlyMap<string, Sample[]>,
  templates: ReadonlyMap<string, KeypointTemplate>,
): Map<string, { t: number; message: object }[]> {
  const out = new Map<string, { t: number; message: object }[]>();
  for (const s of streams) {
    if (s.name !== 'captures' || s.actor === null) continue;
    const list = [];
    for (const sample of samplesOf.get(s.id) ?? []) {
      const message = imageAnnotations(sampleToCapture(s.actor, sample), templates);
      if (message) list.push({ t: sample.t, message });
    }
    if (list.length) out.set(s.actor, list);
  }
  return out;
}

interface CaptureImage {
  t: number;
  message: () => Uint8Array;
}

/** Camera captures whose files are PNG or JPEG attachments, as Foxglove's CompressedImage. */
async function captureImages(
  source: RunSource,
  streams: readonly StreamInfo[],
  samplesOf: ReadonlyMap<string, Sample[]>,
  warn: (message: string) => void,
): Promise<Map<string, CaptureImage[]>> {
  const out = new Map<string, CaptureImage[]>();
  let missing = 0;
  for (const s of streams) {
    if (s.name !== 'captures' || s.actor === null) continue;
    const list: CaptureImage[] = [];
    for (const capture of samplesOf.get(s.id) ?? []) {
      if (typeof capture.file !== 'string') continue;
      const attachment = await source.attachment(capture.file);
      const format =
        attachment?.mediaType === 'image/png'
          ? 'png'
          : attachment?.mediaType === 'image/jpeg'
            ? 'jpeg'
            : undefined;
      if (!attachment || !format) {
        missing++;
        continue;
      }
      const data = Buffer.from(attachment.data).toString('base64');
      list.push({
        t: capture.t,
        message: () => json({ timestamp: foxgloveTime(capture.t), frame_id: s.actor!, data, format }),
      });
    }
    if (list.length) out.set(s.actor, list);
  }
  if (missing)
    warn(
      `${missing} captures have no PNG or JPEG file kept with the run; they have no image channel message`,
    );
  return out;
}

function listSource(
  channel: number,
  times: readonly number[],
  encode: (t: number, i: number) => Uint8Array,
): MessageSource {
  let i = 0;
  return {
    channel,
    peek: () => times[i],
    take: () => {
      const data = encode(times[i]!, i);
      i++;
      return data;
    },
  };
}

/** Writes the sources' messages in time order (a heap of the sources by their next message's time). */
async function mergeInTimeOrder(
  sources: readonly MessageSource[],
  write: (channel: number, t: number, data: Uint8Array) => Promise<void>,
): Promise<void> {
  const heap = sources.filter((s) => s.peek() !== undefined);
  const before = (a: MessageSource, b: MessageSource): boolean =>
    a.peek()! < b.peek()! || (a.peek() === b.peek() && a.channel < b.channel);
  const down = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  for (let i = Math.floor(heap.length / 2) - 1; i >= 0; i--) down(i);
  while (heap.length) {
    const top = heap[0]!;
    const t = top.peek()!;
    await write(top.channel, t, top.take());
    if (top.peek() === undefined) {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
    }
    if (heap.length) down(0);
  }
}
