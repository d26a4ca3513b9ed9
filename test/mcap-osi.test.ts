/**
 * The MCAP export's second half (#25): ASAM OSI ground truth (`--osi`) as OSI 3.8.0's multi-channel
 * trace format asks, traffic lights drawn in their recorded colours, foxglove.LocationFix for
 * geo-referenced runs, and several runs exported at once as one file each.
 *
 * What OSI's own tools were found to read, pinned here because CI cannot fetch them: the golden bytes
 * below are what OSI v3.8.0's .proto files (compiled by Debian's protoc 3.21 for Python) serialize for
 * the same message, and the latitudes and longitudes are pyproj's (PROJ 9) for the same points.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor.js';
import { McapWriter } from '@mcap/core';
import {
  ImageAnnotations as ImageAnnotationsSchema,
  LocationFix as LocationFixSchema,
} from '@foxglove/schemas/jsonschema.js';
import { Ajv } from 'ajv';
import { foxgloveEnumSchemas, foxgloveMessageSchemas, generateProto } from '@foxglove/schemas/internal.js';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { FileWritable } from '../src/formats/mcap/mcap-files.js';
import { importRecording } from '../src/record/import-run.js';
import { GroundTruthType } from '../src/formats/common/osi3/osi3-schema.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { signalHeads, signalLamp } from '../src/roadnet/signal-heads.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { captureBoxes, sampleToCapture, type PerceptionCapture } from '../src/model/perception.js';
import type { Sample } from '../src/model/stream.js';
import { exportRecording } from '../src/replay/export-run.js';
import { sceneAt } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { openMcap } from './helpers/open-mcap.js';
import { fixture, REPO_ROOT, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const decoder = new TextDecoder();

/** OSI v3.8.0's generated Python classes (protoc 3.21.12) serialize GOLDEN_MESSAGE as these bytes. */
const GOLDEN_HEX =
  '0a06080310081800120c08edfa9cd8061080a0dd8c031a02081122790a02080212450a1b09000000000000f03f110000000000000040190000000000000840121b09000000000000f83f1100000000000004c019000000000000e03f1a0919000000000000d03f1a0208012a280a1273696d7265632072756e2031206163746f72120d6f72672e73696d7265632e69641a03626f782ae9010a02081112ae010a1b09000000000000124011cdccccccccccfc3f19000000000000f83f121b090000000000802440110000000000000cc019000000000000e83f1a1b090000000000000000117b14ae47e17a843f1900000000000008c0221b09000000000000144011000000000000f0bf1900000000000000002a1b09000000000000e03f110000000000000000190000000000000000321b090000000000000000110000000000000000199a9999999999b93f1802220208283202080c52280a1273696d7265632072756e2031206163746f72120d6f72672e73696d7265632e69641a0365676f3a98010a02083212570a1b099a9999999999b93f11333333333333d33f19333333333333d33f121b090000000000002a40119a999999999901401966666666666606401a1b0900000000000000001100000000000000001900000000000008401a0c0804100f18042a02082830002a2b0a1473696d7265632074726166666963206c69676874120d6f72672e73696d7265632e69641a044a303a334a83010a02083c12260a1b090000000000000000119a9999999999f93f19000000000000000011b81e85eb51b8be3f12260a1b090000000000002440119a9999999999f93f19000000000000000011b81e85eb51b8be3f1a040804100322270a1073696d726563206c616e65206d61726b120d6f72672e73696d7265632e69641a04653123315284010a020828125a08021a1b0900000000000000001100000000000000001900000000000000001a1b09000000000000244011000000000000000019000000000000000020012a020829320208273a080a0208261202082a4202083b4a02083c60041a220a0b73696d726563206c616e65120d6f72672e73696d7265632e69641a0465315f30721f2b70726f6a3d75746d202b7a6f6e653d3332202b656c6c70733d5747533834a2011d0a1b090000000080841ec11100000000709954c1190000000000000000';

