/**
 * SODA.Sim's generations 2 and 3, from documents written by hand after the format notes
 * (docs/formats/soda.md, "SODA.Sim's layout"): CamelCase rows with their typos, the
 * ego's [Roll, Pitch, Yaw], components nested in the ego row, `dataset_<N>` with its descriptor,
 * the `files` collection with UTF-16LE vehicle JSON and GUID ids, and the repeated `type`/`points`
 * keys of `road_lanes_marks`, recovered from raw BSON and from Extended JSON text.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BSON } from 'mongodb';
import { laneMarksFromBson, laneMarksFromExtendedJson } from '../src/formats/soda/duplicate-keys.js';
import { guidToString, importSoda, SodaFolder } from './helpers/formats.js';
import { LANE_MARKS_ATTACHMENT, roadsToLaneMarks } from '../src/formats/soda/lane-marks.js';
import type { LaneMark } from '../src/model/roadnet.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';

let dir: string;
let store: StoreBackend;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'simrec-soda-gen-'));
  store = await openStore(join(dir, 'store.db'));
});
after(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const d = (v: number): string => `{"$numberDouble":"${Number.isInteger(v) ? v.toFixed(1) : v}"}`;
const i32 = (v: number): string => `{"$numberInt":"${v}"}`;
const i64 = (v: number): string => `{"$numberLong":"${v}"}`;
const v3 = (a: number, b: number, c: number): string => `[${d(a)},${d(b)},${d(c)}]`;
const BEGIN = 1_700_000_000_000_000;

async function folderWith(name: string, files: Record<string, string[]>): Promise<string> {
  const folder = join(dir, name);
  await mkdir(folder);
  for (const [file, docs] of Object.entries(files))
    await writeFile(join(folder, file), `${docs.join('\n')}\n`);
  return folder;
}

async function samplesOf(run: number, stream: string): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of streamSamples(store, run, stream)) out.push(...batch);
  return out;
}

const close = (a: unknown, b: number, what: string): void =>
  assert.ok(typeof a === 'number' && Math.abs(a - b) < 1e-9, `${what}: ${String(a)} != ${b}`);

describe('soda G2: CamelCase rows, nested components', () => {
  const egoRow = (k: number): string =>
    `{"VehicleData":{"SimTsUs":${i64(BEGIN + k * 10_000)},"RenderTsUs":${i64(BEGIN + k * 10_000 + 5)},"Step":${i32(k)},` +
    `"Loc":${v3(100 * k, 50, 20)},"Rot":${v3(2, -5, 30)},"Bel":${v3(1000, 0, 0)},"Acc":${v3(0, 0, 0)},"AngVel":${v3(0, 0, 0.1)}},` +
    `"WheeledVehicleData":{"Inputs":{"Break":${d(0.25)},"Steer":${d(-0.1)},"Throttle":${d(0.5)},"Gear":${i32(1)}},` +
    `"Wheels":[{"Ind":${i32(0)},"AngVel":${d(30)},"ReqTorq":${d(100)},"ReqBrakeTorq":${d(0)},"Steer":${d(0.05)},"Sus":${d(10)},"LongSlip":${d(0.01)},"LatSlip":${d(0)}}]},` +
    `"NavSensor":{"Position":${v3(1, 2, 3)},"Lat":${d(48.1)},"Lon":${d(11.5)},"Alt":${d(520)}}}`;
  let run: number;

  before(async () => {
    const folder = await folderWith('g2', {
      'datasets.json': [
        `{"_id":${i64(3)},"begin_ts":${i64(BEGIN)},"unreal_soda_ver":"1.1.0","actors":[` +
          `{"name":"Ego","type":"ego","class":"SodaSampleVeh03_C","description":{"Extents":{"Forward":${d(230)},"Backward":${d(230)},"Left":${d(95)},"Right":${d(95)},"Up":${d(150)},"Down":${d(0)}},"TrackWidth":${d(160)},"WheelBaseWidth":${d(280)},"Mass":${d(1500)},"Wheels":[]}},` +
          `{"name":"Ghost","type":"vehicle","class":"GhostVehicle_C","description":{}},` +
          `{"name":"Walker","type":"pedestrian","class":"GhostPedestrian_C","description":{}}],` +
          `"end_ts":${i64(BEGIN + 20_000)},"end_reason":"quit_application"}`,
      ],
      'dataset3.json': [
        `{"name":"Ego","part":${i32(0)},"batch":[${egoRow(0)},${egoRow(1)}]}`,
        `{"name":"Ghost","part":${i32(0)},"batch":[{"Ts":${i64(BEGIN)},"Loc":${v3(0, 0, 0)},"Rot":${v3(0, 90, 0)},"Vel":${v3(500, 0, 0)},"Acc":${v3(10, 0, 0)},"route":{"Name":"r1"}}]}`,
        `{"name":"Walker","part":${i32(0)},"batch":[{"Ts":${i64(BEGIN)},"Loc":${v3(0, 0, 0)},"Rot":${v3(0, 0, 0)},"Vel":${v3(100, 0, 0)},"route":{"name":"sidewalk"}}]}`,
      ],
    });
    const result = await importSoda(store, await SodaFolder.openForRead(folder));
    run = result.runs[0]!.run.id;
    assert.equal(result.runs[0]!.run.endReason, 'quit_application');
  });

  it('the ego: [Roll, Pitch, Yaw], Bel as velocity, the pivot moved to the box centre', async () => {
    const [s] = await samplesOf(run, 'Ego/state');
    // Up 150 / down 0 cm: the centre is 0.75 m above the pivot; the car rolls 2 degrees.
    close(s!.roll, (2 * Math.PI) / 180, 'roll');
    close(s!.pitch, (5 * Math.PI) / 180, 'pitch (canonical nose-down)');
    close(s!.yaw, (-30 * Math.PI) / 180, 'yaw');
    close(s!.speed, 10, 'speed');
    assert.equal(s!.renderT, BEGIN + 5);
    assert.equal(s!.step, 0);
    const actor = (await store.listActors(run)).find((a) => a.id === 'Ego')!;
    assert.deepEqual(actor.extents, { length: 4.6, width: 1.9, height: 1.5 });
    assert.equal(actor.sourceClass, 'SodaSampleVeh03_C');
  });

  it('inputs with Break, wheels with Ind, and the NavSensor component as a stream', async () => {
    const [c] = await samplesOf(run, 'Ego/control');
    assert.deepEqual(
      { ...c, t: 0 },
      {
        t: 0,
        step: 0,
        throttle: 0.5,
        brake: 0.25,
        steer: -0.1,
        gear: 1,
        gearState: 1,
      },
    );
    const [w] = await samplesOf(run, 'Ego/wheels');
    assert.deepEqual((w!.wheels as object[])[0], {
      position: 'fl',
      angularVelocity: 30,
      torque: 100,
      brakeTorque: 0,
      steer: -0.05,
      suspension: 0.1,
      slipLong: 0.01,
      slipLat: 0,
    });
    const nav = await samplesOf(run, 'Ego/NavSensor');
    assert.equal(nav.length, 2);
    assert.deepEqual(nav[1], {
      t: BEGIN + 10_000,
      step: 1,
      Position: [1, 2, 3],
      Lat: 48.1,
      Lon: 11.5,
      Alt: 520,
    });
  });

  it('ghosts: route {Name} for vehicles, route {name} for pedestrians', async () => {
    const [g] = await samplesOf(run, 'Ghost/state');
    assert.equal(g!.route, 'r1');
    close(g!.yaw, -Math.PI / 2, 'ghost yaw (Unreal 90 is clockwise)');
    close(g!.accel, 0.1, 'ghost accel');
    const [p] = await samplesOf(run, 'Walker/state');
    assert.equal(p!.route, 'sidewalk');
    assert.equal(p!.accel, undefined, 'pedestrian rows have no acc');
  });
});

describe("soda G1: the manual's layout as SODA.Sim's code writes it", () => {
  // Synchronous mode: sim_ts counts from the start of the run, not from 1970.
  const egoRow = (k: number): string =>
    `{"sim_ts":${i64(k * 10_000)},"render_ts":${i64(k * 10_000 + 7)},"step":${i32(k)},"loc":${v3(100 + k * 10, 200, 0)},` +
    `"rot":${v3(10, 90, 0)},"vel":${v3(1000, 0, 0)},"acc":${v3(50, 0, 0)},"ang_vel":${v3(0, 0, 0.2)},"load":${d(0.4)},` +
    `"inputs":{"break":${d(0)},"steer":${d(0.1)},"throttle":${d(0.6)},"gear":${i32(2)}},` +
    `"wheels":[${[0, 1, 2, 3].map((w) => `{"4wd_ind":${i32(w)},"ang_vel":${d(31.25)},"req_torq":${d(80)},"req_brake_torq":${d(0)},"steer":${d(0)},"sus":${d(2)},"long_slip":${d(0)},"lat_slip":${d(0)}}`).join(',')}]}`;
  const gvas = Buffer.from('GVAS\x02\x00\x00\x00++UE5+Release-5.4', 'latin1');
  let run: number;
  let vehicles: number;
  let scenarios: number;

  before(async () => {
    const marks = `[{"type":"solid","points":[${v3(0, 0, 0)},${v3(1000, 0, 0)}],"type":"broken","points":[${v3(0, -350, 0)},${v3(1000, -350, 0)}]}]`;
    const folder = await folderWith('g1', {
      'datasets.json': [
        `{"_id":${i64(12)},"begin_ts":${i64(BEGIN)},"unreal_soda_ver":"1.0.0","actors":[` +
          `{"name":"SodaVehicle","type":"ego","class":"SodaSampleVeh03_C","description":{"extents":{"forward":${d(230)},"backward":${d(230)},"left":${d(95)},"right":${d(95)},"up":${d(75)},"down":${d(75)}},` +
          `"track_width":${d(160)},"wheel_base_width":${d(280)},"mass":${d(1500)},"wheels":[{"4wd_ind":${i32(0)},"radius":${d(32)},"location":${v3(140, -80, -40)}}]}},` +
          `{"name":"Ghost1","type":"vehicle","class":"GhostVehicle_C","description":{"extents":{"forward":${d(200)},"backward":${d(200)},"left":${d(90)},"right":${d(90)},"up":${d(70)},"down":${d(70)}}}},` +
          `{"name":"Walker1","type":"pedestrian","class":"GhostPedestrian_C","description":{}},` +
          `{"name":"OpenDrive","type":"opendrive","class":"OpenDriveTool","description":{"road_lanes_marks":${marks}}}],` +
          `"end_ts":${i64(BEGIN + 1_000_000)},"end_reason":"scenario_stop_trigger"}`,
      ],
      'dataset12.json': [
        `{"_id":{"$oid":"65f000000000000000000011"},"name":"SodaVehicle","part":${i32(0)},"batch":[${egoRow(0)},${egoRow(1)}]}`,
        `{"_id":{"$oid":"65f000000000000000000012"},"name":"Ghost1","part":${i32(0)},"batch":[{"ts":${i64(0)},"loc":${v3(0, 0, 0)},"rot":${v3(0, -90, 0)},"vel":${v3(500, 0, 0)},"acc":${v3(-20, 0, 0)},"route":{"name":"main"}}]}`,
        `{"_id":{"$oid":"65f000000000000000000013"},"name":"Walker1","part":${i32(0)},"batch":[{"ts":${i64(10_000)},"loc":${v3(0, 0, 0)},"rot":${v3(0, 0, 0)},"vel":${v3(120, 0, 0)},"route":{"name":""}}]}`,
        `{"_id":{"$oid":"65f000000000000000000014"},"name":"OpenDrive","part":${i32(0)},"batch":[]}`,
      ],
      'scenarios.json': [
        `{"_id":${i64(0)},"timestamp":${i64(BEGIN - 3_600_000_000)},"description":"cut-in","bin":{"$binary":{"base64":"${gvas.toString('base64')}","subType":"00"}}}`,
      ],
      'vehicles.json': [
        `{"_id":"SodaSampleVeh03","timestamp":${i64(BEGIN - 7_200_000_000)},"soda.sim":{"__class__":"SodaSampleVeh03_C","pitch":${i32(0)},"mass":${d(1500.5)},"big":${i64(5_000_000_000)}}}`,
      ],
    });
    const result = await importSoda(store, await SodaFolder.openForRead(folder));
    assert.deepEqual(
      result.runs.map((r) => [r.dataset, r.collection]),
      [[12, 'dataset12']],
    );
    run = result.runs[0]!.run.id;
    ({ vehicles, scenarios } = result);
  });

  it('the dataset: begin, end, end reason, version; actors with their types and classes', async () => {
    const info = (await store.getRun(run))!;
    assert.equal(info.begin, BEGIN);
    assert.equal(info.end, BEGIN + 1_000_000);
    assert.equal(info.endReason, 'scenario_stop_trigger');
    assert.deepEqual(info.simulator, { name: 'SODA.Sim', version: '1.0.0' });
    const actors = await store.listActors(run);
    assert.deepEqual(
      actors.map((a) => [a.id, a.kind, a.sourceClass]),
      [
        ['SodaVehicle', 'ego', 'SodaSampleVeh03_C'],
        ['Ghost1', 'vehicle', 'GhostVehicle_C'],
        ['Walker1', 'pedestrian', 'GhostPedestrian_C'],
        ['OpenDrive', 'map', 'OpenDriveTool'],
      ],
    );
    assert.deepEqual(actors[0]!.extents, { length: 4.6, width: 1.9, height: 1.5 });
  });

  it('ego rows: synchronous-mode sim_ts on the run clock, [pitch, yaw, roll], inputs with break, load, wheels', async () => {
    const states = await samplesOf(run, 'SodaVehicle/state');
    assert.deepEqual(
      states.map((s) => [s.t, s.step]),
      [
        [BEGIN, 0],
        [BEGIN + 10_000, 1],
      ],
    );
    const s = states[1]!;
    close(s.x, 1.1, 'x (cm to m)');
    close(s.y, -2, 'y (left-handed to right-handed)');
    close(s.yaw, -Math.PI / 2, 'yaw (Unreal 90 is clockwise)');
    close(s.pitch, (-10 * Math.PI) / 180, 'pitch (Unreal nose-up 10 is canonical -10)');
    close(s.speed, 10, 'speed');
    assert.equal(s.renderT, BEGIN + 10_007);
    const [c] = await samplesOf(run, 'SodaVehicle/control');
    assert.deepEqual(
      { ...c, t: 0 },
      { t: 0, step: 0, throttle: 0.6, brake: 0, steer: 0.1, gear: -1, gearState: 2, load: 0.4 },
      'SODA.Sim gear state 2 is reverse: gear -1, the state kept as recorded',
    );
    const [w] = await samplesOf(run, 'SodaVehicle/wheels');
    assert.deepEqual(
      (w!.wheels as { position: string; suspension: number }[]).map((x) => [x.position, x.suspension]),
      [
        ['fl', 0.02],
        ['fr', 0.02],
        ['rl', 0.02],
        ['rr', 0.02],
      ],
    );
  });

  it('ghost vehicle and pedestrian rows; the opendrive actor with an empty batch and both lane-mark pairs', async () => {
    const [g] = await samplesOf(run, 'Ghost1/state');
    assert.equal(g!.t, BEGIN);
    assert.equal(g!.route, 'main');
    close(g!.yaw, Math.PI / 2, 'ghost yaw');
    close(g!.accel, -0.2, 'ghost accel');
    const [p] = await samplesOf(run, 'Walker1/state');
    assert.equal(p!.t, BEGIN + 10_000);
    assert.equal(p!.accel, undefined);
    const attachment = (await store.getAttachment(run, LANE_MARKS_ATTACHMENT))!;
    const marks = JSON.parse(Buffer.from(attachment.data).toString('utf8')) as LaneMark[];
    assert.deepEqual(
      marks.map((m) => [m.type, m.shape[1]]),
      [
        ['solid', [10, 0, 0]],
        ['broken', [10, 3.5, 0]],
      ],
    );
  });

  it('scenarios keep their GVAS blob; vehicles their soda.sim document with its numbers', async () => {
    assert.equal(scenarios, 1);
    assert.equal(vehicles, 1);
    const scenario = (await store.scenarios.get(0n))!;
    assert.equal(scenario.description, 'cut-in');
    assert.equal(scenario.timestamp, BEGIN - 3_600_000_000);
    assert.deepEqual(Buffer.from(scenario.bin), gvas);
    const vehicle = (await store.vehicles.get('SodaSampleVeh03'))!;
    assert.equal(vehicle.timestamp, BEGIN - 7_200_000_000);
    assert.deepEqual(vehicle.doc, {
      __class__: 'SodaSampleVeh03_C',
      pitch: 0,
      mass: 1500.5,
      big: 5_000_000_000,
    });
  });
});

/** Builds BSON bytes by hand, so that a document can repeat a key as SODA.Sim's writer does. */
const enc = new TextEncoder();
const int32le = (n: number): Uint8Array => new Uint8Array(new Int32Array([n]).buffer);
function bsonDocument(elements: Uint8Array[]): Uint8Array {
  const size = 4 + elements.reduce((n, e) => n + e.byteLength, 0) + 1;
  return Buffer.concat([int32le(size), ...elements, new Uint8Array([0])]);
}
const element = (type: number, name: string, value: Uint8Array): Uint8Array =>
  Buffer.concat([new Uint8Array([type]), enc.encode(name), new Uint8Array([0]), value]);
