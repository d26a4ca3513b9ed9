/**
 * The store conformance suite: the same tests for every backend. A backend's test file calls
 * `runStoreConformance` with a factory of fresh stores; a backend that cannot pass a test lists it in
 * `skip` with the reason, which is printed, never silently dropped.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, it, type TestContext } from 'node:test';
import { SimrecError } from '../src/model/errors.js';
import { samplesToColumns, type ColumnBatch } from '../src/model/columns.js';
import { controlStream, STATE_FIELDS, stateStream, wheelsStream } from '../src/model/standard-streams.js';
import type { StoreBackend, WriterIdentity } from '../src/model/store-port.js';
import type { Sample, StreamDecl } from '../src/model/stream.js';
import { writeDerivedStream } from '../src/record/derived-streams.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import {
  describeRun,
  sceneAt,
  streamSamples,
  trajectory,
  trajectoryColumns,
} from '../src/replay/run-queries.js';
import { isWriterAlive } from '../src/store/common/writer-identity.js';
import { openStore } from '../src/store/open-store.js';
import { crashSample } from './helpers/crash-sample.js';
import { killWriterAfter } from './helpers/kill-writer.js';
import { REPO_ROOT } from './helpers/paths.js';
import { join } from 'node:path';

export interface ConformanceTarget {
  name: string;
  /** A fresh, empty store location (a file path, a URL with a fresh database name...). */
  freshLocation(): string;
  /** Tests this backend is known not to pass, with why. */
  skip?: { reason: string; tests: string[] }[];
}

const BEGIN = 1_700_000_000_000_000;

async function collect(iterable: AsyncIterable<Sample[]>): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of iterable) out.push(...batch);
  return out;
}

