/**
 * `npm run bench`: simrec against its peers on the same generated run, each workload in a child process,
 * medians of several repetitions, ratios printed. `--json` prints the results for machines, `--quick` is
 * a seconds-long smoke run at a small size, `--out DIR` puts the results file elsewhere than bench/results.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg, platform, release, arch, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import type { ChildJob, ChildReport, Workload } from './child.js';
import { FULL_SIZE, QUICK_SIZE } from './generator.js';
import { PEERS } from './peers/index.js';
import { summarize, formatReport, type Measurement } from './report.js';
import { formatViewer, measureViewer, type ViewerResults } from './viewer-playback.js';
import { formatBigRunViewer, measureBigRunViewer, type BigRunViewerResults } from './viewer-big-run.js';
import { formatSumoOverhead, measureSumoOverhead, type SumoOverhead } from './sumo-overhead.js';
import { formatFormats, measureFormats, type FormatResults } from './formats.js';
import { formatEvaluation, measureEvaluation, type EvaluationSpeed } from './evaluation.js';
import { formatDemo, measureDemo, type DemoSpeed } from './demo.js';
import { formatDidrive, measureDidrive, type DidriveRates } from './didrive.js';
import { formatIngest, measureIngest, type IngestSpeed } from './ingest.js';
import { evaluateTargets } from './targets.js';
import { formatParquet, measureParquet, type ParquetSpeed } from './parquet.js';
import { formatDiff, measureDiff, type DiffSpeed } from './diff.js';
import { formatFcd, measureFcd, type FcdSpeed } from './fcd.js';
import { FLEET_FULL, FLEET_QUICK, formatFleet, measureFleet, type FleetResults } from './fleet.js';

const HERE = dirname(fileURLToPath(import.meta.url));
/** Compiled to dist/bench/run.js: the repository is two levels up. */
const REPO_ROOT = resolve(HERE, '..', '..');
const CHILD = join(HERE, 'child.js');

/**
 * `base`.json in `dir`, or `base`-2.json, -3... when taken: a second run of the same sections on the
 * same day must not replace a results file the docs cite by name.
 */
function freshFile(dir: string, base: string): string {
  let name = `${base}.json`;
  for (let k = 2; existsSync(join(dir, name)); k++) name = `${base}-${k}.json`;
  return join(dir, name);
}

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    reps: { type: 'string' },
    out: { type: 'string' },
    actors: { type: 'string' },
    steps: { type: 'string' },
    only: { type: 'string' },
    // The fleet section's store: runs, and each run's actors and steps (FLEET_FULL by default).
    'fleet-runs': { type: 'string' },
    'fleet-actors': { type: 'string' },
    'fleet-steps': { type: 'string' },
  },
});

/** The bench's sections, each selectable with --only (a comma-separated list); all by default. */
const SECTIONS = [
  'record',
  'seek',
  'trajectory',
  'viewer',
  'big-run',
  'evaluation',
  'demo',
  'formats',
  'didrive',
  'ingest',
  'parquet',
  'fleet',
  'diff',
  'fcd',
  'sumo',
] as const;
type Section = (typeof SECTIONS)[number];
const only = new Set<string>(options.only ? options.only.split(',').map((s) => s.trim()) : SECTIONS);
for (const name of only)
  if (!(SECTIONS as readonly string[]).includes(name))
    throw new Error(`bench: --only ${JSON.stringify(name)} is not a section (known: ${SECTIONS.join(', ')})`);
const wants = (section: Section): boolean => only.has(section);

const quick = options.quick;
const config = {
  quick,
  size: {
    ...(quick ? QUICK_SIZE : FULL_SIZE),
    ...(options.actors ? { actors: Number(options.actors) } : {}),
    ...(options.steps ? { steps: Number(options.steps) } : {}),
  },
  reps: Number(options.reps ?? (quick ? 1 : 3)),
  seeks: quick ? 50 : 1000,
  trajectories: quick ? 2 : 3,
  commitEverySteps: 100,
};
if (!Number.isInteger(config.reps) || config.reps < 1)
  throw new Error(`bench: --reps must be a positive integer, got ${JSON.stringify(options.reps)}`);

const progress = (line: string): void => {
  if (process.stderr.isTTY) process.stderr.write(`${line}\n`);
};

const execFileAsync = promisify(execFile);
async function runChild(job: ChildJob): Promise<ChildReport> {
  try {
    const { stdout } = await execFileAsync(process.execPath, [CHILD, JSON.stringify(job)], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return JSON.parse(stdout) as ChildReport;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`bench: ${job.workload} on ${job.peer} failed: ${stderr || (error as Error).message}`, {
      cause: error,
    });
  }
}

const started = performance.now();
/** The machine may be shared: its load average (1, 5, 15 minutes) before and after says how much. */
const loadBefore = loadavg();
let viewer: ViewerResults = { skipped: 'not measured' };
let bigRun: BigRunViewerResults | null = null;
let sumo: SumoOverhead = { skipped: 'not measured' };
let formats: FormatResults | null = null;
let evaluation: EvaluationSpeed | null = null;
let demo: DemoSpeed | null = null;
let didrive: DidriveRates | null = null;
let ingest: IngestSpeed | null = null;
let parquet: ParquetSpeed | null = null;
let fleet: FleetResults | null = null;
let diff: DiffSpeed | null = null;
let fcd: FcdSpeed | null = null;
const scratch = mkdtempSync(join(tmpdir(), 'simrec-bench-'));
const measurements: Measurement[] = [];
const measure = async (workload: Workload, peer: string, rep: number, dir: string): Promise<void> => {
  progress(`${workload} ${peer} (repetition ${rep + 1} of ${config.reps})`);
  const { size, commitEverySteps, seeks, trajectories } = config;
  const report = await runChild({ workload, peer, dir, size, commitEverySteps, seeks, trajectories });
  measurements.push({ workload, peer, rep, ...report });
};

