/**
 * Runs that did not come from LimSim, written as LimSim databases: the demo run (at LimSim's 10 Hz and
 * resampled from 25 Hz), a run on a SUMO network (the network rows LimSim itself would build), and a
 * run evaluated by simrec (evaluationINFO from its `evaluation` stream).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { XMLParser } from 'fast-xml-parser';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { exportLimSim } from './helpers/formats.js';
import { importLimSim } from './helpers/formats.js';
import { createTableSql, LIMSIM_TABLES } from '../src/formats/limsim/limsim-schema.js';
import { stateStream } from '../src/model/standard-streams.js';
import { normalizeStream, type Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { readRoadNetworkFile } from '../src/roadnet/read-roadnet.js';
import { attachRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { LIMSIM_FIXTURE, storeForTests, tableRows, tableSql, type Row } from './helpers/limsim-files.js';
import { fixture } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const tests = storeForTests('simrec-limsim-export-');
const dir = { path: tests.dir };

async function samples(run: number, stream: string): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of tests.store.readSamples({ run, stream })) out.push(...batch);
  return out;
}

describe('the demo run as a LimSim database', () => {
  it("has LimSim's schema byte for byte and imports back to the same states", async () => {
    const run = await recordSyntheticRun(tests.store, { duration: 6, rateHz: 10, vehicles: 3 });
    const file = join(dir.path, 'demo.db');
    const warnings: string[] = [];
    const result = await exportLimSim(tests.store, run.id, file, { warn: (m) => warnings.push(m) });
    const sql = tableSql(file);
    for (const [name, text] of tableSql(LIMSIM_FIXTURE)) assert.equal(sql.get(name), text, name);
    for (const table of LIMSIM_TABLES) assert.equal(sql.get(table.name), createTableSql(table));
    assert.deepEqual(result.resampled, []);
    assert.ok(warnings.some((w) => /no road network/.test(w)));

    const sim = tableRows(file, 'simINFO')[0]!;
    assert.equal(sim.egoID, 'ego');
    assert.equal(sim.description, 'ego track');
    assert.equal(sim.radius, null);
    const vehicles = tableRows(file, 'vehicleINFO');
    // LimSim records vehicles only: the pedestrian is left out, and said so.
    assert.deepEqual(vehicles.map((v) => v.vid).sort(), ['ego', 'veh1', 'veh2', 'veh3']);
    assert.ok(tableRows(file, 'frameINFO').every((r) => r.vid !== 'ped1'));
    assert.ok(warnings.some((w) => /1 pedestrians left out/.test(w)));
    // In the file's own order, frame after frame as LimSim writes them (the export gathers each
    // vehicle's rows apart and appends them in the key's order), with LimSim's tables only.
    const stored = tableRows(file, 'frameINFO').map(
      (r) => `${String(r.frame).padStart(6, '0')} ${String(r.vid)}`,
    );
    assert.deepEqual(stored, [...stored].sort());
    assert.deepEqual([...sql.keys()].sort(), LIMSIM_TABLES.map((t) => t.name).sort());
    // The ring's lane comes from the samples; the route is the edges the vehicle drove.
    assert.equal(vehicles.find((v) => v.vid === 'veh1')!.routes, 'ring');
    const lights = tableRows(file, 'trafficLightStates');
    assert.ok(lights.length > 0 && lights.every((r) => r.id === 'tl1' && typeof r.currPhase === 'string'));

    const back = await importLimSim(tests.store, file);
    assert.equal(back.run.begin, run.begin);
    for (const id of ['ego', 'veh2']) {
      const original = await samples(run.id, `${id}/state`);
      const again = await samples(back.run.id, `${id}/state`);
      assert.equal(again.length, original.length);
      again.forEach((s, i) => {
        const o = original[i]!;
        assert.equal(s.t, o.t);
        for (const key of ['x', 'y', 'speed', 'accel', 'lanePos'] as const) assert.equal(s[key], o[key], key);
        // Yaw past pi/2 goes out as LimSim's yaw - 2pi and comes back wrapped: within an ulp or two.
        assert.ok(Math.abs((s.yaw as number) - (o.yaw as number)) < 1e-12);
        assert.equal(s.lane, o.lane);
      });
      const rows = tableRows(file, 'frameINFO').filter((r) => r.vid === id);
      assert.ok(rows.every((r) => (r.yaw as number) > -1.5 * Math.PI && (r.yaw as number) <= Math.PI / 2));
      assert.ok(rows.every((r) => r.vtag === (id === 'ego' ? 'ego' : r.vtag)));
    }
  });

  it('resamples a 25 Hz run onto the 0.1 s grid', async () => {
    const fast = await recordSyntheticRun(tests.store, { duration: 4, rateHz: 25, vehicles: 2 });
    const slow = await recordSyntheticRun(tests.store, { duration: 4, rateHz: 10, vehicles: 2 });
    const file = join(dir.path, 'fast.db');
    const result = await exportLimSim(tests.store, fast.id, file);
    assert.ok(result.resampled.includes('ego/state'));
    const rows = tableRows(file, 'frameINFO').filter((r) => r.vid === 'veh1');
    assert.deepEqual(
      rows.map((r) => r.frame),
      Array.from({ length: 41 }, (_, i) => i),
    );
    // The demo is a function of time, so its 10 Hz run is where the resampled states must land.
    const truth = await samples(slow.id, 'veh1/state');
    rows.forEach((r, i) => {
      assert.ok(
        Math.hypot((r.x as number) - (truth[i]!.x as number), (r.y as number) - (truth[i]!.y as number)) <
          0.01,
      );
      assert.ok(Math.abs((r.speed as number) - (truth[i]!.speed as number)) < 0.01);
    });
  });
});

describe('a run on a SUMO network as a LimSim database', () => {
  it('has the network rows LimSim builds from the net (section 2.2) and lanes found for each frame', async () => {
    const netFile = fixture('limsim-networks', 'corridor', 'corridor.net.xml');
    const { network } = await readRoadNetworkFile(netFile);
    const lane = network.lanes.find((l) => l.function === 'normal' && l.centerLine.length >= 2)!;
    const rec = await RunRecorder.begin(tests.store, { simulator: { name: 'test' } });
    await rec.declareActor({ id: 'car', kind: 'ego', extents: { length: 4.6, width: 1.9, height: 1.5 } });
    await rec.declareStream(stateStream('car'));
    const a = lane.centerLine[0]!;
    const b = lane.centerLine[1]!;
    const heading = Math.atan2(b[1] - a[1], b[0] - a[0]);
    for (let k = 0; k < 5; k++) {
      const u = Math.min(1, (k * 0.1 * 5) / Math.hypot(b[0] - a[0], b[1] - a[1]));
      await rec.append('car/state', {
        t: rec.run.begin + k * 100_000,
        step: k,
        x: a[0] + u * (b[0] - a[0]),
        y: a[1] + u * (b[1] - a[1]),
        yaw: heading,
        speed: 5,
      });
    }
    await rec.end('completed');
    await attachRoadNetwork(tests.store, rec.id, network);
    const file = join(dir.path, 'corridor.db');
    await exportLimSim(tests.store, rec.id, file);

    const frames = tableRows(file, 'frameINFO');
    assert.ok(
      frames.every((r) => r.laneID === lane.id),
      'every frame on the lane it was put on',
    );
    assert.equal(tableRows(file, 'vehicleINFO')[0]!.routes, lane.edge);

    const expected = limSimRowsFromXml(readFileSync(netFile, 'utf8'));
    const byId = (rows: Row[]): Map<string, Row> => new Map(rows.map((r) => [String(r.id), r]));
    for (const table of ['edgeINFO', 'laneINFO', 'junctionLaneINFO', 'junctionINFO'] as const) {
      const ours = byId(tableRows(file, table));
      assert.equal(ours.size, expected[table].length, table);
      for (const row of expected[table])
        assert.deepEqual(ours.get(String(row.id)), row, `${table} ${String(row.id)}`);
    }
    const key = (r: Row): string => `${String(r.fromLane)} ${String(r.toLane)}`;
    const connections = new Map(tableRows(file, 'connectionINFO').map((r) => [key(r), r]));
    assert.equal(connections.size, expected.connectionINFO.length);
    for (const row of expected.connectionINFO) assert.deepEqual(connections.get(key(row)), row);
    const sim = tableRows(file, 'simINFO')[0]!;
    const boundary = /convBoundary="([^"]+)"/.exec(readFileSync(netFile, 'utf8'))![1]!.split(',').map(Number);
    assert.deepEqual(String(sim.netBoundary).split(/[ ,]/).map(Number), boundary);
    assert.ok(tableRows(file, 'geohashINFO').length > 0);
  });
});

type XmlTable = 'edgeINFO' | 'laneINFO' | 'junctionLaneINFO' | 'junctionINFO' | 'connectionINFO';

/**
 * An independent reading of LimSim's `NetworkBuild.getData` (doc section 2.2) straight from the XML:
 * the rows LimSim itself writes for a net.
 */
