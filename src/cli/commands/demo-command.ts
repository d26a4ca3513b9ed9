import type { Command } from 'commander';
import { recordSyntheticRun } from '../../demo/synthetic-run.js';
import { parsePositive } from '../args.js';
import { printJson, Progress } from '../output.js';
import { withStore } from '../with-store.js';

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('record a demo run into the store (the viewer opens once it lands; use --no-serve meanwhile)')
    .option('--no-serve', 'record only; do not start the viewer')
    .option('--duration <seconds>', 'simulated seconds', (v) => parsePositive('--duration', v), 60)
    .option('--rate <hz>', 'samples per simulated second', (v) => parsePositive('--rate', v), 10)
    .option('--json', 'print the recorded run as JSON')
    .action(async (opts: { serve: boolean; duration: number; rate: number; json?: boolean }, command: Command) =>
      withStore(command, async (store) => {
        const progress = new Progress('recording demo');
        const run = await recordSyntheticRun(store, {
          duration: opts.duration,
          rateHz: opts.rate,
          onProgress: (f) => progress.update(f),
        });
        progress.done();
        if (opts.json) printJson(run);
        else process.stdout.write(`recorded run ${run.id} into ${store.location}; try: simrec info ${run.id}\n`);
        if (opts.serve && !opts.json)
          process.stderr.write('the viewer is not built yet (see the viewer issue); the run is in the store\n');
      }),
    );
}
