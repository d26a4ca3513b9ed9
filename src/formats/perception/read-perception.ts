/**
 * Reads Unity Perception's legacy dataset (`captures_*.json` in `Dataset` folders, `metrics_*.json`,
 * `egos.json`, `sensors.json`, `annotation_definitions.json`, `metric_definitions.json`) into the model,
 * tolerating what real data holds (docs/formats/perception.md, "What the datasets really hold"): int or
 * string ids, array or object vectors, absent or null optional fields, int or float time stamps, several
 * instance folders merged. Dangling references are warnings naming the file and JSON path; malformed data is
 * an error.
 */
import { access, readdir } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { invalid } from '../../model/errors.js';
import type { JsonObject, JsonValue } from '../../model/json.js';
import type { RunTarget } from '../../model/run-ports.js';
import {
  classifyAnnotationDefinition,
  intrinsicsFromUnityProjection,
  type AnnotationDefinition,
  type AnnotationKind,
  type CameraIntrinsics,
  type EgoState,
  type IdNamespace,
  type MetricDefinition,
  type PerceptionAnnotation,
  type PerceptionCapture,
  type PerceptionEgo,
  type PerceptionMetric,
  type PerceptionSensor,
} from '../../model/perception.js';
import { readBox3D } from '../common/labelled-images/boxes-3d.js';
import {
  importDataset,
  type ImportOptions,
  type ImportResult,
} from '../common/labelled-images/import-dataset.js';
import type { PerceptionDataset, StreamedDataset } from '../common/labelled-images/perception-run.js';
import {
  layOutSequences,
  resolveMetricTimes,
  type ClockedCapture,
} from '../common/labelled-images/sequence-clock.js';
import {
  datasetFileName,
  extraFields,
  isObject,
  readId,
  readJsonFile,
  readNumber,
  readOptionalId,
  readQuaternion,
  readString,
  readVector,
  unityToCanonicalPosition,
  unityToCanonicalRotation,
  type Warn,
} from '../common/labelled-images/source-values.js';

const TABLE_FILE = /^(captures|metrics)_(\d+)\.json$/;
const SINGLE_TABLES = ['egos', 'sensors', 'annotation_definitions', 'metric_definitions'] as const;

export const importPerception = (
  into: RunTarget,
  dir: string,
  options: ImportOptions = {},
): Promise<ImportResult> =>
  importDataset(into, dir, readPerceptionDataset, {
    ...options,
    simulator: { name: 'unity-perception' },
  });

export interface ReadPerceptionResult {
  dataset: StreamedDataset;
  /** The folder attachment names are relative to. */
  root: string;
}

/** Folders holding a dataset's JSON tables, found anywhere under `dir` (one per Unity Simulation instance). */
async function findDatasetFolders(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (folder: string, depth: number): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true });
    if (entries.some((e) => e.isFile() && TABLE_FILE.test(e.name))) found.push(folder);
    if (depth >= 6) return;
    for (const e of entries)
      if (e.isDirectory() && !e.name.startsWith('.')) await walk(join(folder, e.name), depth + 1);
  };
  await walk(dir, 0);
  return found.sort();
}

/** How many file names of a folder's first captures file are tried to tell its layout. */
const LAYOUT_PROBE_NAMES = 20;

/**
 * The folder a dataset folder's file names are relative to. Unity's writer puts its tables in
 * `Dataset<guid>/` with the images in sibling folders (`RGB<guid>/rgb_2.png`): names start from the
 * parent. A flat dataset (datasetinsights' keypoint sample) has the tables beside `annotations/` and
 * `captures/`: names start from the folder itself. The names the first captures file gives decide;
 * when none of them exists either way, a folder named Dataset* is the writer's layout.
 */
