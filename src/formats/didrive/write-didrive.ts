/**
 * Runs out as a DI-drive benchmark dataset: `metainfo.json`, one `episode_%05d/` per run with
 * `episode_metainfo.json`, `measurements.lmdb/` and `<camera>_%05d.png`, and `index.txt`.
 *
 * A run imported from DI-drive keeps its measurement vectors (stream `<ego>/didrive`), its other LMDB
 * values and its metadata files' text; those are written back as they came, so export -> import ->
 * export gives the same bytes. Any other run has its vectors derived from the ego's canonical state
 * on DI-drive's 0.1 s step, converted to CARLA's frame (left-handed: y mirrored, yaw negated) here.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { conflict, invalid, notFound } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import { CAPTURES_STREAM, captureImageName } from '../../model/perception.js';
import type { ActorInfo, RunInfo } from '../../model/run.js';
import { CONTROL_STREAM, STATE_STREAM } from '../../model/standard-streams.js';
import type { RunSource } from '../../model/run-ports.js';
import { readStreamSamples } from '../../model/sample-series.js';
import type { Sample, StreamInfo } from '../../model/stream.js';
import { interpolateSample } from '../../model/interpolate.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import {
  BIRDVIEW_KEY,
  DATASET_METAINFO,
  EPISODE_METAINFO,
  EPISODE_PATTERN,
  episodeName,
  frameName,
  INDEX_FILE,
  LEN_KEY,
  MEASUREMENTS_KEY,
  MEASUREMENTS_LMDB,
  MEASUREMENT_LAYOUTS,
  pythonJsonDumps,
  STEP_MICROS,
} from './didrive-layout.js';
import {
  DIDRIVE_STREAM,
  EPISODE_METAINFO_ATTACHMENT,
  EXTRA_FILE_PREFIX,
  LMDB_VALUE_PREFIX,
  METAINFO_ATTACHMENT,
  obsNameOf,
} from './didrive-run.js';
import { LmdbWriter } from './lmdb-file.js';
import { frameContexts, sampleAt, type SignalTimeline } from './route-context.js';
import { encode as encodePng } from 'fast-png';
import { BIRDVIEW_OBS, BIRDVIEW_SIZE, renderBirdview } from './birdview.js';
import { loadBirdviewSource, type BirdviewSource } from './birdview-scene.js';
import { LeftOut } from '../common/left-out.js';

export interface DidriveExportOptions {
  /** Replace what is at the location. */
  overwrite?: boolean;
  /** Add the runs as the next episodes of the dataset already at the location. */
  append?: boolean;
  warn?: (message: string) => void;
  onProgress?: (done: number, total: number) => void;
}

