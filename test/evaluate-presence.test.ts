/**
 * The evaluator and presence (#55): an actor that has left is in no collision, near miss, blocking or
 * time to collision, however fresh its last state; and the demo, which promises that no two vehicles
 * ever overlap, is evaluated without a collision over many seeds at the demo's documented densities
 * (docs/recording.md).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { evaluateRun, type EvaluationEvent } from '../src/evaluate/evaluate-run.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const BEGIN = 1_800_000_000_000_000;
const S = 1_000_000;
const dir = tempDir('simrec-eval-presence-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(dir.path, 'eval-presence.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

/** How the car in front of the ego goes (or does not). */
type Going =
  | 'stays' // sampled to the end: present throughout
  | 'leaves' // last state at 1.9 s, a leave at 2.0 s
  | 'stops sending' // last state at 1.9 s, nothing said: the 1 s staleness rule, as before presence
  | 'has a gap' // sampled throughout, but absent from 2.0 s to 3.5 s (LimSim's area of interest)
  | 'comes back'; // leaves at 2.0 s, appears again at 2.2 s, its next state only at 3.5 s, far away

/**
 * 4 s at 10 Hz on a straight road along +x, both cars 4 m long: `car` stands at x = 100; the ego waits
 * 2.5 m behind it (x = 93.5) until 2.0 s, then drives at 10 m/s through where the car stood. Were the
 * car there, their footprints would overlap from 2.3 s to 3.0 s, and at 2.0 s the time to collision is
 * 0.25 s.
 */
async function egoThroughWhereTheCarStood(going: Going): Promise<number> {
  const rec = await RunRecorder.begin(store, { simulator: { name: 'presence-scene' }, begin: BEGIN });
  await rec.declareActors(
    ['ego', 'car'].map((id) => ({
      id,
      kind: id === 'ego' ? 'ego' : 'vehicle',
      extents: { length: 4, width: 1.8, height: 1.5 },
    })),
  );
  await rec.declareStreams([stateStream('ego'), stateStream('car')]);
  const carSampled = (k: number): boolean =>
    going === 'stays' || going === 'has a gap' || k < 20 || (going === 'comes back' && k === 35);
  for (let k = 0; k <= 40; k++) {
    const t = BEGIN + k * 100_000;
    if (going === 'leaves' && k === 20) await rec.leave('car', t);
    if (going === 'comes back' && k === 20) await rec.leave('car', t);
    if (going === 'comes back' && k === 22) await rec.appear('car', t);
    const ego = { x: 93.5 + Math.max(0, k - 20), y: -1.6, yaw: 0, speed: k < 20 ? 0 : 10 };
    const car = k === 35 && going === 'comes back' ? { x: 150, y: 40 } : { x: 100, y: -1.6 };
    await rec.appendMany([
      { stream: 'ego/state', samples: [{ t, step: k, ...ego }] },
      ...(carSampled(k)
        ? [{ stream: 'car/state', samples: [{ t, step: k, ...car, yaw: 0, speed: 0 }] }]
        : []),
    ]);
  }
  if (going === 'has a gap')
    await rec.setPresence('car', [
      { from: BEGIN, to: BEGIN + 2 * S },
      { from: BEGIN + 3.5 * S, to: null },
    ]);
  return (await rec.end('completed')).id;
}

const withCar = (events: EvaluationEvent[], kind: EvaluationEvent['kind']): EvaluationEvent[] =>
  events.filter((e) => e.kind === kind && e.actors.includes('car'));

async function evaluate(going: Going) {
  const run = await egoThroughWhereTheCarStood(going);
  const frames: Sample[] = [];
  const summary = await evaluateRun(store, run, {
    blockedSeconds: 1,
    store: false,
    onFrame: (f) => frames.push(f),
  });
  return { summary, frames };
}

