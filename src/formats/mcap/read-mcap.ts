import { McapIndexedReader, type DecompressHandlers } from '@mcap/core';
import protobuf from 'protobufjs';
import 'protobufjs/ext/descriptor.js';
import type { AttachmentInfo } from '../../model/attachment.js';
import { describeValue, invalid, notFound, SimrecError } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { RunSink, RunTarget } from '../../model/run-ports.js';
import type { ActorDecl, ActorInfo, RunInfo } from '../../model/run.js';
import { STATE_FIELDS, STATE_STREAM } from '../../model/standard-streams.js';
import type { Sample, StreamSchema } from '../../model/stream.js';
import { keepRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { FileReadable } from './mcap-files.js';
import { OSI_SCHEMA_NAME, OSI_TRACE_METADATA } from '../common/osi3/osi-ground-truth.js';
import { PendingSamples } from '../common/pending-samples.js';
import { OsiRoadCollector, type OsiRoadMessage } from '../common/osi3/osi-lanes.js';
import { skimRoad } from '../common/osi3/osi3-schema.js';
import { groundTruthObjects, worldOf, type SensorViewMessage } from '../common/osi3/osi-objects.js';
import { microsOf, RUN_METADATA, yawOf, type FoxgloveTime } from './mcap-layout.js';

export interface McapImportOptions {
  warn?: (message: string) => void;
  onProgress?: (done: number, total: number) => void;
  /** Decompresses a zstd chunk. */
  decompress?: DecompressHandlers;
}

export interface McapImportResult {
  run: RunInfo;
  /** `simrec` when the file is a simrec export (read whole), else `foxglove` (scenes mapped). */
  source: 'simrec' | 'foxglove';
  messages: number;
}

/**
 * What an MCAP import unpacks (docs/formats/mcap.md, "Reading MCAP"). A chunk's data are kept
 * compressed in the file and unpacked whole to read one message of it, and @mcap/core holds every chunk
 * whose time range the messages being read fall in: a 47 KB file whose chunk said 4.4 GB, and six
 * overlapping chunks of 500 MB in 97 KB, took the import to 4.4 and 3.4 GB. Each is checked on the
 * file's own word (its chunk index, and each chunk record against it) before anything is unpacked:
 * - a chunk unpacks to at most MAX_CHUNK_BYTES (writers make chunks of 1 to 8 MB);
 * - the chunks that overlap in time unpack together to at most MAX_WINDOW_BYTES, what the import holds
 *   at once;
 * - all chunks together unpack to at most MAX_EXPANSION times the file's size, or MIN_CEILING_BYTES for
 *   a small file: a ceiling for the whole import.
 */
export const MAX_CHUNK_BYTES = 64 * 1024 * 1024;
export const MAX_WINDOW_BYTES = 128 * 1024 * 1024;
export const MAX_EXPANSION = 1000;
export const MIN_CEILING_BYTES = 1024 * 1024 * 1024;

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads an MCAP file as a run. A file simrec wrote is read back whole, from its `simrec.run` metadata
 * and its stream channels. Any other file's Foxglove SceneUpdates and FrameTransforms (JSON or
 * protobuf) become actors and states (readFoxgloveScenes); what cannot be mapped is named in a warning.
 */
export async function importMcap(
  into: RunTarget,
  file: string,
  options: McapImportOptions = {},
): Promise<McapImportResult> {
  const readable = await FileReadable.open(file).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOENT' ? notFound(`${file}: no such file`) : error;
  });
  try {
    let reader: McapIndexedReader;
    const indexedSizes = new Map<bigint, bigint>();
    try {
      reader = await McapIndexedReader.Initialize({
        readable,
        decompressHandlers: boundedChunks(options.decompress ?? {}, readable, indexedSizes, file),
      });
    } catch (error) {
      throw invalid(`${file}: not an indexed MCAP file (${(error as Error).message})`);
    }
    checkChunkSizes(reader, file, readable.byteLength);
    for (const chunk of reader.chunkIndexes) indexedSizes.set(chunk.chunkStartOffset, chunk.uncompressedSize);
    try {
      const described = await readRunMetadata(reader, file);
      return described
        ? await readSimrecExport(into, reader, file, described, options)
        : await readFoxgloveScenes(into, reader, file, options);
    } catch (error) {
      // @mcap/core and zstd say what is wrong (a length past the end, a chunk that does not
      // decompress, a CRC) but not where: the file is named, the import refused and undone.
      if (error instanceof SimrecError) throw error;
      throw invalid(`${file}: a damaged MCAP file: ${(error as Error).message}`);
    }
  } finally {
    await readable.close();
  }
}

