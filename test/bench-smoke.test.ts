/**
 * The benchmark must keep running as the code under it changes: its quick mode runs every workload on
 * every peer at a toy size and writes its results file. Only shape is checked here; speed is the bench's
 * business, never a unit test's.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import type { BenchResults } from '../bench/report.js';
import { REPO_ROOT, tempDir } from './helpers/paths.js';

/**
 * A bound on a run that hangs, not a measure of speed: the quick bench takes about a minute of CPU, and
 * several minutes of a shared two-core machine's wall clock.
 */
const HANGING_MS = 600_000;

it('npm run bench -- --quick runs every workload and writes a results file', () => {
  const out = tempDir('simrec-bench-smoke-');
  try {
    const run = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'dist', 'bench', 'run.js'), '--quick', '--json', '--out', out.path],
      { encoding: 'utf8', timeout: HANGING_MS },
    );
    assert.equal(run.status, 0, run.stderr);
    const files = readdirSync(out.path);
    assert.equal(files.length, 1, `one results file, got ${files.join(', ')}`);
    assert.match(files[0]!, /^\d{4}-\d{2}-\d{2}-.+-quick\.json$/);
    const results = JSON.parse(readFileSync(join(out.path, files[0]!), 'utf8')) as BenchResults;
    assert.deepEqual(JSON.parse(run.stdout), results);
    assert.ok(typeof results.machine.cpus === 'number' && typeof results.machine.node === 'string');
    for (const workload of ['record', 'seek', 'trajectory'] as const) {
      const simrec = results.workloads[workload].simrec;
      assert.ok(simrec && simrec.maxRssBytes > 0, `${workload}: simrec measured with its peak RSS`);
    }
    for (const peer of ['limsim-sqlite', 'mcap-per-state', 'mcap-per-frame', 'json-lines', 'raw-file'])
      assert.ok(results.ratios.record[peer]!.speedup > 0, `record ratio to ${peer}`);
    assert.ok(results.ratios.seek['limsim-sqlite']!.speedupMedian > 0);
    // A fresh process's first scene touches memory it never had: counted for every peer read back.
    // The slowest seek after the first too: a burst of decoding ahead falls outside a 99th percentile.
    // And, where Linux tells it, how much of the slowest scenes' time their thread waited for a core.
    const toldWaits = existsSync('/proc/thread-self/schedstat');
    for (const [peer, seek] of Object.entries(results.workloads.seek)) {
      assert.ok(seek.median.firstPageFaults! > 0, `${peer}: the first scene's page faults counted`);
      assert.ok(seek.median.slowestMs! >= seek.median.medianMs!, `${peer}: the slowest seek reported`);
      for (const repetition of seek.repetitions) {
        const share = repetition.slowWaitingShare;
        if (toldWaits)
          assert.ok(typeof share === 'number' && share >= 0 && share <= 1, `${peer}: waiting share ${share}`);
        else assert.equal(share, null, `${peer}: no waiting share where the machine does not tell`);
      }
    }
    assert.ok(results.ratios.trajectory['mcap-per-state']!.speedup > 0);
    // The recording engine's targets and live recording's (bench/targets.ts), each with a measured value.
    assert.deepEqual(
      results.targets.map((t) => t.id),
      [
        'record-vs-limsim',
        'record-vs-mcap',
        'size',
        'size-f32',
        'record-rss',
        'size-vs-mcap',
        'seek-first',
        'seek-median',
        'seek-p99',
        'trajectory',
        'sumo-vs-alone',
        'ingest-loopback',
        'demo',
        'ingest-server-peak',
      ],
    );
    assert.ok(
      results.targets.every((t) => !t.measured.startsWith('NaN')),
      JSON.stringify(results.targets),
    );
    const { demo } = results as BenchResults & { demo: { actorSteps: number; recordingOnToOff: number } };
    assert.ok(
      demo.actorSteps > 0 && demo.recordingOnToOff > 0,
      'demo actor-steps/s with recording on and off',
    );
    type Cost = { format: string; actorStates: number; seconds: number; peakRssMiB: number };
    const { formats } = results as unknown as { formats: { exportMemory: Cost[]; importMemory: Cost[] } };
    for (const [costs, what] of [
      [formats.exportMemory, 'exports'],
      [formats.importMemory, 'imports of the files exported'],
    ] as const) {
      assert.deepEqual(
        costs.map((e) => e.format),
        ['mcap', 'limsim', 'carla', 'osi', 'soda', 'mcap', 'limsim', 'carla', 'osi', 'soda'],
        `MCAP, LimSim, CARLA, OSI and SODA.Sim ${what} at two run lengths, each with its peak memory`,
      );
      assert.ok(costs.every((e) => e.actorStates > 0 && e.seconds > 0 && e.peakRssMiB > 0));
    }
    const { bigRun } = results as unknown as {
      bigRun: {
        opened: { ms: number; actors: number }[];
        seekP95Ms: number;
        play: { fps: number };
        serverPeakMiB: number;
        pageHeapPeakMiB: number;
        targets: { id: string }[];
        evaluation: { seconds: number; peakMiB: number; frames: number };
        diff: { seconds: number; peakMiB: number; streams: number };
        tablesWrite: { onThread: { seconds: number }; onWorker: { seconds: number } };
      };
    };
    assert.equal(bigRun.opened.length, 5, 'a fresh page at five moments');
    assert.ok(bigRun.opened.every((o) => o.ms > 0 && o.actors > 0));
    assert.ok(bigRun.seekP95Ms > 0 && bigRun.play.fps > 0 && bigRun.pageHeapPeakMiB > 0);
    assert.ok(bigRun.serverPeakMiB > 0, "the server's memory, measured in its own process");
    assert.equal(bigRun.targets.length, 5);
    assert.ok(
      bigRun.evaluation.frames > 0 && bigRun.evaluation.peakMiB > 0,
      'simrec eval on the big run, its time and peak memory',
    );
    assert.ok(
      bigRun.diff.streams > 0 && bigRun.diff.seconds > 0 && bigRun.diff.peakMiB > 0,
      'simrec diff of the two big runs, its time and peak memory',
    );
    assert.ok(
      bigRun.tablesWrite.onThread.seconds > 0 && bigRun.tablesWrite.onWorker.seconds > 0,
      "the big run's tables written on the thread and on a worker",
    );
    const didrive = (results as unknown as { didrive: { exportFramesPerSecond: number } }).didrive;
    assert.ok(didrive.exportFramesPerSecond > 0, 'DI-drive export and import rates are measured');
    const { ingest } = results as unknown as {
      ingest: { loopbackToInProcess: number; serverPeakMiB: number; serverBaselineMiB: number };
    };
    assert.ok(
      ingest.loopbackToInProcess > 0 && ingest.serverPeakMiB >= ingest.serverBaselineMiB,
      'ingest over loopback beside in-process, and the server memory under a flood',
    );
  } finally {
    out.cleanup();
  }
});

it('a run of some sections lists the targets it measured, not the others as missed', () => {
  const out = tempDir('simrec-bench-only-');
  try {
    const demoRun = (): ReturnType<typeof spawnSync> =>
      spawnSync(
        process.execPath,
        [
          join(REPO_ROOT, 'dist', 'bench', 'run.js'),
          '--quick',
          '--only',
          'demo',
          '--json',
          '--out',
          out.path,
        ],
        { encoding: 'utf8', timeout: HANGING_MS },
      );
    const run = demoRun();
    assert.equal(run.status, 0, String(run.stderr));
    const results = JSON.parse(String(run.stdout)) as BenchResults;
    assert.deepEqual(
      results.targets.map((t) => t.id),
      ['demo'],
    );
    // The same sections again the same day: a file of its own, the first one kept as it was.
    const [first] = readdirSync(out.path);
    const kept = readFileSync(join(out.path, first!), 'utf8');
    assert.equal(demoRun().status, 0);
    const files = readdirSync(out.path).sort();
    assert.deepEqual(files, [first!, first!.replace(/\.json$/, '-2.json')].sort());
    assert.equal(readFileSync(join(out.path, first!), 'utf8'), kept);
  } finally {
    out.cleanup();
  }
});