async function expectError(
  promiseOrFn: Promise<unknown> | (() => unknown),
  code: SimrecError['code'],
  pattern: RegExp,
): Promise<void> {
  try {
    if (typeof promiseOrFn === 'function') await promiseOrFn();
    else await promiseOrFn;
  } catch (error) {
    assert.ok(error instanceof SimrecError, `expected a SimrecError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return;
  }
  assert.fail(`expected an error matching ${pattern}`);
}

/** Every field type a simulator can send, declared. */
const ALL_TYPES: StreamDecl = {
  name: 'everything',
  actor: 'car',
  fields: [
    { name: 'f64', type: 'f64', unit: 'm' },
    { name: 'f32', type: 'f32', optional: true },
    { name: 'i32', type: 'i32' },
    { name: 'i64', type: 'i64' },
    { name: 'flag', type: 'bool' },
    { name: 'label', type: 'string' },
    { name: 'pos', type: 'vec', length: 3, unit: 'm' },
    { name: 'wheels', type: 'json' },
    { name: 'maybe', type: 'f64', optional: true },
  ],
};

function allTypesSample(i: number): Sample {
  const s: Sample = {
    t: BEGIN + i * 10_000,
    step: i,
    f64: i === 3 ? -0 : i * 1.1 + 1e-300,
    f32: Math.fround(i * 0.5 + 0.25),
    i32: i % 2 ? -(2 ** 31) : 2 ** 31 - 1,
    i64: Number.MAX_SAFE_INTEGER - i,
    flag: i % 3 === 0,
    label: i % 2 ? `ünïcødé ${i} 🚗` : '',
    pos: [i, -i / 3, 1e10],
    wheels: [
      { angularVelocity: i * 0.1, torque: [1, 2, { deep: [true, null, 'x'] }], slip: null },
      // json fields follow JSON, which has no -0: -i would come back as 0 for i = 0.
      { angularVelocity: -i - 0.5, torque: [], slip: 0.5 },
    ],
    // Undeclared fields: kept and returned as they came.
    extraNumber: i * 7,
    extraText: `x${i}`,
    extraFlag: i % 2 === 0,
    extraNested: { a: [i, { b: 'c' }], n: null },
  };
  if (i % 4 === 0) s.maybe = i;
  if (i % 5 === 0) s.mixed = i % 10 === 0 ? 'ten' : 5; // one field, two types: kept as json
  if (i === 2) s.sometimesNull = null;
  if (i === 2) delete s.f32; // optional and absent
  return s;
}

export function runStoreConformance(target: ConformanceTarget): void {
  const skipped = new Map<string, string>();
  for (const s of target.skip ?? []) for (const t of s.tests) skipped.set(t, s.reason);

  const test = (
    name: string,
    body: (store: StoreBackend, location: string, t: TestContext) => Promise<void>,
  ): void => {
    const reason = skipped.get(name);
    it(name, reason ? { skip: `${target.name}: ${reason}` } : {}, async (t) => {
      const location = target.freshLocation();
      const store = await openStore(location);
      try {
        await body(store, location, t);
      } finally {
        await store.close();
      }
    });
  };

  async function beginCarRun(
    store: StoreBackend,
    streams: StreamDecl[] = [stateStream('car')],
  ): Promise<RunRecorder> {
    const rec = await RunRecorder.begin(store, {
      simulator: { name: 'test', version: '1' },
      begin: BEGIN,
      metadata: { town: 'T1' },
    });
    await rec.declareActor({
      id: 'car',
      kind: 'vehicle',
      extents: { length: 4.5, width: 2, height: 1.5 },
      attributes: { mass: 1400 },
    });
    await rec.declareStreams(streams);
    return rec;
  }

  describe(`store conformance: ${target.name}`, () => {
    test('runs get increasing ids and keep what the recorder said', async (store) => {
      const a = await RunRecorder.begin(store, {
        simulator: { name: 'sumo', version: '1.15' },
        description: 'd',
        metadata: { seed: 7, town: 'T' },
        begin: BEGIN,
      });
      const b = await RunRecorder.begin(store, {});
      assert.ok(b.id > a.id);
      const got = await store.getRun(a.id);
      assert.deepEqual(got, {
        id: a.id,
        begin: BEGIN,
        end: null,
        endReason: null,
        state: 'recording',
        simulator: { name: 'sumo', version: '1.15' },
        description: 'd',
        metadata: { seed: 7, town: 'T' },
      });
      const ended = await a.end('user_request', { end: BEGIN + 5_000_000 });
      assert.equal(ended.endReason, 'user_request');
      assert.equal(ended.end, BEGIN + 5_000_000);
      assert.equal(ended.state, 'closed');
      const list = await store.listRuns();
      assert.deepEqual(
        list.map((r) => r.id),
        [b.id, a.id],
      );
      assert.equal(await store.getRun(9_999_999), undefined);
    });

    test("a run's version changes with every write a table is made of, and only then", async (store) => {
      const rec = await beginCarRun(store);
      const version = async (): Promise<string> => (await store.runVersions([rec.id])).get(rec.id)!;
      const seen = [await version()];
      const changed = async (what: string): Promise<void> => {
        const now = await version();
        assert.ok(!seen.includes(now), `${what}: the version did not change`);
        seen.push(now);
      };
      assert.equal(await version(), seen[0], 'asked twice, nothing written: the same');
      await rec.appendMany([{ stream: 'car/state', samples: [{ t: BEGIN, step: 0, x: 1, y: 2, yaw: 0 }] }]);
      await changed('a sample appended');
      await rec.end('completed', { end: BEGIN + 1_000_000 });
      await changed('the run ended');
      await store.putPresence(rec.id, [{ actor: 'car', intervals: [{ from: BEGIN, to: BEGIN + 500_000 }] }]);
      await changed('presence put after the end');
      const derived = {
        id: 'car/score',
        name: 'score',
        actor: 'car',
        fields: [{ name: 'v', type: 'f64' as const }],
        metadata: {},
      };
      await store.putDerivedStream(rec.id, derived, [{ t: BEGIN, step: 0, v: 1 }]);
      await changed('a derived stream written');
      // Replaced by the same count of samples at the same times, other values: still a change.
      await store.putDerivedStream(rec.id, derived, [{ t: BEGIN, step: 0, v: 2 }]);
      await changed('a derived stream replaced');
      assert.equal(await version(), seen.at(-1));
      const other = await beginCarRun(store);
      assert.equal(await version(), seen.at(-1), "another run's writes leave it be");
      const versions = await store.runVersions([rec.id, other.id, 999_999]);
      assert.deepEqual([...versions.keys()], [rec.id, other.id], 'a run that does not exist has none');
      await store.deleteRun(rec.id);
      assert.equal((await store.runVersions([rec.id])).size, 0);
    });

    test('actors and their record switch round-trip', async (store) => {
      const rec = await beginCarRun(store);
      await rec.declareActor({
        id: 'ped',
        kind: 'pedestrian',
        record: false,
        options: { rateHz: 5 },
        sourceClass: 'walker.1',
      });
      const actors = await store.listActors(rec.id);
      assert.deepEqual(actors, [
        {
          id: 'car',
          kind: 'vehicle',
          record: true,
          attributes: { mass: 1400 },
          options: {},
          extents: { length: 4.5, width: 2, height: 1.5 },
        },
        {
          id: 'ped',
          kind: 'pedestrian',
          record: false,
          attributes: {},
          options: { rateHz: 5 },
          sourceClass: 'walker.1',
        },
      ]);
      await rec.declareStream(stateStream('ped'));
      await rec.append('ped/state', { t: BEGIN, step: 0, x: 1, y: 1, yaw: 0 });
      await rec.setRecording('ped', true);
      await rec.append('ped/state', { t: BEGIN + 1, step: 1, x: 2, y: 2, yaw: 0 });
      await rec.setRecording('ped', false);
      await rec.append('ped/state', { t: BEGIN + 2, step: 2, x: 3, y: 3, yaw: 0 });
      const samples = await collect(streamSamples(store, rec.id, 'ped/state'));
      assert.deepEqual(
        samples.map((s) => s.x),
        [2],
        'only the sample recorded while the switch was on',
      );
    });

    test('every field type, and undeclared fields, come back identical', async (store) => {
      const rec = await beginCarRun(store, [ALL_TYPES]);
      const sent = Array.from({ length: 40 }, (_, i) => allTypesSample(i));
      await rec.appendBatch('car/everything', sent.slice(0, 13));
      for (const s of sent.slice(13)) await rec.append('car/everything', s);
      await rec.end('completed');
      const got = await collect(streamSamples(store, rec.id, 'car/everything'));
      assert.equal(got.length, sent.length);
      for (let i = 0; i < sent.length; i++) {
        assert.deepEqual(got[i], sent[i], `sample ${i}`);
        assert.ok(Object.is(got[i]!.f64, sent[i]!.f64), `sample ${i}: -0 stays -0`);
      }
      const [info] = (await store.listStreams(rec.id)).filter((s) => s.id === 'car/everything');
      const extra = Object.fromEntries(info!.extraFields.map((f) => [f.name, f.type]));
      assert.deepEqual(extra, {
        extraNumber: 'f64',
        extraText: 'string',
        extraFlag: 'bool',
        extraNested: 'json',
        mixed: 'json',
        sometimesNull: 'json',
      });
    });

    test("what a read returns is the caller's: changing it changes no later read", async (store) => {
      const doc = { name: 'doc', actor: 'car', fields: [{ name: 'doc', type: 'json' as const }] };
      const rec = await beginCarRun(store, [stateStream('car'), doc]);
      const all = Array.from({ length: 3000 }, (_, i) => ({
        t: BEGIN + i * 10_000,
        step: i,
        x: i,
        y: -i,
        yaw: 0,
      }));
      await rec.appendBatch('car/state', all);
      await rec.appendBatch(
        'car/doc',
        all.map(({ t, step }) => ({ t, step, doc: { wheels: [{ w: step }] } })),
      );
      await rec.end('completed');
      const read = async (window: { from?: number; to?: number }): Promise<ColumnBatch[]> => {
        const out: ColumnBatch[] = [];
        for await (const b of store.readColumns({ run: rec.id, stream: 'car/state', ...window })) out.push(b);
        return out;
      };
      // The whole stream (whole chunks) and a window inside one chunk: both once cached.
      for (const window of [{}, { from: BEGIN + 10 * 10_000, to: BEGIN + 20 * 10_000 }]) {
        const first = await read(window);
        for (const b of first) {
          b.t.fill(0);
          b.step.fill(-1);
          (b.columns.x as Float64Array).fill(NaN);
        }
        const again = (await read(window)).flatMap((b) => Array.from(b.columns.x as Float64Array));
        const from = window.from === undefined ? 0 : 10;
        assert.deepEqual(
          again,
          Array.from({ length: window.from === undefined ? 3000 : 11 }, (_, i) => from + i),
        );
      }
      const trajectory = await trajectoryColumns(store, rec.id, {
        actor: 'car',
        from: BEGIN,
        to: BEGIN + 50_000,
      });
      (trajectory.columns.x as Float64Array).fill(-7);
      const trajectoryAgain = await trajectoryColumns(store, rec.id, {
        actor: 'car',
        from: BEGIN,
        to: BEGIN + 50_000,
      });
      assert.deepEqual(Array.from(trajectoryAgain.columns.x as Float64Array), [0, 1, 2, 3, 4, 5]);
      assert.deepEqual(
        (await collect(streamSamples(store, rec.id, 'car/state', { to: BEGIN + 20_000 }))).map((s) => s.x),
        [0, 1, 2],
      );
      // JSON values: in samples read, in a scene's brackets and in columns, each changed in place.
      const wheelsAt = async (): Promise<unknown[]> => {
        const samples = await collect(streamSamples(store, rec.id, 'car/doc', { to: BEGIN + 10_000 }));
        const [bracket] = await store.bracketMany(rec.id, { streams: ['car/doc'], t: BEGIN + 5_000 });
        const columns: ColumnBatch[] = [];
        for await (const b of store.readColumns({ run: rec.id, stream: 'car/doc', to: BEGIN }))
          columns.push(b);
        const docs = [
          ...samples.map((s) => s.doc),
          bracket!.before!.doc,
          bracket!.after!.doc,
          ...columns.flatMap((b) => b.columns.doc as unknown[]),
        ] as { wheels: { w: number }[] }[];
        const seen = docs.map((d) => d.wheels[0]!.w);
        for (const d of docs) d.wheels[0]!.w = -1;
        return seen;
      };
      assert.deepEqual(await wheelsAt(), [0, 1, 0, 1, 0]);
      assert.deepEqual(await wheelsAt(), [0, 1, 0, 1, 0]);
      // A run's lists: a caller changing what it got (the store may refuse, as SQLite's frozen cache
      // does) changes nothing of the next answer.
      const [stream] = await store.listStreams(rec.id);
      const [actor] = await store.listActors(rec.id);
      const asStored = JSON.parse(JSON.stringify({ stream, actor })) as unknown;
      const tries = [
        () => stream!.fields.splice(0),
        () => ((stream!.fields[0] as { type: string }).type = 'string'),
        () => ((stream!.metadata as Record<string, unknown>).changed = true),
        () => ((actor!.attributes as Record<string, unknown>).changed = true),
        () => (actor!.id = 'other'),
      ];
      for (const change of tries)
        try {
          change();
        } catch {
          // Refused: as good as ignored.
        }
      const [streamAgain] = await store.listStreams(rec.id);
      const [actorAgain] = await store.listActors(rec.id);
      assert.deepEqual(JSON.parse(JSON.stringify({ stream: streamAgain, actor: actorAgain })), asStored);
    });

    test('samples across many chunks: complete, ordered, windows inclusive', async (store) => {
      const rec = await beginCarRun(store, [stateStream('car'), controlStream('car'), wheelsStream('car')]);
      const total = 5000;
      const all = Array.from({ length: total }, (_, i) => ({
        t: BEGIN + i * 10_000,
        step: i,
        x: i,
        y: -i,
        yaw: 0.001 * i,
        speed: i % 13,
      }));
      // Irregular batch sizes so samples fall into small tail chunks, merged chunks and sealed chunks.
      let i = 0;
      for (const size of [1, 1, 7, 1000, 3, 2500, 1]) {
        await rec.appendBatch('car/state', all.slice(i, i + size));
        i += size;
      }
      await rec.appendBatch('car/state', all.slice(i));
      const got = await collect(streamSamples(store, rec.id, 'car/state'));
      assert.deepEqual(got, all);
      const window = await collect(
        streamSamples(store, rec.id, 'car/state', { from: BEGIN + 1234 * 10_000, to: BEGIN + 3210 * 10_000 }),
      );
      assert.equal(window.length, 3210 - 1234 + 1);
      assert.equal(window[0]!.step, 1234);
      assert.equal(window.at(-1)!.step, 3210);
      const between = await collect(
        streamSamples(store, rec.id, 'car/state', { from: BEGIN + 5, to: BEGIN + 9_999 }),
      );
      assert.deepEqual(between, []);
      const [state] = await store.listStreams(rec.id);
      assert.equal(state!.samples, total);
      assert.equal(state!.begin, BEGIN);
      assert.equal(state!.end, BEGIN + (total - 1) * 10_000);
      const d = await describeRun(store, rec.id);
      assert.equal(d.samples, total);
    });

    test('the scene at t: latest state at or before t, interpolated on request', async (store) => {
      const rec = await beginCarRun(store);
      await rec.declareActor({ id: 'late', kind: 'vehicle' });
      await rec.declareStream(stateStream('late'));
      await rec.appendBatch(
        'car/state',
        Array.from({ length: 2000 }, (_, i) => ({
          t: BEGIN + i * 100_000,
          step: i,
          x: i,
          y: 0,
          yaw: i % 2 ? 3.1 : -3.1,
        })),
      );
      await rec.append('late/state', { t: BEGIN + 50_000_000, step: 500, x: 5, y: 5, yaw: 0 });
      const at = async (t: number, interpolate = false) => sceneAt(store, rec.id, { t, interpolate });
      assert.deepEqual((await at(BEGIN - 1)).actors, [], 'nothing before the first sample');
      const s1 = await at(BEGIN + 1_234_567);
      assert.equal(s1.actors.length, 1);
      assert.equal(s1.actors[0]!.x, 12);
      assert.equal(s1.actors[0]!.t, BEGIN + 1_200_000);
      const s2 = await at(BEGIN + 1_250_000, true);
      assert.equal(s2.actors[0]!.x, 12.5);
      assert.ok(
        Math.abs(Math.abs(s2.actors[0]!.yaw as number) - Math.PI) < 1e-9,
        'yaw interpolates across +-pi, not through 0',
      );
      const s3 = await at(BEGIN + 60_000_000);
      assert.deepEqual(
        s3.actors.map((a) => [a.id, a.kind, a.x]),
        [
          ['car', 'vehicle', 600],
          ['late', 'vehicle', 5],
        ],
      );
      const end = await at(BEGIN + 10_000_000_000);
      assert.deepEqual(
        end.actors.map((a) => a.id),
        ['late'],
        'long after its last state the car counts as gone (staleness); one sample gives no interval to judge by',
      );
      // Read without read-ahead (as the server answers a scene), every scene is the same.
      for (const t of [
        BEGIN - 1,
        BEGIN + 1_234_567,
        BEGIN + 1_250_000,
        BEGIN + 60_000_000,
        BEGIN + 150_000_000,
      ])
        for (const interpolate of [false, true])
          assert.deepEqual(
            await sceneAt(store, rec.id, { t, interpolate, readAhead: false }),
            await at(t, interpolate),
            `at ${t - BEGIN} us, interpolated ${interpolate}`,
          );
      const withGone = await sceneAt(store, rec.id, { t: BEGIN + 10_000_000_000, includeDeparted: true });
      assert.deepEqual(
        withGone.actors.map((a) => [a.id, a.x, a.departed]),
        [
          ['car', 1999, 'stale'],
          ['late', 5, undefined],
        ],
      );
      const traj = await trajectory(store, rec.id, {
        actor: 'car',
        from: BEGIN + 100_000,
        to: BEGIN + 300_000,
      });
      assert.deepEqual(
        traj.samples.map((s) => s.x),
        [1, 2, 3],
      );
    });

    test('presence: actors appear with samples, leave, come back; kept, re-declarations keep it; scenes follow it', async (store) => {
      const rec = await beginCarRun(store);
      await rec.declareActor({ id: 'bus', kind: 'vehicle' });
      await rec.declareStream(stateStream('bus'));
      const S = 1_000_000;
      const state = (t: number, x: number) => ({ t: BEGIN + t, step: t / S, x, y: 0, yaw: 0 });
      // The car is sampled every second from 0 to 10 s, leaves at 10.5 s, comes back at 20 s.
      await rec.appendBatch(
        'car/state',
        Array.from({ length: 11 }, (_, i) => state(i * S, i)),
      );
      await rec.leave('car', BEGIN + 10.5 * S);
      await rec.leave('car', BEGIN + 11 * S); // already gone: nothing changes
      await rec.appendBatch('car/state', [state(20 * S, 20), state(21 * S, 21)]);
      // The bus is told to appear before its first sample, and is never said to leave.
      await rec.appear('bus', BEGIN + 2 * S);
      await rec.appendBatch('bus/state', [state(3 * S, 100), state(4 * S, 101), state(5 * S, 102)]);
      const presence = async () =>
        Object.fromEntries((await store.listActors(rec.id)).map((a) => [a.id, a.presence]));
      assert.deepEqual(await presence(), {
        car: [
          { from: BEGIN, to: BEGIN + 10.5 * S },
          { from: BEGIN + 20 * S, to: null },
        ],
        bus: [{ from: BEGIN + 2 * S, to: null }],
      });
      await rec.setRecording('car', true);
      await rec.declareActor({ id: 'bus', kind: 'vehicle', attributes: { line: 7 } });
      assert.equal((await presence()).car!.length, 2, 'a re-declaration keeps presence');
      assert.equal((await presence()).bus![0]!.from, BEGIN + 2 * S);

      const ids = async (t: number, includeDeparted = false) =>
        (await sceneAt(store, rec.id, { t: BEGIN + t, includeDeparted })).actors.map((a) =>
          a.departed ? `${a.id}:${a.departed}` : a.id,
        );
      assert.deepEqual(await ids(5 * S), ['car', 'bus']);
      assert.deepEqual(await ids(10.4 * S), ['car']);
      assert.deepEqual(
        await ids(10.4 * S, true),
        ['car', 'bus:stale'],
        'bus: 5.4 s since its sample, usual 1 s',
      );
      assert.deepEqual(await ids(10.5 * S), [], 'the car has left at 10.5 s');
      assert.deepEqual(await ids(15 * S, true), ['car:left', 'bus:stale']);
      assert.deepEqual(await ids(20 * S), ['car'], 'back at 20 s');
      // The car's 10 s absence is not counted in its usual interval (1 s, not 21/12 s).
      assert.deepEqual(await ids(22.4 * S), ['car']);
      assert.deepEqual(await ids(22.6 * S), []);

      // An importer sets the whole presence; bad intervals are refused naming what is wrong.
      await rec.setPresence('bus', [
        { from: BEGIN + 3 * S, to: BEGIN + 4 * S },
        { from: BEGIN + 5 * S, to: BEGIN + 6 * S },
      ]);
      assert.deepEqual(await ids(4.5 * S, true), ['car', 'bus:left']);
      assert.deepEqual(await ids(5.5 * S), ['car', 'bus']);
      await expectError(
        () => rec.setPresence('bus', [{ from: BEGIN + 5 * S, to: BEGIN + 4 * S }]),
        'invalid',
        /bus.*presence\[0\]\.to: expected a time after from/,
      );
      await expectError(
        () =>
          rec.setPresence('bus', [
            { from: BEGIN, to: null },
            { from: BEGIN + S, to: null },
          ]),
        'invalid',
        /presence\[1\].*only the last may be open/,
      );
      await expectError(() => rec.leave('nobody', BEGIN), 'invalid', /leave: actor "nobody" is not declared/);
      await expectError(() => rec.leave('car', BEGIN + 19 * S), 'invalid', /appeared at t=\d+, after that/);
      await expectError(
        store.putPresence(rec.id, [{ actor: 'nobody', intervals: [] }]),
        'not_found',
        /no actor "nobody"/,
      );
      await rec.leave('car', BEGIN + 30 * S);
      await rec.end('completed');
      assert.deepEqual((await presence()).car![1], { from: BEGIN + 20 * S, to: BEGIN + 30 * S });
      const d = await describeRun(store, rec.id);
      assert.deepEqual(d.actors.find((a) => a.id === 'bus')!.presence, [
        { from: BEGIN + 3 * S, to: BEGIN + 4 * S },
        { from: BEGIN + 5 * S, to: BEGIN + 6 * S },
      ]);
    });

    test('time may stand still but not go backwards', async (store) => {
      const rec = await beginCarRun(store);
      await rec.appendBatch('car/state', [
        { t: BEGIN, step: 0, x: 0, y: 0, yaw: 0 },
        { t: BEGIN, step: 1, x: 1, y: 0, yaw: 0 },
      ]);
      await expectError(
        () => rec.append('car/state', { t: BEGIN - 1, step: 2, x: 0, y: 0, yaw: 0 }),
        'invalid',
        /car\/state.*t=1699999999999999.*time goes backwards \(previous sample at t=1700000000000000\)/,
      );
      await expectError(
        () =>
          rec.appendBatch('car/state', [
            { t: BEGIN + 5, step: 2, x: 0, y: 0, yaw: 0 },
            { t: BEGIN + 4, step: 3, x: 0, y: 0, yaw: 0 },
          ]),
        'invalid',
        /time goes backwards/,
      );
      await rec.flush();
      assert.equal(
        (await collect(streamSamples(store, rec.id, 'car/state'))).length,
        2,
        'the refused batch left nothing behind',
      );
      await rec.append('car/state', { t: BEGIN + 5, step: 2, x: 0, y: 0, yaw: 0 });
    });

    test('samples while time stands still across chunk boundaries are all read, whole and in windows', async (store) => {
      const rec = await beginCarRun(store);
      // Time stands still for 40 samples around the first chunk boundary (2,048 samples) and for a
      // whole chunk's worth around the second: a boundary splits samples of one time between chunks.
      const at = (i: number): number =>
        i < 2030 ? i : i < 2070 ? 2030 : i < 4000 ? i - 39 : i < 6200 ? 3961 : i - 2238;
      const all = Array.from({ length: 7000 }, (_, i) => ({
        t: BEGIN + at(i) * 10_000,
        step: i,
        x: i,
        y: 0,
        yaw: 0,
      }));
      for (let i = 0; i < all.length; i += 500) await rec.appendBatch('car/state', all.slice(i, i + 500));
      await rec.end('scenario_stop_trigger');
      const steps = (samples: Sample[]): number[] => samples.map((s) => s.step);
      assert.deepEqual(steps(await collect(streamSamples(store, rec.id, 'car/state'))), steps(all));
      const columns = await trajectoryColumns(store, rec.id, { actor: 'car' });
      assert.deepEqual([...columns.step], steps(all));
      // Windows that begin and end at a time that stands still hold every sample at it.
      for (const [from, to] of [
        [2030, 2030],
        [2030, 3000],
        [1000, 2030],
        [3961, 3961],
        [3961, 5000],
      ] as const) {
        const window = await collect(
          streamSamples(store, rec.id, 'car/state', { from: BEGIN + from * 10_000, to: BEGIN + to * 10_000 }),
        );
        assert.deepEqual(
          steps(window),
          steps(all.filter((s) => s.t >= BEGIN + from * 10_000 && s.t <= BEGIN + to * 10_000)),
          `window ${from}-${to}`,
        );
      }
    });

    test('bad samples are refused with the field, value and expectation named; nothing is stored', async (store) => {
      const rec = await beginCarRun(store, [stateStream('car'), ALL_TYPES]);
      await rec.append('car/state', { t: BEGIN, step: 0, x: 1, y: 2, yaw: 0 });
      const ok = { t: BEGIN + 10, step: 1, x: 1, y: 2, yaw: 0 };
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ ...ok, x: Number.NaN }, /field x: expected a finite number \(m\), got NaN/],
        [{ ...ok, y: Number.POSITIVE_INFINITY }, /field y: expected a finite number \(m\), got Infinity/],
        [{ ...ok, yaw: '0.5' }, /field yaw: expected a finite number \(rad\), got "0.5"/],
        [{ ...ok, x: undefined }, /field x is required \(f64\) but absent/],
        [{ ...ok, t: 1.5 }, /sample.t: expected an integer number of microseconds, got 1.5/],
        [{ ...ok, step: 'one' }, /field step: expected an integer, got "one"/],
        [{ ...ok, extra: { bad: Number.NaN } }, /field extra.bad: expected a finite number, got NaN/],
        [{ ...ok, lane: 7 }, /field lane: expected a string, got 7/],
      ];
      for (const [sample, pattern] of cases)
        await expectError(() => rec.append('car/state', sample as Sample), 'invalid', pattern);
      const good = allTypesSample(0);
      const typed: [Record<string, unknown>, RegExp][] = [
        [{ ...good, i32: 2 ** 31 }, /field i32: expected a 32-bit integer, got 2147483648/],
        // Rounded to float32 it would be infinity: refused, not kept as infinity.
        [
          { ...good, f32: 1e39 },
          /field f32: expected a finite number within float32 \(\+-3\.4028234663852886e38\), got 1e\+39/,
        ],
        [{ ...good, i64: 2 ** 60 }, /field i64: expected an integer within \+-2\^53/],
        [{ ...good, flag: 1 }, /field flag: expected a boolean, got 1/],
        [
          { ...good, pos: [1, 2] },
          /field pos: expected an array of 3 finite numbers \(m\), got an array of length 2/,
        ],
        [{ ...good, pos: [1, 2, Number.NaN] }, /field pos: expected an array of 3 finite numbers/],
        [
          { ...good, wheels: [{ w: Number.NEGATIVE_INFINITY }] },
          /field wheels\[0\].w: expected a finite number, got -Infinity/,
        ],
      ];
      for (const [sample, pattern] of typed)
        await expectError(() => rec.append('car/everything', sample as Sample), 'invalid', pattern);
      await expectError(() => rec.append('car/nope', ok), 'invalid', /has no declared stream "car\/nope"/);
      await expectError(rec.declareStream(stateStream('ghost')), 'invalid', /actor "ghost" is not declared/);
      await expectError(rec.declareStream(stateStream('car')), 'conflict', /already declared/);
      await expectError(
        rec.declareStream({ name: 'bad', actor: 'car', fields: [{ name: 'v', type: 'float' as never }] }),
        'invalid',
        /fields\[0\].type: expected one of f64, f32/,
      );
      await expectError(
        rec.declareActor({ id: '', kind: 'vehicle' }),
        'invalid',
        /actor.id: expected a non-empty string/,
      );
      await expectError(
        rec.declareActor({ id: 'x', kind: 'Big Truck' }),
        'invalid',
        /kind: expected lower_snake_case/,
      );
      await expectError(
        rec.declareActor({ id: 'x', kind: 'vehicle', extents: { length: -1, width: 1, height: 1 } }),
        'invalid',
        /extents.length: expected a finite number >= 0 \(m\), got -1/,
      );
      await rec.flush();
      const [state] = await store.listStreams(rec.id);
      assert.equal(state!.samples, 1, 'no refused sample was stored');
      assert.equal((await store.listActors(rec.id)).length, 1);
    });

    test('a closed run and an unknown run refuse writes', async (store) => {
      const rec = await beginCarRun(store);
      await rec.append('car/state', { t: BEGIN, step: 0, x: 1, y: 2, yaw: 0 });
      await rec.end('user_request');
      await expectError(
        () => rec.append('car/state', { t: BEGIN + 1, step: 1, x: 1, y: 2, yaw: 0 }),
        'conflict',
        /has ended/,
      );
      await expectError(rec.end(), 'conflict', /already ended/);
      await expectError(
        store.appendColumns(rec.id, [
          {
            stream: 'car/state',
            batch: samplesToColumns([{ t: BEGIN + 2, step: 2, x: 0, y: 0, yaw: 0 }], STATE_FIELDS),
          },
        ]),
        'conflict',
        /is closed/,
      );
      await expectError(store.endRun(rec.id, { end: BEGIN, endReason: 'x' }), 'conflict', /is closed/);
      await expectError(store.putActors(424242, []), 'not_found', /run 424242 does not exist/);
      await expectError(describeRun(store, 424242), 'not_found', /run 424242 does not exist/);
      await expectError(
        collect(store.readSamples({ run: rec.id, stream: 'car/none' })),
        'not_found',
        /has no stream "car\/none"/,
      );
      await expectError(() => rec.end('User Request'), 'invalid', /end reason: expected lower_snake_case/);
      assert.equal((await store.listStreams(rec.id))[0]!.samples, 1);
    });

    test('attachments: put, get, list, and hostile names refused', async (store) => {
      const rec = await beginCarRun(store);
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 255]);
      await rec.attach({
        name: 'camera/rgb_00001.png',
        mediaType: 'image/png',
        t: BEGIN + 5,
        data: png,
        metadata: { sensor: 'front' },
      });
      await rec.attach({
        name: 'scenario.bin',
        mediaType: 'application/octet-stream',
        data: new Uint8Array(0),
      });
      const got = await store.getAttachment(rec.id, 'camera/rgb_00001.png');
      assert.deepEqual(
        { ...got, data: [...got!.data] },
        {
          name: 'camera/rgb_00001.png',
          mediaType: 'image/png',
          t: BEGIN + 5,
          metadata: { sensor: 'front' },
          data: [...png],
        },
      );
      assert.deepEqual(
        (await store.listAttachments(rec.id)).map((a) => [a.name, a.size]),
        [
          ['camera/rgb_00001.png', 6],
          ['scenario.bin', 0],
        ],
      );
      for (const name of ['../escape.png', '/etc/passwd', 'a/../../b', 'a\\b', ''])
        await expectError(
          rec.attach({ name, mediaType: 'image/png', data: png }),
          'invalid',
          /attachment.name/,
        );
      await expectError(
        rec.attach({ name: 'x', mediaType: 'png', data: png }),
        'invalid',
        /mediaType: expected a media type/,
      );
      assert.equal(await store.getAttachment(rec.id, 'missing'), undefined);
    });

    test("attachments' version: changes at every put, a put again included, by run", async (store) => {
      const rec = await beginCarRun(store);
      const other = await beginCarRun(store);
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47]);
      const versions = [await store.attachmentsVersion(rec.id)];
      const put = async (name: string, t: number): Promise<void> => {
        await rec.attach({ name, mediaType: 'image/png', t, data: png });
        versions.push(await store.attachmentsVersion(rec.id));
      };
      await put('a.png', BEGIN);
      await put('b.png', BEGIN + 1);
      // The last one put again (the largest of the run's), then the first.
      await put('b.png', BEGIN + 2);
      await put('a.png', BEGIN + 3);
      assert.equal(new Set(versions).size, versions.length, `every put changed it: ${versions.join(' ')}`);
      assert.ok(versions.every((v) => typeof v === 'string'));
      // Unchanged by another run's attachments, and by reading.
      await store.listAttachments(rec.id);
      await other.attach({ name: 'a.png', mediaType: 'image/png', data: png });
      assert.equal(await store.attachmentsVersion(rec.id), versions.at(-1));
      assert.equal(await store.attachmentsVersion(987_654), undefined);
      assert.deepEqual(
        (await store.listAttachments(rec.id)).map((a) => [a.name, a.t]),
        [
          ['a.png', BEGIN + 3],
          ['b.png', BEGIN + 2],
        ],
      );
    });

    test('scenarios: create, read, list, replace, delete; int64 ids', async (store) => {
      const big = 2n ** 63n - 1n;
      await store.scenarios.put({
        id: big,
        timestamp: BEGIN,
        description: 'max id',
        bin: new Uint8Array([1, 2, 3]),
      });
      await store.scenarios.put({
        id: -5n,
        timestamp: BEGIN + 1,
        description: 'negative',
        bin: new Uint8Array(0),
      });
      const got = await store.scenarios.get(big);
      assert.deepEqual(
        { ...got, bin: [...got!.bin] },
        { id: big, timestamp: BEGIN, description: 'max id', bin: [1, 2, 3] },
      );
      await store.scenarios.put({
        id: big,
        timestamp: BEGIN + 2,
        description: 'replaced',
        bin: new Uint8Array([9]),
      });
      assert.deepEqual(await store.scenarios.list(), [
        { id: -5n, timestamp: BEGIN + 1, description: 'negative', size: 0 },
        { id: big, timestamp: BEGIN + 2, description: 'replaced', size: 1 },
      ]);
      assert.equal(await store.scenarios.delete(big), true);
      assert.equal(await store.scenarios.delete(big), false);
      assert.equal(await store.scenarios.get(big), undefined);
    });

    test('vehicle configurations: create, read, list, replace, delete', async (store) => {
      const doc = { soda: { sim: { wheels: [{ radius: 0.33 }], mass: 1500 } }, 'dotted.key': true };
      await store.vehicles.put({ name: 'sedan', timestamp: BEGIN, doc });
      await store.vehicles.put({ name: 'truck', timestamp: BEGIN, doc: {} });
      assert.deepEqual(await store.vehicles.get('sedan'), { name: 'sedan', timestamp: BEGIN, doc });
      await store.vehicles.put({ name: 'sedan', timestamp: BEGIN + 1, doc: { v: 2 } });
      assert.deepEqual(
        (await store.vehicles.list()).map((v) => [v.name, v.doc]),
        [
          ['sedan', { v: 2 }],
          ['truck', {}],
        ],
      );
      assert.equal(await store.vehicles.delete('truck'), true);
      assert.equal(await store.vehicles.get('truck'), undefined);
    });

    test('catalog entries the model refuses are not stored, on every backend (store/common/catalogs.ts)', async (store) => {
      await assert.rejects(
        store.vehicles.put({ name: '', timestamp: BEGIN, doc: {} }),
        /vehicle\.name: expected a non-empty string/,
      );
      await assert.rejects(
        store.vehicles.put({ name: 'nan', timestamp: BEGIN, doc: { speed: NaN } }),
        /vehicle nan\.doc/,
      );
      await assert.rejects(
        store.scenarios.put({ id: 2n ** 64n, timestamp: BEGIN, description: '', bin: new Uint8Array(0) }),
        /does not fit in 64 bits/,
      );
      await assert.rejects(
        store.scenarios.put({ id: 7n, timestamp: 1.5, description: '', bin: new Uint8Array(0) }),
        /scenario 7\.timestamp: expected integer microseconds, got 1\.5/,
      );
      assert.equal(await store.vehicles.get('nan'), undefined);
      assert.equal(await store.scenarios.get(7n), undefined);
    });

    test('derived streams are written whole, replace earlier versions, and work on closed runs', async (store) => {
      const rec = await beginCarRun(store);
      await rec.appendBatch(
        'car/state',
        [0, 1, 2].map((i) => ({ t: BEGIN + i * 100_000, step: i, x: i, y: 0, yaw: 0 })),
      );
      await rec.end('completed');
      assert.equal((await store.listStreams(rec.id)).length, 1, 'listed (and perhaps cached) before');
      const decl: StreamDecl = {
        name: 'evaluation',
        actor: 'car',
        fields: [{ name: 'ttc', type: 'f64', unit: 's' }],
      };
      const first = Array.from({ length: 2500 }, (_, i) => ({
        t: BEGIN + i * 1000,
        step: i,
        ttc: 20 - i / 1000,
        note: 'v1',
      }));
      assert.equal(await writeDerivedStream(store, rec.id, decl, first), 'car/evaluation');
      assert.deepEqual(await collect(streamSamples(store, rec.id, 'car/evaluation')), first);
      const second = [{ t: BEGIN, step: 0, ttc: 3 }];
      await writeDerivedStream(store, rec.id, decl, second);
      assert.deepEqual(
        await collect(streamSamples(store, rec.id, 'car/evaluation')),
        second,
        'the earlier version is gone',
      );
      const info = (await store.listStreams(rec.id)).find((s) => s.id === 'car/evaluation')!;
      assert.deepEqual([info.samples, info.begin, info.end, info.extraFields], [1, BEGIN, BEGIN, []]);
      await expectError(
        writeDerivedStream(store, rec.id, decl, [{ t: BEGIN, step: 0, ttc: Number.NaN }]),
        'invalid',
        /field ttc: expected a finite number \(s\), got NaN/,
      );
      await expectError(
        writeDerivedStream(store, rec.id, { ...decl, actor: 'ghost' }, []),
        'invalid',
        /actor "ghost" is not in run/,
      );
      assert.deepEqual(
        await collect(streamSamples(store, rec.id, 'car/evaluation')),
        second,
        'a refused write changed nothing',
      );
      assert.equal(
        (await collect(streamSamples(store, rec.id, 'car/state'))).length,
        3,
        'recorded data untouched',
      );
    });

    test('deleting a run removes it and everything it holds', async (store) => {
      const rec = await beginCarRun(store);
      await rec.append('car/state', { t: BEGIN, step: 0, x: 1, y: 2, yaw: 0 });
      await rec.attach({ name: 'a.bin', mediaType: 'application/octet-stream', data: new Uint8Array(3) });
      await rec.end();
      assert.equal(await store.deleteRun(rec.id), true);
      assert.equal(await store.getRun(rec.id), undefined);
      assert.deepEqual(await store.listStreams(rec.id), []);
      assert.deepEqual(await store.listAttachments(rec.id), []);
      const next = await RunRecorder.begin(store, {});
      assert.ok(next.id > rec.id, 'a deleted run id is never reused');
    });

    test("a dead writer's run is closed as interrupted on the next open; a live one is left alone", async (store, location) => {
      const deadPid = await new Promise<number>((resolve) => {
        const child = spawn(process.execPath, ['-e', '']);
        child.on('exit', () => resolve(child.pid!));
      });
      const dead: WriterIdentity = {
        host: (await import('node:os')).hostname(),
        pid: deadPid,
        processStart: '1',
      };
      assert.equal(isWriterAlive(dead), false);
      const rec = await RunRecorder.begin(store, { begin: BEGIN }, { writer: dead });
      await rec.declareActor({ id: 'car', kind: 'vehicle' });
      await rec.declareStream(stateStream('car'));
      await rec.appendBatch(
        'car/state',
        [0, 1, 2].map((i) => ({ t: BEGIN + i * 1000, step: i, x: i, y: 0, yaw: 0 })),
      );
      const live = await RunRecorder.begin(store, { begin: BEGIN });
      const reopened = await openStore(location);
      try {
        const run = await reopened.getRun(rec.id);
        assert.equal(run!.state, 'closed');
        assert.equal(run!.endReason, 'interrupted');
        assert.equal(run!.end, BEGIN + 2000, 'the run ends at its last acknowledged sample');
        assert.equal((await reopened.getRun(live.id))!.state, 'recording');
        assert.equal((await collect(streamSamples(reopened, rec.id, 'car/state'))).length, 3);
      } finally {
        await reopened.close();
      }
    });

    test('a store opened earlier sees what another process records meanwhile (no stale caches)', async (store, location) => {
      // Warm every cache this handle may have: runs, streams, chunks.
      const warm = await beginCarRun(store);
      await warm.appendBatch('car/state', [{ t: BEGIN, step: 0, x: 0, y: 0, yaw: 0 }]);
      await store.listRuns();
      const child = spawn(
        process.execPath,
        [join(REPO_ROOT, 'dist', 'test', 'helpers', 'crash-writer.js'), location, '5'],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      let runId = 0;
      let acked = 0;
      let checks = 0;
      try {
        for await (const line of createInterface({ input: child.stdout })) {
          const [word, value] = line.split(' ');
          if (word === 'run') runId = Number(value);
          if (word !== 'ack') continue;
          acked = Number(value);
          // Read while the other process goes on writing, at a few moments.
          if (acked % 100 !== 0) continue;
          const [stream] = await store.listStreams(runId);
          assert.ok(
            stream!.samples >= acked,
            `listStreams: ${stream!.samples} samples, ${acked} acknowledged`,
          );
          assert.ok(
            (await collect(streamSamples(store, runId, 'car/state'))).length >= acked,
            'readSamples sees them all',
          );
          const last = crashSample(acked - 1);
          assert.deepEqual(
            (await store.sampleBracket(runId, 'car/state', last.t)).before,
            last,
            'the scene sees the latest',
          );
          assert.ok(
            (await store.listRuns()).some((r) => r.id === runId && r.samples >= acked),
            'listRuns counts them',
          );
          if (++checks === 4) break;
        }
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
      assert.equal(checks, 4);
    });

    test('SIGKILL mid-recording loses no acknowledged sample and leaves a sound store (20 seeded kills)', async (_store, _location, t) => {
      let seed = 20261122;
      const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      for (let round = 0; round < 20; round++) {
        const location = target.freshLocation();
        const killAfterAcks = 1 + Math.floor(random() * 40);
        const batch = 1 + Math.floor(random() * 50);
        const { runId, acked, acks } = await killWriterAfter(location, { batch, killAfterAcks });
        const store = await openStore(location);
        try {
          const run = await store.getRun(runId);
          assert.equal(run?.endReason, 'interrupted', `round ${round}`);
          const samples = await collect(streamSamples(store, runId, 'car/state'));
          assert.ok(
            samples.length >= acked,
            `round ${round}: ${samples.length} stored, ${acked} acknowledged`,
          );
          for (let i = 0; i < samples.length; i++) assert.deepEqual(samples[i], crashSample(i));
          assert.equal(run.end, samples.at(-1)!.t);
          const report = await store.checkIntegrity();
          assert.deepEqual(report.problems, [], `round ${round}: the integrity check finds nothing`);
          assert.equal(report.samples, samples.length);
          t.diagnostic(
            `round ${round}: killed after ${acks} acks (${acked} samples acknowledged, ${samples.length} stored)`,
          );
        } finally {
          await store.close();
        }
      }
    });
  });
}