const mib = (bytes: bigint | number): string => `${(Number(bytes) / 2 ** 20).toFixed(0)} MiB`;

/** The file's chunk index against the limits above (MAX_CHUNK_BYTES and the rest), before any chunk is read. */
function checkChunkSizes(reader: McapIndexedReader, file: string, fileBytes: bigint): void {
  let total = 0n;
  for (const chunk of reader.chunkIndexes) {
    if (chunk.uncompressedSize > BigInt(MAX_CHUNK_BYTES))
      throw invalid(
        `${file}: the chunk at byte ${chunk.chunkStartOffset} unpacks to ${chunk.uncompressedSize} bytes (its index says), expected at most ${MAX_CHUNK_BYTES} (${mib(MAX_CHUNK_BYTES)}); nothing was imported`,
      );
    total += chunk.uncompressedSize;
  }
  const ceiling = BigInt(Math.max(MIN_CEILING_BYTES, MAX_EXPANSION * Number(fileBytes)));
  if (total > ceiling)
    throw invalid(
      `${file}: its ${reader.chunkIndexes.length} chunks unpack to ${total} bytes (their index says), expected at most ${ceiling} (${MAX_EXPANSION} times the file's ${fileBytes} bytes, or ${mib(MIN_CEILING_BYTES)}); nothing was imported`,
    );
  // The chunks open at once: a sweep over their time ranges (inclusive: a chunk ending at t and one
  // beginning at t are both open at t).
  const events = reader.chunkIndexes.flatMap((c) => [
    { t: c.messageStartTime, open: true, size: c.uncompressedSize },
    { t: c.messageEndTime, open: false, size: c.uncompressedSize },
  ]);
  events.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.open === b.open ? 0 : a.open ? -1 : 1));
  let held = 0n;
  let open = 0;
  for (const event of events) {
    held += event.open ? event.size : -event.size;
    open += event.open ? 1 : -1;
    if (held > BigInt(MAX_WINDOW_BYTES))
      throw invalid(
        `${file}: ${open} chunks overlap in time at ${event.t} ns and unpack together to ${held} bytes, expected at most ${MAX_WINDOW_BYTES} (${mib(MAX_WINDOW_BYTES)}), what an import holds at once; nothing was imported`,
      );
  }
}

/**
 * The decompression handlers, each refusing a chunk whose record says it unpacks to other than its
 * index does (checkChunkSizes trusted the index) and checking what it unpacked to.
 */
function boundedChunks(
  handlers: DecompressHandlers,
  readable: FileReadable,
  indexedSizes: ReadonlyMap<bigint, bigint>,
  file: string,
): DecompressHandlers {
  const bounded: DecompressHandlers = {};
  for (const [name, handler] of Object.entries(handlers))
    bounded[name] = (data, size) => {
      const at = readable.lastReadOffset;
      const indexed = indexedSizes.get(at);
      if (indexed !== size)
        throw invalid(
          `${file}: the chunk at byte ${at} says it unpacks to ${size} bytes, its index ${indexed ?? 'nothing'}; nothing was imported`,
        );
      const out = handler(data, size);
      if (BigInt(out.byteLength) !== size)
        throw invalid(
          `${file}: the chunk at byte ${at} unpacked to ${out.byteLength} bytes, not the ${size} it says`,
        );
      return out;
    };
  return bounded;
}

interface RunDescription {
  run: RunInfo;
  actors: ActorInfo[];
  streams: StreamSchema[];
  attachments: AttachmentInfo[];
}

