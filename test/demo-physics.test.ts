import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { recordDemoRun, type DemoRunOptions } from '../src/demo/demo-run.js';
import type { RoadNetwork } from '../src/model/roadnet.js';
import type { ActorInfo } from '../src/model/run.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-demo-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(dir.path, 'demo.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

interface RecordedRun {
  begin: number;
  actors: Map<string, ActorInfo>;
  net: RoadNetwork;
  /** Per actor, its state samples in order. */
  states: Map<string, Sample[]>;
  /** Per light, its signal samples by step. */
  signals: Map<string, Map<number, Sample>>;
  streams: Map<string, Sample[]>;
  warnings: string[];
}

async function record(options: DemoRunOptions): Promise<RecordedRun> {
  const { run, warnings } = await recordDemoRun(store, options);
  const actors = new Map((await store.listActors(run.id)).map((a) => [a.id, a]));
  const states = new Map<string, Sample[]>();
  const signals = new Map<string, Map<number, Sample>>();
  const streams = new Map<string, Sample[]>();
  for (const s of await store.listStreams(run.id)) {
    const samples: Sample[] = [];
    for await (const batch of store.readSamples({ run: run.id, stream: s.id })) samples.push(...batch);
    streams.set(s.id, samples);
    if (s.name === 'state') states.set(s.actor!, samples);
    if (s.name === 'signal') signals.set(s.actor!, new Map(samples.map((x) => [x.step, x])));
  }
  const net = await loadRoadNetwork(store, run.id);
  assert.ok(net, 'the road network is attached to the run');
  return { begin: run.begin, actors, net, states, signals, streams, warnings };
}

const isVehicle = (a: ActorInfo | undefined): boolean =>
  a !== undefined && (a.kind === 'vehicle' || a.kind === 'ego' || a.kind === 'cyclist');

/** Every recorded step: no two vehicles whose centres are on one lane overlap along it. */
function assertNoOverlap(r: RecordedRun): number {
  const byStep = new Map<number, { id: string; lane: string; pos: number; length: number }[]>();
  for (const [id, samples] of r.states) {
    const actor = r.actors.get(id);
    if (!isVehicle(actor)) continue;
    for (const s of samples) {
      const list = byStep.get(s.step) ?? [];
      list.push({ id, lane: s.lane as string, pos: s.lanePos as number, length: actor!.extents!.length });
      byStep.set(s.step, list);
    }
  }
  let pairs = 0;
  for (const [step, list] of byStep) {
    const lanes = new Map<string, typeof list>();
    for (const v of list) lanes.set(v.lane, [...(lanes.get(v.lane) ?? []), v]);
    for (const [lane, vs] of lanes) {
      vs.sort((a, b) => a.pos - b.pos);
      for (let i = 1; i < vs.length; i++) {
        const a = vs[i - 1]!;
        const b = vs[i]!;
        pairs++;
        const clearance = b.pos - b.length / 2 - (a.pos + a.length / 2);
        assert.ok(
          clearance >= -1e-6,
          `step ${step}, lane ${lane}: ${a.id} (centre ${a.pos.toFixed(2)}) and ${b.id} (centre ${b.pos.toFixed(2)}) overlap by ${(-clearance).toFixed(2)} m`,
        );
      }
    }
  }
  return pairs;
}

/** Speeds within the lane's limit and the vehicle type's maxSpeed, at every sample. */
function assertSpeedLimits(r: RecordedRun): void {
  const lanes = new Map(r.net.lanes.map((l) => [l.id, l]));
  for (const [id, samples] of r.states) {
    const actor = r.actors.get(id);
    if (!isVehicle(actor)) continue;
    const maxSpeed = actor!.attributes.maxSpeed as number;
    for (const s of samples) {
      const limit = lanes.get(s.lane as string)?.speedLimit ?? Infinity;
      const speed = s.speed as number;
      assert.ok(
        speed <= limit + 1e-6,
        `${id} at step ${s.step}: ${speed} m/s on ${String(s.lane)} limited to ${limit}`,
      );
      assert.ok(
        speed <= maxSpeed + 1e-6,
        `${id} at step ${s.step}: ${speed} m/s above its type's maxSpeed ${maxSpeed}`,
      );
      assert.ok(speed >= 0);
    }
  }
}