export interface DidriveExportResult {
  episodes: {
    run: number;
    episode: string;
    frames: number;
    images: number;
    derived: boolean;
    birdviews: number;
  }[];
  frames: number;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const encoder = new TextEncoder();

/** One episode ready to write: everything but the big values, which are read as they are written. */
interface EpisodeSource {
  from: RunSource;
  run: RunInfo;
  vectors: Float32Array[];
  /** LMDB keys besides len and measurements, with the attachment that holds each value. */
  lmdbValues: Map<string, string>;
  images: { file: string; attachment: string }[];
  extraFiles: { file: string; attachment: string }[];
  episodeMetainfo: Uint8Array;
  datasetMetainfo?: Uint8Array;
  obs: Set<string>;
  derived: boolean;
  /** Frames whose `birdview_%05d` is drawn from the run's scene (a run that did not come with one). */
  birdview?: { source: BirdviewSource; frameTimes: number[] };
  /** No camera: `rgb_%05d.png` are the bird's-eye view in colour, so frame-listing loaders find frames. */
  rgbFromBirdview?: boolean;
}

export async function exportDidrive(
  runs: readonly RunSource[],
  location: string,
  options: DidriveExportOptions = {},
): Promise<DidriveExportResult> {
  if (runs.length === 0) throw invalid('RUN: expected at least one run to export');
  const warn = options.warn ?? (() => {});
  const sources: EpisodeSource[] = [];
  for (const run of runs) sources.push(await loadEpisode(run, warn));
  const totalFrames = sources.reduce((n, s) => n + s.vectors.length, 0);
  let done = 0;
  const progress = (frames: number): void => {
    done += frames;
    options.onProgress?.(done, totalFrames);
  };

  const result: DidriveExportResult = { episodes: [], frames: totalFrames };
  if (options.append) {
    const first = nextEpisodeNumber(location);
    // Episodes are written under hidden names and renamed only once all of them are complete.
    const staged: [string, string][] = [];
    try {
      for (const [k, source] of sources.entries()) {
        const name = episodeName(first + k);
        const temp = join(location, `.${name}.partial-${process.pid}`);
        staged.push([temp, join(location, name)]);
        await writeEpisode(source, temp, progress);
        result.episodes.push(summary(source, name));
      }
      const index = join(location, INDEX_FILE);
      const before = existsSync(index) ? readFileSync(index, 'utf8') : '';
      const lines = sources.map((s, k) => indexLines(episodeName(first + k), s.vectors)).join('');
      writeFileSync(`${index}.partial`, before + lines);
      for (const [temp, final] of staged) renameSync(temp, final);
      renameSync(`${index}.partial`, index);
    } catch (error) {
      for (const [temp] of staged) rmSync(temp, { recursive: true, force: true });
      rmSync(join(location, `${INDEX_FILE}.partial`), { force: true });
      throw error;
    }
    return result;
  }

  if (existsSync(location) && !(statSync(location).isDirectory() && readdirSync(location).length === 0)) {
    if (!options.overwrite)
      throw conflict(
        `${location} already exists and is not empty; use --force to replace it, or --episode-of to add episodes to it`,
      );
  }
  const temp = join(dirname(location), `.${basename(location)}.partial-${process.pid}`);
  rmSync(temp, { recursive: true, force: true });
  try {
    mkdirSync(temp, { recursive: true });
    writeFileSync(join(temp, DATASET_METAINFO[0]), datasetMetainfo(sources));
    for (const [k, source] of sources.entries()) {
      const name = episodeName(k);
      await writeEpisode(source, join(temp, name), progress);
      result.episodes.push(summary(source, name));
    }
    writeFileSync(
      join(temp, INDEX_FILE),
      sources.map((s, k) => indexLines(episodeName(k), s.vectors)).join(''),
    );
    rmSync(location, { recursive: true, force: true });
    renameSync(temp, location);
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw error;
  }
  return result;
}

const summary = (s: EpisodeSource, episode: string): DidriveExportResult['episodes'][number] => ({
  run: s.run.id,
  episode,
  frames: s.vectors.length,
  images: s.rgbFromBirdview ? s.vectors.length : s.images.length,
  derived: s.derived,
  birdviews: s.birdview?.frameTimes.length ?? [...s.lmdbValues.keys()].filter(isBirdviewKey).length,
});

const isBirdviewKey = (key: string): boolean => key.startsWith(`${BIRDVIEW_KEY}_`);

/** `make_index`: one line per frame, the command truncated to an int as Python's int() does. */
const indexLines = (episode: string, vectors: Float32Array[]): string =>
  vectors.map((v, i) => `${episode},${i},${Math.trunc(v[11]!)}\n`).join('');

function nextEpisodeNumber(location: string): number {
  if (!existsSync(location) || !statSync(location).isDirectory())
    throw notFound(`--episode-of ${location}: no DI-drive dataset there (not a folder)`);
  const names = readdirSync(location);
  const numbers = names
    .map((n) => EPISODE_PATTERN.exec(n))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]));
  if (numbers.length === 0 && !DATASET_METAINFO.some((n) => names.includes(n)))
    throw notFound(
      `--episode-of ${location}: no DI-drive dataset there (no ${DATASET_METAINFO.join(' or ')} and no episode_%05d folders)`,
    );
  return numbers.length ? Math.max(...numbers) + 1 : 0;
}

/** The first run's kept metainfo.json, or one in DI-drive's shape: the collector's settings plus obs. */
function datasetMetainfo(sources: EpisodeSource[]): Uint8Array {
  const kept = sources.find((s) => s.datasetMetainfo)?.datasetMetainfo;
  if (kept) return kept;
  const obs: JsonObject = {};
  for (const name of [...new Set(sources.flatMap((s) => [...s.obs]))].sort()) obs[name] = { type: 'rgb' };
  if (sources.some((s) => s.birdview)) obs[BIRDVIEW_KEY] = BIRDVIEW_OBS;
  return encoder.encode(pythonJsonDumps({ n_episode: sources.length, obs, writer: 'simrec' }));
}

