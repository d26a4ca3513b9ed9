import type { Command } from 'commander';
import { notFound } from '../../model/errors.js';
import { parseRunId } from '../args.js';
import { printJson } from '../output.js';
import { tablesFolderOf, withExistingStore } from '../with-store.js';

/** `simrec rm RUN[,RUN...]`: deletes runs from the store, and their tables with them. */
export function registerRmCommand(program: Command): void {
  program
    .command('rm')
    .description('delete runs (and their tables) from the store')
    .argument('<runs>', 'run ids, comma-separated', (v: string) => v.split(',').map(parseRunId))
    .option('--json', 'print JSON')
    .action(async (runs: number[], opts: { json?: boolean }, command: Command) =>
      withExistingStore(command, async (store) => {
        // Every run checked first: a typo in the list deletes nothing.
        for (const run of runs) if (!(await store.getRun(run))) throw notFound(`run ${run} not found`);
        const folder = tablesFolderOf(command, store);
        for (const run of runs) {
          await store.deleteRun(run);
          folder.removeRun(run);
        }
        if (opts.json) printJson({ deleted: runs });
        else process.stdout.write(`deleted run${runs.length > 1 ? 's' : ''} ${runs.join(', ')}\n`);
      }),
    );
}