function limSimRowsFromXml(text: string): Record<XmlTable, Row[]> {
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (_name, _path, _leaf, isAttribute) => !isAttribute,
  });
  const net = parser.parse(text).net[0] as Record<string, Record<string, unknown>[]>;
  const list = <T>(v: unknown): T[] => (Array.isArray(v) ? v : []) as T[];
  const rows: Record<XmlTable, Row[]> = {
    edgeINFO: [],
    laneINFO: [],
    junctionLaneINFO: [],
    junctionINFO: [],
    connectionINFO: [],
  };
  const normal = new Set<string>();
  for (const edge of list<Record<string, unknown>>(net.edge)) {
    const id = String(edge.id);
    const lanes = list<Record<string, string>>(edge.lane);
    if (id.startsWith(':')) {
      for (const l of lanes)
        rows.junctionLaneINFO.push({
          id: l.id,
          width: l.width === undefined ? 3.2 : Number(l.width),
          maxSpeed: l.speed === undefined ? 13.89 : Number(l.speed),
          length: Number(l.length),
          tlLogicID: null,
          tlsIndex: 0,
        });
      continue;
    }
    rows.edgeINFO.push({
      id,
      laneNumber: lanes.length,
      from_junction: String(edge.from),
      to_junction: String(edge.to),
    });
    for (const l of lanes) {
      normal.add(l.id!);
      rows.laneINFO.push({
        id: l.id,
        rawShape: l.shape,
        width: l.width === undefined ? 3.2 : Number(l.width),
        maxSpeed: Number(l.speed),
        edgeID: id,
        length: Number(l.length),
      });
    }
  }
  for (const j of list<Record<string, string>>(net.junction))
    if (!String(j.id).startsWith(':')) rows.junctionINFO.push({ id: j.id, rawShape: j.shape });
  for (const c of list<Record<string, string>>(net.connection)) {
    const from = `${c.from}_${c.fromLane}`;
    const to = `${c.to}_${c.toLane}`;
    if (normal.has(from) && normal.has(to))
      rows.connectionINFO.push({ fromLane: from, toLane: to, direction: c.dir, via: c.via ?? null });
  }
  return rows;
}

