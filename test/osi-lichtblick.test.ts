/**
 * simrec's OSI export as Lichtblick's ASAM OSI converter (lichtblick-suite/asam-osi-converter) reads
 * it. That converter was run on simrec's exports (docs/formats/osi.md says how, and how to run it again); CI
 * cannot fetch it, so this test pins what it showed: Lichtblick decodes a protobuf channel with the
 * schema the file carries, filling in defaults (protobufjs: keepCase, `defaults: true`, 64-bit
 * integers as BigInt, enums as numbers), and the converter reads the fields below straight off the
 * decoded message, indexes its colour tables by the enum values, and draws each object at its
 * base.position, the centre of its box, in the trace's own frame (`global`, metres).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import protobuf from 'protobufjs';
import 'protobufjs/ext/descriptor.js';
import { recordDemoRun } from '../src/demo/demo-run.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { exportRecording } from '../src/replay/export-run.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { openMcap } from './helpers/open-mcap.js';
import { tempDir } from './helpers/paths.js';

/**
 * The GroundTruth fields asam-osi-converter 1.0.1 (f0a7a6f) read, as a Proxy over the decoded
 * messages recorded while it converted the four example traces and simrec's exports, on the kinds of
 * entity simrec writes. A field missing from the schema decodes as undefined, and the converter threw
 * on the first message (before simrec's schema declared traffic_sign, the whole export drew nothing).
 */
const CONVERTER_READS = [
  'host_vehicle_id.value',
  'lane[].classification.centerline[].x',
  'lane[].classification.centerline[].y',
  'lane[].classification.centerline[].z',
  'lane[].classification.centerline_is_driving_direction',
  'lane[].classification.is_host_vehicle_lane',
  'lane[].classification.lane_pairing[].antecessor_lane_id.value',
  'lane[].classification.lane_pairing[].successor_lane_id.value',
  'lane[].classification.left_adjacent_lane_id[].value',
  'lane[].classification.left_lane_boundary_id[].value',
  'lane[].classification.right_adjacent_lane_id[].value',
  'lane[].classification.right_lane_boundary_id[].value',
  'lane[].classification.subtype',
  'lane[].classification.type',
  'lane[].id.value',
  'lane_boundary[].boundary_line[].dash',
  'lane_boundary[].boundary_line[].height',
  'lane_boundary[].boundary_line[].position.x',
  'lane_boundary[].boundary_line[].position.y',
  'lane_boundary[].boundary_line[].position.z',
  'lane_boundary[].boundary_line[].width',
  'lane_boundary[].classification.color',
  'lane_boundary[].classification.type',
  'lane_boundary[].id.value',
  'moving_object[].base.acceleration.x',
  'moving_object[].base.acceleration.y',
  'moving_object[].base.acceleration.z',
  'moving_object[].base.dimension.height',
  'moving_object[].base.dimension.length',
  'moving_object[].base.dimension.width',
  'moving_object[].base.orientation.pitch',
  'moving_object[].base.orientation.roll',
  'moving_object[].base.orientation.yaw',
  'moving_object[].base.position.x',
  'moving_object[].base.position.y',
  'moving_object[].base.position.z',
  'moving_object[].base.velocity.x',
  'moving_object[].base.velocity.y',
  'moving_object[].base.velocity.z',
  'moving_object[].id.value',
  'moving_object[].model_reference',
  'moving_object[].moving_object_classification.assigned_lane_id[].value',
  'moving_object[].type',
  'moving_object[].vehicle_classification.light_state.brake_light_state',
  'moving_object[].vehicle_classification.light_state.indicator_state',
  'moving_object[].vehicle_classification.type',
  'stationary_object[].base.dimension.height',
  'stationary_object[].base.dimension.length',
  'stationary_object[].base.dimension.width',
  'stationary_object[].base.orientation.pitch',
  'stationary_object[].base.orientation.roll',
  'stationary_object[].base.orientation.yaw',
  'stationary_object[].base.position.x',
  'stationary_object[].base.position.y',
  'stationary_object[].base.position.z',
  'stationary_object[].classification.color',
  'stationary_object[].classification.density',
  'stationary_object[].classification.material',
  'stationary_object[].classification.type',
  'stationary_object[].id.value',
  'timestamp.nanos',
  'timestamp.seconds',
  'traffic_light[].base.dimension.height',
  'traffic_light[].base.dimension.length',
  'traffic_light[].base.dimension.width',
  'traffic_light[].base.orientation.pitch',
  'traffic_light[].base.orientation.roll',
  'traffic_light[].base.orientation.yaw',
  'traffic_light[].base.position.x',
  'traffic_light[].base.position.y',
  'traffic_light[].base.position.z',
  'traffic_light[].classification.color',
  'traffic_light[].classification.icon',
  'traffic_light[].classification.mode',
  'traffic_light[].id.value',
];

