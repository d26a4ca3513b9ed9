/**
 * LimSim's sample database (egoTrackingTest.db, LimSim v0.2.0 on CARLA Town05) through simrec and
 * back: every row of its 14 tables, its DDL byte for byte, and the model the second import gives.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportLimSim } from './helpers/formats.js';
import { importLimSim, type LimSimImportResult } from './helpers/formats.js';
import { LIMSIM_TABLES } from '../src/formats/limsim/limsim-schema.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';
import { LIMSIM_FIXTURE, sameValue, tableRows, tableSql, type Row } from './helpers/limsim-files.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-limsim-roundtrip-');
let store: StoreBackend;
let first: LimSimImportResult;
let second: LimSimImportResult;
const exported = join(dir.path, 'exported.db');
const exportWarnings: string[] = [];

before(async () => {
  store = await openStore(join(dir.path, 'store.db'));
  first = await importLimSim(store, LIMSIM_FIXTURE);
  await exportLimSim(store, first.run.id, exported, { warn: (m) => exportWarnings.push(m) });
  second = await importLimSim(store, exported);
});
after(async () => {
  await store.close();
  dir.cleanup();
});

/** The columns that identify a row of each table (edgeINFO has no key: LimSim's RRIMARY typo). */
const KEYS: Record<string, string[]> = {
  simINFO: ['startTime'],
  frameINFO: ['frame', 'vid'],
  vehicleINFO: ['vid'],
  trafficLightStates: ['frame', 'id'],
  connectionINFO: ['fromLane', 'toLane'],
  geohashINFO: ['ghx', 'ghy'],
  evaluationINFO: ['frame'],
};
const keyOf = (table: string, row: Row): string =>
  (KEYS[table] ?? ['id']).map((k) => String(row[k])).join(' ');
/** Columns whose order is a Python set's, which is not reproducible: compared as sets. */
const SET_COLUMNS = new Set(['geohashINFO.edges', 'geohashINFO.junctions']);
const asSet = (v: unknown): string[] =>
  String(v ?? '')
    .split(',')
    .filter(Boolean)
    .sort();

describe('LimSim egoTrackingTest.db: import', () => {
  it('is a run of the ego, three vehicles and eight traffic lights, with the sim info as metadata', async () => {
    assert.equal(first.variant, 'limsim');
    const run = first.run;
    assert.equal(run.simulator.name, 'LimSim');
    assert.equal(run.begin, Date.UTC(2023, 6, 13, 19, 2, 37) * 1000 + 76876);
    // Frame 728, the last, is 72.8 s after startTime (LimSim's frame 0).
    assert.equal(run.end, run.begin + 728 * 100_000);
    assert.equal(run.description, 'example simulation, LimSim-v-0.2.0.');
    assert.deepEqual(run.metadata, {
      source: 'limsim',
      variant: 'limsim',
      startTime: '2023-07-13 19:02:37.076876',
      ego: '69',
      description: 'ego track',
      note: 'example simulation, LimSim-v-0.2.0.',
      netBoundary: [0.06, 0, 473.11, 399.44],
    });
    const actors = await store.listActors(run.id);
    assert.deepEqual(
      actors.filter((a) => a.kind === 'ego').map((a) => a.id),
      ['69'],
    );
    assert.equal(actors.filter((a) => a.kind === 'vehicle').length, 3);
    assert.equal(actors.filter((a) => a.kind === 'traffic_light').length, 8);
    const ego = actors.find((a) => a.id === '69')!;
    assert.deepEqual(ego.extents, { length: 4.519999980926514, width: 1.9199999570846558, height: 1.5 });
    assert.deepEqual(ego.attributes, {
      vType: 'vehicle.nissan.patrol',
      maxAccel: 2.6,
      maxDecel: 4.5,
      maxSpeed: 55.55555555555556,
      route: ['35.0.00', '-27.0.00', '-28.0.00', '-21.0.00'],
    });
  });

  it('keeps each frame as a state at begin + frame x 0.1 s, with LimSim frame, vtag and routeIdx', async () => {
    const samples: Sample[] = [];
    for await (const b of store.readSamples({ run: first.run.id, stream: '69/state' })) samples.push(...b);
    assert.equal(samples.length, 32);
    assert.deepEqual(samples[0], {
      t: first.run.begin + 69_700_000,
      step: 697,
      x: 318.28682019523444,
      y: 390.46940834791417,
      yaw: 0.004132207885447996,
      speed: 0,
      accel: 2.6,
      lane: '35.0.00_0',
      lanePos: 2.3599999904632565,
      routeIdx: 0,
      vtag: 'ego',
    });
    const lights: Sample[] = [];
    for await (const b of store.readSamples({ run: first.run.id, stream: '965/signal' })) lights.push(...b);
    assert.deepEqual(lights[0], {
      t: first.run.begin + 69_700_000,
      step: 697,
      state: 'rrrrGGGgrrrrGGGg',
      nextPhase: 'rrrryyyyrrrryyyy',
      switchTime: 17.3,
    });
    const evaluation: Sample[] = [];
    for await (const b of store.readSamples({ run: first.run.id, stream: '69/limsim_evaluation' }))
      evaluation.push(...b);
    assert.equal(evaluation.length, 31);
    assert.equal(evaluation[4]!.discomfort, tableRows(LIMSIM_FIXTURE, 'evaluationINFO')[4]!.discomfort);
  });

  it('rebuilds the road network from the network tables', async () => {
    const net = (await loadRoadNetwork(store, first.run.id))!;
    assert.equal(net.edges.filter((e) => e.function === 'normal').length, 76);
    assert.equal(net.lanes.filter((l) => l.function === 'normal').length, 155);
    assert.equal(net.junctions.length, 23);
    assert.equal(net.trafficLights.length, 19);
    assert.equal(net.connections.length, 265);
    assert.deepEqual(net.geoReference, { convBoundary: [0.06, 0, 473.11, 399.44] });
  });
});