async function readRunMetadata(reader: McapIndexedReader, file: string): Promise<RunDescription | undefined> {
  if (!reader.metadataIndexes.some((m) => m.name === RUN_METADATA)) return undefined;
  for await (const record of reader.readMetadata({ name: RUN_METADATA })) {
    const field = <T>(key: string): T => {
      const text = record.metadata.get(key);
      if (text === undefined) throw invalid(`${file}: metadata ${RUN_METADATA}.${key}: missing`);
      try {
        return JSON.parse(text) as T;
      } catch (error) {
        throw invalid(`${file}: metadata ${RUN_METADATA}.${key}: not JSON (${(error as Error).message})`);
      }
    };
    return {
      run: field<RunInfo>('run'),
      actors: field<ActorInfo[]>('actors'),
      streams: field<StreamSchema[]>('streams'),
      attachments: field<AttachmentInfo[]>('attachments'),
    };
  }
  return undefined;
}

async function readSimrecExport(
  into: RunTarget,
  reader: McapIndexedReader,
  file: string,
  d: RunDescription,
  options: McapImportOptions,
): Promise<McapImportResult> {
  const sink = await into.beginRun({
    simulator: d.run.simulator,
    description: d.run.description,
    metadata: d.run.metadata,
    begin: d.run.begin,
  });
  await sink.declareActors(d.actors.map(({ presence: _p, ...decl }) => decl as ActorDecl));
  await sink.declareStreams(
    d.streams.map((s) => ({
      name: s.name,
      ...(s.actor === null ? {} : { actor: s.actor }),
      fields: s.fields,
      ...(s.rateHz === undefined ? {} : { rateHz: s.rateHz }),
      metadata: s.metadata,
    })),
  );
  const streamOfChannel = new Map<number, string>();
  for (const [id, channel] of reader.channelsById) {
    const stream = channel.metadata.get('simrec.stream');
    if (stream !== undefined) streamOfChannel.set(id, stream);
  }
  const total = Number(reader.statistics?.messageCount ?? 0n);
  let messages = 0;
  const pending = new PendingSamples(sink);
  for await (const message of reader.readMessages()) {
    messages++;
    const stream = streamOfChannel.get(message.channelId);
    if (stream === undefined) continue; // the Foxglove views (scene, map, transforms, log, images): derived
    const sample = parseJson(message.data, `${file}: message ${message.sequence} on ${stream}`) as Sample;
    pending.push(stream, sample);
    if (pending.full) {
      await pending.flush();
      options.onProgress?.(messages, total);
    }
  }
  await pending.flush();
  const infoOf = new Map(d.attachments.map((a) => [a.name, a] as const));
  for await (const a of reader.readAttachments()) {
    const info = infoOf.get(a.name);
    await sink.attach({
      name: a.name,
      mediaType: a.mediaType,
      data: a.data,
      ...(info?.t === undefined ? {} : { t: info.t }),
      ...(info?.metadata === undefined ? {} : { metadata: info.metadata }),
    });
  }
  for (const actor of d.actors) if (actor.presence) await sink.setPresence(actor.id, actor.presence);
  options.onProgress?.(total, total);
  const run = await sink.end(d.run.endReason ?? 'completed', d.run.end === null ? {} : { end: d.run.end });
  return { run, source: 'simrec', messages };
}

interface SceneEntityMessage {
  timestamp?: WireTime;
  id?: unknown;
  metadata?: { key: string; value: string }[];
  cubes?: { pose?: Pose; size?: { x: number; y: number; z: number } }[];
}
interface Pose {
  position?: { x: number; y: number; z: number };
  orientation?: { x: number; y: number; z: number; w: number };
}
interface TransformMessage {
  timestamp?: WireTime;
  parent_frame_id?: string;
  child_frame_id?: unknown;
  translation?: { x: number; y: number; z: number };
  rotation?: { x: number; y: number; z: number; w: number };
}
/** Foxglove's time: `{sec, nsec}` in JSON, google.protobuf.Timestamp's `{seconds, nanos}` in protobuf. */
type WireTime = Partial<FoxgloveTime> & { seconds?: number; nanos?: number };

const microsOfWire = (time: WireTime): number =>
  microsOf({ sec: time.sec ?? time.seconds ?? 0, nsec: time.nsec ?? time.nanos ?? 0 });

/** OSI's SensorView: its `global_ground_truth` is the world as the simulation has it. */
const OSI_SENSOR_VIEW = 'osi3.SensorView';

