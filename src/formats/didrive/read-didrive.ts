/**
 * A DI-drive benchmark dataset in as runs, one per episode. Both the code's file names and the
 * documentation's are read; the 20- and 29-float (CICT) vectors are told apart by their length.
 * Everything the episode holds is kept (the raw vectors, every other LMDB value, every other file, the
 * metadata files' text), so that exporting the runs gives the same bytes back.
 *
 * An episode is checked whole before its run is written; should anything fail after, the work layer
 * removes every run the import began (record/import-run.ts).
 */
import { decode as decodePng } from 'fast-png';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describeValue, invalid, notFound } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import { capturesStreamDecl, type PerceptionSensor } from '../../model/perception.js';
import type { RunInfo } from '../../model/run.js';
import { controlStream, stateStream } from '../../model/standard-streams.js';
import type { RunTarget } from '../../model/run-ports.js';
import type { StreamAppend } from '../../model/store-port.js';
import { degToRad } from '../../model/units.js';
import {
  BIRDVIEW_KEY,
  BIRDVIEW_SHAPE,
  DATASET_METAINFO,
  EPISODE_METAINFO,
  FRAME_FILE_PATTERN,
  FRAME_KEY_PATTERN,
  frameName,
  LEN_KEY,
  layoutName,
  MEASUREMENTS_KEY,
  MEASUREMENTS_LMDB,
  MEASUREMENT_LAYOUTS,
  STEP_MICROS,
  type MeasurementLayout,
} from './didrive-layout.js';
import {
  didriveStreamDecl,
  EGO_ID,
  EPISODE_METAINFO_ATTACHMENT,
  EXTRA_FILE_PREFIX,
  IMAGE_PREFIX,
  LMDB_VALUE_PREFIX,
  METAINFO_ATTACHMENT,
  RUN_METADATA_KEY,
} from './didrive-run.js';
import { readLmdb } from './lmdb-file.js';

export interface DidriveImportOptions {
  warn?: (message: string) => void;
  onProgress?: (done: number, total: number) => void;
}

export interface DidriveImportResult {
  runs: { episode: string; run: RunInfo; frames: number; images: number; layout: string }[];
}

/** LMDB values DI-drive stores as uint8 (`lmdb_obs`); every other `others` key is float32. */
const UINT8_KEYS = new Set([BIRDVIEW_KEY, 'lidar']);

interface MetaFile {
  name: string;
  bytes: Buffer;
  parsed: JsonObject;
}

interface Episode {
  name: string;
  dir: string;
  layout: MeasurementLayout;
  vectors: Float32Array[];
  /** Other LMDB keys, in key order. */
  otherKeys: string[];
  /** obs name -> frame -> file name. */
  cameras: Map<string, Map<number, string>>;
  imageSizes: Map<string, { width: number; height: number }>;
  extraFiles: string[];
  metainfo?: MetaFile;
}

export async function importDidrive(
  into: RunTarget,
  location: string,
  options: DidriveImportOptions = {},
): Promise<DidriveImportResult> {
  const warn = options.warn ?? (() => {});
  if (!existsSync(location) || !statSync(location).isDirectory())
    throw notFound(`${location}: no such folder; expected a DI-drive dataset (metainfo.json, episode_%05d/)`);
  // The dataset's folder, or one episode's folder given on its own.
  const single = existsSync(join(location, MEASUREMENTS_LMDB));
  const root = single ? join(location, '..') : location;
  const datasetMeta = readMetaFile(root, DATASET_METAINFO, 'dataset');
  const episodeDirs = single
    ? [location]
    : readdirSync(location)
        .filter((n) => existsSync(join(location, n, MEASUREMENTS_LMDB)))
        .sort()
        .map((n) => join(location, n));
  if (episodeDirs.length === 0)
    throw notFound(
      `${location}: no episode folders holding ${MEASUREMENTS_LMDB}/; expected a DI-drive dataset (episode_%05d/${MEASUREMENTS_LMDB})`,
    );
  if (!datasetMeta && !single) warn(`${location}: no ${DATASET_METAINFO.join(' or ')}; read on without it`);

  const episodes = episodeDirs.map((dir) => readEpisode(dir, warn));
  const totalFrames = episodes.reduce((n, e) => n + e.vectors.length, 0);
  const result: DidriveImportResult = { runs: [] };
  let done = 0;
  for (const episode of episodes) {
    const run = await storeEpisode(into, episode, datasetMeta, root, (frames) => {
      done += frames;
      options.onProgress?.(done, totalFrames);
    });
    result.runs.push({
      episode: episode.name,
      run,
      frames: episode.vectors.length,
      images: [...episode.cameras.values()].reduce((n, m) => n + m.size, 0),
      layout: layoutName(episode.layout),
    });
  }
  return result;
}

