import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { boxesOverlap, limsimBoxesOverlap } from '../src/evaluate/footprint.js';
import { SimrecError } from '../src/model/errors.js';
import type { JsonObject } from '../src/model/json.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { readRoadNetwork } from '../src/roadnet/read-roadnet.js';
import { attachRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const BEGIN = 1_800_000_000_000_000;
const dir = tempDir('simrec-eval-');
const storePath = join(dir.path, 'eval.db');
let store: StoreBackend;
before(async () => {
  store = await openStore(storePath);
});
after(async () => {
  await store.close();
  dir.cleanup();
});

/** A straight two-lane road along +x, 200 m, lanes 3.2 m wide centred at y = -1.6 and y = +1.6. */
const TWO_LANES = `<?xml version="1.0" encoding="UTF-8"?>
<net version="1.9" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <location netOffset="0.00,0.00" convBoundary="0.00,-3.20,200.00,3.20" origBoundary="0,0,200,0" projParameter="!"/>
  <edge id="E0" from="J0" to="J1" priority="1">
    <lane id="E0_0" index="0" speed="13.89" length="200.00" width="3.20" shape="0.00,-1.60 200.00,-1.60"/>
    <lane id="E0_1" index="1" speed="13.89" length="200.00" width="3.20" shape="0.00,1.60 200.00,1.60"/>
  </edge>
  <junction id="J0" type="dead_end" x="0.00" y="0.00" incLanes="" intLanes="" shape="0.00,3.20 0.00,-3.20"/>
  <junction id="J1" type="dead_end" x="200.00" y="0.00" incLanes="E0_0 E0_1" intLanes="" shape="200.00,-3.20 200.00,3.20"/>
</net>`;

type Track = (
  k: number,
  seconds: number,
) => Partial<Sample> & { x: number; y: number; yaw: number; speed: number };

/** Records a run at 10 Hz for `seconds`, one state stream per actor, from formulas of time. */
async function recordScene(
  actors: Record<string, { kind: string; track: Track; length?: number; attributes?: JsonObject }>,
  seconds: number,
  withRoad = false,
): Promise<number> {
  const rec = await RunRecorder.begin(store, { simulator: { name: 'scene' }, begin: BEGIN });
  await rec.declareActors(
    Object.entries(actors).map(([id, a]) => ({
      id,
      kind: a.kind,
      extents: { length: a.length ?? 4, width: 1.8, height: 1.5 },
      ...(a.attributes ? { attributes: a.attributes } : {}),
    })),
  );
  await rec.declareStreams(Object.keys(actors).map((id) => stateStream(id)));
  for (let k = 0; k <= seconds * 10; k++) {
    const s = k / 10;
    await rec.appendMany(
      Object.entries(actors).map(([id, a]) => ({
        stream: `${id}/state`,
        samples: [{ t: BEGIN + k * 100_000, step: k, ...a.track(k, s) }],
      })),
    );
  }
  await rec.end('completed');
  if (withRoad) await attachRoadNetwork(store, rec.id, readRoadNetwork(TWO_LANES).network);
  return rec.id;
}

async function evaluation(run: number, actor = 'ego'): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of streamSamples(store, run, `${actor}/evaluation`)) out.push(...batch);
  return out;
}

