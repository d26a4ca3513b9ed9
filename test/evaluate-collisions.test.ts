/**
 * The evaluator's collisions between any two actors: found through a grid of the frame's actors, they
 * must be exactly the pairs whose footprints overlap, whatever the footprints' sizes (a SUMO trailer is
 * 16.5 m long) and wherever the actors stand, and listed in the order of the frame's actors.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ActorTrack } from '../src/evaluate/actor-tracks.js';
import { Collisions } from '../src/evaluate/detectors/collisions.js';
import { movingBox, type Frame, type Present } from '../src/evaluate/detectors/detector.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { boxesOverlap } from '../src/evaluate/footprint.js';
import type { ActorKind } from '../src/model/run.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { StreamInfo } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';

interface Placed {
  kind: ActorKind;
  x: number;
  y: number;
  yaw: number;
  length: number;
  width: number;
}

const stateInfo = (actor: string): StreamInfo => ({
  id: `${actor}/state`,
  name: 'state',
  actor,
  fields: stateStream(actor).fields,
  metadata: {},
  samples: 1,
  begin: 0,
  end: 0,
  extraFields: [],
});

/** One actor standing at one moment, as the evaluator's tracks hold it. */
function presentActor(id: string, a: Placed): Present {
  const track = new ActorTrack(
    {
      id,
      kind: a.kind,
      record: true,
      extents: { length: a.length, width: a.width, height: 1.5 },
      attributes: {},
      options: {},
    },
    stateInfo(id),
  );
  track.append({
    t: Float64Array.of(0),
    step: Float64Array.of(0),
    columns: {
      x: Float64Array.of(a.x),
      y: Float64Array.of(a.y),
      yaw: Float64Array.of(a.yaw),
      speed: Float64Array.of(0),
    },
  });
  return { track, k: 0 };
}

/** The actor pairs the detector reports for one frame of these actors, in its order. */
function detected(actors: Placed[]): string[][] {
  const present = actors.map((a, n) => presentActor(`a${String(n).padStart(3, '0')}`, a));
  const collisions = new Collisions();
  // The detector reads the frame's time and actors only.
  collisions.frame({ t: 0, present } as unknown as Frame);
  return collisions.finish(0).map((e) => e.actors);
}

/** Every pair tested, in the order of the frame's actors: what the grid must find. */
function everyPairOverlapping(actors: Placed[]): string[][] {
  const present = actors.map((a, n) => presentActor(`a${String(n).padStart(3, '0')}`, a));
  const pairs: string[][] = [];
  for (let n = 0; n < present.length; n++)
    for (let m = n + 1; m < present.length; m++) {
      const [a, b] = [present[n]!, present[m]!];
      const kinds = [a.track.actor.kind, b.track.actor.kind];
      if (kinds.every((k) => k === 'pedestrian') || kinds.every((k) => k === 'static')) continue;
      if (boxesOverlap(movingBox(a.track, a.k), movingBox(b.track, b.k)))
        pairs.push([a.track.actor.id, b.track.actor.id].sort());
    }
  return pairs;
}

const vehicle = (x: number, y: number, length = 4.5, yaw = 0): Placed => ({
  kind: 'vehicle',
  x,
  y,
  yaw,
  length,
  width: 2.5,
});

