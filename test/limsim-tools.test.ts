/**
 * What LimSim's own tools need of an export, pinned on simrec's side (CI cannot fetch LimSim). Each
 * case is one that broke LimSim's code (PJLab-ADG/LimSim 410b86e) when it read an earlier export:
 * its replay stops at the first frame with no rows, its interactive replay plans for every vehicle
 * row (and dies on a walker or a NULL maxDecel), its evaluation has no geometry for a junction's
 * second internal lane, and its report.py needs evaluationINFO. The last case compares with rows
 * LimSim's own recorder (simModel/egoTracking/model.py, SUMO driving) wrote for the same SUMO run.
 */
import { exportRecording } from '../src/replay/export-run.js';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { evaluationFrames } from '../src/evaluate/evaluate-run.js';
import { limsimCodec } from './helpers/formats.js';
import { exportLimSim } from './helpers/formats.js';
import { recordSumo } from '../src/ingest/traci/sumo-recorder.js';
import { stateStream } from '../src/model/standard-streams.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { LimSimLanes } from '../src/roadnet/limsim/limsim-geometry.js';
import { readRoadNetworkFile } from '../src/roadnet/read-roadnet.js';
import { attachRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { storeForTests, tableRows, type Row } from './helpers/limsim-files.js';
import { fixture } from './helpers/paths.js';

const tests = storeForTests('simrec-limsim-tools-');

let sumoMissing: string | false = false;
try {
  execFileSync('sumo', ['--version'], { stdio: 'pipe' });
} catch {
  sumoMissing = 'sumo is not installed here (.ci/run installs it: apt-get install sumo sumo-tools)';
}

const frames = (file: string, vid: string): number[] =>
  tableRows(file, 'frameINFO')
    .filter((r) => r.vid === vid)
    .map((r) => r.frame as number)
    .sort((a, b) => a - b);

const contiguous = (list: number[]): boolean => list.every((f, i) => i === 0 || f === list[i - 1]! + 1);

describe("a LimSim export: what LimSim's replay, interactive replay and report need", () => {
  for (const rateHz of [5, 1])
    it(`has every 0.1 s frame of a ${rateHz} Hz run (LimSim's replay ends at the first frame with no rows)`, async () => {
      const run = await recordSyntheticRun(tests.store, { duration: 4, rateHz, vehicles: 2 });
      const file = join(tests.dir, `rate-${rateHz}.db`);
      const result = await exportLimSim(tests.store, run.id, file);
      assert.ok(result.resampled.includes('ego/state'));
      const ego = frames(file, 'ego');
      assert.deepEqual([ego[0], ego.at(-1), ego.length], [0, 40, 41]);
      for (const vid of ['ego', 'veh1', 'veh2']) assert.ok(contiguous(frames(file, vid)), vid);
    });

  it('leaves pedestrians out and gives every vehicle its limits (none NULL)', async () => {
    const { run } = await recordDemoRun(tests.store, { duration: 3, vehicles: 6, pedestrians: 4, seed: 3 });
    const file = join(tests.dir, 'demo.db');
    const warnings: string[] = [];
    await exportLimSim(tests.store, run.id, file, { warn: (m) => warnings.push(m) });
    const actors = await tests.store.listActors(run.id);
    const walkers = new Set(actors.filter((a) => a.kind === 'pedestrian').map((a) => a.id));
    assert.ok(walkers.size > 0, 'the demo has pedestrians');
    assert.ok(warnings.some((w) => new RegExp(`${walkers.size} pedestrians left out`).test(w)));
    const vehicles = tableRows(file, 'vehicleINFO');
    assert.ok(vehicles.every((v) => !walkers.has(v.vid as string)));
    assert.ok(tableRows(file, 'frameINFO').every((r) => !walkers.has(r.vid as string)));
    // The demo keeps SUMO's vType attributes (accel, decel, maxSpeed): those are LimSim's columns.
    for (const v of vehicles) {
      const a = actors.find((x) => x.id === v.vid)!.attributes;
      assert.deepEqual([v.maxAccel, v.maxDecel, v.maxSpeed], [a.accel, a.decel, a.maxSpeed], String(v.vid));
    }
  });

  it("fills missing limits with SUMO's default vType's, and says so", async () => {
    const run = await recordSyntheticRun(tests.store, { duration: 1, vehicles: 1 });
    const file = join(tests.dir, 'limits.db');
    const warnings: string[] = [];
    await exportLimSim(tests.store, run.id, file, { warn: (m) => warnings.push(m) });
    const ego = tableRows(file, 'vehicleINFO').find((v) => v.vid === 'ego')!;
    assert.deepEqual([ego.maxAccel, ego.maxDecel, ego.maxSpeed], [2.6, 4.5, 20]);
    assert.ok(warnings.some((w) => /2 vehicles \(ego, veh1\) have no accel, decel or max speed/.test(w)));
  });

  it('computes evaluationINFO in LimSim mode when the run has none, without storing it', async () => {
    const run = await recordSyntheticRun(tests.store, { duration: 3, vehicles: 2 });
    const file = join(tests.dir, 'evaluated-on-export.db');
    const details = await exportRecording(tests.store, limsimCodec, [run.id], file, {
      evaluate: (id) => evaluationFrames(tests.store, id, 'limsim'),
    });
    assert.equal(details.evaluation, 'computed');
    const rows = tableRows(file, 'evaluationINFO');
    assert.deepEqual(
      rows.map((r) => r.frame),
      frames(file, 'ego'),
    );
    for (const r of rows) {
      assert.ok((r.collision as number) > 0 && (r.collision as number) <= 20, `frame ${String(r.frame)}`);
      assert.equal(typeof r.consumption, 'number');
    }
    const streams = await tests.store.listStreams(run.id);
    assert.ok(!streams.some((s) => s.name === 'evaluation'), 'the run itself is not changed');
  });

  for (const stepLength of [0.1, 1])
    it(`numbers a SUMO run's frames as LimSim counts steps (${stepLength} s steps)`, async () => {
      // simrec labels the state after SUMO's first step with the step's start (SUMO's own outputs do);
      // LimSim calls that state frame 1, the count of simulationStep() calls so far.
      const rec = await RunRecorder.begin(tests.store, {
        simulator: { name: 'sumo', version: '1.15.0' },
        metadata: { stepLength },
      });
      await rec.declareActor({ id: 'car', kind: 'ego', extents: { length: 5, width: 1.8, height: 1.5 } });
      await rec.declareStream(stateStream('car'));
      for (let k = 0; k < 4; k++)
        await rec.append('car/state', {
          t: rec.run.begin + Math.round(k * stepLength * 1e6),
          step: k,
          x: 10 * k * stepLength,
          y: 0,
          yaw: 0,
          speed: 10,
        });
      await rec.end('completed');
      const file = join(tests.dir, `sumo-frames-${stepLength}.db`);
      await exportLimSim(tests.store, rec.id, file);
      const first = Math.round(stepLength * 10);
      const last = Math.round(4 * stepLength * 10);
      assert.deepEqual(
        frames(file, 'car'),
        Array.from({ length: last - first + 1 }, (_, i) => first + i),
      );
      const rows = tableRows(file, 'frameINFO');
      rows.forEach((r) => assert.ok(Math.abs((r.x as number) - ((r.frame as number) - first)) < 1e-9));
    });

  it("writes a junction's second internal lane as the link's first, at LimSim's spline position", async () => {
    // bigInter: E2 lane 2 turns left onto E1 lane 1 through :J1_4_0, then :J1_30_0 after the
    // internal junction. LimSim knows only :J1_4_0 (connectionINFO's via).
    const { network } = await readRoadNetworkFile(fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'));
    const lane = (id: string) => network.lanes.find((l) => l.id === id)!;
    const path = ['E2_2', ':J1_4_0', ':J1_30_0', 'E1_1'].map(lane);
    const rec = await RunRecorder.begin(tests.store, { simulator: { name: 'test' } });
    await rec.declareActor({ id: 'car', kind: 'ego', extents: { length: 5, width: 1.8, height: 1.5 } });
    await rec.declareStream(stateStream('car'));
    let k = 0;
    for (const l of path) {
      const [a, b] = [l.centerLine.at(-2)!, l.centerLine.at(-1)!];
      const yaw = Math.atan2(b[1] - a[1], b[0] - a[0]);
      await rec.append('car/state', {
        t: rec.run.begin + k * 100_000,
        step: k++,
        x: (a[0] + b[0]) / 2,
        y: (a[1] + b[1]) / 2,
        yaw,
        speed: 8,
        lane: l.id,
        lanePos: l.length - Math.hypot(b[0] - a[0], b[1] - a[1]) / 2,
      });
    }
    await rec.end('completed');
    await attachRoadNetwork(tests.store, rec.id, network);
    const file = join(tests.dir, 'junction.db');
    await exportLimSim(tests.store, rec.id, file);
    const rows = tableRows(file, 'frameINFO') as (Row & { x: number; y: number; lanePos: number })[];
    assert.deepEqual(
      rows.map((r) => r.laneID),
      ['E2_2', ':J1_4_0', ':J1_4_0', 'E1_1'],
    );
    // On the link's own first lane, SUMO's position is LimSim's; on the second, LimSim's recorder
    // matches the vehicle to the first lane's spline and writes the spline's s.
    assert.equal(rows[1]!.lanePos, path[1]!.length - Math.hypot(...sub(path[1]!)) / 2);
    const spline = new LimSimLanes(network).spline(':J1_4_0')!;
    assert.equal(rows[2]!.lanePos, spline.toFrenet(rows[2]!.x, rows[2]!.y).s);
    assert.ok(rows[2]!.lanePos > rows[1]!.lanePos);
    // routeIdx on the junction: the edge it came from (SUMO's route index and LimSim's agree).
    assert.deepEqual(
      rows.map((r) => r.routeIdx),
      [0, 0, 0, 1],
    );
    assert.equal(tableRows(file, 'vehicleINFO')[0]!.routes, 'E2 E1');
  });
});

function sub(l: { centerLine: number[][] }): [number, number] {
  const a = l.centerLine.at(-2)!;
  const b = l.centerLine.at(-1)!;
  return [b[0]! - a[0]!, b[1]! - a[1]!];
}

describe(
  "simrec record sumo, then export limsim: the rows LimSim's own recorder wrote",
  { skip: sumoMissing },
  () => {
    it('bigInter, vehicle 8 turning left through two internal lanes, 0.1 s steps', async () => {
      // LimSim's recorder runs SUMO with these options; simrec is given the same.
      const { run } = await recordSumo(tests.store, {
        net: fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'),
        routes: [fixture('limsim-networks', 'bigInter', 'bigInter.rou.xml')],
        stepLength: 0.1,
        ego: '8',
        area: { kind: 'ego', radius: 100 },
        duration: 62,
        sumoArgs: ['--lateral-resolution', '10', '--collision.action', 'remove'],
      });
      const file = join(tests.dir, 'sumo-ego-8.db');
      await exportLimSim(tests.store, run.id, file);
      // vehicleINFO and frameINFO rows of vehicle 8 (15 digits, as the sqlite3 shell prints them) as LimSim 410b86e's model.py wrote them for the
      // same run (ego 7, SUMO 1.15 driving every vehicle, no planner).
      assert.deepEqual(
        tableRows(file, 'vehicleINFO').find((v) => v.vid === '8'),
        {
          vid: '8',
          length: 5,
          width: 1.8,
          maxAccel: 2.6,
          maxDecel: 4.5,
          maxSpeed: 200 / 3.6,
          vTypeID: 'DEFAULT_VEHTYPE',
          routes: 'E2 E1',
        },
      );
      const limsim: [number, string, number, number, number, number, number, number][] = [
        [
          570,
          ':J1_4_0',
          7.11984267410493,
          0,
          -2.64313891575299,
          10.0787036467238,
          -1.19086527565305,
          8.92530478967483,
        ],
        [
          575,
          ':J1_4_0',
          10.9280575703947,
          0,
          -0.992240467366222,
          6.66596100192195,
          -0.98507357110696,
          6.71642979257951,
        ],
        [597, ':J1_4_0', 28.5, 0, 12.6022486914763, -6.43846026288297, -0.356132972741567, 10.933326940839],
        [598, ':J1_4_0', 29.65, 0, 13.6504803115623, -6.82839649496588, -0.356132972741567, 11.1878202710415],
        [610, 'E1_1', 11.5323857125393, 1, 28.3323857125393, -8.0, 0.0, 12.9989418632133],
      ];
      const ours = new Map(
        tableRows(file, 'frameINFO')
          .filter((r) => r.vid === '8')
          .map((r) => [r.frame as number, r]),
      );
      for (const [frame, laneID, lanePos, routeIdx, x, y, yaw, speed] of limsim) {
        const r = ours.get(frame)!;
        assert.ok(r, `frame ${frame}`);
        assert.equal(r.laneID, laneID, `frame ${frame}`);
        assert.equal(r.routeIdx, routeIdx, `frame ${frame}`);
        for (const [name, want] of [
          ['lanePos', lanePos],
          ['x', x],
          ['y', y],
          ['yaw', yaw],
          ['speed', speed],
        ] as const)
          assert.ok(
            Math.abs((r[name] as number) - want) < 1e-9,
            `frame ${frame} ${name}: ${String(r[name])} vs ${want}`,
          );
      }
      const ego = frames(file, '8');
      assert.ok(contiguous(ego));
      assert.ok(
        [...ours.values()].every((r) => !/^:J1_3\d_/.test(r.laneID as string)),
        'no second internal lane',
      );
    });
  },
);
