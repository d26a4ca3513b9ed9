import type { Command } from 'commander';
import { describeValue, invalid } from '../../model/errors.js';
import { FORMAT_CODECS, formatNames, type FormatCodec } from '../../formats/registry.js';
import { parseRunId } from '../args.js';
import { printJson, Progress } from '../output.js';
import { withStore } from '../with-store.js';

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
  if (!json) for (const w of warnings) process.stderr.write(`simrec: warning: ${w}\n`);
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
        codec.importRun(store, location, {
          warn: (m) => warnings.push(m),
          onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
        }),
      );
      progress.done();
      if (opts.json) return printJson({ run: result.run, ...result.details, warnings });
      reportWarnings(warnings, opts.json);
      process.stdout.write(`${location} -> run ${result.run.id}\n`);
    });

  program
    .command('export')
    .description(`write a run in another format (formats: ${formatNames().join(', ')})`)
    .argument('<run>', 'run id', parseRunId)
    .argument('<format>', formatNames().join(' | '))
    .argument('<location>', 'where to write it (LimSim: a .db file)')
    .option('--force', 'replace what is at the location')
    .option('--json', 'print JSON')
    .action(
      async (
        run: number,
        format: string,
        location: string,
        opts: { force?: boolean; json?: boolean },
        command: Command,
      ) => {
        const codec = await loadCodec(format);
        const warnings: string[] = [];
        const progress = new Progress(`export ${format}`);
        const result = await withStore(command, (store) =>
          codec.exportRun(store, run, location, {
            overwrite: Boolean(opts.force),
            warn: (m) => warnings.push(m),
            onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
          }),
        );
        progress.done();
        if (opts.json) return printJson({ run, format, location, ...result.details, warnings });
        reportWarnings(warnings, opts.json);
        process.stdout.write(`run ${run} -> ${location}\n`);
      },
    );
}
