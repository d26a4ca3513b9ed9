/**
 * A Perception dataset in the model, and how it goes into a run and comes out of one. The legacy and
 * SOLO readers produce a PerceptionDataset; storeDataset writes it through RunRecorder; loadDataset
 * reads it back for the exporters (Perception, COCO, YOLO) and stats.
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { invalid } from '../../../model/errors.js';
import type { JsonObject } from '../../../model/json.js';
import { MAX_ATTACHMENT_BYTES } from '../../../model/attachment.js';
import {
  actorToEgo,
  actorToSensor,
  captureBoxes,
  captureToSample,
  CAPTURES_STREAM,
  capturesStreamDecl,
  DEFINITIONS_ATTACHMENT,
  DEFINITIONS_MEDIA_TYPE,
  egoToActor,
  intrinsicsFromUnityProjection,
  metricsStreamDecl,
  metricToSample,
  METRICS_STREAM,
  RUN_METADATA_KEY,
  sampleToCapture,
  sampleToMetric,
  sensorActorId,
  sensorToActor,
  type AnnotationDefinition,
  type MetricDefinition,
  type PerceptionCapture,
  type PerceptionDatasetInfo,
  type PerceptionEgo,
  type PerceptionMetric,
  type PerceptionSensor,
} from '../../../model/perception.js';
import type { RunInfo } from '../../../model/run.js';
import type { Sample } from '../../../model/stream.js';
import type { RunSink, RunSource, RunTarget } from '../../../model/run-ports.js';
import { LeftOut } from '../left-out.js';
import { isImageFormat, mediaTypeFromName, readImageSize, sniffMediaType } from './image-files.js';
import {
  countFromFirstLiveCapture,
  egoStates,
  liveCapture,
  liveEgoOf,
  liveSensorOf,
} from './live-captures.js';
import type { Warn } from './source-values.js';

export interface PerceptionDataset {
  info: PerceptionDatasetInfo;
  egos: PerceptionEgo[];
  sensors: PerceptionSensor[];
  annotationDefinitions: AnnotationDefinition[];
  metricDefinitions: MetricDefinition[];
  /** In time order; `t` counts from the run's begin (a reader does not know when the run will begin). */
  captures: PerceptionCapture[];
  /** In time order; `t` counts from the run's begin. */
  metrics: PerceptionMetric[];
}

/**
 * A dataset whose captures and metrics are read as they are stored, not held: a reader that streams
 * gives each in time order and says beforehand how many there are (for progress).
 */
export interface StreamedDataset extends Omit<PerceptionDataset, 'captures' | 'metrics'> {
  captures: AsyncIterable<PerceptionCapture>;
  metrics: AsyncIterable<PerceptionMetric>;
  counts: { captures: number; metrics: number };
}

export const datasetCounts = (
  dataset: PerceptionDataset | StreamedDataset,
): { captures: number; metrics: number } =>
  'counts' in dataset
    ? dataset.counts
    : { captures: dataset.captures.length, metrics: dataset.metrics.length };

export interface DatasetDefinitions {
  annotationDefinitions: AnnotationDefinition[];
  metricDefinitions: MetricDefinition[];
}