const RED = new Set(['r', 'R', 'u']);

/**
 * No vehicle's front passes a stop line while its link shows red: at each crossing of the line, the
 * light at the step before (when the driver decided) was not red. Returns [crossings, stops at red].
 */
function assertNoRedRunning(r: RecordedRun): [number, number] {
  const lanes = new Map(r.net.lanes.map((l) => [l.id, l]));
  const links = new Map<string, { light: string; index: number; from: string }>();
  for (const c of r.net.connections)
    if (c.via !== undefined && c.trafficLight !== undefined && c.linkIndex !== undefined)
      links.set(c.via, { light: c.trafficLight, index: c.linkIndex, from: c.fromLane });
  const signalled = new Set([...links.values()].map((l) => l.from));
  let crossings = 0;
  let stopsAtRed = 0;
  for (const [id, samples] of r.states) {
    const actor = r.actors.get(id);
    if (!isVehicle(actor)) continue;
    const half = actor!.extents!.length / 2;
    for (let k = 1; k < samples.length; k++) {
      const prev = samples[k - 1]!;
      const cur = samples[k]!;
      const from = prev.lane as string;
      if (!signalled.has(from)) continue;
      const end = lanes.get(from)!.length;
      const frontBefore = (prev.lanePos as number) + half;
      const frontNow = cur.lane === from ? (cur.lanePos as number) + half : Infinity;
      const next = samples.slice(k).find((s) => s.lane !== from);
      const link = next ? links.get(next.lane as string) : undefined;
      if (!link || link.from !== from) continue;
      const ch = r.signals.get(link.light)?.get(prev.step)?.state;
      const state = typeof ch === 'string' ? ch[link.index] : undefined;
      if (frontBefore <= end + 0.01 && frontNow > end + 0.01) {
        crossings++;
        assert.ok(
          state !== undefined && !RED.has(state),
          `${id} passed the stop line of ${from} into ${String(next!.lane)} at step ${cur.step} on ${state} (light ${link.light}, link ${link.index})`,
        );
      } else if (
        state !== undefined &&
        RED.has(state) &&
        (prev.speed as number) < 0.1 &&
        end - frontBefore < 3
      )
        stopsAtRed++;
    }
  }
  return [crossings, stopsAtRed];
}

