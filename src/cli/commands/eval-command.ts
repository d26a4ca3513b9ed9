import { Option, type Command } from 'commander';
import type { EvaluationSummary } from '../../evaluate/evaluate-run.js';
import { EVALUATION_FIELDS } from '../../evaluate/evaluation-storage.js';
import { invalid } from '../../model/errors.js';
import type { RunInfo } from '../../model/run.js';
import { parsePositive, parseRunId } from '../args.js';
import { formatNumber, printJson, printTable, Progress } from '../output.js';
import { withExistingStore } from '../with-store.js';
import { exitInterrupted, takeInterrupts } from '../interrupt.js';
import { writeTablesAfter } from './tables-command.js';

interface EvalOptions {
  actor?: string;
  mode: 'simrec' | 'limsim';
  compare?: boolean;
  json?: boolean;
  nearMiss: number;
  blocked: number;
}

/** Each metric's unit, as the evaluation stream declares it; `1` (a ratio, LimSim's orientation) said in words. */
const METRIC_UNITS = new Map(
  EVALUATION_FIELDS.map((f) => [f.name, f.unit === '1' ? 'unitless' : (f.unit ?? 'unitless')]),
);

function printSummary(s: EvaluationSummary, runBegin: number): void {
  process.stdout.write(
    `run ${s.run}, actor ${s.actor}, ${s.frames} frames, mode ${s.mode}${s.gaps ? `, ${s.gaps} time gaps` : ''}\n\n`,
  );
  // The metrics are in different units: each row says its own, which MIN to MAX are in.
  printTable(
    ['METRIC', 'UNIT', 'MIN', 'MEAN', 'P50', 'P95', 'MAX', 'LIMSIM_SCORE'],
    Object.entries(s.metrics).map(([name, m]) => [
      name,
      METRIC_UNITS.get(name) ?? '-',
      ...[m.min, m.mean, m.p50, m.p95, m.max, s.limsimScores[name as keyof typeof s.limsimScores]].map((v) =>
        v === undefined ? '-' : formatNumber(v),
      ),
    ]),
  );
  process.stdout.write(
    "LIMSIM_SCORE: LimSim's display score of the metric's frames, 1 (best) to 4 (worst)\n",
  );
  process.stdout.write(
    `\nevents: ${
      s.events.length
        ? Object.entries(s.eventCounts)
            .map(([k, n]) => `${k} ${n}`)
            .join(', ')
        : 'none'
    }\n`,
  );
  if (s.events.length)
    printTable(
      ['T_S', 'KIND', 'DURATION_S', 'ACTORS', 'X_M', 'Y_M', 'DETAIL'],
      s.events
        .slice(0, 50)
        .map((e) => [
          formatNumber((e.t - runBegin) / 1e6),
          e.kind,
          formatNumber(e.duration),
          e.actors.join(','),
          formatNumber(e.x),
          formatNumber(e.y),
          e.detail,
        ]),
    );
  if (s.events.length > 50)
    process.stdout.write(`... and ${s.events.length - 50} more (--json lists them all)\n`);
  for (const note of s.skipped) process.stdout.write(`skipped: ${note}\n`);
  process.stdout.write(
    `\nscore: ${s.score} / 100 (weights: ${Object.entries(s.weights)
      .map(([k, w]) => `${k} ${w}`)
      .join(', ')}; halved on a collision)\n`,
  );
  if (s.streams.length) process.stdout.write(`stored as streams: ${s.streams.join(', ')}\n`);
}

