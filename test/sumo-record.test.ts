/**
 * Recording a real SUMO (Debian's sumo 1.15, installed by .ci/run) over TraCI, checked against SUMO's
 * own --fcd-output of the same run: every vehicle at every step, positions within 1 cm.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { XMLParser } from 'fast-xml-parser';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { recordSumo, type SumoRecordOptions } from '../src/ingest/traci/sumo-recorder.js';
import { SimrecError } from '../src/model/errors.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { sceneAt, streamSamples } from '../src/replay/run-queries.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { exportLimSim } from './helpers/formats.js';
import Database from 'better-sqlite3';
import { openStore } from '../src/store/open-store.js';
import { fixture, SIMREC_BIN, tempDir } from './helpers/paths.js';
import { runCli } from './helpers/run-cli.js';

let sumoMissing: string | false = false;
try {
  execFileSync('sumo', ['--version'], { stdio: 'pipe' });
} catch {
  sumoMissing = 'sumo is not installed here (.ci/run installs it: apt-get install sumo sumo-tools)';
}

const dir = tempDir('simrec-sumo-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(dir.path, 'sumo.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

interface FcdVehicle {
  id: string;
  /** Set for a person (SUMO's fcd output lists them apart, with an edge instead of a lane). */
  person?: true;
  pos: string;
  x: string;
  y: string;
  angle: string;
  speed: string;
  lane: string;
}

/** SUMO's own record of the run: time -> vehicle or person id -> front position, angle, speed. */
function readFcd(path: string): Map<number, Map<string, FcdVehicle>> {
  const doc = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (name) => name === 'timestep' || name === 'vehicle' || name === 'person',
  }).parse(readFileSync(path, 'utf8')) as {
    'fcd-export': { timestep?: { time: string; vehicle?: FcdVehicle[]; person?: FcdVehicle[] }[] };
  };
  const out = new Map<number, Map<string, FcdVehicle>>();
  for (const step of doc['fcd-export'].timestep ?? [])
    out.set(
      Math.round(Number(step.time) * 1000),
      new Map([
        ...(step.vehicle ?? []).map((v) => [v.id, v] as const),
        ...(step.person ?? []).map((p) => [p.id, { ...p, person: true as const }] as const),
      ]),
    );
  return out;
}

/** Records with --fcd-output and compares every vehicle-step; returns the counts compared. */
async function recordAndCompare(
  options: SumoRecordOptions,
  sumoArgs: string[] = [],
): Promise<{
  compared: number;
  runId: number;
  vehicles: number;
  persons: number;
  vehicleTypes: number;
  begin: number;
}> {
  const fcdFile = join(dir.path, `fcd-${Date.now()}.xml`);
  const result = await recordSumo(store, {
    ...options,
    sumoArgs: ['--fcd-output', fcdFile, '--seed', '42', ...sumoArgs],
  });
  const fcd = readFcd(fcdFile);
  const begin = result.run.begin;
  const actors = await store.listActors(result.run.id);
  let compared = 0;
  const recorded = new Map<number, Set<string>>();
  for (const actor of actors.filter((a) => a.kind !== 'traffic_light')) {
    for await (const batch of streamSamples(store, result.run.id, `${actor.id}/state`))
      for (const s of batch as (Sample & { x: number; y: number; yaw: number; speed: number })[]) {
        const ms = Math.round((s.t - begin) / 1000);
        const v = fcd.get(ms)?.get(actor.id);
        assert.ok(v, `${actor.id} at ${ms / 1000} s is in SUMO's fcd output`);
        // The model keeps the centre; SUMO's outputs give the front bumper.
        const half = actor.extents!.length / 2;
        const fx = s.x + half * Math.cos(s.yaw);
        const fy = s.y + half * Math.sin(s.yaw);
        assert.ok(
          Math.abs(fx - Number(v.x)) <= 0.01 && Math.abs(fy - Number(v.y)) <= 0.01,
          `${actor.id} at ${ms / 1000} s: (${fx}, ${fy}) vs fcd (${v.x}, ${v.y})`,
        );
        assert.ok(Math.abs(s.speed - Number(v.speed)) <= 0.01);
        assert.equal(actor.kind, v.person ? 'pedestrian' : actor.kind === 'ego' ? 'ego' : 'vehicle');
        if (!v.person) {
          assert.ok(
            Math.abs((s.lanePos as number) + half - Number(v.pos)) <= 0.01,
            `${actor.id} lane position of the centre`,
          );
          assert.equal(s.lane, v.lane);
        }
        if (!recorded.has(ms)) recorded.set(ms, new Set());
        recorded.get(ms)!.add(actor.id);
        compared++;
      }
  }
  if (!options.area || options.area.kind === 'all')
    for (const [ms, vehicles] of fcd)
      for (const id of vehicles.keys())
        assert.ok(recorded.get(ms)?.has(id), `fcd has ${id} at ${ms / 1000} s, the recording does too`);
  return {
    compared,
    runId: result.run.id,
    vehicles: result.vehicles,
    persons: result.persons,
    vehicleTypes: result.vehicleTypes,
    begin: result.run.begin,
  };
}