describe('collisions between any two actors', () => {
  /** Spread evenly (fc.double's values crowd near 0 and the bounds). */
  const uniform = (min: number, max: number) =>
    fc.integer({ min: 0, max: 1_000_000 }).map((i) => min + ((max - min) * i) / 1_000_000);
  /** Actors crowded into 60 m, so that many overlap, headed mostly along the axes or else anywhere. */
  const placed = (maxLength: number) =>
    fc.record({
      kind: fc.constantFrom<ActorKind>('vehicle', 'vehicle', 'pedestrian', 'static', 'cyclist'),
      x: uniform(0, 60),
      y: uniform(0, 60),
      yaw: fc.oneof(fc.constantFrom(0, Math.PI / 2), uniform(-Math.PI, Math.PI)),
      length: uniform(0.3, maxLength),
      width: uniform(0.3, 3.5),
    });
  /** Far from the origin either way, and across where the grid's cell numbers wrap (2^15 cells of 10 m). */
  const origin = fc.constantFrom(0, -1234.5, 327_650, -327_700, 3_276_790, 1e7);
  const samePairs = (actors: fc.Arbitrary<Placed[]>) =>
    fc.assert(
      fc.property(origin, origin, actors, (ox, oy, placedActors) => {
        const moved = placedActors.map((a) => ({ ...a, x: a.x + ox, y: a.y + oy }));
        assert.deepEqual(detected(moved), everyPairOverlapping(moved));
      }),
      { numRuns: 300 },
    );

  it('are exactly the overlapping pairs of cars anywhere, in the order of the actors', () => {
    // Footprints within the grid's least cell of 10 m: the cells are 10 m, their numbers wrap nearby.
    samePairs(fc.array(placed(6.5), { minLength: 2, maxLength: 60 }));
  });

  it('are exactly the overlapping pairs of footprints of any length, up to 40 m', () => {
    samePairs(fc.array(placed(40), { minLength: 2, maxLength: 30 }));
  });

  it('finds two trailers of 16.5 m overlapping with their centres two cells of 10 m apart', () => {
    // Centres 10.2 m apart along their length: 6.3 m of them side by side.
    const trailers = [vehicle(9.9, 5, 16.5), vehicle(20.1, 5, 16.5)];
    assert.deepEqual(detected(trailers), [['a000', 'a001']]);
  });

  it('lists the pairs starting at one moment in the order of the actors, not of their cells', () => {
    // a000 overlaps a001 in the next cell and a002 in its own (a001 and a002 are 5 m apart): a000
    // with a001 first.
    const actors = [vehicle(9, 5), vehicle(11, 5), vehicle(6, 5.5)];
    assert.deepEqual(detected(actors), [
      ['a000', 'a001'],
      ['a000', 'a002'],
    ]);
  });
});

describe('collisions of long vehicles in a recorded run', () => {
  const dir = tempDir('simrec-eval-collisions-');
  let store: StoreBackend;
  before(async () => {
    store = await openStore(join(dir.path, 'collisions.db'));
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  it('reports a bus rear-ending a trailer whose centre is two cells of the grid ahead', async () => {
    const begin = 1_800_000_000_000_000;
    const rec = await RunRecorder.begin(store, { simulator: { name: 'long-vehicles' }, begin });
    await rec.declareActors([
      { id: 'bus', kind: 'ego', extents: { length: 12, width: 2.5, height: 3.4 } },
      { id: 'trailer', kind: 'vehicle', extents: { length: 16.5, width: 2.55, height: 4 } },
    ]);
    await rec.declareStreams([stateStream('bus'), stateStream('trailer')]);
    // The bus at 2 m/s closes on the standing trailer: their footprints meet once the centres are
    // 14.25 m apart, from 3.4 s on (the bus's centre at 106.8 m, the trailer's at 121).
    for (let k = 0; k <= 40; k++) {
      const t = begin + k * 100_000;
      await rec.appendMany([
        { stream: 'bus/state', samples: [{ t, step: k, x: 100 + 0.2 * k, y: 0, yaw: 0, speed: 2 }] },
        { stream: 'trailer/state', samples: [{ t, step: k, x: 121, y: 0, yaw: 0, speed: 0 }] },
      ]);
    }
    const run = (await rec.end('completed')).id;
    const summary = await evaluateRun(store, run, { store: false });
    const collisions = summary.events.filter((e) => e.kind === 'collision');
    assert.deepEqual(
      collisions.map((e) => [e.actors, (e.t - begin) / 1e6]),
      [[['bus', 'trailer'], 3.4]],
    );
  });
});
