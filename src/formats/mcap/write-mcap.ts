import { McapWriter } from '@mcap/core';
import {
  CameraCalibration,
  CompressedImage,
  FrameTransform,
  FrameTransforms,
  ImageAnnotations,
  LocationFix,
  Log,
  PosesInFrame,
  SceneUpdate,
} from '@foxglove/schemas/jsonschema.js';
import type { AttachmentInfo } from '../../model/attachment.js';
import { conflict } from '../../model/errors.js';
import { captureImageName, sampleToCapture } from '../../model/perception.js';
import type { RunSource } from '../../model/run-ports.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import {
  readWholeStream,
  StreamWalk,
  type SampleSeries,
  type SeriesView,
} from '../../model/sample-series.js';
import type { StreamInfo } from '../../model/stream.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { loadDefinitions } from '../common/labelled-images/perception-run.js';
import type { KeypointTemplate } from '../common/labelled-images/value-shapes.js';
import { foxgloveLayout } from './foxglove-layout.js';
import {
  egoTransforms,
  json,
  locationFix,
  locatorOf,
  logLine,
  mapUpdate,
  SceneUpdates,
  trajectory,
} from './foxglove-messages.js';
import { cameraCalibration, cameraMount, cameraOf } from './camera-messages.js';
import { imageAnnotations, templatesOf } from './image-annotations.js';
import { FileWritable } from './mcap-files.js';
import {
  annotationsTopic,
  foxgloveTime,
  locationTopic,
  LOG_TOPIC,
  MAP_TOPIC,
  nanos,
  RUN_METADATA,
  SAMPLES_SCHEMA_PREFIX,
  SCENE_TOPIC,
  streamJsonSchema,
  streamTopic,
  TF_TOPIC,
  trajectoryTopic,
} from './mcap-layout.js';
import { listSource, mergeInTimeOrder, type MessageData, type MessageSource } from './message-merge.js';
import { OSI_TRACE_METADATA, osiGroundTruth } from '../common/osi3/osi-ground-truth.js';
import { frameTimes, lightTracks, rewound, stateTracks } from '../common/scene-tracks.js';

export interface McapExportOptions {
  warn?: (message: string) => void;
  onProgress?: (done: number, total: number) => void;
  /** Compresses a chunk (zstd); chunks are stored as they are without it. */
  compress?: (data: Uint8Array) => Uint8Array;
  /** A file to write beside the MCAP: the Foxglove layout. */
  beside?: (name: string, data: Uint8Array) => void;
  /** Adds ASAM OSI ground truth (osi3.GroundTruth per frame), making the file an OSI trace too. */
  osi?: boolean;
  /**
   * Samples held at once of all the streams walked (their times apart): the file is written a window of
   * each stream at a time, so memory does not grow with the run's length. Tests make it small.
   */
  windowSamples?: number;
}

export interface McapExportResult {
  messages: number;
  frames: number;
  channels: number;
  attachments: number;
  bytes: number;
}

/**
 * Chunks of about 8 MiB before compression, as Foxglove's `mcap convert` writes them. The writer keeps
 * every chunk's index (an offset per channel in it) until the file's end, and a reader loads them all
 * when it opens the file: with @mcap/core's default of 1 MiB, a long run of hundreds of actors made
 * thousands of chunks whose indexes took hundreds of MiB to write and again to open
 * (performance-history.md, "MCAP chunks of 8 MiB"). A reader still unpacks one chunk to show a moment.
 */
const CHUNK_BYTES = 8 << 20;

