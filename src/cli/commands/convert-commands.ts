import type { Command } from 'commander';
import { describeValue, invalid } from '../../model/errors.js';
import { evaluationFrames } from '../../evaluate/evaluate-run.js';
import { FORMAT_CODECS, formatNames } from '../../formats/registry.js';
import type { FormatCodec } from '../../model/codec-port.js';
import { parseRunId } from '../args.js';
import { printJson, Progress } from '../output.js';
import { naming } from '../failure.js';
import {
  cleanUpOnInterrupt,
  interruptible,
  requireFreeOutput,
  requireParentFolder,
  writeFolderOutput,
} from '../output-target.js';
import { withExistingStore, withStore } from '../with-store.js';
import { printWarnings } from '../warnings.js';

/**
 * Formats whose dataset is a folder of their own, written whole through a temporary sibling: --force
 * replaces the old one only once the new one is complete. LimSim and DI-drive replace atomically
 * themselves.
 */
const FOLDER_DATASETS = new Set(['perception', 'solo', 'coco', 'yolo']);

/*
 * `simrec import FORMAT LOCATION` and `simrec export RUN FORMAT LOCATION`, for every codec in
 * src/formats/registry.ts: a new format needs no change here.
 */

async function loadCodec(name: string): Promise<FormatCodec> {
  const load = FORMAT_CODECS[name];
  if (!load) throw invalid(`FORMAT: expected one of ${formatNames().join(', ')}, got ${describeValue(name)}`);
  return load();
}

function reportWarnings(warnings: string[], json: boolean | undefined): void {
  if (!json) printWarnings(warnings);
}

export function registerConvertCommands(program: Command): void {
  program
    .command('import')
    .description(`import a recording as a run (formats: ${formatNames().join(', ')})`)
    .argument('<format>', formatNames().join(' | '))
    .argument('<location>', 'the recording: a file or folder, as the format has it (LimSim: its .db)')
    .option('--json', 'print JSON')
    .action(async (format: string, location: string, opts: { json?: boolean }, command: Command) => {
      const codec = await loadCodec(format);
      const warnings: string[] = [];
      const progress = new Progress(`import ${format}`);
      const result = await withStore(command, (store) =>
        naming(location, () =>
          codec.importRun(store, location, {
            warn: (m) => warnings.push(m),
            onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
          }),
        ),
      );
      progress.done();
      if (opts.json) return printJson({ run: result.run, ...result.details, warnings });
      reportWarnings(warnings, opts.json);
      process.stdout.write(`${location} -> run ${result.run.id}\n`);
    });

  program
    .command('export')
    .description(`write a run in another format (formats: ${formatNames().join(', ')})`)
    .argument('<run>', 'run id; several, comma-separated, for formats holding several runs (didrive)', (v) =>
      v.split(',').map(parseRunId),
    )
    .argument('<format>', formatNames().join(' | '))
    .argument('[location]', 'where to write it (LimSim: a .db file); not needed with --episode-of')
    .option('--force', 'replace what is at the location')
    .option('--episode-of <dataset>', 'add the run(s) as the next episodes of the dataset there (didrive)')
    .option('--json', 'print JSON')
    .action(
      async (
        runs: number[],
        format: string,
        positional: string | undefined,
        opts: { force?: boolean; json?: boolean; episodeOf?: string },
        command: Command,
      ) => {
        const codec = await loadCodec(format);
        const location = opts.episodeOf ?? positional;
        if (location === undefined)
          throw invalid('LOCATION: expected where to write, or --episode-of DATASET');
        if (opts.episodeOf !== undefined && positional !== undefined && positional !== opts.episodeOf)
          throw invalid(`LOCATION: ${positional} and --episode-of ${opts.episodeOf} disagree; give one`);
        if ((runs.length > 1 || opts.episodeOf !== undefined) && !codec.exportRuns)
          throw invalid(
            `${format}: writes one run to a location; several runs and --episode-of are for didrive`,
          );
        // A SODA.Sim folder is a database, like the MongoDB it mirrors: each export adds a dataset to it.
        const database = format === 'soda';
        if (!database && opts.episodeOf === undefined) {
          requireParentFolder(location);
          requireFreeOutput(location, Boolean(opts.force));
        }
        const warnings: string[] = [];
        const progress = new Progress(`export ${format}`);
        const options = {
          overwrite: Boolean(opts.force),
          append: opts.episodeOf !== undefined,
          warn: (m: string) => warnings.push(m),
          onProgress: (done: number, total: number) =>
            progress.update(total ? done / total : 1, `${done}/${total}`),
        };
        const result = await withExistingStore(command, (opened) => {
          const store = interruptible(opened);
          // LimSim's recorder always fills evaluationINFO (its report.py fails on an empty one): a
          // run not yet evaluated gets LimSim's evaluation in the file, and nothing in the store.
          const all = { ...options, evaluate: (run: number) => evaluationFrames(store, run, 'limsim') };
          const write = (target: string) =>
            codec.exportRuns
              ? codec.exportRuns(store, runs, target, all)
              : codec.exportRun(store, runs[0]!, target, all);
          return cleanUpOnInterrupt(location, () =>
            naming(location, () =>
              FOLDER_DATASETS.has(format) ? writeFolderOutput(location, write) : write(location),
            ),
          );
        });
        progress.done();
        if (opts.json)
          return printJson({ run: runs[0], runs, format, location, ...result.details, warnings });
        reportWarnings(warnings, opts.json);
        process.stdout.write(`run ${runs.join(',')} -> ${location}\n`);
      },
    );
}
