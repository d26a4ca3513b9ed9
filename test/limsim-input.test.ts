/**
 * What a LimSim import refuses, and how: damaged or foreign files get an error naming the file, table,
 * row and column, and leave no run behind. Also the LimSim++ variant, and the commands.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { importLimSim } from './helpers/formats.js';
import { exportLimSim } from './helpers/formats.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';
import {
  alteredFixture,
  LIMSIM_FIXTURE,
  storeForTests,
  tableRows,
  tableSql,
} from './helpers/limsim-files.js';
import { cliJson, runCli } from './helpers/run-cli.js';
import { REPO_ROOT, SIMREC_BIN } from './helpers/paths.js';

const PEAK_PRELOAD = pathToFileURL(join(REPO_ROOT, 'dist', 'test', 'helpers', 'peak-rss.js')).href;

const tests = storeForTests('simrec-limsim-input-');
const dir = { path: tests.dir };

/** Rebuilds a table without LimSim's constraints, so it can hold what LimSim's schema forbids. */
const unconstrained = (table: string, columns: string): string => `
  CREATE TABLE loose(${columns});
  INSERT INTO loose SELECT * FROM ${table};
  DROP TABLE ${table};
  ALTER TABLE loose RENAME TO ${table};`;

const FRAME_COLUMNS =
  'frame INT, vid TEXT, vtag TEXT, x REAL, y REAL, yaw REAL, speed REAL, accel REAL, laneID TEXT, lanePos REAL, routeIdx INT';

async function refused(file: string, message: RegExp): Promise<void> {
  const before = (await tests.store.listRuns()).length;
  await assert.rejects(importLimSim(tests.store, file), (error: Error) => {
    assert.match(error.message, message);
    return true;
  });
  assert.equal((await tests.store.listRuns()).length, before, 'no run is left behind');
}