/** The repeated fields the converter maps over in every message, whether simrec writes any or not. */
const CONVERTER_MAPS = [
  'moving_object',
  'stationary_object',
  'traffic_sign',
  'traffic_light',
  'road_marking',
  'lane_boundary',
  'lane',
  'logical_lane_boundary',
  'logical_lane',
  'reference_line',
];

/** Sub-messages the converter reads through `?.` or `!= null`: absent (null) is fine. */
const OPTIONAL = new Set([
  'moving_object[].base.velocity',
  'moving_object[].base.acceleration',
  'moving_object[].vehicle_classification',
  'moving_object[].vehicle_classification.light_state',
  'moving_object[].moving_object_classification',
  'lane[].classification.lane_pairing[].antecessor_lane_id',
  'lane[].classification.lane_pairing[].successor_lane_id',
]);

/** The largest value of each enum whose value the converter uses as an index into a table of its own. */
const TABLE_INDEXES: Record<string, number> = {
  'moving_object[].type': 4,
  'moving_object[].vehicle_classification.type': 17,
  'stationary_object[].classification.color': 10,
  'traffic_light[].classification.color': 6,
  'traffic_light[].classification.icon': 24,
  'traffic_light[].classification.mode': 5,
  'lane[].classification.type': 4,
  'lane_boundary[].classification.type': 15,
  'lane_boundary[].classification.color': 9,
};

type Decoded = Record<string, unknown>;

/** Every value at a path (`a[].b.c`) of a message, or `null` where an optional sub-message is absent. */
function valuesAt(message: Decoded, path: string): unknown[] {
  let values: unknown[] = [message];
  let walked = '';
  for (const part of path.split('.')) {
    const name = part.replace('[]', '');
    walked += (walked ? '.' : '') + name;
    values = values.flatMap((v) => {
      if (v === null && OPTIONAL.has(walked.slice(0, walked.lastIndexOf('.')).replace(/\.$/, ''))) return [];
      if (v === null) return [null];
      const next = (v as Decoded)[name];
      return part.endsWith('[]') && Array.isArray(next) ? next : [next];
    });
    if (part.endsWith('[]')) walked += '[]';
  }
  return values;
}