describe('simrec demo: the default town', () => {
  let run: RecordedRun;
  before(async () => {
    run = await record({ duration: 60, rateHz: 10, seed: 7 });
  });

  it('has the ego, at least 20 other vehicles, pedestrians and a signal stream per light', () => {
    const kinds = [...run.actors.values()].map((a) => a.kind);
    assert.equal(kinds.filter((k) => k === 'ego').length, 1);
    assert.ok(
      kinds.filter((k) => k === 'vehicle').length >= 20,
      `${kinds.filter((k) => k === 'vehicle').length} vehicles`,
    );
    assert.ok(kinds.filter((k) => k === 'pedestrian').length >= 10);
    const lights = [...run.actors.values()].filter((a) => a.kind === 'traffic_light');
    assert.equal(lights.length, run.net.trafficLights.length);
    assert.ok(lights.length > 0);
    for (const light of lights) {
      const samples = run.streams.get(`${light.id}/signal`)!;
      assert.equal(samples.length, 601);
      const links = run.net.connections.filter((c) => c.trafficLight === light.id).length;
      assert.equal((samples[0]!.state as string).length, links, 'one character per controlled link');
      assert.ok(samples.every((s) => (s.timeToSwitch as number) > 0 && (s.timeToSwitch as number) <= 25));
      assert.ok(new Set(samples.map((s) => s.state)).size >= 3, 'the light changes within a minute');
    }
    assert.deepEqual(run.warnings, []);
  });

  it('no two vehicles in one lane overlap at any recorded step', () => {
    assert.ok(assertNoOverlap(run) > 100, 'vehicles do share lanes');
  });

  it('no vehicle passes a red light, and some wait at one', () => {
    const [crossings, stops] = assertNoRedRunning(run);
    assert.ok(crossings >= 20, `${crossings} stop lines crossed`);
    assert.ok(stops > 0, 'vehicles stop at red lights');
  });

  it('speeds stay within lane limits and vehicle types', () => {
    assertSpeedLimits(run);
  });

  it('pedestrians walk sidewalks, walking areas and crossings', () => {
    const lanes = new Map(run.net.lanes.map((l) => [l.id, l]));
    const used = new Set<string>();
    for (const [id, samples] of run.states) {
      if (run.actors.get(id)?.kind !== 'pedestrian') continue;
      for (const s of samples) used.add(lanes.get(s.lane as string)!.function);
      for (let k = 1; k < samples.length; k++) {
        const d = Math.hypot(
          (samples[k]!.x as number) - (samples[k - 1]!.x as number),
          (samples[k]!.y as number) - (samples[k - 1]!.y as number),
        );
        assert.ok(d <= 0.2, `${id} jumps ${d.toFixed(2)} m at step ${samples[k]!.step}`);
      }
    }
    assert.deepEqual([...used].sort(), ['crossing', 'normal', 'walkingarea']);
  });

  it("the ego's wheels turn at its speed, and it carries control and wheel states", () => {
    const ego = [...run.actors.values()].find((a) => a.kind === 'ego')!;
    const radius = ego.attributes.wheelRadius as number;
    const states = run.states.get(ego.id)!;
    const wheels = run.streams.get(`${ego.id}/wheels`)!;
    const control = run.streams.get(`${ego.id}/control`)!;
    assert.equal(wheels.length, states.length);
    assert.equal(control.length, states.length);
    let moving = 0;
    states.forEach((s, k) => {
      const w = wheels[k]!.wheels as {
        angularVelocity: number;
        torque: number;
        brakeTorque: number;
        steer: number;
        suspension: number;
        slipLong: number;
        slipLat: number;
      }[];
      assert.equal(w.length, 4);
      const speed = s.speed as number;
      if (speed < 1) return;
      moving++;
      const mean = w.reduce((sum, x) => sum + x.angularVelocity * radius, 0) / 4;
      assert.ok(
        Math.abs(mean - speed) / speed < 0.03,
        `step ${s.step}: wheels ${mean.toFixed(3)} m/s, ego ${speed.toFixed(3)} m/s`,
      );
      for (const x of w)
        assert.ok(Math.abs(x.angularVelocity * radius - speed) / speed < 0.15, 'a wheel in a turn');
    });
    assert.ok(moving > 100, 'the ego drives');
    for (const key of ['z', 'roll', 'pitch', 'vx', 'vy', 'vz', 'accel', 'ax', 'ay', 'az', 'wx', 'wy', 'wz'])
      assert.ok(
        states.every((s) => typeof s[key] === 'number'),
        `ego state has ${key}`,
      );
    assert.ok(
      control.some((c) => (c.throttle as number) > 0.05) && control.some((c) => (c.brake as number) > 0.05),
    );
    assert.ok(control.every((c) => Number.isInteger(c.gear) && (c.gear as number) >= 1));
  });

  it('the same seed gives the same run, another seed another', async () => {
    const strip = (r: RecordedRun): string =>
      JSON.stringify(
        [...r.streams].map(([id, samples]) => [id, samples.map((s) => ({ ...s, t: s.t - r.begin }))]),
      );
    const a = await record({ duration: 8, seed: 3 });
    const b = await record({ duration: 8, seed: 3 });
    const c = await record({ duration: 8, seed: 4 });
    assert.equal(strip(a), strip(b));
    assert.notEqual(strip(a), strip(c));
  });
});