async function fileNamesBase(folder: string): Promise<string> {
  const parent = dirname(folder);
  const usual = /^Dataset/i.test(basename(folder)) ? parent : folder;
  const first = (await readdir(folder))
    .filter((e) => TABLE_FILE.exec(e)?.[1] === 'captures')
    .sort((a, b) => Number(TABLE_FILE.exec(a)![2]) - Number(TABLE_FILE.exec(b)![2]))[0];
  if (first === undefined) return usual;
  const names: string[] = [];
  let json: JsonValue;
  try {
    json = await readJsonFile(join(folder, first), first);
  } catch {
    return usual; // the first pass reads it again and reports what is wrong with it
  }
  const rows = isObject(json) && Array.isArray(json.captures) ? json.captures : [];
  for (const row of rows) {
    if (names.length >= LAYOUT_PROBE_NAMES) break;
    if (!isObject(row)) continue;
    if (typeof row.filename === 'string') names.push(row.filename);
    if (Array.isArray(row.annotations))
      for (const a of row.annotations)
        if (isObject(a) && typeof a.filename === 'string') names.push(a.filename);
  }
  const exists = async (base: string, name: string): Promise<boolean> =>
    access(resolve(base, name.replace(/\\/g, '/'))).then(
      () => true,
      () => false,
    );
  let inParent = 0;
  let inFolder = 0;
  for (const name of names) {
    if (await exists(parent, name)) inParent++;
    if (await exists(folder, name)) inFolder++;
  }
  if (inParent === inFolder) return usual;
  return inFolder > inParent ? folder : parent;
}

interface TableFile {
  path: string;
  shownAs: string;
  rows: JsonValue[];
  version?: string;
}

async function readTable(path: string, shownAs: string, table: string, warn: Warn): Promise<TableFile> {
  const json = await readJsonFile(path, shownAs);
  if (!isObject(json)) throw invalid(`${shownAs}: expected an object {"version", "${table}": [...]}`);
  const rows = json[table];
  if (rows === undefined || rows === null) {
    warn(shownAs, `has no "${table}" array; read as empty`);
    return { path, shownAs, rows: [] };
  }
  if (!Array.isArray(rows)) throw invalid(`${shownAs}.${table}: expected an array`);
  const file: TableFile = { path, shownAs, rows };
  if (typeof json.version === 'string') file.version = json.version;
  else warn(shownAs, 'has no root "version"');
  return file;
}

/**
 * Reads a legacy dataset in two passes so that its captures and metrics are never held together: the
 * first reads every file (so a malformed one stops the import before anything is stored), keeping of
 * each record only what the clock and the references need; the second reads the files again as the
 * store takes the records, in time order, one file in memory at a time when the files are in time order.
 */
export async function readPerceptionDataset(dir: string, warn: Warn): Promise<ReadPerceptionResult> {
  const top = resolve(dir);
  const folders = await findDatasetFolders(top);
  if (folders.length === 0)
    throw invalid(`${dir}: no captures_*.json or metrics_*.json found; not a Perception dataset folder`);
  const bases = new Map<string, string>();
  for (const folder of folders) bases.set(folder, await fileNamesBase(folder));
  // Attachment names are relative to DIR, or to its parent when DIR is a Dataset/ folder whose file
  // names start from its parent.
  const root = bases.get(top) === dirname(top) ? dirname(top) : top;
  const show = (path: string): string => relative(root, path) || basename(path);

  const reader = new DatasetReader(root, warn);
  const captureFiles: RecordsFile[] = [];
  const metricFiles: RecordsFile[] = [];
  // Every instance's definitions first, so a record reads the same whichever pass reads it.
  for (const folder of folders) {
    const entries = await readdir(folder);
    for (const table of SINGLE_TABLES) {
      const name = `${table}.json`;
      if (!entries.includes(name)) {
        // The writer writes these only when the run ends: a crashed run has none.
        if (table === 'sensors' || table === 'annotation_definitions')
          warn(show(folder), `has no ${name}; definitions are inferred from the captures`);
        continue;
      }
      const file = await readTable(join(folder, name), show(join(folder, name)), table, warn);
      reader.noteVersion(file);
      reader.readDefinitions(table, file);
    }
    const numbered = (table: RecordsFile['table']): RecordsFile[] =>
      entries
        .filter((e) => TABLE_FILE.exec(e)?.[1] === table)
        .sort((a, b) => Number(TABLE_FILE.exec(a)![2]) - Number(TABLE_FILE.exec(b)![2]))
        .map((name) => ({
          table,
          path: join(folder, name),
          shownAs: show(join(folder, name)),
          base: bases.get(folder)!,
        }));
    captureFiles.push(...numbered('captures'));
    metricFiles.push(...numbered('metrics'));
  }
  // Metrics before captures: whether captures must remember their annotations' ids depends on them.
  const metrics: IndexedMetric[] = [];
  // Entries are built as plain literals, not by spread or rest: V8 gives objects made those ways a
  // hidden class each, which for 40,000 captures was most of the import's memory.
  await readEach(metricFiles, warn, reader, (row, where, at) => {
    // The values are read again when stored; the first pass needs only the references.
    const m = reader.readMetric(row, where);
    const metric: PerceptionMetric = { definition: m.definition, step: m.step, t: 0, values: NO_VALUES };
    if (m.capture !== undefined) metric.capture = m.capture;
    if (m.annotation !== undefined) metric.annotation = m.annotation;
    if (m.sequence !== undefined) metric.sequence = m.sequence;
    metrics.push(new IndexedMetric(metricFiles, at, metric));
  });
  const captures: IndexedCapture[] = [];
  const keepAnnotationIds = metrics.some(({ metric }) => metric.annotation !== undefined);
  await readEach(captureFiles, warn, reader, (row, where, at, base) => {
    const c = reader.readCapture(row, where, base);
    const annotations = keepAnnotationIds ? c.annotations.map((a) => ({ id: a.id })) : NO_ANNOTATIONS;
    captures.push({
      file: at.file,
      row: at.row,
      id: c.id,
      sequence: c.sequence,
      step: c.step,
      timestamp: c.timestamp,
      t: 0,
      annotations,
    });
  });
  const dataset = reader.finish(captures, metrics);
  const inTimeOrder = <T>(list: T[], t: (item: T) => number): number[] =>
    list.map((_, i) => i).sort((a, b) => t(list[a]!) - t(list[b]!) || a - b);
  return {
    dataset: {
      ...dataset,
      captures: rereadInOrder(
        reader,
        captureFiles,
        captures,
        inTimeOrder(captures, (c) => c.t),
        (row, where, entry, base) => {
          const capture = reader.readCapture(row, where, base);
          if (capture.id !== entry.id)
            throw invalid(`${where}: changed while it was imported (no longer capture ${entry.id})`);
          capture.t = entry.t;
          return capture;
        },
      ),
      metrics: rereadInOrder(
        reader,
        metricFiles,
        metrics,
        inTimeOrder(metrics, (m) => m.metric.t),
        (row, where, entry) => ({
          ...reader.readMetric(row, where),
          t: entry.metric.t,
        }),
      ),
      counts: { captures: captures.length, metrics: metrics.length },
    },
    root,
  };
}