/** Messages between two progress reports. */
const PROGRESS_EVERY = 4096;

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

  // Every stream walked forward in time a window at a time, its samples made into objects one at a time
  // as messages are written; camera captures (their images and labels are prepared before the walk)
  // and each ego's path (one message holds all of it) are read whole.
  const isCaptures = (s: StreamInfo): boolean => s.name === 'captures' && s.actor !== null;
  const { walk, series: walked } = await StreamWalk.over(
    source,
    streams.filter((s) => !isCaptures(s)),
    options.windowSamples,
  );
  const samplesOf = new Map<string, SeriesView>(walked);
  const wholeCaptures = new Map<string, SampleSeries>();
  for (const s of streams.filter(isCaptures)) {
    const series = await readWholeStream(source, s);
    wholeCaptures.set(s.id, series);
    samplesOf.set(s.id, series);
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
    const tracks = stateTracks(actors, byId, samplesOf);
    let location: string | undefined;
    const lights = lightTracks(actors, byId, samplesOf, network);
    const frames = frameTimes(tracks);
    if (frames.length) {
      const scene = new SceneUpdates(tracks, lights);
      sources.push(listSource(await foxglove(SCENE_TOPIC, SceneUpdate), frames, (t) => scene.at(t)));
      const egos = tracks.filter((t) => t.actor.kind === 'ego');
      if (egos.length) {
        const egoTracks = egos.map(rewound);
        sources.push(
          listSource(await foxglove(TF_TOPIC, FrameTransforms), frames, (t) => egoTransforms(egoTracks, t)),
        );
      }
      // Each ego's whole path, once, at its first sample: Foxglove's 3D panel draws it as a line.
      for (const ego of egos) {
        const path = (await readWholeStream(source, byId.get(`${ego.actor.id}/${STATE_STREAM}`)!)).toArray();
        sources.push(
          listSource(
            await foxglove(trajectoryTopic(ego.actor.id), PosesInFrame),
            ego.samples.times.subarray(0, 1),
            (t) => trajectory(path, t),
          ),
        );
      }
      const locate = locatorOf(network, warn);
      if (locate) {
        location = locationTopic(egos[0]!.actor.id);
        for (const ego of egos)
          sources.push(
            listSource(await foxglove(locationTopic(ego.actor.id), LocationFix), ego.samples.times, (_t, i) =>
              locationFix(ego.actor.id, ego.samples.at(i), locate),
            ),
          );
      }
    } else warn(`no actor has ${STATE_STREAM} samples; the scene is empty`);
    const osi = options.osi
      ? osiGroundTruth(run, tracks.map(rewound), lights.map(rewound), network, warn)
      : undefined;
    if (osi) {
      if (!frames.length) warn(`no recorded frame, so no OSI ground truth`);
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
        listSource(await foxglove(LOG_TOPIC, Log), events.times, (_t, i) => logLine(events.at(i))),
      );
    const captures = await captureImages(source, streams, wholeCaptures, attachments, warn);
    const templates = templatesOf((await loadDefinitions(source)).annotationDefinitions);
    const labelled = labelledCaptures(streams, wholeCaptures, templates);
    for (const [sensor, list] of labelled)
      sources.push(
        listSource(
          await foxglove(annotationsTopic(sensor), ImageAnnotations),
          list.map((c) => c.t),
          (_t, i) => JSON.stringify(list[i]!.message),
        ),
      );
    const egoIds = new Set(tracks.filter((t) => t.actor.kind === 'ego').map((t) => t.actor.id));
    const calibrated: string[] = [];
    for (const [sensor, list] of captures) {
      const times = list.map((c) => c.t);
      sources.push(
        listSource(await foxglove(streamTopic(`${sensor}/image`), CompressedImage), times, (_t, i) =>
          list[i]!.message(),
        ),
      );
      // Beside each image, so that a viewer that seeks finds them with it.
      const actor = actors.find((a) => a.id === sensor);
      const camera = actor && cameraOf(actor);
      if (!camera) continue;
      // Images of another size than the one declared (ingest reads it from their headers): the
      // declared matrix is not theirs.
      const otherSize = wholeCaptures
        .get(`${sensor}/captures`)
        ?.toArray()
        .find((c) => typeof c.width === 'number' && (c.width !== camera.width || c.height !== camera.height));
      if (otherSize) {
        warn(
          `camera ${sensor}: its image of step ${otherSize.step} is ${String(otherSize.width)}x${String(otherSize.height)} where the camera declared ${camera.width}x${camera.height}; no calibration is written`,
        );
        continue;
      }
      calibrated.push(sensor);
      sources.push(
        listSource(await foxglove(streamTopic(`${sensor}/calibration`), CameraCalibration), times, (t) =>
          cameraCalibration(camera, t),
        ),
      );
      // The mount is placed on the ego's frame, which /tf places in the world.
      const mount = camera.mount;
      if (mount && egoIds.has(mount.actor))
        sources.push(
          listSource(await foxglove(streamTopic(`${sensor}/mount`), FrameTransform), times, (t) =>
            cameraMount(camera, mount, t),
          ),
        );
    }

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
      sources.push(listSource(channel, list.times, (_t, i) => JSON.stringify(list.at(i))));
    }

    let messages = 0;
    const total = sources.reduce((n, s) => n + s.count, 0);
    const bytes = new MessageBytes();
    await mergeInTimeOrder(
      sources,
      async (channel, t, data) => {
        await writer.addMessage({
          channelId: channel,
          sequence: messages++,
          logTime: nanos(t),
          publishTime: nanos(t),
          data: bytes.of(data),
        });
        if (messages % PROGRESS_EVERY === 0) options.onProgress?.(messages, total);
      },
      (t) => walk.advanceTo(t),
    );
    options.onProgress?.(messages, total);

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
      json(foxgloveLayout(streams, captures.keys(), location, labelled.keys(), calibrated)),
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

