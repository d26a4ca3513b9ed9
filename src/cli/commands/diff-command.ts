import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { invalid } from '../../model/errors.js';
import {
  applyThresholds,
  junitXml,
  parseThresholds,
  type GateResult,
  type Thresholds,
} from '../../compare/diff-gate.js';
import type { RunDiff } from '../../compare/diff-types.js';
import { diffRuns, type DiffOptions } from '../../compare/run-diff.js';
import { parseRunId, parseSeconds } from '../args.js';
import { describeFailure, EXIT_INTERRUPTED } from '../failure.js';
import { abortOnInterrupt } from '../output-target.js';
import { printJson, printTable } from '../output.js';
import { withExistingStore } from '../with-store.js';

/**
 * `simrec diff A B`: two runs compared (compare/run-diff.ts). Exit 0 when they are the same, 1 when
 * they differ, 2 on an error, as diff(1) does; with --thresholds, 0 when the thresholds pass and 1
 * when one fails.
 */

interface DiffCommandOptions {
  actors?: string[];
  streams?: string[];
  fields?: string[];
  from?: number;
  to?: number;
  tolerance?: Record<string, number>;
  eventSeconds?: number;
  thresholds?: string;
  junit?: string;
  json?: boolean;
}

const list = (v: string): string[] => v.split(',').filter((x) => x !== '');

/** `x=0.01,state.speed=0.05,*=1e-9`, or a bare number for every field. */
function parseTolerances(value: string, previous: Record<string, number> = {}): Record<string, number> {
  const out = { ...previous };
  for (const part of list(value)) {
    const [name, number] = part.includes('=') ? part.split('=', 2) : ['*', part];
    const n = Number(number);
    if (!name || number === undefined || number.trim() === '' || !Number.isFinite(n) || n < 0)
      throw invalid(
        `--tolerance: ${JSON.stringify(part)}: expected FIELD=NUMBER (0 or more), or a number for every field`,
      );
    out[name] = n;
  }
  return out;
}

export function registerDiffCommand(program: Command): void {
  program
    .command('diff')
    .description(
      'compare two runs: where they part first, by how much, what is in one only (exit 0 same, 1 differ, 2 error)',
    )
    .argument('<a>', 'run A (the reference)', parseRunId)
    .argument('<b>', 'run B', parseRunId)
    .option('--actors <ids>', 'only these actors, comma-separated', list)
    .option(
      '--streams <names>',
      'only these streams: names (state, control) or ids (ego/state), comma-separated',
      list,
    )
    .option('--fields <names>', 'only these fields, comma-separated', list)
    .option('--from <s>', 'from this many seconds after each run start', (v) => parseSeconds('--from', v))
    .option('--to <s>', 'to this many seconds after each run start', (v) => parseSeconds('--to', v))
    .option(
      '--tolerance <list>',
      'largest difference still the same, per field: x=0.01,state.speed=0.05,*=1e-9 (default: bit for bit)',
      parseTolerances,
    )
    .option(
      '--event-seconds <s>',
      'events of one kind and actors this close in time are the same (default 0.5)',
      (v) => parseSeconds('--event-seconds', v),
    )
    .option(
      '--thresholds <file>',
      'a JSON file of tolerances, metric changes and new events allowed: pass or fail',
    )
    .option(
      '--junit <file>',
      'write a JUnit XML report (each field, metric, event kind and presence a test case)',
    )
    .option('--json', 'print JSON')
    .action(async (a: number, b: number, opts: DiffCommandOptions, command: Command) => {
      // diff(1)'s codes: 1 means "they differ", so every error is 2, a store's failure included.
      try {
        await runDiff(a, b, opts, command);
      } catch (error) {
        const failure = describeFailure(error);
        if (failure.exitCode === EXIT_INTERRUPTED) throw error;
        if (failure.message !== null) process.stderr.write(`simrec: ${failure.message}\n`);
        process.exitCode = 2;
      }
    });
}

async function runDiff(a: number, b: number, opts: DiffCommandOptions, command: Command): Promise<void> {
  const thresholds: Thresholds | undefined = opts.thresholds
    ? parseThresholds(readThresholds(opts.thresholds), opts.thresholds)
    : undefined;
  const options: DiffOptions = {};
  if (opts.actors) options.actors = opts.actors;
  if (opts.streams) options.streams = opts.streams;
  if (opts.fields) options.fields = opts.fields;
  if (opts.from !== undefined) options.from = opts.from;
  if (opts.to !== undefined) options.to = opts.to;
  if (opts.eventSeconds !== undefined) options.eventSeconds = opts.eventSeconds;
  const tolerances = { ...thresholds?.tolerance, ...opts.tolerance };
  if (Object.keys(tolerances).length) options.tolerances = tolerances;
  const diff = await withExistingStore(command, (store) =>
    abortOnInterrupt('the comparison was stopped', (signal) => diffRuns(store, a, b, { ...options, signal })),
  );
  const gate = thresholds || opts.junit ? applyThresholds(diff, thresholds ?? {}) : undefined;
  if (opts.junit) writeFileSync(opts.junit, junitXml(diff, gate!));
  if (opts.json) printJson(gate ? { ...diff, gate } : diff);
  else printDiff(diff, thresholds ? gate : undefined);
  process.exitCode = thresholds ? (gate!.passed ? 0 : 1) : diff.same ? 0 : 1;
}

