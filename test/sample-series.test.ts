/**
 * model/sample-series.ts: a stream read once as columns, its samples made on demand, must give what
 * `samples()` gives, sample for sample; the writers (MCAP, LimSim, SODA.Sim, DI-drive, bird's-eye views)
 * rely on it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readWholeStream, StreamWalk } from '../src/model/sample-series.js';
import type { FieldDecl, Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { storeRunSource } from '../src/replay/run-source.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';

const FIELDS: FieldDecl[] = [
  { name: 'x', type: 'f64' },
  { name: 'on', type: 'bool', optional: true },
  { name: 'lane', type: 'string', optional: true },
  { name: 'wheel', type: 'vec', length: 2, optional: true },
  { name: 'doc', type: 'json', optional: true },
];

describe('SampleSeries', () => {
  it('gives the samples samples() gives, every field type, absent values, undeclared fields and time standing still', async () => {
    const dir = tempDir('simrec-series-');
    const store = await openStore(join(dir.path, 'series.db'));
    try {
      const rec = await RunRecorder.begin(store, { begin: 0 });
      await rec.declareActors([{ id: 'a', kind: 'vehicle' }]);
      await rec.declareStreams([{ name: 'state', actor: 'a', fields: FIELDS }]);
      // 5,000 samples: sealed chunks and a tail; t stands still for three samples at 1 s.
      for (let i = 0; i < 5000; i++) {
        const t = i < 100 ? i * 10_000 : i < 102 ? 1_000_000 : (i - 2) * 10_000;
        const s: Sample = { t, step: i, x: i % 9 ? i * 0.25 : -0 };
        if (i % 3) s.on = i % 2 === 0;
        if (i % 4) s.lane = `lane ${i >> 6}`;
        if (i % 5) s.wheel = [i, -i];
        if (i % 7 === 0) s.doc = { i, tags: ['a', i] };
        // An undeclared field, typed by what arrives (a bool): kept as the stream's extra field.
        if (i % 11 === 0) s.flag = i % 22 === 0;
        void rec.append('a/state', s); // not awaited, as a simulator appends: flush and end report a failure
        if (i % 700 === 699) await rec.flush();
      }
      const run = await rec.end('completed');
      const source = await storeRunSource(store, run.id);
      const expected: Sample[] = [];
      for await (const batch of source.samples('a/state')) expected.push(...batch);
      const series = await readWholeStream(source, 'a/state');
      assert.equal(series.length, 5000);
      assert.deepStrictEqual(series.toArray(), expected);
      assert.deepStrictEqual(
        Array.from(series.times),
        expected.map((s) => s.t),
      );
      // latestAt: the last sample at or before t (the last of those at a time that stood still).
      assert.equal(series.latestAt(-1), undefined);
      assert.deepStrictEqual(series.latestAt(1_000_000), expected[102]);
      assert.deepStrictEqual(series.latestAt(1_004_999), expected[102]);
      assert.deepStrictEqual(series.latestAt(Number.MAX_SAFE_INTEGER), expected[4999]);
      assert.throws(() => series.at(5000), RangeError);
      await assert.rejects(readWholeStream(source, 'a/none'), /has no stream "a\/none"/);
    } finally {
      await store.close();
      dir.cleanup();
    }
  });

  it('a walk reads each stream a window at a time, forward, and gives every sample at its time; windows never cut where time stands still', async () => {
    const dir = tempDir('simrec-walk-');
    const store = await openStore(join(dir.path, 'walk.db'));
    try {
      const rec = await RunRecorder.begin(store, { begin: 0 });
      await rec.declareActors([
        { id: 'a', kind: 'vehicle' },
        { id: 'b', kind: 'vehicle' },
      ]);
      await rec.declareStreams([
        { name: 'state', actor: 'a', fields: FIELDS },
        { name: 'state', actor: 'b', fields: FIELDS },
      ]);
      // a: 3,000 samples at 10 ms, time standing still for 40 samples at a time every 500th step; b:
      // fewer, later, at its own times.
      for (let i = 0; i < 3000; i++) {
        const t = (i % 500 < 40 ? i - (i % 500) : i) * 10_000;
        // Not awaited, as a simulator appends: flush and end report a failure.
        void rec.append('a/state', { t, step: i, x: i * 0.5, ...(i % 3 ? { lane: `l${i >> 7}` } : {}) });
        if (i % 7 === 0 && i > 300) void rec.append('b/state', { t: t + 3, step: i, x: -i, on: i % 2 === 0 });
        if (i % 900 === 899) await rec.flush();
      }
      const run = await rec.end('completed');
      const source = await storeRunSource(store, run.id);
      const streams = (await source.streams()).filter((s) => s.name === 'state');
      const expected = new Map<string, Sample[]>();
      for (const s of streams) {
        const all: Sample[] = [];
        for await (const batch of source.samples(s.id)) all.push(...batch);
        expected.set(s.id, all);
      }
      // 32 samples in all: 16 a stream, shorter than each run of one time (40), which a window takes whole.
      const { walk, series } = await StreamWalk.over(source, streams, 32);
      const times = [...new Set([...expected.values()].flatMap((all) => all.map((x) => x.t)))].sort(
        (x, y) => x - y,
      );
      const seen = new Map<string, number>();
      for (const t of times) {
        await walk.advanceTo(t);
        for (const [id, all] of expected) {
          const s = series.get(id)!;
          // Every sample at t, by index (as a stream's channel reads it), and the latest at or before t.
          for (let i = 0; i < all.length; i++)
            if (all[i]!.t === t) {
              assert.deepStrictEqual(s.at(i), all[i], `${id} sample ${i} at ${t}`);
              seen.set(id, (seen.get(id) ?? 0) + 1);
            }
          const latest = all.filter((x) => x.t <= t).at(-1);
          assert.deepStrictEqual(s.latestAt(t), latest, `${id} latest at ${t}`);
        }
      }
      for (const [id, all] of expected) assert.equal(seen.get(id), all.length, id);
      // Forward only: a sample the walk has left is not read again.
      assert.throws(() => series.get('a/state')!.at(0), /outside the window read .*a walk reads forward/);
    } finally {
      await store.close();
      dir.cleanup();
    }
  });
});