const bsonString = (name: string, s: string): Uint8Array => {
  const bytes = enc.encode(s);
  return element(2, name, Buffer.concat([int32le(bytes.byteLength + 1), bytes, new Uint8Array([0])]));
};
const bsonArray = (name: string, items: ((key: string) => Uint8Array)[]): Uint8Array =>
  element(4, name, bsonDocument(items.map((item, k) => item(String(k)))));
const bsonDouble =
  (v: number) =>
  (name: string): Uint8Array =>
    element(1, name, new Uint8Array(new Float64Array([v]).buffer));
const bsonPoint =
  (x: number, y: number, z: number) =>
  (name: string): Uint8Array =>
    bsonArray(name, [bsonDouble(x), bsonDouble(y), bsonDouble(z)]);

describe('soda lane marks: repeated type/points keys', () => {
  const road = (key: string): Uint8Array =>
    element(
      3,
      key,
      bsonDocument([
        bsonString('type', 'solid'),
        bsonArray('points', [bsonPoint(0, 0, 0), bsonPoint(1000, -200, 0)]),
        bsonString('type', 'broken'),
        bsonArray('points', [bsonPoint(0, 350, 0), bsonPoint(1000, 350, 10)]),
      ]),
    );
  const descriptor = bsonDocument([
    bsonArray('actors', [
      (k) =>
        element(
          3,
          k,
          bsonDocument([
            bsonString('name', 'OpenDrive'),
            bsonString('type', 'opendrive'),
            element(3, 'description', bsonDocument([bsonArray('road_lanes_marks', [road])])),
          ]),
        ),
    ]),
  ]);

  it('a decoder keeps only the last pair; the raw BSON walk recovers both', () => {
    const decoded = BSON.deserialize(descriptor) as {
      actors: { description: { road_lanes_marks: { type: string }[] } }[];
    };
    assert.equal(decoded.actors[0]!.description.road_lanes_marks[0]!.type, 'broken');
    const found = laneMarksFromBson(descriptor, 'datasets document 0');
    const roads = found.get('actors.0.description')!;
    assert.deepEqual(
      roads[0]!.map(([k]) => k),
      ['type', 'points', 'type', 'points'],
    );
    const marks = roadsToLaneMarks(roads, 'road_lanes_marks');
    assert.deepEqual(
      marks.map((m) => [m.id, m.type, m.shape]),
      [
        [
          'road0.mark0',
          'solid',
          [
            [0, 0, 0],
            [10, 2, 0],
          ],
        ],
        [
          'road0.mark1',
          'broken',
          [
            [0, -3.5, 0],
            [10, -3.5, 0.1],
          ],
        ],
      ],
    );
  });

  it('the same from a line of Extended JSON with the keys repeated', () => {
    const line = BSON.EJSON.stringify(BSON.deserialize(descriptor, { promoteValues: false }), {
      relaxed: false,
    });
    // What mongoexport writes for the raw document: both pairs, in order.
    const repeated = line.replace(
      /"type":"broken"/,
      `"type":"solid","points":[${v3(0, 0, 0)},${v3(1000, -200, 0)}],"type":"broken"`,
    );
    const roads = laneMarksFromExtendedJson(repeated, 'datasets.json line 1').get('actors.0.description')!;
    assert.deepEqual(
      roadsToLaneMarks(roads, 'x').map((m) => m.type),
      ['solid', 'broken'],
    );
  });
});

