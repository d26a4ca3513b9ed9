import type { Command } from 'commander';
import { recordSyntheticRun } from '../../demo/synthetic-run.js';
import { parsePositive } from '../args.js';
import { printJson, Progress } from '../output.js';
import { withStore } from '../with-store.js';
import { serveOptions, serveUntilStopped, type ServeOptions } from './serve-command.js';

interface DemoOptions extends ServeOptions {
  serve: boolean;
  duration: number;
  rate: number;
  json?: boolean;
}

/** The main job: record a demo run into the store, then show it in the viewer. */
export function registerDemoCommand(program: Command): void {
  serveOptions(
    program
      .command('demo')
      .description('record a demo run into the store, then serve the viewer on it (Ctrl-C stops)')
      .option('--no-serve', 'record only; do not start the viewer')
      .option('--duration <seconds>', 'simulated seconds', (v) => parsePositive('--duration', v), 60)
      .option('--rate <hz>', 'samples per simulated second', (v) => parsePositive('--rate', v), 10)
      .option('--json', 'print the recorded run as JSON'),
  ).action(async (opts: DemoOptions, command: Command) =>
    withStore(command, async (store) => {
      const progress = new Progress('recording demo');
      const run = await recordSyntheticRun(store, {
        duration: opts.duration,
        rateHz: opts.rate,
        onProgress: (f) => progress.update(f),
      });
      progress.done();
      if (opts.json) printJson(run);
      else
        process.stdout.write(`recorded run ${run.id} into ${store.location}; try: simrec info ${run.id}\n`);
      if (opts.serve)
        await serveUntilStopped(store, { port: opts.port, host: opts.host, path: `#/runs/${run.id}` });
    }),
  );
}