describe('simrec demo: route files on their networks', () => {
  const cases = [
    ...['bigInter', 'corridor', 'roundabout'].map((n) => ({
      name: `limsim ${n}`,
      net: fixture('limsim-networks', n, `${n}.net.xml`),
      routes: [fixture('limsim-networks', n, `${n}.rou.xml`)],
      expected: { bigInter: 13, corridor: 5, roundabout: 13 }[n]!,
    })),
    ...['e6mini', 'fabriksgatan', 'straight'].map((n) => ({
      name: `esmini ${n}`,
      net: fixture('esmini', 'sumo', `${n}.net.xml`),
      routes: [fixture('esmini', 'sumo', `${n}.rou.xml`)],
      expected: { e6mini: 6, fabriksgatan: 3, straight: 2 }[n]!,
    })),
  ];
  for (const c of cases)
    it(`${c.name}: every vehicle departs and drives without overlap, above limits or through red`, async () => {
      const run = await record({ net: c.net, routes: c.routes, duration: 25, seed: 1 });
      const vehicles = [...run.actors.values()].filter(isVehicle);
      assert.equal(vehicles.length, c.expected, run.warnings.join('\n'));
      assert.equal(vehicles.filter((a) => a.kind === 'ego').length, 1);
      assert.deepEqual(run.warnings, []);
      for (const v of vehicles) {
        const samples = run.states.get(v.id)!;
        // Departed in the last seconds: not yet far from where it started.
        if (samples.length < 40) continue;
        const start = samples[0]!;
        const moved = samples.some(
          (s) => s.lane !== start.lane || (s.lanePos as number) > (start.lanePos as number) + 5,
        );
        assert.ok(moved, `${v.id} moves`);
      }
      assertNoOverlap(run);
      assertSpeedLimits(run);
      assertNoRedRunning(run);
    });

  it('takes types and vehicles from separate files, as SUMO does', async () => {
    const types = join(dir.path, 'types.rou.xml');
    const cars = join(dir.path, 'cars.rou.xml');
    writeFileSync(types, '<routes><vType id="slow" maxSpeed="5" length="4" accel="1.5" decel="3"/></routes>');
    writeFileSync(
      cars,
      `<routes>
        <flow id="f" type="slow" begin="0" end="20" period="4" from="-E3" to="-E0"/>
        <trip id="t" depart="1" from="E0" to="E1"/>
      </routes>`,
    );
    const run = await record({
      net: fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'),
      routes: [types, cars],
      duration: 20,
    });
    assert.deepEqual(run.warnings, []);
    const flow = [...run.actors.values()].filter((a) => a.id.startsWith('f.'));
    assert.equal(flow.length, 6, 'a flow every 4 s from 0 to 20 s');
    for (const a of flow) {
      assert.equal(a.attributes.vType, 'slow');
      assert.ok(run.states.get(a.id)!.every((s) => (s.speed as number) <= 5 + 1e-9));
    }
    assert.deepEqual(run.actors.get('t')!.attributes.route, ['E0', 'E1']);
  });
});