describe('a run evaluated by simrec as a LimSim database', () => {
  it("writes evaluationINFO from the ego's evaluation stream, before LimSim's stored rows", async () => {
    const { run } = await importLimSim(tests.store, LIMSIM_FIXTURE);
    const stored = await samples(run.id, '69/limsim_evaluation');
    const fields = ['offset', 'discomfort', 'collision', 'orientation', 'consumption'];
    const schema = normalizeStream({
      name: 'evaluation',
      actor: '69',
      fields: fields.map((name) => ({ name, type: 'f64' as const, optional: true })),
    });
    await tests.store.putDerivedStream(
      run.id,
      schema,
      stored.map((s) => ({
        t: s.t,
        step: s.step,
        offset: 1,
        discomfort: 2,
        collision: 3,
        orientation: 4,
        consumption: 5,
      })),
    );
    const file = join(dir.path, 'evaluated.db');
    await exportLimSim(tests.store, run.id, file);
    const rows = tableRows(file, 'evaluationINFO');
    assert.equal(rows.length, stored.length);
    assert.deepEqual(rows[0], {
      frame: 697,
      offset: 1,
      discomfort: 2,
      collision: 3,
      orientation: 4,
      consumption: 5,
    });
  });

  it('refuses to overwrite a file unless asked', async () => {
    const { run } = await importLimSim(tests.store, LIMSIM_FIXTURE);
    const file = join(dir.path, 'twice.db');
    await exportLimSim(tests.store, run.id, file);
    await assert.rejects(exportLimSim(tests.store, run.id, file), /exists.*--force/);
    await exportLimSim(tests.store, run.id, file, { overwrite: true });
  });
});

