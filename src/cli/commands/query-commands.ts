import { Option, type Command } from 'commander';
import { describeRun, requireRun, sceneAt, streamSamples, trajectory } from '../../replay/run-queries.js';
import { secondsToMicros } from '../../model/units.js';
import { parseRunId, parseSeconds } from '../args.js';
import { formatNumber, formatSeconds, formatTime, printJson, printTable } from '../output.js';
import { withExistingStore } from '../with-store.js';
import { parseFieldNames, type Sample } from '../../model/stream.js';
import type { PresenceInterval } from '../../model/run.js';
import type { RunInfo } from '../../model/run.js';
import { invalid } from '../../model/errors.js';
import { CRITERIA_STREAM } from '../../model/standard-streams.js';

/** `simrec info` lists this many attachments; a dataset's thousands of camera frames go to --json. */
const INFO_ATTACHMENT_ROWS = 20;
/**
 * ... and shows this much of a run's metadata and of each actor's attributes: a SUMO run's routes made
 * `info` print 745 KB (issue #28). --json has them whole.
 */
const INFO_VALUE_CHARS = 80;

interface JsonOption {
  json?: boolean;
}

/** `ls`, `info`, `scene`, `traj`, `samples`: what is stored, and what happened when. */
export function registerQueryCommands(program: Command): void {
  program
    .command('ls')
    .description('list the runs in the store')
    .option('--json', 'print JSON')
    .action(async (opts: JsonOption, command: Command) =>
      withExistingStore(command, async (store) => {
        const runs = await store.listRuns();
        if (opts.json) return printJson(runs);
        printTable(
          ['ID', 'BEGIN', 'DURATION_S', 'END_REASON', 'SIMULATOR', 'ACTORS', 'SAMPLES', 'DESCRIPTION'],
          runs.map((r) => [
            r.id,
            formatTime(r.begin),
            r.end === null ? 'recording' : formatSeconds(r.end - r.begin),
            r.endReason,
            r.simulator.version ? `${r.simulator.name} ${r.simulator.version}` : r.simulator.name,
            r.actorCount,
            r.samples,
            r.description,
          ]),
        );
      }),
    );

  program
    .command('info')
    .description('describe a run: actors, streams and their schemas, time range, counts')
    .argument('<run>', 'run id', parseRunId)
    .option('--json', 'print JSON')
    .action(async (run: number, opts: JsonOption, command: Command) =>
      withExistingStore(command, async (store) => {
        const d = await describeRun(store, run);
        const shortened = { count: 0 };
        const shorten = (text: string): string => {
          if (text.length <= INFO_VALUE_CHARS) return text;
          shortened.count++;
          return `${text.slice(0, INFO_VALUE_CHARS - 3)}...`;
        };
        if (opts.json)
          // The shape of GET /api/runs/:id (docs/command-line.md: "JSON shapes"): the run under `run`, its
          // parts beside it.
          return printJson({
            run: d.run,
            timeRange: d.timeRange,
            samples: d.samples,
            actors: d.actors,
            streams: d.streams,
            attachments: d.attachments,
          });
        const r = d.run;
        process.stdout.write(
          [
            `run ${r.id}: ${r.description || '(no description)'}`,
            `simulator: ${r.simulator.name}${r.simulator.version ? ` ${r.simulator.version}` : ''}`,
            `begin: ${formatTime(r.begin)}   end: ${formatTime(r.end)}   end reason: ${r.endReason ?? 'recording'}`,
            `samples: ${d.samples}   metadata: ${shorten(JSON.stringify(r.metadata))}`,
            '',
          ].join('\n'),
        );
        printTable(
          ['ACTOR', 'KIND', 'CLASS', 'LENGTH', 'WIDTH', 'HEIGHT', 'RECORD', 'PRESENT_S', 'ATTRIBUTES'],
          d.actors.map((a) => [
            a.id,
            a.kind,
            a.sourceClass,
            a.extents?.length,
            a.extents?.width,
            a.extents?.height,
            a.record,
            formatPresence(a.presence, r.begin),
            shorten(JSON.stringify(a.attributes)),
          ]),
        );
        if (shortened.count)
          process.stdout.write(
            `(${shortened.count} values shortened to ${INFO_VALUE_CHARS} characters; --json has them whole)\n`,
          );
        process.stdout.write('\n');
        printTable(
          ['STREAM', 'ACTOR', 'SAMPLES', 'BEGIN_S', 'END_S', 'FIELDS'],
          d.streams.map((s) => [
            s.id,
            s.actor,
            s.samples,
            s.begin === null ? null : formatSeconds(s.begin - r.begin),
            s.end === null ? null : formatSeconds(s.end - r.begin),
            [
              ...s.fields.map((f) => `${f.name}:${f.type}${f.unit ? `[${f.unit}]` : ''}`),
              ...s.extraFields.map((f) => `${f.name}:${f.type}?`),
            ].join(' '),
          ]),
        );
        if (d.attachments.length) {
          process.stdout.write('\n');
          printTable(
            ['ATTACHMENT', 'MEDIA_TYPE', 'BYTES', 'AT_S', 'METADATA'],
            d.attachments
              .slice(0, INFO_ATTACHMENT_ROWS)
              .map((a) => [
                a.name,
                a.mediaType,
                a.size,
                a.t === undefined ? null : formatSeconds(a.t - r.begin),
                a.metadata ? JSON.stringify(a.metadata) : null,
              ]),
          );
          const more = d.attachments.length - INFO_ATTACHMENT_ROWS;
          if (more > 0) process.stdout.write(`... and ${more} more attachments (--json lists them all)\n`);
        }
        // A scenario's criteria (ScenarioRunner's, imported with a CARLA recording): how the run was judged.
        if (d.streams.some((st) => st.id === CRITERIA_STREAM && st.samples > 0)) {
          const criteria: Sample[] = [];
          for await (const batch of streamSamples(store, run, CRITERIA_STREAM)) criteria.push(...batch);
          process.stdout.write('\n');
          printTable(
            ['CRITERION', 'STATUS', 'ACTUAL', 'EXPECTED', 'ACCEPTABLE', 'OPTIONAL'],
            criteria.map((c) => [c.name, c.status, c.actual, c.expected, c.acceptable, c.optional]),
          );
        }
      }),
    );

  program
    .command('scene')
    .description("every actor's state at a time")
    .argument('<run>', 'run id', parseRunId)
    .requiredOption('--at <seconds>', "time in seconds from the run's start", (v) => parseSeconds('--at', v))
    .option('--interpolate', 'interpolate between the samples either side of the time')
    .option(
      '--departed',
      'list actors that have gone too, with their last state, marked (departed: left or stale)',
    )
    .option('--json', 'print JSON')
    .action(
      async (
        run: number,
        opts: JsonOption & { at: number; interpolate?: boolean; departed?: boolean },
        command: Command,
      ) =>
        withExistingStore(command, async (store) => {
          const info = await requireRun(store, run);
          requireWithinRun('--at', opts.at, info);
          const scene = await sceneAt(store, run, {
            t: info.begin + secondsToMicros(opts.at),
            interpolate: Boolean(opts.interpolate),
            includeDeparted: Boolean(opts.departed),
          });
          if (opts.json) return printJson(scene);
          printSamplesTable(
            scene.actors.map((a) => ({ ...a, step: 0 })),
            opts.departed ? ['id', 'kind', 'departed'] : ['id', 'kind'],
            info.begin,
          );
        }),
    );

  program
    .command('traj')
    .description("an actor's trajectory over a time window")
    .argument('<run>', 'run id', parseRunId)
    .argument('<actor>', 'actor id')
    .addOption(windowOption('from'))
    .addOption(windowOption('to'))
    .option('--json', 'print JSON')
    .action(
      async (
        run: number,
        actor: string,
        opts: JsonOption & { from?: number; to?: number },
        command: Command,
      ) =>
        withExistingStore(command, async (store) => {
          const info = await requireRun(store, run);
          requireWindowWithinRun(opts, info);
          const traj = await trajectory(store, run, { actor, ...absoluteWindow(info.begin, opts) });
          if (opts.json) return printJson(traj);
          printSamplesTable(traj.samples, [], info.begin);
        }),
    );

  program
    .command('samples')
    .description("any stream's samples over a time window (JSON: one sample per line)")
    .argument('<run>', 'run id', parseRunId)
    .argument('<stream>', 'stream id, e.g. ego/control (see simrec info)')
    .addOption(windowOption('from'))
    .addOption(windowOption('to'))
    .option('--fields <names>', 'only these fields, comma-separated (t and step always)', (v) =>
      parseFieldNames('--fields', v),
    )
    .option('--json', 'print JSON lines')
    .action(
      async (
        run: number,
        stream: string,
        opts: JsonOption & { from?: number; to?: number; fields?: string[] },
        command: Command,
      ) =>
        withExistingStore(command, async (store) => {
          const info = await requireRun(store, run);
          requireWindowWithinRun(opts, info);
          const all: Sample[] = [];
          const window = {
            ...absoluteWindow(info.begin, opts),
            ...(opts.fields ? { fields: opts.fields } : {}),
          };
          for await (const batch of streamSamples(store, run, stream, window)) {
            if (opts.json) process.stdout.write(batch.map((s) => JSON.stringify(s)).join('\n') + '\n');
            else all.push(...batch);
          }
          if (!opts.json) printSamplesTable(all, [], info.begin);
        }),
    );
}