async function writeEpisode(
  source: EpisodeSource,
  dir: string,
  progress: (frames: number) => void,
): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const from = source.from;
  writeFileSync(join(dir, EPISODE_METAINFO[0]), source.episodeMetainfo);
  const values = new Map<string, () => Promise<Uint8Array>>();
  values.set(LEN_KEY, async () => encoder.encode(String(source.vectors.length)));
  source.vectors.forEach((v, i) =>
    values.set(
      frameName(MEASUREMENTS_KEY, i),
      async () => new Uint8Array(v.buffer, v.byteOffset, v.byteLength),
    ),
  );
  // The values are asked for in key order: the birdviews' in time order, as one walk draws them.
  const birdviewAt = await source.birdview?.source.walk();
  source.birdview?.frameTimes.forEach((t, i) =>
    values.set(frameName(BIRDVIEW_KEY, i), async () => renderBirdview(await birdviewAt!(t)).lmdbValue()),
  );
  for (const [key, attachment] of source.lmdbValues)
    if (!values.has(key)) values.set(key, async () => (await requireAttachment(from, attachment)).data);
  const keys = [...values.keys()].map((k) => Buffer.from(k, 'latin1')).sort((a, b) => Buffer.compare(a, b));
  const lmdb = new LmdbWriter(join(dir, MEASUREMENTS_LMDB));
  try {
    for (const key of keys) lmdb.add(key, await values.get(key.toString('latin1'))!());
    lmdb.finish();
  } catch (error) {
    lmdb.abandon();
    throw error;
  }
  for (const { file, attachment } of [...source.images, ...source.extraFiles])
    writeFileSync(join(dir, file), (await requireAttachment(from, attachment)).data);
  if (source.rgbFromBirdview) {
    const colourAt = await source.birdview!.source.walk();
    for (const [i, t] of source.birdview!.frameTimes.entries()) {
      const rgb = renderBirdview(await colourAt(t)).rgb();
      const png = encodePng({
        width: BIRDVIEW_SIZE,
        height: BIRDVIEW_SIZE,
        data: rgb,
        channels: 3,
        depth: 8,
      });
      writeFileSync(join(dir, `${frameName('rgb', i)}.png`), png);
    }
  }
  progress(source.vectors.length);
}

async function requireAttachment(from: RunSource, name: string) {
  const attachment = await from.attachment(name);
  if (!attachment) throw notFound(`run ${from.run.id}: attachment ${name} is listed but cannot be read`);
  return attachment;
}