describe('LimSim egoTrackingTest.db: import -> export', () => {
  it("writes LimSim's DDL byte for byte, typos included, and an index for replay's queries", () => {
    const ours = tableSql(exported);
    const theirs = tableSql(LIMSIM_FIXTURE);
    assert.deepEqual([...ours.keys()], [...theirs.keys()]);
    for (const [name, sql] of theirs) assert.equal(ours.get(name), sql, name);
    assert.match(ours.get('edgeINFO')!, /id TEXT RRIMARY KEY/);
    assert.match(ours.get('junctionLaneINFO')!, /tlsIndex INT/);
    assert.equal(LIMSIM_TABLES.length, 14);
    const indexes = tableRows(exported, 'sqlite_master').filter((r) => r.type === 'index' && r.sql);
    assert.deepEqual(
      indexes.map((r) => r.sql),
      ['CREATE INDEX frameINFO_vid_frame ON frameINFO(vid, frame)'],
    );
  });

  for (const { name: table } of LIMSIM_TABLES)
    it(`reproduces every row of ${table}`, () => {
      const theirs = tableRows(LIMSIM_FIXTURE, table);
      const ours = new Map(tableRows(exported, table).map((r) => [keyOf(table, r), r]));
      assert.equal(ours.size, theirs.length, `${table}: row count`);
      for (const row of theirs) {
        const mine = ours.get(keyOf(table, row));
        assert.ok(mine, `${table} ${keyOf(table, row)}: missing`);
        assert.deepEqual(Object.keys(mine), Object.keys(row));
        for (const column of Object.keys(row)) {
          const where = `${table} ${keyOf(table, row)}.${column}`;
          if (SET_COLUMNS.has(`${table}.${column}`))
            assert.deepEqual(asSet(mine[column]), asSet(row[column]), where);
          else
            assert.ok(
              sameValue(mine[column], row[column]),
              `${where}: ${String(mine[column])} != ${String(row[column])}`,
            );
        }
      }
    });

  it('says nothing is lost', () => {
    assert.deepEqual(exportWarnings, []);
  });
});

describe('LimSim egoTrackingTest.db: import -> export -> import', () => {
  it('gives the same run, actors, streams, samples and road network', async () => {
    const [a, b] = [first.run, second.run];
    assert.deepEqual(
      {
        begin: b.begin,
        end: b.end,
        simulator: b.simulator,
        description: b.description,
        metadata: b.metadata,
      },
      {
        begin: a.begin,
        end: a.end,
        simulator: a.simulator,
        description: a.description,
        metadata: a.metadata,
      },
    );
    assert.deepEqual(await store.listActors(b.id), await store.listActors(a.id));
    const strip = (s: { samples: number; begin: number | null; end: number | null; id: string }): unknown =>
      s;
    assert.deepEqual((await store.listStreams(b.id)).map(strip), (await store.listStreams(a.id)).map(strip));
    for (const stream of await store.listStreams(a.id)) {
      const read = async (run: number): Promise<Sample[]> => {
        const out: Sample[] = [];
        for await (const batch of store.readSamples({ run, stream: stream.id })) out.push(...batch);
        return out;
      };
      assert.deepEqual(await read(b.id), await read(a.id), stream.id);
    }
    assert.deepEqual(await loadRoadNetwork(store, b.id), await loadRoadNetwork(store, a.id));
  });
});