const ref = (reference: string, id: string) => ({ reference, type: 'org.simrec.id', identifier: [id] });
const v3 = (x: number, y: number, z: number) => ({ x, y, z });
const GOLDEN_MESSAGE = {
  version: { version_major: 3, version_minor: 8, version_patch: 0 },
  timestamp: { seconds: 1795636589, nanos: 832000000 },
  host_vehicle_id: { value: 17 },
  stationary_object: [
    {
      id: { value: 2 },
      base: {
        dimension: { length: 1, width: 2, height: 3 },
        position: v3(1.5, -2.5, 0.5),
        orientation: { yaw: 0.25 },
      },
      classification: { type: 1 },
      source_reference: [ref('simrec run 1 actor', 'box')],
    },
  ],
  moving_object: [
    {
      id: { value: 17 },
      base: {
        dimension: { length: 4.5, width: 1.8, height: 1.5 },
        position: v3(10.25, -3.5, 0.75),
        orientation: { roll: 0, pitch: 0.01, yaw: -3 },
        velocity: v3(5, -1, 0),
        acceleration: v3(0.5, 0, 0),
        orientation_rate: { roll: 0, pitch: 0, yaw: 0.1 },
      },
      type: 2,
      assigned_lane_id: [{ value: 40 }],
      vehicle_classification: { type: 12 },
      source_reference: [ref('simrec run 1 actor', 'ego')],
    },
  ],
  traffic_light: [
    {
      id: { value: 50 },
      base: {
        dimension: { length: 0.1, width: 0.3, height: 0.3 },
        position: v3(13, 2.2, 2.8),
        orientation: { roll: 0, pitch: 0, yaw: 3 },
      },
      classification: {
        color: 4,
        icon: 15,
        mode: 4,
        assigned_lane_id: [{ value: 40 }],
        is_out_of_service: false,
      },
      source_reference: [ref('simrec traffic light', 'J0:3')],
    },
  ],
  lane_boundary: [
    {
      id: { value: 60 },
      boundary_line: [0, 10].map((x) => ({ position: v3(x, 1.6, 0), width: 0.12 })),
      classification: { type: 4, color: 3 },
      source_reference: [ref('simrec lane mark', 'e1#1')],
    },
  ],
  lane: [
    {
      id: { value: 40 },
      classification: {
        type: 2,
        centerline: [v3(0, 0, 0), v3(10, 0, 0)],
        centerline_is_driving_direction: true,
        left_adjacent_lane_id: [{ value: 41 }],
        right_adjacent_lane_id: [{ value: 39 }],
        lane_pairing: [{ antecessor_lane_id: { value: 38 }, successor_lane_id: { value: 42 } }],
        right_lane_boundary_id: [{ value: 59 }],
        left_lane_boundary_id: [{ value: 60 }],
        subtype: 4,
      },
      source_reference: [ref('simrec lane', 'e1_0')],
    },
  ],
  proj_string: '+proj=utm +zone=32 +ellps=WGS84',
  proj_frame_offset: { position: v3(-500000, -5400000, 0) },
};

interface Id {
  value: number;
}
interface GroundTruth {
  version: { version_major: number; version_minor: number; version_patch: number };
  timestamp: { seconds: number; nanos: number };
  host_vehicle_id?: Id;
  moving_object: {
    id: Id;
    type: number;
    base: { position: { x: number; y: number; z: number }; orientation: { yaw: number } };
    assigned_lane_id: Id[];
    source_reference: { identifier: string[] }[];
  }[];
  traffic_light: {
    id: Id;
    classification: { color: number; mode: number; assigned_lane_id: Id[] };
    source_reference: { identifier: string[] }[];
  }[];
  lane: {
    id: Id;
    classification: {
      left_adjacent_lane_id: Id[];
      right_adjacent_lane_id: Id[];
      lane_pairing: { antecessor_lane_id?: Id; successor_lane_id?: Id }[];
      left_lane_boundary_id: Id[];
      right_lane_boundary_id: Id[];
    };
  }[];
  lane_boundary: { id: Id; boundary_line: unknown[] }[];
  stationary_object: { id: Id }[];
}