describe('evaluation', () => {
  it('two cars closing head-on at 15 m/s, 46 m apart bumper to bumper: TTC 46/15 s', async () => {
    const run = await recordScene(
      {
        ego: { kind: 'ego', track: (_k, s) => ({ x: 10 * s, y: 0, yaw: 0, speed: 10 }) },
        oncoming: { kind: 'vehicle', track: (_k, s) => ({ x: 50 - 5 * s, y: 0, yaw: Math.PI, speed: 5 }) },
      },
      1,
    );
    const simrec = await evaluateRun(store, run);
    const first = (await evaluation(run))[0]!;
    assert.equal(first.collision, Math.round((46 / 15) * 1000) / 1000);
    assert.equal(first.ttcActor, 'oncoming');
    // One second later they are 15 m closer.
    assert.equal((await evaluation(run))[10]!.collision, Math.round((31 / 15) * 1000) / 1000);
    assert.equal(simrec.metrics.collision!.min, Math.round((31 / 15) * 1000) / 1000);
    // LimSim searches in 0.1 s steps: the first step at which the footprints overlap.
    await evaluateRun(store, run, { mode: 'limsim' });
    assert.equal((await evaluation(run))[0]!.collision, 3.1);
    assert.equal((await evaluation(run))[0]!.collisionScore, 4 - 0.15 * 3.1);
  });

  it('a rear-end approach at 10 m/s closing speed with 30 m between bumpers: TTC 3 s, a near miss below 1.5 s', async () => {
    const run = await recordScene(
      {
        ego: { kind: 'ego', track: (_k, s) => ({ x: 20 * s, y: 0, yaw: 0, speed: 20 }) },
        lead: { kind: 'vehicle', track: (_k, s) => ({ x: 34 + 10 * s, y: 0, yaw: 0, speed: 10 }) },
      },
      3.5,
    );
    const summary = await evaluateRun(store, run, { nearMissTtc: 1.5 });
    const ttc = (await evaluation(run)).map((s) => s.collision as number);
    assert.equal(ttc[0], 3);
    assert.equal(ttc[20], 1);
    assert.equal(ttc[30], 0, 'at 3 s the footprints touch');
    const near = summary.events.filter((e) => e.kind === 'near_miss');
    assert.equal(near.length, 1);
    assert.equal(near[0]!.t, BEGIN + 1_600_000, 'the first frame with TTC below 1.5 s (1.4 s left)');
    const collision = summary.events.find((e) => e.kind === 'collision')!;
    assert.deepEqual([collision.t, collision.actors], [BEGIN + 3_000_000, ['ego', 'lead']]);
    assert.ok(summary.score < 50, 'a collision halves the score');
    // The headway to the car ahead: bumper gap over own speed, 30 m / 20 m/s at the start.
    assert.equal((await evaluation(run))[0]!.headway, 1.5);
  });

  it('a car crossing the lane line at a known time gives the lane-departure event then', async () => {
    // Centre at y = -1.56 + 0.8 t: on the line (y = 0) at t = 1.95 s, first seen beyond it at 2.0 s.
    const run = await recordScene(
      {
        ego: {
          kind: 'ego',
          track: (_k, s) => ({
            x: 20 + 10 * s,
            y: -1.56 + 0.8 * s,
            yaw: Math.atan2(0.8, 10),
            speed: Math.hypot(10, 0.8),
          }),
        },
      },
      3.5,
      true,
    );
    const summary = await evaluateRun(store, run);
    const departures = summary.events.filter((e) => e.kind === 'lane_departure');
    assert.equal(departures.length, 1);
    assert.equal(departures[0]!.t, BEGIN + 2_000_000);
    assert.match(departures[0]!.detail, /from E0_0 to E0_1/);
    const samples = await evaluation(run);
    assert.ok(
      Math.abs((samples[0]!.laneOffset as number) - 0.04) < 1e-9,
      'left of the right lane centre by 4 cm',
    );
    assert.ok(Math.abs((samples[0]!.offset as number) - 0.0016) < 1e-12, 'LimSim offset: the offset squared');
    // Heading 0.08 rad off the lane: orientation = (sin 0.0798 - sin 0)^2.
    assert.ok(Math.abs((samples[5]!.orientation as number) - Math.sin(Math.atan2(0.8, 10)) ** 2) < 1e-12);
    assert.equal(samples[0]!.speedLimit, 13.89);
    assert.deepEqual(summary.skipped, []);
  });

  it('a known jerk profile gives the right discomfort; LimSim mode uses the stored accel as LimSim does', async () => {
    // v = 5 + t^2: the acceleration 2t grows at 2 m/s^3; the stored accel holds a constant 2.6 like LimSim's.
    const run = await recordScene(
      {
        ego: {
          kind: 'ego',
          track: (_k, s) => ({ x: 5 * s + s ** 3 / 3, y: -1.6, yaw: 0, speed: 5 + s ** 2, accel: 2.6 }),
        },
      },
      2,
      true,
    );
    await evaluateRun(store, run);
    const measured = await evaluation(run);
    for (const s of measured.slice(2)) {
      assert.ok(Math.abs((s.jerk as number) - 2) < 1e-9, `jerk at step ${s.step}: ${s.jerk}`);
      assert.ok(Math.abs((s.discomfort as number) - 4) < 1e-8);
    }
    const v = 5 + 1.5 ** 2;
    const a = (v - (5 + 1.4 ** 2)) / 0.1;
    assert.ok(
      Math.abs((measured[15]!.consumption as number) - ((v * a) ** 2 + v ** 3)) < 1e-6,
      'consumption = (v a)^2 + v^3',
    );
    await evaluateRun(store, run, { mode: 'limsim' });
    const limsim = await evaluation(run);
    assert.ok(
      limsim.every((s) => s.jerk === 0 && s.discomfort === 0),
      'a constant stored accel has no jerk',
    );
    assert.equal(limsim[0]!.offset, 0, 'LimSim zeroes the offset within half a lane width of the lane start');
  });

  it('finds collisions between any actors and blocked actors, and stores the events', async () => {
    const run = await recordScene(
      {
        ego: { kind: 'ego', track: (_k, s) => ({ x: 10 * s, y: 20, yaw: 0, speed: 10 }) },
        a: { kind: 'vehicle', track: (_k, s) => ({ x: 100, y: -30 + 10 * s, yaw: Math.PI / 2, speed: 10 }) },
        b: { kind: 'vehicle', track: (_k, s) => ({ x: 130 - 10 * s, y: 0, yaw: Math.PI, speed: 10 }) },
        parked: { kind: 'vehicle', track: () => ({ x: -50, y: -50, yaw: 0, speed: 0 }) },
      },
      8,
    );
    const summary = await evaluateRun(store, run, { blockedSeconds: 5 });
    const collision = summary.events.find((e) => e.kind === 'collision')!;
    assert.deepEqual(collision.actors, ['a', 'b']);
    // a reaches y = 0 at 3 s and b reaches x = 100 at 3 s; 4 m long boxes first touch at 2.8 s.
    assert.equal(collision.t, BEGIN + 2_800_000);
    const blocked = summary.events.filter((e) => e.kind === 'blocked');
    assert.deepEqual(
      blocked.map((e) => [e.actors, e.duration]),
      [[['parked'], 8]],
    );
    const stored: Sample[] = [];
    for await (const batch of streamSamples(store, run, 'events')) stored.push(...batch);
    assert.deepEqual(
      stored.map((s) => s.kind),
      summary.events.map((e) => e.kind),
    );
    assert.ok(
      summary.skipped.some((s) => /no road network/.test(s)),
      'lane metrics are listed as skipped',
    );
  });

  it('finds the same collision far from the origin (projected coordinates: UTM northings, either sign)', async () => {
    for (const [dx, dy] of [
      [500_000, 5_400_000],
      [-700_000, -3_000_000],
      [-5, 5],
    ] as const) {
      const run = await recordScene(
        {
          ego: { kind: 'ego', track: (_k, s) => ({ x: dx + 10 * s, y: dy + 20, yaw: 0, speed: 10 }) },
          a: {
            kind: 'vehicle',
            track: (_k, s) => ({ x: dx + 100, y: dy - 30 + 10 * s, yaw: Math.PI / 2, speed: 10 }),
          },
          b: {
            kind: 'vehicle',
            track: (_k, s) => ({ x: dx + 130 - 10 * s, y: dy, yaw: Math.PI, speed: 10 }),
          },
        },
        5,
      );
      const collisions = (await evaluateRun(store, run, { store: false })).events.filter(
        (e) => e.kind === 'collision',
      );
      assert.deepEqual(
        collisions.map((e) => [e.actors, e.t]),
        [[['a', 'b'], BEGIN + 2_800_000]],
        `offset ${dx}, ${dy}`,
      );
    }
  });

  it('a queue stopped on one lane is one blocked event at its head; pedestrians passing are no collision', async () => {
    const stopped =
      (x: number): Track =>
      () => ({ x, y: -1.6, yaw: 0, speed: 0, lane: 'E0_0', lanePos: x });
    const run = await recordScene(
      {
        ego: { kind: 'ego', track: (_k, s) => ({ x: 10 * s, y: 1.6, yaw: 0, speed: 10 }) },
        head: { kind: 'vehicle', track: stopped(150) },
        second: { kind: 'vehicle', track: stopped(143) },
        third: { kind: 'vehicle', track: stopped(136) },
        // Alone 60 m further back: a queue of its own.
        apart: { kind: 'vehicle', track: stopped(76) },
        walker1: { kind: 'pedestrian', track: (_k, s) => ({ x: 20 + s, y: 10, yaw: 0, speed: 1 }) },
        walker2: { kind: 'pedestrian', track: (_k, s) => ({ x: 28 - s, y: 10.2, yaw: Math.PI, speed: 1 }) },
      },
      8,
    );
    const summary = await evaluateRun(store, run, { blockedSeconds: 5 });
    assert.deepEqual(
      summary.events
        .filter((e) => e.kind === 'blocked')
        .map((e) => e.actors.join())
        .sort(),
      ['apart', 'head'],
    );
    assert.equal(summary.events.filter((e) => e.kind === 'collision').length, 0);
  });

  it('says when a run has no ego, and scores the actor asked for', async () => {
    const run = await recordScene(
      { car: { kind: 'vehicle', track: (_k, s) => ({ x: s, y: 0, yaw: 0, speed: 1 }) } },
      1,
    );
    await assert.rejects(
      evaluateRun(store, run),
      (e: unknown) =>
        e instanceof SimrecError &&
        /run \d+ has no ego actor; choose the actor to score with --actor ID \(actors with states: car\)/.test(
          e.message,
        ),
    );
    const summary = await evaluateRun(store, run, { actor: 'car' });
    assert.equal(summary.frames, 11);
  });

  it('handles gaps in time and reports them', async () => {
    const rec = await RunRecorder.begin(store, { begin: BEGIN });
    await rec.declareActor({ id: 'ego', kind: 'ego' });
    await rec.declareStream(stateStream('ego'));
    const times = [0, 1, 2, 3, 20, 21, 22]; // a 1.7 s hole in a 10 Hz stream
    await rec.appendBatch(
      'ego/state',
      times.map((k, i) => ({
        t: BEGIN + k * 100_000,
        step: i,
        x: k,
        y: 0,
        yaw: 0,
        speed: 10 + (k >= 20 ? 5 : 0),
      })),
    );
    await rec.end();
    const summary = await evaluateRun(store, rec.id);
    assert.equal(summary.gaps, 1);
    const samples = await evaluation(rec.id);
    assert.equal(samples[4]!.jerk, 0, 'no jerk across the gap, though the speed jumped');
  });

  it('simrec eval prints the summary, JSON, and compares runs', () => {
    const env = { SIMREC_STORE: storePath };
    type Summary = { min: number; p95: number; max: number };
    const one = cliJson<{
      run: { id: number; begin: number; endReason: string };
      score: number;
      weights: Record<string, number>;
      metrics: Record<string, Summary>;
    }>(['eval', '1', '--json'], env);
    assert.equal(one.run.id, 1, 'the run itself, as every command gives it in JSON');
    assert.equal(typeof one.run.begin, 'number');
    assert.deepEqual(Object.keys(one.weights).sort(), [
      'collision',
      'consumption',
      'discomfort',
      'offset',
      'orientation',
    ]);
    const table = runCli(['eval', '1'], env);
    assert.match(table.stdout, /^METRIC\s+UNIT\s+MIN\s+MEAN\s+P50\s+P95\s+MAX\s+LIMSIM_SCORE$/m);
    // Every metric's row says the unit its numbers are in (#55, 9: "discomfort 3836.7" of what?).
    const unitOf = new Map(
      [...table.stdout.matchAll(/^(\w+)\s+(\S+)\s+-?[\d.]+\s/gm)].map((m) => [m[1]!, m[2]!] as const),
    );
    const expected: Record<string, string> = {
      offset: 'm^2',
      discomfort: 'm^2/s^6',
      collision: 's',
      orientation: 'unitless',
      consumption: 'm^2/s^3',
      jerk: 'm/s^3',
      accel: 'm/s^2',
      headway: 's',
      laneOffset: 'm',
    };
    // This run has no road network: offset, orientation and the lane offset are skipped.
    assert.deepEqual(
      [...unitOf.keys()],
      ['discomfort', 'collision', 'consumption', 'jerk', 'accel', 'headway'],
    );
    for (const [metric, unit] of unitOf) assert.equal(unit, expected[metric], `${metric}: ${table.stdout}`);
    assert.match(table.stdout, /^LIMSIM_SCORE: LimSim's display score .* 1 \(best\) to 4 \(worst\)$/m);
    const compared = runCli(['eval', '--compare', '1', '2'], env);
    assert.match(
      compared.stdout,
      /^RUN\s+ACTOR\s+FRAMES\s+SCORE\s+MIN_TTC_S\s+MEAN_OFFSET_M2\s+P95_JERK_M_S3\s+MAX_ABS_JERK_M_S3\s+COLLISIONS\s+NEAR_MISSES\s+EVENTS$/m,
    );
    assert.match(table.stdout, /score: [\d.]+ \/ 100 \(weights: collision 0.4/);
    const rows = cliJson<{ run: { id: number }; score: number; p95Jerk: number; maxAbsJerk: number }[]>(
      ['eval', '--compare', '1', '2', '--json'],
      env,
    );
    assert.deepEqual(
      rows.map((r) => r.run.id),
      [1, 2],
    );
    // p95Jerk is the 95th percentile `eval --json` reports, not the extreme (issue #28: it was max |jerk|).
    const jerk = one.metrics.jerk!;
    assert.equal(rows[0]!.p95Jerk, jerk.p95);
    assert.equal(rows[0]!.maxAbsJerk, Math.max(Math.abs(jerk.min), Math.abs(jerk.max)));
    const refused = runCli(['eval', '1', '2'], env);
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /2 runs given; evaluate one, or several with --compare/);
  });
});

/**
 * A road with a signal: E0 (0 -> 100 m along +x), the junction lane :J1_0_0 (100 -> 110 m), E1 (110 ->
 * 200 m), one lane each, 3.2 m wide at y = -1.6; light J1 controls the link as link 0.
 */
const SIGNALLED = `<?xml version="1.0" encoding="UTF-8"?>
<net version="1.9" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <location netOffset="0.00,0.00" convBoundary="0.00,-3.20,200.00,0.00" origBoundary="0,0,200,0" projParameter="!"/>
  <edge id=":J1_0" function="internal">
    <lane id=":J1_0_0" index="0" speed="13.89" length="10.00" width="3.20" shape="100.00,-1.60 110.00,-1.60"/>
  </edge>
  <edge id="E0" from="J0" to="J1" priority="1">
    <lane id="E0_0" index="0" speed="13.89" length="100.00" width="3.20" shape="0.00,-1.60 100.00,-1.60"/>
  </edge>
  <edge id="E1" from="J1" to="J2" priority="1">
    <lane id="E1_0" index="0" speed="13.89" length="90.00" width="3.20" shape="110.00,-1.60 200.00,-1.60"/>
  </edge>
  <tlLogic id="J1" type="static" programID="0" offset="0">
    <phase duration="30" state="r"/>
    <phase duration="30" state="G"/>
  </tlLogic>
  <junction id="J0" type="dead_end" x="0.00" y="0.00" incLanes="" intLanes="" shape="0.00,0.00 0.00,-3.20"/>
  <junction id="J1" type="traffic_light" x="105.00" y="0.00" incLanes="E0_0" intLanes=":J1_0_0" shape="110.00,0.00 110.00,-3.20 100.00,-3.20 100.00,0.00"/>
  <junction id="J2" type="dead_end" x="200.00" y="0.00" incLanes="E1_0" intLanes="" shape="200.00,-3.20 200.00,0.00"/>
  <connection from="E0" to="E1" fromLane="0" toLane="0" via=":J1_0_0" tl="J1" linkIndex="0" dir="s" state="O"/>
  <connection from=":J1_0" to="E1" fromLane="0" toLane="0" dir="s" state="M"/>
</net>`;

describe('evaluation events on constructed scenes with known answers', () => {
  it('speeding: 16 m/s from 1 s to 3 s on a 13.89 m/s lane is one event of 2 s', async () => {
    const speed = (s: number): number => (s >= 1 - 1e-9 && s < 3 - 1e-9 ? 16 : 12);
    const run = await recordScene(
      { ego: { kind: 'ego', track: (_k, s) => ({ x: 20 + 14 * s, y: -1.6, yaw: 0, speed: speed(s) }) } },
      4,
      true,
    );
    for (const mode of ['simrec', 'limsim'] as const) {
      const { events } = await evaluateRun(store, run, { mode });
      const speeding = events.filter((e) => e.kind === 'speeding');
      assert.equal(speeding.length, 1, mode);
      assert.equal(speeding[0]!.t, BEGIN + 1_000_000);
      assert.ok(Math.abs(speeding[0]!.duration - 2) < 1e-9, `${speeding[0]!.duration} s`);
      assert.equal(speeding[0]!.detail, '16.0 m/s on E0_0 limited to 13.9 m/s');
    }
  });

  it("speeding respects the driver's own speed factor (SUMO's speedFactor): over the limit times it, not over the limit", async () => {
    // 15 m/s for 4 s on the 13.89 m/s lane, 16 m/s from 1 s to 3 s: 1.1 x 13.89 = 15.28 allows the 15.
    const speed = (s: number): number => (s >= 1 - 1e-9 && s < 3 - 1e-9 ? 16 : 15);
    const track: Track = (_k, s) => ({ x: 20 + 15 * s, y: -1.6, yaw: 0, speed: speed(s) });
    const speedingOf = async (attributes: JsonObject) => {
      const run = await recordScene({ ego: { kind: 'ego', track, attributes } }, 4, true);
      return (await evaluateRun(store, run, { store: false })).events
        .filter((e) => e.kind === 'speeding')
        .map((e) => [(e.t - BEGIN) / 1e6, Math.round(e.duration * 1e6) / 1e6, e.detail]);
    };
    assert.deepEqual(await speedingOf({ speedFactor: 1.1 }), [
      [1, 2, '16.0 m/s on E0_0 limited to 13.9 m/s (15.3 m/s with its speed factor 1.10)'],
    ]);
    // No factor, or one below 1 (a slow driver; the sign still allows the limit): the lane's limit.
    for (const attributes of [{}, { speedFactor: 0.9 }, { speedFactor: 'fast' }] as JsonObject[])
      assert.deepEqual(
        await speedingOf(attributes),
        [[0, 4, '15.0 m/s on E0_0 limited to 13.9 m/s']],
        JSON.stringify(attributes),
      );
  });

  it('hard braking: 6 m/s^2 from 15 m/s for 1.5 s is one event from the first braking frame', async () => {
    const speed = (s: number): number => 15 - 6 * Math.min(Math.max(s - 1, 0), 1.5);
    const run = await recordScene(
      { ego: { kind: 'ego', track: (_k, s) => ({ x: 20 + 10 * s, y: -1.6, yaw: 0, speed: speed(s) }) } },
      4,
      true,
    );
    const { events } = await evaluateRun(store, run);
    const braking = events.filter((e) => e.kind === 'hard_braking');
    assert.equal(braking.length, 1);
    // The frame at 1.1 s is the first whose speed fell (by 0.6 m/s in 0.1 s); 2.5 s the last.
    assert.equal(braking[0]!.t, BEGIN + 1_100_000);
    assert.ok(Math.abs(braking[0]!.duration - 1.5) < 1e-9, `${braking[0]!.duration} s`);
    assert.match(braking[0]!.detail, /^-6\.0 m\/s\^2$/);
    // 4 m/s^2 is the default threshold: 3.9 m/s^2 is not hard braking.
    const gentle = await recordScene(
      {
        ego: {
          kind: 'ego',
          track: (_k, s) => ({ x: 20 + 10 * s, y: -1.6, yaw: 0, speed: 15 - 3.9 * Math.min(s, 2) }),
        },
      },
      3,
      true,
    );
    assert.deepEqual(
      (await evaluateRun(store, gentle)).events.filter((e) => e.kind === 'hard_braking'),
      [],
    );
  });

  it('a red light: entering the junction lane at 5 s on red is one event; on green none', async () => {
    async function drive(greenFrom: number): Promise<number> {
      const rec = await RunRecorder.begin(store, { simulator: { name: 'scene' }, begin: BEGIN });
      await rec.declareActors([
        { id: 'ego', kind: 'ego', extents: { length: 4, width: 1.8, height: 1.5 } },
        { id: 'J1', kind: 'traffic_light' },
      ]);
      await rec.declareStreams([
        stateStream('ego'),
        { name: 'signal', actor: 'J1', fields: [{ name: 'state', type: 'string' }] },
      ]);
      for (let k = 0; k <= 80; k++) {
        const s = k / 10;
        const x = 50 + 10 * s;
        const lane = x < 100 - 1e-9 ? 'E0_0' : x < 110 - 1e-9 ? ':J1_0_0' : 'E1_0';
        const t = BEGIN + k * 100_000;
        await rec.appendMany([
          { stream: 'ego/state', samples: [{ t, step: k, x, y: -1.6, yaw: 0, speed: 10, lane }] },
          { stream: 'J1/signal', samples: [{ t, step: k, state: s >= greenFrom - 1e-9 ? 'G' : 'r' }] },
        ]);
      }
      await rec.end('completed');
      await attachRoadNetwork(store, rec.id, readRoadNetwork(SIGNALLED).network);
      return rec.id;
    }
    const onRed = await evaluateRun(store, await drive(6));
    const red = onRed.events.filter((e) => e.kind === 'red_light');
    assert.equal(red.length, 1);
    assert.equal(red[0]!.t, BEGIN + 5_000_000);
    assert.deepEqual(red[0]!.actors, ['ego', 'J1']);
    assert.equal(red[0]!.detail, 'entered :J1_0_0 on r (light J1, link 0)');
    const onGreen = await evaluateRun(store, await drive(4));
    assert.deepEqual(
      onGreen.events.filter((e) => e.kind === 'red_light'),
      [],
    );
  });

  it("LimSim mode takes LimSim's overlap test: boxes at 45 degrees apart only along the second box's axes touch", async () => {
    // The ego (4 x 1.8, heading +x) and a car turned 45 degrees, standing: their bounding boxes and
    // the ego's axes overlap, the car's axes separate them. LimSim (utils/separate_axis_theorem.py
    // builds the second polygon's edges from the first's vertices) calls that a collision now.
    const ego = { x: 0, y: 0, yaw: 0, length: 4, width: 1.8 };
    const car = { x: 3, y: 2, yaw: Math.PI / 4, length: 2, width: 1.8 };
    assert.equal(boxesOverlap(ego, car), false);
    assert.equal(limsimBoxesOverlap(ego, car), true);
    const run = await recordScene(
      {
        ego: { kind: 'ego', track: () => ({ x: 0, y: 0, yaw: 0, speed: 0 }) },
        car: { kind: 'vehicle', length: 2, track: () => ({ x: 3, y: 2, yaw: Math.PI / 4, speed: 0 }) },
      },
      0.5,
    );
    const simrec = await evaluateRun(store, run);
    assert.equal(simrec.metrics.collision!.max, 20);
    assert.equal(simrec.metrics.collision!.min, 20);
    assert.deepEqual(
      simrec.events.filter((e) => e.kind === 'collision'),
      [],
    );
    const limsim = await evaluateRun(store, run, { mode: 'limsim' });
    assert.equal(limsim.metrics.collision!.max, 0);
  });
});