describe('simrec demo: lane changes', () => {
  // corridor: -E10's lane links only to E3_0, and only E3_2 leads on to E11, so the route -E10 E3 E11
  // needs two lane changes on E3 (SUMO drives it so). It used to be refused ("no connection").
  const corridor = fixture('limsim-networks', 'corridor', 'corridor.net.xml');

  it('changes lanes before the junction to follow its route, smoothly', async () => {
    const file = join(dir.path, 'lane-change.rou.xml');
    writeFileSync(
      file,
      '<routes><vehicle id="lc" depart="0"><route edges="-E10 E3 E11"/></vehicle></routes>',
    );
    const run = await record({ net: corridor, routes: [file], duration: 60, seed: 1 });
    assert.deepEqual(run.warnings, []);
    const samples = run.states.get('lc')!;
    const e3Length = run.net.lanes.find((l) => l.id === 'E3_0')!.length;
    const lanes = samples.map((s) => s.lane as string).filter((l, i, all) => l !== all[i - 1]);
    const onE3 = lanes.filter((l) => l.startsWith('E3_'));
    assert.deepEqual(onE3, ['E3_0', 'E3_1', 'E3_2'], lanes.join(' '));
    assert.ok(lanes.includes('E11_2') || lanes.at(-1)!.startsWith(':'), lanes.join(' '));
    assert.ok(samples.at(-1)!.lane === 'E11_2' || samples.length < 600, 'reaches E11 in time');
    // No jump: each step moves the centre about as far as the speed says (a lane change adds at most
    // 0.11 m sideways), in the direction it heads.
    for (let k = 1; k < samples.length; k++) {
      const a = samples[k - 1]!;
      const b = samples[k]!;
      const dx = (b.x as number) - (a.x as number);
      const dy = (b.y as number) - (a.y as number);
      const moved = Math.hypot(dx, dy);
      const expected = (((a.speed as number) + (b.speed as number)) / 2) * 0.1;
      assert.ok(
        Math.abs(moved - expected) <= 0.05,
        `step ${b.step}: moved ${moved.toFixed(3)} m, ${expected.toFixed(3)} m expected`,
      );
      // On E3, straight, where it changes lanes, up to 5 m before the junction (the heading looks
      // 2.5 m ahead, and on a bend a step's chord is off the heading anyway).
      const straight = (s: Sample): boolean =>
        String(s.lane).startsWith('E3_') && (s.lanePos as number) < e3Length - 5;
      if (moved > 0.3 && straight(a) && straight(b)) {
        const off = Math.abs(
          Math.atan2(
            Math.sin(Math.atan2(dy, dx) - (b.yaw as number)),
            Math.cos(Math.atan2(dy, dx) - (b.yaw as number)),
          ),
        );
        assert.ok(off < 0.05, `step ${b.step}: heading ${off.toFixed(3)} rad off the direction moved`);
      }
    }
    assertNoOverlap(run);
  });

  it('makes a lane change only into a gap: minGap to the leader, and a 1 s headway for the follower', async () => {
    const file = join(dir.path, 'busy.rou.xml');
    writeFileSync(
      file,
      `<routes>
        <flow id="lc" begin="0" end="40" period="3" from="-E10" to="E11"/>
        <flow id="on" begin="0" end="40" period="2" from="E0" to="E12" departLane="2"/>
      </routes>`,
    );
    const run = await record({ net: corridor, routes: [file], duration: 50, seed: 2 });
    const byStep = new Map<
      number,
      { id: string; lane: string; pos: number; length: number; speed: number }[]
    >();
    for (const [id, samples] of run.states) {
      const actor = run.actors.get(id);
      if (!isVehicle(actor)) continue;
      for (const s of samples) {
        const at = { id, lane: s.lane as string, pos: s.lanePos as number, length: actor!.extents!.length };
        byStep.set(s.step, [...(byStep.get(s.step) ?? []), { ...at, speed: s.speed as number }]);
      }
    }
    const lanes = new Map(run.net.lanes.map((l) => [l.id, l]));
    let changes = 0;
    for (const [id, samples] of run.states) {
      if (!id.startsWith('lc')) continue;
      for (let k = 1; k < samples.length; k++) {
        const from = lanes.get(samples[k - 1]!.lane as string)!;
        const to = lanes.get(samples[k]!.lane as string)!;
        if (from.function !== 'normal' || from.edge !== to.edge || from.id === to.id) continue;
        changes++;
        const me = byStep.get(samples[k]!.step)!.find((v) => v.id === id)!;
        for (const o of byStep.get(samples[k]!.step)!) {
          if (o.id === id || o.lane !== to.id) continue;
          const ahead = o.pos - o.length / 2 - (me.pos + me.length / 2);
          const behind = me.pos - me.length / 2 - (o.pos + o.length / 2);
          assert.ok(
            ahead >= 2.5 - 0.5 || behind >= 2.5 + o.speed * 1 - 1.5,
            `${id} into ${to.id} at step ${samples[k]!.step}: ${o.id} ${ahead.toFixed(2)} m ahead / ${behind.toFixed(2)} m behind`,
          );
        }
      }
    }
    assert.ok(changes >= 10, `${changes} lane changes`);
    assertNoOverlap(run);
  });
});