describe('MCAP with ASAM OSI ground truth (--osi)', () => {
  const tmp = tempDir('simrec-osi-');
  let store: StoreBackend;
  let run: number;
  const file = join(tmp.path, 'osi.mcap');
  let details: Record<string, unknown>;
  const frames: { logTime: bigint; publishTime: bigint; data: Uint8Array }[] = [];
  let schemaData: Uint8Array;
  let decode: (data: Uint8Array) => GroundTruth;

  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
    run = (await recordDemoRun(store, { duration: 30, vehicles: 12, seed: 5 })).run.id;
    details = await exportRecording(store, 'mcap', [run], file, { settings: { osi: true } });
    const { reader, close } = await openMcap(file);
    try {
      const channel = [...reader.channelsById.values()].find((c) => c.topic === '/osi/ground_truth')!;
      schemaData = reader.schemasById.get(channel.schemaId)!.data;
      for await (const m of reader.readMessages({ topics: ['/osi/ground_truth'] })) frames.push(m);
    } finally {
      await close();
    }
    // Decoded with the FileDescriptorSet the file carries, as a reader that knows no OSI would.
    const type = (protobuf.Root as unknown as { fromDescriptor(d: Uint8Array, o: object): protobuf.Root })
      .fromDescriptor(schemaData, { keepCase: true })
      .lookupType('osi3.GroundTruth');
    decode = (data) =>
      type.toObject(type.decode(data), {
        longs: Number,
        enums: Number,
        defaults: false,
        arrays: true,
      }) as GroundTruth;
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  it("encodes a message exactly as OSI 3.8.0's own .proto files do (golden bytes)", () => {
    const bytes = GroundTruthType.encode(GOLDEN_MESSAGE).finish();
    assert.equal(Buffer.from(bytes).toString('hex'), GOLDEN_HEX);
  });

  it("is an OSI multi-channel trace: the file's metadata, the schema and the channel as OSI 3.8.0 asks", async () => {
    const { reader, close } = await openMcap(file);
    try {
      const semver = /^\d+\.\d+\.\d+$/;
      const records = [];
      for await (const m of reader.readMetadata({ name: 'net.asam.osi.trace' })) records.push(m.metadata);
      assert.equal(records.length, 1, 'exactly one net.asam.osi.trace record');
      const meta = records[0]!;
      for (const key of [
        'version',
        'min_osi_version',
        'max_osi_version',
        'min_protobuf_version',
        'max_protobuf_version',
      ])
        assert.match(meta.get(key) ?? '', semver, key);
      assert.equal(meta.get('version'), '3.8.0');
      assert.match(meta.get('zero_time')!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
      assert.match(meta.get('creation_time')!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);

      const channel = [...reader.channelsById.values()].find((c) => c.topic === '/osi/ground_truth')!;
      assert.equal(channel.messageEncoding, 'protobuf');
      assert.equal(channel.metadata.get('net.asam.osi.trace.channel.osi_version'), '3.8.0');
      assert.match(channel.metadata.get('net.asam.osi.trace.channel.protobuf_version')!, semver);
      const schema = reader.schemasById.get(channel.schemaId)!;
      assert.equal(schema.name, 'osi3.GroundTruth');
      assert.equal(schema.encoding, 'protobuf');
      // A binary FileDescriptorSet, every type name fully qualified as protoc writes them.
      const set = descriptor.FileDescriptorSet.decode(schema.data) as unknown as {
        file: { package: string; messageType: { name: string; field: { typeName?: string }[] }[] }[];
      };
      assert.equal(set.file[0]!.package, 'osi3');
      const typeNames = set.file.flatMap((f) => f.messageType.flatMap((m) => m.field.map((x) => x.typeName)));
      assert.ok(
        typeNames.filter(Boolean).every((n) => n!.startsWith('.osi3.')),
        'qualified type names',
      );
      // OSI wants every message in chunks (MCAP's indexed reader found them through the chunk index).
      assert.ok(reader.chunkIndexes.length > 0);
    } finally {
      await close();
    }
  });

  it('one GroundTruth per recorded frame, stamped with its time, holding the actors present then', async () => {
    assert.equal(frames.length, details.frames);
    const egoId = (await store.listActors(run)).find((a) => a.kind === 'ego')!.id;
    let checked = 0;
    for (const [i, m] of frames.entries()) {
      const gt = decode(m.data);
      assert.deepEqual(gt.version, { version_major: 3, version_minor: 8, version_patch: 0 });
      const stamp = BigInt(gt.timestamp.seconds) * 1_000_000_000n + BigInt(gt.timestamp.nanos ?? 0);
      assert.equal(m.publishTime, stamp, 'publish_time is the message timestamp');
      assert.equal(m.logTime, m.publishTime);
      // Identifiers are unique across everything in a frame.
      const ids = [
        ...gt.moving_object.map((o) => o.id.value),
        ...(gt.stationary_object ?? []).map((o) => o.id.value),
        ...gt.traffic_light.map((o) => o.id.value),
        ...gt.lane.map((o) => o.id.value),
        ...gt.lane_boundary.map((o) => o.id.value),
      ];
      assert.equal(new Set(ids).size, ids.length, 'unique identifiers');
      const host = gt.moving_object.find((o) => o.id.value === gt.host_vehicle_id?.value);
      if (host) assert.equal(host.source_reference[0]!.identifier[0], egoId);
      for (const o of gt.moving_object)
        assert.ok(
          Math.abs(o.base.orientation.yaw ?? 0) <= Math.PI,
          `yaw ${o.base.orientation.yaw} in [-pi, pi]`,
        );
      if (i % 41 !== 0) continue;
      const t = Number(m.logTime / 1000n);
      const scene = await sceneAt(store, run, { t });
      const expected = scene.actors.filter((a) => a.kind !== 'traffic_light');
      assert.deepEqual(
        gt.moving_object.map((o) => o.source_reference[0]!.identifier[0]).sort(),
        expected.map((a) => a.id).sort(),
        `frame at ${t}`,
      );
      for (const a of expected) {
        const o = gt.moving_object.find((x) => x.source_reference[0]!.identifier[0] === a.id)!;
        assert.equal(o.base.position.x, a.x);
        assert.equal(o.base.position.y, a.y);
      }
      checked++;
    }
    assert.ok(checked >= 5, `${checked} frames compared`);
    const present = (m: (typeof frames)[number]) =>
      decode(m.data)
        .moving_object.map((o) => o.source_reference[0]!.identifier[0])
        .sort()
        .join();
    assert.notEqual(present(frames[0]!), present(frames.at(-1)!), 'actors come and go over the run');
  });

  it('the road: every lane, borders drawn from the lanes, every reference naming something in the frame', async () => {
    const network = (await loadRoadNetwork(store, run))!;
    const gt = decode(frames[frames.length - 1]!.data);
    assert.equal(gt.lane.length, network.lanes.length);
    assert.ok(gt.lane_boundary.length > 0, 'SUMO lanes get drawn borders');
    const lanes = new Set(gt.lane.map((l) => l.id.value));
    const borders = new Set(gt.lane_boundary.map((b) => b.id.value));
    let paired = 0;
    for (const lane of gt.lane) {
      const c = lane.classification;
      for (const id of [...(c.left_adjacent_lane_id ?? []), ...(c.right_adjacent_lane_id ?? [])])
        assert.ok(lanes.has(id.value));
      for (const p of c.lane_pairing ?? []) {
        for (const id of [p.antecessor_lane_id, p.successor_lane_id]) if (id) assert.ok(lanes.has(id.value));
        paired++;
      }
      for (const id of [...(c.left_lane_boundary_id ?? []), ...(c.right_lane_boundary_id ?? [])])
        assert.ok(borders.has(id.value));
    }
    assert.ok(paired > 0, 'lanes are linked across junctions');
    for (const o of gt.moving_object)
      for (const id of o.assigned_lane_id ?? []) assert.ok(lanes.has(id.value));
  });

  it("each signal head is three lamps, lit as the light's recorded state says, frame by frame", async () => {
    const network = (await loadRoadNetwork(store, run))!;
    const heads = signalHeads(network);
    assert.ok(heads.length > 0, 'the demo town has traffic lights');
    const states = new Map<string, Sample[]>();
    for (const s of await store.listStreams(run))
      if (s.name === 'signal' && s.actor) {
        const all: Sample[] = [];
        for await (const batch of store.readSamples({ run, stream: s.id })) all.push(...batch);
        states.set(s.actor, all);
      }
    const seen = new Set<string>();
    for (const m of frames.filter((_m, i) => i % 23 === 0)) {
      const t = Number(m.logTime / 1000n);
      const gt = decode(m.data);
      assert.equal(gt.traffic_light.length, heads.filter((h) => states.has(h.light)).length * 3);
      for (const head of heads) {
        const samples = states.get(head.light);
        if (!samples) continue;
        const state = samples.filter((s) => s.t <= t).at(-1)?.state as string | undefined;
        const shows = signalLamp(state?.[head.linkIndex]);
        const lamps = gt.traffic_light.filter(
          (l) => l.source_reference[0]!.identifier[0] === `${head.light}:${head.linkIndex}`,
        );
        const lit = lamps
          .filter((l) => l.classification.mode !== 2)
          .map((l) => ['', '', 'red', 'yellow', 'green'][l.classification.color])
          .sort();
        const expected = {
          red: ['red'],
          yellow: ['yellow'],
          green: ['green'],
          red_yellow: ['red', 'yellow'],
          flashing_yellow: ['yellow'],
          off: [],
        }[shows];
        assert.deepEqual(lit, expected, `${head.light}:${head.linkIndex} at ${t} (${state})`);
        seen.add(shows);
      }
    }
    assert.ok(seen.has('red') && seen.has('green'), `lights change: ${[...seen].join(', ')}`);
  });

  it("is what Google's protobuf reads with the file's own descriptor set, where python3-protobuf is installed", (t) => {
    const python = ['python3', '/usr/bin/python3'].find(
      (p) => spawnSync(p, ['-c', 'import google.protobuf'], { encoding: 'utf8' }).status === 0,
    );
    if (!python) {
      t.skip(
        "python3-protobuf is not installed here (apt-get install python3-protobuf): protobufjs's decoding stands alone",
      );
      return;
    }
    const schemaFile = join(tmp.path, 'schema.bin');
    const messagesFile = join(tmp.path, 'ground_truth.osi');
    writeFileSync(schemaFile, schemaData);
    // OSI's single-channel .osi layout: each message after its little-endian u32 length.
    writeFileSync(
      messagesFile,
      Buffer.concat(
        frames.flatMap((m) => {
          const length = Buffer.alloc(4);
          length.writeUInt32LE(m.data.length);
          return [length, Buffer.from(m.data)];
        }),
      ),
    );
    const script = [
      'import struct, sys',
      'from google.protobuf import descriptor_pb2, descriptor_pool, message_factory',
      'fds = descriptor_pb2.FileDescriptorSet(); fds.ParseFromString(open(sys.argv[1], "rb").read())',
      'pool = descriptor_pool.DescriptorPool()',
      'for f in fds.file: pool.Add(f)',
      'GroundTruth = message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("osi3.GroundTruth"))',
      'data = open(sys.argv[2], "rb").read(); i = 0; n = 0; objects = 0',
      'while i < len(data):',
      '    (k,) = struct.unpack_from("<I", data, i); i += 4',
      '    gt = GroundTruth(); gt.ParseFromString(data[i:i + k])',
      '    assert gt.SerializeToString() == data[i:i + k], "re-encodes to the same bytes"',
      '    i += k; n += 1; objects += len(gt.moving_object)',
      'print(n, objects)',
    ].join('\n');
    const r = spawnSync(python, ['-c', script, schemaFile, messagesFile], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const [n, objects] = r.stdout.trim().split(' ').map(Number);
    assert.equal(n, frames.length);
    assert.equal(
      objects,
      frames.reduce((sum, m) => sum + decode(m.data).moving_object.length, 0),
    );
  });
});

/**
 * Foxglove's protobuf schemas as Foxglove's own generator writes them (@foxglove/schemas' internal
 * generateProto, the source of their published .proto files), gathered in one protobufjs root.
 */
function foxgloveProtobufRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
  root.addJSON(protobuf.common.get('google/protobuf/duration.proto')!.nested!);
  for (const schema of Object.values(foxgloveMessageSchemas)) {
    const enums = Object.values(foxgloveEnumSchemas).filter((e) => e.parentSchemaName === schema.name);
    protobuf.parse(generateProto(schema, enums), root, { keepCase: true });
  }
  root.resolveAll();
  return root;
}

describe("MCAP import of other tools' protobuf scenes and transforms", () => {
  const tmp = tempDir('simrec-mcap-proto-');
  after(() => tmp.cleanup());

  it('maps protobuf SceneUpdates and FrameTransforms (root frames only), naming what it leaves', async () => {
    const root = foxgloveProtobufRoot();
    const set = descriptor.FileDescriptorSet.encode(root.toDescriptor('proto3')).finish();
    const file = join(tmp.path, 'foreign-protobuf.mcap');
    const writable = await FileWritable.create(file);
    const writer = new McapWriter({ writable });
    await writer.start({ profile: '', library: 'a protobuf tool' });
    const channel = async (topic: string, name: string) =>
      writer.registerChannel({
        schemaId: await writer.registerSchema({ name, encoding: 'protobuf', data: set }),
        topic,
        messageEncoding: 'protobuf',
        metadata: new Map(),
      });
    const scene = await channel('/objects', 'foxglove.SceneUpdate');
    const tf = await channel('/tf', 'foxglove.FrameTransforms');
    const SceneUpdate = root.lookupType('foxglove.SceneUpdate');
    const FrameTransforms = root.lookupType('foxglove.FrameTransforms');
    const base = 1_700_000_000n;
    const yawQuaternion = (yaw: number) => ({ x: 0, y: 0, z: Math.sin(yaw / 2), w: Math.cos(yaw / 2) });
    for (let i = 0; i < 3; i++) {
      const timestamp = { seconds: Number(base), nanos: i * 100_000_000 };
      const logTime = base * 1_000_000_000n + BigInt(i) * 100_000_000n;
      const update = SceneUpdate.fromObject({
        entities: [
          {
            timestamp,
            id: 'truck',
            frame_id: 'world',
            metadata: [{ key: 'kind', value: 'vehicle' }],
            cubes: [
              {
                pose: { position: { x: 5 + i, y: 0, z: 1.5 }, orientation: yawQuaternion(1) },
                size: { x: 8, y: 2.5, z: 3 },
              },
            ],
          },
        ],
      });
      const transforms = FrameTransforms.fromObject({
        transforms: [
          {
            timestamp,
            parent_frame_id: 'world',
            child_frame_id: 'base_link',
            translation: { x: i, y: 2, z: 0 },
            rotation: yawQuaternion(0.5),
          },
          {
            timestamp,
            parent_frame_id: 'base_link',
            child_frame_id: 'camera',
            translation: { x: 1, y: 0, z: 1.4 },
            rotation: yawQuaternion(0),
          },
        ],
      });
      for (const [channelId, data] of [
        [scene, SceneUpdate.encode(update).finish()],
        [tf, FrameTransforms.encode(transforms).finish()],
      ] as const)
        await writer.addMessage({ channelId, sequence: i, logTime, publishTime: logTime, data });
    }
    await writer.end();
    await writable.close();

    const store = await openStore(join(tmp.path, 'foreign.db'));
    try {
      const warnings: string[] = [];
      const { runs, details } = await importRecording(store, 'mcap', file, {
        warn: (where, message) => warnings.push(`${where}: ${message}`),
      });
      assert.equal(details.source, 'foxglove');
      const run = runs[0]!.id;
      assert.deepEqual((await store.listActors(run)).map((a) => [a.id, a.kind]).sort(), [
        ['base_link', 'other'],
        ['truck', 'vehicle'],
      ]);
      const states = async (stream: string) => {
        const all: Sample[] = [];
        for await (const batch of store.readSamples({ run, stream })) all.push(...batch);
        return all.map((s) => [s.t, s.x, s.y, s.z, Number((s.yaw as number).toFixed(12))]);
      };
      const t0 = 1_700_000_000 * 1e6;
      assert.deepEqual(
        await states('truck/state'),
        [0, 1, 2].map((i) => [t0 + i * 100_000, 5 + i, 0, 0, 1]),
      );
      assert.deepEqual(
        await states('base_link/state'),
        [0, 1, 2].map((i) => [t0 + i * 100_000, i, 2, 0, 0.5]),
      );
      assert.ok(
        warnings.some((w) => /frames camera: placed in another frame .* not mapped/.test(w)),
        warnings.join('\n'),
      );
    } finally {
      await store.close();
    }
  });
});

describe("MCAP import of other tools' OSI ground truth", () => {
  const tmp = tempDir('simrec-mcap-osi-in-');
  after(() => tmp.cleanup());

  it('maps osi3.GroundTruth channels: moving objects become actors and states, the host vehicle the ego', async () => {
    const store = await openStore(join(tmp.path, 'osi-in.db'));
    try {
      const run = (await recordDemoRun(store, { duration: 8, vehicles: 6, seed: 7 })).run.id;
      const exported = join(tmp.path, 'with-osi.mcap');
      await exportRecording(store, 'mcap', [run], exported, { settings: { osi: true } });
      // An OSI trace as another tool writes one: the GroundTruth channel alone, no simrec.run record.
      const foreign = join(tmp.path, 'osi-only.mcap');
      const { reader, close } = await openMcap(exported);
      const writable = await FileWritable.create(foreign);
      const writer = new McapWriter({ writable, useChunks: true });
      await writer.start({ profile: '', library: 'an OSI tool' });
      try {
        const channel = [...reader.channelsById.values()].find((c) => c.topic === '/osi/ground_truth')!;
        const schema = reader.schemasById.get(channel.schemaId)!;
        const channelId = await writer.registerChannel({
          schemaId: await writer.registerSchema({
            name: schema.name,
            encoding: schema.encoding,
            data: schema.data,
          }),
          topic: 'ground_truth',
          messageEncoding: 'protobuf',
          metadata: channel.metadata,
        });
        let lastTime = 0n;
        for await (const m of reader.readMessages({ topics: [channel.topic] })) {
          await writer.addMessage({ ...m, channelId });
          lastTime = m.logTime;
        }
        // One object another tool named only by its OSI id.
        const extra = GroundTruthType.encode({
          timestamp: { seconds: Number(lastTime / 1_000_000_000n), nanos: Number(lastTime % 1_000_000_000n) },
          moving_object: [
            {
              id: { value: 424242 },
              type: 3,
              base: { position: v3(1, 2, 0.9), dimension: { length: 0.5, width: 0.5, height: 1.8 } },
            },
          ],
        }).finish();
        await writer.addMessage({
          channelId,
          sequence: 0,
          logTime: lastTime,
          publishTime: lastTime,
          data: extra,
        });
        await writer.addMetadata({ name: 'net.asam.osi.trace', metadata: new Map([['version', '3.8.0']]) });
      } finally {
        await writer.end();
        await writable.close();
        await close();
      }
      const { runs, details } = await importRecording(store, 'mcap', foreign);
      assert.equal(details.source, 'foxglove');
      const imported = runs[0]!.id;
      const original = (await store.listActors(run)).filter((a) => a.kind !== 'traffic_light');
      const all = await store.listActors(imported);
      // OSI's traffic lights are one bulb each: a lamp per actor, apart from the run's own lights.
      assert.ok(all.some((a) => a.kind === 'traffic_light' && a.id.startsWith('osi-light-')));
      const actors = all.filter((a) => a.kind !== 'traffic_light');
      assert.deepEqual(
        actors.map((a) => [a.id, a.kind]).sort(),
        [...original.map((a) => [a.id, a.kind]), ['osi-424242', 'pedestrian']].sort(),
      );
      for (const actor of original.filter((_a, i) => i % 3 === 0)) {
        const states = async (r: number) => {
          const all: Sample[] = [];
          for await (const b of store.readSamples({ run: r, stream: `${actor.id}/state` })) all.push(...b);
          return all;
        };
        const [before, after] = [await states(run), await states(imported)];
        assert.equal(after.length, before.length, `${actor.id}: a state per frame it was in`);
        for (const [i, s] of after.entries()) {
          assert.equal(s.t, before[i]!.t);
          assert.equal(s.x, before[i]!.x);
          assert.equal(s.y, before[i]!.y);
          assert.ok(
            Math.abs(
              Math.atan2(
                Math.sin((s.yaw as number) - (before[i]!.yaw as number)),
                Math.cos((s.yaw as number) - (before[i]!.yaw as number)),
              ),
            ) < 1e-12,
          );
        }
      }
    } finally {
      await store.close();
    }
  });
});

describe('MCAP: traffic lights, LocationFix, several runs', () => {
  const tmp = tempDir('simrec-mcap-more-');
  after(() => tmp.cleanup());

  it("draws each signal head in the scene in its link's colour", async () => {
    const store = await openStore(join(tmp.path, 'lights.db'));
    try {
      const run = (await recordDemoRun(store, { duration: 20, vehicles: 4, seed: 2 })).run.id;
      const file = join(tmp.path, 'lights.mcap');
      await exportRecording(store, 'mcap', [run], file);
      const { reader, close } = await openMcap(file);
      const colours = new Map<string, Set<string>>();
      try {
        for await (const m of reader.readMessages({ topics: ['/scene'] })) {
          const update = JSON.parse(decoder.decode(m.data)) as {
            entities: {
              id: string;
              metadata: { key: string; value: string }[];
              spheres: { color: { r: number; g: number } }[];
            }[];
          };
          for (const e of update.entities) {
            const state = e.metadata.find((d) => d.key === 'state');
            if (!state) continue;
            const { r, g } = e.spheres[0]!.color;
            const seen = colours.get(state.value) ?? new Set();
            seen.add(r > g ? (g > 0.4 ? 'amber' : 'red') : g > r ? 'green' : 'grey');
            colours.set(state.value, seen);
          }
        }
      } finally {
        await close();
      }
      assert.deepEqual([...(colours.get('r') ?? [])], ['red']);
      assert.deepEqual([...(colours.get('G') ?? colours.get('g') ?? [])], ['green']);
    } finally {
      await store.close();
    }
  });

  it("gives a geo-referenced run's ego a foxglove.LocationFix channel, placed as PROJ places it", async () => {
    const store = await openStore(join(tmp.path, 'geo.db'));
    try {
      // esmini's straight road, geo-referenced by a UTM PROJ string in its <geoReference>.
      const net = fixture('esmini', 'xodr', 'straight_500m.xodr');
      const run = (await recordDemoRun(store, { net, duration: 5, vehicles: 2, seed: 1 })).run.id;
      const file = join(tmp.path, 'geo.mcap');
      const details = await exportRecording(store, 'mcap', [run], file);
      const { reader, close } = await openMcap(file);
      const fixes: { latitude: number; longitude: number; frame_id: string }[] = [];
      try {
        const channel = [...reader.channelsById.values()].find((c) => c.topic.endsWith('/location_fix'))!;
        const schema = reader.schemasById.get(channel.schemaId)!;
        assert.equal(schema.name, 'foxglove.LocationFix');
        assert.deepEqual(JSON.parse(decoder.decode(schema.data)), LocationFixSchema, "Foxglove's own schema");
        const validate = new Ajv({ strict: false }).compile(LocationFixSchema);
        for await (const m of reader.readMessages({ topics: [channel.topic] })) {
          const fix = JSON.parse(decoder.decode(m.data)) as (typeof fixes)[number];
          assert.ok(validate(fix), JSON.stringify(validate.errors));
          fixes.push(fix);
        }
      } finally {
        await close();
      }
      assert.ok(fixes.length > 10);
      const ego = (await store.listActors(run)).find((a) => a.kind === 'ego')!;
      assert.ok(fixes.every((f) => f.frame_id === ego.id));
      // The layout's map panel follows it.
      assert.ok(existsSync(join(tmp.path, 'geo.layout.json')));
      assert.ok((details.beside as string[]).length === 1);
      // pyproj (PROJ 9.1) for this string, for local (100, 200) and (0, 0): proj4js must agree.
      const { geoLocator } = await import('../src/roadnet/geo-location.js');
      const network = (await loadRoadNetwork(store, run))!;
      const locate = geoLocator(network.geoReference)!;
      const near = (a: number, b: number) => Math.abs(a - b) < 1e-9;
      const p = locate(100, 200);
      assert.ok(
        near(p.longitude, 4.512152013620609) && near(p.latitude, 0.001803877390955991),
        JSON.stringify(p),
      );
    } finally {
      await store.close();
    }
  });

  it("draws a camera's 2-D boxes and keypoints over its images as foxglove.ImageAnnotations", async () => {
    const store = await openStore(join(tmp.path, 'labels.db'));
    try {
      // datasetinsights' keypoint sample: Unity Perception captures with images, boxes and keypoints.
      const dataset = join(REPO_ROOT, 'test', 'fixtures', 'datasetinsights', 'simrun_keypoint_dataset');
      const { runs } = await importRecording(store, 'perception', dataset);
      const run = runs[0]!.id;
      const file = join(tmp.path, 'labels.mcap');
      await exportRecording(store, 'mcap', [run], file);
      const captures: PerceptionCapture[] = [];
      for (const s of await store.listStreams(run))
        if (s.name === 'captures' && s.actor)
          for await (const batch of store.readSamples({ run, stream: s.id }))
            captures.push(...batch.map((x) => sampleToCapture(s.actor!, x)));
      const labelled = captures.filter((c) => captureBoxes(c).length > 0);
      assert.ok(labelled.length > 0, 'the sample has boxes');
      const { reader, close } = await openMcap(file);
      try {
        const channel = [...reader.channelsById.values()].find((c) => c.topic.endsWith('/annotations'))!;
        const schema = reader.schemasById.get(channel.schemaId)!;
        assert.equal(schema.name, 'foxglove.ImageAnnotations');
        const validate = new Ajv({ strict: false }).compile(ImageAnnotationsSchema);
        type Points = { type: number; points: { x: number; y: number }[] };
        const messages: { t: number; points: Points[] }[] = [];
        for await (const m of reader.readMessages({ topics: [channel.topic] })) {
          const message = JSON.parse(decoder.decode(m.data)) as { points: Points[] };
          assert.ok(validate(message), JSON.stringify(validate.errors));
          messages.push({ t: Number(m.logTime / 1000n), points: message.points });
        }
        assert.equal(messages.length, labelled.length);
        for (const [i, c] of labelled.entries()) {
          const outlines = messages[i]!.points.filter((p) => p.type === 2);
          assert.equal(messages[i]!.t, c.t);
          assert.deepEqual(
            outlines.map((p) => p.points[0]),
            captureBoxes(c).map((b) => ({ x: b.x, y: b.y })),
          );
          assert.deepEqual(
            outlines.map((p) => p.points[2]),
            captureBoxes(c).map((b) => ({ x: b.x + b.width, y: b.y + b.height })),
          );
        }
        const keypoints = messages.flatMap((m) => m.points.filter((p) => p.type === 1));
        assert.ok(keypoints.length > 0 && keypoints.every((p) => p.points.length > 0), 'keypoints drawn');
        // The template's skeleton (17 points, 19 bones in this sample) joins the points seen.
        let bones = 0;
        for (const m of messages) {
          const seen = new Set(
            m.points.filter((p) => p.type === 1).flatMap((p) => p.points.map((q) => `${q.x},${q.y}`)),
          );
          for (const b of m.points.filter((p) => p.type === 4)) {
            assert.equal(b.points.length % 2, 0, 'a line list: pairs of points');
            assert.ok(b.points.length / 2 <= 19);
            assert.ok(
              b.points.every((q) => seen.has(`${q.x},${q.y}`)),
              'bones join points seen',
            );
            bones++;
          }
        }
        assert.ok(bones > 0, 'skeletons drawn');
      } finally {
        await close();
      }
    } finally {
      await store.close();
    }
  });

  it('several runs: one MCAP each, with its layout, in a folder written whole', () => {
    const db = join(tmp.path, 'several.db');
    const env = { SIMREC_STORE: db };
    cliJson(['demo', '--no-serve', '--duration', '3', '--vehicles', '3', '--json'], env);
    cliJson(['demo', '--no-serve', '--duration', '3', '--vehicles', '3', '--seed', '2', '--json'], env);
    const out = join(tmp.path, 'runs');
    const result = cliJson<{ files: { run: number; file: string; frames: number; beside: string[] }[] }>(
      ['export', '1,2', 'mcap', out, '--osi', '--json'],
      env,
    );
    assert.deepEqual(
      result.files.map((f) => f.file),
      [join(out, 'run-1.mcap'), join(out, 'run-2.mcap')],
    );
    assert.deepEqual(readdirSync(out).sort(), [
      'run-1.layout.json',
      'run-1.mcap',
      'run-2.layout.json',
      'run-2.mcap',
    ]);
    assert.ok(result.files.every((f) => f.frames > 0));
    // The folder is not replaced unasked, and a format that holds one run refuses several.
    const again = runCli(['export', '1,2', 'mcap', out], env);
    assert.notEqual(again.status, 0);
    assert.match(again.stderr, /already exists; --force replaces it/);
    const coco = runCli(['export', '1,2', 'coco', join(tmp.path, 'two-coco')], env);
    assert.notEqual(coco.status, 0);
    assert.match(coco.stderr, /coco: writes one run to a location/);
  });
});