/** Each camera's captures that have 2-D boxes or keypoints, as ImageAnnotations messages. */
function labelledCaptures(
  streams: readonly StreamInfo[],
  samplesOf: ReadonlyMap<string, SampleSeries>,
  templates: ReadonlyMap<string, KeypointTemplate>,
): Map<string, { t: number; message: object }[]> {
  const out = new Map<string, { t: number; message: object }[]>();
  for (const s of streams) {
    if (s.name !== 'captures' || s.actor === null) continue;
    const list = [];
    for (const sample of samplesOf.get(s.id)?.toArray() ?? []) {
      const message = imageAnnotations(sampleToCapture(s.actor, sample), templates);
      if (message) list.push({ t: sample.t, message });
    }
    if (list.length) out.set(s.actor, list);
  }
  return out;
}

interface CaptureImage {
  t: number;
  message: () => Promise<string>;
}

/**
 * Camera captures whose files are PNG or JPEG attachments, as Foxglove's CompressedImage. Each image is
 * read when its message is written, not before: a camera's hour is a hundred thousand images, more
 * than a process holds.
 */
async function captureImages(
  source: RunSource,
  streams: readonly StreamInfo[],
  samplesOf: ReadonlyMap<string, SampleSeries>,
  attachments: readonly AttachmentInfo[],
  warn: (message: string) => void,
): Promise<Map<string, CaptureImage[]>> {
  const out = new Map<string, CaptureImage[]>();
  const mediaTypes = new Map(attachments.map((a) => [a.name, a.mediaType] as const));
  let missing = 0;
  for (const s of streams) {
    if (s.name !== 'captures' || s.actor === null) continue;
    const list: CaptureImage[] = [];
    for (const capture of samplesOf.get(s.id)?.toArray() ?? []) {
      const file = captureImageName(capture);
      if (file === undefined) continue;
      const mediaType = mediaTypes.get(file);
      const format = mediaType === 'image/png' ? 'png' : mediaType === 'image/jpeg' ? 'jpeg' : undefined;
      if (!format) {
        missing++;
        continue;
      }
      list.push({
        t: capture.t,
        message: async () => {
          const attachment = await source.attachment(file);
          if (!attachment)
            throw conflict(
              `run ${source.run.id}: attachment ${JSON.stringify(file)} went while the run was being exported`,
            );
          const data = Buffer.from(attachment.data).toString('base64');
          return JSON.stringify({ timestamp: foxgloveTime(capture.t), frame_id: s.actor!, data, format });
        },
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

/**
 * Messages given as JSON text, encoded into one buffer that the next message writes over: McapWriter
 * copies a message into its chunk before it awaits anything (`addMessage`), so the bytes are needed only
 * until then, and a buffer of their own for each of a long run's messages was memory touched for the
 * first time at every message (performance-history.md, "Fresh memory").
 */
class MessageBytes {
  private buffer = new Uint8Array(1 << 16);
  private readonly encoder = new TextEncoder();

  of(data: MessageData): Uint8Array {
    if (typeof data !== 'string') return data;
    // UTF-8 takes at most three bytes for each of the text's UTF-16 units.
    if (data.length * 3 > this.buffer.length)
      this.buffer = new Uint8Array(Math.max(data.length * 3, this.buffer.length * 2));
    const { written } = this.encoder.encodeInto(data, this.buffer);
    return this.buffer.subarray(0, written);
  }
}
