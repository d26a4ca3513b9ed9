import assert from 'node:assert/strict';
import { SimrecError } from '../../src/model/errors.js';
import type { StoreBackend } from '../../src/model/store-port.js';
import { currentWriter } from '../../src/store/common/writer-identity.js';

/** Asserts that `work` throws an `invalid` SimrecError whose message matches every pattern. */
export function assertInvalid(work: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(work, (error: unknown) => {
    assert.ok(error instanceof SimrecError, String(error));
    assert.equal(error.code, 'invalid');
    for (const p of patterns) assert.match(error.message, p);
    return true;
  });
}

/** A fresh run to attach a road network to. */
export async function newRun(store: StoreBackend, simulator = 'sumo'): Promise<number> {
  const run = await store.createRun(
    {
      begin: 1_700_000_000_000_000,
      end: null,
      endReason: null,
      state: 'recording',
      simulator: { name: simulator },
      description: '',
      metadata: {},
    },
    currentWriter(),
  );
  return run.id;
}

/** The 1-based line on which `needle` first appears in `text`. */
export const lineOf = (text: string, needle: string): number =>
  text.slice(0, text.indexOf(needle)).split('\n').length;
