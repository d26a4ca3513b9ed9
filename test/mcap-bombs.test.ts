/**
 * MCAP decompression bombs (issue #56), built in the test: each import runs as `simrec import` in a
 * child process whose peak memory is read at its exit. A bomb is refused in one line naming the file
 * and the chunk, before anything is unpacked, with nothing imported and the process under 600 MiB;
 * chunks within the limits, read one after another, import within the same ceiling.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../src/store/open-store.js';
import { mcapBomb, type BombChunk } from './helpers/mcap-bombs.js';
import { REPO_ROOT, SIMREC_BIN, tempDir } from './helpers/paths.js';
import { cliJson } from './helpers/run-cli.js';

const dir = tempDir('simrec-bombs-');
after(() => dir.cleanup());
const store = join(dir.path, 'bombs.db');
before(async () => {
  await (await openStore(store)).close();
});
const PEAK_LIMIT_MIB = 600;
const MiB = 1024 * 1024;
const PRELOAD = pathToFileURL(join(REPO_ROOT, 'dist', 'test', 'helpers', 'peak-rss.js')).href;

let made = 0;
/** Writes the bomb, imports it with `simrec import mcap`, and says how it went. */
function importBomb(chunks: BombChunk[]): {
  file: string;
  bytes: number;
  status: number | null;
  stdout: string;
  stderr: string;
  peakMiB: number;
} {
  const file = join(dir.path, `bomb-${++made}.mcap`);
  const bytes = mcapBomb(chunks);
  writeFileSync(file, bytes);
  const peakFile = join(dir.path, `peak-${made}`);
  const r = spawnSync(
    process.execPath,
    ['--import', PRELOAD, SIMREC_BIN, '--store', store, 'import', 'mcap', file],
    {
      encoding: 'utf8',
      env: { ...process.env, SIMREC_PEAK_RSS_FILE: peakFile },
      timeout: 300_000,
    },
  );
  const peakMiB = Number(readFileSync(peakFile, 'utf8')) / 1024;
  return { file, bytes: bytes.byteLength, status: r.status, stdout: r.stdout, stderr: r.stderr, peakMiB };
}

const runs = (): number => cliJson<unknown[]>(['--store', store, 'ls', '--json']).length;

/** A refusal: exit 2, one line, no stack, nothing imported, under the ceiling. */
function refused(r: ReturnType<typeof importBomb>, message: string | RegExp, before: number): void {
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
  if (typeof message === 'string') assert.equal(r.stderr.trimEnd(), `simrec: ${r.file}: ${message}`);
  else assert.match(r.stderr.trimEnd(), message);
  assert.ok(r.peakMiB < PEAK_LIMIT_MIB, `peak ${r.peakMiB.toFixed(0)} MiB`);
  assert.equal(runs(), before, 'no run left behind');
}

describe('MCAP decompression bombs', () => {
  it('a chunk that unpacks to 4.4 GB, in a file of 134 KB, is refused before it is unpacked', () => {
    const before = runs();
    const r = importBomb([{ t: 1000n, data: 4_400_000_000 }]);
    assert.ok(r.bytes < 140_000, `${r.bytes} bytes`);
    refused(
      r,
      /: the chunk at byte \d+ unpacks to 4400000031 bytes \(its index says\), expected at most 67108864 \(64 MiB\); nothing was imported$/,
      before,
    );
  });

  it('six overlapping chunks of 500 MB, in a file of 97 KB, are refused', () => {
    const before = runs();
    const r = importBomb(Array.from({ length: 6 }, () => ({ t: 1000n, data: 500_000_000 })));
    assert.ok(r.bytes < 100_000, `${r.bytes} bytes`);
    refused(
      r,
      /the chunk at byte \d+ unpacks to 500000031 bytes \(its index says\), expected at most 67108864 \(64 MiB\); nothing was imported$/,
      before,
    );
  });

  it('chunks within the limit that overlap beyond what an import holds at once are refused; one after another they import', () => {
    const before = runs();
    const overlapping = importBomb(Array.from({ length: 3 }, () => ({ t: 1000n, data: 60 * MiB })));
    refused(
      overlapping,
      `3 chunks overlap in time at 1000 ns and unpack together to ${3 * (60 * MiB + 31)} bytes, expected at most ${128 * MiB} (128 MiB), what an import holds at once; nothing was imported`,
      before,
    );
    // The same chunks one after another: each unpacked, read and let go before the next.
    const sequential = importBomb([1000n, 2000n, 3000n].map((t) => ({ t, data: 60 * MiB })));
    assert.equal(sequential.status, 0, sequential.stderr);
    assert.match(sequential.stdout, /-> run \d+/);
    assert.ok(sequential.peakMiB < PEAK_LIMIT_MIB, `peak ${sequential.peakMiB.toFixed(0)} MiB`);
    assert.equal(runs(), before + 1);
  });

  it('a file whose chunks unpack to more than the ceiling for its size is refused', () => {
    const before = runs();
    const r = importBomb(
      Array.from({ length: 20 }, (_, i) => ({ t: BigInt(1000 * (i + 1)), data: 60 * MiB })),
    );
    refused(
      r,
      `its 20 chunks unpack to ${20 * (60 * MiB + 31)} bytes (their index says), expected at most ${1024 * MiB} (1000 times the file's ${r.bytes} bytes, or 1024 MiB); nothing was imported`,
      before,
    );
  });

  it('a chunk whose record says more than its index is refused when it is reached, and its run removed', () => {
    const before = runs();
    const r = importBomb([
      { t: 1000n, data: 1000 },
      { t: 2000n, data: 60 * MiB, indexed: 1031n },
    ]);
    refused(
      r,
      /: the chunk at byte \d+ says it unpacks to 62914591 bytes, its index 1031; nothing was imported$/,
      before,
    );
  });
});