const NO_ANNOTATIONS: readonly { id: string }[] = Object.freeze([]);
const NO_VALUES: JsonValue[] = [];

interface RecordsFile {
  table: 'captures' | 'metrics';
  path: string;
  shownAs: string;
  /** The folder the file names in it are relative to. */
  base: string;
}

/** Where the first pass found a record. */
interface RecordAt {
  file: number;
  row: number;
}

/** What the first pass keeps of a capture: what the clock and the metrics need. */
type IndexedCapture = RecordAt & ClockedCapture;

/** What the first pass keeps of a metric: its references (and the time they resolve to), not its values. */
class IndexedMetric implements RecordAt {
  readonly file: number;
  readonly row: number;
  readonly metric: PerceptionMetric;
  private readonly files: RecordsFile[];

  constructor(files: RecordsFile[], at: RecordAt, metric: PerceptionMetric) {
    this.files = files;
    this.file = at.file;
    this.row = at.row;
    this.metric = metric;
  }

  /** Made when a warning needs it: kept for every metric, the strings would outweigh the metric. */
  get where(): string {
    return `${this.files[this.file]!.shownAs}: metrics[${this.row}]`;
  }
}

/** The first pass over a table's files: every row read (and warned about) once. */
async function readEach(
  files: RecordsFile[],
  warn: Warn,
  reader: DatasetReader,
  read: (row: JsonValue, where: string, at: RecordAt, base: string) => void,
): Promise<void> {
  for (const [k, f] of files.entries()) {
    const file = await readTable(f.path, f.shownAs, f.table, warn);
    reader.noteVersion(file);
    file.rows.forEach((row, i) =>
      read(row, `${file.shownAs}: ${f.table}[${i}]`, { file: k, row: i }, f.base),
    );
  }
}

/**
 * The second pass: the records again, in `order`. A file is read when its first record is due and
 * dropped when its last has been given; warnings were all given by the first pass.
 */