/** `--from` / `--to`: a time window in seconds from the run's start. */
function windowOption(bound: 'from' | 'to'): Option {
  return new Option(
    `--${bound} <seconds>`,
    `window ${bound === 'from' ? 'start' : 'end'}, seconds from the run's start`,
  ).argParser((v) => parseSeconds(`--${bound}`, v));
}

/*
 * A time outside the run, or a window that ends before it starts, would give an empty table that
 * looks like "nothing happened"; the command line's rule (docs/command-line.md): an empty result means there
 * was nothing there, never that the question could not be answered. So such a question is refused (exit 2).
 */
export function requireWithinRun(name: string, seconds: number, run: RunInfo): void {
  // A run still recording has no end yet: any time from its start may still come.
  const duration = run.end === null ? Infinity : (run.end - run.begin) / 1e6;
  if (seconds < 0 || seconds > duration)
    throw invalid(
      `${name}: ${seconds} s is outside run ${run.id}; expected 0 to ${duration} s (its duration)`,
    );
}

function requireWindowWithinRun(opts: { from?: number; to?: number }, run: RunInfo): void {
  if (opts.from !== undefined) requireWithinRun('--from', opts.from, run);
  if (opts.to !== undefined) requireWithinRun('--to', opts.to, run);
  if (opts.from !== undefined && opts.to !== undefined && opts.from > opts.to)
    throw invalid(`--from ${opts.from} is after --to ${opts.to}; expected --from <= --to`);
}