function readThresholds(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw invalid(
      `--thresholds ${file}: cannot read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
}

const seconds = (s: number): string => s.toFixed(3);
const value = (v: unknown): string =>
  v === null || v === undefined
    ? '-'
    : typeof v === 'number'
      ? String(Number(v.toPrecision(7)))
      : JSON.stringify(v);
const interval = (iv: { from: number; to: number | null }): string =>
  `${seconds(iv.from / 1e6)}-${iv.to === null ? 'end' : seconds(iv.to / 1e6)} s`;

function printDiff(diff: RunDiff, gate: GateResult | undefined): void {
  const A = diff.a.id;
  const B = diff.b.id;
  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  out(
    `runs ${A} and ${B} ${diff.same ? 'are the same' : 'differ'} (samples matched by time from each run's start; ${diff.streams.compared} streams compared)`,
  );
  const first = diff.firstDivergence;
  if (first)
    out(
      `first divergence: ${seconds(first.offset)} s from the start, ${first.actor ?? 'the run'}, ${first.stream} ${first.field}: ${value(first.a)} in run ${A}, ${value(first.b)} in run ${B}${first.difference !== null ? ` (by ${value(first.difference)})` : ''}`,
    );
  const byActor = Object.values(diff.firstByActor);
  if (byActor.length > 1) {
    out('\nfirst divergence per actor:');
    printTable(
      ['ACTOR', 'AT_S', 'STREAM', 'FIELD', `RUN_${A}`, `RUN_${B}`],
      byActor.map((d) => [d.actor, seconds(d.offset), d.stream, d.field, value(d.a), value(d.b)]),
    );
  }
  if (diff.largest.length) {
    out('\nlargest difference per field:');
    printTable(
      ['FIELD', 'DIFFERENCE', 'AT_S', 'ACTOR', `RUN_${A}`, `RUN_${B}`],
      diff.largest.map((l) => [
        `${l.stream}.${l.field}`,
        value(l.difference),
        seconds(l.offset),
        l.actor ?? '-',
        value(l.a),
        value(l.b),
      ]),
    );
  }
  if (diff.streams.samples.length) {
    out('\nsamples at times the other run has none:');
    printTable(
      ['STREAM', `ONLY_IN_${A}`, `ONLY_IN_${B}`],
      diff.streams.samples.map((s) => [s.stream, s.onlyA, s.onlyB]),
    );
  }
  const only = (what: string, ids: string[], run: number): void => {
    if (ids.length)
      out(
        `${what} only in run ${run}: ${ids.slice(0, 20).join(', ')}${ids.length > 20 ? ` and ${ids.length - 20} more` : ''}`,
      );
  };
  only('\nactors', diff.actors.onlyA, A);
  only('actors', diff.actors.onlyB, B);
  only('streams', diff.streams.onlyA, A);
  only('streams', diff.streams.onlyB, B);
  for (const f of diff.streams.fieldsOnly) {
    only(`${f.stream} fields`, f.onlyA, A);
    only(`${f.stream} fields`, f.onlyB, B);
  }
  for (const p of diff.actors.presence)
    out(
      `${p.actor} present ${p.a.map(interval).join(', ') || 'never'} in run ${A}, ${p.b.map(interval).join(', ') || 'never'} in run ${B}`,
    );
  for (const [events, run] of [
    [diff.events.onlyA, A],
    [diff.events.onlyB, B],
  ] as const)
    if (events.length) {
      out(`\nevents only in run ${run}:`);
      printTable(
        ['KIND', 'AT_S', 'ACTORS', 'DETAIL'],
        events.map((e) => [e.kind, seconds(e.offset), e.actors.join(', '), e.detail]),
      );
    }
  if (diff.scores) {
    out('\nevaluation:');
    printTable(
      ['METRIC', `RUN_${A}`, `RUN_${B}`, 'CHANGE'],
      diff.scores.map((r) => [r.metric, value(r.a), value(r.b), value(r.delta)]),
    );
  }
  if (gate) {
    const failed = gate.checks.filter((c) => !c.passed);
    out(
      `\nthresholds: ${gate.passed ? 'PASS' : 'FAIL'} (${gate.checks.length - failed.length} of ${gate.checks.length} checks pass)`,
    );
    for (const c of failed) out(`  ${c.group} ${c.name}: ${c.detail}`);
  }
  out(`\nin the viewer (simrec serve): ${diff.viewerPath}`);
}
