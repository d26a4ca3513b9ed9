import type { FormatCodec, FormatOption } from '../model/codec-port.js';
import { describeValue, invalid } from '../model/errors.js';

/**
 * The format codecs `simrec import FORMAT` and `simrec export RUN FORMAT` know. A codec is a folder
 * under src/formats and an entry here; its module (and whatever heavy dependency it has, such as the
 * MongoDB driver) loads only when it is used. A format's own options are declared here, beside it, so
 * the command line can offer them without loading the codec.
 */
export interface FormatEntry {
  load: () => Promise<FormatCodec>;
  /**
   * What simrec does with the format, known without loading it: `import` reads it into runs
   * (the codec has `read`), `export` writes runs in it (`write`). Each command lists only its own.
   */
  directions: readonly Direction[];
  readOptions?: FormatOption[];
  writeOptions?: FormatOption[];
}

function datasetId(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw invalid(`--dataset: expected a dataset id (an integer >= 0), got ${describeValue(value)}`);
  return Number(value);
}

export type Direction = 'import' | 'export';
const BOTH: readonly Direction[] = ['import', 'export'];
const EXPORT_ONLY: readonly Direction[] = ['export'];

export const FORMATS: Record<string, FormatEntry> = {
  limsim: { load: async () => (await import('./limsim/codec.js')).limsimCodec, directions: BOTH },
  perception: {
    load: async () => (await import('./perception/codec.js')).perceptionCodec,
    directions: BOTH,
  },
  solo: { load: async () => (await import('./solo/codec.js')).soloCodec, directions: BOTH },
  coco: { load: async () => (await import('./coco/codec.js')).cocoCodec, directions: EXPORT_ONLY },
  yolo: { load: async () => (await import('./yolo/codec.js')).yoloCodec, directions: EXPORT_ONLY },
  soda: {
    load: async () => (await import('./soda/codec.js')).sodaCodec,
    directions: BOTH,
    readOptions: [
      {
        key: 'dataset',
        flag: '--dataset <id>',
        description: 'soda: import only this dataset',
        parse: datasetId,
      },
    ],
    writeOptions: [
      {
        key: 'extension',
        flag: '--no-extension',
        description: "soda: SODA.Sim's fields only, without simrec's `simrec` field",
      },
    ],
  },
  didrive: { load: async () => (await import('./didrive/codec.js')).didriveCodec, directions: BOTH },
  mcap: {
    load: async () => (await import('./mcap/codec.js')).mcapCodec,
    directions: BOTH,
    writeOptions: [
      {
        key: 'osi',
        flag: '--osi',
        description:
          'mcap: add ASAM OSI 3.8 ground truth (osi3.GroundTruth per frame): an OSI trace file too',
      },
    ],
  },
  parquet: {
    load: async () => (await import('./parquet/codec.js')).parquetCodec,
    directions: EXPORT_ONLY,
  },
  carla: {
    load: async () => (await import('./carla/codec.js')).carlaCodec,
    directions: BOTH,
    readOptions: [
      {
        key: 'criteria',
        flag: '--criteria <file>',
        description: "carla: ScenarioRunner's criteria (default: NAME_criteria.json beside NAME.log)",
      },
      {
        key: 'xodr',
        flag: '--xodr <file>',
        description: "carla: the map's OpenDRIVE, kept as the run's road network",
      },
    ],
    writeOptions: [
      {
        key: 'map',
        flag: '--map <name>',
        description:
          "carla: the map CARLA's replayer loads, for a run from elsewhere (default: none, the map loaded)",
      },
      {
        key: 'blueprintsFrom',
        flag: '--blueprints-from <file>',
        description:
          "carla: a recording made with the CARLA that will replay it, for its blueprints' numbers",
      },
    ],
  },
  osi: { load: async () => (await import('./osi/codec.js')).osiCodec, directions: BOTH },
  fcd: {
    load: async () => (await import('./fcd/codec.js')).fcdCodec,
    directions: BOTH,
    readOptions: [
      {
        key: 'net',
        flag: '--net <file>',
        description:
          "fcd: the SUMO network the run drove on (kept with the run; geo coordinates' projection)",
      },
      {
        key: 'routes',
        flag: '--routes <files>',
        description:
          "fcd: route or additional files (comma-separated) with the vehicle types, whose lengths move SUMO's front-bumper positions to centres",
      },
    ],
  },
};

/** The formats simrec knows, or only those it can import or export. */
export const formatNames = (direction?: Direction): string[] =>
  Object.keys(FORMATS).filter(
    (name) => direction === undefined || FORMATS[name]!.directions.includes(direction),
  );

/**
 * The codec of a format. Given a direction, a format that does not go that way is refused as a
 * usage mistake naming the formats that do (`simrec import coco` lists what import reads).
 */
export async function loadCodec(name: string, direction?: Direction): Promise<FormatCodec> {
  const entry = FORMATS[name];
  const choices = formatNames(direction).join(', ');
  if (!entry)
    throw invalid(
      `FORMAT: expected one of ${choices}${direction ? ` (the formats ${direction} ${direction === 'import' ? 'reads' : 'writes'})` : ''}, got ${describeValue(name)}`,
    );
  if (direction && !entry.directions.includes(direction))
    throw invalid(
      direction === 'import'
        ? `${name}: import is not supported (simrec writes ${name} only); import reads ${choices}`
        : `${name}: export is not supported (simrec reads ${name} only); export writes ${choices}`,
    );
  return entry.load();
}