describe('LimSim import: bad input', () => {
  it('a file that is not SQLite', async () => {
    const file = join(dir.path, 'notes.db');
    writeFileSync(file, 'frame,vid,x,y\n697,69,318.2,390.4\n');
    await refused(file, /notes\.db: not an SQLite database \(it begins with "frame,vid,x,y/);
  });

  it('an SQLite file that is not a LimSim recording', async () => {
    const file = join(dir.path, 'other.db');
    const db = new Database(file);
    db.exec('CREATE TABLE runs(id INT)');
    db.close();
    await refused(file, /other\.db: not a LimSim recording: none of LimSim's tables .* found runs/);
  });

  it('a missing table', async () => {
    const file = alteredFixture(dir.path, 'no-lanes.db', 'DROP TABLE laneINFO');
    await refused(file, /no-lanes\.db: table laneINFO is missing; a LimSim recording has it/);
  });

  it('a missing column', async () => {
    const file = alteredFixture(dir.path, 'no-maxspeed.db', 'ALTER TABLE vehicleINFO DROP COLUMN maxSpeed');
    await refused(file, /no-maxspeed\.db: table vehicleINFO: column maxSpeed missing/);
  });

  it('a NULL where LimSim declares NOT NULL', async () => {
    const file = alteredFixture(
      dir.path,
      'null-x.db',
      `${unconstrained('frameINFO', FRAME_COLUMNS)} UPDATE frameINFO SET x = NULL WHERE frame = 720 AND vid = '67';`,
    );
    await refused(
      file,
      /null-x\.db: frameINFO row \d+ \(frame=720, vid="67"\), column x: NULL, but LimSim's schema declares it NOT NULL/,
    );
  });

  it('a frame row for a vehicle vehicleINFO does not have', async () => {
    const file = alteredFixture(
      dir.path,
      'ghost.db',
      `INSERT INTO frameINFO VALUES (700, '999', 'AoI', 1, 2, 0, 0, 0, 'x_0', 0, 0)`,
    );
    await refused(
      file,
      /ghost\.db: frameINFO row \d+ \(frame=700\), column vid: vehicle "999" is not in vehicleINFO/,
    );
  });

  it('a bad value in the last frame: the run begun is deleted', async () => {
    const file = alteredFixture(
      dir.path,
      'late.db',
      `${unconstrained('frameINFO', FRAME_COLUMNS)} UPDATE frameINFO SET speed = 'fast' WHERE frame = 728 AND vid = '69';`,
    );
    await refused(
      file,
      /late\.db: frameINFO row \d+ \(frame=728, vid="69"\), column speed: expected a finite number \(REAL\), got "fast"/,
    );
  });

  it('a lane of an edge edgeINFO does not have, and a shape that is not points, named with the file', async () => {
    const file = alteredFixture(
      dir.path,
      'bad-edge.db',
      `UPDATE laneINFO SET edgeID = 'nowhere' WHERE id = '-0.0.00_0'`,
    );
    await refused(file, /bad-edge\.db: laneINFO -0\.0\.00_0\.edgeID: no edgeINFO "nowhere"$/);
    const shape = alteredFixture(
      dir.path,
      'bad-shape.db',
      `UPDATE laneINFO SET rawShape = '1,2 north' WHERE id = '-0.0.00_0'`,
    );
    await refused(
      shape,
      /bad-shape\.db: laneINFO -0\.0\.00_0\.rawShape: expected points "x,y x,y", got "1,2 north"$/,
    );
  });

  it('reads columns by name, in any order', async () => {
    const file = alteredFixture(
      dir.path,
      'reordered.db',
      `CREATE TABLE v2(routes TEXT NOT NULL, vTypeID TEXT NOT NULL, maxSpeed REAL, maxDecel REAL, maxAccel REAL, width REAL NOT NULL, length REAL NOT NULL, vid TEXT PRIMARY KEY);
       INSERT INTO v2 SELECT routes, vTypeID, maxSpeed, maxDecel, maxAccel, width, length, vid FROM vehicleINFO;
       DROP TABLE vehicleINFO; ALTER TABLE v2 RENAME TO vehicleINFO;`,
    );
    const { run } = await importLimSim(tests.store, file);
    const ego = (await tests.store.listActors(run.id)).find((a) => a.id === '69')!;
    assert.equal(ego.extents?.length, 4.519999980926514);
    assert.equal(ego.attributes.vType, 'vehicle.nissan.patrol');
  });
});

describe('LimSim import: hostile sizes and repeats', () => {
  it('a lane of 40 M points (320 MB) is left out with a warning naming it, the import staying small; one of 50,000 is thinned', async () => {
    // SQLite writes the shapes itself: the test never holds them.
    const file = alteredFixture(
      dir.path,
      'long-lanes.db',
      `UPDATE laneINFO SET rawShape = replace(hex(zeroblob(40000000)), '00', '1.5,2.5 ') WHERE id = '-0.0.00_0';
       UPDATE laneINFO SET rawShape = replace(hex(zeroblob(50000)), '00', '1.5,2.5 ') || '9,9' WHERE id = '-0.0.00_1';`,
    );
    const store = join(dir.path, 'long-lanes-store.db');
    const peakFile = join(dir.path, 'long-lanes.peak');
    const r = spawnSync(
      process.execPath,
      ['--import', PEAK_PRELOAD, SIMREC_BIN, '--store', store, 'import', 'limsim', file, '--json'],
      { encoding: 'utf8', env: { ...process.env, SIMREC_PEAK_RSS_FILE: peakFile }, timeout: 300_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const peakMiB = Number(readFileSync(peakFile, 'utf8')) / 1024;
    assert.ok(peakMiB < 600, `the import peaked at ${peakMiB.toFixed(0)} MiB`);
    const { run, warnings } = JSON.parse(r.stdout) as { run: { id: number }; warnings: string[] };
    assert.ok(
      warnings.includes(
        `${file}: laneINFO "-0.0.00_0".rawShape: 320000000 bytes of points, more than the 1048576 a lane's shape may take; the lane is left out of the road network`,
      ),
      warnings.join('\n'),
    );
    assert.ok(
      warnings.includes(
        `${file}: laneINFO -0.0.00_1.rawShape: 50001 points, more than 10000; thinned to 8335 (every 6th and the last)`,
      ),
      warnings.join('\n'),
    );
    const opened = await openStore(store);
    const lanes = (await loadRoadNetwork(opened, run.id))!.lanes;
    await opened.close();
    assert.equal(
      lanes.find((l) => l.id === '-0.0.00_0'),
      undefined,
      'left out',
    );
    const thinned = lanes.find((l) => l.id === '-0.0.00_1')!;
    assert.equal(thinned.centerLine.length, 8335);
    assert.deepEqual(thinned.centerLine.at(-1), [9, 9], 'its last point kept');
  });

  it('rows that repeat a (frame, vid) or (frame, id) are read once, the first, with a warning', async () => {
    const file = alteredFixture(
      dir.path,
      'repeats.db',
      `${unconstrained('frameINFO', FRAME_COLUMNS)}
       INSERT INTO frameINFO SELECT frame, vid, vtag, x + 100, y, yaw, speed, accel, laneID, lanePos, routeIdx FROM frameINFO WHERE frame IN (700, 701);
       ${unconstrained('trafficLightStates', 'frame INT, id TEXT, currPhase TEXT, nextPhase TEXT, switchTime REAL')}
       INSERT INTO trafficLightStates SELECT * FROM trafficLightStates WHERE frame = 700;`,
    );
    const warnings: string[] = [];
    const { run } = await importLimSim(tests.store, file, { warn: (m) => warnings.push(m) });
    const repeated = tableRows(LIMSIM_FIXTURE, 'frameINFO').filter(
      (r) => r.frame === 700 || r.frame === 701,
    ).length;
    assert.ok(
      warnings.includes(
        `frameINFO: ${repeated} rows repeat a (frame, vid) read before (the first: frame 700, vid "41"); the first row of each was kept`,
      ),
      warnings.join('\n'),
    );
    assert.ok(
      warnings.some((w) =>
        /^trafficLightStates: \d+ rows? repeats? a \(frame, id\) read before \(the first: frame 700, id "[^"]+"\); the first row of each was kept$/.test(
          w,
        ),
      ),
      warnings.join('\n'),
    );
    // What is kept is what the file without its repeats gives: the first row of each.
    const plain = (await importLimSim(tests.store, LIMSIM_FIXTURE)).run;
    for (const stream of ['69/state', '41/state']) {
      const read = async (id: number): Promise<unknown[]> => {
        const out: unknown[] = [];
        for await (const batch of tests.store.readSamples({ run: id, stream })) out.push(...batch);
        return out;
      };
      assert.deepStrictEqual(await read(run.id), await read(plain.id), stream);
    }
  });
});

describe('LimSim import: yaws outside the range SUMO gives', () => {
  it("a planner's yaw keeps its whole turns: stored as yawTurns in the frames that have them, written back as it was", async () => {
    // LimSim's yaw is (90 - SUMO angle) in radians, in (-3pi/2, pi/2]; a planned vehicle's may be anything.
    const file = alteredFixture(
      dir.path,
      'turned-yaws.db',
      `UPDATE frameINFO SET yaw = yaw + 4 * pi() WHERE vid = '41' AND frame = 700;
       UPDATE frameINFO SET yaw = yaw - 2 * pi() WHERE vid = '41' AND frame = 702;`,
    );
    const { run } = await importLimSim(tests.store, file);
    const samples = new Map<number, Record<string, unknown>>();
    for await (const batch of tests.store.readSamples({ run: run.id, stream: '41/state' }))
      for (const sample of batch) samples.set(sample.step, sample);
    const raw = new Map(
      tableRows(file, 'frameINFO')
        .filter((r) => r.vid === '41')
        .map((r) => [r.frame as number, r.yaw as number]),
    );
    assert.equal(samples.get(700)!.yawTurns, 2);
    assert.equal(samples.get(701)!.yawTurns, undefined, 'a frame without turns has none');
    assert.equal(samples.get(702)!.yawTurns, -1);
    // Another vehicle in the same frames has none.
    const other: Record<string, unknown>[] = [];
    for await (const batch of tests.store.readSamples({ run: run.id, stream: '69/state' }))
      other.push(...batch.filter((sample) => sample.step === 700 || sample.step === 702));
    assert.equal(other.length, 2, 'vehicle 69 is in frames 700 and 702');
    assert.deepEqual(
      other.map((sample) => sample.yawTurns),
      [undefined, undefined],
    );
    for (const frame of [700, 701, 702]) {
      const yaw = samples.get(frame)!.yaw as number;
      assert.ok(yaw > -Math.PI && yaw <= Math.PI, `frame ${frame}: yaw ${yaw} wrapped`);
    }
    const back = join(dir.path, 'turned-yaws-back.db');
    await exportLimSim(tests.store, run.id, back);
    for (const row of tableRows(back, 'frameINFO').filter((r) => r.vid === '41')) {
      const frame = row.frame as number;
      assert.ok(
        Math.abs((row.yaw as number) - raw.get(frame)!) < 1e-9,
        `frame ${frame}: ${String(row.yaw)} written back, ${raw.get(frame)} read`,
      );
    }
  });
});

/** LimSim++'s schema (LimSim_plus simModel/DBBridge.py), filled with the sample database's rows. */
const LIMSIM_PLUS = `
  DROP TABLE simINFO;
  CREATE TABLE simINFO(excuteTime TIMESTAMP PRIMARY KEY, egoID TEXT, netBoundary TEXT);
  INSERT INTO simINFO VALUES ('2024-05-20 10:00:00.5', '69', '0.06,0.0 473.11,399.44');
  CREATE TABLE l2(id TEXT PRIMARY KEY, rawShape TEXT, width REAL, maxSpeed REAL, edgeID TEXT, length REAL, type TEXT, allow TEXT, disallow TEXT);
  INSERT INTO l2 SELECT *, 'driving', '', 'pedestrian' FROM laneINFO;
  DROP TABLE laneINFO; ALTER TABLE l2 RENAME TO laneINFO;
  CREATE TABLE j2(id TEXT PRIMARY KEY, width REAL, maxSpeed REAL, length REAL, tlsIndex INT, type TEXT, allow TEXT, disallow TEXT);
  INSERT INTO j2 SELECT id, width, maxSpeed, length, tlsIndex, '', '', '' FROM junctionLaneINFO;
  DROP TABLE junctionLaneINFO; ALTER TABLE j2 RENAME TO junctionLaneINFO;
  DROP TABLE tlLogicINFO;
  CREATE TABLE t2(frame INT NOT NULL, id TEXT NOT NULL, currPhase TEXT, PRIMARY KEY (frame, id));
  INSERT INTO t2 SELECT frame, id, currPhase FROM trafficLightStates;
  DROP TABLE trafficLightStates; ALTER TABLE t2 RENAME TO trafficLightStates;
  DROP TABLE evaluationINFO;
  CREATE TABLE evaluationINFO(frame REAL PRIMARY KEY, traffic_light_score REAL, comfort_score REAL, efficiency_score REAL, speed_limit_score REAL, collision_score REAL, decision_score REAL, caution TEXT);
  INSERT INTO evaluationINFO VALUES (700, 1, 0.9, 0.8, 1, 1, 0.92, '');
  CREATE TABLE QAINFO(frame INT PRIMARY KEY, description TEXT, navigation TEXT, actions TEXT, few_shots TEXT, response TEXT, prompt_tokens INT, completion_tokens INT, total_tokens INT, total_time REAL, choose_action INT);
  INSERT INTO QAINFO VALUES (700, 'a junction ahead', 'go straight', 'AC IDLE DC', '', 'IDLE', 900, 40, 940, 2.5, 1);
  CREATE TABLE imageINFO(frame INT PRIMARY KEY, CAM_FORNT BLOB, CAM_FRONT_RIGHT BLOB);
  INSERT INTO imageINFO VALUES (700, X'80049501', NULL);
  CREATE TABLE resultINFO(egoID TEXT PRIMARY KEY, result BOOLEAN, total_score REAL, complete_percentage REAL, drive_score REAL, use_time REAL, fail_reason TEXT);
  INSERT INTO resultINFO VALUES ('69', 1, 88.5, 1.0, 88.5, 3.2, '');`;

describe('LimSim++ recordings', () => {
  it('are recognised by their schema and read', async () => {
    const file = alteredFixture(dir.path, 'plus.db', LIMSIM_PLUS);
    const warnings: string[] = [];
    const { run, variant } = await importLimSim(tests.store, file, { warn: (m) => warnings.push(m) });
    assert.equal(variant, 'limsim++');
    assert.equal(run.simulator.name, 'LimSim++');
    assert.equal(run.begin, Date.UTC(2024, 4, 20, 10) * 1000 + 500_000);
    assert.deepEqual((run.metadata.limsimResult as unknown[])[0], {
      egoID: '69',
      result: 1,
      total_score: 88.5,
      complete_percentage: 1,
      drive_score: 88.5,
      use_time: 3.2,
      fail_reason: '',
    });
    const streams = await tests.store.listStreams(run.id);
    const evaluation = streams.find((s) => s.id === '69/limsim_evaluation')!;
    assert.deepEqual(
      evaluation.fields.map((f) => f.name),
      [
        'traffic_light_score',
        'comfort_score',
        'efficiency_score',
        'speed_limit_score',
        'collision_score',
        'decision_score',
        'caution',
      ],
    );
    assert.equal(streams.find((s) => s.id === '69/limsim_qa')!.samples, 1);
    assert.equal(streams.find((s) => s.id === '965/signal')!.samples, 32);
    const image = await tests.store.getAttachment(run.id, 'limsim/imageINFO/700/CAM_FORNT.pkl');
    assert.deepEqual([...image!.data], [0x80, 0x04, 0x95, 0x01]);
    const net = (await loadRoadNetwork(tests.store, run.id))!;
    assert.equal(net.lanes.find((l) => l.id === '-0.0.00_0')!.type, 'driving');
    assert.deepEqual(net.lanes.find((l) => l.id === '-0.0.00_0')!.disallow, ['pedestrian']);
    // No tlLogicINFO: lights are named after their junctions, as LimSim++ does.
    const lit = net.connections.filter((c) => c.trafficLight === '965');
    assert.ok(lit.length > 0);
  });

  it('export as LimSim master, the schema replay reads', async () => {
    const file = alteredFixture(dir.path, 'plus2.db', LIMSIM_PLUS);
    const { run } = await importLimSim(tests.store, file);
    const out = join(dir.path, 'plus-out.db');
    await exportLimSim(tests.store, run.id, out);
    assert.deepEqual(tableSql(out), tableSql(LIMSIM_FIXTURE));
  });

  it('with simINFO unlike either variant, are refused naming what differs', async () => {
    const file = alteredFixture(
      dir.path,
      'neither.db',
      'DROP TABLE simINFO; CREATE TABLE simINFO(runTime TEXT, egoID TEXT)',
    );
    await refused(
      file,
      /simINFO has neither startTime \(LimSim\) nor excuteTime \(LimSim\+\+\); its columns are runTime, egoID/,
    );
  });
});

describe('simrec import limsim / export RUN limsim', () => {
  it('import, export and import again from the command line, quiet when piped', () => {
    const storeFile = join(dir.path, 'cli.db');
    const env = { SIMREC_STORE: storeFile };
    const imported = cliJson<{ run: { id: number }; variant: string; rows: Record<string, number> }>(
      ['import', 'limsim', LIMSIM_FIXTURE, '--json'],
      env,
    );
    assert.equal(imported.variant, 'limsim');
    assert.equal(imported.rows.frameINFO, 109);
    const out = join(dir.path, 'cli-out.db');
    const exported = runCli(['export', String(imported.run.id), 'limsim', out], env);
    assert.equal(exported.status, 0, exported.stderr);
    assert.equal(exported.stdout, `run ${imported.run.id} -> ${out}\n`);
    assert.ok(!exported.stderr.includes('\r'), 'no progress bar when piped');
    const again = runCli(['export', String(imported.run.id), 'limsim', out], env);
    assert.notEqual(again.status, 0);
    assert.match(again.stderr, /exists.*--force/);
    // A run never evaluated (here LimSim's, its evaluationINFO dropped) is exported with LimSim's
    // evaluation computed for the file: evaluationINFO is filled, as LimSim's recorder fills it.
    const bare = alteredFixture(dir.path, 'no-evaluation.db', 'DELETE FROM evaluationINFO;');
    const run = cliJson<{ run: { id: number } }>(['import', 'limsim', bare, '--json'], env).run.id;
    const evaluated = join(dir.path, 'cli-evaluated.db');
    const result = cliJson<{ evaluation: string }>(
      ['export', String(run), 'limsim', evaluated, '--json'],
      env,
    );
    assert.equal(result.evaluation, 'computed');
    assert.equal(tableRows(evaluated, 'evaluationINFO').length, 32);
    const bad = runCli(['import', 'nosuch', LIMSIM_FIXTURE], env);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /FORMAT: expected one of limsim/);
  });
});
