/**
 * DI-drive's benchmark dataset: a demo run read back by readers written as DI-drive's loaders read
 * (LBC, CILRS), export -> import -> export giving the same bytes, datasets written here as DI-drive's
 * saver writes them (no real one exists anywhere) read in, and bad input refused by episode and frame.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { exportDidrive, importDidrive, LmdbWriter, pythonJsonDumps, readLmdb } from './helpers/formats.js';
import { encodePng } from '../src/formats/common/labelled-images/image-files.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { openStore } from '../src/store/open-store.js';
import { recordCameraRun, startIngestFixture } from './helpers/ingest-helpers.js';
import { tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-didrive-');
let store: StoreBackend;
let demoRun: number;
const storePath = join(dir.path, 'didrive.db');

before(async () => {
  store = await openStore(storePath);
  demoRun = (await recordDemoRun(store, { duration: 12, vehicles: 12, pedestrians: 2, seed: 3 })).run.id;
});
after(async () => {
  await store.close();
  dir.cleanup();
});

// ---- readers as DI-drive's loaders read -----------------------------------------------------------------

/** `txn.get(key)`: the raw bytes of a key, as py-lmdb gives them. */
function lmdbGet(episodeDir: string): (key: string) => Buffer | undefined {
  const values = new Map<string, Buffer>();
  for (const { key, value } of readLmdb(join(episodeDir, 'measurements.lmdb')))
    values.set(key.toString('latin1'), value);
  return (key) => values.get(key);
}
/** `np.frombuffer(txn.get(b'measurements_%05d' % i), np.float32)`. */
const frombuffer = (bytes: Buffer): Float32Array =>
  new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
const key = (name: string, i: number): string => `${name}_${String(i).padStart(5, '0')}`;

/** LBCBirdViewDataset / LBCImageDataset: measurements[2:4], [7:10], [10] / 3.6, [11]. */
function lbcRead(m: Float32Array) {
  return {
    orientation: [m[2]!, m[3]!],
    location: [m[7]!, m[8]!, m[9]!],
    speed: m[10]! / 3.6,
    command: m[11]!,
  };
}
/** cilrs_collect_data.post_process. */
function cilrsRead(m: Float32Array) {
  return { steer: (m[15]! + 1) / 2, throttle: m[16]!, brake: m[17]!, speed: m[10]! / 25, command: m[11]! };
}

async function samplesOf(run: number, stream: string): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of store.readSamples({ run, stream })) out.push(...batch);
  return out;
}

const close = (actual: number, expected: number, what: string, tolerance = 1e-4): void =>
  assert.ok(
    Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)),
    `${what}: got ${actual}, expected ${expected}`,
  );

function sameDatasetBytes(a: string, b: string): void {
  const files = (root: string): string[] =>
    readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((f) => !f.endsWith('lock.mdb') && !f.endsWith('data.mdb') && f.includes('.'))
      .sort();
  assert.deepEqual(files(b), files(a), 'the same files');
  for (const f of files(a))
    if (!f.endsWith('.lmdb'))
      assert.ok(readFileSync(join(a, f)).equals(readFileSync(join(b, f))), `${f} is identical`);
  for (const episode of readdirSync(a).filter((n) => n.startsWith('episode_'))) {
    const left = [...readLmdb(join(a, episode, 'measurements.lmdb'))];
    const right = [...readLmdb(join(b, episode, 'measurements.lmdb'))];
    assert.equal(right.length, left.length, `${episode}: as many LMDB keys`);
    left.forEach((e, i) => {
      assert.ok(e.key.equals(right[i]!.key), `${episode}: key ${e.key.toString('latin1')}`);
      assert.ok(
        e.value.equals(right[i]!.value),
        `${episode}: value of ${e.key.toString('latin1')} is identical`,
      );
    });
  }
}

