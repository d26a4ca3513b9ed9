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
  readOptions?: FormatOption[];
  writeOptions?: FormatOption[];
}

function datasetId(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw invalid(`--dataset: expected a dataset id (an integer >= 0), got ${describeValue(value)}`);
  return Number(value);
}

export const FORMATS: Record<string, FormatEntry> = {
  limsim: { load: async () => (await import('./limsim/index.js')).limsimCodec },
  perception: { load: async () => (await import('./perception/codec.js')).perceptionCodec },
  solo: { load: async () => (await import('./solo/codec.js')).soloCodec },
  coco: { load: async () => (await import('./coco/codec.js')).cocoCodec },
  yolo: { load: async () => (await import('./yolo/codec.js')).yoloCodec },
  soda: {
    load: async () => (await import('./soda/codec.js')).sodaCodec,
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
  didrive: { load: async () => (await import('./didrive/index.js')).didriveCodec },
  mcap: {
    load: async () => (await import('./mcap/index.js')).mcapCodec,
    writeOptions: [
      {
        key: 'osi',
        flag: '--osi',
        description:
          'mcap: add ASAM OSI 3.8 ground truth (osi3.GroundTruth per frame): an OSI trace file too',
      },
    ],
  },
  parquet: { load: async () => (await import('./parquet/codec.js')).parquetCodec },
  osi: { load: async () => (await import('./osi/index.js')).osiCodec },
  fcd: {
    load: async () => (await import('./fcd/index.js')).fcdCodec,
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

export const formatNames = (): string[] => Object.keys(FORMATS);

export async function loadCodec(name: string): Promise<FormatCodec> {
  const entry = FORMATS[name];
  if (!entry)
    throw invalid(`FORMAT: expected one of ${formatNames().join(', ')}, got ${describeValue(name)}`);
  return entry.load();
}
