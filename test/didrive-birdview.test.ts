/**
 * DI-drive's bird's-eye view drawn from simrec runs. DI-drive's code (core/utils/simulator_utils/
 * map_utils.py, carla_utils.py get_birdview, core/data/lbc_dataset.py) cannot be fetched in CI, so its
 * geometry is pinned here with a known scene: 320 x 320, 4.5 pixels a metre (5 px/m zoomed by 0.9),
 * the hero at column 160, row 250 heading up, channels road, lane, red, yellow, green, vehicle,
 * pedestrian, hero, route, the LMDB value the first seven of them.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decode as decodePng, encode as encodePng } from 'fast-png';
import { recordDemoRun } from '../src/demo/demo-run.js';
import {
  BIRDVIEW_OBS,
  CHANNELS,
  exportDidrive,
  readLmdb,
  renderBirdview,
  type BirdviewScene,
  type Channel,
} from './helpers/formats.js';
import { capturesStreamDecl } from '../src/model/perception.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend, StreamAppend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { sceneAt } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { birdviewAt, loadBirdviewSource } from './helpers/formats.js';
import { tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const PX = 4.5;
const HERO = { column: 160, row: 250 };

/** A road running north, two lanes of 3.5 m each way of x = 0; the hero northbound on the right lane. */
function knownScene(): BirdviewScene {
  const north = (x: number): [number, number][] => [
    [x, -100],
    [x, 100],
  ];
  return {
    // At x = 10 facing north (yaw 90 degrees): forward is +y, left is -x.
    hero: { x: 10, y: 0, yaw: Math.PI / 2, length: 4.6, width: 2 },
    lanes: [
      { centerLine: north(10), width: 3.5, leftLine: 'broken', rightLine: 'solid' },
      { centerLine: north(6.5), width: 3.5, leftLine: 'solid', rightLine: 'broken' },
    ],
    areas: [],
    vehicles: [{ x: 10, y: 15, yaw: Math.PI / 2, length: 4.6, width: 2 }],
    pedestrians: [{ x: 16, y: 8, yaw: 0, length: 0.6, width: 0.6 }],
    lights: [{ x: 10, y: 30, channel: 'red_light' }],
    route: {
      points: [
        [10, 0],
        [10, 40],
      ],
      width: 1.75,
    },
  };
}

/** The pixel (column, row) of a point `forward` metres ahead of the hero and `left` metres to its left. */
const pixel = (forward: number, left: number): [number, number] => [
  Math.round(HERO.column - left * PX),
  Math.round(HERO.row - forward * PX),
];