describe('a demo run as a DI-drive dataset', () => {
  let out: string;
  before(async () => {
    out = join(dir.path, 'demo-dataset');
    await exportDidrive(store, [demoRun], out);
  });

  it('gives the LBC and CILRS loaders the ego true state, control and speed in CARLA frame', async () => {
    const episode = join(out, 'episode_00000');
    const get = lmdbGet(episode);
    const count = Number(get('len')!.toString('ascii'));
    const states = await samplesOf(demoRun, 'ego/state');
    const controls = await samplesOf(demoRun, 'ego/control');
    assert.equal(count, states.length, 'one frame per 0.1 s state sample (the demo records at 10 Hz)');
    const commands = new Set<number>();
    for (let i = 0; i < count; i++) {
      const m = frombuffer(get(key('measurements', i))!);
      assert.equal(m.length, 20);
      const s = states[i]!;
      const c = controls[i]!;
      const lbc = lbcRead(m);
      const pitch = (s.pitch as number) ?? 0;
      close(lbc.orientation[0]!, Math.cos(pitch) * Math.cos(s.yaw as number), `frame ${i} forward x`);
      close(
        lbc.orientation[1]!,
        -Math.cos(pitch) * Math.sin(s.yaw as number),
        `frame ${i} forward y (mirrored)`,
      );
      close(lbc.location[0]!, s.x as number, `frame ${i} x`);
      close(lbc.location[1]!, -(s.y as number), `frame ${i} y (mirrored)`);
      close(lbc.location[2]!, (s.z as number) ?? 0, `frame ${i} z`);
      close(lbc.speed, s.speed as number, `frame ${i} speed m/s`);
      const cilrs = cilrsRead(m);
      close(cilrs.steer, ((c.steer as number) + 1) / 2, `frame ${i} steer`);
      close(cilrs.throttle, c.throttle as number, `frame ${i} throttle`);
      close(cilrs.brake, c.brake as number, `frame ${i} brake`);
      close(cilrs.speed, ((s.speed as number) * 3.6) / 25, `frame ${i} CILRS speed`);
      assert.equal(cilrs.command, lbc.command);
      commands.add(lbc.command);
      close(m[1]!, (s.t - (await store.getRun(demoRun))!.begin) / 1e6, `frame ${i} timestamp`);
      assert.equal(m[0], i, 'tick');
      assert.ok([0, 1, 2, 3].includes(m[18]!), `frame ${i} tl_state ${m[18]}`);
      assert.ok(m[19]! >= 0 && m[19]! <= 200, `frame ${i} tl_dis ${m[19]}`);
    }
    for (const c of commands) assert.ok([1, 2, 3, 4, 5, 6].includes(c), `command ${c} is a RoadOption`);
    const index = readFileSync(join(out, 'index.txt'), 'utf8').trimEnd().split('\n');
    assert.equal(index.length, count);
    assert.equal(index[0], `episode_00000,0,${frombuffer(get(key('measurements', 0))!)[11]}`);
  });

  it('reports the traffic light the ego drives towards, from its signal stream and the road network', async () => {
    const get = lmdbGet(join(out, 'episode_00000'));
    const count = Number(get('len')!.toString('ascii'));
    const lit = Array.from({ length: count }, (_, i) => frombuffer(get(key('measurements', i))!)).filter(
      (m) => m[18] !== 3,
    );
    assert.ok(lit.length > 0, 'the demo ego meets a traffic light within 12 s');
    for (const m of lit) assert.ok(m[19]! < 200, 'a light in view has a distance under the cap');
  });

  it('export -> import -> export gives the same LMDB values, metadata files and index', async () => {
    const { runs } = await importDidrive(store, out);
    assert.equal(runs.length, 1);
    const again = join(dir.path, 'demo-again');
    await exportDidrive(store, [runs[0]!.run.id], again);
    sameDatasetBytes(out, again);
    // The imported run has the ego's canonical state back, in simrec's frame.
    const original = await samplesOf(demoRun, 'ego/state');
    const imported = await samplesOf(runs[0]!.run.id, 'hero/state');
    for (const i of [0, Math.floor(original.length / 2), original.length - 1]) {
      close(imported[i]!.x as number, original[i]!.x as number, `x ${i}`);
      close(imported[i]!.y as number, original[i]!.y as number, `y ${i}`);
      close(imported[i]!.speed as number, original[i]!.speed as number, `speed ${i}`);
    }
  });

  it('is what py-lmdb reads, where python3-lmdb is installed', async (t) => {
    // The Debian package installs for the system python, which may not be the first python3 on PATH.
    const python = ['python3', '/usr/bin/python3'].find(
      (p) => spawnSync(p, ['-c', 'import lmdb'], { encoding: 'utf8' }).status === 0,
    );
    if (!python) {
      t.skip(
        'py-lmdb is not installed here (apt-get install python3-lmdb); the format is checked by our reader',
      );
      return;
    }
    const script = [
      'import lmdb, struct, sys',
      'env = lmdb.open(sys.argv[1], readonly=True, lock=False)',
      'with env.begin() as txn:',
      "    n = int(txn.get(b'len'))",
      "    m = struct.unpack('<20f', txn.get(b'measurements_%05d' % (n - 1)))",
      '    print(n, m[7], m[8], m[10])',
    ].join('\n');
    const r = spawnSync(python, ['-c', script, join(out, 'episode_00000', 'measurements.lmdb')], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const [n, x, y, kmh] = r.stdout.trim().split(' ').map(Number) as [number, number, number, number];
    const m = frombuffer(lmdbGet(join(out, 'episode_00000'))(key('measurements', n - 1))!);
    assert.deepEqual([x, y, kmh], [m[7], m[8], m[10]]);
  });
});

describe('the frame conversion at the boundary', () => {
  it('puts a car heading north-east and climbing into CARLA left-handed frame', async () => {
    const rec = await RunRecorder.begin(store, { simulator: { name: 'pose-test' } });
    await rec.declareActors([{ id: 'car', kind: 'ego' }]);
    await rec.declareStreams([
      {
        name: 'state',
        actor: 'car',
        fields: ['x', 'y', 'z', 'pitch', 'yaw', 'speed'].map((name) => ({ name, type: 'f64' as const })),
      },
    ]);
    const pitch = -0.1; // canonical pitch is positive nose-down: this car climbs
    for (let i = 0; i < 3; i++)
      await rec.append('car/state', {
        t: rec.run.begin + i * 100_000,
        step: i,
        x: 10 + i,
        y: 20 + i,
        z: 3,
        pitch,
        yaw: Math.PI / 4,
        speed: 10,
      });
    const run = await rec.end('completed');
    const out = join(dir.path, 'pose');
    await exportDidrive(store, [run.id], out);
    const m = frombuffer(lmdbGet(join(out, 'episode_00000'))(key('measurements', 1))!);
    close(m[7]!, 11, 'x');
    close(m[8]!, -21, 'y mirrored');
    close(m[9]!, 3, 'z');
    // CARLA: yaw -45 degrees (clockwise from x seen from above), forward = (cos p cos y, cos p sin y).
    close(m[2]!, Math.cos(0.1) * Math.SQRT1_2, 'forward x');
    close(m[3]!, -Math.cos(0.1) * Math.SQRT1_2, 'forward y');
    close(m[10]!, 36, 'km/h');
    assert.deepEqual([m[11], m[18], m[19]], [4, 3, 200], 'no network: LANEFOLLOW, light OFF at 200 m');
  });
});

// ---- datasets written here as DI-drive's saver writes them --------------------------------------------

interface EpisodeSpec {
  vectors: number[][];
  /** Frames with an rgb image. */
  rgb?: number[];
  birdview?: boolean;
  others?: Record<string, number[]>;
  extraFiles?: Record<string, Uint8Array>;
  omitLen?: boolean;
  lenText?: string;
  omitFrames?: number[];
  badPng?: number;
}

function writeDataset(root: string, episodes: EpisodeSpec[], names: 'code' | 'doc' = 'code'): void {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const meta = {
    collector: { suite: 'FullTown01-v1' },
    n_episode: episodes.length,
    obs: { rgb: { size: [4, 3], type: 'rgb' } },
  };
  writeFileSync(
    join(root, names === 'code' ? 'metainfo.json' : 'dataset_metadata.json'),
    pythonJsonDumps(meta),
  );
  episodes.forEach((spec, e) => {
    const ep = join(root, key('episode', e));
    mkdirSync(ep);
    const env = { col_is_failure: true, end: 12, start: 3, town: 'Town01', weather: 1, n_vehicles: 0.5 };
    writeFileSync(
      join(ep, names === 'code' ? 'episode_metainfo.json' : 'episode_metadata.json'),
      pythonJsonDumps(env),
    );
    const entries = new Map<string, Uint8Array>();
    if (!spec.omitLen) entries.set('len', Buffer.from(spec.lenText ?? String(spec.vectors.length)));
    spec.vectors.forEach((v, i) => {
      if (!spec.omitFrames?.includes(i))
        entries.set(key('measurements', i), new Uint8Array(Float32Array.from(v).buffer));
      if (spec.birdview) entries.set(key('birdview', i), new Uint8Array(320 * 320 * 7).fill(i % 2));
      for (const [name, values] of Object.entries(spec.others ?? {}))
        entries.set(key(name, i), new Uint8Array(Float32Array.from([values[i]!]).buffer));
    });
    const writer = new LmdbWriter(join(ep, 'measurements.lmdb'));
    for (const k of [...entries.keys()].sort()) writer.add(Buffer.from(k), entries.get(k)!);
    writer.finish();
    for (const i of spec.rgb ?? []) {
      const png =
        i === spec.badPng
          ? Buffer.from('\x89PNG\r\n\x1a\nnot really')
          : encodePng(4, 3, 3, new Uint8Array(36).fill(i * 10));
      writeFileSync(join(ep, `${key('rgb', i)}.png`), png);
    }
    for (const [file, data] of Object.entries(spec.extraFiles ?? {})) writeFileSync(join(ep, file), data);
  });
  // make_index: every frame of every episode with its command.
  const index = episodes.flatMap((spec, e) =>
    spec.vectors.map((v, i) => `${key('episode', e)},${i},${v[11]}\n`),
  );
  writeFileSync(join(root, 'index.txt'), index.join(''));
}

/** A standard vector; CICT's has velocity, angular velocity and rotation after the command. */
function vector(i: number, cict = false): number[] {
  const head = [i, i * 0.1, 0.6, 0.8, 0.5, -0.25, 0, 100 + i, 50 - i, 0.2, 36, 4];
  const control = [0.1, 0.5, 0, 0.1, 0.5, 0];
  const light = [2, 25.5];
  return cict
    ? [...head, 6, -8, 0, 1, 2, 30, 5, -53.13, 0, ...control, ...light]
    : [...head, ...control, ...light];
}

describe('DI-drive datasets in', () => {
  it('reads the standard vector with camera frames, birdview masks and others keys, and writes them back byte for byte', async () => {
    const src = join(dir.path, 'standard');
    writeDataset(src, [
      {
        vectors: [0, 1, 2].map((i) => vector(i)),
        rgb: [0, 1, 2],
        birdview: true,
        others: { tl_dis: [1, 2, 3] },
      },
      { vectors: [0, 1].map((i) => vector(i)), rgb: [0, 1] },
    ]);
    const { runs } = await importDidrive(store, src);
    assert.deepEqual(
      runs.map((r) => [r.episode, r.frames, r.images, r.layout]),
      [
        ['episode_00000', 3, 3, 'standard'],
        ['episode_00001', 2, 2, 'standard'],
      ],
    );
    const state = (await samplesOf(runs[0]!.run.id, 'hero/state'))[1]!;
    close(state.x as number, 101, 'x');
    close(state.y as number, -49, 'y mirrored');
    close(state.yaw as number, Math.atan2(-0.8, 0.6), 'yaw from the forward vector, negated');
    close(state.speed as number, 10, 'm/s from km/h');
    const attachments = (await store.listAttachments(runs[0]!.run.id)).map((a) => a.name);
    assert.ok(attachments.includes('didrive/lmdb/birdview_00002'));
    assert.ok(attachments.includes('didrive/images/rgb_00001.png'));
    const out = join(dir.path, 'standard-out');
    await exportDidrive(
      store,
      runs.map((r) => r.run.id),
      out,
    );
    sameDatasetBytes(src, out);
  });

  it('reads the 29-float CICT vector and the documentation file names; writes the code names with the same bytes', async () => {
    const src = join(dir.path, 'cict');
    const npy = new Uint8Array([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
    writeDataset(
      src,
      [{ vectors: [0, 1].map((i) => vector(i, true)), rgb: [0, 1], extraFiles: { 'lidar_00000.npy': npy } }],
      'doc',
    );
    const { runs } = await importDidrive(store, src);
    assert.equal(runs[0]!.layout, 'cict');
    const run = (await store.getRun(runs[0]!.run.id))!;
    assert.equal(
      (run.metadata.didrive as { episodeMetainfoFile: string }).episodeMetainfoFile,
      'episode_metadata.json',
    );
    assert.equal(run.metadata.town, 'Town01');
    const s = (await samplesOf(run.id, 'hero/state'))[0]!;
    close(s.vy as number, 8, 'velocity y mirrored');
    close(s.yaw as number, (53.13 * Math.PI) / 180, 'yaw from the CICT rotation, negated');
    close(s.wz as number, (-30 * Math.PI) / 180, 'yaw rate mirrored, rad/s');
    const control = (await samplesOf(run.id, 'hero/control'))[0]!;
    close(control.throttle as number, 0.5, 'throttle from [22]');
    const out = join(dir.path, 'cict-out');
    await exportDidrive(store, [run.id], out);
    assert.ok(
      readFileSync(join(out, 'metainfo.json')).equals(readFileSync(join(src, 'dataset_metadata.json'))),
    );
    const episode = join(out, 'episode_00000');
    assert.ok(
      readFileSync(join(episode, 'episode_metainfo.json')).equals(
        readFileSync(join(src, 'episode_00000', 'episode_metadata.json')),
      ),
    );
    assert.ok(readFileSync(join(episode, 'lidar_00000.npy')).equals(Buffer.from(npy)));
    const m = frombuffer(lmdbGet(episode)(key('measurements', 1))!);
    assert.deepEqual(Array.from(m), Array.from(Float32Array.from(vector(1, true))));
  });

  it('adds runs as the next episodes of a dataset with --episode-of, and several runs with RUN1,RUN2', async () => {
    const env = { SIMREC_STORE: storePath };
    const out = join(dir.path, 'cli');
    const first = runCli(['export', `${demoRun},${demoRun}`, 'didrive', out], env);
    assert.equal(first.status, 0, first.stderr);
    const added = cliJson<{ episodes: { episode: string }[] }>(
      ['export', String(demoRun), 'didrive', '--episode-of', out, '--json'],
      env,
    );
    assert.deepEqual(
      added.episodes.map((e) => e.episode),
      ['episode_00002'],
    );
    assert.deepEqual(
      readdirSync(out)
        .filter((n) => n.startsWith('episode_'))
        .sort(),
      ['episode_00000', 'episode_00001', 'episode_00002'],
    );
    const lines = readFileSync(join(out, 'index.txt'), 'utf8').trimEnd().split('\n');
    assert.equal(lines.filter((l) => l.startsWith('episode_00002,')).length, lines.length / 3);
    const again = runCli(['export', String(demoRun), 'didrive', out], env);
    assert.equal(again.status, 2, 'an existing output is bad input (docs/command-line.md)');
    assert.match(again.stderr, /cli: already exists; --force replaces it/);
    const imported = cliJson<{ runs: { episode: string }[] }>(['import', 'didrive', out, '--json'], env);
    assert.equal(imported.runs.length, 3);
  });
});

describe('bad DI-drive input', () => {
  const refused = async (spec: EpisodeSpec, pattern: RegExp): Promise<void> => {
    const src = join(dir.path, 'bad');
    writeDataset(src, [{ vectors: [vector(0), vector(1)] }, spec]);
    const runsBefore = (await store.listRuns()).length;
    await assert.rejects(importDidrive(store, src), pattern);
    assert.equal((await store.listRuns()).length, runsBefore, 'no run is left of a failed import');
  };

  it('refuses a vector of unknown length, naming episode and frame', () =>
    refused(
      { vectors: [vector(0), [...vector(1), 7]] },
      /episode_00001 frame 1: measurements_00001 holds 84 bytes \(21 float32\); expected 20 floats/,
    ));

  it('refuses an LMDB without len', () =>
    refused({ vectors: [vector(0)], omitLen: true }, /episode_00001: measurements\.lmdb has no key len/));

  it('refuses a len that is not a number', () =>
    refused(
      { vectors: [vector(0)], lenText: 'two' },
      /episode_00001: measurements\.lmdb key len: expected the frame count in ASCII digits, got "two"/,
    ));

  it('refuses missing measurement frames', () =>
    refused(
      { vectors: [0, 1, 2].map((i) => vector(i)), omitFrames: [1] },
      /episode_00001 frame 1: measurements_00001 is missing from measurements\.lmdb \(len says 3 frames\)/,
    ));

  it('refuses a PNG that does not decode', () =>
    refused(
      { vectors: [vector(0), vector(1)], rgb: [0, 1], badPng: 1 },
      /episode_00001 frame 1: rgb_00001\.png does not decode as PNG/,
    ));

  it('refuses an LMDB in another data format, and a dataset folder without episodes', async () => {
    const src = join(dir.path, 'bad-format');
    writeDataset(src, [{ vectors: [vector(0)] }]);
    const data = join(src, 'episode_00000', 'measurements.lmdb', 'data.mdb');
    const bytes = readFileSync(data);
    bytes.writeUInt32LE(2, 20); // the meta's data version: LMDB 1.0's
    writeFileSync(data, bytes);
    await assert.rejects(importDidrive(store, src), /LMDB data version 2, expected 1/);
    const empty = join(dir.path, 'no-episodes');
    mkdirSync(empty, { recursive: true });
    await assert.rejects(importDidrive(store, empty), /no episode folders holding measurements\.lmdb/);
  });

  it("writes a live camera's images as its episode's frames (captures recorded through ingest)", async () => {
    // A camera recorded through the server's ingest names each capture's image `name`, where an
    // imported dataset's say `file`: both are a camera's frames.
    const fx = await startIngestFixture();
    try {
      const images = [0, 1, 2].map((k) => encodePng(4, 2, 3, new Uint8Array(4 * 2 * 3).fill(60 * k + 10)));
      const live = await recordCameraRun(fx, { ego: 'hero', begin: 1_700_000_000_000_000, every: 1, images });
      const out = join(dir.path, 'live-camera');
      await exportDidrive(fx.store, [live], out, { warn: () => {} });
      const episode = join(out, 'episode_00000');
      for (const [i, png] of images.entries())
        assert.ok(
          readFileSync(join(episode, `rgb_${String(i).padStart(5, '0')}.png`)).equals(Buffer.from(png)),
          `frame ${i}'s image`,
        );
    } finally {
      await fx.close();
    }
  });

  it('warns, naming episode and frame, about camera frames that are missing', async () => {
    const src = join(dir.path, 'gaps');
    writeDataset(src, [{ vectors: [0, 1, 2].map((i) => vector(i)), rgb: [0, 2] }]);
    const warnings: string[] = [];
    const { runs } = await importDidrive(store, src, { warn: (w) => warnings.push(w) });
    assert.equal(runs[0]!.images, 2);
    assert.ok(
      warnings.some((w) =>
        /episode_00000: camera rgb has no image for 1 of 3 frames \(first missing: frame 1, rgb_00001\.png\)/.test(
          w,
        ),
      ),
      warnings.join('\n'),
    );
    assert.ok(existsSync(src));
  });
});
