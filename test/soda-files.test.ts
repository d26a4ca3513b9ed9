/**
 * SODA.Sim's G1 layout as mongoexport files: a demo run exported and imported again is the same run
 * (within Unreal's float precision), and the files hold exactly SODA.Sim's fields with its BSON types.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BSON, Double, Int32, Long } from 'mongodb';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { LANE_MARKS_ATTACHMENT } from '../src/formats/soda/lane-marks.js';
import { exportSoda, importSoda, SodaFolder } from './helpers/formats.js';
import { bsonTypeOf, type BsonDoc } from '../src/formats/soda/bson-fields.js';
import { SimrecError } from '../src/model/errors.js';
import type { RunInfo } from '../src/model/run.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { FieldDecl, Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { STATE_FIELDS, stateStream } from '../src/model/standard-streams.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { runCli } from './helpers/run-cli.js';

let dir: string;
let store: StoreBackend;
let demo: RunInfo;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'simrec-soda-'));
  store = await openStore(join(dir, 'store.db'));
  demo = await recordSyntheticRun(store, { duration: 6, rateHz: 10, vehicles: 2 });
});
after(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function samplesOf(run: number, stream: string): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of streamSamples(store, run, stream)) out.push(...batch);
  return out;
}

async function exportTo(
  run: number,
  name: string,
  options: { extension?: boolean } = {},
): Promise<{ folder: string; warnings: string[] }> {
  const folder = join(dir, name);
  const warnings: string[] = [];
  await exportSoda(store, run, await SodaFolder.openForWrite(folder), {
    ...options,
    warn: (m) => warnings.push(m),
  });
  return { folder, warnings };
}

async function lines(file: string): Promise<BsonDoc[]> {
  const text = await readFile(file, 'utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => BSON.EJSON.parse(l, { relaxed: false }) as BsonDoc);
}

/** Field name -> BSON type, in order, of a document. */
const shape = (d: BsonDoc): [string, string][] => Object.entries(d).map(([k, v]) => [k, bsonTypeOf(v)]);

/** Unreal's float precision: centimetres and degrees through doubles, a few ulps per conversion. */
function assertClose(actual: unknown, expected: unknown, where: string): void {
  if (typeof expected === 'number') {
    assert.equal(typeof actual, 'number', `${where}: ${String(actual)}`);
    const tolerance = 1e-9 * Math.max(1, Math.abs(expected));
    assert.ok(
      Math.abs((actual as number) - expected) <= tolerance,
      `${where}: ${String(actual)} != ${expected}`,
    );
  } else if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), where);
    assert.equal(actual.length, expected.length, where);
    expected.forEach((e, i) => assertClose((actual as unknown[])[i], e, `${where}[${i}]`));
  } else if (expected !== null && typeof expected === 'object') {
    assert.deepEqual(Object.keys(actual as object).sort(), Object.keys(expected).sort(), where);
    for (const [k, v] of Object.entries(expected))
      assertClose((actual as Record<string, unknown>)[k], v, `${where}.${k}`);
  } else assert.equal(actual, expected, where);
}

/** SODA.Sim records drive, not the forward gear engaged: gears 2.. come back as 1. */
function narrowGear(sample: Record<string, unknown>): void {
  if (typeof sample.gear === 'number' && sample.gear > 1) sample.gear = 1;
}

/** Fields of the demo that SODA.Sim's rows have no place for; the export names each in a warning. */
const NOT_IN_SODA: Record<string, string[]> = {
  'ego/state': ['lane', 'lanePos'],
  'ego/control': ['handbrake'],
  'veh1/state': ['wz', 'lane', 'lanePos'],
  'veh2/state': ['wz', 'lane', 'lanePos'],
};