/** The Foxglove schemas simrec maps from other tools' files, and what each message holds. */
const MAPPED = {
  'foxglove.SceneUpdate': 'scene',
  'foxglove.FrameTransforms': 'transforms',
  'foxglove.FrameTransform': 'transform',
  [OSI_SCHEMA_NAME]: 'ground_truth',
  [OSI_SENSOR_VIEW]: 'sensor_view',
} as const;
const isOsi = (kind: Mapped): boolean => kind === 'ground_truth' || kind === 'sensor_view';
type Mapped = (typeof MAPPED)[keyof typeof MAPPED];

/**
 * A channel's messages as objects: JSON as it is; protobuf through the FileDescriptorSet the schema
 * record carries (protobufjs), with proto field names and zeros kept, so both read alike.
 */
function messageDecoder(
  channel: { topic: string; messageEncoding: string },
  schema: { name: string; encoding: string; data: Uint8Array },
  enums: typeof Number | typeof String = Number,
  prepare: (root: protobuf.Root) => protobuf.Root = (root) => root,
): ((data: Uint8Array, where: string) => JsonObject) | undefined {
  if (channel.messageEncoding === 'json') return parseJson;
  if (channel.messageEncoding !== 'protobuf' || schema.encoding !== 'protobuf') return undefined;
  let type: protobuf.Type;
  try {
    const root = (protobuf.Root as unknown as DescriptorRoot).fromDescriptor(schema.data, { keepCase: true });
    type = prepare(root).lookupType(schema.name);
  } catch (error) {
    throw invalid(
      `${channel.topic}: schema ${schema.name}: not a protobuf FileDescriptorSet holding it (${(error as Error).message})`,
    );
  }
  return (data, where) => {
    try {
      return type.toObject(type.decode(data), {
        longs: Number,
        enums,
        defaults: true,
        arrays: true,
      });
    } catch (error) {
      throw invalid(`${where}: not a ${schema.name} message (${(error as Error).message})`);
    }
  };
}
interface DescriptorRoot {
  fromDescriptor(descriptor: Uint8Array, options: { keepCase: boolean }): protobuf.Root;
}

/**
 * Another tool's file: its Foxglove SceneUpdates' entities as actors, each entity's first cube's pose
 * its state; and its FrameTransforms: each frame placed directly in a root frame (one that is no
 * frame's child, `world` or `map` usually) an actor of kind `other`, the transform its state.
 * JSON or protobuf alike; every other channel is named in a warning.
 */
