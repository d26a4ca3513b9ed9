/**
 * A live recorder below its simulator's priority (record sumo --nice): every thread of the recording
 * process lowered, V8's and the store's writer thread included, the simulator left as it was.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT, tempDir } from './helpers/paths.js';

const PROBE = join(REPO_ROOT, 'dist', 'test', 'helpers', 'priority-probe.js');
const noThreads = existsSync('/proc/self/task')
  ? false
  : "this system has no /proc/self/task: a thread's own niceness is Linux's, and cannot be read here";
let sumoMissing: string | false = false;
try {
  execFileSync('sumo', ['--version'], { stdio: 'pipe' });
} catch {
  sumoMissing = 'sumo is not installed here (.ci/run installs it: apt-get install sumo sumo-tools)';
}

interface Probe {
  start: number;
  lowered?: number;
  threads: number[];
  children: number[];
}
const probe = (...args: string[]): Probe =>
  JSON.parse(execFileSync(process.execPath, [PROBE, ...args], { encoding: 'utf8' })) as Probe;

describe('recording below the simulator', { skip: noThreads }, () => {
  it("lowers every thread of the process, those started later too, and not a child's", () => {
    const { start, lowered, threads, children } = probe();
    const expected = Math.min(19, start + 3);
    assert.ok(threads.length >= 4, `${threads.length} threads seen (main, V8's, two workers)`);
    assert.ok(lowered! >= threads.length - 2, `${lowered} lowered at the call, ${threads.length} now`);
    assert.deepEqual(
      threads,
      threads.map(() => expected),
      'every thread at the lowered priority',
    );
    assert.deepEqual(children, [start], 'the child started before keeps its priority');
  });

  it(
    'record sumo runs below SUMO: its threads lowered, the writer thread included, SUMO as it was',
    { skip: sumoMissing },
    () => {
      const dir = tempDir('simrec-priority-');
      try {
        const { start, threads, children } = probe('sumo', dir.path);
        assert.deepEqual(children, [start], "SUMO's priority is its own");
        assert.ok(threads.length >= 3, `${threads.length} threads`);
        assert.deepEqual(
          threads,
          threads.map(() => Math.min(19, start + 2)),
          'every thread of the recorder lowered by 2',
        );
      } finally {
        dir.cleanup();
      }
    },
  );
});