describe('soda files: export -> import of the demo run', () => {
  let imported: RunInfo;
  let folder: string;
  let warnings: string[];

  before(async () => {
    ({ folder, warnings } = await exportTo(demo.id, 'roundtrip'));
    const result = await importSoda(store, await SodaFolder.openForRead(folder));
    assert.equal(result.runs.length, 1);
    imported = result.runs[0]!.run;
  });

  it('writes one file per collection, named after it', async () => {
    assert.deepEqual((await readdir(folder)).sort(), ['dataset0.json', 'datasets.json']);
  });

  it('gives the same run: info, actors, stream declarations', async () => {
    const { id: _a, ...want } = demo;
    const { id: _b, ...got } = imported;
    assert.deepEqual(got, want);
    assert.deepEqual(await store.listActors(imported.id), await store.listActors(demo.id));
    const strip = (s: {
      samples: number;
      begin: number | null;
      end: number | null;
      fields: unknown;
      id: string;
      rateHz?: number;
      metadata: unknown;
    }) => [s.id, s.fields, s.samples, s.begin, s.end, s.rateHz, s.metadata];
    const byId = (a: { id: string }, b: { id: string }): number => a.id.localeCompare(b.id);
    assert.deepEqual(
      (await store.listStreams(imported.id)).sort(byId).map(strip),
      (await store.listStreams(demo.id)).sort(byId).map(strip),
    );
  });

  it('gives the same samples within float precision, except the fields SODA.Sim has no place for', async () => {
    for (const stream of await store.listStreams(demo.id)) {
      const want = await samplesOf(demo.id, stream.id);
      const got = await samplesOf(imported.id, stream.id);
      assert.equal(got.length, want.length, stream.id);
      const dropped = NOT_IN_SODA[stream.id] ?? [];
      want.forEach((w, i) => {
        const expected: Record<string, unknown> = { ...w };
        for (const key of dropped) delete expected[key];
        narrowGear(expected);
        assertClose(got[i], expected, `${stream.id}[${i}]`);
      });
    }
    assert.ok(
      warnings.some(
        (w) => w.startsWith('ego/control: gears 2 and above are written as') && w.includes('drive'),
      ),
      'a warning says third gear went out as drive',
    );
    for (const [stream, fields] of Object.entries(NOT_IN_SODA))
      assert.ok(
        warnings.some((w) => w.startsWith(stream) && fields.every((f) => w.includes(f))),
        `a warning names ${stream}: ${fields.join(', ')}`,
      );
  });
});

describe("soda files: export -> import of `simrec demo`'s run (traffic on the generated town)", () => {
  it('gives the same run, actors, streams and samples, but for the fields each warning names', async () => {
    const { run } = await recordDemoRun(store, { duration: 4, vehicles: 4, pedestrians: 2 });
    const { folder, warnings } = await exportTo(run.id, 'demo-town');
    const imported = (await importSoda(store, await SodaFolder.openForRead(folder))).runs[0]!.run;
    assert.deepEqual({ ...imported, id: 0 }, { ...run, id: 0 });
    assert.deepEqual(await store.listActors(imported.id), await store.listActors(run.id));
    const dropped = new Map(
      warnings.flatMap((w) => {
        const [, stream, fields] = /^(\S+): fields (.+) have no place/.exec(w) ?? [];
        return stream ? [[stream, fields!.split(', ')] as const] : [];
      }),
    );
    assert.ok(warnings.some((w) => w.startsWith('ego/control: gears 2 and above')));
    const streams = await store.listStreams(run.id);
    assert.ok(streams.some((s) => s.id === 'ego/wheels') && streams.some((s) => s.name === 'signal'));
    for (const stream of streams) {
      const want = await samplesOf(run.id, stream.id);
      const got = await samplesOf(imported.id, stream.id);
      assert.equal(got.length, want.length, stream.id);
      want.forEach((w, i) => {
        const expected: Record<string, unknown> = { ...w };
        for (const key of dropped.get(stream.id) ?? []) delete expected[key];
        narrowGear(expected);
        assertClose(got[i], expected, `${stream.id}[${i}]`);
      });
    }
    // The SUMO network has no place in SODA.Sim's layout (its `xdor` holds OpenDRIVE only); its
    // lane marks travel as SODA.Sim's own opendrive actor does.
    assert.deepEqual(
      (await store.listAttachments(imported.id)).map((a) => a.name),
      [LANE_MARKS_ATTACHMENT],
    );
  });
});