export function registerEvalCommand(program: Command): void {
  program
    .command('eval')
    .description(
      "score a run: LimSim's five metrics, events and an overall score (stored as streams of the run)",
    )
    .argument('<runs...>', 'run id (several with --compare)')
    .option('--actor <id>', 'the actor to score (default: the ego)')
    .addOption(
      new Option('--mode <mode>', "simrec (with two documented fixes) or limsim (LimSim's own numbers)")
        .choices(['simrec', 'limsim'])
        .default('simrec'),
    )
    .option('--compare', 'evaluate several runs and print one row per run')
    .option(
      '--near-miss <seconds>',
      'time to collision below which a near miss is reported',
      (v) => parsePositive('--near-miss', v),
      1.5,
    )
    .option(
      '--blocked <seconds>',
      'standing still this long, not at a red light, is a blocked actor',
      (v) => parsePositive('--blocked', v),
      5,
    )
    .option('--json', 'print JSON')
    .action(async (runArgs: string[], opts: EvalOptions, command: Command) =>
      withExistingStore(command, async (store) => {
        const runs = runArgs.map(parseRunId);
        const { evaluateRun } = await import('../../evaluate/evaluate-run.js');
        if (runs.length > 1 && !opts.compare)
          throw invalid(`eval: ${runs.length} runs given; evaluate one, or several with --compare`);
        const results: EvaluationSummary[] = [];
        const stop = new AbortController();
        const release = takeInterrupts(() => stop.abort());
        try {
          for (const run of runs) {
            const progress = new Progress(`evaluating run ${run}`);
            const args: Parameters<typeof evaluateRun>[2] = {
              mode: opts.mode,
              nearMissTtc: opts.nearMiss,
              blockedSeconds: opts.blocked,
              onProgress: (f) => progress.update(f),
              signal: stop.signal,
            };
            if (opts.actor !== undefined) args.actor = opts.actor;
            try {
              results.push(await evaluateRun(store, run, args));
            } catch (error) {
              if (!stop.signal.aborted) throw error;
            }
            progress.done();
            if (stop.signal.aborted) break;
          }
        } finally {
          release();
        }
        if (stop.signal.aborted) {
          // An evaluation stores its streams only once it is whole: a run it was scoring is as it was.
          const done = results.map((r) => r.run);
          const rest = runs.filter((r) => !done.includes(r));
          if (done.length) await writeTablesAfter(command, store, done);
          return exitInterrupted(
            [
              done.length ? `run ${done.join(', ')} scored and stored` : '',
              rest.length
                ? `run ${rest.join(', ')} not scored: nothing of ${rest.length === 1 ? 'its' : 'their'} new evaluation stored, an earlier one kept`
                : '',
            ]
              .filter(Boolean)
              .join('; '),
          );
        }
        // The evaluation and events streams are new in these runs: their tables are written again.
        await writeTablesAfter(command, store, runs);
        // In JSON a run is always the run itself (docs/command-line.md: "JSON shapes"), here as in every
        // command.
        const runOf = new Map<number, RunInfo>();
        for (const r of results) runOf.set(r.run, (await store.getRun(r.run))!);
        if (opts.compare) {
          const rows = results.map((r) => ({
            run: runOf.get(r.run)!,
            actor: r.actor,
            frames: r.frames,
            score: r.score,
            minTtc: r.metrics.collision?.min ?? null,
            meanOffset: r.metrics.offset?.mean ?? null,
            // The 95th percentile of the signed jerk, as `eval --json` gives it in metrics.jerk.p95;
            // the extreme either way is its own field, named for what it is.
            p95Jerk: r.metrics.jerk?.p95 ?? null,
            maxAbsJerk: r.metrics.jerk
              ? Math.max(Math.abs(r.metrics.jerk.min), Math.abs(r.metrics.jerk.max))
              : null,
            collisions: r.eventCounts.collision ?? 0,
            nearMisses: r.eventCounts.near_miss ?? 0,
            events: r.events.length,
          }));
          if (opts.json) return printJson(rows);
          const tableRows = rows.map(({ run, ...rest }) => ({ run: run.id, ...rest }));
          printTable(
            [
              'RUN',
              'ACTOR',
              'FRAMES',
              'SCORE',
              'MIN_TTC_S',
              'MEAN_OFFSET_M2',
              'P95_JERK_M_S3',
              'MAX_ABS_JERK_M_S3',
              'COLLISIONS',
              'NEAR_MISSES',
              'EVENTS',
            ],
            tableRows.map((r) => Object.values(r).map((v) => (v === null ? '-' : formatNumber(v)))),
          );
          return;
        }
        const summary = results[0]!;
        const info = runOf.get(summary.run)!;
        if (opts.json) return printJson({ ...summary, run: info });
        printSummary(summary, info.begin);
      }),
    );
}
