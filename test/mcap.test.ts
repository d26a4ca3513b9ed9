/**
 * MCAP as Foxglove and Lichtblick read it (#25): @mcap/core's indexed reader reads every export and
 * its summary; every message of a Foxglove channel validates against the JSON schema the file carries
 * (ajv, a JSON-schema validator; the schemas are @foxglove/schemas'), and so does every stream
 * channel against its own; one SceneUpdate per recorded frame, holding exactly the actors present.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { McapWriter } from '@mcap/core';
import {
  CameraCalibration as CameraCalibrationSchema,
  CompressedImage as CompressedImageSchema,
  FrameTransform as FrameTransformSchema,
  SceneUpdate as SceneUpdateSchema,
} from '@foxglove/schemas/jsonschema.js';
import { Ajv } from 'ajv';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { encodePng } from '../src/formats/common/labelled-images/image-files.js';
import { frameTimes, lightTracks, rewound, stateTracks } from '../src/formats/common/scene-tracks.js';
import { SceneUpdates, sceneUpdateMessage } from '../src/formats/mcap/foxglove-messages.js';
import { JsonBytes, JsonTemplate, TEMPLATE_SENTINELS } from '../src/formats/mcap/json-template.js';
import { FileWritable } from '../src/formats/mcap/mcap-files.js';
import { listSource, mergeInTimeOrder, type MessageSource } from '../src/formats/mcap/message-merge.js';
import { exportMcap } from '../src/formats/mcap/write-mcap.js';
import { readWholeStream, type SampleSeries } from '../src/model/sample-series.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { stateStream } from '../src/model/standard-streams.js';
import { importRecording } from '../src/record/import-run.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { readRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { exportRecording } from '../src/replay/export-run.js';
import { sceneAt } from '../src/replay/run-queries.js';
import { storeRunSource } from '../src/replay/run-source.js';
import { openStore } from '../src/store/open-store.js';
import { recordCameraRun, startIngestFixture } from './helpers/ingest-helpers.js';
import { REPO_ROOT, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';
import { openMcap } from './helpers/open-mcap.js';

const decoder = new TextDecoder();

describe('MCAP export for Foxglove and Lichtblick', () => {
  const tmp = tempDir('simrec-mcap-');
  let store: StoreBackend;
  let run: number;
  const file = join(tmp.path, 'demo.mcap');
  let details: Record<string, unknown>;

  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
    run = (await recordDemoRun(store, { duration: 40, vehicles: 12, seed: 3 })).run.id;
    details = await exportRecording(store, 'mcap', [run], file);
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  it("is an indexed, chunked MCAP with a summary and statistics, on the run's own clock", async () => {
    const { reader, close } = await openMcap(file);
    try {
      const info = (await store.getRun(run))!;
      assert.ok(reader.chunkIndexes.length > 1, `${reader.chunkIndexes.length} chunks`);
      assert.ok(reader.chunkIndexes.every((c) => c.compression === 'zstd'));
      // Chunks of 8 MiB as Foxglove's `mcap convert` writes them, not @mcap/core's 1 MiB: a long run's
      // chunk indexes, held by the writer and loaded by every reader, are an eighth as many.
      const sorted = [...reader.chunkIndexes].sort((a, b) => Number(a.chunkStartOffset - b.chunkStartOffset));
      for (const chunk of sorted.slice(0, -1))
        assert.ok(chunk.uncompressedSize >= 8n << 20n, `a chunk of ${chunk.uncompressedSize} bytes`);
      assert.equal(reader.statistics!.messageCount, BigInt(details.messages as number));
      assert.equal(reader.statistics!.channelCount, reader.channelsById.size);
      assert.ok(reader.statistics!.messageStartTime >= BigInt(info.begin) * 1000n, 'no 0-based times');
      assert.ok(reader.statistics!.messageEndTime <= BigInt(info.end!) * 1000n);
      assert.deepEqual(
        reader.metadataIndexes.map((m) => m.name),
        ['simrec.run'],
      );
      assert.deepEqual(reader.attachmentIndexes.map((a) => a.name).sort(), [
        'roadnet/network.json',
        'roadnet/source.net.xml',
      ]);
      const topics = [...reader.channelsById.values()].map((c) => c.topic);
      for (const topic of ['/scene', '/map', '/tf', '/ego/state', '/ego/trajectory'])
        assert.ok(topics.includes(topic), topic);
      // The ego's path: one PosesInFrame at its first sample, a pose for every state sample.
      const paths = [];
      for await (const m of reader.readMessages({ topics: ['/ego/trajectory'] }))
        paths.push(JSON.parse(decoder.decode(m.data)) as { poses: { position: { x: number } }[] });
      const egoStates = [];
      for await (const batch of store.readSamples({ run, stream: 'ego/state' })) egoStates.push(...batch);
      assert.equal(paths.length, 1);
      assert.deepEqual(
        paths[0]!.poses.map((p) => p.position.x),
        egoStates.map((s) => s.x),
      );
      let last = 0n;
      for await (const m of reader.readMessages()) {
        assert.ok(m.logTime >= last, 'messages in time order');
        last = m.logTime;
      }
    } finally {
      await close();
    }
  });

  it('every message validates against its channel schema (Foxglove schemas by name)', async () => {
    const { reader, close } = await openMcap(file);
    try {
      const ajv = new Ajv({ strict: false, allErrors: true });
      const validators = new Map<number, ReturnType<typeof ajv.compile>>();
      for (const [id, channel] of reader.channelsById) {
        const schema = reader.schemasById.get(channel.schemaId)!;
        assert.equal(schema.encoding, 'jsonschema');
        assert.equal(channel.messageEncoding, 'json');
        validators.set(id, ajv.compile(JSON.parse(decoder.decode(schema.data)) as object));
      }
      const names = new Set([...reader.schemasById.values()].map((s) => s.name));
      for (const name of ['foxglove.SceneUpdate', 'foxglove.FrameTransforms'])
        assert.ok(names.has(name), name);
      // The schema written for the scene is Foxglove's own.
      const scene = [...reader.schemasById.values()].find((s) => s.name === 'foxglove.SceneUpdate')!;
      assert.deepEqual(JSON.parse(decoder.decode(scene.data)), SceneUpdateSchema);
      let checked = 0;
      for await (const m of reader.readMessages()) {
        const validate = validators.get(m.channelId)!;
        const ok = validate(JSON.parse(decoder.decode(m.data)));
        assert.ok(ok, `${reader.channelsById.get(m.channelId)!.topic}: ${ajv.errorsText(validate.errors)}`);
        checked++;
      }
      assert.equal(checked, details.messages);
    } finally {
      await close();
    }
  });

  it('one SceneUpdate per recorded frame, holding exactly the actors present then', async () => {
    const { reader, close } = await openMcap(file);
    try {
      const times = new Set<number>();
      for (const s of await store.listStreams(run))
        if (s.name === 'state')
          for await (const batch of store.readSamples({ run, stream: s.id }))
            for (const x of batch) times.add(x.t);
      const updates: { t: number; ids: string[]; cubes: Map<string, { x: number; y: number }> }[] = [];
      for await (const m of reader.readMessages({ topics: ['/scene'] })) {
        const update = JSON.parse(decoder.decode(m.data)) as {
          deletions: { type: number }[];
          entities: {
            id: string;
            metadata: { key: string; value: string }[];
            cubes: { pose: { position: { x: number; y: number } } }[];
          }[];
        };
        assert.equal(update.deletions[0]?.type, 1, 'each update replaces the scene');
        // Traffic lights' heads are drawn too (test/mcap-osi.test.ts checks their colours).
        const actors = update.entities.filter((e) => !e.metadata.some((d) => d.value === 'traffic_light'));
        updates.push({
          t: Number(m.logTime / 1000n),
          ids: actors.map((e) => e.id).sort(),
          cubes: new Map(actors.map((e) => [e.id, e.cubes[0]!.pose.position])),
        });
      }
      assert.equal(updates.length, times.size);
      assert.equal(updates.length, details.frames);
      // Actors come and go in a demo: some frames must differ in who is there, or this proves little.
      assert.ok(
        new Set(updates.map((u) => u.ids.length)).size > 1,
        'the number present changes over the run',
      );
      for (const u of updates.filter((_u, i) => i % 37 === 0)) {
        const scene = await sceneAt(store, run, { t: u.t });
        assert.deepEqual(u.ids, scene.actors.map((a) => a.id).sort(), `frame at ${u.t}`);
        for (const a of scene.actors)
          assert.deepEqual(
            [u.cubes.get(a.id)!.x, u.cubes.get(a.id)!.y],
            [a.x, a.y],
            `${a.id}'s cube at ${u.t}`,
          );
      }
    } finally {
      await close();
    }
  });

  it('a JSON template writes what JSON.stringify would, and refuses what it cannot cut', () => {
    const message = (name: string) => (v: readonly number[]) => ({
      name,
      pose: { x: v[0], y: v[1], z: v[0] },
      list: [v[2], 'text', { w: v[1] }],
    });
    const values = [0.1 + 0.2, -0, 1e21, 5e-324, -123456.789];
    for (const name of ['car', 'ü 车 "quoted"', '7']) {
      const template = JsonTemplate.of(3, message(name));
      assert.ok(template, name);
      for (const at of [0, 1, 2]) {
        const v = values.slice(at, at + 3);
        const out = new JsonBytes();
        template.write(out, v);
        assert.equal(decoder.decode(out.view()), JSON.stringify(message(name)(v)));
      }
    }
    // Numbers as JSON.stringify writes them: NaN as null, -0 as 0.
    const out = new JsonBytes();
    JsonTemplate.of(3, message('car'))!.write(out, [Number.NaN, -0, Infinity]);
    assert.equal(decoder.decode(out.view()), JSON.stringify(message('car')([Number.NaN, -0, Infinity])));
    assert.match(decoder.decode(out.view()), /"x":null,"y":0/);
    // A name holding a sentinel's text, a value computed with, a value left out: no template.
    assert.equal(JsonTemplate.of(3, message(`${TEMPLATE_SENTINELS[1]}`)), undefined);
    assert.equal(
      JsonTemplate.of(2, (v) => ({ x: v[0], y: v[1]! + 1 })),
      undefined,
    );
    assert.equal(
      JsonTemplate.of(2, (v) => ({ x: v[0] })),
      undefined,
    );
  });

  it('writes each scene as the bytes JSON.stringify gives its message: lights in each state, actors coming and going, names a template cannot hold', async () => {
    // The scene is written from templates of each entity (json-template.ts); the message as objects is
    // what they stand for. A second run's actors have names a template must not cut: a sentinel's text,
    // digits, quotes and characters of several bytes.
    const begin = 1_700_000_000_000_000;
    const rec = await RunRecorder.begin(store, { simulator: { name: 'odd-names' }, begin });
    const names = [TEMPLATE_SENTINELS[0]!, '7', 'Fahrzeug "ü" 车 🚗', TEMPLATE_SENTINELS[2]!];
    for (const id of names) {
      await rec.declareActor({ id, kind: 'vehicle', extents: { length: 4, width: 2, height: 1.25 } });
      await rec.declareStream(stateStream(id));
    }
    for (let step = 0; step < 20; step++)
      for (const [k, id] of names.entries())
        // Each actor leaves for a while: absent from some frames' scenes.
        if (step % 7 !== k)
          await rec.append(`${id}/state`, {
            t: begin + step * 100_000,
            step,
            x: step * 1.1 + k,
            y: -k / 3,
            yaw: step / 10,
            speed: 1,
          });
    const odd = (await rec.end('completed')).id;
    for (const id of [run, odd]) {
      const source = await storeRunSource(store, id);
      const [actors, streams] = [await source.actors(), await source.streams()];
      const byId = new Map(streams.map((s) => [s.id, s] as const));
      const samplesOf = new Map<string, SampleSeries>();
      for (const s of streams.filter((s) => s.name === 'state' || s.name === 'signal'))
        samplesOf.set(s.id, await readWholeStream(source, s));
      const network = await readRoadNetwork(source, id);
      const tracks = stateTracks(actors, byId, samplesOf);
      const lights = lightTracks(actors, byId, samplesOf, network);
      const scene = new SceneUpdates(tracks.map(rewound), lights.map(rewound));
      const lamps = new Set<string>();
      const present = new Set<number>();
      const frames = frameTimes(tracks);
      for (const t of frames) {
        const message = sceneUpdateMessage(tracks, lights, t);
        assert.equal(decoder.decode(scene.at(t)), JSON.stringify(message), `run ${id} at ${t}`);
        for (const e of message.entities) if (e.spheres.length) lamps.add(JSON.stringify(e.spheres[0]));
        present.add(message.entities.length);
      }
      assert.ok(present.size > 1, `run ${id}: the actors present change`);
      if (id === run) assert.ok(lamps.size > 3, `${lamps.size} lamps of several colours`);
      else assert.equal(frames.length, 20);
    }
  });

  it('is written a window of each stream at a time: the same bytes whatever the window, memory bounded by it', async () => {
    const source = await storeRunSource(store, run);
    const write = async (name: string, windowSamples: number): Promise<Buffer> => {
      const path = join(tmp.path, name);
      await exportMcap(source, path, { windowSamples, osi: true });
      return readFileSync(path);
    };
    // 16 samples a stream (the least): each stream read in about 25 windows; against every stream whole.
    const windowed = await write('windowed.mcap', 1);
    const whole = await write('whole.mcap', Number.MAX_SAFE_INTEGER);
    assert.ok(windowed.length > 100_000);
    assert.ok(windowed.equals(whole), 'the same file');
  });

  it("writes a live camera's images as CompressedImage, each read from the store when its message is written", async () => {
    // A camera recorded through the server's ingest, as simulators send it: its captures name their
    // image `name` (an imported dataset's say `file`).
    const fx = await startIngestFixture();
    try {
      const begin = 1_700_000_000_000_000;
      const images = [0, 1, 2, 3].map((k) => encodePng(4, 2, 3, new Uint8Array(4 * 2 * 3).fill(40 * k)));
      const live = await recordCameraRun(fx, { ego: 'ego', begin, every: 10, images });

      // What the export reads, in order: the stream walk's windows and the images.
      const reads: string[] = [];
      const real = await storeRunSource(fx.store, live);
      const source: typeof real = {
        ...real,
        run: real.run,
        columnsJoined: (stream, window) => {
          reads.push(`window ${stream}`);
          return real.columnsJoined(stream, window);
        },
        attachment: (name) => {
          reads.push(`image ${name}`);
          return real.attachment(name);
        },
      };
      const path = join(tmp.path, 'camera.mcap');
      await exportMcap(source, path, { windowSamples: 16 });
      // Each image read as its message is written (then once more, as the file's copy of the run's
      // attachments, which simrec's import reads back).
      const imageReads = reads.flatMap((r, i) => (r.startsWith('image front/') ? [i] : [])).slice(0, 4);
      assert.deepEqual(
        imageReads.map((i) => reads[i]),
        [0, 10, 20, 30].map((step) => `image front/${String(step).padStart(8, '0')}.png`),
      );
      assert.ok(
        reads.some((r, i) => r === 'window ego/state' && i > imageReads[0]! && i < imageReads.at(-1)!),
        `the images are read as the walk reaches them: ${reads.join('; ')}`,
      );

      const { reader, close } = await openMcap(path);
      try {
        const channel = [...reader.channelsById.values()].find((c) => c.topic === '/front/image')!;
        assert.equal(reader.schemasById.get(channel.schemaId)!.name, 'foxglove.CompressedImage');
        const validate = new Ajv({ strict: false }).compile(CompressedImageSchema);
        const seen: { t: number; data: Buffer; format: string; frame: string }[] = [];
        for await (const m of reader.readMessages({ topics: [channel.topic] })) {
          const message = JSON.parse(decoder.decode(m.data)) as {
            data: string;
            format: string;
            frame_id: string;
          };
          assert.ok(validate(message), JSON.stringify(validate.errors));
          seen.push({
            t: Number(m.logTime / 1000n),
            data: Buffer.from(message.data, 'base64'),
            format: message.format,
            frame: message.frame_id,
          });
        }
        assert.deepEqual(
          seen,
          images.map((png, k) => ({
            t: begin + k * 1_000_000,
            data: Buffer.from(png),
            format: 'png',
            frame: 'front',
          })),
        );
      } finally {
        await close();
      }
    } finally {
      await fx.close();
    }
  });

  it("gives a live camera its calibration and its mount on the ego: a point ahead of it falls at the image's centre", async () => {
    // A camera 90 degrees wide over 4 x 2 pixels (f = 2, centre (2, 1)), 1.5 m ahead of, 0.2 m left of
    // and 1.6 m above its car, turned 0.3 rad to the left; the car turns as it drives.
    const fx = await startIngestFixture();
    try {
      const begin = 1_700_000_000_000_000;
      const images = [0, 1, 2].map((k) => encodePng(4, 2, 3, new Uint8Array(4 * 2 * 3).fill(80 * k)));
      const turn = 0.3;
      const live = await recordCameraRun(fx, {
        ego: 'ego',
        begin,
        every: 5,
        images,
        yawPerStep: 0.1,
        sensor: {
          fov: Math.PI / 2,
          mount: { position: [1.5, 0.2, 1.6], rotation: [0, 0, Math.sin(turn / 2), Math.cos(turn / 2)] },
        },
      });
      const path = join(tmp.path, 'camera-calibrated.mcap');
      let layout: { configById: Record<string, { imageMode?: object }> } | undefined;
      await exportMcap(await storeRunSource(fx.store, live), path, {
        beside: (_name, data) => {
          layout = JSON.parse(decoder.decode(data)) as typeof layout;
        },
      });
      // The layout's image panel projects with the calibration.
      assert.deepEqual(layout?.configById['Image!simrec']?.imageMode, {
        imageTopic: '/front/image',
        calibrationTopic: '/front/calibration',
      });
      const { reader, close } = await openMcap(path);
      type Transform = {
        parent_frame_id: string;
        child_frame_id: string;
        translation: { x: number; y: number; z: number };
        rotation: { x: number; y: number; z: number; w: number };
      };
      const byTime = async <T>(topic: string, schema?: object): Promise<Map<number, T>> => {
        const validate = schema && new Ajv({ strict: false }).compile(schema);
        const out = new Map<number, T>();
        for await (const m of reader.readMessages({ topics: [topic] })) {
          const message = JSON.parse(decoder.decode(m.data)) as T;
          if (validate) assert.ok(validate(message), `${topic}: ${JSON.stringify(validate.errors)}`);
          out.set(Number(m.logTime / 1000n), message);
        }
        return out;
      };
      try {
        const calibrations = await byTime<{ frame_id: string; K: number[]; P: number[] }>(
          '/front/calibration',
          CameraCalibrationSchema,
        );
        const mounts = await byTime<Transform>('/front/mount', FrameTransformSchema);
        const egoPoses = await byTime<{ transforms: Transform[] }>('/tf');
        const times = images.map((_, k) => begin + k * 500_000);
        assert.deepEqual([...calibrations.keys()], times, 'a calibration with each image');
        assert.deepEqual([...mounts.keys()], times, 'a mount with each image');

        // Rotation by a unit quaternion, written out here rather than taken from the code under test.
        type Q = { x: number; y: number; z: number; w: number };
        const rotate = ({ x, y, z, w }: Q, [a, b, c]: [number, number, number]): number[] => [
          (1 - 2 * (y * y + z * z)) * a + 2 * (x * y - z * w) * b + 2 * (x * z + y * w) * c,
          2 * (x * y + z * w) * a + (1 - 2 * (x * x + z * z)) * b + 2 * (y * z - x * w) * c,
          2 * (x * z - y * w) * a + 2 * (y * z + x * w) * b + (1 - 2 * (x * x + y * y)) * c,
        ];
        const inverse = (q: Q): Q => ({ x: -q.x, y: -q.y, z: -q.z, w: q.w });
        const minus = (a: number[], b: number[]): number[] => a.map((v, i) => v - b[i]!);
        const plus = (a: number[], b: number[]): number[] => a.map((v, i) => v + b[i]!);
        const scaled = (a: number[], k: number): number[] => a.map((v) => v * k);
        const xyz = (v: { x: number; y: number; z: number }): number[] => [v.x, v.y, v.z];

        for (const [k, t] of times.entries()) {
          const calibration = calibrations.get(t)!;
          assert.equal(calibration.frame_id, 'front');
          const K = calibration.K;
          assert.ok(
            [2, 0, 2, 0, 2, 1, 0, 0, 1].every((v, i) => Math.abs(K[i]! - v) < 1e-12),
            `K ${JSON.stringify(K)}`,
          );
          const mount = mounts.get(t)!;
          assert.equal(mount.parent_frame_id, 'ego');
          assert.equal(mount.child_frame_id, 'front', "the images' frame");
          const ego = egoPoses.get(t)!.transforms.find((f) => f.child_frame_id === 'ego')!;
          assert.equal(ego.parent_frame_id, 'world');
          // A world point through the file's frames, world -> ego -> camera, then the pinhole.
          const pixel = (world: number[]): number[] => {
            const inEgo = rotate(
              inverse(ego.rotation),
              minus(world, xyz(ego.translation)) as [number, number, number],
            );
            const [x, y, z] = rotate(
              inverse(mount.rotation),
              minus(inEgo, xyz(mount.translation)) as [number, number, number],
            );
            assert.ok(z! > 0, 'in front of the camera');
            return [(K[0]! * x!) / z! + K[2]!, (K[4]! * y!) / z! + K[5]!];
          };
          // Where the camera is and looks, from the car's own states (x = step, yaw = 0.1 a step).
          const step = 5 * k;
          const yaw = 0.1 * step;
          const heading = (angle: number): number[] => [Math.cos(angle), Math.sin(angle), 0];
          const camera = plus(
            [step, 0, 0],
            [1.5 * Math.cos(yaw) - 0.2 * Math.sin(yaw), 1.5 * Math.sin(yaw) + 0.2 * Math.cos(yaw), 1.6],
          );
          const ahead = plus(camera, scaled(heading(yaw + turn), 10));
          const near = (a: number[], b: number[], what: string): void =>
            assert.ok(Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!) < 1e-9, `${what}: ${a} against ${b}`);
          near(pixel(ahead), [2, 1], `image ${k}: a point 10 m ahead`);
          near(
            pixel(plus(ahead, heading(yaw + turn + Math.PI / 2))),
            [1.8, 1],
            `image ${k}: 1 m to its left`,
          );
          near(pixel(plus(ahead, [0, 0, 1])), [2, 0.8], `image ${k}: 1 m above`);
        }
      } finally {
        await close();
      }
    } finally {
      await fx.close();
    }
  });

  it('writes a Foxglove layout beside the file, naming the channels it shows', () => {
    const layoutFile = join(tmp.path, 'demo.layout.json');
    assert.deepEqual(details.beside, [layoutFile]);
    const layout = JSON.parse(readFileSync(layoutFile, 'utf8')) as {
      configById: Record<string, { topics?: Record<string, unknown>; paths?: { value: string }[] }>;
    };
    assert.ok(layout.configById['3D!simrec']!.topics!['/scene']);
    assert.deepEqual(
      layout.configById['Plot!simrec']!.paths!.map((p) => p.value),
      ['/ego/state.speed', '/ego/state.accel'],
    );
  });

  it("imports other tools' Foxglove scenes: entities become actors, cube poses their states, the rest named", async () => {
    const foreign = join(tmp.path, 'other-tool.mcap');
    const writable = await FileWritable.create(foreign);
    const writer = new McapWriter({ writable });
    await writer.start({ profile: '', library: 'another tool' });
    const sceneSchema = await writer.registerSchema({
      name: 'foxglove.SceneUpdate',
      encoding: 'jsonschema',
      data: new TextEncoder().encode(JSON.stringify(SceneUpdateSchema)),
    });
    const scene = await writer.registerChannel({
      schemaId: sceneSchema,
      topic: '/objects',
      messageEncoding: 'json',
      metadata: new Map(),
    });
    const other = await writer.registerSchema({
      name: 'foxglove.PointCloud',
      encoding: 'protobuf',
      data: new Uint8Array(),
    });
    const cloud = await writer.registerChannel({
      schemaId: other,
      topic: '/lidar',
      messageEncoding: 'protobuf',
      metadata: new Map(),
    });
    const base = 1_700_000_000_000_000n;
    for (let i = 0; i < 3; i++) {
      const t = base + BigInt(i) * 100_000_000n;
      const cube = (x: number) => ({
        pose: {
          position: { x, y: 2, z: 0.75 },
          orientation: { x: 0, y: 0, z: Math.sin(0.25), w: Math.cos(0.25) },
        },
        size: { x: 4, y: 2, z: 1.5 },
        color: { r: 1, g: 0, b: 0, a: 1 },
      });
      const entities = [
        { id: 'car-1', metadata: [{ key: 'kind', value: 'vehicle' }], cubes: [cube(10 + i)] },
        ...(i < 2
          ? [{ id: 'walker', metadata: [{ key: 'kind', value: 'pedestrian' }], cubes: [cube(-i)] }]
          : []),
      ];
      await writer.addMessage({
        channelId: scene,
        sequence: i,
        logTime: t,
        publishTime: t,
        data: new TextEncoder().encode(JSON.stringify({ deletions: [], entities })),
      });
      await writer.addMessage({
        channelId: cloud,
        sequence: i,
        logTime: t,
        publishTime: t,
        data: new Uint8Array([1, 2]),
      });
    }
    await writer.end();
    await writable.close();
    const warnings: string[] = [];
    const { runs, details: read } = await importRecording(store, 'mcap', foreign, {
      warn: (where, message) => warnings.push(`${where}: ${message}`),
    });
    assert.equal(read.source, 'foxglove');
    assert.deepEqual(
      (await store.listActors(runs[0]!.id)).map((a) => [a.id, a.kind, a.extents]),
      [
        ['car-1', 'vehicle', { length: 4, width: 2, height: 1.5 }],
        ['walker', 'pedestrian', { length: 4, width: 2, height: 1.5 }],
      ],
    );
    const states = [];
    for await (const batch of store.readSamples({ run: runs[0]!.id, stream: 'car-1/state' }))
      states.push(...batch);
    assert.deepEqual(
      states.map((s) => [s.t, s.x, s.z, Number((s.yaw as number).toFixed(12))]),
      [0, 1, 2].map((i) => [1_700_000_000_000_000 / 1000 + i * 100_000, 10 + i, 0, 0.5]),
    );
    assert.ok(
      warnings.some((w) => /\/lidar: foxglove\.PointCloud \(protobuf\) is not mapped/.test(w)),
      warnings.join('\n'),
    );
  });

  it('writes every message whole, however long its text and whatever its characters', async () => {
    // The writer encodes JSON messages into one buffer that each message writes over (write-mcap.ts,
    // MessageBytes): texts far longer than it, and characters of two, three and four bytes in UTF-8,
    // between short ones, must come back as they were.
    const begin = 1_700_000_000_000_000;
    const rec = await RunRecorder.begin(store, { simulator: { name: 'long-texts' }, begin });
    const actor = 'Fahrzeug-ü-车-🚗';
    await rec.declareActor({ id: actor, kind: 'vehicle' });
    await rec.declareStream(stateStream(actor));
    const notes = await rec.declareStream({
      name: 'notes',
      actor,
      fields: [{ name: 'text', type: 'string' }],
    });
    const texts = ['short', 'ü'.repeat(70_000), '🚗'.repeat(50_000), 'x', '车'.repeat(100_000), 'end'];
    for (const [i, text] of texts.entries()) {
      const t = begin + i * 100_000;
      await rec.append(`${actor}/state`, { t, step: i, x: i, y: 0, yaw: 0, speed: 1 });
      await rec.append(notes, { t, step: i, text });
    }
    const long = (await rec.end('completed')).id;
    const path = join(tmp.path, 'long-texts.mcap');
    await exportMcap(await storeRunSource(store, long), path);
    const { reader, close } = await openMcap(path);
    try {
      const topic = (id: number): string => reader.channelsById.get(id)!.topic;
      const read: string[] = [];
      const scenes: string[] = [];
      for await (const m of reader.readMessages()) {
        const message = JSON.parse(decoder.decode(m.data)) as Record<string, unknown>;
        if (topic(m.channelId).endsWith('/notes')) read.push(message.text as string);
        if (topic(m.channelId) === '/scene')
          scenes.push(...(message.entities as { id: string }[]).map((e) => e.id));
      }
      assert.deepEqual(read, texts);
      assert.deepEqual([...new Set(scenes)], [actor]);
    } finally {
      await close();
    }
  });

  it('refuses a file that is not MCAP, naming it, and keeps nothing', async () => {
    const bad = join(tmp.path, 'bad.mcap');
    writeFileSync(bad, 'not an mcap file at all');
    const before = (await store.listRuns()).length;
    await assert.rejects(importRecording(store, 'mcap', bad), /bad\.mcap: not an indexed MCAP file/);
    assert.equal((await store.listRuns()).length, before);
  });

  it('simrec export RUN mcap FILE writes the file and its layout; import reads it back', () => {
    const db = join(tmp.path, 'cli.db');
    const env = { SIMREC_STORE: db };
    cliJson(['demo', '--no-serve', '--duration', '5', '--json'], env);
    const out = join(tmp.path, 'cli.mcap');
    const exported = cliJson<{ beside: string[]; frames: number }>(
      ['export', '1', 'mcap', out, '--json'],
      env,
    );
    assert.ok(existsSync(out) && existsSync(join(tmp.path, 'cli.layout.json')));
    assert.deepEqual(exported.beside, [join(tmp.path, 'cli.layout.json')]);
    const imported = cliJson<{ run: { id: number }; source: string }>(['import', 'mcap', out, '--json'], env);
    assert.equal(imported.source, 'simrec');
    assert.equal(imported.run.id, 2);
  });

  it('simrec export of a run without states (a SOLO dataset) says the scene is empty, naming the run once', () => {
    const env = { SIMREC_STORE: join(tmp.path, 'solo.db') };
    cliJson(['import', 'solo', join(REPO_ROOT, 'test', 'fixtures', 'pysolotools', 'solo'), '--json'], env);
    const r = runCli(['export', '1', 'mcap', join(tmp.path, 'solo.mcap')], env);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /^simrec: warning: run 1: no actor has state samples; the scene is empty$/m);
  });
});

describe('the export channels merged in time order (mergeInTimeOrder)', () => {
  it('gives every message once, by time then channel, each time read ahead (advance) before its first message', async () => {
    // Channels of uneven lengths and steps, many of them sharing each time (as a run's streams do),
    // one source answering with promises (as a camera's images), one empty.
    let seed = 7;
    const random = (): number => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const expected: { channel: number; t: number; data: string }[] = [];
    const sources: MessageSource[] = [];
    for (let channel = 40; channel >= 0; channel--) {
      const times: number[] = [];
      for (let t = Math.floor(random() * 5); t < 300; t += 1 + Math.floor(random() * 4)) times.push(t);
      if (channel === 13) times.length = 0;
      const data = (t: number): string => `${channel}@${t}`;
      for (const t of times) expected.push({ channel, t, data: data(t) });
      sources.push(listSource(channel, times, (t) => (channel === 5 ? Promise.resolve(data(t)) : data(t))));
    }
    expected.sort((a, b) => a.t - b.t || a.channel - b.channel);
    const written: { channel: number; t: number; data: string }[] = [];
    const advanced: number[] = [];
    await mergeInTimeOrder(
      sources,
      async (channel, t, data) => {
        assert.equal(advanced.at(-1), t, `the time of ${String(data)} was advanced to before it`);
        written.push({ channel, t, data: data as string });
      },
      async (t) => {
        advanced.push(t);
      },
    );
    assert.deepEqual(written, expected);
    assert.deepEqual(advanced, [...new Set(expected.map((m) => m.t))]);
  });
});