export interface StoreDatasetOptions {
  /** The folder that attachment names (capture.file, annotation.file) are relative to. */
  root: string;
  simulator?: { name: string; version?: string };
  description?: string;
  /** Start of the run; captures' `t` are offsets from it. */
  begin: number;
  warn: Warn;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/** Captures appended per commit: big enough to amortise the fsync, small enough to stay streamed. */
const CAPTURE_BATCH = 256;
/** Metrics are small: more of them share a commit. */
const METRIC_BATCH = 4096;

/**
 * Writes a dataset as a new run (on an error, the work layer removes it: record/import-run.ts);
 * warnings (missing files...) are reported through `warn` and the import goes on.
 */
export async function storeDataset(
  into: RunTarget,
  dataset: PerceptionDataset | StreamedDataset,
  options: StoreDatasetOptions,
): Promise<RunInfo> {
  const rec = await into.beginRun({
    simulator: options.simulator ?? { name: 'unity-perception' },
    description: options.description ?? '',
    metadata: { [RUN_METADATA_KEY]: dataset.info as unknown as JsonObject },
    begin: options.begin,
  });
  {
    const egoIds = new Set(dataset.egos.map((e) => e.id));
    await rec.declareActors([
      ...dataset.egos.map(egoToActor),
      ...dataset.sensors.map((s) => sensorToActor(s, egoIds)),
    ]);
    const actorOf = new Map(dataset.sensors.map((s) => [s.id, sensorActorId(s.id, egoIds)] as const));
    await rec.declareStreams([
      ...dataset.sensors.map((s) => capturesStreamDecl(actorOf.get(s.id)!)),
      metricsStreamDecl(),
    ]);
    const definitions: DatasetDefinitions = {
      annotationDefinitions: dataset.annotationDefinitions,
      metricDefinitions: dataset.metricDefinitions,
    };
    await rec.attach({
      name: DEFINITIONS_ATTACHMENT,
      mediaType: DEFINITIONS_MEDIA_TYPE,
      data: new TextEncoder().encode(JSON.stringify(definitions)),
    });

    const sensors = new Map(dataset.sensors.map((s) => [s.id, s] as const));
    const attached = new Set<string>();
    let batch = new Map<string, Sample[]>();
    const total = datasetCounts(dataset).captures;
    const flush = async (): Promise<void> => {
      if (batch.size === 0) return;
      const appends = [...batch].map(([stream, samples]) => ({ stream, samples }));
      batch = new Map();
      await rec.appendMany(appends);
    };
    let i = 0;
    let lastCaptureT = 0;
    for await (const capture of dataset.captures) {
      options.signal?.throwIfAborted();
      lastCaptureT = Math.max(lastCaptureT, capture.t);
      const sensor = sensors.get(capture.sensor);
      if (!sensor) throw invalid(`capture ${capture.id}: sensor ${capture.sensor} is not in the dataset`);
      await attachCaptureFiles(rec, capture, sensor, attached, options);
      const stream = `${actorOf.get(sensor.id)!}/${CAPTURES_STREAM}`;
      const list = batch.get(stream);
      const sample = captureToSample({ ...capture, t: capture.t + options.begin });
      if (list) list.push(sample);
      else batch.set(stream, [sample]);
      if (++i % CAPTURE_BATCH === 0) {
        await flush();
        options.onProgress?.(i, total);
      }
    }
    await flush();
    let metrics: Sample[] = [];
    let lastMetricT = 0;
    for await (const metric of dataset.metrics) {
      lastMetricT = Math.max(lastMetricT, metric.t);
      metrics.push(metricToSample({ ...metric, t: metric.t + options.begin }));
      if (metrics.length === METRIC_BATCH) {
        await rec.appendMany([{ stream: METRICS_STREAM, samples: metrics }]);
        metrics = [];
      }
    }
    if (metrics.length) await rec.appendMany([{ stream: METRICS_STREAM, samples: metrics }]);
    // Image sizes and K are known only once the images are read: the sensors are declared again.
    await rec.declareActors(dataset.sensors.map((s) => sensorToActor(s, egoIds)));
    options.onProgress?.(total, total);
    const last = Math.max(lastCaptureT, lastMetricT);
    return await rec.end('completed', { end: options.begin + last });
  }
}

/**
 * Attaches a capture's file (with `t` and the 2D boxes the viewer draws) and its annotation files. A
 * missing file is a warning (the mock names files that do not exist); a file that claims to be an
 * image and is not one is an error.
 */
async function attachCaptureFiles(
  rec: RunSink,
  capture: PerceptionCapture,
  sensor: PerceptionSensor,
  attached: Set<string>,
  options: StoreDatasetOptions,
): Promise<void> {
  const where = `capture ${capture.id}`;
  if (capture.file !== undefined && !attached.has(capture.file)) {
    const data = await readDatasetFile(options.root, capture.file, `${where}.filename`, options.warn);
    if (data) {
      const mediaType = checkFileType(data, capture.file, capture.format, where);
      const size = readImageSize(data);
      if (size && !capture.imageSize) capture.imageSize = size;
      const boxes = captureBoxes(capture).map(({ x, y, width, height, label }) => ({
        x,
        y,
        width,
        height,
        label,
      }));
      await rec.attach({
        name: capture.file,
        mediaType,
        t: capture.t + options.begin,
        data,
        metadata: { capture: capture.id, sensor: capture.sensor, boxes },
      });
      attached.add(capture.file);
    }
  }
  if (capture.intrinsics?.unityProjection && capture.intrinsics.K === null && capture.imageSize)
    capture.intrinsics.K = intrinsicsFromUnityProjection(
      capture.intrinsics.unityProjection,
      capture.imageSize,
    ).K;
  if (capture.imageSize && !sensor.imageSize) sensor.imageSize = capture.imageSize;
  if (capture.intrinsics && (!sensor.intrinsics || (sensor.intrinsics.K === null && capture.intrinsics.K)))
    sensor.intrinsics = capture.intrinsics;
  for (const a of capture.annotations) {
    if (a.file === undefined || attached.has(a.file)) continue;
    const data = await readDatasetFile(
      options.root,
      a.file,
      `${where} annotation ${a.id}.filename`,
      options.warn,
    );
    if (!data) continue;
    const mediaType = checkFileType(data, a.file, undefined, `${where} annotation ${a.id}`);
    await rec.attach({
      name: a.file,
      mediaType,
      data,
      metadata: { capture: capture.id, annotation: a.id, definition: a.definition },
    });
    attached.add(a.file);
  }
}

async function readDatasetFile(
  root: string,
  name: string,
  where: string,
  warn: Warn,
): Promise<Uint8Array | undefined> {
  try {
    // The name was checked to lie in the dataset; a symbolic link could still lead out of it, and a
    // declared size could be absurd: both are refused before a byte is read.
    const [realRoot, realFile] = await Promise.all([realpath(root), realpath(join(root, name))]);
    const rel = relative(realRoot, realFile);
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel))
      throw invalid(
        `${where}: file ${name} is a link that leads outside the dataset folder (to ${realFile}); refused`,
      );
    const info = await stat(realFile);
    if (!info.isFile()) throw invalid(`${where}: file ${name} is not a regular file; refused`);
    if (info.size > MAX_ATTACHMENT_BYTES)
      throw invalid(
        `${where}: file ${name} is ${info.size} bytes, over the limit of ${MAX_ATTACHMENT_BYTES}; refused`,
      );
    return await readFile(realFile);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      warn(where, `file ${name} does not exist; the reference is kept, the file is not`);
      return undefined;
    }
    throw error;
  }
}

