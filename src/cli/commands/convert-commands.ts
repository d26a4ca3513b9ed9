import type { Command } from 'commander';
import { invalid } from '../../model/errors.js';
import { FORMATS, formatNames, loadCodec, type FormatEntry } from '../../formats/registry.js';
import type { FormatOption } from '../../model/codec-port.js';
import { parseRunId } from '../args.js';
import { printJson, printTable, Progress } from '../output.js';
import { naming } from '../failure.js';
import { abortOnInterrupt, requireFreeOutput, requireParentFolder } from '../output-target.js';
import { withExistingStore, withStore } from '../with-store.js';
import { writeTablesAfter } from './tables-command.js';
import { printWarnings } from '../warnings.js';

/*
 * `simrec import FORMAT LOCATION` and `simrec export RUN FORMAT LOCATION`, for every codec in
 * src/formats/registry.ts: the one verb per direction (a new format needs no change here). The work
 * itself is record/import-run.ts and replay/export-run.ts; this file is flags, progress and printing.
 */

type Settings = Record<string, string | number | boolean>;

/** Every format's own options, each offered once (formats may share one). */
function formatOptions(pick: (entry: FormatEntry) => FormatOption[] | undefined): FormatOption[] {
  const byFlag = new Map<string, FormatOption>();
  for (const entry of Object.values(FORMATS)) for (const o of pick(entry) ?? []) byFlag.set(o.flag, o);
  return [...byFlag.values()];
}

/** The format options given, refusing one the chosen format does not have. */
function settingsFor(
  format: string,
  given: Record<string, unknown>,
  all: FormatOption[],
  own: FormatOption[] | undefined,
): Settings {
  const settings: Settings = {};
  for (const option of all) {
    const value = given[option.key];
    // A `--no-x` flag's value is true unless given.
    if (value === undefined || (option.flag.startsWith('--no-') && value === true)) continue;
    if (!own?.includes(option))
      throw invalid(`${option.flag.split(' ')[0]}: not an option of ${format} (${option.description})`);
    settings[option.key] = value as string | number | boolean;
  }
  return settings;
}

const addFormatOption = (command: Command, o: FormatOption): void => {
  if (o.parse) command.option(o.flag, o.description, o.parse);
  else command.option(o.flag, o.description);
};

const warningsCollector = (): { list: string[]; warn: (where: string, message: string) => void } => {
  const list: string[] = [];
  return { list, warn: (where, message) => list.push(`${where}: ${message}`) };
};

