/**
 * Recording into a filesystem that fills up: a real tmpfs mounted by the test (it needs root, as CI
 * and these machines have; elsewhere the test says by name why it skipped).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { randomFillSync } from 'node:crypto';
import { SimrecError } from '../src/model/errors.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { Sample } from '../src/model/stream.js';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';
import { runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-full-');
const mountPoint = join(dir.path, 'small');
mkdirSync(mountPoint);
let mounted = false;
let skipReason: string | false = false;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint], { stdio: 'pipe' });
  mounted = true;
} catch (error) {
  skipReason = `cannot mount a 1 MB tmpfs here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()}); the disk-full test needs root`;
}
after(() => {
  if (mounted) execFileSync('umount', [mountPoint]);
  dir.cleanup();
});

describe('a disk that fills up while recording', () => {
  it(
    'stops with a clear error, keeps every acknowledged sample, and the run can be closed and read',
    { skip: skipReason },
    async () => {
      const path = join(mountPoint, 'store.db');
      const store = await openStore(path);
      const rec = await RunRecorder.begin(store, { begin: 1_000_000 });
      await rec.declareActor({ id: 'car', kind: 'vehicle' });
      await rec.declareStream(stateStream('car'));
      // Random bits do not compress: the disk fills after a few thousand samples.
      const noise = new Float64Array(4);
      let step = 0;
      const nextBatch = (): Sample[] =>
        Array.from({ length: 200 }, () => {
          randomFillSync(noise);
          const [x, y, yaw, speed] = noise.map((v) => (Number.isFinite(v) ? v : 0));
          return { t: 1_000_000 + step * 1000, step: step++, x: x!, y: y!, yaw: yaw!, speed: speed! };
        });
      let acknowledged = 0;
      let failure: unknown;
      for (let i = 0; i < 1000 && failure === undefined; i++) {
        const batch = nextBatch();
        try {
          await rec.appendBatch('car/state', batch);
          acknowledged += batch.length;
        } catch (error) {
          failure = error;
        }
      }
      assert.ok(failure instanceof SimrecError, `the disk filled and the append failed: ${String(failure)}`);
      assert.equal(failure.code, 'io');
      assert.match(failure.message, /store\.db: appending to run 1: database or disk is full/);
      assert.ok(acknowledged > 0);
      assert.throws(() => rec.append('car/state', nextBatch()[0]!), /recording stopped after a failed write/);
      // The user frees space; the run is closed with what was acknowledged, and says what was lost.
      execFileSync('mount', ['-o', 'remount,size=16m', mountPoint]);
      await assert.rejects(
        rec.end('inner_error'),
        /run 1 was closed \(inner_error\) with its acknowledged samples only; a write had failed/,
      );
      const run = await store.getRun(1);
      assert.equal(run!.endReason, 'inner_error');
      const stored: Sample[] = [];
      for await (const batch of streamSamples(store, 1, 'car/state')) stored.push(...batch);
      assert.equal(stored.length, acknowledged, 'exactly the acknowledged samples');
      assert.equal(run!.end, stored.at(-1)!.t, 'the run ends at its last acknowledged sample');
      assert.deepEqual((await store.checkIntegrity()).problems, []);
      await store.close();
    },
  );

  it(
    'on a full disk the store still opens and reads (ls, check), a run left by a dead writer stays open, and declaring is a clear error',
    { skip: skipReason },
    async () => {
      const path = join(mountPoint, 'full.db');
      execFileSync('mount', ['-o', 'remount,size=1m', mountPoint]);
      const store = await openStore(path);
      // A run whose writer is gone (a pid no process has): every open tries to close it, which writes.
      const dead = await RunRecorder.begin(
        store,
        { begin: 1_000_000 },
        { writer: { host: hostname(), pid: 4_194_000, processStart: 'x' } },
      );
      await dead.declareActor({ id: 'car', kind: 'vehicle' });
      await dead.declareStream(stateStream('car'));
      await dead.appendBatch('car/state', [{ t: 1_000_000, step: 0, x: 0, y: 0, yaw: 0 }]);
      // Fill what is left of the disk with a file of noise, as another program would.
      const filler = join(mountPoint, 'filler');
      try {
        execFileSync('dd', ['if=/dev/urandom', `of=${filler}`, 'bs=64k', 'count=64'], { stdio: 'pipe' });
      } catch {
        // dd stops when the disk is full: that is the point
      }
      await assert.rejects(
        dead.declareActor({ id: 'bus', kind: 'vehicle', attributes: { note: 'x'.repeat(300_000) } }),
        (e: unknown) =>
          e instanceof SimrecError &&
          e.code === 'io' &&
          /full\.db: declaring actors of run 1: database or disk is full/.test(e.message),
      );
      await store.close();
      const env = { SIMREC_STORE: path };
      const ls = runCli(['ls', '--json'], env);
      assert.equal(ls.status, 0, ls.stderr);
      assert.equal(
        (JSON.parse(ls.stdout) as { state: string }[])[0]!.state,
        'recording',
        'not closed: the disk is full',
      );
      const check = runCli(['check'], env);
      assert.equal(check.status, 0, check.stderr);
      execFileSync('rm', ['-f', filler]);
      execFileSync('mount', ['-o', 'remount,size=16m', mountPoint]);
      // Space again: the next open closes the dead writer's run, sealed, with its sample.
      const reopened = await openStore(path);
      assert.equal((await reopened.getRun(1))!.endReason, 'interrupted');
      await reopened.close();
    },
  );
});

describe('commands on a full disk', () => {
  /** A tmpfs of `size` of its own, mounted for `work` and gone after it. */
  async function onTinyDisk(size: string, work: (path: string) => Promise<void> | void): Promise<void> {
    const path = join(dir.path, `tiny-${size}`);
    mkdirSync(path, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', path]);
    try {
      await work(path);
    } finally {
      execFileSync('umount', [path]);
    }
  }

  /** One line on stderr, no stack trace, exit 1. */
  function oneLine(r: { status: number | null; stderr: string }, pattern: RegExp): string {
    assert.equal(r.status, 1, r.stderr);
    const lines = r.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, `one line: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\n\s+at |Error:|unexpected error/);
    assert.match(lines[0]!, pattern);
    return lines[0]!;
  }

  /**
   * The run a failed command began is gone, or (SQLite cannot delete on a full disk) its one line named
   * it and `simrec rm` removes it once there is space.
   */
  function nothingLeft(store: string, line: string, mountedAt: string): void {
    const left =
      /run (\d+) is left incomplete: removing it failed too \(.*: deleting run \d+: database or disk is full\); remove it with `simrec rm \1` once there is space$/.exec(
        line,
      );
    if (left) {
      execFileSync('mount', ['-o', 'remount,size=32m', mountedAt]);
      const rm = runCli(['rm', left[1]!], { SIMREC_STORE: store });
      assert.equal(rm.status, 0, rm.stderr);
    }
    const ls = runCli(['ls', '--json'], { SIMREC_STORE: store });
    assert.equal(ls.status, 0, ls.stderr);
    assert.deepEqual(JSON.parse(ls.stdout), [], 'no run left');
  }

  const source = join(dir.path, 'source.db');
  let sourceRun = 0;
  const sourceStore = async (): Promise<string> => {
    if (sourceRun) return source;
    const store = await openStore(source);
    sourceRun = (await recordDemoRun(store, { duration: 30 })).run.id;
    await store.close();
    return source;
  };

  it(
    'simrec demo ends in one line naming the store, not an uncaught error, and leaves no run',
    { skip: skipReason },
    () =>
      onTinyDisk('2m', (disk) => {
        const store = join(disk, 'demo.db');
        const r = runCli(['--store', store, 'demo', '--no-serve', '--duration', '120']);
        const line = oneLine(
          r,
          /^simrec: .*demo\.db: (appending to|declaring \w+ of|ending) run 1: database or disk is full/,
        );
        nothingLeft(store, line, disk);
      }),
  );

  it(
    'an import ends in one line and leaves no run, or names the one it could not remove',
    { skip: skipReason },
    async () => {
      const mcap = join(dir.path, 'source.mcap');
      const exported = runCli(['export', '1', 'mcap', mcap, '--force'], {
        SIMREC_STORE: await sourceStore(),
      });
      assert.equal(exported.status, 0, exported.stderr);
      await onTinyDisk('1m', (disk) => {
        const store = join(disk, 'import.db');
        const r = runCli(['--store', store, 'import', 'mcap', mcap]);
        const line = oneLine(r, /^simrec: .*import\.db: [a-z ]+ run 1: database or disk is full/);
        nothingLeft(store, line, disk);
      });
    },
  );

  it(
    'the LimSim export names its file and leaves nothing; the SODA.Sim export leaves no folder',
    { skip: skipReason },
    async () => {
      const env = { SIMREC_STORE: await sourceStore() };
      await onTinyDisk('200k', (disk) => {
        const limsim = join(disk, 'run.db');
        oneLine(
          runCli(['export', String(sourceRun), 'limsim', limsim], env),
          new RegExp(
            `^simrec: ${limsim.replaceAll('.', '\\.')}: no space left on the device \\(database or disk is full\\)$`,
          ),
        );
        const soda = join(disk, 'soda');
        oneLine(
          runCli(['export', String(sourceRun), 'soda', soda], env),
          new RegExp(`^simrec: ${soda}/[\\w.]+: no space left on the device$`),
        );
        assert.equal(existsSync(soda), false, 'no folder left');
        assert.deepEqual(readdirSync(disk), [], 'nothing at all left on the disk');
      });
    },
  );
});