async function loadEpisode(from: RunSource, warn: (message: string) => void): Promise<EpisodeSource> {
  const { run } = from;
  const runId = run.id;
  const [actors, streams, attachments] = await Promise.all([
    from.actors(),
    from.streams(),
    from.attachments(),
  ]);
  const ego = actors.find((a) => a.kind === 'ego');
  if (!ego)
    throw invalid(
      `run ${runId}: no actor of kind ego; DI-drive's measurements are the ego's, nothing to export`,
    );
  const streamOf = new Map(streams.map((s) => [s.id, s] as const));
  const raw = streamOf.get(`${ego.id}/${DIDRIVE_STREAM}`);
  let vectors: Float32Array[];
  let frameTimes: number[];
  let derived = false;
  if (raw && raw.samples > 0) {
    const samples = await readStreamSamples(from, raw.id);
    vectors = samples.map((s, i) => keptVector(s, runId, i));
    frameTimes = samples.map((s) => s.t);
  } else {
    const leftOut = new LeftOut();
    ({ vectors, frameTimes } = await deriveVectors(from, ego, streams, actors, leftOut));
    derived = true;
    // What the dataset is made of: the ego's measurements, the bird's-eye view of the actors on the
    // road and the lights, and the cameras' images; every other stream is said to be left out.
    for (const s of streams) {
      // The ego's state and control: in part, as deriveVectors said.
      if (s.actor === ego.id && (s.name === STATE_STREAM || s.name === CONTROL_STREAM)) continue;
      const actor = actors.find((a) => a.id === s.actor);
      if (
        (s.name === STATE_STREAM && actor && !BIRDVIEW_SKIPS.has(actor.kind)) ||
        (s.name === 'signal' && actor?.kind === 'traffic_light') ||
        s.name === CAPTURES_STREAM
      )
        leftOut.all(s);
    }
    leftOut.warn(
      streams,
      (message) => warn(`run ${runId}: ${message}`),
      () =>
        "DI-drive's dataset has no place for it (it holds the ego's measurement vector, the bird's-eye view and camera images)",
      (name) =>
        name === CONTROL_STREAM
          ? "the measurement vector holds the ego's steer, throttle and brake only"
          : "the measurement vector holds the ego's position, heading, pitch, velocity, acceleration and lane only",
    );
  }

  const names = new Set(attachments.map((a) => a.name));
  const lmdbValues = new Map<string, string>();
  const extraFiles: EpisodeSource['extraFiles'] = [];
  for (const a of attachments) {
    if (a.name.startsWith(LMDB_VALUE_PREFIX))
      lmdbValues.set(decodeURIComponent(a.name.slice(LMDB_VALUE_PREFIX.length)), a.name);
    else if (a.name.startsWith(EXTRA_FILE_PREFIX))
      extraFiles.push({ file: basename(a.name.slice(EXTRA_FILE_PREFIX.length)), attachment: a.name });
  }
  const { images, obs } = await cameraFrames(from, actors, streamOf, frameTimes, names, warn);
  // A run that came from DI-drive is written back as it came (byte for byte), birdview or not.
  const birdview =
    !derived || [...lmdbValues.keys()].some(isBirdviewKey)
      ? undefined
      : { source: await loadBirdviewSource(from), frameTimes };
  // DI-drive's LBC and CILRS loaders list an episode's frames by its rgb_*.png: without a camera they
  // would find none. The bird's-eye view, drawn in colour, stands in, and the warning says so.
  const rgbFromBirdview = derived && images.length === 0 && birdview !== undefined;
  if (rgbFromBirdview) {
    obs.add('rgb');
    warn(
      `run ${runId}: no camera captures in PNG, so rgb_%05d.png are the bird's-eye view drawn in colour (as simrec birdview draws it): LBCBirdViewDataset and BeVVAEDataset train on the birdview and find every frame; LBCImageDataset and CILRS would learn from these pictures, not from a camera (record the run with a camera for image models)`,
    );
  }
  if (birdview && !birdview.source.network)
    warn(
      `run ${runId}: no road network attached, so the birdview's road, lane-line and traffic-light channels are empty (vehicles, pedestrians, hero and route are drawn)`,
    );
  const keptEpisode = names.has(EPISODE_METAINFO_ATTACHMENT)
    ? (await from.attachment(EPISODE_METAINFO_ATTACHMENT))?.data
    : undefined;
  const keptDataset = names.has(METAINFO_ATTACHMENT)
    ? (await from.attachment(METAINFO_ATTACHMENT))?.data
    : undefined;
  return {
    from,
    run,
    vectors,
    lmdbValues,
    images,
    extraFiles,
    episodeMetainfo: keptEpisode ?? encoder.encode(pythonJsonDumps(episodeParams(run))),
    ...(keptDataset ? { datasetMetainfo: keptDataset } : {}),
    obs,
    derived,
    ...(birdview ? { birdview } : {}),
    ...(rgbFromBirdview ? { rgbFromBirdview } : {}),
  };
}

function keptVector(s: Sample, run: number, i: number): Float32Array {
  const m = s.measurements;
  if (!Array.isArray(m) || !MEASUREMENT_LAYOUTS[m.length] || m.some((v) => typeof v !== 'number'))
    throw invalid(
      `run ${run} stream ${DIDRIVE_STREAM} sample ${i}: measurements must be 20 or 29 numbers, got ${Array.isArray(m) ? `${m.length} values` : typeof m}`,
    );
  return Float32Array.from(m as number[]);
}