function readMetaFile(dir: string, names: readonly string[], what: string): MetaFile | undefined {
  for (const name of names) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      throw invalid(`${file}: the ${what} metadata is not JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw invalid(`${file}: the ${what} metadata must be a JSON object, got ${describeValue(parsed)}`);
    return { name, bytes, parsed: parsed as JsonObject };
  }
  return undefined;
}

/** Reads and checks one episode: its LMDB's vectors and keys, its camera frames (decoded), its files. */
function readEpisode(dir: string, warn: (message: string) => void): Episode {
  const name = basename(dir);
  const lmdbDir = join(dir, MEASUREMENTS_LMDB);
  let count: number | undefined;
  const vectors = new Map<number, Float32Array>();
  const otherKeys: string[] = [];
  let layout: MeasurementLayout | undefined;
  for (const { key: keyBytes, value } of readLmdb(lmdbDir)) {
    const key = keyBytes.toString('latin1');
    if (key === LEN_KEY) {
      const text = value.toString('latin1');
      if (!/^\d+$/.test(text))
        throw invalid(
          `${name}: ${MEASUREMENTS_LMDB} key len: expected the frame count in ASCII digits, got ${describeValue(text)}`,
        );
      count = Number(text);
      continue;
    }
    const match = FRAME_KEY_PATTERN.exec(key);
    if (match?.[1] === MEASUREMENTS_KEY) {
      const frame = Number(match[2]);
      const floats = value.length / 4;
      const found = MEASUREMENT_LAYOUTS[floats];
      if (value.length % 4 !== 0 || !found)
        throw invalid(
          `${name} frame ${frame}: ${key} holds ${value.length} bytes (${value.length / 4} float32); expected 20 floats (80 bytes, DI-drive's vector) or 29 (116 bytes, the CICT saver's)`,
        );
      if (layout && layout !== found)
        throw invalid(
          `${name} frame ${frame}: ${key} has ${floats} floats while earlier frames have ${layout.length}`,
        );
      layout = found;
      const copy = new Uint8Array(value);
      vectors.set(frame, new Float32Array(copy.buffer));
      continue;
    }
    otherKeys.push(key);
  }
  if (count === undefined)
    throw invalid(
      `${name}: ${MEASUREMENTS_LMDB} has no key len (the frame count DI-drive's loaders read first)`,
    );
  if (!layout && count > 0)
    throw invalid(`${name}: ${MEASUREMENTS_LMDB} says len ${count} but holds no measurements`);
  const ordered: Float32Array[] = [];
  for (let i = 0; i < count; i++) {
    const v = vectors.get(i);
    if (!v)
      throw invalid(
        `${name} frame ${i}: ${frameName(MEASUREMENTS_KEY, i)} is missing from ${MEASUREMENTS_LMDB} (len says ${count} frames)`,
      );
    ordered.push(v);
  }
  const beyond = [...vectors.keys()].filter((i) => i >= count);
  if (beyond.length)
    warn(
      `${name}: ${beyond.length} measurements beyond len ${count} (first ${frameName(MEASUREMENTS_KEY, Math.min(...beyond))}); kept as extra LMDB values`,
    );
  for (const i of beyond) otherKeys.push(frameName(MEASUREMENTS_KEY, i));
  otherKeys.sort();

  const cameras = new Map<string, Map<number, string>>();
  const imageSizes = new Map<string, { width: number; height: number }>();
  const extraFiles: string[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (file === MEASUREMENTS_LMDB || (EPISODE_METAINFO as readonly string[]).includes(file)) continue;
    const path = join(dir, file);
    if (!statSync(path).isFile()) {
      warn(`${name}: ${file} is a folder, not a DI-drive file; left out`);
      continue;
    }
    const match = FRAME_FILE_PATTERN.exec(file);
    const frame = match ? Number(match[2]) : -1;
    if (!match || frame >= count) {
      if (match)
        warn(`${name} frame ${frame}: ${file} lies beyond len ${count}; kept as a file, not a frame`);
      extraFiles.push(file);
      continue;
    }
    let size: { width: number; height: number };
    try {
      const image = decodePng(readFileSync(path));
      size = { width: image.width, height: image.height };
    } catch (error) {
      throw invalid(`${name} frame ${frame}: ${file} does not decode as PNG: ${(error as Error).message}`);
    }
    const obs = match[1]!;
    if (!cameras.has(obs)) cameras.set(obs, new Map());
    cameras.get(obs)!.set(frame, file);
    if (!imageSizes.has(obs)) imageSizes.set(obs, size);
  }
  for (const [obs, frames] of cameras) {
    const missing: number[] = [];
    for (let i = 0; i < count; i++) if (!frames.has(i)) missing.push(i);
    if (missing.length)
      warn(
        `${name}: camera ${obs} has no image for ${missing.length} of ${count} frames (first missing: frame ${missing[0]}, ${frameName(obs, missing[0]!)}.png)`,
      );
  }
  const metainfo = readMetaFile(dir, EPISODE_METAINFO, `episode ${name}`);
  if (!metainfo) warn(`${name}: no ${EPISODE_METAINFO.join(' or ')}; read on without it`);
  return {
    name,
    dir,
    layout: layout ?? MEASUREMENT_LAYOUTS[20]!,
    vectors: ordered,
    otherKeys,
    cameras,
    imageSizes,
    extraFiles,
    ...(metainfo ? { metainfo } : {}),
  };
}

/** The canonical ego state of one vector: CARLA's left-handed frame mirrored in y, km/h to m/s. */
function stateOf(m: Float32Array, L: MeasurementLayout): Record<string, number> {
  const at = (i: number): number => m[i]!;
  const state: Record<string, number> = {
    x: at(L.location),
    y: -at(L.location + 1),
    z: at(L.location + 2),
    yaw: Math.atan2(-at(L.forward + 1), at(L.forward)),
    speed: at(L.speed) / 3.6,
    ax: at(L.acceleration),
    ay: -at(L.acceleration + 1),
    az: at(L.acceleration + 2),
  };
  if (L.rotation !== undefined) {
    // CICT: pitch, yaw, roll in degrees, CARLA's (Unreal's) rotator: mirroring y negates pitch and yaw.
    state.pitch = -degToRad(at(L.rotation));
    state.yaw = -degToRad(at(L.rotation + 1));
    state.roll = degToRad(at(L.rotation + 2));
  }
  if (L.velocity !== undefined)
    Object.assign(state, { vx: at(L.velocity), vy: -at(L.velocity + 1), vz: at(L.velocity + 2) });
  if (L.angularVelocity !== undefined)
    // An angular velocity is a pseudo-vector: the mirror flips its x and z, not its y. CARLA gives deg/s.
    Object.assign(state, {
      wx: -degToRad(at(L.angularVelocity)),
      wy: degToRad(at(L.angularVelocity + 1)),
      wz: -degToRad(at(L.angularVelocity + 2)),
    });
  return state;
}

async function storeEpisode(
  into: RunTarget,
  episode: Episode,
  datasetMeta: MetaFile | undefined,
  root: string,
  progress: (frames: number) => void,
): Promise<RunInfo> {
  const L = episode.layout;
  const env = episode.metainfo?.parsed ?? {};
  const metadata: JsonObject = {
    [RUN_METADATA_KEY]: {
      dataset: basename(root),
      episode: episode.name,
      layout: layoutName(L),
      ...(datasetMeta ? { metainfoFile: datasetMeta.name, metainfo: datasetMeta.parsed } : {}),
      ...(episode.metainfo ? { episodeMetainfoFile: episode.metainfo.name, episodeMetainfo: env } : {}),
    },
  };
  for (const key of ['town', 'weather', 'start', 'end'])
    if (env[key] !== undefined) metadata[key] = env[key]!;
  const rec = await into.beginRun({
    simulator: { name: 'carla' },
    description: `DI-drive ${episode.name} of ${basename(root)}`,
    metadata,
  });
  {
    const begin = rec.run.begin;
    const sensors = [...episode.cameras.keys()];
    // An obs named like the ego (it never is in DI-drive, but names are free) gets another actor id.
    const sensorActor = (obs: string): string => (obs === EGO_ID ? `sensor:${obs}` : obs);
    await rec.declareActors([
      {
        id: EGO_ID,
        kind: 'ego',
        sourceClass: 'vehicle.didrive.hero',
        attributes: { perception: { id: EGO_ID, description: 'DI-drive hero vehicle' } },
      },
      ...sensors.map((obs) => {
        const size = episode.imageSizes.get(obs);
        const sensor: PerceptionSensor = {
          id: obs,
          modality: 'camera',
          ego: EGO_ID,
          description: `DI-drive obs ${obs}`,
          ...(size ? { imageSize: size } : {}),
        };
        return {
          id: sensorActor(obs),
          kind: 'sensor',
          sourceClass: `didrive.${obs}`,
          attributes: { perception: sensor as unknown as JsonObject, [RUN_METADATA_KEY]: { obs } },
        };
      }),
    ]);
    await rec.declareStreams([
      stateStream(EGO_ID, { rateHz: 10 }),
      controlStream(EGO_ID, { rateHz: 10 }),
      didriveStreamDecl(EGO_ID, L),
      ...sensors.map((obs) => capturesStreamDecl(sensorActor(obs))),
    ]);
    if (datasetMeta)
      await rec.attach({
        name: METAINFO_ATTACHMENT,
        mediaType: 'application/json',
        data: datasetMeta.bytes,
        metadata: { file: datasetMeta.name },
      });
    if (episode.metainfo)
      await rec.attach({
        name: EPISODE_METAINFO_ATTACHMENT,
        mediaType: 'application/json',
        data: episode.metainfo.bytes,
        metadata: { file: episode.metainfo.name },
      });
    const frameTime = (i: number): number => begin + i * STEP_MICROS;

    for (const [i, m] of episode.vectors.entries()) {
      const t = frameTime(i);
      const control = (k: number): number => m[L.control + k]!;
      const appends: StreamAppend[] = [
        { stream: `${EGO_ID}/state`, samples: [{ t, step: i, ...stateOf(m, L) }] },
        {
          stream: `${EGO_ID}/control`,
          samples: [{ t, step: i, steer: control(0), throttle: control(1), brake: control(2) }],
        },
        {
          stream: `${EGO_ID}/didrive`,
          samples: [
            {
              t,
              step: i,
              frame: i,
              measurements: Array.from(m),
              command: Math.trunc(m[L.command]!),
              tl_state: Math.trunc(m[L.tlState]!),
              tl_dis: m[L.tlDistance]!,
            },
          ],
        },
      ];
      for (const obs of sensors) {
        const file = episode.cameras.get(obs)!.get(i);
        if (!file) continue;
        const attachment = `${IMAGE_PREFIX}${file}`;
        const size = episode.imageSizes.get(obs);
        await rec.attach({
          name: attachment,
          mediaType: 'image/png',
          t,
          data: readFileSync(join(episode.dir, file)),
          metadata: { episode: episode.name, frame: i, obs },
        });
        appends.push({
          stream: `${sensorActor(obs)}/captures`,
          samples: [
            {
              t,
              step: i,
              id: `${episode.name}/${file}`,
              sequence: episode.name,
              timestamp: m[L.timestamp]!,
              ego_id: EGO_ID,
              file: attachment,
              format: 'PNG',
              ...(size ? { width: size.width, height: size.height } : {}),
              annotations: [],
            },
          ],
        });
      }
      const durable = rec.appendMany(appends);
      // Waiting once per 100 frames shares one commit among them; each append is still checked at once.
      if ((i + 1) % 100 === 0 || i === episode.vectors.length - 1) {
        await durable;
        progress((i % 100) + 1);
      }
    }

    // The other LMDB values, read again here rather than held in memory (a birdview is 700 kB a frame).
    const others = new Set(episode.otherKeys);
    for (const { key: keyBytes, value } of readLmdb(join(episode.dir, MEASUREMENTS_LMDB))) {
      const key = keyBytes.toString('latin1');
      if (!others.has(key)) continue;
      const match = FRAME_KEY_PATTERN.exec(key);
      const frame = match ? Number(match[2]) : undefined;
      const uint8 = match ? UINT8_KEYS.has(match[1]!) : false;
      await rec.attach({
        name: `${LMDB_VALUE_PREFIX}${encodeURIComponent(key)}`,
        mediaType: 'application/octet-stream',
        ...(frame !== undefined && frame < episode.vectors.length ? { t: frameTime(frame) } : {}),
        data: value,
        metadata: {
          key,
          ...(frame !== undefined ? { frame } : {}),
          dtype: uint8 ? 'uint8' : 'float32',
          ...(match?.[1] === BIRDVIEW_KEY ? { shape: [...BIRDVIEW_SHAPE] } : {}),
        },
      });
    }
    for (const file of episode.extraFiles)
      await rec.attach({
        name: `${EXTRA_FILE_PREFIX}${file}`,
        mediaType: file.endsWith('.png') ? 'image/png' : 'application/octet-stream',
        data: readFileSync(join(episode.dir, file)),
      });
    return await rec.end('completed', { end: frameTime(Math.max(0, episode.vectors.length - 1)) });
  }
}