export function registerConvertCommands(program: Command): void {
  const readOptions = formatOptions((e) => e.readOptions);
  const importCommand = program
    .command('import')
    .description(`import a recording as a run (formats: ${formatNames('import').join(', ')})`)
    .argument('<format>', formatNames('import').join(' | '))
    .argument('<location>', 'the recording: a file or folder, as the format has it (LimSim: its .db)')
    .option(
      '--description <text>',
      'the description of the run(s) read, instead of the one the format gives',
    );
  for (const o of readOptions) addFormatOption(importCommand, o);
  importCommand
    .option('--json', 'print JSON')
    .action(async (format: string, location: string, opts: Record<string, unknown>, command: Command) => {
      const codec = await loadCodec(format, 'import');
      const { importRecording } = await import('../../record/import-run.js');
      const settings = settingsFor(format, opts, readOptions, FORMATS[format]!.readOptions);
      const warnings = warningsCollector();
      const progress = new Progress(`import ${format}`);
      const result = await withStore(command, async (store) => {
        const imported = await abortOnInterrupt(`${location}: nothing was imported`, (signal) =>
          naming(location, () =>
            importRecording(store, codec, location, {
              warn: warnings.warn,
              signal,
              settings,
              ...(typeof opts.description === 'string' ? { description: opts.description } : {}),
              onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
            }),
          ),
        );
        progress.done();
        await writeTablesAfter(
          command,
          store,
          imported.runs.map((r) => r.id),
        );
        return imported;
      });
      const first = result.runs[0]!;
      if (opts.json)
        return printJson({ run: first, runs: result.runs, ...result.details, warnings: warnings.list });
      printWarnings(warnings.list);
      if (result.runs.length === 1) process.stdout.write(`${location} -> run ${first.id}\n`);
      else
        printTable(
          ['RUN', 'DESCRIPTION', 'END'],
          result.runs.map((r) => [r.id, r.description, r.endReason]),
        );
    });

  const writeOptions = formatOptions((e) => e.writeOptions);
  const exportCommand = program
    .command('export')
    .description(`write a run in another format (formats: ${formatNames('export').join(', ')})`)
    .argument(
      '<run>',
      'run id; several, comma-separated, for formats holding several runs (didrive, parquet) or writing one file each into a folder (limsim, mcap)',
      (v) => v.split(',').map(parseRunId),
    )
    .argument('<format>', formatNames('export').join(' | '))
    .argument(
      '[location]',
      'where to write it (LimSim: a .db file, or a folder for several runs); not needed with --episode-of',
    )
    .option('--force', 'replace what is at the location (once the new output is complete)')
    .option('--episode-of <dataset>', 'add the run(s) as the next episodes of the dataset there (didrive)');
  for (const o of writeOptions) addFormatOption(exportCommand, o);
  exportCommand
    .option('--json', 'print JSON')
    .action(
      async (
        runs: number[],
        format: string,
        positional: string | undefined,
        opts: Record<string, unknown> & { force?: boolean; json?: boolean; episodeOf?: string },
        command: Command,
      ) => {
        const codec = await loadCodec(format, 'export');
        const [{ exportRecording }, { requireRun }, { evaluationFrames }] = await Promise.all([
          import('../../replay/export-run.js'),
          import('../../replay/run-queries.js'),
          import('../../evaluate/evaluate-run.js'),
        ]);
        const settings = settingsFor(format, opts, writeOptions, FORMATS[format]!.writeOptions);
        const location = opts.episodeOf ?? positional;
        if (location === undefined)
          throw invalid('LOCATION: expected where to write, or --episode-of DATASET');
        if (opts.episodeOf !== undefined && positional !== undefined && positional !== opts.episodeOf)
          throw invalid(`LOCATION: ${positional} and --episode-of ${opts.episodeOf} disagree; give one`);
        if (opts.episodeOf !== undefined && !codec.multiRun)
          throw invalid(`${format}: --episode-of is for formats holding several runs (didrive)`);
        if (runs.length > 1 && !codec.multiRun && !codec.fileExtension)
          throw invalid(
            `${format}: writes one run to a location; several runs are for formats holding several (didrive, parquet) or writing one file each (limsim, mcap)`,
          );
        // A database (or its mongoexport folder) is added to, never replaced.
        if (codec.output !== 'database' && opts.episodeOf === undefined) {
          requireParentFolder(location);
          requireFreeOutput(location, Boolean(opts.force));
        }
        const warnings = warningsCollector();
        const progress = new Progress(`export ${format}`);
        const { infos, details } = await withExistingStore(command, async (store) => ({
          infos: await Promise.all(runs.map((r) => requireRun(store, r))),
          details: await abortOnInterrupt(`${location} was not written`, (signal) =>
            naming(location, () =>
              exportRecording(store, codec, runs, location, {
                overwrite: Boolean(opts.force),
                append: opts.episodeOf !== undefined,
                warn: warnings.warn,
                signal,
                settings,
                // LimSim's recorder always fills evaluationINFO (its report.py fails on an empty one):
                // a run not yet evaluated gets LimSim's evaluation in the file, and nothing in the store.
                evaluate: (run) => evaluationFrames(store, run, 'limsim'),
                onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
              }),
            ),
          ),
        }));
        progress.done();
        if (opts.json)
          return printJson({
            run: infos[0],
            runs: infos,
            format,
            location,
            ...details,
            warnings: warnings.list,
          });
        printWarnings(warnings.list);
        // Several runs in a one-run format: one file each, in the folder at the location.
        const files = Array.isArray(details.files) ? (details.files as { run: number; file: string }[]) : [];
        if (files.length) for (const f of files) process.stdout.write(`run ${f.run} -> ${f.file}\n`);
        else process.stdout.write(`run ${runs.join(',')} -> ${location}\n`);
      },
    );
}