describe('simrec demo: bad input', () => {
  const net = fixture('limsim-networks', 'bigInter', 'bigInter.net.xml');
  const routes = (name: string, body: string): string => {
    const file = join(dir.path, name);
    writeFileSync(file, `<routes>${body}</routes>`);
    return file;
  };

  it('warns, naming the vehicle, for a route off the network and an undefined type', async () => {
    const file = routes(
      'bad.rou.xml',
      `<vehicle id="lost" depart="0"><route edges="E0 nowhere"/></vehicle>
       <vehicle id="stuck" depart="0"><route edges="E0 -E0"/></vehicle>
       <vehicle id="typo" type="sedann" depart="0"><route edges="E0 E1"/></vehicle>`,
    );
    const run = await record({ net, routes: [file], duration: 3 });
    assert.equal(run.warnings.length, 3, run.warnings.join('\n'));
    assert.match(
      run.warnings[0]!,
      /bad\.rou\.xml: <vehicle id="typo"> \(line 3\): vehicle "typo" has type "sedann", defined nowhere; it gets the default type/,
    );
    assert.match(
      run.warnings[1]!,
      /<vehicle id="lost"> \(line 1\): the route's edge "nowhere" is not on the network; vehicle "lost" skipped/,
    );
    assert.match(
      run.warnings[2]!,
      /<vehicle id="stuck"> .*no connection from edge "E0" to "-E0"; vehicle "stuck" skipped/,
    );
    assert.deepEqual(
      [...run.actors.values()].filter(isVehicle).map((a) => [a.id, a.kind]),
      [['typo', 'ego']],
    );
  });

  it('refuses a vehicle type with impossible parameters, naming file, type and attribute', async () => {
    const file = routes(
      'impossible.rou.xml',
      '<vType id="rocket" accel="-3"/><vehicle id="a" type="rocket" depart="0" route="r"/>',
    );
    await assert.rejects(
      recordDemoRun(store, { net, routes: [file], duration: 1 }),
      /impossible\.rou\.xml: <vType id="rocket"> \(line 1\) attribute accel: impossible value "-3": expected a number > 0/,
    );
    await assert.rejects(
      recordDemoRun(store, { net, routes: [join(dir.path, 'missing.rou.xml')], duration: 1 }),
      /missing\.rou\.xml: no such route file/,
    );
  });

  it('refuses a network with no drivable lane', async () => {
    const file = join(dir.path, 'footpath.net.xml');
    writeFileSync(
      file,
      `<net version="1.9">
        <edge id="walk" from="a" to="b"><lane id="walk_0" index="0" allow="pedestrian" speed="1" length="50" shape="0,0 50,0"/></edge>
        <junction id="a" type="dead_end" x="0" y="0" incLanes="" intLanes="" shape="0,0"/>
        <junction id="b" type="dead_end" x="50" y="0" incLanes="walk_0" intLanes="" shape="50,0"/>
      </net>`,
    );
    await assert.rejects(
      recordDemoRun(store, { net: file, duration: 1 }),
      /road network: no lane a vehicle may drive on/,
    );
  });
});
