/**
 * Reads Unity Perception's SOLO dataset (1.0's default): `metadata.json`, `sensor_definitions.json`,
 * `annotation_definitions.json`, `metric_definitions.json` (beside it or in `metadata/`, as Unity
 * Simulation writes them) and `sequence.N/stepM.frame_data.json`, one file per frame. SOLO has no ego
 * (poses are in the world) and camelCase fields; 2D boxes become the model's `{x, y, width, height}`.
 * Frames are found by listing the folders, not from metadata.json's totals, which are wrong for
 * multi-scene runs (Unity issue #550).
 */
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { invalid } from '../../model/errors.js';
import type { JsonObject, JsonValue } from '../../model/json.js';
import {
  classifyAnnotationDefinition,
  intrinsicsFromUnityProjection,
  type AnnotationDefinition,
  type MetricDefinition,
  type PerceptionAnnotation,
  type PerceptionCapture,
  type PerceptionMetric,
  type PerceptionSensor,
} from '../../model/perception.js';
import type { PerceptionDataset } from '../common/labelled-images/perception-run.js';
import { readBox3D } from '../common/labelled-images/boxes-3d.js';
import { layOutSequences, resolveMetricTimes } from '../common/labelled-images/sequence-clock.js';
import {
  datasetFileName,
  extraFields,
  isObject,
  readId,
  readJsonFile,
  readNumber,
  readQuaternion,
  readString,
  readVector,
  unityToCanonicalPosition,
  unityToCanonicalRotation,
  type Warn,
} from '../common/labelled-images/source-values.js';

const FRAME_FILE = /^step(\d+)\.frame_data\.json$/;
const SEQUENCE_DIR = /^sequence\.(\d+)$/;

