/**
 * `simrec diff` of two runs of 1 M actor-states each (#50): the benchmark's traffic recorded twice
 * with one seed (the same runs: every sample of both read and compared) and once with another (they
 * differ from the start: every field of every actor diverges), each diff in a process of its own,
 * timed, with its peak memory. The peer is reading both runs' columns through without comparing:
 * what the comparison adds to the reads it cannot avoid.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TrafficGenerator, type BenchSize } from './generator.js';
import { simrecPeer } from './peers/simrec.js';

const run = promisify(execFile);

export interface DiffSpeed {
  actorStatesPerRun: number;
  same: DiffMeasure;
  differ: DiffMeasure;
  /** Both runs' columns read through, without comparing (the floor). */
  readOnly: DiffMeasure;
}

export interface DiffMeasure {
  seconds: number;
  peakRssMiB: number;
}

/**
 * A child process that runs `work` (a module's text) and prints its time and peak RSS. The module is a
 * file, not `--input-type=module -e`: worker threads inherit that flag and refuse to start with it (the
 * store's writer thread, in a child that writes).
 */
export async function measureChild(repoRoot: string, body: string): Promise<DiffMeasure> {
  const script =
    `${body}\nconst start = performance.now();\nawait work();\n` +
    `process.stdout.write(JSON.stringify({ seconds: (performance.now() - start) / 1000, peakRssMiB: process.resourceUsage().maxRSS / 1024 }));`;
  const dir = mkdtempSync(join(tmpdir(), 'simrec-bench-child-'));
  try {
    const file = join(dir, 'child.mjs');
    writeFileSync(file, script);
    const { stdout } = await run(process.execPath, [file], { cwd: repoRoot, maxBuffer: 1 << 26 });
    const m = JSON.parse(stdout) as DiffMeasure;
    return { seconds: Math.round(m.seconds * 100) / 100, peakRssMiB: Math.round(m.peakRssMiB) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function measureDiff(scratch: string, quick: boolean, repoRoot: string): Promise<DiffSpeed> {
  const size: BenchSize = quick
    ? { actors: 20, steps: 500, hz: 100 }
    : { actors: 100, steps: 10_000, hz: 100 };
  const dir = join(scratch, 'diff');
  mkdirSync(dir, { recursive: true });
  for (const seed of [1, 1, 2])
    await simrecPeer.record({ dir, frames: new TrafficGenerator(size, seed), commitEverySteps: 100 });
  const store = JSON.stringify(join(dir, 'bench.simrec.db'));
  const dist = JSON.stringify(join(repoRoot, 'dist', 'src'));
  const open = `const { openStore } = await import(${dist} + '/store/open-store.js');\nconst store = await openStore(${store});`;
  const diffBody = (b: number): string =>
    `${open}\nconst { diffRuns } = await import(${dist} + '/compare/run-diff.js');\n` +
    `async function work() { const d = await diffRuns(store, 1, ${b}); if (d.same !== (${b} === 2)) throw new Error('bench diff: unexpected answer'); }`;
  const readBody =
    `${open}\nasync function work() {\n` +
    `  for (const run of [1, 2]) for (const s of await store.listStreams(run))\n` +
    `    for await (const b of store.readColumns({ run, stream: s.id, transient: true })) void b;\n}`;
  return {
    actorStatesPerRun: size.actors * size.steps,
    same: await measureChild(repoRoot, diffBody(2)),
    differ: await measureChild(repoRoot, diffBody(3)),
    readOnly: await measureChild(repoRoot, readBody),
  };
}

export const formatDiff = (d: DiffSpeed): string =>
  `diff of two runs of ${(d.actorStatesPerRun / 1e6).toFixed(2)} M actor-states: the same ${d.same.seconds} s at ${d.same.peakRssMiB} MiB peak, ` +
  `differing everywhere ${d.differ.seconds} s at ${d.differ.peakRssMiB} MiB; reading both through alone ${d.readOnly.seconds} s at ${d.readOnly.peakRssMiB} MiB ` +
  `(the same: ${(d.same.seconds / d.readOnly.seconds).toFixed(2)}x the reads)`;
