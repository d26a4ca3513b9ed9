import { McapIndexedReader, type DecompressHandlers } from '@mcap/core';
import type { AttachmentInfo } from '../../model/attachment.js';
import { describeValue, invalid, notFound, SimrecError } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { RunSink, RunTarget } from '../../model/run-ports.js';
import type { ActorDecl, ActorInfo, RunInfo } from '../../model/run.js';
import { STATE_FIELDS, STATE_STREAM } from '../../model/standard-streams.js';
import type { StreamAppend } from '../../model/store-port.js';
import type { Sample, StreamSchema } from '../../model/stream.js';
import { FileReadable } from './mcap-files.js';
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

/** Samples gathered before each durable write. */
const BATCH = 20_000;
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads an MCAP file as a run. A file simrec wrote is read back whole, from its `simrec.run` metadata
 * and its stream channels. Any other file's Foxglove SceneUpdates (JSON) become actors and states: an
 * entity an actor, a cube's pose its state; what cannot be mapped is named in a warning.
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
    try {
      reader = await McapIndexedReader.Initialize({ readable, decompressHandlers: options.decompress ?? {} });
    } catch (error) {
      throw invalid(`${file}: not an indexed MCAP file (${(error as Error).message})`);
    }
    const described = await readRunMetadata(reader, file);
    return described
      ? await readSimrecExport(into, reader, file, described, options)
      : await readFoxgloveScenes(into, reader, file, options);
  } finally {
    await readable.close();
  }
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
  let pending = new Map<string, Sample[]>();
  let count = 0;
  const flush = async (): Promise<void> => {
    const appends: StreamAppend[] = [...pending].map(([stream, samples]) => ({ stream, samples }));
    pending = new Map();
    count = 0;
    if (appends.length) await sink.appendMany(appends);
  };
  for await (const message of reader.readMessages()) {
    messages++;
    const stream = streamOfChannel.get(message.channelId);
    if (stream === undefined) continue; // the Foxglove views (scene, map, transforms, log, images): derived
    const sample = parseJson(message.data, `${file}: message ${message.sequence} on ${stream}`) as Sample;
    const list = pending.get(stream);
    if (list) list.push(sample);
    else pending.set(stream, [sample]);
    if (++count >= BATCH) {
      await flush();
      options.onProgress?.(messages, total);
    }
  }
  await flush();
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
  timestamp?: FoxgloveTime;
  id?: unknown;
  metadata?: { key: string; value: string }[];
  cubes?: { pose?: Pose; size?: { x: number; y: number; z: number } }[];
}
interface Pose {
  position?: { x: number; y: number; z: number };
  orientation?: { x: number; y: number; z: number; w: number };
}

/** Another tool's file: its JSON SceneUpdates' entities as actors, each cube's pose as the state. */
async function readFoxgloveScenes(
  into: RunTarget,
  reader: McapIndexedReader,
  file: string,
  options: McapImportOptions,
): Promise<McapImportResult> {
  const warn = options.warn ?? (() => {});
  const scenes: string[] = [];
  for (const channel of reader.channelsById.values()) {
    const schema = reader.schemasById.get(channel.schemaId);
    if (schema?.name === 'foxglove.SceneUpdate' && channel.messageEncoding === 'json')
      scenes.push(channel.topic);
    else
      warn(
        `${channel.topic}: ${schema?.name ?? 'schemaless'} (${channel.messageEncoding}) is not mapped; simrec reads Foxglove SceneUpdates in JSON from other tools`,
      );
  }
  if (scenes.length === 0)
    throw new SimrecError(
      'unsupported',
      `${file}: neither a simrec export (no ${RUN_METADATA} metadata) nor a file with JSON foxglove.SceneUpdate channels; nothing to import`,
    );
  const begin = Number((reader.statistics?.messageStartTime ?? 0n) / 1000n);
  const sink: RunSink = await into.beginRun({
    simulator: { name: reader.header.library || 'mcap' },
    description: `imported from ${file}`,
    metadata: { mcap: { profile: reader.header.profile, library: reader.header.library, topics: scenes } },
    begin,
  });
  const declared = new Set<string>();
  const pending = new Map<string, Sample[]>();
  let messages = 0;
  let step = 0;
  let last = begin;
  let count = 0;
  const flush = async (): Promise<void> => {
    const appends = [...pending].map(([stream, samples]) => ({ stream, samples }));
    pending.clear();
    count = 0;
    if (appends.length) await sink.appendMany(appends);
  };
  for await (const message of reader.readMessages({ topics: scenes })) {
    messages++;
    const where = `${file}: message ${message.sequence}`;
    const update = parseJson(message.data, where) as { entities?: SceneEntityMessage[] };
    const t = Number(message.logTime / 1000n);
    last = t;
    for (const [i, e] of (update.entities ?? []).entries()) {
      if (typeof e.id !== 'string' || e.id === '')
        throw invalid(`${where}.entities[${i}].id: expected a string, got ${describeValue(e.id)}`);
      const cube = e.cubes?.[0];
      if (!cube?.pose?.position) continue;
      if (!declared.has(e.id)) {
        const kind = e.metadata?.find((m) => m.key === 'kind')?.value ?? 'vehicle';
        const size = cube.size;
        await sink.declareActors([
          { id: e.id, kind, ...(size ? { extents: { length: size.x, width: size.y, height: size.z } } : {}) },
        ]);
        await sink.declareStreams([{ name: STATE_STREAM, actor: e.id, fields: STATE_FIELDS }]);
        declared.add(e.id);
      }
      const p = cube.pose.position;
      const height = cube.size?.z ?? 0;
      const sample: Sample = {
        t: e.timestamp ? microsOf(e.timestamp) : t,
        step,
        x: p.x,
        y: p.y,
        z: p.z - height / 2,
        yaw: cube.pose.orientation ? yawOf(cube.pose.orientation) : 0,
      };
      const stream = `${e.id}/${STATE_STREAM}`;
      const list = pending.get(stream);
      if (list) list.push(sample);
      else pending.set(stream, [sample]);
      count++;
    }
    step++;
    if (count >= BATCH) await flush();
  }
  await flush();
  const run = await sink.end('completed', { end: last });
  return { run, source: 'foxglove', messages };
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