const XODR = `<?xml version="1.0"?>
<OpenDRIVE>
  <header revMajor="1" revMinor="4"/>
  <road id="1" length="50" junction="-1">
    <planView><geometry s="0" x="0" y="0" hdg="0" length="50"><line/></geometry></planView>
    <lanes><laneSection s="0">
      <center><lane id="0" type="none"><roadMark sOffset="0" type="solid"/></lane></center>
      <right><lane id="-1" type="driving"><width sOffset="0" a="3.5" b="0" c="0" d="0"/><roadMark sOffset="0" type="broken"/></lane></right>
    </laneSection></lanes>
  </road>
</OpenDRIVE>`;

describe('soda G3: dataset_<N> with its descriptor, and the files collection', () => {
  // FGuid {A, B, C, D} = {0x01234567, 0x89ABCDEF, 0x00112233, 0x44556677}, each uint32 little-endian.
  const guid = Buffer.from([
    0x67, 0x45, 0x23, 0x01, 0xef, 0xcd, 0xab, 0x89, 0x33, 0x22, 0x11, 0x00, 0x77, 0x66, 0x55, 0x44,
  ]);
  const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
  const bin = (bytes: Uint8Array): string => `{"$binary":{"base64":"${b64(bytes)}","subType":"00"}}`;
  const vehicleJson = { __class__: 'SodaSampleVeh03_C', __unreal_soda_ver__: '1.2.0', bRecordDataset: true };
  let run: number;
  let warnings: string[];

  before(async () => {
    const marks =
      `[{"type":"solid","points":[${v3(0, 0, 0)},${v3(5000, 0, 0)}],` +
      `"type":"broken","points":[${v3(0, 350, 0)},${v3(5000, 350, 0)}]}]`;
    const folder = await folderWith('g3', {
      'dataset_5.json': [
        `{"_id":{"$oid":"65f000000000000000000001"},"begin_ts":${i64(BEGIN)},"unreal_soda_ver":"1.4.0","objects":[` +
          `{"name":"Ego","class":"SodaWheeledVehicle","Extents":{"Forward":${d(200)},"Backward":${d(200)},"Left":${d(90)},"Right":${d(90)},"Up":${d(75)},"Down":${d(75)}}},` +
          `{"name":"Ego.Engine","class":"VehicleEngine"},` +
          `{"name":"Map","class":"OpenDriveTool","road_lanes_marks":${marks},"xdor":${JSON.stringify(XODR)}}],` +
          `"end_ts":${i64(BEGIN + 10_000)},"end_reason":"user_request"}`,
        `{"name":"Ego","part":${i32(0)},"batch":[{"VehicleData":{"SimTsUs":${i64(BEGIN)},"RenderTsUs":${i64(BEGIN)},"Step":${i32(7)},"Loc":${v3(0, 0, 0)},"Rot":${v3(0, 0, 45)},"Bel":${v3(0, 0, 0)},"Acc":${v3(0, 0, 0)},"AngVel":${v3(0, 0, 0)}},` +
          `"Inputs":{"Break":${d(0)},"Steer":${d(0)},"Throttle":${d(1)},"Gear":${i32(1)}},"Wheels":[]}]}`,
        `{"name":"Ego.Engine","part":${i32(0)},"batch":[{"AngVel":${d(300)},"MaxTorq":${d(400)},"ReqTorq":${d(200)},"ActTor":${d(190)},"PedalPos":${d(0.5)}}]}`,
        `{"name":"Map","part":${i32(0)},"batch":[]}`,
      ],
      'files.json': [
        `{"_id":${bin(guid)},"type":${i32(0)},"label":"SodaSampleVeh03","description":"","class":"/Game/Soda/SodaSampleVeh03.SodaSampleVeh03_C","last_modified":${i64(1_700_000_000)},"hash":${bin(new Uint8Array(16))},"data":${bin(Buffer.from(JSON.stringify(vehicleJson), 'utf16le'))}}`,
        `{"_id":${bin(new Uint8Array(16).fill(1))},"type":${i32(3)},"label":"Cone","description":"","class":"/Game/Cone","last_modified":${i64(1_700_000_000)},"hash":${bin(new Uint8Array(16))},"data":${bin(new Uint8Array(2))}}`,
      ],
    });
    warnings = [];
    const result = await importSoda(store, await SodaFolder.openForRead(folder), {
      warn: (m) => warnings.push(m),
    });
    assert.deepEqual(
      result.runs.map((r) => [r.dataset, r.collection]),
      [[5, 'dataset_5']],
    );
    assert.equal(result.vehicles, 1);
    run = result.runs[0]!.run.id;
  });

  it('objects without a type: the ego from its class, its component as its stream', async () => {
    const actors = await store.listActors(run);
    assert.deepEqual(
      actors.map((a) => [a.id, a.kind, a.sourceClass]),
      [
        ['Ego', 'ego', 'SodaWheeledVehicle'],
        ['Map', 'map', 'OpenDriveTool'],
      ],
    );
    const [s] = await samplesOf(run, 'Ego/state');
    close(s!.yaw, -Math.PI / 4, 'yaw from Rot[2]');
    assert.equal(s!.step, 7);
    const [c] = await samplesOf(run, 'Ego/control');
    assert.equal(c!.throttle, 1);
    const [engine] = await samplesOf(run, 'Ego/Engine');
    // Component rows carry no time stamp: they are placed at the run's begin, in order.
    assert.deepEqual(engine, {
      t: BEGIN,
      step: 0,
      AngVel: 300,
      MaxTorq: 400,
      ReqTorq: 200,
      ActTor: 190,
      PedalPos: 0.5,
    });
  });

  it('road_lanes_marks: both pairs of the road, and xdor as the road network', async () => {
    const attachment = (await store.getAttachment(run, LANE_MARKS_ATTACHMENT))!;
    const marks = JSON.parse(Buffer.from(attachment.data).toString('utf8')) as LaneMark[];
    assert.deepEqual(
      marks.map((m) => [m.type, m.shape[1]]),
      [
        ['solid', [50, 0, 0]],
        ['broken', [50, -3.5, 0]],
      ],
    );
    const net = (await loadRoadNetwork(store, run))!;
    assert.equal(net.format, 'opendrive');
    assert.equal(net.source.text, XODR);
  });

  it('files: a vehicle in UTF-16LE JSON, its GUID in Unreal byte order; other types skipped by name', async () => {
    assert.equal(guidToString(guid), '01234567-89AB-CDEF-0011-223344556677');
    const vehicle = (await store.vehicles.get('SodaSampleVeh03'))!;
    assert.deepEqual(vehicle.doc, vehicleJson);
    assert.equal(vehicle.timestamp, 1_700_000_000_000_000);
    assert.ok(
      warnings.some((w) => /files\.type 3 \(Cone\)/.test(w)),
      warnings.join('\n'),
    );
  });
});