/** The collector's env_param as far as the run says it (town, weather, ...), and where it came from. */
function episodeParams(run: RunInfo): JsonObject {
  const params: JsonObject = {};
  for (const key of ['town', 'weather', 'start', 'end', 'col_is_failure', 'n_vehicles', 'n_pedestrians'])
    if (run.metadata[key] !== undefined) params[key] = run.metadata[key]!;
  if (params.town === undefined && typeof run.metadata.network === 'string')
    params.town = run.metadata.network;
  params.simrec_run = run.id;
  params.simulator = `${run.simulator.name}${run.simulator.version ? ` ${run.simulator.version}` : ''}`;
  return params;
}

/** The ego's state fields the 20-float vector (and its command and light, by the lane) is made of. */
const EGO_VECTOR_FIELDS = [
  'x',
  'y',
  'z',
  'yaw',
  'pitch',
  'speed',
  'vx',
  'vy',
  'vz',
  'accel',
  'ax',
  'ay',
  'az',
  'lane',
  'lanePos',
];
/** Actors whose states the bird's-eye view does not draw (birdview-scene.ts). */
const BIRDVIEW_SKIPS = new Set(['traffic_light', 'sensor']);

/** The ego's state on DI-drive's step, from its first state sample to its last. */
async function deriveVectors(
  from: RunSource,
  ego: ActorInfo,
  streams: StreamInfo[],
  actors: ActorInfo[],
  leftOut: LeftOut,
): Promise<{ vectors: Float32Array[]; frameTimes: number[] }> {
  const { run } = from;
  const stateInfo = streams.find((s) => s.id === `${ego.id}/${STATE_STREAM}`);
  if (!stateInfo || stateInfo.samples === 0)
    throw invalid(`run ${run.id}: the ego ${ego.id} has no ${STATE_STREAM} samples; nothing to export`);
  const states = await readStreamSamples(from, stateInfo.id);
  const controlInfo = streams.find((s) => s.id === `${ego.id}/${CONTROL_STREAM}`);
  const controls = controlInfo ? await readStreamSamples(from, controlInfo.id) : [];
  // The fields the vector below is made of; the others of the ego's state and control are said lost.
  leftOut.fields(stateInfo, EGO_VECTOR_FIELDS);
  for (const s of states) leftOut.saw(stateInfo, s);
  if (controlInfo) {
    leftOut.fields(controlInfo, ['steer', 'throttle', 'brake']);
    for (const c of controls) leftOut.saw(controlInfo, c);
  }
  const t0 = states[0]!.t;
  const count = Math.floor((states.at(-1)!.t - t0) / STEP_MICROS) + 1;
  const frames: Sample[] = [];
  let k = 0;
  for (let i = 0; i < count; i++) {
    const t = t0 + i * STEP_MICROS;
    while (k + 1 < states.length && states[k + 1]!.t <= t) k++;
    const a = states[k]!;
    const b = states[k + 1];
    const s = a.t === t || !b ? { ...a, t } : interpolateSample(a, b, t, stateInfo.fields);
    if (b && a.lane !== b.lane && typeof a.lanePos === 'number') s.lanePos = a.lanePos;
    frames.push({ ...s, step: i });
  }

  const lightIds = new Set(actors.filter((a) => a.kind === 'traffic_light').map((a) => a.id));
  const signals = new Map<string, SignalTimeline>();
  for (const s of streams)
    if (s.actor !== null && lightIds.has(s.actor) && s.name === 'signal')
      signals.set(s.actor, await readStreamSamples(from, s.id));
  const contexts = frameContexts(frames, await readRoadNetwork(from, run.id), signals);

  const vectors = frames.map((s, i) => {
    const num = (v: unknown, fallback = 0): number => (typeof v === 'number' ? v : fallback);
    const yaw = num(s.yaw);
    const pitch = num(s.pitch);
    const accel = num(s.accel);
    const speed = typeof s.speed === 'number' ? s.speed : Math.hypot(num(s.vx), num(s.vy), num(s.vz));
    const c = sampleAt(controls, s.t) ?? { t: s.t, step: 0 };
    const steer = num(c.steer);
    const throttle = num(c.throttle);
    const brake = num(c.brake);
    const context = contexts[i]!;
    // CARLA's frame: x as is, y mirrored, yaw negated; forward vector's x, y include cos(pitch).
    return Float32Array.from([
      i,
      (s.t - run.begin) / 1e6,
      Math.cos(pitch) * Math.cos(yaw),
      -Math.cos(pitch) * Math.sin(yaw),
      num(s.ax, accel * Math.cos(yaw)),
      -num(s.ay, accel * Math.sin(yaw)),
      num(s.az),
      num(s.x),
      -num(s.y),
      num(s.z),
      speed * 3.6,
      context.command,
      steer,
      throttle,
      brake,
      steer,
      throttle,
      brake,
      context.tlState,
      context.tlDistance,
    ]);
  });
  return { vectors, frameTimes: frames.map((f) => f.t) };
}

