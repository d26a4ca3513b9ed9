import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { StoreBackend } from '../src/model/store-port.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { FieldDecl, Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { decodeStateWindow, STATE_WINDOW_MEDIA_TYPE, windowGrid } from '../src/server/state-window-wire.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import { openStore } from '../src/store/open-store.js';
import { SqliteBackend } from '../src/store/sqlite/sqlite-backend.js';
import { sceneAt } from '../src/replay/run-queries.js';
import { recordLaneRun } from './helpers/lane-run.js';
import { fixture, tempDir } from './helpers/paths.js';
import { cliJsonAsync } from './helpers/run-cli.js';
import { WebSocket } from 'ws';

const dir = tempDir('simrec-api-');
let store: StoreBackend;
let server: RunningServer;
let synthetic: number;
let laneRun: number;

async function get(path: string): Promise<{ status: number; body: any; type: string | null }> {
  const response = await fetch(new URL(path, server.url));
  const type = response.headers.get('content-type');
  const body = type?.includes('json') ? await response.json() : await response.text();
  return { status: response.status, body, type };
}

/** A GET with exactly these headers, its body as the bytes that came (node:http decompresses nothing). */
function rawGet(
  path: string,
  headers: Record<string, string>,
): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(new URL(path, server.url), { headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(parts) }));
    })
      .on('error', reject)
      .end();
  });
}

/** The light J1 of a store of its own, its `signal` samples made from the run's begin, served to `ask`. */
async function withServedLight(
  fields: FieldDecl[],
  samplesFrom: (begin: number) => Sample[],
  ask: (
    json: (path: string) => Promise<{ status: number; body: any }>,
    run: number,
    begin: number,
  ) => Promise<void>,
): Promise<void> {
  const own = tempDir('simrec-light-');
  const local = await openStore(join(own.path, 'light.db'));
  const begin = 1_750_000_000_000_000;
  const rec = await RunRecorder.begin(local, { begin });
  await rec.declareActor({ id: 'J1', kind: 'traffic_light' });
  await rec.declareStream({ name: 'signal', actor: 'J1', fields });
  await rec.appendBatch('J1/signal', samplesFrom(begin));
  await rec.end('completed');
  const localServer = await startServer({ store: local, port: 0 });
  try {
    await ask(
      async (path) => {
        const response = await fetch(new URL(path.replace('RUN', String(rec.id)), localServer.url));
        return { status: response.status, body: (await response.json()) as any };
      },
      rec.id,
      begin,
    );
  } finally {
    await localServer.close();
    await local.close();
    own.cleanup();
  }
}

before(async () => {
  store = await openStore(join(dir.path, 'api.db'));
  synthetic = (await recordSyntheticRun(store, { duration: 10 })).id;
  laneRun = (await recordLaneRun(store, fixture('esmini', 'sumo', 'fabriksgatan.net.xml'))).runId;
  server = await startServer({ store, port: 0 });
});
after(async () => {
  await server.close();
  await store.close();
  dir.cleanup();
});