describe('soda files: the layout field by field, type by type', () => {
  let folder: string;
  before(async () => {
    ({ folder } = await exportTo(demo.id, 'layout', { extension: false }));
  });

  it('datasets: _id, begin_ts, unreal_soda_ver, actors, end_ts, end_reason', async () => {
    const [d, ...rest] = await lines(join(folder, 'datasets.json'));
    assert.equal(rest.length, 0);
    assert.deepEqual(shape(d!), [
      ['_id', 'int64'],
      ['begin_ts', 'int64'],
      ['unreal_soda_ver', 'string'],
      ['actors', 'array'],
      ['end_ts', 'int64'],
      ['end_reason', 'string'],
    ]);
    assert.equal(d!.end_reason, 'scenario_stop_trigger');
    const actors = d!.actors as BsonDoc[];
    for (const a of actors)
      assert.deepEqual(shape(a), [
        ['name', 'string'],
        ['type', 'string'],
        ['class', 'string'],
        ['description', 'document'],
      ]);
    assert.deepEqual(
      actors.map((a) => [a.name, a.type]),
      [
        ['ego', 'ego'],
        ['veh1', 'vehicle'],
        ['veh2', 'vehicle'],
        ['ped1', 'pedestrian'],
        ['tl1.phase', 'traffic_light'],
      ],
    );
    const ego = actors[0]!.description as BsonDoc;
    assert.deepEqual(shape(ego), [
      ['extents', 'document'],
      ['track_width', 'double'],
      ['wheel_base_width', 'double'],
      ['mass', 'double'],
      ['wheels', 'array'],
    ]);
    assert.deepEqual(
      shape(ego.extents as BsonDoc),
      ['forward', 'backward', 'left', 'right', 'up', 'down'].map((k) => [k, 'double']),
    );
    assert.deepEqual(((ego.extents as BsonDoc).left as Double).value, 95); // 1.9 m wide, half each side
  });

  it('dataset<ID>: {name, part int32, batch}, ego rows with inputs (break) and wheels', async () => {
    const docs = await lines(join(folder, 'dataset0.json'));
    for (const d of docs)
      assert.deepEqual(shape(d), [
        ['name', 'string'],
        ['part', 'int32'],
        ['batch', 'array'],
      ]);
    const ego = docs.find((d) => d.name === 'ego')!;
    const row = (ego.batch as BsonDoc[])[0]!;
    const vec = (k: string): [string, string] => [k, 'array'];
    assert.deepEqual(shape(row), [
      ['sim_ts', 'int64'],
      ['render_ts', 'int64'],
      ['step', 'int32'],
      vec('loc'),
      vec('rot'),
      vec('vel'),
      vec('acc'),
      vec('ang_vel'),
      ['load', 'double'],
      ['inputs', 'document'],
      ['wheels', 'array'],
    ]);
    for (const k of ['loc', 'rot', 'vel', 'acc', 'ang_vel'])
      assert.deepEqual((row[k] as unknown[]).map(bsonTypeOf), ['double', 'double', 'double'], k);
    assert.deepEqual(shape(row.inputs as BsonDoc), [
      ['break', 'double'],
      ['steer', 'double'],
      ['throttle', 'double'],
      ['gear', 'int32'],
    ]);
    const wheels = row.wheels as BsonDoc[];
    assert.equal(wheels.length, 4);
    assert.deepEqual(shape(wheels[0]!), [
      ['4wd_ind', 'int32'],
      ...['ang_vel', 'req_torq', 'req_brake_torq', 'steer', 'sus', 'long_slip', 'lat_slip'].map(
        (k): [string, string] => [k, 'double'],
      ),
    ]);
    assert.deepEqual(
      wheels.map((w) => (w['4wd_ind'] as Int32).value),
      [0, 1, 2, 3],
    );
  });

  it('vehicle rows: ts, loc, rot, vel, acc, route {name}; pedestrian rows have no acc', async () => {
    const docs = await lines(join(folder, 'dataset0.json'));
    const vehicleRow = (docs.find((d) => d.name === 'veh1')!.batch as BsonDoc[])[0]!;
    assert.deepEqual(shape(vehicleRow), [
      ['ts', 'int64'],
      ['loc', 'array'],
      ['rot', 'array'],
      ['vel', 'array'],
      ['acc', 'array'],
      ['route', 'document'],
    ]);
    assert.deepEqual(vehicleRow.route, { name: '' });
    // Ghost actors record longitudinal speed and acceleration only.
    assert.deepEqual(
      (vehicleRow.vel as Double[]).slice(1).map((d) => d.value),
      [0, 0],
    );
    const pedestrianRow = (docs.find((d) => d.name === 'ped1')!.batch as BsonDoc[])[0]!;
    assert.deepEqual(
      shape(pedestrianRow).map(([k]) => k),
      ['ts', 'loc', 'rot', 'vel', 'route'],
    );
  });

  it('lines are canonical Extended JSON as mongoexport writes them', async () => {
    const first = (await readFile(join(folder, 'datasets.json'), 'utf8')).split('\n')[0]!;
    assert.match(
      first,
      /^\{"_id":\{"\$numberLong":"0"\},"begin_ts":\{"\$numberLong":"\d+"\},"unreal_soda_ver":"0\.1\.0",/,
    );
    assert.doesNotMatch(first, /\n| : /);
  });

  it('a second export gets the next dataset id, and the first stays', async () => {
    await exportSoda(store, demo.id, await SodaFolder.openForWrite(folder), { extension: false });
    assert.deepEqual((await readdir(folder)).sort(), ['dataset0.json', 'dataset1.json', 'datasets.json']);
    const ids = (await lines(join(folder, 'datasets.json'))).map((d) => (d._id as Long).toNumber());
    assert.deepEqual(ids, [0, 1]);
  });

  it('without the extension, import still gives the run in canonical units', async () => {
    const result = await importSoda(store, await SodaFolder.openForRead(folder), { dataset: 0 });
    const run = result.runs[0]!.run;
    assert.equal(run.simulator.name, 'SODA.Sim');
    assert.equal(run.simulator.version, '0.1.0');
    const want = await samplesOf(demo.id, 'veh1/state');
    const got = await samplesOf(run.id, 'veh1/state');
    assert.equal(got.length, want.length);
    for (const k of ['x', 'y', 'z', 'yaw', 'speed', 'accel'] as const)
      assertClose(got[7]![k], want[7]![k], k);
    const actors = await store.listActors(run.id);
    assert.deepEqual(
      actors.map((a) => [a.id, a.kind]),
      [
        ['ego', 'ego'],
        ['veh1', 'vehicle'],
        ['veh2', 'vehicle'],
        ['ped1', 'pedestrian'],
        ['tl1.phase', 'traffic_light'],
      ],
    );
    assertClose(actors[0]!.extents, { length: 4.6, width: 1.9, height: 1.5 }, 'ego extents');
  });
});

describe('soda files: scenarios and vehicles, field by field, type by type', () => {
  it('scenarios {_id int64, timestamp int64, description, bin binary 0}; vehicles {_id, timestamp int64, soda.sim document}', async () => {
    const catalog = await openStore(join(dir, 'catalog.db'));
    try {
      const run = await recordSyntheticRun(catalog, { duration: 1, rateHz: 10, vehicles: 1 });
      const gvas = new Uint8Array(Buffer.from('GVAS\x02\x00\x00\x00++UE5+Release-5.4', 'latin1'));
      await catalog.scenarios.put({
        id: 7n,
        timestamp: 1_700_000_000_000_000,
        description: 'cut-in',
        bin: gvas,
      });
      const vehicle = { __class__: 'SodaSampleVeh03_C', pitch: 0, mass: 1500.5, wheels: [{ radius: 32 }] };
      await catalog.vehicles.put({ name: 'SodaSampleVeh03', timestamp: 1_700_000_000_000_001, doc: vehicle });
      const folder = join(dir, 'catalog-out');
      await exportSoda(catalog, run.id, await SodaFolder.openForWrite(folder));
      const [scenario, ...moreScenarios] = await lines(join(folder, 'scenarios.json'));
      assert.equal(moreScenarios.length, 0);
      assert.deepEqual(shape(scenario!), [
        ['_id', 'int64'],
        ['timestamp', 'int64'],
        ['description', 'string'],
        ['bin', 'binary'],
      ]);
      const bin = scenario!.bin as { sub_type: number; buffer: Uint8Array };
      assert.equal(bin.sub_type, 0);
      assert.deepEqual(new Uint8Array(bin.buffer), gvas);
      const [v] = await lines(join(folder, 'vehicles.json'));
      assert.deepEqual(shape(v!), [
        ['_id', 'string'],
        ['timestamp', 'int64'],
        ['soda.sim', 'document'],
      ]);
      // JSON -> BSON as bsoncxx::from_json does it: integers int32, fractions double.
      assert.deepEqual(shape(v!['soda.sim'] as BsonDoc), [
        ['__class__', 'string'],
        ['pitch', 'int32'],
        ['mass', 'double'],
        ['wheels', 'array'],
      ]);
      // And back: the catalogs of a store that imports the folder are the same.
      const again = await openStore(join(dir, 'catalog-again.db'));
      try {
        const result = await importSoda(again, await SodaFolder.openForRead(folder));
        assert.deepEqual([result.scenarios, result.vehicles], [1, 1]);
        assert.deepEqual(await again.scenarios.get(7n), await catalog.scenarios.get(7n));
        assert.deepEqual(
          await again.vehicles.get('SodaSampleVeh03'),
          await catalog.vehicles.get('SodaSampleVeh03'),
        );
      } finally {
        await again.close();
      }
    } finally {
      await catalog.close();
    }
  });
});

describe('soda files: batches of 10,000 rows per actor', () => {
  let run: RunInfo;
  before(async () => {
    const rec = await RunRecorder.begin(store, { simulator: { name: 'SODA.Sim', version: '1.0.0' } });
    await rec.declareActor({ id: 'car', kind: 'vehicle' });
    await rec.declareStream(stateStream('car'));
    const samples: Sample[] = [];
    for (let i = 0; i < 25_001; i++)
      samples.push({ t: rec.run.begin + i * 1000, step: i, x: i * 0.01, y: 0, yaw: 0, speed: 10 });
    await rec.appendBatch('car/state', samples);
    run = await rec.end('user_request');
  });

  it('parts 0, 1, 2 hold 10,000, 10,000 and 5,001 rows', async () => {
    const { folder } = await exportTo(run.id, 'batches');
    const docs = await lines(join(folder, 'dataset0.json'));
    assert.deepEqual(
      docs.map((d) => [d.name, (d.part as Int32).value, (d.batch as unknown[]).length]),
      [
        ['car', 0, 10_000],
        ['car', 1, 10_000],
        ['car', 2, 5_001],
      ],
    );
  });

  it('parts out of order in the file are put back in order', async () => {
    const { folder } = await exportTo(run.id, 'shuffled');
    const file = join(folder, 'dataset0.json');
    const text = (await readFile(file, 'utf8')).trimEnd().split('\n');
    await writeFile(file, `${[text[2], text[0], text[1]].join('\n')}\n`);
    const imported = (await importSoda(store, await SodaFolder.openForRead(folder))).runs[0]!.run;
    const got = await samplesOf(imported.id, 'car/state');
    assert.equal(got.length, 25_001);
    assert.ok(got.every((s, i) => s.step === i));
  });
});

describe('soda files: a required field SODA.Sim has no place for', () => {
  it('comes back declared optional, without values, and the export names it', async () => {
    // A simulator's own extra on its state stream, declared required (the benchmark's LimSim route index).
    const fields: FieldDecl[] = [...STATE_FIELDS, { name: 'routeIdx', type: 'i32' }];
    const rec = await RunRecorder.begin(store, { simulator: { name: 'test' } });
    await rec.declareActors([
      { id: 'ego', kind: 'ego' },
      { id: 'car', kind: 'vehicle' },
    ]);
    await rec.declareStreams([stateStream('ego', { fields }), stateStream('car', { fields })]);
    for (let step = 0; step < 3; step++)
      for (const actor of ['ego', 'car'])
        await rec.append(`${actor}/state`, {
          t: rec.run.begin + step * 100_000,
          step,
          x: step,
          y: 0,
          yaw: 0,
          speed: 1,
          routeIdx: step,
        });
    const run = await rec.end('user_request');
    const { folder, warnings } = await exportTo(run.id, 'required-extra');
    for (const actor of ['ego', 'car'])
      assert.ok(
        warnings.some((w) => w.startsWith(`${actor}/state: fields routeIdx have no place`)),
        warnings.join('\n'),
      );
    const imported = (await importSoda(store, await SodaFolder.openForRead(folder))).runs[0]!.run;
    for (const actor of ['ego', 'car']) {
      const stream = (await store.listStreams(imported.id)).find((s) => s.id === `${actor}/state`)!;
      const routeIdx = stream.fields.find((f) => f.name === 'routeIdx');
      assert.deepEqual(routeIdx, { name: 'routeIdx', type: 'i32', optional: true }, actor);
      const samples = await samplesOf(imported.id, stream.id);
      assert.deepEqual(
        samples.map((s) => [s.step, s.x, s.routeIdx]),
        [0, 1, 2].map((step) => [step, step, undefined]),
        actor,
      );
    }
  });
});

describe('soda files: Unreal frame at the boundary', () => {
  it('a car heading north-east and climbing: cm, left-handed, [pitch, yaw, roll] degrees', async () => {
    const rec = await RunRecorder.begin(store, { simulator: { name: 'test' } });
    await rec.declareActor({ id: 'ego', kind: 'ego', extents: { length: 4, width: 2, height: 1.5 } });
    await rec.declareStream(stateStream('ego'));
    const pitch = -(10 * Math.PI) / 180; // canonical pitch is positive nose-down
    await rec.append('ego/state', {
      t: rec.run.begin,
      step: 0,
      x: 1,
      y: 2,
      z: 3,
      roll: 0,
      pitch,
      yaw: Math.PI / 4,
      vx: 10 * Math.cos(pitch) * Math.SQRT1_2,
      vy: 10 * Math.cos(pitch) * Math.SQRT1_2,
      vz: -10 * Math.sin(pitch),
      wz: 0.5,
    });
    const run = await rec.end('user_request');
    const { folder } = await exportTo(run.id, 'pose', { extension: false });
    const row = ((await lines(join(folder, 'dataset0.json')))[0]!.batch as BsonDoc[])[0]!;
    const values = (k: string): number[] => (row[k] as Double[]).map((d) => d.value);
    assertClose(values('loc'), [100, -200, 300], 'loc');
    assertClose(values('rot'), [10, -45, 0], 'rot'); // nose up, yaw clockwise from x seen from above
    assertClose(values('vel'), [1000, 0, 0], 'vel'); // straight ahead in the car's own frame
    assertClose(values('ang_vel'), [0, 0, -0.5], 'ang_vel');
  });
});

describe('soda files: bad input', () => {
  async function folderWith(name: string, files: Record<string, string>): Promise<string> {
    const folder = join(dir, name);
    await rm(folder, { recursive: true, force: true });
    const { mkdir } = await import('node:fs/promises');
    await mkdir(folder);
    for (const [file, text] of Object.entries(files)) await writeFile(join(folder, file), text);
    return folder;
  }
  const runCount = async (): Promise<number> => (await store.listRuns()).length;
  async function rejects(folder: string, pattern: RegExp): Promise<void> {
    const before = await runCount();
    await assert.rejects(importSoda(store, await SodaFolder.openForRead(folder)), (e: unknown) => {
      assert.ok(e instanceof SimrecError, String(e));
      assert.match(e.message, pattern);
      return true;
    });
    assert.equal(await runCount(), before, 'no run is left behind');
  }
  const datasetLine = (
    actors = '[{"name":"car","type":"vehicle","class":"GhostVehicle_C","description":{}}]',
  ) =>
    `{"_id":{"$numberLong":"4"},"begin_ts":{"$numberLong":"1700000000000000"},"unreal_soda_ver":"1.0.0","actors":${actors},"end_ts":{"$numberLong":"1700000001000000"},"end_reason":"user_request"}\n`;
  const d = (v: number) => `{"$numberDouble":"${v}"}`;
  const ghostRow = (loc0 = d(1), ts = 1700000000000000) =>
    `{"ts":{"$numberLong":"${ts}"},"loc":[${loc0},${d(2)},${d(3)}],"rot":[${d(0)},${d(0)},${d(0)}],"vel":[${d(0)},${d(0)},${d(0)}],"acc":[${d(0)},${d(0)},${d(0)}],"route":{"name":""}}`;

  it('a collection SODA.Sim does not write is named and refused', async () => {
    const folder = await folderWith('bad-collection', {
      'datasets.json': datasetLine(),
      'runs.json': '{}\n',
    });
    await rejects(folder, /collection "runs" is not in SODA\.Sim's layout/);
  });

  it('a field of the wrong BSON type names the file, line, document path and types', async () => {
    const good = ghostRow();
    const bad = ghostRow('{"$numberInt":"1"}', 1700000000100000);
    const folder = await folderWith('bad-type', {
      'datasets.json': datasetLine(),
      'dataset4.json': `{"name":"car","part":{"$numberInt":"0"},"batch":[${good},${bad}]}\n`,
    });
    await rejects(folder, /dataset4\.json line 1\.batch\[1\]\.loc\[0\]: expected BSON double, got int32 1/);
  });

  it('a batch over 10,000 rows is refused', async () => {
    const rows = Array.from({ length: 10_001 }, (_, i) => ghostRow(d(1), 1700000000000000 + i)).join(',');
    const folder = await folderWith('bad-batch', {
      'datasets.json': datasetLine(),
      'dataset4.json': `{"name":"car","part":{"$numberInt":"0"},"batch":[${rows}]}\n`,
    });
    await rejects(folder, /10001 rows in one batch; SODA\.Sim writes at most 10000/);
  });

  it('a row too big for a batch document is refused on export, naming it, and nothing is written', async () => {
    const rec = await RunRecorder.begin(store, { simulator: { name: 'test' } });
    await rec.declareStream({ name: 'notes', fields: [{ name: 'text', type: 'string' }] });
    await rec.append('notes', { t: rec.run.begin, step: 0, text: 'short' });
    await rec.append('notes', { t: rec.run.begin + 1, step: 1, text: 'x'.repeat(16 * 1024 * 1024) });
    const run = await rec.end('user_request');
    const folder = join(dir, 'huge-row');
    await assert.rejects(
      exportSoda(store, run.id, await SodaFolder.openForWrite(folder)),
      (e: unknown) =>
        e instanceof SimrecError &&
        /^notes row 2: \d+ bytes; a SODA\.Sim batch document must stay under \d+ bytes/.test(e.message),
    );
    assert.deepEqual(await readdir(folder), []);
  });

  it('a missing part, an unknown actor, a broken line', async () => {
    const part = (p: number, name = 'car') =>
      `{"name":"${name}","part":{"$numberInt":"${p}"},"batch":[${ghostRow()}]}\n`;
    await rejects(
      await folderWith('bad-part', { 'datasets.json': datasetLine(), 'dataset4.json': part(0) + part(2) }),
      /actor car: part 1 is missing/,
    );
    await rejects(
      await folderWith('bad-actor', { 'datasets.json': datasetLine(), 'dataset4.json': part(0, 'bus') }),
      /dataset4\.json line 1\.name: actor "bus" is not in/,
    );
    await rejects(
      await folderWith('bad-line', {
        'datasets.json': datasetLine(),
        'dataset4.json': `${part(0)}{"name":\n`,
      }),
      /dataset4\.json line 2: not Extended JSON/,
    );
  });
});

describe('soda command line', () => {
  it('simrec export RUN soda DIR, then simrec import soda DIR --dataset 0; the old noun says what replaced it', async () => {
    const storePath = join(dir, 'cli.db');
    const cliStore = await openStore(storePath);
    const run = await recordSyntheticRun(cliStore, { duration: 2, rateHz: 10, vehicles: 1 });
    await cliStore.close();
    const out = join(dir, 'cli-out');
    const exported = runCli(['--store', storePath, 'export', String(run.id), 'soda', out, '--json']);
    assert.equal(exported.status, 0, exported.stderr);
    assert.equal(JSON.parse(exported.stdout).collection, 'dataset0');
    const imported = runCli(['--store', storePath, 'import', 'soda', out, '--dataset', '0', '--json']);
    assert.equal(imported.status, 0, imported.stderr);
    assert.deepEqual(JSON.parse(imported.stdout).runs, [
      { dataset: 0, collection: 'dataset0', run: run.id + 1 },
    ]);
    const missing = runCli(['--store', storePath, 'import', 'soda', out, '--dataset', '9']);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /no dataset 9/);
    const notSoda = runCli(['--store', storePath, 'import', 'limsim', out, '--dataset', '0']);
    assert.equal(notSoda.status, 2);
    assert.match(notSoda.stderr, /--dataset: not an option of limsim/);
    const old = runCli(['--store', storePath, 'soda', 'import', out]);
    assert.equal(old.status, 2);
    assert.match(old.stderr, /use `simrec import soda LOCATION`/);
  });
});