async function* rereadInOrder<E extends RecordAt, T>(
  reader: DatasetReader,
  files: RecordsFile[],
  entries: E[],
  order: number[],
  read: (row: JsonValue, where: string, entry: E, base: string) => T,
): AsyncIterable<T> {
  reader.silence();
  const left = files.map(() => 0);
  for (const e of entries) left[e.file]!++;
  const open = new Map<number, JsonValue[]>();
  const quiet: Warn = () => {};
  for (const i of order) {
    const entry = entries[i]!;
    const f = files[entry.file]!;
    let rows = open.get(entry.file);
    if (!rows) {
      rows = (await readTable(f.path, f.shownAs, f.table, quiet)).rows;
      open.set(entry.file, rows);
    }
    const row = rows[entry.row];
    const where = `${f.shownAs}: ${f.table}[${entry.row}]`;
    if (row === undefined) throw invalid(`${where}: the file changed while it was imported`);
    if (--left[entry.file]! === 0) open.delete(entry.file);
    yield read(row, where, entry, f.base);
  }
}

class DatasetReader {
  private readonly egos = new Map<string, PerceptionEgo>();
  private readonly sensors = new Map<string, PerceptionSensor>();
  private readonly annotationDefinitions = new Map<string, AnnotationDefinition>();
  private readonly metricDefinitions = new Map<string, MetricDefinition>();
  private readonly captureIds = new Set<string>();
  private readonly versions = new Map<string, string>();
  private readonly integerIds = new Map<IdNamespace, Set<string>>();
  /** Egos that captures name and egos.json does not declare, warned about once each. */
  private readonly danglingEgos = new Set<string>();
  private readonly root: string;
  private warn: Warn;

  constructor(root: string, warn: Warn) {
    this.root = root;
    this.warn = warn;
  }

  /** For the second pass: what it reads was read, and warned about, by the first. */
  silence(): void {
    this.warn = () => {};
  }

  /** An id, remembering that it was an integer in the source so that an export writes one. */
  private id(namespace: IdNamespace, v: unknown, where: string): string {
    const id = readId(v, where);
    if (typeof v === 'number') {
      let set = this.integerIds.get(namespace);
      if (!set) this.integerIds.set(namespace, (set = new Set()));
      set.add(id);
    }
    return id;
  }

  private optionalId(namespace: IdNamespace, v: unknown, where: string): string | undefined {
    return v === undefined || v === null ? undefined : this.id(namespace, v, where);
  }

  noteVersion(file: TableFile): void {
    if (file.version !== undefined && !this.versions.has(file.version))
      this.versions.set(file.version, file.shownAs);
  }

  readDefinitions(table: (typeof SINGLE_TABLES)[number], file: TableFile): void {
    file.rows.forEach((row, i) => {
      const where = `${file.shownAs}: ${table}[${i}]`;
      if (!isObject(row)) throw invalid(`${where}: expected an object`);
      const namespace: IdNamespace =
        table === 'egos' ? 'ego' : table === 'sensors' ? 'sensor' : (table.replace(/s$/, '') as IdNamespace);
      const id = this.id(namespace, row.id, `${where}.id`);
      const description = readString(row.description, `${where}.description`);
      const put = <T>(map: Map<string, T>, value: T): void => {
        if (map.has(id)) this.warn(where, `id ${id} is defined again; the later definition is kept`);
        map.set(id, value);
      };
      switch (table) {
        case 'egos': {
          const ego: PerceptionEgo = { id, description };
          const extra = extraFields(row, ['id', 'description']);
          if (extra) ego.extra = extra;
          return put(this.egos, ego);
        }
        case 'sensors': {
          const sensor: PerceptionSensor = {
            id,
            modality: readString(row.modality, `${where}.modality`, 'unknown'),
            ego: this.optionalId('ego', row.ego_id, `${where}.ego_id`) ?? null,
            description,
          };
          const extra = extraFields(row, ['id', 'ego_id', 'modality', 'description']);
          if (extra) sensor.extra = extra;
          return put(this.sensors, sensor);
        }
        case 'annotation_definitions': {
          const name = readString(row.name, `${where}.name`);
          const def: AnnotationDefinition = {
            id,
            name,
            description,
            format: readString(row.format, `${where}.format`, 'JSON'),
            kind: classifyAnnotationDefinition({ id, name }),
          };
          const spec = readSpec(row.spec, `${where}.spec`);
          if (spec) def.spec = spec;
          if (def.kind === 'generic')
            this.warn(
              where,
              `annotation type ${JSON.stringify(name)} is not one simrec knows; its values are kept as generic data`,
            );
          const extra = extraFields(row, ['id', 'name', 'description', 'format', 'spec']);
          if (extra) def.extra = extra;
          return put(this.annotationDefinitions, def);
        }
        case 'metric_definitions': {
          const def: MetricDefinition = { id, name: readString(row.name, `${where}.name`), description };
          const spec = readSpec(row.spec, `${where}.spec`);
          if (spec) def.spec = spec;
          const extra = extraFields(row, ['id', 'name', 'description', 'spec']);
          if (extra) def.extra = extra;
          return put(this.metricDefinitions, def);
        }
      }
    });
  }