describe("DI-drive's birdview geometry (a known scene)", () => {
  const view = renderBirdview(knownScene());
  const lit = (channel: Channel, [column, row]: [number, number]): number => view.at(channel, column, row);
  const litChannels = (at: [number, number]): Channel[] => CHANNELS.filter((c) => lit(c, at) === 1);

  it('puts the hero at column 160, row 250, heading up', () => {
    assert.deepEqual(litChannels(pixel(0, 0)), ['road', 'hero', 'route']);
    assert.equal(lit('hero', pixel(2.2, 0)), 1, 'the hero reaches 2.3 m ahead');
    assert.equal(lit('hero', pixel(2.6, 0)), 0);
    assert.equal(lit('hero', pixel(0, 0.9)), 1, 'and 1 m to each side');
    assert.equal(lit('hero', pixel(0, 1.2)), 0);
  });

  it('draws the car 15 m ahead in the vehicle channel, 67.5 pixels up', () => {
    assert.deepEqual(pixel(15, 0), [160, 183]);
    assert.equal(lit('vehicle', [160, 183]), 1);
    assert.equal(lit('vehicle', pixel(15 + 2.5, 0)), 0, 'its box ends 2.3 m beyond its centre');
    assert.equal(lit('vehicle', pixel(0, 0)), 0, 'the hero is not a vehicle');
  });

  it('draws the red light 30 m ahead as a 1.4 m disc in the red channel only', () => {
    const at = pixel(30, 0);
    assert.equal(lit('red_light', at), 1);
    assert.equal(lit('yellow_light', at), 0);
    assert.equal(lit('green_light', at), 0);
    assert.equal(lit('red_light', pixel(30, 1.2)), 1);
    assert.equal(lit('red_light', pixel(30, 1.7)), 0);
  });

  it("keeps the hero's right on the image's right: the pedestrian 6 m to the east is right of the hero", () => {
    assert.equal(lit('pedestrian', pixel(8, -6)), 1);
    assert.equal(lit('pedestrian', pixel(8, 6)), 0);
  });

  it('draws the route along the way ahead, half a lane wide', () => {
    assert.equal(lit('route', pixel(20, 0)), 1);
    assert.equal(lit('route', pixel(20, 0.6)), 1);
    assert.equal(lit('route', pixel(20, 1.2)), 0);
    assert.equal(lit('route', pixel(45, 0)), 0, 'the route ends 40 m ahead');
  });

  it('draws the road 1 m beyond its lanes, and lane lines on the lane borders', () => {
    // Lanes cover 8.25 .. 11.75 and 4.75 .. 8.25 (x): left of the hero up to 5.25 m, right 1.75 m.
    assert.equal(lit('road', pixel(10, 6)), 1, 'the outline adds 1 m');
    assert.equal(lit('road', pixel(10, 6.5)), 0);
    assert.equal(lit('road', pixel(10, -2.6)), 1);
    assert.equal(lit('road', pixel(10, -3)), 0);
    assert.equal(lit('lane', pixel(10, -1.75)), 1, 'the solid right edge');
    assert.equal(lit('lane', pixel(10, 0)), 0);
    // The broken line between the lanes: 1 m drawn, 2 m left out, from the lanes' start 100 m behind.
    const along = (metres: number): number => lit('lane', pixel(metres - 100, 1.75));
    assert.deepEqual([100.5, 101.5, 102.2, 102.7, 103.5].map(along), [0, 0, 1, 1, 0]);
  });

  it("gives DI-drive's LMDB value: uint8 320 x 320 x 7, the first seven channels", () => {
    const value = view.lmdbValue();
    assert.equal(value.length, 320 * 320 * 7);
    const [column, row] = pixel(15, 0);
    const at = (row * 320 + column) * 7;
    assert.deepEqual(Array.from(value.subarray(at, at + 7)), [1, 0, 0, 0, 0, 1, 0]);
    const [lc, lr] = pixel(30, 0);
    assert.equal(value[(lr * 320 + lc) * 7 + 2], 1, 'channel 2 is the red light');
  });

  it('turns with the hero: the same scene rotated gives the same image', () => {
    const turn = (x: number, y: number, a: number): [number, number] => [
      x * Math.cos(a) - y * Math.sin(a),
      x * Math.sin(a) + y * Math.cos(a),
    ];
    const a = -1.1;
    const scene = knownScene();
    const rotated: BirdviewScene = {
      ...scene,
      hero: { ...scene.hero, ...xy(turn(scene.hero.x, scene.hero.y, a)), yaw: scene.hero.yaw + a },
      lanes: scene.lanes.map((l) => ({ ...l, centerLine: l.centerLine.map((p) => turn(p[0], p[1], a)) })),
      vehicles: scene.vehicles.map((v) => ({ ...v, ...xy(turn(v.x, v.y, a)), yaw: v.yaw + a })),
      pedestrians: scene.pedestrians.map((v) => ({ ...v, ...xy(turn(v.x, v.y, a)), yaw: v.yaw + a })),
      lights: scene.lights.map((l) => ({ ...l, ...xy(turn(l.x, l.y, a)) })),
      route: { ...scene.route, points: scene.route.points.map((p) => turn(p[0], p[1], a)) },
    };
    const other = renderBirdview(rotated);
    let differ = 0;
    for (let i = 0; i < view.data.length; i++) if (view.data[i] !== other.data[i]) differ++;
    // Only pixels exactly on a shape's edge may fall the other way after rounding.
    assert.ok(differ < view.data.length * 0.002, `${differ} values differ`);
  });
});