describe('HTTP API', () => {
  it('binds to loopback by default', () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it('lists and describes runs', async () => {
    const runs = await get('/api/runs');
    assert.equal(runs.status, 200);
    assert.deepEqual(
      runs.body.map((r: { id: number }) => r.id),
      [laneRun, synthetic],
    );
    const detail = await get(`/api/runs/${laneRun}`);
    assert.equal(detail.body.hasRoadNetwork, true);
    assert.deepEqual(
      detail.body.actors.map((a: { id: string }) => a.id),
      ['ego', 'car1', 'car2'],
    );
    assert.equal((await get(`/api/runs/${synthetic}`)).body.hasRoadNetwork, false);
  });

  it('describes a run with each list of fields once (fields=shared), the same detail once each stream has its list back', async () => {
    for (const run of [laneRun, synthetic]) {
      const full = (await get(`/api/runs/${run}`)).body;
      const shared = await get(`/api/runs/${run}?fields=shared`);
      assert.equal(shared.status, 200);
      const { fieldLists, ...rest } = shared.body as {
        fieldLists: FieldDecl[][];
        streams: { fields: number }[];
      };
      const distinct = new Set(full.streams.map((s: { fields: FieldDecl[] }) => JSON.stringify(s.fields)));
      assert.equal(fieldLists.length, distinct.size, `run ${run}: each list once`);
      assert.ok(fieldLists.length < full.streams.length, `run ${run}: ${fieldLists.length} lists`);
      const givenBack = {
        ...rest,
        streams: rest.streams.map((s) => ({ ...s, fields: fieldLists[s.fields] })),
      };
      assert.deepEqual(givenBack, full);
    }
    const refused = await get(`/api/runs/${synthetic}?fields=every`);
    assert.equal(refused.status, 400);
    assert.match(refused.body.error, /query parameter fields: expected shared .* got "every"/);
  });

  it("speaks the command line's JSON: a run is the run itself, info is GET /runs/:id, --at is ?at=", async () => {
    const env = { SIMREC_STORE: join(dir.path, 'api.db') };
    const info = await cliJsonAsync<Record<string, unknown>>(['info', String(laneRun), '--json'], env);
    const {
      hasRoadNetwork: _h,
      evaluation: _e,
      attachmentsVersion: _v,
      ...detail
    } = (await get(`/api/runs/${laneRun}`)).body;
    assert.deepEqual(info, detail);
    const listed = await cliJsonAsync<Record<string, unknown>[]>(['ls', '--json'], env);
    const api = (await get('/api/runs')).body as Record<string, unknown>[];
    assert.deepEqual(
      listed,
      api.map(({ score: _s, ...rest }) => rest),
    );
    for (const entry of listed) {
      assert.equal(typeof entry.actorCount, 'number', 'counts say they are counts');
      assert.ok(!('actors' in entry), '`actors` is always the list of actors');
    }
    const cliScene = await cliJsonAsync(['scene', String(synthetic), '--at', '2.5', '--json'], env);
    assert.deepEqual(cliScene, (await get(`/api/runs/${synthetic}/scene?at=2.5`)).body);
    const evaluated = await cliJsonAsync<{ run: { id: number } }>(['eval', String(synthetic), '--json'], env);
    assert.deepEqual(evaluated.run, (await get(`/api/runs/${synthetic}`)).body.run);
  });

  it('serves a state window as the sample objects have it: a number where a sample has one, null elsewhere, across chunks', async () => {
    const own = tempDir('simrec-states-');
    const local = await openStore(join(own.path, 'states.db'));
    const begin = 1_750_000_000_000_000;
    const rec = await RunRecorder.begin(local, { begin });
    await rec.declareActors(['a1', 'a2', 'a3'].map((id) => ({ id, kind: 'vehicle' })));
    const number = (name: string, optional = false): FieldDecl => ({ name, type: 'f64', optional });
    await rec.declareStreams([
      stateStream('a1'),
      {
        name: 'state',
        actor: 'a2',
        fields: [number('x'), number('y'), number('yaw', true), number('speed', true)],
      },
      // Fields the viewer cannot play: a bool yaw (a sample gives booleans) and a json speed.
      {
        name: 'state',
        actor: 'a3',
        fields: [number('x'), number('y'), { name: 'yaw', type: 'bool' }, { name: 'speed', type: 'json' }],
      },
    ]);
    // 3,000 samples at 100 Hz: a sealed chunk and the rest, for every actor.
    // Not awaited, as a simulator appends: flush and end report a failure.
    for (let i = 0; i < 3000; i++) {
      const t = begin + i * 10_000;
      void rec.append('a1/state', {
        t,
        step: i,
        x: i * 0.5,
        y: -i,
        yaw: Math.sin(i),
        speed: i % 7 ? 3 + i * 1e-3 : -0,
      });
      const a2: Sample = { t, step: i, x: i, y: 2 * i };
      if (i % 5 !== 0) a2.yaw = i / 100;
      if (i % 3 !== 1) a2.speed = 1e-310 * i;
      void rec.append('a2/state', a2);
      void rec.append('a3/state', {
        t,
        step: i,
        x: i,
        y: i,
        yaw: i % 2 === 0,
        speed: i % 4 ? i : `fast ${i}`,
      });
      if (i % 500 === 499) await rec.flush();
    }
    await rec.end('completed');
    const localServer = await startServer({ store: local, port: 0 });
    try {
      for (const [from, to] of [
        [begin, begin + 40_000_000],
        [begin + 5_005_000, begin + 25_300_000],
        [begin + 29_995_000, begin + 31_000_000],
        [begin + 40_000_000, begin + 41_000_000],
      ] as const) {
        const expected: Record<string, Record<string, (number | null)[]>> = {};
        for (const actor of ['a1', 'a2', 'a3']) {
          const columns: Record<string, (number | null)[]> = { t: [], x: [], y: [], yaw: [], speed: [] };
          for await (const batch of local.readSamples({ run: rec.id, stream: `${actor}/state`, from, to }))
            for (const sample of batch) {
              columns.t!.push(sample.t);
              for (const f of ['x', 'y', 'yaw', 'speed'])
                columns[f]!.push(typeof sample[f] === 'number' ? sample[f] : null);
            }
          expected[actor] = columns;
        }
        const response = await fetch(
          new URL(`/api/runs/${rec.id}/states?from=${from}&to=${to}`, localServer.url),
        );
        const body = (await response.json()) as { from: number; to: number; actors: typeof expected };
        assert.equal(body.from, from);
        assert.deepEqual(
          body.actors,
          JSON.parse(JSON.stringify(expected)),
          `window ${from - begin}..${to - begin}`,
        );
        // The same window as binary columns (what the viewer asks for): NaN where JSON has null,
        // heading and speed as 32-bit numbers.
        const binary = await fetch(
          new URL(`/api/runs/${rec.id}/states?from=${from}&to=${to}&format=columns`, localServer.url),
        );
        assert.equal(binary.headers.get('content-type'), STATE_WINDOW_MEDIA_TYPE);
        const window = decodeStateWindow(await binary.arrayBuffer());
        assert.deepEqual([window.from, window.to], [from, to]);
        assert.deepEqual([...window.actors.keys()], ['a1', 'a2', 'a3']);
        for (const [actor, columns] of Object.entries(expected)) {
          const got = window.actors.get(actor)!;
          const nan = (v: number | null): number => (v === null ? NaN : v);
          for (const f of ['t', 'x', 'y'] as const)
            assert.deepEqual(Array.from(got[f]), columns[f]!.map(nan), `${actor} ${f}`);
          for (const f of ['yaw', 'speed'] as const)
            assert.deepEqual(
              Array.from(got[f]),
              columns[f]!.map((v) => Math.fround(nan(v))),
              `${actor} ${f}`,
            );
        }
      }
      const refused = await fetch(new URL(`/api/runs/${rec.id}/states?format=arrow`, localServer.url));
      assert.equal(refused.status, 400);
      assert.deepEqual(await refused.json(), {
        error: 'query parameter format: expected json or columns, got "arrow"',
        code: 'invalid',
      });
      const whole = await fetch(new URL(`/api/runs/${rec.id}/states`, localServer.url));
      const answer = (await whole.json()) as { actors: Record<string, Record<string, unknown[]>> };
      assert.equal(answer.actors.a2!.t!.length, 3000);
      assert.equal(answer.actors.a2!.yaw![5], null, 'absent');
      assert.equal(answer.actors.a2!.speed![3], 3e-310, 'a subnormal, kept');
      assert.ok(
        answer.actors.a3!.yaw!.every((v) => v === null),
        'a bool is not a heading',
      );
      assert.deepEqual(answer.actors.a3!.speed!.slice(0, 5), [null, 1, 2, 3, null]);
    } finally {
      await localServer.close();
      await local.close();
      own.cleanup();
    }
  });

  it('answers a stream where its values change (changes=1): a traffic light as its switches', async () => {
    // 10 Hz for 100 s: green 30 s, yellow 4 s, red 26 s, and a phase object that changes with them.
    const colour = (i: number): string =>
      ['GGrr', 'yyrr', 'rrGG'][i % 600 < 300 ? 0 : i % 600 < 340 ? 1 : 2]!;
    let samples: Sample[] = [];
    const fields: FieldDecl[] = [
      { name: 'state', type: 'string' },
      { name: 'phase', type: 'json', optional: true },
    ];
    const samplesFrom = (begin: number): Sample[] =>
      (samples = Array.from({ length: 1000 }, (_, i) => ({
        t: begin + i * 100_000,
        step: i,
        state: colour(i),
        phase: { index: ['GGrr', 'yyrr', 'rrGG'].indexOf(colour(i)), program: [0] },
      })));
    await withServedLight(fields, samplesFrom, async (json, _run, begin) => {
      const switches = samples.filter((s, i) => i === 0 || s.state !== samples[i - 1]!.state);
      assert.deepEqual(
        switches.map((s) => s.step),
        [0, 300, 340, 600, 900, 940],
      );
      const changes = await json(`/api/runs/RUN/samples?stream=J1%2Fsignal&changes=1`);
      assert.deepEqual(changes.body, { stream: 'J1/signal', samples: switches, next: null });
      // Paged: a page after the first begins with its own first sample, whatever the one before held.
      const first = await json(`/api/runs/RUN/samples?stream=J1%2Fsignal&changes=1&limit=2`);
      assert.deepEqual(
        first.body.samples.map((s: Sample) => s.step),
        [0, 300],
      );
      assert.equal(first.body.next, begin + 340 * 100_000);
      const windowed = await json(
        `/api/runs/RUN/samples?stream=J1%2Fsignal&changes=1&from=${begin + 50 * 100_000}&to=${begin + 650 * 100_000}`,
      );
      assert.deepEqual(
        windowed.body.samples.map((s: Sample) => s.step),
        [50, 300, 340, 600],
      );
      const plain = await json(`/api/runs/RUN/samples?stream=J1%2Fsignal&changes=0`);
      assert.equal(plain.body.samples.length, 1000);
      const refused = await json(`/api/runs/RUN/samples?stream=J1%2Fsignal&changes=yes`);
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error, 'query parameter changes: expected 0 or 1, got "yes"');
    });
  });

  it('answers a stream with only the fields asked for (fields=), its changes judged on them: a light that counts down as its switches', async () => {
    const fields: FieldDecl[] = [
      { name: 'state', type: 'string' },
      { name: 'phase', type: 'i32' },
      { name: 'timeToSwitch', type: 'f64', unit: 's' },
    ];
    // As SUMO's and the demo's lights: the countdown to the next switch changes at every sample.
    const cycle = [300, 40, 260];
    const samplesFrom = (begin: number): Sample[] =>
      Array.from({ length: 1000 }, (_, i) => {
        const inCycle = i % 600;
        const phase = inCycle < 300 ? 0 : inCycle < 340 ? 1 : 2;
        const phaseEnd = cycle.slice(0, phase + 1).reduce((a, b) => a + b, 0);
        return {
          t: begin + i * 100_000,
          step: i,
          state: ['GGrr', 'yyrr', 'rrGG'][phase]!,
          phase,
          timeToSwitch: (phaseEnd - inCycle) / 10,
        };
      });
    await withServedLight(fields, samplesFrom, async (json, run, begin) => {
      const path = `/api/runs/RUN/samples?stream=J1%2Fsignal`;
      const everyOne = await json(`${path}&changes=1`);
      assert.equal(everyOne.body.samples.length, 1000, 'every sample differs from the one before it');
      const switches = await json(`${path}&changes=1&fields=state`);
      const states = samplesFrom(begin);
      assert.deepEqual(switches.body, {
        stream: 'J1/signal',
        samples: [0, 300, 340, 600, 900, 940].map((i) => ({
          t: begin + i * 100_000,
          step: i,
          state: states[i]!.state,
        })),
        next: null,
      });
      const two = await json(
        `${path}&fields=phase,state&from=${begin + 299 * 100_000}&to=${begin + 300 * 100_000}`,
      );
      assert.deepEqual(two.body.samples, [
        { t: begin + 299 * 100_000, step: 299, state: 'GGrr', phase: 0 },
        { t: begin + 300 * 100_000, step: 300, state: 'yyrr', phase: 1 },
      ]);
      const unknown = await json(`${path}&fields=state,colour`);
      assert.equal(unknown.status, 400);
      assert.equal(
        unknown.body.error,
        `fields: stream J1/signal of run ${run} has no field "colour" (it has t, step, state, phase, timeToSwitch)`,
      );
      // t and step may be named (every sample has them), a field named twice is given once.
      const named = await json(`${path}&fields=t,state,step,state&to=${begin + 100_000}`);
      assert.deepEqual(named.body.samples, [
        { t: begin, step: 0, state: 'GGrr' },
        { t: begin + 100_000, step: 1, state: 'GGrr' },
      ]);
      const empty = await json(`${path}&fields=state,`);
      assert.equal(empty.status, 400);
      assert.equal(
        empty.body.error,
        'query parameter fields: expected field names separated by commas, got "state,"',
      );
      const noStream = await json(`/api/runs/RUN/samples?stream=J9%2Fsignal&fields=state`);
      assert.equal(noStream.status, 404);
    });
  });

  it('answers a scene from the blocks holding its moment, never a whole chunk: an inspector asking as a page plays holds no other page up', async () => {
    const own = tempDir('simrec-scene-blocks-');
    const path = join(own.path, 'scene.db');
    const writing = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const rec = await RunRecorder.begin(writing, { begin: 0 });
    await rec.declareActors(['a', 'b'].map((id) => ({ id, kind: 'vehicle' })));
    await rec.declareStreams(['a', 'b'].map((id) => stateStream(id)));
    for (let step = 0; step < 1000; step++)
      await rec.appendFrame('state', {
        t: step * 10_000,
        step,
        actors: ['a', 'b'],
        columns: { x: [step, -step], y: [0, 0], yaw: [0, 0] },
      });
    await rec.end('completed');
    await writing.close();
    const local = SqliteBackend.open(path);
    const localServer = await startServer({ store: local, port: 0 });
    // White-box: which chunks the store's cache holds decoded whole.
    const file = (local as unknown as { file: { db: { prepare(sql: string): { all(): { id: number }[] } } } })
      .file;
    const cache = (local as unknown as { file: { cache: { cachedWhole(id: number): unknown } } }).file.cache;
    const chunks = file.db.prepare('SELECT id FROM chunks').all();
    assert.ok(chunks.length >= 10, `${chunks.length} chunks`);
    const wholes = (): number => chunks.filter(({ id }) => cache.cachedWhole(id) !== undefined).length;
    try {
      // Blocks 0, 2 and 3 of the first chunks, and of the far ones, back and forth, as a playing page's
      // inspector asks: a reader with read-ahead would have read them on whole at the second.
      for (const step of [5, 130, 195, 3, 700, 790, 705, 131]) {
        const response = await fetch(
          new URL(`/api/runs/${rec.id}/scene?t=${step * 10_000 + 5_000}&interpolate=1`, localServer.url),
        );
        const scene = (await response.json()) as { actors: { id: string; x: number }[] };
        assert.deepEqual(
          scene.actors.map((a) => [a.id, a.x]),
          [
            ['a', step + 0.5],
            ['b', -step - 0.5],
          ],
        );
      }
      assert.equal(wholes(), 0, 'no chunk decoded whole');
      // Read in the library's default way, two blocks of the next chunks are enough to read them on.
      for (const step of [205, 340])
        await sceneAt(local, rec.id, { t: step * 10_000 + 5_000, interpolate: true });
      assert.ok(wholes() > 0, 'a reader moving about the run reads on');
    } finally {
      await localServer.close();
      await local.close();
      own.cleanup();
    }
  });

  it('answers no route with a whole run: /states a minute by default and 500,000 samples at most, /samples and /trajectory 100,000 at a time, saying where the rest begins', async () => {
    const own = tempDir('simrec-bounded-');
    const local = await openStore(join(own.path, 'bounded.db'));
    const begin = 1_750_000_000_000_000;
    const rec = await RunRecorder.begin(local, { begin });
    await rec.declareActors(['a1', 'a2'].map((id) => ({ id, kind: 'vehicle' })));
    await rec.declareStreams(
      ['a1', 'a2'].map((actor) => ({ name: 'state', actor, fields: [{ name: 'x', type: 'f64' as const }] })),
    );
    // Five minutes at 1 kHz: 300,000 samples an actor. The times stand still in threes from 200,000 on.
    const n = 300_000;
    const timeOf = (i: number): number =>
      begin + (i < 200_000 ? i : 200_000 + Math.floor((i - 200_000) / 3) * 3) * 1000;
    for (let k = 0; k < n; k += 10_000) {
      const t = Float64Array.from({ length: 10_000 }, (_, i) => timeOf(k + i));
      const x = Float64Array.from(t, (_, i) => k + i);
      for (const actor of ['a1', 'a2'])
        await rec.appendColumns(`${actor}/state`, { t, step: x, columns: { x } });
    }
    await rec.end('completed');
    const localServer = await startServer({ store: local, port: 0 });
    const fetchJson = async (path: string): Promise<{ status: number; body: any; bytes: number }> => {
      const response = await fetch(new URL(path, localServer.url));
      const text = await response.text();
      return { status: response.status, body: JSON.parse(text), bytes: text.length };
    };
    try {
      // Without `to`: a minute from `from` (the run's begin), not the five.
      const minute = await fetchJson(`/api/runs/${rec.id}/states`);
      assert.equal(minute.status, 200);
      assert.deepEqual([minute.body.from, minute.body.to], [begin, begin + 60_000_000 - 1]);
      assert.equal(minute.body.actors.a1.t.length, 60_000);
      assert.equal(minute.body.actors.a2.x.at(-1), 59_999);
      // The whole run asked for: 600,000 samples, over the limit, refused.
      const whole = await fetchJson(`/api/runs/${rec.id}/states?from=${begin}&to=${begin + 400_000_000}`);
      assert.equal(whole.status, 400);
      assert.equal(
        whole.body.error,
        `states of run ${rec.id} from ${begin} to ${begin + 400_000_000}: more than 500000 samples in the window; ask for a shorter one (to - from)`,
      );

      // The window holding a moment, cut as the viewer cuts the run (state-window-wire.ts): 2,000
      // samples a second over the two actors, so windows of 15 s (30,000 samples) from the first sample.
      const grid = windowGrid(await local.listActors(rec.id), await local.listStreams(rec.id));
      assert.deepEqual(grid, { begin, micros: 15_000_000 });
      for (const [query, from] of [
        ['moment=12.5', begin],
        ['moment=100', begin + 90_000_000],
        [`around=${begin + 299_999_999}`, begin + 285_000_000],
      ] as const) {
        const answer = await fetch(
          new URL(`/api/runs/${rec.id}/states?${query}&format=columns`, localServer.url),
        );
        const window = decodeStateWindow(await answer.arrayBuffer());
        assert.deepEqual([window.from, window.to], [from, from + 14_999_999], query);
        const t = window.actors.get('a1')!.t;
        assert.ok(t[0]! >= from && t[0]! < from + 3000 && t.at(-1)! <= window.to, query);
      }
      for (const [query, error] of [
        [
          'moment=-1',
          "query parameter moment: expected seconds from the run's first sample (a number >= 0), got -1",
        ],
        [`moment=1&around=${begin}`, 'query parameter around and query parameter moment: give one'],
        ['moment=soon', 'query parameter moment: expected a number, got "soon"'],
      ] as const) {
        const answer = await fetch(new URL(`/api/runs/${rec.id}/states?${query}`, localServer.url));
        assert.equal(answer.status, 400, query);
        assert.equal(((await answer.json()) as { error: string }).error, error);
      }
      // The same windows on the live channel: a binary frame (the request's number, four zero bytes,
      // the window's bytes as GET /states?format=columns answers them); errors as states-error.
      // Without compression: a compressing client's messages are inflated one at a time, and the refusal
      // of a fifth window asked at once needs four being read (compression has its own test below).
      const live = new WebSocket(new URL('/api/live', localServer.url.replace('http', 'ws')), {
        perMessageDeflate: false,
      });
      const frames: Buffer[] = [];
      const texts: any[] = [];
      live.on('message', (data: Buffer, isBinary: boolean) =>
        isBinary ? frames.push(data) : texts.push(JSON.parse(data.toString())),
      );
      await new Promise((resolve) => live.once('open', resolve));
      const until = async (check: () => boolean): Promise<void> => {
        for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
        assert.ok(check(), 'answered');
      };
      const errors = () => texts.filter((m) => m.type === 'states-error');
      live.send(JSON.stringify({ type: 'states', request: 7, run: rec.id, moment: 100 }));
      live.send(JSON.stringify({ type: 'states', request: 8, run: rec.id, from: begin, to: begin + 999 }));
      await until(() => frames.length === 2);
      for (const [frame, query] of [
        [frames.find((f) => f.readUInt32LE(0) === 7)!, 'moment=100'],
        [frames.find((f) => f.readUInt32LE(0) === 8)!, `from=${begin}&to=${begin + 999}`],
      ] as const) {
        const http = await fetch(
          new URL(`/api/runs/${rec.id}/states?${query}&format=columns`, localServer.url),
        );
        assert.deepEqual(frame.subarray(8), Buffer.from(await http.arrayBuffer()), query);
        assert.equal(frame.readUInt32LE(4), 0);
      }
      for (const [message, error] of [
        ['not json', 'live channel: a message that is not JSON'],
        [{ type: 'play', request: 1 }, 'live channel: message type "play"; expected "states" or "cancel"'],
        [
          { type: 'states', request: -1, run: rec.id },
          "states message's request: expected a whole number >= 0, got -1",
        ],
        [
          { type: 'states', request: 9, run: rec.id, from: 'soon' },
          `states message's from: expected an integer (microseconds), got "soon"`,
        ],
        [
          { type: 'states', request: 10, run: rec.id, moment: 1, around: begin },
          "states message's around and states message's moment: give one",
        ],
        [{ type: 'states', request: 11, run: 999 }, `run 999 does not exist in ${local.location}`],
        [
          { type: 'states', request: 12, run: rec.id, from: begin, to: begin + 400_000_000 },
          `states of run ${rec.id} from ${begin} to ${begin + 400_000_000}: more than 500000 samples in the window; ask for a shorter one (to - from)`,
        ],
      ] as const) {
        const before = errors().length;
        live.send(typeof message === 'string' ? message : JSON.stringify(message));
        await until(() => errors().length > before);
        assert.equal(errors().at(-1).error, error);
      }
      // More than four at once: the fifth is refused; a cancelled one is never answered.
      const asked = frames.length;
      for (let request = 20; request < 25; request++)
        live.send(JSON.stringify({ type: 'states', request, run: rec.id, moment: request }));
      live.send(JSON.stringify({ type: 'cancel', request: 21 }));
      await until(() => errors().some((e) => e.request === 24));
      assert.equal(
        errors().find((e) => e.request === 24).error,
        'states message: more than 4 windows asked for at once; wait for one',
      );
      await until(() => frames.length >= asked + 3);
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(
        frames
          .slice(asked)
          .map((f) => f.readUInt32LE(0))
          .sort(),
        [20, 22, 23],
      );
      live.close();

      // A client that asks and never reads is cut once 4 MiB of its answers wait, not buffered for.
      const greedy = new WebSocket(new URL('/api/live', localServer.url.replace('http', 'ws')), {
        perMessageDeflate: false,
      });
      await new Promise((resolve) => greedy.once('open', resolve));
      (greedy as unknown as { _socket: { pause(): void } })._socket.pause();
      let closed = false;
      greedy.on('close', () => (closed = true));
      // Windows of 15 s, about a megabyte each; the server never holds more than four asked at once.
      for (let request = 0; request < 200 && !closed; request++) {
        greedy.send(JSON.stringify({ type: 'states', request, run: rec.id, moment: (request % 20) * 15 }));
        await new Promise((r) => setTimeout(r, 20));
      }
      const health = await fetch(new URL('/api/health', localServer.url));
      assert.equal(health.status, 200, 'the server answers others meanwhile');
      await until(() => closed);

      // /samples and /trajectory: pages of at most `limit`, each ending where a time ends; `next` goes on.
      for (const [route, limit, pages] of [
        [`/api/runs/${rec.id}/samples?stream=a1%2Fstate`, 100_000, 3],
        [`/api/runs/${rec.id}/trajectory/a2?`, 100_000, 3],
        [`/api/runs/${rec.id}/samples?stream=a1%2Fstate&limit=7`, 7, 0],
      ] as const) {
        const seen: number[] = [];
        let next: number | null = begin + 199_990_000;
        let asked = 0;
        if (pages) next = null;
        do {
          const page = await fetchJson(`${route}&limit=${limit}${next === null ? '' : `&from=${next}`}`);
          assert.equal(page.status, 200, JSON.stringify(page.body));
          assert.ok(page.body.samples.length <= limit, `${route}: ${page.body.samples.length} samples`);
          if (page.body.next !== null) assert.ok(page.body.samples.at(-1).t < page.body.next);
          for (const sample of page.body.samples) seen.push(sample.x);
          next = page.body.next;
          asked++;
        } while (next !== null && (pages || asked < 20));
        if (pages) {
          assert.equal(asked, pages, `${route}: ${n} samples in pages of ${limit}`);
          assert.deepEqual(
            seen,
            Array.from({ length: n }, (_, i) => i),
            `${route}: each sample once, in order`,
          );
        } else {
          // Pages of 7 where times come in threes: 6 a page, never a time cut in two.
          assert.deepEqual(
            seen.slice(0, 18),
            Array.from({ length: 18 }, (_, i) => 199_990 + i),
          );
          assert.equal(asked, 20);
        }
      }
      const first = await fetchJson(`/api/runs/${rec.id}/samples?stream=a1%2Fstate`);
      assert.equal(first.body.samples.length, 100_000);
      assert.equal(first.body.next, begin + 100_000_000);
      assert.ok(first.bytes < 10_000_000, `${first.bytes} bytes`);
      for (const [path, says] of [
        [
          `/api/runs/${rec.id}/samples?stream=a1%2Fstate&limit=0`,
          /query parameter limit: expected 1 to 100000 samples, got 0/,
        ],
        [`/api/runs/${rec.id}/samples?stream=a1%2Fstate&limit=100001`, /got 100001/],
        [
          `/api/runs/${rec.id}/samples?stream=a1%2Fstate&limit=2&from=${begin + 200_000_000}`,
          /more than 2 samples at t=\d+; ask with a larger limit/,
        ],
        [`/api/runs/${rec.id}/trajectory/nobody`, /run \d+ has no actor "nobody"/],
      ] as const) {
        const r = await fetchJson(path);
        assert.ok(r.status === 400 || r.status === 404, `${path}: ${r.status}`);
        assert.match(r.body.error, says);
      }
    } finally {
      await localServer.close();
      await local.close();
      own.cleanup();
    }
  });

  it('serves states column by column, scenes, samples and trajectories', async () => {
    const run = (await get(`/api/runs/${synthetic}`)).body.run;
    const states = await get(`/api/runs/${synthetic}/states?from=${run.begin}&to=${run.begin + 1_000_000}`);
    assert.equal(states.body.actors.ego.t.length, 11);
    assert.deepEqual(Object.keys(states.body.actors.ego), ['t', 'x', 'y', 'yaw', 'speed']);
    const scene = await get(`/api/runs/${synthetic}/scene?t=${run.begin + 2_050_000}&interpolate=1`);
    assert.equal(scene.body.actors.length, 7);
    assert.equal(scene.body.actors[0].t, run.begin + 2_050_000);
    const samples = await get(
      `/api/runs/${synthetic}/samples?stream=${encodeURIComponent('ego/control')}&to=${run.begin + 200_000}`,
    );
    assert.deepEqual(
      samples.body.samples.map((s: { step: number }) => s.step),
      [0, 1, 2],
    );
    const traj = await get(
      `/api/runs/${synthetic}/trajectory/veh1?from=${run.begin}&to=${run.begin + 500_000}`,
    );
    assert.equal(traj.body.samples.length, 6);
  });

  it('compresses its answers for a client that accepts it: gzip over HTTP, permessage-deflate on the live channel', async () => {
    const run = (await get(`/api/runs/${synthetic}`)).body.run;
    const window = `/api/runs/${synthetic}/states?from=${run.begin}&to=${run.begin + 5_000_000}&format=columns`;
    for (const path of [`/api/runs/${synthetic}`, window, '/']) {
      const plain = await rawGet(path, {});
      assert.equal(plain.headers['content-encoding'], undefined, path);
      const zipped = await rawGet(path, { 'accept-encoding': 'gzip, deflate, br' });
      assert.equal(zipped.headers['content-encoding'], 'gzip', path);
      assert.match(String(zipped.headers.vary), /accept-encoding/i, path);
      assert.equal(zipped.headers['x-content-type-options'], 'nosniff', `${path}: the security headers too`);
      assert.deepEqual(gunzipSync(zipped.body), plain.body, path);
      // Compressed whole, not as a stream whose last bytes wait for the server's thread to come free
      // (answer-compression.ts): a page's window was held behind another page's reads.
      assert.equal(zipped.headers['transfer-encoding'], undefined, `${path}: sent whole`);
      assert.equal(Number(zipped.headers['content-length']), zipped.body.length, `${path}: its length told`);
      assert.ok(
        zipped.body.length < plain.body.length * 0.8,
        `${path}: ${zipped.body.length} bytes gzipped of ${plain.body.length}`,
      );
    }
    const small = await rawGet('/api/health', { 'accept-encoding': 'gzip' });
    assert.equal(small.headers['content-encoding'], undefined, 'an answer under 1 KB goes as it is');

    // The live channel: a window asked by a client that offers compression (as every browser does) is
    // the same bytes as over HTTP, fewer of them on the wire.
    const live = new WebSocket(new URL('/api/live', server.url.replace('http', 'ws')));
    const runList = new Promise((resolve) => live.once('message', resolve));
    await new Promise((resolve) => live.once('open', resolve));
    assert.match(live.extensions, /^permessage-deflate/);
    const socket = (live as unknown as { _socket: { bytesRead: number } })._socket;
    await runList;
    const before = socket.bytesRead;
    const frame = new Promise<Buffer>((resolve) =>
      live.on('message', (data: Buffer, isBinary: boolean) => isBinary && resolve(data)),
    );
    live.send(
      JSON.stringify({
        type: 'states',
        request: 1,
        run: synthetic,
        from: run.begin,
        to: run.begin + 5_000_000,
      }),
    );
    const answer = await frame;
    const http = (await rawGet(window, {})).body;
    assert.deepEqual(answer.subarray(8), http);
    const wire = socket.bytesRead - before;
    assert.ok(wire < http.length * 0.8, `${wire} bytes on the wire for a window of ${http.length}`);
    live.close();
  });

  it("writes a run's detail once for the requests that arrive while it is written, and afresh after", async () => {
    // The real store, its attachment lists counted (describing a run lists them once) and answered
    // the first time after the server started 2 s late, as a big run's detail takes time to write:
    // the eight requests overlap. (The server's own warm-up before it listens describes a run too.)
    let described = 0;
    let slowNext = false;
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name === 'listAttachments')
          return async (run: number) => {
            described++;
            if (slowNext) {
              slowNext = false;
              await new Promise((resolve) => setTimeout(resolve, 2000));
            }
            return target.listAttachments(run);
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const viewed = await startServer({ store: counted, port: 0 });
    described = 0;
    slowNext = true;
    try {
      const detail = () => fetch(new URL(`/api/runs/${synthetic}`, viewed.url)).then((r) => r.text());
      const atOnce = await Promise.all(Array.from({ length: 8 }, detail));
      assert.equal(described, 1, 'eight viewers asking at once: one detail written');
      assert.equal(new Set(atOnce).size, 1);
      assert.equal(await detail(), atOnce[0]);
      await detail();
      assert.equal(described, 3, 'asked one after another: written each time');
    } finally {
      await viewed.close();
    }
  });

  it('serves the road network kept with a run, and says when there is none', async () => {
    const net = await get(`/api/runs/${laneRun}/roadnet`);
    assert.equal(net.status, 200);
    assert.equal(net.body.format, 'sumo');
    assert.ok(net.body.lanes.length > 0);
    const none = await get(`/api/runs/${synthetic}/roadnet`);
    assert.equal(none.status, 404);
    assert.match(none.body.error, new RegExp(`run ${synthetic} has no road network`));
  });

  it('answers bad requests with a JSON error and the right status, and keeps serving', async () => {
    const cases: [string, number, RegExp][] = [
      ['/api/runs/4242', 404, /run 4242 does not exist/],
      ['/api/runs/abc', 400, /run id: expected a positive integer, got "abc"/],
      [
        `/api/runs/${synthetic}/scene`,
        400,
        /query parameter t \(microseconds since the epoch\) or at .*: required/,
      ],
      [
        `/api/runs/${synthetic}/scene?at=-1`,
        400,
        /query parameter at: expected seconds from the run's begin/,
      ],
      [
        `/api/runs/${synthetic}/scene?t=soon`,
        400,
        /query parameter t: expected an integer \(microseconds\), got "soon"/,
      ],
      [`/api/runs/${synthetic}/samples`, 400, /query parameter stream: required/],
      [`/api/runs/${synthetic}/samples?stream=nope`, 404, /has no stream "nope"/],
      [`/api/runs/${synthetic}/attachment?name=..%2F..%2Fetc%2Fpasswd`, 404, /has no attachment/],
      ['/api/nothing', 404, /no such API route: GET \/api\/nothing/],
    ];
    for (const [path, status, pattern] of cases) {
      const r = await get(path);
      assert.equal(r.status, status, path);
      assert.match(r.body.error, pattern, path);
    }
    assert.equal((await get('/api/health')).body.store.kind, 'sqlite');
  });

  it('keeps the record-every-run switch, refusing bad values', async () => {
    assert.deepEqual((await get('/api/settings')).body, { recordEveryRun: true });
    const put = async (body: string) =>
      fetch(new URL('/api/settings', server.url), {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const off = await put('{"recordEveryRun": false}');
    assert.deepEqual(await off.json(), { recordEveryRun: false });
    assert.equal(server.settings.get().recordEveryRun, false, 'the ingest side sees the same switch');
    const bad = await put('{"recordEveryRun": "no"}');
    assert.equal(bad.status, 400);
    assert.match(
      ((await bad.json()) as { error: string }).error,
      /settings.recordEveryRun: expected a boolean, got "no"/,
    );
    const unknown = await put('{"autoDelete": true}');
    assert.match(((await unknown.json()) as { error: string }).error, /settings.autoDelete: unknown setting/);
    assert.equal((await put('not json')).status, 400);
    await put('{"recordEveryRun": true}');
  });

  it('with a token, refuses the API and the live channel to whoever lacks it', async () => {
    const guarded = await startServer({ store, port: 0, apiToken: 's3cret' });
    try {
      const at = (path: string, headers: Record<string, string> = {}) =>
        fetch(new URL(path, guarded.url), { headers });
      const refused = await at('/api/runs');
      assert.equal(refused.status, 401);
      assert.match(((await refused.json()) as { error: string }).error, /requires a token/);
      assert.equal((await at('/api/runs', { authorization: 'Bearer wrong' })).status, 401);
      assert.equal((await at('/api/runs', { authorization: 'Bearer s3cret' })).status, 200);
      assert.equal((await at('/api/runs?token=s3cret')).status, 200);
      assert.equal((await at('/')).status, 200, 'the page itself is public; it holds no data');
      const live = (query: string) =>
        new Promise<string>((resolve) => {
          const ws = new WebSocket(new URL(`/api/live${query}`, guarded.url.replace('http', 'ws')));
          ws.on('message', () => (ws.close(), resolve('open')));
          ws.on('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
          ws.on('error', () => resolve('error'));
        });
      assert.equal(await live(''), '401');
      assert.equal(await live('?token=s3cret'), 'open');
    } finally {
      await guarded.close();
    }
  });

  it('serves the viewer for page paths', async () => {
    const page = await get('/');
    assert.equal(page.status, 200);
    assert.match(page.body, /<title>simrec viewer<\/title>/);
  });

  it("lets a browser keep the viewer's content-named files for good and asks it to check the page each time", async () => {
    const page = await fetch(new URL('/', server.url));
    const html = await page.text();
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    // The files vite named after their content, as the page links them (./assets/index-<hash>.js).
    const assets = [...html.matchAll(/(?:src|href)="\.?\/(assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert.ok(assets.some((a) => a.endsWith('.js')) && assets.some((a) => a.endsWith('.css')), html);
    for (const asset of assets) {
      const answer = await fetch(new URL(asset, server.url));
      await answer.arrayBuffer();
      assert.equal(answer.status, 200, asset);
      assert.equal(answer.headers.get('cache-control'), 'public, max-age=31536000, immutable', asset);
    }
    // Page paths get the page, never kept without asking; the API's answers are not the viewer's files.
    for (const path of ['/index.html', '/runs/3', '/assets/no-such-file.js']) {
      const answer = await fetch(new URL(path, server.url));
      await answer.arrayBuffer();
      assert.equal(answer.headers.get('cache-control'), 'no-cache', path);
    }
    const api = await fetch(new URL('/api/runs', server.url));
    await api.arrayBuffer();
    assert.ok(!String(api.headers.get('cache-control')).includes('immutable'));
  });
});

describe('a server asks itself for a page of the newest run before it listens (viewer-warm-up.ts)', () => {
  /** A store of its own holding two demo runs, served with a token; `damage` runs on the file first. */
  async function servedDemoRuns(damage?: (path: string, newest: number) => void) {
    const own = tempDir('simrec-warm-');
    const path = join(own.path, 'warm.db');
    const local = await openStore(path);
    await recordSyntheticRun(local, { duration: 4 });
    const newest = (await recordSyntheticRun(local, { duration: 4 })).id;
    await local.close();
    damage?.(path, newest);
    const reopened = await openStore(path);
    const served = await startServer({ store: reopened, port: 0, apiToken: 's3cret' });
    const ask = (p: string) => fetch(new URL(p, served.url), { headers: { authorization: 'Bearer s3cret' } });
    return {
      served,
      newest,
      ask,
      close: async () => {
        await served.close();
        await reopened.close();
        own.cleanup();
      },
    };
  }

  it("the newest run's detail, the window of its middle and its road network, with the server's token", async () => {
    const { served, newest, ask, close } = await servedDemoRuns();
    try {
      const moment = served.warmedUp.find((p) => p.startsWith(`/api/runs/${newest}/states?`));
      assert.match(moment ?? '', /moment=[1-9][\d.]*&format=columns$/, "a window past the run's begin");
      const expected = [`/api/runs/${newest}?fields=shared&captures=apart`, moment!];
      if ((await ask(`/api/runs/${newest}/roadnet`)).status === 200)
        expected.push(`/api/runs/${newest}/roadnet`);
      assert.deepEqual([...served.warmedUp].sort(), expected.sort());
      // Asked through the server's own routes: the token still guards every other request.
      assert.equal((await fetch(new URL(`/api/runs/${newest}`, served.url))).status, 401);
    } finally {
      await close();
    }
  });

  it('a run it cannot read leaves the server starting and the page told which chunk is damaged', async () => {
    const { served, newest, ask, close } = await servedDemoRuns((path, run) => {
      const db = new Database(path);
      // Every chunk of the run's streams with a byte flipped past its header.
      const rows = db
        .prepare(
          `SELECT c.id, c.data FROM chunks c JOIN streams s ON s.key = c.stream_key WHERE s.run_id = ?`,
        )
        .all(run) as { id: number; data: Buffer }[];
      for (const row of rows) {
        row.data.writeUInt8(row.data.readUInt8(row.data.length - 3) ^ 0xff, row.data.length - 3);
        db.prepare('UPDATE chunks SET data = ? WHERE id = ?').run(row.data, row.id);
      }
      db.close();
    });
    try {
      assert.ok(
        served.warmedUp.includes(`/api/runs/${newest}?fields=shared&captures=apart`),
        'the detail reads no chunk',
      );
      assert.ok(!served.warmedUp.some((p) => p.includes('/states?')), served.warmedUp.join(', '));
      assert.equal((await ask('/api/health')).status, 200);
      const window = await ask(`/api/runs/${newest}/states?moment=1&format=columns`);
      assert.ok(window.status >= 400, `status ${window.status}`);
      assert.match(((await window.json()) as { error: string }).error, /chunk \d+/);
    } finally {
      await close();
    }
  });

  it('an empty store: nothing asked, the server up', async () => {
    const own = tempDir('simrec-warm-empty-');
    const local = await openStore(join(own.path, 'empty.db'));
    const served = await startServer({ store: local, port: 0 });
    try {
      assert.deepEqual(served.warmedUp, []);
      assert.equal((await fetch(new URL('/api/health', served.url))).status, 200);
    } finally {
      await served.close();
      await local.close();
      own.cleanup();
    }
  });
});