  readCapture(row: JsonValue, where: string, base: string): PerceptionCapture {
    if (!isObject(row)) throw invalid(`${where}: expected an object`);
    const id = readId(row.id, `${where}.id`);
    if (this.captureIds.has(id)) this.warn(`${where}.id`, `capture id ${id} appears again`);
    this.captureIds.add(id);
    const s = row.sensor;
    if (!isObject(s)) throw invalid(`${where}.sensor: expected an object`);
    const sensorId = this.id('sensor', s.sensor_id, `${where}.sensor.sensor_id`);
    const modality = readString(s.modality, `${where}.sensor.modality`, 'unknown');
    const sensorEgo = this.optionalId('ego', s.ego_id, `${where}.sensor.ego_id`);
    const capture: PerceptionCapture = {
      id,
      sensor: sensorId,
      sequence: readOptionalId(row.sequence_id, `${where}.sequence_id`) ?? '',
      step: readInteger(row.step, `${where}.step`),
      t: 0,
      timestamp: readNumber(row.timestamp, `${where}.timestamp`),
      annotations: [],
    };
    const extra: JsonObject = {};
    const sensorPosition = readVector(s.translation, `${where}.sensor.translation`);
    const sensorRotation = readQuaternion(s.rotation, `${where}.sensor.rotation`);
    if (sensorPosition && sensorRotation)
      capture.sensorPose = {
        position: unityToCanonicalPosition(sensorPosition),
        rotation: unityToCanonicalRotation(sensorRotation),
      };
    this.checkQuaternion(sensorRotation, `${where}.sensor.rotation`);
    const intrinsics = this.readIntrinsics(s, where);
    if (intrinsics) capture.intrinsics = intrinsics;
    const ego = this.readEgo(row.ego, `${where}.ego`);
    if (ego) capture.ego = ego;
    if (sensorEgo !== undefined && ego && sensorEgo !== ego.id)
      this.warn(`${where}.sensor.ego_id`, `${sensorEgo} differs from ego.ego_id ${ego.id}`);
    const sensorExtra = extraFields(s, [
      'sensor_id',
      'modality',
      'translation',
      'rotation',
      'camera_intrinsic',
      'projection',
      ...(sensorEgo === ego?.id ? ['ego_id'] : []),
    ]);
    if (sensorExtra) extra.sensor = sensorExtra;
    if (isObject(row.ego)) {
      const egoExtra = extraFields(row.ego, [
        'ego_id',
        'translation',
        'rotation',
        'velocity',
        'acceleration',
      ]);
      if (egoExtra) extra.ego = egoExtra;
    }
    this.ensureSensor(sensorId, modality, sensorEgo ?? ego?.id ?? null, `${where}.sensor.sensor_id`);
    if (row.filename !== undefined && row.filename !== null)
      capture.file = datasetFileName(
        this.root,
        base,
        readString(row.filename, `${where}.filename`),
        `${where}.filename`,
      );
    if (row.format !== undefined && row.format !== null)
      capture.format = readString(row.format, `${where}.format`);
    const annotations = row.annotations ?? [];
    if (!Array.isArray(annotations)) throw invalid(`${where}.annotations: expected an array`);
    const annotationIds = new Set<string>();
    annotations.forEach((a, i) => {
      const annotation = this.readAnnotation(a, `${where}.annotations[${i}]`, base);
      if (annotationIds.has(annotation.id))
        this.warn(
          `${where}.annotations[${i}].id`,
          `annotation id ${annotation.id} is used twice in this capture`,
        );
      annotationIds.add(annotation.id);
      capture.annotations.push(annotation);
    });
    const captureExtra = extraFields(row, [
      'id',
      'sequence_id',
      'step',
      'timestamp',
      'sensor',
      'ego',
      'filename',
      'format',
      'annotations',
    ]);
    if (captureExtra) extra.capture = captureExtra;
    if (Object.keys(extra).length) capture.extra = extra;
    return capture;
  }