/** The window in absolute microseconds, with only the bounds that were given. */
function absoluteWindow(
  runBegin: number,
  opts: { from?: number; to?: number },
): { from?: number; to?: number } {
  const window: { from?: number; to?: number } = {};
  if (opts.from !== undefined) window.from = runBegin + secondsToMicros(opts.from);
  if (opts.to !== undefined) window.to = runBegin + secondsToMicros(opts.to);
  return window;
}

/** A table of samples: time in seconds from the run's start, then every field that appears. */
function printSamplesTable(samples: Record<string, unknown>[], leading: string[], runBegin: number): void {
  const keys: string[] = [];
  for (const s of samples)
    for (const k of Object.keys(s))
      if (!keys.includes(k) && !leading.includes(k) && k !== 't' && k !== 'step') keys.push(k);
  printTable(
    [...leading.map((k) => k.toUpperCase()), 'T_S', ...keys.map((k) => k.toUpperCase())],
    samples.map((s) => [
      ...leading.map((k) => s[k]),
      formatSeconds((s.t as number) - runBegin),
      ...keys.map((k) => (s[k] === undefined ? '-' : formatNumber(s[k]))),
    ]),
  );
}

/** An actor's presence as `0-10.5 20-` (seconds from the run's start; an open end has no number). */
function formatPresence(presence: PresenceInterval[] | undefined, runBegin: number): string {
  if (presence === undefined) return '-';
  return presence
    .map(
      (iv) => `${formatSeconds(iv.from - runBegin)}-${iv.to === null ? '' : formatSeconds(iv.to - runBegin)}`,
    )
    .join(' ');
}
