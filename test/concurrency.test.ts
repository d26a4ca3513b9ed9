/**
 * Several processes on one SQLite store: two recorders writing at once, a reader and an import while
 * they write. SQLite serialises the writers (WAL, a busy timeout); nothing may be lost or corrupted.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import type { Sample } from '../src/model/stream.js';
import { importPerception } from './helpers/formats.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { crashSample } from './helpers/crash-sample.js';
import { fixture, REPO_ROOT, tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-concurrency-');
after(() => dir.cleanup());

interface Writer {
  child: ChildProcess;
  run: Promise<number>;
  acked: number;
  exited: Promise<void>;
  /** Resolves once this many samples are acknowledged. */
  reach(n: number): Promise<void>;
}

function startWriter(location: string, batch: number): Writer {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'dist', 'test', 'helpers', 'crash-writer.js'), location, String(batch)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const waiters: { n: number; resolve(): void; reject(error: Error): void }[] = [];
  let resolveRun!: (id: number) => void;
  let rejectRun!: (error: Error) => void;
  const writer: Writer = {
    child,
    run: new Promise((resolve, reject) => ((resolveRun = resolve), (rejectRun = reject))),
    acked: 0,
    exited: new Promise((r) =>
      child.on('exit', (code, signal) => {
        // A writer that dies before reaching what a test waits for fails it, rather than hanging it.
        const error = new Error(
          `recorder exited (${code ?? signal}) after ${writer.acked} acknowledged samples`,
        );
        for (const w of waiters.splice(0)) w.reject(error);
        rejectRun(error);
        r();
      }),
    ),
    reach: (n) => new Promise((resolve, reject) => waiters.push({ n, resolve, reject })),
  };
  // Reads the writer's reports until its output ends: the tests wait on `reach` and the run, not on this.
  void (async () => {
    for await (const line of createInterface({ input: child.stdout })) {
      const [word, value] = line.split(' ');
      if (word === 'run') resolveRun(Number(value));
      if (word === 'ack') {
        writer.acked = Number(value);
        for (const w of waiters.splice(0))
          if (writer.acked >= w.n) w.resolve();
          else waiters.push(w);
      }
    }
  })();
  return writer;
}

describe('concurrent processes on one store', () => {
  it('two recorders at once, a reader and an import meanwhile: nothing lost, nothing corrupted', async () => {
    const location = join(dir.path, 'shared.db');
    // Both recorders open (and create) the store at the same moment.
    const writers = [startWriter(location, 3), startWriter(location, 11)];
    // Whatever fails, no recorder outlives the test.
    after(() => writers.forEach((w) => w.child.kill('SIGKILL')));
    const runs = await Promise.all(writers.map((w) => w.run));
    assert.notEqual(runs[0], runs[1], 'each recorder got its own run id');
    await Promise.all(writers.map((w) => w.reach(300)));
    // A reader and an import while both go on writing.
    const reader = await openStore(location);
    for (const run of runs) {
      const seen: Sample[] = [];
      for await (const b of streamSamples(reader, run, 'car/state')) seen.push(...b);
      assert.ok(seen.length >= 300);
      seen.forEach((s, i) => assert.deepEqual(s, crashSample(i)));
    }
    const imported = await importPerception(reader, fixture('perception-simrun', 'datasetinsights'));
    assert.ok(imported.captures > 0);
    await Promise.all(writers.map((w) => w.reach(w.acked + 100)));
    const acked = writers.map((w) => w.acked);
    for (const w of writers) w.child.kill('SIGKILL');
    await Promise.all(writers.map((w) => w.exited));
    await reader.close();
    const store = await openStore(location);
    try {
      for (const [k, run] of runs.entries()) {
        const info = await store.getRun(run);
        assert.equal(info!.endReason, 'interrupted');
        const stored: Sample[] = [];
        for await (const b of streamSamples(store, run, 'car/state')) stored.push(...b);
        assert.ok(
          stored.length >= acked[k]!,
          `run ${run}: ${stored.length} stored, ${acked[k]} acknowledged`,
        );
        stored.forEach((s, i) => assert.deepEqual(s, crashSample(i)));
      }
      assert.equal(
        (await store.getRun(imported.run.id))!.endReason !== null,
        true,
        'the import finished its run',
      );
      assert.deepEqual((await store.checkIntegrity()).problems, []);
    } finally {
      await store.close();
    }
  });
});
