import type { Command } from 'commander';
import { describeValue, invalid } from '../../model/errors.js';
import { parseRunId } from '../args.js';
import { printJson, printTable, Progress } from '../output.js';
import { withStore } from '../with-store.js';
import { printWarnings } from '../warnings.js';

/*
 * Until the generic `simrec import FORMAT` / `simrec export RUN FORMAT` commands land, SODA.Sim's
 * layout has its own noun: `simrec soda import LOCATION`, `simrec soda export RUN LOCATION`, where
 * LOCATION is a folder of mongoexport files or a mongodb://HOST/DB URL. The codec loads (and with
 * it the MongoDB driver) only when one of them runs.
 */

interface ImportOptions {
  dataset?: number;
  json?: boolean;
}

function parseDatasetId(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw invalid(`--dataset: expected a dataset id (an integer >= 0), got ${describeValue(value)}`);
  return Number(value);
}

export function registerSodaCommands(program: Command): void {
  const soda = program
    .command('soda')
    .description("SODA.Sim's MongoDB layout: a live database (mongodb://HOST/DB) or mongoexport files");

  soda
    .command('import')
    .description('import SODA.Sim datasets (each as a run), scenarios and vehicles')
    .argument('<location>', 'a folder of mongoexport .json files, or mongodb://HOST/DB')
    .option('--dataset <id>', 'only this dataset', parseDatasetId)
    .option('--json', 'print JSON')
    .action(async (location: string, opts: ImportOptions, command: Command) => {
      const { importSoda, openSodaSource } = await import('../../formats/soda/index.js');
      const warnings: string[] = [];
      const progress = new Progress('import soda');
      const result = await withStore(command, async (store) => {
        const source = await openSodaSource(location);
        try {
          return await importSoda(store, source, {
            ...(opts.dataset === undefined ? {} : { dataset: opts.dataset }),
            warn: (m) => warnings.push(m),
            onProgress: (done, total) => progress.update(total ? done / total : 1, `${done}/${total}`),
          });
        } finally {
          await source.close();
        }
      });
      progress.done();
      if (opts.json)
        return printJson({
          runs: result.runs.map((r) => ({ dataset: r.dataset, collection: r.collection, run: r.run.id })),
          scenarios: result.scenarios,
          vehicles: result.vehicles,
          warnings,
        });
      printWarnings(warnings);
      printTable(
        ['DATASET', 'COLLECTION', 'RUN', 'END'],
        result.runs.map((r) => [r.dataset, r.collection, r.run.id, r.run.endReason]),
      );
      process.stdout.write(`${result.scenarios} scenarios, ${result.vehicles} vehicles\n`);
    });

  soda
    .command('export')
    .description('write a run as a new SODA.Sim dataset, with the scenarios and vehicles of the store')
    .argument('<run>', 'run id', parseRunId)
    .argument('<location>', 'a folder for mongoexport .json files, or mongodb://HOST/DB')
    .option('--no-extension', "write SODA.Sim's fields only, without simrec's `simrec` field")
    .option('--json', 'print JSON')
    .action(
      async (
        run: number,
        location: string,
        opts: { extension: boolean; json?: boolean },
        command: Command,
      ) => {
        const { exportSoda, openSodaSink } = await import('../../formats/soda/index.js');
        const warnings: string[] = [];
        const result = await withStore(command, async (store) => {
          const sink = await openSodaSink(location);
          try {
            return await exportSoda(store, run, sink, {
              extension: opts.extension,
              warn: (m) => warnings.push(m),
            });
          } finally {
            await sink.close();
          }
        });
        if (opts.json) return printJson({ run, ...result, warnings });
        printWarnings(warnings);
        process.stdout.write(
          `run ${run} -> dataset ${result.dataset} (${result.collection}), ${result.scenarios} scenarios, ${result.vehicles} vehicles\n`,
        );
      },
    );
}