async function readFoxgloveScenes(
  into: RunTarget,
  reader: McapIndexedReader,
  file: string,
  options: McapImportOptions,
): Promise<McapImportResult> {
  const warn = options.warn ?? (() => {});
  type Decoder = NonNullable<ReturnType<typeof messageDecoder>>;
  /** `skim`: an OSI channel's decoder that reads its road's lanes as ids only (skimRoad). */
  const channels = new Map<number, { topic: string; kind: Mapped; decode: Decoder; skim?: Decoder }>();
  /** The OSI channel whose ground truth is the run's (the first; another one's is named in a warning). */
  let osiTopic: string | undefined;
  const osiChannels: JsonObject = {};
  for (const [id, channel] of [...reader.channelsById].sort(([a], [b]) => a - b)) {
    const schema = reader.schemasById.get(channel.schemaId);
    const kind = schema ? MAPPED[schema.name as keyof typeof MAPPED] : undefined;
    // OSI's enums by name, from the file's own schema: the names hold across OSI 3.x, the numbers need not.
    const decode =
      schema && kind ? messageDecoder(channel, schema, isOsi(kind) ? String : Number) : undefined;
    if (schema?.name.startsWith('osi3.'))
      osiChannels[channel.topic] = { schema: schema.name, ...Object.fromEntries(channel.metadata) };
    if (kind && decode && isOsi(kind) && osiTopic !== undefined) {
      warn(
        `${channel.topic}: ${schema!.name}, a second OSI ground truth beside ${osiTopic}'s: not mapped (the run's actors are ${osiTopic}'s)`,
      );
      continue;
    }
    if (kind && decode) {
      const skim = isOsi(kind) ? messageDecoder(channel, schema!, String, skimRoad) : undefined;
      channels.set(id, { topic: channel.topic, kind, decode, ...(skim ? { skim } : {}) });
      if (isOsi(kind)) osiTopic = channel.topic;
    } else
      warn(
        `${channel.topic}: ${schema?.name ?? 'schemaless'} (${channel.messageEncoding}) is not mapped; simrec reads Foxglove SceneUpdates and FrameTransforms (JSON or protobuf) and OSI SensorView and GroundTruth from other tools`,
      );
  }
  const trace = await osiTraceMetadata(reader);
  // OSI times count from the trace's zero_time (a Unix time), when the trace says it.
  const zero = typeof trace?.zero_time === 'string' ? Date.parse(trace.zero_time) * 1000 : NaN;
  const offset = Number.isFinite(zero) ? Math.round(zero) : 0;
  if (channels.size === 0)
    throw new SimrecError(
      'unsupported',
      `${file}: neither a simrec export (no ${RUN_METADATA} metadata) nor a file with foxglove.SceneUpdate, foxglove.FrameTransforms, osi3.SensorView or osi3.GroundTruth channels; nothing to import`,
    );
  const topics = [...channels.values()].map((c) => c.topic);
  // Frames that are some transform's child are not roots: a pass over the transforms finds them.
  const children = new Set<string>();
  const transformTopics = [...channels.values()].filter((c) => c.kind !== 'scene').map((c) => c.topic);
  if (transformTopics.length)
    for await (const message of reader.readMessages({ topics: transformTopics })) {
      const channel = channels.get(message.channelId)!;
      const where = `${file}: ${channel.topic} message ${message.sequence}`;
      for (const tf of transformsOf(channel.kind, channel.decode(message.data, where)))
        if (typeof tf.child_frame_id === 'string') children.add(tf.child_frame_id);
    }
  const chained = new Set<string>();

  const begin = Number((reader.statistics?.messageStartTime ?? 0n) / 1000n) + offset;
  const sink: RunSink = await into.beginRun({
    simulator: { name: reader.header.library || 'mcap' },
    description: `imported from ${file}`,
    metadata: {
      mcap: { profile: reader.header.profile, library: reader.header.library, topics },
      ...(osiTopic !== undefined || trace
        ? {
            osi: {
              ...(trace ? { trace } : {}),
              channels: osiChannels,
              ...(osiTopic ? { actorsFrom: osiTopic } : {}),
            },
          }
        : {}),
    },
    begin,
  });
  const declared = new Set<string>();
  /** The actors of the last OSI ground truth. */
  let osiPresent: string[] = [];
  const osiRoad = new OsiRoadCollector();
  const pending = new PendingSamples(sink);
  let messages = 0;
  let step = 0;
  let last = begin;
  // Called for actors not declared yet only: an await per actor and message would cost a tick each.
  const declare = async (
    id: string,
    kind: string,
    size?: { x: number; y: number; z: number },
    attributes?: JsonObject,
  ) => {
    await sink.declareActors([
      {
        id,
        kind,
        ...(size ? { extents: { length: size.x, width: size.y, height: size.z } } : {}),
        ...(attributes ? { attributes } : {}),
      },
    ]);
    await sink.declareStreams([{ name: STATE_STREAM, actor: id, fields: STATE_FIELDS }]);
    declared.add(id);
  };
  const push = (id: string, sample: Sample): void => {
    pending.push(`${id}/${STATE_STREAM}`, sample);
  };
  for await (const message of reader.readMessages({ topics })) {
    messages++;
    const channel = channels.get(message.channelId)!;
    const where = `${file}: ${channel.topic} message ${message.sequence}`;
    // An OSI message is read with its road skimmed, and again whole when it brings a new lane.
    const decoded = (channel.skim ?? channel.decode)(message.data, where);
    const t = Number(message.logTime / 1000n) + offset;
    last = Math.max(last, t);
    if (channel.kind === 'scene') {
      const entities = (decoded.entities ?? []) as SceneEntityMessage[];
      for (const [i, e] of entities.entries()) {
        if (typeof e.id !== 'string' || e.id === '')
          throw invalid(`${where}: entities[${i}].id: expected a string, got ${describeValue(e.id)}`);
        const cube = e.cubes?.[0];
        if (!cube?.pose?.position) continue;
        if (!declared.has(e.id))
          await declare(e.id, e.metadata?.find((m) => m.key === 'kind')?.value ?? 'vehicle', cube.size);
        const p = cube.pose.position;
        push(e.id, {
          t: e.timestamp ? microsOfWire(e.timestamp) : t,
          step,
          x: p.x,
          y: p.y,
          z: p.z - (cube.size?.z ?? 0) / 2,
          yaw: cube.pose.orientation ? yawOf(cube.pose.orientation) : 0,
        });
      }
    } else if (isOsi(channel.kind)) {
      const gt = worldOf(decoded, channel.kind === 'sensor_view', where);
      const view = decoded as SensorViewMessage;
      const stamp = gt.timestamp ?? (channel.kind === 'sensor_view' ? view.timestamp : undefined);
      const at = stamp ? microsOfWire(stamp) + offset : t;
      const host = gt.host_vehicle_id?.value ?? view.host_vehicle_id?.value;
      const present = new Set<string>();
      for (const object of groundTruthObjects(gt, host)) {
        if (present.has(object.id))
          throw invalid(`${where}: OSI id ${object.osiId} twice in one ground truth (${object.id})`);
        present.add(object.id);
        if (!declared.has(object.id)) await declare(object.id, object.kind, object.size, object.attributes);
        push(object.id, { t: at, step, ...object.state });
      }
      // An object absent from a message has left at it (and comes back with its next state).
      const gone = osiPresent.filter((id) => !present.has(id));
      if (gone.length) {
        await pending.flush();
        for (const id of gone) await sink.leave(id, at);
      }
      osiPresent = [...present];
      if (!osiRoad.knows(gt as OsiRoadMessage))
        osiRoad.add(
          (channel.skim
            ? worldOf(channel.decode(message.data, where), channel.kind === 'sensor_view', where)
            : gt) as OsiRoadMessage,
        );
      last = Math.max(last, at);
    } else
      for (const [i, tf] of transformsOf(channel.kind, decoded).entries()) {
        if (typeof tf.child_frame_id !== 'string' || tf.child_frame_id === '')
          throw invalid(
            `${where}: transforms[${i}].child_frame_id: expected a string, got ${describeValue(tf.child_frame_id)}`,
          );
        if (!tf.translation || children.has(tf.parent_frame_id ?? '')) {
          chained.add(tf.child_frame_id);
          continue;
        }
        if (!declared.has(tf.child_frame_id)) await declare(tf.child_frame_id, 'other');
        push(tf.child_frame_id, {
          t: tf.timestamp ? microsOfWire(tf.timestamp) : t,
          step,
          x: tf.translation.x,
          y: tf.translation.y,
          z: tf.translation.z,
          yaw: tf.rotation ? yawOf(tf.rotation) : 0,
        });
      }
    step++;
    if (pending.full) await pending.flush();
  }
  await pending.flush();
  const network = osiRoad.network(warn);
  if (network) await keepRoadNetwork(sink, network);
  if (chained.size)
    warn(
      `frames ${[...chained].sort().join(', ')}: placed in another frame that is itself a child, not in a root frame; not mapped`,
    );
  const run = await sink.end('completed', { end: last });
  return { run, source: 'foxglove', messages };
}

/** The trace's `net.asam.osi.trace` metadata record (version, zero_time, authors...), if it has one. */
async function osiTraceMetadata(reader: McapIndexedReader): Promise<JsonObject | undefined> {
  if (!reader.metadataIndexes.some((m) => m.name === OSI_TRACE_METADATA)) return undefined;
  for await (const record of reader.readMetadata({ name: OSI_TRACE_METADATA }))
    return Object.fromEntries(record.metadata);
  return undefined;
}

function transformsOf(kind: Mapped, message: JsonObject): TransformMessage[] {
  if (kind === 'transform') return [message];
  return kind === 'transforms' ? ((message.transforms ?? []) as TransformMessage[]) : [];
}

function parseJson(data: Uint8Array, where: string): JsonObject {
  try {
    const value: unknown = JSON.parse(decoder.decode(data));
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Error('not a JSON object');
    return value as JsonObject;
  } catch (error) {
    throw invalid(`${where}: expected a JSON object: ${(error as Error).message}`);
  }
}