describe('what a LimSim export leaves out', () => {
  it('says every stream and field of a scored demo run it does not write, and nothing else', async () => {
    const { run } = await recordDemoRun(tests.store, { duration: 20, pedestrians: 3 });
    const { events } = await evaluateRun(tests.store, run.id);
    assert.ok(events.length > 0, 'the run has events, which LimSim has no table for');
    const file = join(dir.path, 'left-out.db');
    const warnings: string[] = [];
    await exportLimSim(tests.store, run.id, file, { warn: (m) => warnings.push(m) });
    const vehicles = tableRows(file, 'vehicleINFO').length;
    const [evaluation] = warnings.filter((w) => w.startsWith('stream evaluation of ego: '));
    assert.match(
      evaluation ?? '',
      /^stream evaluation of ego: fields offsetScore, discomfortScore, collisionScore, orientationScore, consumptionScore, accel, jerk, .*ttcActor.* left out: evaluationINFO holds LimSim's five metrics only$/,
    );
    assert.deepEqual(warnings.filter((w) => w !== evaluation).sort(), [
      '3 pedestrians left out: LimSim records vehicles only',
      "stream control of ego left out: LimSim's database has no table for it",
      "stream events of the run left out: LimSim's database has no table for it",
      `stream state of ${vehicles} actors (ego, veh1, veh2, ...): fields z, roll, pitch, vx, vy, vz, ax, ay, az, wx, wy, wz left out: frameINFO holds x, y, yaw, speed, accel, lane, lane position, route index and tag only`,
      "stream wheels of ego left out: LimSim's database has no table for it",
    ]);
    // The lights' signals and the five metrics are written, and so not said.
    assert.ok(tableRows(file, 'evaluationINFO').length > 0);
    assert.ok(tableRows(file, 'trafficLightStates').length > 0);
  });
});

describe('several runs as LimSim databases', () => {
  it('are written one database each into a folder, each the same as the run exported alone', () => {
    const env = { SIMREC_STORE: join(dir.path, 'several.db') };
    for (const seed of ['1', '2'])
      cliJson(['demo', '--no-serve', '--duration', '3', '--vehicles', '3', '--seed', seed, '--json'], env);
    const out = join(dir.path, 'limsim-runs');
    const result = cliJson<{ files: { run: number; file: string; rows: number }[] }>(
      ['export', '1,2', 'limsim', out, '--json'],
      env,
    );
    assert.deepEqual(
      result.files.map((f) => [f.run, f.file]),
      [
        [1, join(out, 'run-1.db')],
        [2, join(out, 'run-2.db')],
      ],
    );
    assert.deepEqual(readdirSync(out).sort(), ['run-1.db', 'run-2.db']);
    for (const run of [1, 2]) {
      const alone = join(dir.path, `alone-${run}.db`);
      cliJson(['export', String(run), 'limsim', alone, '--json'], env);
      assert.ok(tableRows(alone, 'frameINFO').length > 0);
      for (const table of LIMSIM_TABLES)
        assert.deepEqual(
          tableRows(join(out, `run-${run}.db`), table.name),
          tableRows(alone, table.name),
          `run ${run}: ${table.name}`,
        );
    }
    // The folder is not replaced unasked.
    const again = runCli(['export', '1,2', 'limsim', out], env);
    assert.equal(again.status, 2);
    assert.match(again.stderr, /already exists; --force replaces it/);
  });
});
