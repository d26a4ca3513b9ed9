/**
 * How RunRecorder hands its writes to a store: at once to one that keeps the order of its writes
 * (SQLite: one queue to its writer thread), one after another to one that does not. Checked on a real
 * SQLite store, whose calls are listed as they happen, by a caller that does not yield between them
 * (the demo's loop), as a simulator that appends between its checkpoints does.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { describeRun, streamSamples } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-write-order-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(dir.path, 'order.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

const WRITES = new Set(['putActors', 'putStreams', 'appendColumns', 'putPresence']);

/** The store as it is, its writes listed when called; `keepsWriteOrder` as given. */
function listingWrites(target: StoreBackend, keepsWriteOrder: boolean) {
  const calls: string[] = [];
  const listed = new Proxy(target, {
    get(object, key, receiver) {
      if (key === 'keepsWriteOrder') return keepsWriteOrder;
      const value = Reflect.get(object, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (typeof key === 'string' && WRITES.has(key)) {
          const detail =
            key === 'appendColumns'
              ? `${(args[1] as unknown[]).length} streams, ${((args[2] as unknown[] | undefined) ?? []).length} presence`
              : '';
          calls.push(detail ? `${key} (${detail})` : key);
        }
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
  return { listed, calls };
}

/** Two vehicles declared and recorded, each flushed, with no await in between: what reaches the store. */
async function departuresWithoutYielding(recorder: RunRecorder, calls: string[]) {
  const t0 = recorder.run.begin;
  const pending: Promise<unknown>[] = [];
  for (const [i, id] of ['car1', 'car2'].entries()) {
    pending.push(recorder.declareActors([{ id, kind: 'vehicle' }]));
    pending.push(recorder.declareStreams([stateStream(id)]));
    pending.push(recorder.append(`${id}/state`, { t: t0 + i * 100_000, step: i, x: i, y: 0, yaw: 0 }));
    pending.push(recorder.flush());
  }
  const beforeYielding = [...calls];
  await Promise.all(pending);
  return beforeYielding;
}

describe('RunRecorder hands writes to the store', () => {
  it('at once to a store that keeps their order: declarations and a commit before the caller yields', async () => {
    const { listed, calls } = listingWrites(store, true);
    const recorder = await RunRecorder.begin(listed, { simulator: { name: 'order-test' } });
    calls.length = 0;
    const beforeYielding = await departuresWithoutYielding(recorder, calls);
    // The second commit waits for the first (one commit in flight at a time); the declarations do not.
    // Each commit brings its vehicle's presence (appeared at its first sample).
    assert.deepEqual(beforeYielding, [
      'putActors',
      'putStreams',
      'appendColumns (1 streams, 1 presence)',
      'putActors',
      'putStreams',
    ]);
    assert.deepEqual(calls, [...beforeYielding, 'appendColumns (1 streams, 1 presence)']);
    // A leave with no samples: into the same queue, as an append of no samples.
    await recorder.leave('car1', recorder.run.begin + 100_000);
    assert.equal(calls.at(-1), 'appendColumns (0 streams, 1 presence)');
    const run = await recorder.end('scenario_stop_trigger');
    const described = await describeRun(store, run.id);
    assert.deepEqual(
      described.actors.map((a) => [a.id, a.presence]),
      [
        ['car1', [{ from: run.begin, to: run.begin + 100_000 }]],
        ['car2', [{ from: run.begin + 100_000, to: null }]],
      ],
    );
    for (const [i, id] of ['car1', 'car2'].entries()) {
      const samples = [];
      for await (const batch of streamSamples(store, run.id, `${id}/state`)) samples.push(...batch);
      assert.deepEqual(
        samples.map((s) => [s.t, s.x]),
        [[run.begin + i * 100_000, i]],
      );
    }
  });

  it('one after another to a store that may reorder them: nothing before the caller yields', async () => {
    const { listed, calls } = listingWrites(store, false);
    const recorder = await RunRecorder.begin(listed, { simulator: { name: 'order-test' } });
    calls.length = 0;
    const beforeYielding = await departuresWithoutYielding(recorder, calls);
    assert.deepEqual(beforeYielding, []);
    assert.deepEqual(calls, [
      'putActors',
      'putStreams',
      'appendColumns (1 streams, 1 presence)',
      'putActors',
      'putStreams',
      'appendColumns (1 streams, 1 presence)',
    ]);
    await recorder.leave('car1', recorder.run.begin + 100_000);
    assert.equal(calls.at(-1), 'putPresence');
    await recorder.end('scenario_stop_trigger');
  });
});
