import type { Command } from 'commander';
import type { DemoRunResult } from '../../demo/demo-run.js';
import type { EvaluationSummary } from '../../evaluate/evaluate-run.js';
import { describeValue, invalid } from '../../model/errors.js';
import { parsePositive } from '../args.js';
import { printJson, Progress } from '../output.js';
import { tablesFolderOf, withStore } from '../with-store.js';
import { writeTablesAfter } from './tables-command.js';
import { serveOptions, startServing, type ServeOptions } from './serve-command.js';
import { printWarnings } from '../warnings.js';
import { exitInterrupted, takeInterrupts } from '../interrupt.js';
import type { StoreBackend } from '../../model/store-port.js';

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

/**
 * Records the demo and scores it. An interrupt (`signal`) ends the recording with the steps it has
 * (then nothing is scored), or stops the scoring (the run is kept whole, unscored); the tables are
 * written only for a run recorded and scored whole.
 */
async function recordAndScore(
  command: Command,
  store: StoreBackend,
  opts: DemoOptions,
  signal: AbortSignal,
): Promise<{ result: DemoRunResult; evaluation: EvaluationSummary | null }> {
  const [{ recordDemoRun }, { evaluateRun }] = await Promise.all([
    import('../../demo/demo-run.js'),
    import('../../evaluate/evaluate-run.js'),
  ]);
  const progress = new Progress('recording demo');
  const result = await recordDemoRun(store, {
    ...(opts.net ? { net: opts.net } : {}),
    ...(opts.routes ? { routes: opts.routes } : {}),
    duration: opts.duration,
    rateHz: opts.rate,
    vehicles: opts.vehicles,
    seed: opts.seed,
    onProgress: (f) => progress.update(f),
    signal,
  });
  progress.done();
  printWarnings(result.warnings);
  const { run } = result;
  // The first page shows the whole product: the run scored, with its events, as `simrec eval`
  // stores them. Route files may name no ego, and then there is nothing to score.
  let evaluation: EvaluationSummary | null = null;
  if (!signal.aborted && (await store.listActors(run.id)).some((a) => a.kind === 'ego')) {
    const scoring = new Progress('evaluating');
    try {
      evaluation = await evaluateRun(store, run.id, { signal, onProgress: (f) => scoring.update(f) });
    } catch (error) {
      if (!signal.aborted) throw error;
    }
    scoring.done();
  }
  // Written once the evaluation's streams are in: the tables are the run as the viewer shows it.
  if (!signal.aborted) await writeTablesAfter(command, store, [run.id]);
  return { result, evaluation };
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
    const kept = await withStore(command, async (store): Promise<string | null> => {
      // Every serve option (token, ingest port, settings, allowed names) goes through as `serve` takes
      // it. The port is bound first: one someone else holds is said at once, not after a whole run.
      const serving = opts.serve
        ? await startServing(store, { ...opts, tablesFolder: tablesFolderOf(command, store).path })
        : null;
      try {
        const stop = new AbortController();
        const release = takeInterrupts(() => stop.abort());
        let recorded: { result: DemoRunResult; evaluation: EvaluationSummary | null };
        try {
          recorded = await recordAndScore(command, store, opts, stop.signal);
        } finally {
          release();
        }
        const { result, evaluation } = recorded;
        const { run } = result;
        if (stop.signal.aborted)
          return result.stopped
            ? `run ${run.id} is kept in ${store.location} with the ${result.simulated} s recorded of ${opts.duration} (ended user_request; not scored: simrec eval ${run.id} scores it)`
            : `run ${run.id} is kept whole in ${store.location}${evaluation ? `, scored ${evaluation.score} / 100` : ', not scored (simrec eval scores it)'}`;
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
        if (!serving) return null;
        serving.announce(`#/runs/${run.id}`);
        return await serving.untilStopped();
      } finally {
        await serving?.close();
      }
    });
    // Interrupted (or the viewer stopped with Ctrl-C): 130, and what was kept, once the store is closed.
    if (kept !== null) exitInterrupted(kept);
  });
}