  private readIntrinsics(s: JsonObject, where: string): CameraIntrinsics | undefined {
    const projection = readString(s.projection, `${where}.sensor.projection`, 'perspective').toLowerCase();
    const matrix = s.camera_intrinsic;
    if (matrix === undefined || matrix === null) return undefined;
    if (
      !Array.isArray(matrix) ||
      !matrix.every((c) => Array.isArray(c) && c.every((x) => typeof x === 'number' && Number.isFinite(x)))
    )
      throw invalid(`${where}.sensor.camera_intrinsic: expected a 3x3 array of numbers`);
    const columns = matrix as number[][];
    const intrinsics: CameraIntrinsics = {
      projection: projection === 'orthographic' ? 'orthographic' : 'perspective',
      K: null,
      unityProjection: columns,
    };
    if (projection === 'perspective') {
      const { problem } = intrinsicsFromUnityProjection(columns, undefined);
      if (problem) this.warn(`${where}.sensor.camera_intrinsic`, `${problem}; kept as given, no K`);
    }
    return intrinsics;
  }

  private readEgo(v: JsonValue | undefined, where: string): EgoState | undefined {
    if (v === undefined || v === null) return undefined;
    if (!isObject(v)) throw invalid(`${where}: expected an object`);
    const id = this.id('ego', v.ego_id, `${where}.ego_id`);
    const position = readVector(v.translation, `${where}.translation`) ?? [0, 0, 0];
    const rotation = readQuaternion(v.rotation, `${where}.rotation`) ?? [0, 0, 0, 1];
    this.checkQuaternion(rotation, `${where}.rotation`);
    const ego: EgoState = {
      id,
      pose: { position: unityToCanonicalPosition(position), rotation: unityToCanonicalRotation(rotation) },
    };
    const velocity = readVector(v.velocity, `${where}.velocity`);
    const acceleration = readVector(v.acceleration, `${where}.acceleration`);
    if (velocity) ego.velocity = unityToCanonicalPosition(velocity);
    if (acceleration) ego.acceleration = unityToCanonicalPosition(acceleration);
    if (!this.egos.has(id) && !this.danglingEgos.has(id)) {
      this.danglingEgos.add(id);
      this.warn(
        `${where}.ego_id`,
        `ego ${id} is not in egos.json; the capture keeps the reference, no ego is made for it`,
      );
    }
    return ego;
  }

  private ensureSensor(id: string, modality: string, ego: string | null, where: string): void {
    const known = this.sensors.get(id);
    if (known) {
      if (known.modality !== modality)
        this.warn(
          where,
          `sensor ${id} is a ${known.modality} in sensors.json but the capture says ${modality}`,
        );
      return;
    }
    this.warn(
      where,
      `sensor ${id} is not in sensors.json; its captures are kept under it, an export does not declare it`,
    );
    this.sensors.set(id, { id, declared: false, modality, ego, description: '' });
  }

  private checkQuaternion(q: number[] | undefined, where: string): void {
    if (!q) return;
    const norm = Math.hypot(...q);
    if (Math.abs(norm - 1) > 1e-3)
      this.warn(where, `quaternion ${JSON.stringify(q)} has length ${norm.toFixed(3)}, not 1`);
  }

  private readAnnotation(a: JsonValue, where: string, base: string): PerceptionAnnotation {
    if (!isObject(a)) throw invalid(`${where}: expected an object`);
    const id = readId(a.id, `${where}.id`);
    const definition = this.id(
      'annotation_definition',
      a.annotation_definition,
      `${where}.annotation_definition`,
    );
    const def = this.annotationDefinitions.get(definition);
    let kind: AnnotationKind = def?.kind ?? 'generic';
    if (!def) {
      kind = guessKind(a.values);
      this.warn(
        `${where}.annotation_definition`,
        `definition ${definition} is not in annotation_definitions.json; values kept as ${kind === 'generic' ? 'generic data' : kind}`,
      );
    }
    const annotation: PerceptionAnnotation = { id, definition, kind };
    if (a.filename !== undefined && a.filename !== null)
      annotation.file = datasetFileName(
        this.root,
        base,
        readString(a.filename, `${where}.filename`),
        `${where}.filename`,
      );
    if (a.values !== undefined && a.values !== null) {
      if (!Array.isArray(a.values)) throw invalid(`${where}.values: expected an array or null`);
      annotation.values =
        kind === 'bbox3d'
          ? a.values.map((v, i) => readBox3D(v, `${where}.values[${i}]`))
          : kind === 'bbox2d'
            ? a.values.map((v, i) => readBox2D(v, `${where}.values[${i}]`))
            : a.values;
    }
    // A null filename or values is kept as written (the mock writes both; Unity's writer omits them).
    const extra = extraFields(a, [
      'id',
      'annotation_definition',
      ...(a.filename === null ? [] : ['filename']),
      ...(a.values === null ? [] : ['values']),
    ]);
    if (extra) annotation.extra = extra;
    return annotation;
  }