/**
 * Camera captures with PNG files matched to frames by time: each frame gets the capture nearest to it
 * within half the camera's own capture period (at least half of DI-drive's step). A camera at 10 Hz
 * gives each frame its own image; a slower one gives each image to the frames around it, as CARLA's
 * synchronous mode hands a sensor's last image to the ticks before its next one, so that LBC's loaders,
 * which take the n-th sorted `rgb_*.png` for the n-th frame, find one for every frame.
 */
async function cameraFrames(
  from: RunSource,
  actors: ActorInfo[],
  streamOf: Map<string, StreamInfo>,
  frameTimes: number[],
  attachmentNames: Set<string>,
  warn: (message: string) => void,
): Promise<{ images: EpisodeSource['images']; obs: Set<string> }> {
  const { run } = from;
  const cameras = actors.filter((a) => streamOf.has(`${a.id}/${CAPTURES_STREAM}`));
  const images: EpisodeSource['images'] = [];
  const obs = new Set<string>();
  const seconds = (t: number): string => ((t - run.begin) / 1e6).toFixed(3);
  for (const camera of cameras) {
    const name = obsNameOf(camera, cameras.length);
    const captures: { t: number; file: string }[] = [];
    for (const s of await readStreamSamples(from, `${camera.id}/${CAPTURES_STREAM}`)) {
      const file = captureImageName(s);
      if (file === undefined || !attachmentNames.has(file)) continue;
      const attachment = await from.attachment(file);
      if (!attachment || !Buffer.from(attachment.data.subarray(0, 8)).equals(PNG_SIGNATURE)) {
        warn(
          `run ${run.id} camera ${camera.id} capture at ${seconds(s.t)} s: ${file} is ${attachment?.mediaType ?? 'unreadable'}, not PNG; DI-drive's frames are PNG, left out`,
        );
        continue;
      }
      captures.push({ t: s.t, file });
    }
    if (captures.length === 0) continue;
    const gaps = captures.slice(1).map((s, i) => s.t - captures[i]!.t);
    const period = gaps.length ? gaps.sort((a, b) => a - b)[gaps.length >> 1]! : STEP_MICROS;
    const reach = Math.max(STEP_MICROS, period) / 2;
    const captureTimes = captures.map((s) => s.t);
    const used = new Set<number>();
    let missing = 0;
    let firstMissing: number | undefined;
    frameTimes.forEach((t, frame) => {
      const k = nearestIndex(captureTimes, t, reach);
      if (k === undefined) {
        missing++;
        firstMissing ??= frame;
        return;
      }
      used.add(k);
      obs.add(name);
      images.push({ file: `${frameName(name, frame)}.png`, attachment: captures[k]!.file });
    });
    if (missing > 0)
      warn(
        `run ${run.id} camera ${camera.id}: no capture within ${reach / 1000} ms of ${missing} of ${frameTimes.length} frames (first: frame ${firstMissing}); they have no ${name}_%05d.png`,
      );
    const unused = captures.length - used.size;
    if (unused > 0)
      warn(
        `run ${run.id} camera ${camera.id}: ${unused} captures lie nearer no frame than another; left out`,
      );
  }
  return { images, obs };
}

/** The index of the time nearest to t, if within `reach`. */
function nearestIndex(times: number[], t: number, reach: number): number | undefined {
  let lo = 0;
  let hi = times.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  const candidates = [lo - 1, lo].filter((i) => i >= 0 && i < times.length);
  let best: number | undefined;
  for (const i of candidates)
    if (
      Math.abs(times[i]! - t) <= reach &&
      (best === undefined || Math.abs(times[i]! - t) < Math.abs(times[best]! - t))
    )
      best = i;
  return best;
}