/** The media type of a file; refuses one whose name or format says image and whose bytes do not. */
function checkFileType(data: Uint8Array, name: string, format: string | undefined, where: string): string {
  const sniffed = sniffMediaType(data);
  const claimed = mediaTypeFromName(name);
  const claimsImage = claimed.startsWith('image/') || isImageFormat(format);
  if (claimsImage && !sniffed?.startsWith('image/'))
    throw invalid(
      `${where}: ${name} is not an image (${data.length} bytes${data.length ? `, starting ${Buffer.from(data.subarray(0, 8)).toString('hex')}` : ''}) although ${format ? `its format is ${format}` : 'its name says so'}`,
    );
  return sniffed ?? claimed;
}

// ---- out of a run -----------------------------------------------------------------------------------

export interface LoadedDataset extends PerceptionDataset {
  run: RunInfo;
}

/**
 * Reads a run kept by storeDataset (or recorded the same way) back into the model. An export gives
 * `warn`: the run's other streams (a vehicle's states, a sensor's non-capture stream) have no place
 * in its dataset and are said left out, and so are the metrics when the format has none (`metrics`
 * false: COCO, YOLO).
 */
export async function loadDataset(
  source: RunSource,
  warn?: Warn,
  format: { name: string; metrics: boolean } = { name: 'a Perception dataset', metrics: true },
): Promise<LoadedDataset> {
  const { run } = source;
  const runId = run.id;
  const [actors, streams] = await Promise.all([source.actors(), source.streams()]);
  const egos: PerceptionEgo[] = [];
  const sensors: PerceptionSensor[] = [];
  const sensorOfActor = new Map<string, string>();
  // Sensors recorded live, by actor: their captures are read as liveCapture reads them.
  const liveSensors = new Map<string, PerceptionSensor>();
  for (const actor of actors) {
    const ego = actorToEgo(actor);
    if (ego) egos.push(ego);
    const imported = actorToSensor(actor);
    const live = imported ? undefined : liveSensorOf(actor);
    const sensor = imported ?? live;
    if (sensor) {
      sensors.push(sensor);
      sensorOfActor.set(actor.id, sensor.id);
    }
    if (live) liveSensors.set(actor.id, live);
  }
  // The actors live sensors are mounted on are the dataset's egos.
  const mounts = new Set([...liveSensors.values()].map((s) => s.ego));
  for (const actor of actors)
    if (mounts.has(actor.id) && !egos.some((e) => e.id === actor.id)) egos.push(liveEgoOf(actor));
  if (sensors.length === 0)
    throw invalid(
      `run ${runId} has no sensors (actors of kind sensor declared by a Perception, SOLO or DI-drive import, or by a simulator's \`sensors\` message): no labelled images to read`,
    );
  if (warn) {
    const leftOut = new LeftOut();
    for (const stream of streams)
      if (
        (stream.id === METRICS_STREAM && format.metrics) ||
        (stream.name === CAPTURES_STREAM && stream.actor !== null && sensorOfActor.has(stream.actor))
      )
        leftOut.all(stream);
    leftOut.warn(
      streams,
      (message) => warn(`run ${runId}`, message),
      () =>
        format.metrics
          ? `${format.name} holds sensors' captures and metrics only`
          : `${format.name} holds the captures' images and labels only`,
      () => '',
    );
  }
  const definitions = await loadDefinitions(source);
  const captures: PerceptionCapture[] = [];
  for (const stream of streams) {
    if (stream.name !== CAPTURES_STREAM || stream.actor === null) continue;
    const sensorId = sensorOfActor.get(stream.actor);
    if (sensorId === undefined) continue;
    const live = liveSensors.get(stream.actor);
    if (live) {
      const egoAt = live.ego ? await egoStates(source, live.ego, streams) : () => undefined;
      for await (const samples of source.samples(stream.id))
        for (const s of samples) captures.push(liveCapture(live, s, egoAt));
      continue;
    }
    for await (const samples of source.samples(stream.id))
      for (const s of samples) captures.push(sampleToCapture(sensorId, { ...s, t: s.t - run.begin }));
  }
  // A live capture's time is the simulator's: its sequence begins at its first capture.
  if (liveSensors.size)
    countFromFirstLiveCapture(captures, new Set([...liveSensors.values()].map((s) => s.id)));
  // Stable by time, sensor order breaking ties, as the writer emits simultaneous captures.
  captures.sort((a, b) => a.t - b.t);
  const metrics: PerceptionMetric[] = [];
  if (streams.some((s) => s.id === METRICS_STREAM))
    for await (const samples of source.samples(METRICS_STREAM))
      for (const s of samples) metrics.push(sampleToMetric({ ...s, t: s.t - run.begin }));
  const info = (run.metadata[RUN_METADATA_KEY] ?? {
    layout: 'perception',
    sequences: [...new Set(captures.map((c) => c.sequence))],
  }) as unknown as PerceptionDatasetInfo;
  return { run, info, egos, sensors, ...definitions, captures, metrics };
}

export async function loadDefinitions(source: RunSource): Promise<DatasetDefinitions> {
  const runId = source.run.id;
  const attachment = await source.attachment(DEFINITIONS_ATTACHMENT);
  if (!attachment) return { annotationDefinitions: [], metricDefinitions: [] };
  try {
    const parsed = JSON.parse(new TextDecoder().decode(attachment.data)) as DatasetDefinitions;
    return {
      annotationDefinitions: parsed.annotationDefinitions ?? [],
      metricDefinitions: parsed.metricDefinitions ?? [],
    };
  } catch (error) {
    throw invalid(`run ${runId} attachment ${DEFINITIONS_ATTACHMENT}: not JSON: ${(error as Error).message}`);
  }
}