  readMetric(row: JsonValue, where: string): PerceptionMetric {
    if (!isObject(row)) throw invalid(`${where}: expected an object`);
    const definition = this.id('metric_definition', row.metric_definition, `${where}.metric_definition`);
    if (!this.metricDefinitions.has(definition))
      this.warn(`${where}.metric_definition`, `definition ${definition} is not in metric_definitions.json`);
    const metric: PerceptionMetric = {
      definition,
      step: row.step === undefined || row.step === null ? 0 : readInteger(row.step, `${where}.step`),
      t: 0,
      values: row.values ?? [],
    };
    const capture = readOptionalId(row.capture_id, `${where}.capture_id`);
    const annotation = readOptionalId(row.annotation_id, `${where}.annotation_id`);
    const sequence = readOptionalId(row.sequence_id, `${where}.sequence_id`);
    if (capture !== undefined) metric.capture = capture;
    if (annotation !== undefined) metric.annotation = annotation;
    if (sequence !== undefined) metric.sequence = sequence;
    const extra = extraFields(row, [
      'capture_id',
      'annotation_id',
      'sequence_id',
      'step',
      'metric_definition',
      'values',
    ]);
    if (extra) metric.extra = extra;
    return metric;
  }

  /** The dataset's tables; the captures and metrics (from the first pass) get their times on the run's clock. */
  finish(
    captures: ClockedCapture[],
    metrics: { metric: PerceptionMetric; where: string }[],
  ): Omit<PerceptionDataset, 'captures' | 'metrics'> {
    if (this.versions.size > 1)
      this.warn(
        'dataset',
        `files disagree on the schema version: ${[...this.versions].map(([v, f]) => `${v} (${f})`).join(', ')}`,
      );
    const sequences = layOutSequences(captures);
    resolveMetricTimes(captures, metrics, this.warn);
    for (const sensor of this.sensors.values())
      if (sensor.declared !== false && sensor.ego !== null && !this.egos.has(sensor.ego))
        this.warn(
          'sensors.json',
          `sensor ${sensor.id} names ego ${sensor.ego}, which egos.json does not declare`,
        );
    const info: PerceptionDataset['info'] = { layout: 'perception', sequences };
    const version = this.versions.keys().next().value;
    if (version !== undefined) info.version = version;
    if (this.integerIds.size)
      info.integerIds = Object.fromEntries([...this.integerIds].map(([n, ids]) => [n, [...ids].sort()]));
    return {
      info,
      egos: [...this.egos.values()],
      sensors: [...this.sensors.values()],
      annotationDefinitions: [...this.annotationDefinitions.values()],
      metricDefinitions: [...this.metricDefinitions.values()],
    };
  }
}

function readInteger(v: unknown, where: string): number {
  const n = readNumber(v, where);
  if (!Number.isSafeInteger(n)) throw invalid(`${where}: expected an integer, got ${n}`);
  return n;
}

function readSpec(v: JsonValue | undefined, where: string): JsonValue[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw invalid(`${where}: expected an array`);
  return v;
}

/** The kind of values with no definition, from their shape. */
function guessKind(values: JsonValue | undefined): AnnotationKind {
  const first = Array.isArray(values) ? values[0] : undefined;
  if (!isObject(first)) return 'generic';
  if ('width' in first && 'height' in first && 'x' in first) return 'bbox2d';
  if ('size' in first && 'translation' in first) return 'bbox3d';
  if ('keypoints' in first) return 'keypoints';
  return 'generic';
}

/** A 2D box in pixels; the datasetinsights copy has floats, the mock ints. */
function readBox2D(v: JsonValue, where: string): JsonValue {
  if (!isObject(v)) throw invalid(`${where}: expected an object`);
  for (const key of ['x', 'y', 'width', 'height']) readNumber(v[key], `${where}.${key}`);
  return v;
}