describe("simrec's OSI export as asam-osi-converter reads it (Lichtblick's decoding)", () => {
  const tmp = tempDir('simrec-osi-lichtblick-');
  let store: StoreBackend;
  let run: number;
  const messages: { logTime: bigint; gt: Decoded }[] = [];
  let type: protobuf.Type;

  before(async () => {
    store = await openStore(join(tmp.path, 'store.db'));
    run = (await recordDemoRun(store, { duration: 4, vehicles: 6, pedestrians: 3, seed: 11 })).run.id;
    const file = join(tmp.path, 'osi.mcap');
    await exportRecording(store, 'mcap', [run], file, { settings: { osi: true } });
    const { reader, close } = await openMcap(file);
    try {
      const channel = [...reader.channelsById.values()].find((c) => c.topic === '/osi/ground_truth')!;
      const schema = reader.schemasById.get(channel.schemaId)!;
      const root = (
        protobuf.Root as unknown as { fromDescriptor(d: Uint8Array, o: object): protobuf.Root }
      ).fromDescriptor(schema.data, { keepCase: true });
      root.resolveAll();
      type = root.lookupType(schema.name);
      for await (const m of reader.readMessages({ topics: [channel.topic] }))
        messages.push({
          logTime: m.logTime,
          gt: type.toObject(type.decode(m.data), { defaults: true, longs: BigInt }),
        });
    } finally {
      await close();
    }
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  it('declares every field the converter reads, so that each decodes (empty, zero or null), never missing', () => {
    for (const path of CONVERTER_READS) {
      let at: protobuf.Type | null = type;
      for (const part of path.split('.')) {
        const field: protobuf.Field | undefined = at?.fields[part.replace('[]', '')];
        assert.ok(field, `osi3.GroundTruth.${path}: not in the schema simrec writes`);
        field.resolve();
        at = field.resolvedType instanceof protobuf.Type ? field.resolvedType : null;
      }
    }
    for (const { gt } of messages) {
      for (const name of CONVERTER_MAPS) assert.ok(Array.isArray(gt[name]), `${name}: an array`);
      for (const path of CONVERTER_READS)
        for (const value of valuesAt(gt, path))
          assert.ok(value !== undefined && value !== null, `${path}: ${String(value)}`);
    }
    assert.ok(messages.length > 10);
  });

  it('every enum the converter indexes a table with lies within that table', () => {
    for (const { gt } of messages)
      for (const [path, max] of Object.entries(TABLE_INDEXES))
        for (const value of valuesAt(gt, path)) {
          assert.equal(typeof value, 'number', path);
          assert.ok((value as number) >= 0 && (value as number) <= max, `${path}: ${String(value)}`);
        }
  });

  it('every actor is an object with an id of its own, at the centre of its box where the run has it', async () => {
    const states = new Map<string, Map<number, Sample>>();
    for (const stream of (await store.listStreams(run)).filter((s) => s.name === 'state')) {
      const byTime = new Map<number, Sample>();
      for await (const batch of streamSamples(store, run, stream.id))
        for (const s of batch) byTime.set(s.t, s);
      states.set(stream.actor!, byTime);
    }
    let drawn = 0;
    for (const { logTime, gt } of messages) {
      const t = Number(logTime / 1000n);
      const time = gt.timestamp as { seconds: bigint; nanos: number };
      assert.equal(
        time.seconds * 1_000_000_000n + BigInt(time.nanos),
        logTime,
        'timestamp: the message time',
      );
      assert.ok(time.nanos < 1e9);
      const objects = gt.moving_object as {
        id: { value: bigint };
        base: { position: { x: number; y: number; z: number }; dimension: { height: number } };
        source_reference: { identifier: string[] }[];
        assigned_lane_id: { value: bigint }[];
        moving_object_classification: { assigned_lane_id: { value: bigint }[] } | null;
      }[];
      // The converter names each entity `moving_object_<id>`: unique in a frame.
      const entities = objects.map((o) => `moving_object_${o.id.value}`);
      assert.equal(new Set(entities).size, entities.length);
      const host = (gt.host_vehicle_id as { value: bigint }).value;
      assert.ok(
        objects.some((o) => o.id.value === host),
        'the host vehicle is one of the objects',
      );
      for (const o of objects) {
        const actor = o.source_reference[0]!.identifier[0]!;
        const s = states.get(actor)?.get(t);
        assert.ok(s, `${actor} at ${t}: the run has it`);
        assert.equal(o.base.position.x, s.x);
        assert.equal(o.base.position.y, s.y);
        assert.ok(
          Math.abs(o.base.position.z - o.base.dimension.height / 2 - ((s.z as number | undefined) ?? 0)) <
            1e-9,
        );
        // The converter lists an object's lanes from its classification (OSI 3.5 and later).
        assert.deepEqual(o.moving_object_classification?.assigned_lane_id ?? [], o.assigned_lane_id);
        drawn++;
      }
    }
    assert.ok(drawn > 100, `${drawn} object-frames`);
  });

  it('lanes: each with a centre line, its boundaries among the lane boundaries', () => {
    for (const { gt } of messages.slice(0, 1)) {
      const boundaries = new Set((gt.lane_boundary as { id: { value: bigint } }[]).map((b) => b.id.value));
      const lanes = gt.lane as {
        classification: {
          centerline: unknown[];
          left_lane_boundary_id: { value: bigint }[];
          right_lane_boundary_id: { value: bigint }[];
        };
      }[];
      assert.ok(lanes.length > 0 && boundaries.size > 0);
      for (const lane of lanes) {
        assert.ok(lane.classification.centerline.length >= 2);
        for (const id of [
          ...lane.classification.left_lane_boundary_id,
          ...lane.classification.right_lane_boundary_id,
        ])
          assert.ok(boundaries.has(id.value));
      }
    }
  });
});
