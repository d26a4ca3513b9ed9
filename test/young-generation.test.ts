/**
 * The server's young generation held to its limit (`simrec serve`): V8 otherwise doubles it up to 32
 * MiB under a flood, all of it resident (bench/ingest.ts measures the server's peak).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SERVER_YOUNG_GENERATION_MIB } from '../src/server/young-generation.js';
import { REPO_ROOT } from './helpers/paths.js';

const PROBE = join(REPO_ROOT, 'dist', 'test', 'helpers', 'young-generation-probe.js');
const largestYoungMiB = (args: string[], nodeOptions = ''): number =>
  (
    JSON.parse(
      execFileSync(process.execPath, [PROBE, ...args], {
        encoding: 'utf8',
        env: { ...process.env, NODE_OPTIONS: nodeOptions },
      }),
    ) as { largestMiB: number }
  ).largestMiB;

describe("the server's young generation", () => {
  it('grows past the limit when nothing holds it (the workload is one V8 grows for)', () => {
    const largest = largestYoungMiB([]);
    assert.ok(largest > 2 * SERVER_YOUNG_GENERATION_MIB, `V8 grew it to ${largest} MiB only`);
  });

  it("stays within the limit, a worker's start notwithstanding", () => {
    const largest = largestYoungMiB([String(SERVER_YOUNG_GENERATION_MIB)]);
    assert.ok(
      largest <= SERVER_YOUNG_GENERATION_MIB,
      `${largest} MiB against a limit of ${SERVER_YOUNG_GENERATION_MIB}`,
    );
  });

  it("held at its first size, but for the one doubling a worker's start lets through", () => {
    // V8 starts it at 1 MiB; the worker's start puts V8's default factor back until the next check.
    const first = largestYoungMiB(['0']);
    assert.ok(first <= 2, `${first} MiB with a limit of 0`);
  });

  it("leaves it to the user who sized it with V8's own flag", () => {
    const largest = largestYoungMiB(['0'], '--max-semi-space-size=8');
    assert.ok(largest > 8, `${largest} MiB: the limit overrode --max-semi-space-size=8`);
  });
});