try {
  const reads = wants('seek') || wants('trajectory');
  if (wants('record') || reads)
    for (let rep = 0; rep < config.reps; rep++) await measure('generate', 'generator', rep, scratch);
  // Repetitions interleave peers, so a slow spell of the machine does not land on one peer only. The
  // read workloads read the first repetition's files, so they record one repetition even alone.
  for (let rep = 0; rep < (wants('record') ? config.reps : reads ? 1 : 0); rep++)
    for (const peer of PEERS) {
      const dir = join(scratch, `${peer.name}-${rep}`);
      mkdirSync(dir);
      await measure('record', peer.name, rep, dir);
      // The first repetition's files are what the read workloads read.
      if (rep > 0 || !peer.open) rmSync(dir, { recursive: true, force: true });
    }
  for (const workload of ['seek', 'trajectory'] as const)
    for (let rep = 0; rep < (wants(workload) ? config.reps : 0); rep++)
      for (const peer of PEERS) {
        if (!peer.open || (workload === 'seek' && !peer.seekable)) continue;
        await measure(workload, peer.name, rep, join(scratch, `${peer.name}-0`));
      }
  if (wants('viewer')) {
    progress('viewer playback in headless Chromium');
    viewer = await measureViewer(scratch, quick);
  }
  if (wants('big-run')) {
    progress(quick ? 'the viewer on a run of minutes' : 'the viewer on an hour of 300 vehicles');
    bigRun = await measureBigRunViewer(scratch, quick);
  }
  if (wants('evaluation')) {
    progress('evaluation speed');
    evaluation = await measureEvaluation(scratch, quick);
  }
  if (wants('demo')) {
    progress('demo traffic, recording off and on');
    demo = await measureDemo(scratch, quick);
  }
  if (wants('formats')) {
    progress('format rates');
    formats = await measureFormats(scratch, quick);
  }
  if (wants('didrive')) {
    progress('DI-drive rates');
    didrive = await measureDidrive(scratch, quick);
  }
  if (wants('ingest')) {
    progress('ingest over loopback');
    ingest = await measureIngest(scratch, quick);
  }
  if (wants('parquet')) {
    progress('Parquet export and a DuckDB aggregate');
    parquet = await measureParquet(scratch, quick);
  }
  if (wants('fleet')) {
    const size = quick ? FLEET_QUICK : FLEET_FULL;
    const count = (name: string, fallback: number): number => {
      const text = options[name as 'fleet-runs'];
      const n = text === undefined ? fallback : Number(text);
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`bench: --${name} must be a positive integer, got ${text}`);
      return n;
    };
    const fleetSize = {
      runs: count('fleet-runs', size.runs),
      actors: count('fleet-actors', size.actors),
      steps: count('fleet-steps', size.steps),
    };
    progress(`fleet: ${fleetSize.runs} runs of ${fleetSize.actors} actors x ${fleetSize.steps} steps`);
    fleet = await measureFleet(
      scratch,
      fleetSize,
      join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js'),
      REPO_ROOT,
    );
  }
  if (wants('diff')) {
    progress('simrec diff of two runs');
    diff = await measureDiff(scratch, quick, REPO_ROOT);
  }
  if (wants('fcd')) {
    progress("SUMO's FCD output imported");
    fcd = await measureFcd(scratch, quick, REPO_ROOT);
  }
  if (wants('sumo')) {
    progress('recording a real SUMO');
    sumo = await measureSumoOverhead(scratch, REPO_ROOT, quick);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const now = new Date();
const host = hostname();
const results = summarize(measurements, {
  date: now.toISOString(),
  command: `npm run bench --${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
  machine: {
    host,
    platform: `${platform()} ${release()} ${arch()}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryBytes: totalmem(),
    node: process.version,
    loadAverage: { before: loadBefore, after: loadavg() },
  },
  config,
  seconds: (performance.now() - started) / 1000,
});
const outDir = resolve(options.out ?? join(REPO_ROOT, 'bench', 'results'));
mkdirSync(outDir, { recursive: true });
// A run of some sections is named after them, so that it does not replace the day's full run (or a run
// of other sections) that docs/performance.md may cite.
const sectionsPart = options.only ? `-${[...only].join('-')}` : '';
const outFile = freshFile(
  outDir,
  `${now.toISOString().slice(0, 10)}-${host}${sectionsPart}${quick ? '-quick' : ''}`,
);
results.targets = evaluateTargets(results.workloads, results.ratios, { sumo, ingest, demo });
const withViewer = {
  ...results,
  viewer,
  bigRun,
  sumo,
  formats,
  evaluation,
  demo,
  didrive,
  ingest,
  parquet,
  fleet,
  diff,
  fcd,
};
writeFileSync(outFile, JSON.stringify(withViewer, null, 2) + '\n');
if (options.json) process.stdout.write(JSON.stringify(withViewer, null, 2) + '\n');
else
  process.stdout.write(
    formatReport(results) +
      `\n${formatViewer(viewer)}\n${bigRun ? formatBigRunViewer(bigRun) : ''}\n${formatSumoOverhead(sumo)}\n${formats ? formatFormats(formats) : ''}\n${evaluation ? formatEvaluation(evaluation) : ''}\n${demo ? formatDemo(demo) : ''}\n${didrive ? formatDidrive(didrive) : ''}\n${ingest ? formatIngest(ingest) : ''}\n${parquet ? formatParquet(parquet) : ''}\n${fleet ? formatFleet(fleet) : ''}\n${diff ? formatDiff(diff) : ''}\n${fcd ? formatFcd(fcd) : ''}\nresults: ${outFile}\n`,
  );