const xy = ([x, y]: [number, number]) => ({ x, y });

describe('a demo run exported with birdviews', () => {
  const dir = tempDir('simrec-birdview-');
  const storePath = join(dir.path, 'bev.db');
  let store: StoreBackend;
  let run: number;
  let out: string;
  const warnings: string[] = [];

  before(async () => {
    store = await openStore(storePath);
    run = (await recordDemoRun(store, { duration: 8, vehicles: 15, pedestrians: 2, seed: 3 })).run.id;
    out = join(dir.path, 'dataset');
    await exportDidrive(store, [run], out, { warn: (m) => warnings.push(m) });
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  it('writes birdview_%05d for every frame, 320 x 320 x 7 bytes of 0 and 1', () => {
    const values = new Map<string, Buffer>();
    for (const { key, value } of readLmdb(join(out, 'episode_00000', 'measurements.lmdb')))
      values.set(key.toString('latin1'), value);
    const frames = Number(values.get('len')!.toString());
    assert.ok(frames > 50);
    for (let i = 0; i < frames; i++) {
      const value = values.get(`birdview_${String(i).padStart(5, '0')}`);
      assert.ok(value, `frame ${i} has a birdview`);
      assert.equal(value.length, 320 * 320 * 7);
      assert.ok(value.every((b) => b <= 1));
    }
  });

  it("says in metainfo.json's obs what the birdview is, as DI-drive's saver writes the bev config", () => {
    const metainfo = JSON.parse(readFileSync(join(out, 'metainfo.json'), 'utf8'));
    assert.deepEqual(metainfo.obs.birdview, BIRDVIEW_OBS);
    assert.deepEqual(BIRDVIEW_OBS, {
      type: 'bev',
      size: [320, 320],
      pixels_per_meter: 5,
      pixels_ahead_vehicle: 100,
    });
  });

  it("without a camera, rgb_%05d.png are the birdview in colour, one per frame, so DI-drive's LBC loaders find every frame, and it says so", () => {
    // LBCBirdViewDataset lists an episode's frames by its rgb*.png files and reads only the birdview
    // (run against DI-drive's own lbc_dataset.py: all len - gap x n_step frames of a demo export).
    // Besides what the export leaves out of the run (export-left-out.test.ts), one warning.
    const others = warnings.filter((w) => !/ left out: /.test(w));
    assert.equal(others.length, 1, warnings.join('\n'));
    assert.match(
      others[0]!,
      /no camera captures in PNG, so rgb_%05d\.png are the bird's-eye view drawn in colour/,
    );
    assert.match(others[0]!, /LBCImageDataset and CILRS would learn from these pictures, not from a camera/);
    const episode = join(out, 'episode_00000');
    const frames = Number(
      [...readLmdb(join(episode, 'measurements.lmdb'))]
        .find((e) => e.key.toString() === 'len')!
        .value.toString(),
    );
    const pngs = readdirSync(episode)
      .filter((n) => n.startsWith('rgb') && n.endsWith('png'))
      .sort();
    assert.equal(pngs.length, frames);
    assert.equal(pngs[0], 'rgb_00000.png');
    const png = decodePng(readFileSync(join(episode, pngs[7]!)));
    assert.deepEqual([png.width, png.height, png.channels], [320, 320, 3]);
    assert.deepEqual(JSON.parse(readFileSync(join(out, 'metainfo.json'), 'utf8')).obs.rgb, { type: 'rgb' });
  });

  it('has each vehicle around the ego lit where its position says, and the ego at 160, 250', async () => {
    const values = new Map<string, Buffer>();
    for (const { key, value } of readLmdb(join(out, 'episode_00000', 'measurements.lmdb')))
      values.set(key.toString('latin1'), value);
    const begin = (await store.getRun(run))!.begin;
    let checked = 0;
    for (let frame = 0; frame < 80; frame += 5) {
      const bev = values.get(`birdview_${String(frame).padStart(5, '0')}`)!;
      const scene = await sceneAt(store, run, { t: begin + frame * 100_000 });
      const ego = scene.actors.find((a) => a.kind === 'ego')!;
      const [ex, ey, yaw] = [Number(ego.x), Number(ego.y), Number(ego.yaw)];
      for (const actor of scene.actors) {
        if (actor.kind !== 'vehicle' || Number(actor.t) < scene.t - 100_000) continue;
        const dx = Number(actor.x) - ex;
        const dy = Number(actor.y) - ey;
        const forward = dx * Math.cos(yaw) + dy * Math.sin(yaw);
        const left = -dx * Math.sin(yaw) + dy * Math.cos(yaw);
        const [column, row] = pixel(forward, left);
        if (column < 0 || column >= 320 || row < 0 || row >= 320) continue;
        assert.equal(
          bev[(row * 320 + column) * 7 + 5],
          1,
          `frame ${frame}: ${actor.id} at ${column}, ${row}`,
        );
        checked++;
      }
      // The hero channel is not in the LMDB value; the road under the ego is.
      assert.equal(bev[(HERO.row * 320 + HERO.column) * 7 + 0], 1, `frame ${frame}: the ego is on the road`);
    }
    assert.ok(checked >= 5, `${checked} vehicles checked in view`);
  });

  it("a moment's scene read alone (the server's and simrec birdview's) is the scene of the run walked through (the export's), at every frame and between", async () => {
    const whole = await (await loadBirdviewSource(store, run)).walk();
    const begin = (await store.getRun(run))!.begin;
    let actors = 0;
    let lights = 0;
    for (let tenth = -2; tenth <= 82; tenth++)
      for (const t of [begin + tenth * 100_000, begin + tenth * 100_000 + 37_000]) {
        const { scene } = await birdviewAt(store, run, t);
        assert.deepEqual(scene, await whole(t), `at ${t - begin} us`);
        actors += scene.vehicles.length + scene.pedestrians.length;
        lights += scene.lights.length;
      }
    assert.ok(actors > 1000 && lights > 100, `${actors} actors and ${lights} lights compared`);
    // A walk reads on: it refuses to go back rather than draw from a window it has left.
    await assert.rejects(whole(begin), /a walk through a run's scenes goes forward/);
  });

  it('simrec birdview writes the picture of a moment, in visualize_birdview colours', () => {
    const env = { SIMREC_STORE: storePath };
    const file = join(dir.path, 'bev.png');
    const result = cliJson<{ pixels: Record<string, number>; hero: { column: number; row: number } }>(
      ['birdview', String(run), '--at', '2', '--out', file, '--json'],
      env,
    );
    assert.deepEqual(result.hero, HERO);
    assert.ok(result.pixels.road! > 1000 && result.pixels.hero! > 50 && result.pixels.route! > 0);
    const png = decodePng(readFileSync(file));
    assert.deepEqual([png.width, png.height, png.channels], [320, 320, 3]);
    // The hero's pixel is the route's green (drawn last), just behind it the hero's blue.
    const rgbAt = (column: number, row: number) =>
      Array.from(png.data.subarray((row * 320 + column) * 3, (row * 320 + column) * 3 + 3));
    assert.deepEqual(rgbAt(160, 250), [41, 239, 41]);
    assert.deepEqual(rgbAt(160, 258), [32, 74, 207]);
    // The command line's rule for outputs (docs/command-line.md): an existing file is kept unless --force.
    const again = runCli(['birdview', String(run), '--at', '2', '--out', file], env);
    assert.equal(again.status, 2);
    assert.match(again.stderr, /bev\.png: already exists; --force replaces it/);
    assert.equal(runCli(['birdview', String(run), '--at', '2', '--out', file, '--force'], env).status, 0);
    const bad = runCli(['birdview', String(run), '--at', '2', '--out', join(dir.path, 'bev.jpg')], env);
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /--out .*bev\.jpg: expected a file name ending in \.png/);
    const missing = runCli(['birdview', '999', '--at', '2', '--out', file], env);
    assert.notEqual(missing.status, 0);
    assert.match(missing.stderr, /999/);
  });
});

describe('a run with a 5 Hz camera and no road network', () => {
  const dir = tempDir('simrec-birdview-camera-');
  let store: StoreBackend;
  let run: number;
  let out: string;
  const warnings: string[] = [];
  const FRAMES = 40;
  /** A 384 x 160 picture (LBC's rgb shape) whose first byte says which capture it is. */
  const picture = (k: number): Uint8Array => {
    const pixels = new Uint8Array(384 * 160 * 3);
    pixels[0] = k;
    return encodePng({ width: 384, height: 160, data: pixels, channels: 3, depth: 8 });
  };

  before(async () => {
    store = await openStore(join(dir.path, 'camera.db'));
    const rec = await RunRecorder.begin(store, { simulator: { name: 'test' }, begin: 1_000_000_000 });
    await rec.declareActors([
      { id: 'hero', kind: 'ego', extents: { length: 4.6, width: 2, height: 1.5 } },
      { id: 'lead', kind: 'vehicle', extents: { length: 4.6, width: 2, height: 1.5 } },
      { id: 'front', kind: 'sensor' },
    ]);
    await rec.declareStreams([stateStream('hero'), stateStream('lead'), capturesStreamDecl('front')]);
    const begin = rec.run.begin;
    for (let i = 0; i < FRAMES; i++) {
      const t = begin + i * 100_000;
      const appends: StreamAppend[] = [
        { stream: 'hero/state', samples: [{ t, step: i, x: i, y: 0, yaw: 0, speed: 10 }] },
        { stream: 'lead/state', samples: [{ t, step: i, x: i + 12, y: 3, yaw: 0, speed: 10 }] },
      ];
      if (i % 2 === 0) {
        const file = `front/${i}.png`;
        await rec.attach({ name: file, mediaType: 'image/png', t, data: picture(i / 2) });
        appends.push({
          stream: 'front/captures',
          samples: [
            { t, step: i, id: file, sequence: 's', timestamp: i / 10, file, format: 'PNG', annotations: [] },
          ],
        });
      }
      await rec.appendMany(appends);
    }
    run = (await rec.end('end_of_data')).id;
    out = join(dir.path, 'dataset');
    await exportDidrive(store, [run], out, { warn: (m) => warnings.push(m) });
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  it('gives every frame an rgb_%05d.png: the capture nearest in time, held until the next', () => {
    const episode = join(out, 'episode_00000');
    const rgb = readdirSync(episode)
      .filter((f) => f.startsWith('rgb_'))
      .sort();
    assert.equal(rgb.length, FRAMES);
    for (let i = 0; i < FRAMES; i++) {
      const png = decodePng(readFileSync(join(episode, `rgb_${String(i).padStart(5, '0')}.png`)));
      assert.deepEqual([png.width, png.height], [384, 160]);
      assert.equal(png.data[0], Math.floor(i / 2), `frame ${i} has capture ${Math.floor(i / 2)}`);
    }
    const metainfo = JSON.parse(readFileSync(join(out, 'metainfo.json'), 'utf8'));
    assert.deepEqual(Object.keys(metainfo.obs).sort(), ['birdview', 'rgb']);
  });

  it('warns that without a road network the road, lane and light channels are empty, and still draws the actors', () => {
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(
      warnings[0]!,
      /no road network attached, so the birdview's road, lane-line and traffic-light channels are empty/,
    );
    const values = new Map<string, Buffer>();
    for (const { key, value } of readLmdb(join(out, 'episode_00000', 'measurements.lmdb')))
      values.set(key.toString('latin1'), value);
    const bev = values.get('birdview_00010')!;
    // The lead car is 12 m ahead and 3 m to the left: column 160 - 13.5, row 250 - 54.
    assert.equal(bev[(196 * 320 + 147) * 7 + 5], 1);
    assert.equal(
      bev.reduce((n, v, i) => n + (i % 7 === 0 ? v : 0), 0),
      0,
      'no road',
    );
  });
});