async function readOptionalJson(dir: string, names: string[]): Promise<JsonValue | undefined> {
  for (const name of names) {
    try {
      return await readJsonFile(join(dir, name), name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return undefined;
}

function rows(json: JsonValue | undefined, key: string, file: string): JsonObject[] {
  if (json === undefined) return [];
  if (!isObject(json) || !Array.isArray(json[key])) throw invalid(`${file}: expected {"${key}": [...]}`);
  return json[key].map((r, i) => {
    if (!isObject(r)) throw invalid(`${file}: ${key}[${i}]: expected an object`);
    return r;
  });
}

const describe = (r: JsonObject, where: string): string =>
  readString(r.description ?? r.definition, `${where}.description`);

export async function readSoloDataset(
  dir: string,
  warn: Warn,
): Promise<{ dataset: PerceptionDataset; root: string }> {
  const root = resolve(dir);
  const entries = await readdir(root);
  const sequences = entries
    .filter((e) => SEQUENCE_DIR.test(e))
    .sort((a, b) => Number(SEQUENCE_DIR.exec(a)![1]) - Number(SEQUENCE_DIR.exec(b)![1]));
  if (sequences.length === 0) throw invalid(`${dir}: no sequence.N folders; not a SOLO dataset`);
  const lookIn = (name: string): string[] => [name, `metadata/${name}`];
  const metadata = await readOptionalJson(root, lookIn('metadata.json'));
  if (metadata === undefined)
    warn('metadata.json', 'is missing (Unity writes it only when the simulation completes)');
  const sensorRows = rows(
    await readOptionalJson(root, lookIn('sensor_definitions.json')),
    'sensorDefinitions',
    'sensor_definitions.json',
  );
  const annotationRows = rows(
    await readOptionalJson(root, lookIn('annotation_definitions.json')),
    'annotationDefinitions',
    'annotation_definitions.json',
  );
  const metricRows = rows(
    await readOptionalJson(root, lookIn('metric_definitions.json')),
    'metricDefinitions',
    'metric_definitions.json',
  );

  const sensors = new Map<string, PerceptionSensor>();
  sensorRows.forEach((r, i) => {
    const where = `sensor_definitions.json: sensorDefinitions[${i}]`;
    const id = readId(r.id, `${where}.id`);
    const sensor: PerceptionSensor = {
      id,
      modality: readString(r.modality, `${where}.modality`, 'camera'),
      ego: null,
      description: describe(r, where),
    };
    const extra = extraFields(r, ['id', 'modality', 'description', 'definition']);
    if (extra) sensor.extra = extra;
    sensors.set(id, sensor);
  });
  const annotationDefinitions = new Map<string, AnnotationDefinition>();
  annotationRows.forEach((r, i) => {
    const where = `annotation_definitions.json: annotationDefinitions[${i}]`;
    const id = readId(r.id, `${where}.id`);
    const type = readString(r['@type'], `${where}.@type`);
    const def: AnnotationDefinition = {
      id,
      name: id,
      description: describe(r, where),
      format: 'JSON',
      kind: classifyAnnotationDefinition({ id, type, name: id }),
    };
    if (Array.isArray(r.spec)) def.spec = r.spec;
    if (def.kind === 'generic')
      warn(
        where,
        `annotation type ${JSON.stringify(type || id)} is not one simrec knows; its values are kept as generic data`,
      );
    const extra = extraFields(r, ['id', 'description', 'definition', 'spec']);
    if (extra) def.extra = extra;
    annotationDefinitions.set(id, def);
  });
  const metricDefinitions = new Map<string, MetricDefinition>();
  metricRows.forEach((r, i) => {
    const where = `metric_definitions.json: metricDefinitions[${i}]`;
    const id = readId(r.id, `${where}.id`);
    const def: MetricDefinition = { id, name: id, description: describe(r, where) };
    if (Array.isArray(r.spec)) def.spec = r.spec;
    const extra = extraFields(r, ['id', 'description', 'definition', 'spec']);
    if (extra) def.extra = extra;
    metricDefinitions.set(id, def);
  });

  const captures: PerceptionCapture[] = [];
  const metrics: { metric: PerceptionMetric; where: string }[] = [];
  for (const sequenceDir of sequences) {
    const frames = (await readdir(join(root, sequenceDir)))
      .filter((e) => FRAME_FILE.test(e))
      .sort((a, b) => Number(FRAME_FILE.exec(a)![1]) - Number(FRAME_FILE.exec(b)![1]));
    for (const name of frames) {
      const shownAs = `${sequenceDir}/${name}`;
      const frame = await readJsonFile(join(root, sequenceDir, name), shownAs);
      if (!isObject(frame)) throw invalid(`${shownAs}: expected a frame object`);
      // The folder says which sequence a frame is in: pysolotools finds frames by folder. A frame
      // whose own `sequence` disagrees (pysolotools' sample says 0 in sequence.1) keeps what it said.
      const sequence = SEQUENCE_DIR.exec(sequenceDir)![1]!;
      const frameInfo: JsonObject = {};
      if (typeof frame.frame === 'number') frameInfo.frame = frame.frame;
      if (frame.sequence !== undefined && String(frame.sequence) !== sequence) {
        frameInfo.sequence = frame.sequence;
        warn(
          `${shownAs}: sequence`,
          `says ${String(frame.sequence)} in folder ${sequenceDir}; the folder is taken`,
        );
      }
      const step =
        frame.step === undefined
          ? Number(FRAME_FILE.exec(name)![1])
          : readNumber(frame.step, `${shownAs}: step`);
      // Early SOLO wrote no timestamp (1.0 "added the timestamp field back"): the step stands in.
      const timestamp =
        frame.timestamp === undefined ? step : readNumber(frame.timestamp, `${shownAs}: timestamp`);
      const base = join(root, sequenceDir);
      const frameCaptures = Array.isArray(frame.captures) ? frame.captures : [];
      frameCaptures.forEach((c, i) => {
        const where = `${shownAs}: captures[${i}]`;
        if (!isObject(c)) throw invalid(`${where}: expected an object`);
        const sensorId = readId(c.id, `${where}.id`);
        if (!sensors.has(sensorId)) {
          warn(
            `${where}.id`,
            `sensor ${sensorId} is not in sensor_definitions.json; its captures are kept under it, an export does not declare it`,
          );
          sensors.set(sensorId, {
            id: sensorId,
            declared: false,
            modality: 'camera',
            ego: null,
            description: readString(c.description, `${where}.description`),
          });
        }
        const capture: PerceptionCapture = {
          id: `${sequenceDir}/step${step}/${sensorId}`,
          sensor: sensorId,
          sequence,
          step,
          t: 0,
          timestamp,
          annotations: [],
        };
        const position = readVector(c.position, `${where}.position`);
        const rotation = readQuaternion(c.rotation, `${where}.rotation`);
        if (position && rotation)
          capture.sensorPose = {
            position: unityToCanonicalPosition(position),
            rotation: unityToCanonicalRotation(rotation),
          };
        const velocity = readVector(c.velocity, `${where}.velocity`);
        const acceleration = readVector(c.acceleration, `${where}.acceleration`);
        if (velocity) capture.sensorVelocity = unityToCanonicalPosition(velocity);
        if (acceleration) capture.sensorAcceleration = unityToCanonicalPosition(acceleration);
        if (typeof c.filename === 'string')
          capture.file = datasetFileName(root, base, c.filename, `${where}.filename`);
        if (typeof c.imageFormat === 'string') capture.format = c.imageFormat.toUpperCase();
        if (Array.isArray(c.dimension) && c.dimension.length === 2)
          capture.imageSize = {
            width: readNumber(c.dimension[0], `${where}.dimension[0]`),
            height: readNumber(c.dimension[1], `${where}.dimension[1]`),
          };
        if (
          Array.isArray(c.matrix) &&
          c.matrix.length === 9 &&
          c.matrix.every((x) => typeof x === 'number')
        ) {
          const m = c.matrix;
          // The same 3x3 of Unity's projection as the legacy camera_intrinsic, flattened by column.
          const columns = [m.slice(0, 3), m.slice(3, 6), m.slice(6, 9)];
          const projection =
            String(c.projection ?? 'perspective').toLowerCase() === 'orthographic'
              ? 'orthographic'
              : 'perspective';
          const { K, problem } =
            projection === 'perspective'
              ? intrinsicsFromUnityProjection(columns, capture.imageSize)
              : { K: null };
          if (problem) warn(`${where}.matrix`, `${problem}; kept as given, no K`);
          capture.intrinsics = { projection, K, unityProjection: columns };
        }
        const annotations = Array.isArray(c.annotations) ? c.annotations : [];
        annotations.forEach((a, j) =>
          capture.annotations.push(
            readSoloAnnotation(a, `${where}.annotations[${j}]`, root, base, annotationDefinitions, warn),
          ),
        );
        const extra = extraFields(c, [
          'id',
          'position',
          'rotation',
          'velocity',
          'acceleration',
          'filename',
          'imageFormat',
          'dimension',
          'matrix',
          'projection',
          'annotations',
        ]);
        if (extra || Object.keys(frameInfo).length)
          capture.extra = {
            ...(extra ? { capture: extra } : {}),
            ...(Object.keys(frameInfo).length ? { frame: frameInfo } : {}),
          };
        captures.push(capture);
      });
      const frameMetrics = Array.isArray(frame.metrics) ? frame.metrics : [];
      frameMetrics.forEach((m, i) => {
        const where = `${shownAs}: metrics[${i}]`;
        if (!isObject(m)) throw invalid(`${where}: expected an object`);
        const definition = readId(m.id, `${where}.id`);
        const metric: PerceptionMetric = {
          definition,
          sequence,
          step,
          t: 0,
          values: m.values ?? m.value ?? null,
        };
        const sensorId = readString(m.sensorId, `${where}.sensorId`);
        const annotationId = readString(m.annotationId, `${where}.annotationId`);
        if (sensorId) metric.capture = `${sequenceDir}/step${step}/${sensorId}`;
        if (annotationId) metric.annotation = annotationId;
        const extra = extraFields(m, ['id', 'sensorId', 'annotationId', 'values', 'value']);
        if (extra) metric.extra = extra;
        metrics.push({ metric, where });
      });
    }
  }
  const sequenceIds = layOutSequences(captures);
  resolveMetricTimes(captures, metrics, warn);
  captures.sort((a, b) => a.t - b.t);
  const sortedMetrics = metrics.map((m) => m.metric).sort((a, b) => a.t - b.t);
  const info: PerceptionDataset['info'] = { layout: 'solo', sequences: sequenceIds };
  if (isObject(metadata)) info.metadata = metadata;
  return {
    dataset: {
      info,
      egos: [],
      sensors: [...sensors.values()],
      annotationDefinitions: [...annotationDefinitions.values()],
      metricDefinitions: [...metricDefinitions.values()],
      captures,
      metrics: sortedMetrics,
    },
    root,
  };
}

function readSoloAnnotation(
  a: JsonValue,
  where: string,
  root: string,
  base: string,
  definitions: ReadonlyMap<string, AnnotationDefinition>,
  warn: Warn,
): PerceptionAnnotation {
  if (!isObject(a)) throw invalid(`${where}: expected an object`);
  const id = readId(a.id, `${where}.id`);
  const type = readString(a['@type'], `${where}.@type`);
  const def = definitions.get(id);
  const kind = def?.kind ?? classifyAnnotationDefinition({ id, type, name: id });
  if (!def) warn(`${where}.id`, `annotation ${id} is not in annotation_definitions.json`);
  const annotation: PerceptionAnnotation = { id: `${where.split(':')[0]}/${id}`, definition: id, kind };
  if (typeof a.filename === 'string')
    annotation.file = datasetFileName(root, base, a.filename, `${where}.filename`);
  const values = Array.isArray(a.values) ? a.values : Array.isArray(a.instances) ? a.instances : undefined;
  if (values)
    annotation.values = values.map((v, i) => {
      if (!isObject(v)) return v;
      const snake = {
        ...extraFields(v, ['instanceId', 'labelId', 'labelName', 'origin', 'dimension']),
        ...(v.instanceId === undefined ? {} : { instance_id: v.instanceId }),
        ...(v.labelId === undefined ? {} : { label_id: v.labelId }),
        ...(v.labelName === undefined ? {} : { label_name: v.labelName }),
      } as JsonObject;
      if (kind === 'bbox2d' && Array.isArray(v.origin) && Array.isArray(v.dimension)) {
        snake.x = readNumber(v.origin[0], `${where}.values[${i}].origin[0]`);
        snake.y = readNumber(v.origin[1], `${where}.values[${i}].origin[1]`);
        snake.width = readNumber(v.dimension[0], `${where}.values[${i}].dimension[0]`);
        snake.height = readNumber(v.dimension[1], `${where}.values[${i}].dimension[1]`);
        return snake;
      }
      if (v.dimension !== undefined) snake.dimension = v.dimension;
      if (v.origin !== undefined) snake.origin = v.origin;
      return kind === 'bbox3d' ? readBox3D(snake, `${where}.values[${i}]`) : snake;
    });
  const extra = extraFields(a, ['id', 'filename', 'values', 'instances']);
  if (extra)
    annotation.extra = { ...extra, ...(Array.isArray(a.instances) ? { valuesKey: 'instances' } : {}) };
  return annotation;
}
