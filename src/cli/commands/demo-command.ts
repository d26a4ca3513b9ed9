import type { Command } from 'commander';
import { recordDemoRun } from '../../demo/demo-run.js';
import { evaluateRun, type EvaluationSummary } from '../../evaluate/evaluate-run.js';
import { describeValue, invalid } from '../../model/errors.js';
import { parsePositive } from '../args.js';
import { printJson, Progress } from '../output.js';
import { tablesFolderOf, withStore } from '../with-store.js';
import { writeTablesAfter } from './tables-command.js';
import { serveOptions, serveUntilStopped, type ServeOptions } from './serve-command.js';
import { printWarnings } from '../warnings.js';

interface DemoOptions extends ServeOptions {
  serve: boolean;
  net?: string;
  routes?: string[];
  duration: number;
  rate: number;
  vehicles: number;
  seed: number;
  json?: boolean;
}

function parseCount(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw invalid(`${name}: expected a whole number >= 0, got ${describeValue(value)}`);
  return n;
}

/** The main job: record a demo run into the store, score it, then show it in the viewer. */
export function registerDemoCommand(program: Command): void {
  serveOptions(
    program
      .command('demo')
      .description(
        'record a demo traffic run into the store, score it as simrec eval does, then serve the viewer on it (Ctrl-C stops)',
      )
      .option('--no-serve', 'record only; do not start the viewer')
      .option('--net <file>', 'a SUMO .net.xml or OpenDRIVE road network (default: a generated town)')
      .option('--routes <files>', 'SUMO route files, comma-separated (default: generated traffic)', (v) =>
        v.split(',').filter((f) => f !== ''),
      )
      .option('--duration <seconds>', 'simulated seconds', (v) => parsePositive('--duration', v), 60)
      .option('--rate <hz>', 'samples per simulated second', (v) => parsePositive('--rate', v), 10)
      .option('--vehicles <n>', 'generated vehicles besides the ego', (v) => parseCount('--vehicles', v), 30)
      .option('--seed <n>', 'the same seed gives the same run', (v) => parseCount('--seed', v), 1)
      .option('--json', 'print the recorded run as JSON'),
  ).action(async (opts: DemoOptions, command: Command) => {
    // SUMO route files name edges of their own network; on the generated town every vehicle would be
    // skipped and the run would hold none.
    if (opts.routes && !opts.net)
      throw invalid('--routes: route files name the edges of a network; give that network with --net');
    return withStore(command, async (store) => {
      const progress = new Progress('recording demo');
      const result = await recordDemoRun(store, {
        ...(opts.net ? { net: opts.net } : {}),
        ...(opts.routes ? { routes: opts.routes } : {}),
        duration: opts.duration,
        rateHz: opts.rate,
        vehicles: opts.vehicles,
        seed: opts.seed,
        onProgress: (f) => progress.update(f),
      });
      progress.done();
      printWarnings(result.warnings);
      const { run } = result;
      // The first page shows the whole product: the run scored, with its events, as `simrec eval`
      // stores them. Route files may name no ego, and then there is nothing to score.
      let evaluation: EvaluationSummary | null = null;
      if ((await store.listActors(run.id)).some((a) => a.kind === 'ego')) {
        const scoring = new Progress('evaluating');
        evaluation = await evaluateRun(store, run.id, { onProgress: (f) => scoring.update(f) });
        scoring.done();
      }
      // Written once the evaluation's streams are in: the tables are the run as the viewer shows it.
      await writeTablesAfter(command, store, [run.id]);
      if (opts.json)
        printJson({
          run,
          vehicles: result.vehicles,
          pedestrians: result.pedestrians,
          trafficLights: result.trafficLights,
          evaluation: evaluation && {
            actor: evaluation.actor,
            score: evaluation.score,
            eventCounts: evaluation.eventCounts,
            streams: evaluation.streams,
          },
          warnings: result.warnings,
        });
      else
        process.stdout.write(
          `recorded run ${run.id} into ${store.location}: ${result.vehicles} vehicles, ${result.pedestrians} pedestrians, ${result.trafficLights} traffic lights; ${
            evaluation
              ? `scored ${evaluation.score} / 100 with ${evaluation.events.length} events (simrec eval ${run.id} shows them)`
              : 'not scored: no ego'
          }; try: simrec info ${run.id}\n`,
        );
      // Every serve option (token, ingest port, settings, allowed names) goes through as `serve` takes it.
      if (opts.serve)
        await serveUntilStopped(store, {
          ...opts,
          path: `#/runs/${run.id}`,
          tablesFolder: tablesFolderOf(command, store).path,
        });
    });
  });
}