describe('recording SUMO over TraCI', { skip: sumoMissing }, () => {
  it("esmini's straight road: every vehicle at every 10 ms step matches SUMO's fcd output within 1 cm", async () => {
    const { compared, runId } = await recordAndCompare({
      config: fixture('esmini', 'sumo', 'straight.sumocfg'),
      duration: 20,
    });
    assert.ok(compared > 3500, `${compared} vehicle-steps compared`);
    const run = await store.getRun(runId);
    assert.equal(run!.endReason, 'user_request', 'stopped by --duration');
    assert.equal(run!.simulator.name, 'sumo');
    const net = await loadRoadNetwork(store, runId);
    assert.ok(net && net.lanes.length > 0, 'the network from the config is kept with the run');
  });

  it("LimSim's bigInter net and routes, 0.1 s steps: every vehicle matches the fcd output", async () => {
    const { compared, vehicles } = await recordAndCompare({
      net: fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'),
      routes: [fixture('limsim-networks', 'bigInter', 'bigInter.rou.xml')],
      stepLength: 0.1,
      duration: 40,
    });
    assert.ok(vehicles >= 15, `${vehicles} vehicles`);
    assert.ok(compared > 1000, `${compared} vehicle-steps compared`);
  });

  it('a vehicle that lives 5 s is described (route, type) at 0.1 s steps, and said not to be at 1 s steps, whose 16 steps in flight outlast it', async () => {
    // One 72.8 m edge of LimSim's corridor at 13.9 m/s: about 5 s from departure to arrival. The steps
    // sent ahead span at most 3.2 s of SUMO's time, and never fewer than 16 steps.
    const routes = join(dir.path, 'short.rou.xml');
    writeFileSync(
      routes,
      `<routes><vType id="quick" maxSpeed="13.89"/><route id="r" edges="-E1"/>
        <vehicle id="q" type="quick" route="r" depart="0" departSpeed="max"/></routes>`,
    );
    const record = (stepLength: number) =>
      recordSumo(store, {
        net: fixture('limsim-networks', 'corridor', 'corridor.net.xml'),
        routes: [routes],
        stepLength,
        duration: 30,
      });
    const fine = await record(0.1);
    assert.deepEqual(fine.warnings, []);
    const q = (await store.listActors(fine.run.id)).find((a) => a.id === 'q')!;
    assert.deepEqual(q.attributes?.route, ['-E1']);
    assert.equal(q.attributes?.vType, 'quick');
    const coarse = await record(1);
    assert.equal(coarse.warnings.length, 1);
    assert.equal(
      coarse.warnings[0],
      'vehicle q arrived within 16 steps (16 s) of departing, before simrec asked SUMO for its route and vType: ' +
        'recorded without route, vType and speedFactor, as 4.5 m long and 1.8 m wide ' +
        "(simrec's questions reach SUMO up to 16 steps late; a shorter --step-length makes that less simulated time)",
    );
    const gone = (await store.listActors(coarse.run.id)).find((a) => a.id === 'q')!;
    assert.equal(gone.attributes?.route, undefined, 'recorded without its route');
    assert.equal(gone.attributes?.speedFactor, undefined, 'and without its speed factor');
  });

  it('vehicles SUMO reports arrived leave the run then, and are absent from scenes after', async () => {
    const tripinfo = join(dir.path, `tripinfo-${Date.now()}.xml`);
    // Three cars along esmini's 500 m straight road, each arriving at its end about 36 s after it left.
    const routes = join(dir.path, 'arrivals.rou.xml');
    writeFileSync(
      routes,
      `<routes><vType id="car" maxSpeed="30"/><route id="r" edges="-1.0.00"/>
        <vehicle id="a" type="car" route="r" depart="0" departSpeed="max"/>
        <vehicle id="b" type="car" route="r" depart="3" departSpeed="max"/>
        <vehicle id="c" type="car" route="r" depart="9" departSpeed="max"/></routes>`,
    );
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const timersBefore = timers();
    const result = await recordSumo(store, {
      net: fixture('esmini', 'sumo', 'straight.net.xml'),
      routes: [routes],
      stepLength: 0.1,
      duration: 120,
      sumoArgs: ['--tripinfo-output', tripinfo, '--seed', '42'],
    });
    assert.equal(result.run.endReason, 'completed', 'SUMO ran out of vehicles');
    // Nothing of the recording is left to keep the process alive (a timer waiting for SUMO's exit
    // once kept `simrec record sumo` from returning for 5 s after the run was recorded).
    assert.equal(timers(), timersBefore, 'no timer left running by recordSumo');
    const trips =
      (
        new XMLParser({
          ignoreAttributes: false,
          attributeNamePrefix: '',
          isArray: (n) => n === 'tripinfo',
        }).parse(readFileSync(tripinfo, 'utf8')) as {
          tripinfos: { tripinfo?: { id: string; arrival: string }[] };
        }
      ).tripinfos.tripinfo ?? [];
    assert.deepEqual(trips.map((t) => t.id).sort(), ['a', 'b', 'c'], 'SUMO says all three arrived');
    const actors = new Map((await store.listActors(result.run.id)).map((a) => [a.id, a]));
    const begin = result.run.begin;
    for (const trip of trips) {
      const presence = actors.get(trip.id)?.presence;
      assert.ok(presence?.length, `${trip.id} has presence`);
      const left = presence.at(-1)!.to;
      assert.ok(left !== null, `${trip.id} arrived at ${trip.arrival} s: its presence is closed`);
      // SUMO's arrival is the step it was removed in; the state at t is the state after the step that began at t.
      assert.ok(
        Math.abs((left - begin) / 1e6 - Number(trip.arrival)) <= 0.1 + 1e-9,
        `${trip.id}: left at ${(left - begin) / 1e6} s, SUMO says it arrived at ${trip.arrival} s`,
      );
      const scene = await sceneAt(store, result.run.id, { t: left + 50_000 });
      assert.ok(
        !scene.actors.some((a) => a.id === trip.id),
        `${trip.id} is not in the scene after it arrived`,
      );
      const before = await sceneAt(store, result.run.id, { t: left - 100_000 });
      assert.ok(
        before.actors.some((a) => a.id === trip.id),
        `${trip.id} is in the scene just before`,
      );
    }
  });

  it("SUMO's own cross scenario: every vehicle as its fcd output says, the traffic light at every step as its SaveTLSStates output says", async () => {
    const game = '/usr/share/sumo/tools/game';
    const tlsFile = join(dir.path, 'tls-states.xml');
    const saveStates = join(dir.path, 'save-tls.add.xml');
    writeFileSync(
      saveStates,
      `<additional><timedEvent type="SaveTLSStates" source="0" dest="${tlsFile}"/></additional>`,
    );
    const { compared, runId, begin } = await recordAndCompare({ config: join(game, 'cross.sumocfg') }, [
      '--additional-files',
      [join(game, 'cross', 'cross.tls.add.xml'), join(game, 'input_additional.add.xml'), saveStates].join(
        ',',
      ),
    ]);
    assert.ok(compared > 1000, `${compared} vehicle-steps compared`);
    const states = (
      new XMLParser({
        ignoreAttributes: false,
        attributeNamePrefix: '',
        isArray: (n) => n === 'tlsState',
      }).parse(readFileSync(tlsFile, 'utf8')) as {
        tlsStates: {
          tlsState: { time: string; id: string; programID: string; phase: string; state: string }[];
        };
      }
    ).tlsStates.tlsState;
    const signal = new Map<number, Sample>();
    for await (const batch of streamSamples(store, runId, '0/signal'))
      for (const s of batch) signal.set(Math.round((s.t - begin) / 1000), s);
    assert.equal(signal.size, 900, 'a signal sample for each of the 900 steps of 0.2 s');
    let matched = 0;
    for (const tls of states) {
      const s = signal.get(Math.round(Number(tls.time) * 1000));
      if (!s) continue; // SUMO also writes the state at its end time, one step after the last recorded
      assert.deepEqual(
        [s.state, s.phase, s.program],
        [tls.state, Number(tls.phase), tls.programID],
        `light ${tls.id} at ${tls.time} s`,
      );
      matched++;
    }
    assert.equal(matched, signal.size, 'every recorded signal sample is one SUMO wrote');
  });

  it("persons walking on sidewalks are recorded as pedestrians where SUMO's fcd output puts them", async () => {
    // SUMO's cross with sidewalks and crossings guessed by its own netconvert.
    const net = join(dir.path, 'walk.net.xml');
    execFileSync('netconvert', [
      '--sumo-net-file',
      '/usr/share/sumo/tools/game/cross/cross.net.xml',
      '--sidewalks.guess',
      'true',
      '--crossings.guess',
      'true',
      '-o',
      net,
    ]);
    const routes = join(dir.path, 'walk.rou.xml');
    writeFileSync(
      routes,
      `<routes><vType id="car" maxSpeed="13"/>
        <person id="walker0" depart="0"><walk edges="1fi 1si 2o 2fo"/></person>
        <vehicle id="car0" type="car" depart="1"><route edges="1fi 1si 3o 3fo"/></vehicle>
        <person id="walker1" depart="2"><walk edges="3fi 3si 4o 4fo"/></person></routes>`,
    );
    const { compared, persons } = await recordAndCompare({ net, routes: [routes], duration: 120 });
    assert.equal(persons, 2);
    assert.ok(compared > 200, `${compared} person- and vehicle-steps compared`);
  });

  it("each vehicle type's limits, size and class are read once and kept with every vehicle of the type", async () => {
    const routes = join(dir.path, 'types.rou.xml');
    writeFileSync(
      routes,
      `<routes>
        <vType id="car" accel="3.1" decel="5.2" maxSpeed="12.5" length="4.2" width="1.7" vClass="passenger"/>
        <vType id="lorry" accel="1.1" decel="3.3" maxSpeed="9" length="11.5" width="2.5" vClass="truck"/>
        <vehicle id="c1" type="car" depart="0"><route edges="1fi 1si 3o 3fo"/></vehicle>
        <vehicle id="t1" type="lorry" depart="1"><route edges="2fi 2si 4o 4fo"/></vehicle>
        <vehicle id="c2" type="car" depart="2"><route edges="3fi 3si 1o 1fo"/></vehicle></routes>`,
    );
    // SUMO's own vehroute output says which speed factor it drew for each vehicle (speedDev 0.1).
    const vehroute = join(dir.path, `vehroute-${Date.now()}.xml`);
    const { runId, vehicleTypes } = await recordAndCompare(
      {
        net: '/usr/share/sumo/tools/game/cross/cross.net.xml',
        routes: [routes],
        stepLength: 0.1,
        duration: 30,
      },
      ['--vehroute-output', vehroute, '--vehroute-output.speedfactor', '--vehroute-output.write-unfinished'],
    );
    assert.equal(vehicleTypes, 2, 'two types, each read once');
    const drawn = new Map(
      [...readFileSync(vehroute, 'utf8').matchAll(/<vehicle id="([^"]+)"[^>]* speedFactor="([^"]+)"/g)].map(
        (m) => [m[1]!, Number(m[2])] as const,
      ),
    );
    assert.equal(drawn.size, 3);
    assert.equal(new Set(drawn.values()).size, 3, "each vehicle's own factor, not its type's");
    const actors = new Map((await store.listActors(runId)).map((a) => [a.id, a]));
    const car = { vType: 'car', maxAccel: 3.1, maxDecel: 5.2, maxSpeed: 12.5, vClass: 'passenger' };
    const lorry = { vType: 'lorry', maxAccel: 1.1, maxDecel: 3.3, maxSpeed: 9, vClass: 'truck' };
    for (const [id, type, length, width, route] of [
      ['c1', car, 4.2, 1.7, ['1fi', '1si', '3o', '3fo']],
      ['c2', car, 4.2, 1.7, ['3fi', '3si', '1o', '1fo']],
      ['t1', lorry, 11.5, 2.5, ['2fi', '2si', '4o', '4fo']],
    ] as const) {
      const actor = actors.get(id)!;
      const { speedFactor, ...attributes } = actor.attributes;
      assert.deepEqual(attributes, { ...type, route }, id);
      // The vehroute output writes it to 4 decimals.
      assert.ok(
        Math.abs((speedFactor as number) - drawn.get(id)!) <= 5e-5,
        `${id}: speed factor ${speedFactor}, SUMO's ${drawn.get(id)}`,
      );
      assert.deepEqual([actor.extents?.length, actor.extents?.width], [length, width], id);
    }
  });

  it("speeding events respect the vehicle's own speed factor: driving up to it is no speeding", async () => {
    // A vehicle free to drive 1.15 times the lanes' 13.89 m/s (speedDev 0: exactly that factor).
    const routes = join(dir.path, 'keen.rou.xml');
    writeFileSync(
      routes,
      `<routes><vType id="keen" maxSpeed="30" speedFactor="1.15" speedDev="0"/>
        <vehicle id="e" type="keen" depart="0" departSpeed="max"><route edges="1fi 1si 2o 2fo"/></vehicle></routes>`,
    );
    const result = await recordSumo(store, {
      net: '/usr/share/sumo/tools/game/cross/cross.net.xml',
      routes: [routes],
      stepLength: 0.1,
      duration: 20,
      ego: 'e',
    });
    const ego = (await store.listActors(result.run.id)).find((a) => a.id === 'e')!;
    assert.ok(
      Math.abs((ego.attributes.speedFactor as number) - 1.15) < 1e-9,
      `${ego.attributes.speedFactor}`,
    );
    let top = 0;
    for await (const batch of streamSamples(store, result.run.id, 'e/state'))
      for (const s of batch) top = Math.max(top, s.speed as number);
    // Beyond the limit and the evaluator's 0.5 m/s tolerance: without the factor, speeding.
    assert.ok(top > 13.89 + 1, `it drove above the limit: ${top} m/s`);
    assert.ok(top <= 13.89 * 1.15 + 1e-6, `within its factor: ${top} m/s`);
    const { events } = await evaluateRun(store, result.run.id, { store: false });
    assert.deepEqual(
      events.filter((e) => e.kind === 'speeding'),
      [],
    );
  });

  it('a vehicle SUMO teleports out of a jam is recorded before, at and after the jump, as its fcd output says', async () => {
    // a stops for good near the end of its first edge; b, behind it, waits 10 s and is teleported on.
    const routes = join(dir.path, 'teleport.rou.xml');
    writeFileSync(
      routes,
      `<routes><vType id="car" maxSpeed="13"/>
        <vehicle id="a" type="car" depart="0"><route edges="1fi 1si 3o 3fo"/><stop lane="1fi_0" endPos="35" duration="1000"/></vehicle>
        <vehicle id="b" type="car" depart="2"><route edges="1fi 1si 3o 3fo"/></vehicle></routes>`,
    );
    const log = join(dir.path, 'teleport.log');
    const { runId, begin } = await recordAndCompare(
      {
        net: '/usr/share/sumo/tools/game/cross/cross.net.xml',
        routes: [routes],
        stepLength: 0.1,
        duration: 60,
      },
      ['--time-to-teleport', '10', '--log', log],
    );
    const jump = /Teleporting vehicle 'b'.*time=(\d+(?:\.\d+)?)/.exec(readFileSync(log, 'utf8'));
    assert.ok(jump, "SUMO's log says b was teleported");
    const at = Math.round(Number(jump[1]) * 1000);
    const lanes = new Map<number, string>();
    for await (const batch of streamSamples(store, runId, 'b/state'))
      for (const s of batch) lanes.set(Math.round((s.t - begin) / 1000), s.lane as string);
    assert.equal(lanes.get(at - 100), '1fi_0', 'b waits on its first edge the step before');
    assert.equal(lanes.get(at), '1si_0', 'b is on the next edge at the step of the jump');
    const b = (await store.listActors(runId)).find((a) => a.id === 'b')!;
    assert.equal(b.presence?.length, 1, 'b was there throughout: one stretch of presence');
  });

  it("LimSim's ego tracking: only vehicles within the radius, tagged ego, AoI and outOfAoI", async () => {
    const { runId } = await recordAndCompare({
      net: fixture('limsim-networks', 'roundabout', 'roundabout.net.xml'),
      routes: [fixture('limsim-networks', 'roundabout', 'roundabout.rou.xml')],
      stepLength: 0.1,
      duration: 30,
      ego: '2',
      area: { kind: 'ego', radius: 60 },
    });
    const actors = await store.listActors(runId);
    assert.equal(actors.find((a) => a.id === '2')?.kind, 'ego');
    const tags = new Set<string>();
    for (const a of actors.filter((x) => x.kind !== 'traffic_light'))
      for await (const batch of streamSamples(store, runId, `${a.id}/state`))
        for (const s of batch) tags.add(String(s.vtag));
    assert.ok(tags.has('ego') && tags.has('AoI'), `tags seen: ${[...tags]}`);
    assert.ok([...tags].every((t) => ['ego', 'AoI', 'outOfAoI'].includes(t)));
  });

  it('exported to LimSim, an ego-tracking recording holds what LimSim writes for the same simulation', async () => {
    const { runId } = await recordAndCompare({
      net: fixture('limsim-networks', 'roundabout', 'roundabout.net.xml'),
      routes: [fixture('limsim-networks', 'roundabout', 'roundabout.rou.xml')],
      stepLength: 0.1,
      duration: 30,
      ego: '2',
      area: { kind: 'ego', radius: 100 },
    });
    const file = join(dir.path, `limsim-${runId}.db`);
    await exportLimSim(store, runId, file);
    const db = new Database(file, { readonly: true });
    try {
      const sim = db.prepare('SELECT egoID, netBoundary FROM simINFO').get() as {
        egoID: string;
        netBoundary: string;
      };
      assert.equal(sim.egoID, '2');
      const rows = db
        .prepare(
          'SELECT frame, vid, vtag, x, y, yaw, speed, laneID, lanePos FROM frameINFO ORDER BY frame, vid',
        )
        .all() as {
        frame: number;
        vid: string;
        vtag: string;
        x: number;
        y: number;
        yaw: number;
        speed: number;
        laneID: string;
        lanePos: number;
      }[];
      // One row per vehicle per 0.1 s frame, the ego in every frame from its departure, tagged as LimSim
      // tags (AoI within 50 m of the ego, outOfAoI to 100 m); positions and lane positions of centres.
      const egoFrames = rows.filter((r) => r.vid === '2');
      assert.ok(egoFrames.length > 50);
      assert.ok(egoFrames.every((r) => r.vtag === 'ego'));
      for (let i = 1; i < egoFrames.length; i++)
        assert.equal(egoFrames[i]!.frame, egoFrames[i - 1]!.frame + 1);
      const byFrame = new Map(egoFrames.map((r) => [r.frame, r]));
      for (const r of rows) {
        const ego = byFrame.get(r.frame);
        if (!ego || r.vid === '2') continue;
        const d = Math.hypot(r.x - ego.x, r.y - ego.y);
        assert.ok(d <= 100.5, `${r.vid} at frame ${r.frame} is ${d} m from the ego`);
        assert.equal(r.vtag, d <= 50 ? 'AoI' : 'outOfAoI', `${r.vid} at frame ${r.frame}, ${d} m away`);
      }
      const vehicles = db.prepare('SELECT vid, length, routes FROM vehicleINFO').all() as {
        vid: string;
        length: number;
        routes: string;
      }[];
      assert.ok(
        vehicles.some((v) => v.vid === '2' && v.routes.length > 0),
        "the ego's route is kept",
      );
      assert.ok(
        (db.prepare('SELECT COUNT(*) AS n FROM laneINFO').get() as { n: number }).n > 0,
        'the network tables are filled',
      );
    } finally {
      db.close();
    }
  });

  it("LimSim's fixed local area: vehicles within twice the radius of a point, tagged AoI and outOfAoI", async () => {
    const { runId } = await recordAndCompare({
      net: fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'),
      routes: [fixture('limsim-networks', 'bigInter', 'bigInter.rou.xml')],
      stepLength: 0.1,
      duration: 30,
      area: { kind: 'local', x: 0, y: 0, radius: 30 },
    });
    for (const a of (await store.listActors(runId)).filter((x) => x.kind === 'vehicle'))
      for await (const batch of streamSamples(store, runId, `${a.id}/state`))
        for (const s of batch as (Sample & { x: number; y: number })[]) {
          const d = Math.hypot(s.x, s.y);
          assert.ok(d <= 60, `${a.id} recorded ${d} m from the point`);
          assert.equal(s.vtag, d <= 30 ? 'AoI' : 'outOfAoI');
        }
    assert.equal((await store.getRun(runId))!.metadata.mode, 'local area');
  });

  it('SUMO dying mid-run leaves the run interrupted with its data', async () => {
    const marker = join(dir.path, `dies-${Date.now()}.xml`);
    let killed = false;
    const result = await recordSumo(store, {
      config: fixture('esmini', 'sumo', 'straight.sumocfg'),
      sumoArgs: ['--fcd-output', marker],
      onStep: (s) => {
        if (s >= 5 && !killed) {
          killed = true;
          execFileSync('pkill', ['-9', '-f', marker]);
        }
      },
    });
    assert.equal(result.run.endReason, 'interrupted');
    const samples: Sample[] = [];
    for await (const batch of streamSamples(store, result.run.id, 'veh0/state')) samples.push(...batch);
    // Durable at least up to the last step the recorder waited for (every 100 steps, 1 s here).
    assert.ok(samples.length >= 400, `${samples.length} samples kept`);
    assert.ok((await store.listAttachments(result.run.id)).some((a) => a.name === 'sumo/stderr.txt'));
  });

  it('simrec record sumo records from the command line', () => {
    const r = runCli(
      ['record', 'sumo', fixture('esmini', 'sumo', 'straight.sumocfg'), '--duration', '2', '--json'],
      { SIMREC_STORE: join(dir.path, 'cli.db') },
    );
    assert.equal(r.status, 0, r.stderr);
    const result = JSON.parse(r.stdout) as { steps: number; vehicles: number; run: { endReason: string } };
    assert.deepEqual([result.vehicles, result.run.endReason], [1, 'user_request']);
    assert.ok(result.steps >= 200);
    const bad = runCli(['record', 'sumo', '--area', 'ego:50'], { SIMREC_STORE: join(dir.path, 'cli.db') });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--area ego:RADIUS needs --ego ID/);
  });

  it('record sumo on Ctrl-C ends the run user_request with its steps, says so and exits 130', async () => {
    const db = join(dir.path, 'sigint.db');
    // 10,000 steps of 10 ms: long enough to be interrupted midway.
    const child = spawn(process.execPath, [
      SIMREC_BIN,
      '--store',
      db,
      'record',
      'sumo',
      fixture('esmini', 'sumo', 'straight.sumocfg'),
    ]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // Interrupted once the run holds samples.
    const samples = (): number => {
      const r = runCli(['--store', db, 'ls', '--json']);
      return r.status === 0 ? ((JSON.parse(r.stdout) as { samples: number }[])[0]?.samples ?? 0) : 0;
    };
    while (samples() === 0) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    assert.equal(await exited, 130, stderr);
    const line = /^recorded run 1 \(user_request\): (\d+) steps, /.exec(stdout);
    assert.ok(line, stdout);
    assert.ok(Number(line[1]) < 10_000, `${line[1]} steps: stopped before the end`);
    assert.match(
      stderr,
      new RegExp(
        `(^|\\n)simrec: interrupted; run 1 is kept in ${db} with the ${line[1]} steps recorded \\(ended user_request\\)\\n$`,
      ),
    );
  });

  it("stops at the config's <end> as SUMO does (its last state one step before), and --sumo-args --end wins", async () => {
    const config = join(dir.path, 'end3.sumocfg');
    const straight = (name: string) => fixture('esmini', 'sumo', name);
    writeFileSync(
      config,
      `<configuration><input><net-file value="${straight('straight.net.xml')}"/><route-files value="${straight('straight.rou.xml')}"/></input><time><begin value="0"/><end value="3"/><step-length value="0.01"/></time></configuration>`,
    );
    const { run, steps } = await recordSumo(store, { config });
    assert.equal(run.endReason, 'completed');
    assert.equal(steps, 300);
    let last = 0;
    for await (const batch of streamSamples(store, run.id, 'veh0/state')) last = batch.at(-1)!.t;
    // SUMO's own fcd output with end 3 ends at timestep 2.99.
    const fcd = join(dir.path, 'end3-fcd.xml');
    execFileSync('sumo', ['-c', config, '--fcd-output', fcd, '--no-step-log', 'true'], {
      env: { ...process.env, SUMO_HOME: '/usr/share/sumo' },
    });
    const times = [...readFileSync(fcd, 'utf8').matchAll(/timestep time="([\d.]+)"/g)].map((m) =>
      Number(m[1]),
    );
    assert.equal(Math.round((last - run.begin) / 1e4), Math.round(times.at(-1)! * 100));
    const shorter = await recordSumo(store, { config, sumoArgs: ['--end', '1'] });
    assert.equal(shorter.steps, 100);
  });

  it('record sumo: its progress bar fills on a terminal toward the end it knows, and an --ego that never departs is said', () => {
    const env = { ...process.env, SIMREC_STORE: join(dir.path, 'tty.db') };
    delete (env as Record<string, string | undefined>).CI;
    const config = fixture('esmini', 'sumo', 'straight.sumocfg');
    // `script` gives the command a terminal, as a user's shell would.
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(SIMREC_BIN)} record sumo ${JSON.stringify(config)} --duration 40`;
    const tty = execFileSync('script', ['-qec', command, '/dev/null'], { env, encoding: 'utf8' });
    const percents = [...tty.matchAll(/(\d+)%/g)].map((m) => Number(m[1]));
    assert.ok(
      percents.some((p) => p > 0 && p < 100),
      `the bar moves: ${percents.slice(0, 10).join(', ')}`,
    );
    assert.ok(percents.includes(100), 'and ends full');
    const r = runCli(['record', 'sumo', config, '--duration', '1', '--ego', 'nobody', '--json'], {
      SIMREC_STORE: join(dir.path, 'tty.db'),
    });
    assert.equal(r.status, 0, r.stderr);
    const result = JSON.parse(r.stdout) as { warnings: string[] };
    assert.match(result.warnings[0]!, /--ego nobody: no vehicle of that id departed in the 1\.0 s recorded/);
    const said = runCli(['record', 'sumo', config, '--duration', '1', '--ego', 'nobody'], {
      SIMREC_STORE: join(dir.path, 'tty.db'),
    });
    assert.match(said.stderr, /simrec: warning: --ego nobody: no vehicle of that id departed/);
  });

  it('bad input: SUMO missing, a config SUMO refuses', async () => {
    await assert.rejects(
      recordSumo(store, {
        config: fixture('esmini', 'sumo', 'straight.sumocfg'),
        sumoBinary: '/nonexistent/sumo',
      }),
      (e: unknown) =>
        e instanceof SimrecError &&
        e.code === 'unsupported' &&
        /SUMO is not installed.*apt-get install sumo sumo-tools/.test(e.message),
    );
    const broken = join(dir.path, 'broken.rou.xml');
    writeFileSync(
      broken,
      '<routes><vehicle id="x" depart="0"><route edges="no_such_edge"/></vehicle></routes>',
    );
    const before = (await store.listRuns()).length;
    await assert.rejects(
      recordSumo(store, { net: fixture('esmini', 'sumo', 'straight.net.xml'), routes: [broken] }),
      (e: unknown) => e instanceof SimrecError && /SUMO refused to start.*no_such_edge/s.test(e.message),
    );
    assert.equal((await store.listRuns()).length, before, 'no run was begun');
  });
});