describe('evaluation: an actor that has left is in no event', () => {
  it('the car present: the ego drives into it, a collision from 2.3 s to 3.0 s and a near miss at 2.0 s', async () => {
    const { summary, frames } = await evaluate('stays');
    const [collision, ...more] = withCar(summary.events, 'collision');
    assert.equal(more.length, 0);
    assert.deepEqual(collision!.actors, ['car', 'ego']);
    assert.equal(collision!.t, BEGIN + 2.3 * S);
    assert.equal(collision!.duration, 0.8);
    assert.equal(withCar(summary.events, 'near_miss')[0]?.t, BEGIN + 2 * S);
    const at2 = frames.find((f) => f.t === BEGIN + 2 * S)!;
    assert.equal(at2.ttcActor, 'car');
    assert.ok(Math.abs((at2.collision as number) - 0.25) < 1e-6, `TTC ${at2.collision}`);
  });

  for (const going of ['leaves', 'has a gap', 'comes back'] as const)
    it(`the car ${going} at 2.0 s: no collision, near miss or TTC with it after, its blocking ends then`, async () => {
      const { summary, frames } = await evaluate(going);
      assert.deepEqual(withCar(summary.events, 'collision'), [], 'a collision with a car that left');
      assert.deepEqual(withCar(summary.events, 'near_miss'), [], 'a near miss with a car that left');
      for (const f of frames)
        if (f.t >= BEGIN + 2 * S)
          assert.ok(f.ttcActor !== 'car' && f.collision === 20, `${(f.t - BEGIN) / S} s: TTC ${f.collision}`);
      // Standing from 0 s, it was blocked while it was there: 2.0 s, not the 1 s more its last state
      // stayed fresh.
      const blocked = withCar(summary.events, 'blocked');
      assert.deepEqual(
        blocked.map((e) => [e.t, e.duration]),
        [[BEGIN, 2]],
      );
    });

  it('the car stops sending without a leave: the staleness rule holds, the collision is seen until its state is 1 s old', async () => {
    const { summary } = await evaluate('stops sending');
    const collisions = withCar(summary.events, 'collision');
    assert.deepEqual(
      collisions.map((e) => [e.t, e.duration]),
      [[BEGIN + 2.3 * S, 0.7]],
    );
  });
});

describe('evaluation: the same whatever stretch of the other actors it holds at once', () => {
  it('the scenes above and a demo run, read a frame, a few frames or the whole run at a time', async () => {
    const runs: number[] = [];
    for (const going of ['stays', 'leaves', 'has a gap', 'comes back', 'stops sending'] as const)
      runs.push(await egoThroughWhereTheCarStood(going));
    runs.push((await recordDemoRun(store, { duration: 30, seed: 7, vehicles: 20 })).run.id);
    for (const run of runs) {
      const evaluated = async (readWindow?: number) => {
        const frames: Sample[] = [];
        const summary = await evaluateRun(store, run, {
          blockedSeconds: 1,
          store: false,
          onFrame: (f) => frames.push(f),
          ...(readWindow === undefined ? {} : { readWindow }),
        });
        return { summary, frames };
      };
      const whole = await evaluated(10 ** 12);
      assert.ok(whole.summary.events.length > 0, `run ${run}: events to compare`);
      for (const readWindow of [undefined, 1, 99_999, 100_000, 350_000])
        assert.deepEqual(
          await evaluated(readWindow),
          whole,
          `run ${run}, ${readWindow ?? 'the default'} µs at once`,
        );
    }
  });
});

describe('evaluation of the demo: no collision, it never overlaps two vehicles', () => {
  // The documented densities (docs/recording.md, "The demo"): the default (30 vehicles, 10 Hz) and
  // `--rate 20 --vehicles 60`, 20 s runs (the false collisions of #55 were all within the first 3 s:
  // vehicles arriving at the town's edge).
  for (const density of [
    { vehicles: 30, rateHz: 10 },
    { vehicles: 60, rateHz: 20 },
  ])
    it(`50 seeds, ${density.vehicles} vehicles at ${density.rateHz} Hz, 20 s each`, async () => {
      const duration = 20;
      const collisions: string[] = [];
      let departed = 0;
      for (let seed = 1; seed <= 50; seed++) {
        const { run } = await recordDemoRun(store, { seed, duration, ...density });
        const summary = await evaluateRun(store, run.id, { store: false });
        assert.equal(summary.frames, duration * density.rateHz + 1, `seed ${seed}: every frame evaluated`);
        for (const e of summary.events)
          if (e.kind === 'collision')
            collisions.push(`seed ${seed}: ${e.actors.join(' and ')} at ${(e.t - run.begin) / S} s`);
        departed += (await store.listActors(run.id)).filter((a) =>
          a.presence?.some((iv) => iv.to !== null),
        ).length;
      }
      assert.deepEqual(collisions, []);
      assert.ok(departed >= 50, `vehicles that left during the runs: ${departed}`);
    });

  it('simrec demo --seed 14, then simrec eval: no collision (veh4 had left at 1.2 s)', () => {
    const env = { SIMREC_STORE: join(dir.path, 'seed14.db') };
    const demo = runCli(['demo', '--no-serve', '--seed', '14', '--duration', '5'], env);
    assert.equal(demo.status, 0, demo.stderr);
    const { events } = cliJson<{ events: EvaluationEvent[] }>(['eval', '1', '--json'], env);
    assert.deepEqual(
      events.filter((e) => e.kind === 'collision'),
      [],
    );
  });
});
