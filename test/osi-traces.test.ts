/**
 * ASAM OSI traces in MCAP as other tools write them: asam-osi-converter's example traces (four
 * writers: libmcap, Python's mcap, Go's mcap, osi3test), each with an osi3.SensorView channel. Every
 * moving object of every message is checked against what protobufjs decodes with the file's own
 * schema record, independently of simrec's reader.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { McapIndexedReader, McapWriter, type DecompressHandlers } from '@mcap/core';
import protobuf from 'protobufjs';
import 'protobufjs/ext/descriptor.js';
import { FileReadable, FileWritable } from '../src/formats/mcap/mcap-files.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { importRecording } from '../src/record/import-run.js';
import { sceneAt, streamSamples } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { REPO_ROOT, tempDir } from './helpers/paths.js';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'asam-osi-converter');
const TRACES = {
  'MovingHostWith3DModel.mcap': 'libmcap 1.2.0',
  'MovingHostWithStopLine.mcap': 'python mcap 1.3.1',
  'testBrakeAndIndicatorLights.mcap': 'mcap go v1.7.3; libmcap 1.2.0',
  'disappearingVehicle.mcap': 'osi3test 1.5.1',
} as const;

const dir = tempDir('simrec-osi-');
let store: StoreBackend;
let zstd: DecompressHandlers;
before(async () => {
  store = await openStore(join(dir.path, 'osi.db'));
  const module = await import('@foxglove/wasm-zstd');
  await module.isLoaded;
  zstd = { zstd: (data, size) => module.decompress(data, Number(size)) };
});
after(async () => {
  await store.close();
  dir.cleanup();
});

interface Decoded {
  library: string;
  /** Per message: its time (us) and its moving objects as the file's own schema decodes them. */
  messages: { t: number; host: number; objects: Record<string, unknown>[] }[];
}

/** The trace read by @mcap/core and decoded by protobufjs from the schema record the file carries. */
async function decodeTrace(file: string): Promise<Decoded> {
  const readable = await FileReadable.open(file);
  try {
    const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers: zstd });
    const [channel] = [...reader.channelsById.values()].filter(
      (c) => reader.schemasById.get(c.schemaId)?.name === 'osi3.SensorView',
    );
    const schema = reader.schemasById.get(channel!.schemaId)!;
    const root = (
      protobuf.Root as unknown as { fromDescriptor(d: Uint8Array): protobuf.Root }
    ).fromDescriptor(schema.data);
    const SensorView = root.lookupType('osi3.SensorView');
    const messages: Decoded['messages'] = [];
    for await (const m of reader.readMessages({ topics: [channel!.topic] })) {
      const view = SensorView.toObject(SensorView.decode(m.data), { longs: Number, enums: String }) as {
        host_vehicle_id?: { value: number };
        global_ground_truth: {
          timestamp?: { seconds?: number; nanos?: number };
          host_vehicle_id?: { value: number };
          moving_object?: Record<string, unknown>[];
        };
      };
      const gt = view.global_ground_truth;
      const ts = gt.timestamp;
      messages.push({
        t: ts ? (ts.seconds ?? 0) * 1e6 + Math.round((ts.nanos ?? 0) / 1000) : Number(m.logTime / 1000n),
        host: gt.host_vehicle_id?.value ?? view.host_vehicle_id?.value ?? -1,
        objects: gt.moving_object ?? [],
      });
    }
    return { library: reader.header.library, messages };
  } finally {
    await readable.close();
  }
}

async function statesOf(runId: number, actor: string): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of streamSamples(store, runId, `${actor}/state`)) out.push(...batch);
  return out;
}

describe("asam-osi-converter's example traces (osi3.SensorView in MCAP, four writers)", () => {
  for (const [name, library] of Object.entries(TRACES))
    it(`${name} (${library}): every moving object of every message where the file's own schema puts it`, async () => {
      const file = join(FIXTURES, name);
      const trace = await decodeTrace(file);
      assert.equal(trace.library, library);
      const warnings: string[] = [];
      const { runs } = await importRecording(store, 'mcap', file, {
        warn: (_w, m) => warnings.push(m),
      });
      assert.deepEqual(warnings, []);
      const run = runs[0]!;
      const zero =
        run.metadata.osi && (run.metadata.osi as { trace?: { zero_time?: string } }).trace?.zero_time;
      const offset = zero ? Date.parse(zero) * 1000 : 0;
      const actors = new Map((await store.listActors(run.id)).map((a) => [a.id, a]));
      const states = new Map<string, Map<number, Sample>>();
      let compared = 0;
      for (const { t, host, objects } of trace.messages)
        for (const o of objects as {
          id: { value: number };
          type: string;
          base: {
            position: { x: number; y: number; z: number };
            dimension: { height: number; length: number };
            orientation?: { yaw?: number };
            velocity?: { x: number; y: number };
          };
        }[]) {
          const id = `osi-${o.id.value}`;
          const actor = actors.get(id);
          assert.ok(actor, `${id} is an actor`);
          assert.equal(
            actor.kind,
            o.id.value === host ? 'ego' : o.type === 'TYPE_PEDESTRIAN' ? 'pedestrian' : 'vehicle',
          );
          assert.equal(actor.extents?.length, o.base.dimension.length);
          if (!states.has(id))
            states.set(id, new Map((await statesOf(run.id, id)).map((s) => [s.t - offset, s])));
          const s = states.get(id)!.get(t);
          assert.ok(s, `${id} has a state at ${t} us`);
          assert.equal(s.x, o.base.position.x, `${id} x at ${t}`);
          assert.equal(s.y, o.base.position.y, `${id} y at ${t}`);
          // OSI places an object at its box's centre; simrec at the ground under it.
          assert.equal(s.z, o.base.position.z - o.base.dimension.height / 2, `${id} z at ${t}`);
          assert.equal(s.yaw, o.base.orientation?.yaw ?? 0);
          if (o.base.velocity) assert.equal(s.vx, o.base.velocity.x);
          compared++;
        }
      const total = trace.messages.reduce((n, m) => n + m.objects.length, 0);
      assert.equal(compared, total);
      assert.ok(compared >= trace.messages.length, `${compared} object-states compared`);
    });

  it('disappearingVehicle.mcap: the vehicle that vanishes leaves the scene at the first message without it', async () => {
    const file = join(FIXTURES, 'disappearingVehicle.mcap');
    const trace = await decodeTrace(file);
    const run = (await importRecording(store, 'mcap', file)).runs[0]!;
    const gone = trace.messages.findIndex(
      (m) => !m.objects.some((o) => (o.id as { value: number }).value === 2),
    );
    assert.ok(gone > 0, 'osi 2 vanishes');
    const offset = Date.parse('2024-06-03T14:38:03.535904Z') * 1000;
    const leftAt = offset + trace.messages[gone]!.t;
    const actor = (await store.listActors(run.id)).find((a) => a.id === 'osi-2')!;
    assert.deepEqual(actor.presence, [{ from: offset + trace.messages[0]!.t, to: leftAt }]);
    const before = await sceneAt(store, run.id, { t: leftAt - 1 });
    const afterwards = await sceneAt(store, run.id, { t: leftAt });
    assert.ok(before.actors.some((a) => a.id === 'osi-2'));
    assert.ok(!afterwards.actors.some((a) => a.id === 'osi-2'));
    assert.ok(
      afterwards.actors.some((a) => a.id === 'osi-1'),
      'the host stays',
    );
    // The trace's metadata is the run's.
    const osi = run.metadata.osi as {
      trace: Record<string, string>;
      channels: Record<string, Record<string, string>>;
    };
    assert.equal(osi.trace.version, '3.7.0');
    assert.equal(osi.trace.authors, 'PMSF');
    assert.equal(osi.channels['/PMSF.SensorView']!['net.asam.osi.trace.channel.osi_version'], '3.7.0');
  });

  it('testBrakeAndIndicatorLights.mcap: light states over time, and the traffic lights with their colours', async () => {
    const run = (await importRecording(store, 'mcap', join(FIXTURES, 'testBrakeAndIndicatorLights.mcap')))
      .runs[0]!;
    const actors = await store.listActors(run.id);
    assert.deepEqual(
      actors.filter((a) => a.kind === 'traffic_light').map((a) => a.id),
      ['osi-light-10', 'osi-light-11', 'osi-light-12'],
    );
    const brake = new Set<unknown>();
    const indicator = new Set<unknown>();
    for (const a of actors.filter((x) => x.kind === 'ego' || x.kind === 'vehicle'))
      for (const s of await statesOf(run.id, a.id)) {
        brake.add(s.light_brake_light_state);
        indicator.add(s.light_indicator_state);
      }
    assert.ok(brake.size > 1, `brake light states: ${[...brake].join(', ')}`);
    assert.ok(indicator.size > 1, `indicator states: ${[...indicator].join(', ')}`);
    const [light] = await statesOf(run.id, 'osi-light-10');
    assert.match(String(light!.color), /^COLOR_/);
  });
});

describe('malformed OSI traces are refused by name, and nothing is imported', () => {
  /** A trace with the example's schema record and messages that `mangle` has its way with. */
  async function mangled(
    name: string,
    mangle: { schema?: (data: Uint8Array) => Uint8Array; message?: (data: Uint8Array) => Uint8Array },
  ): Promise<string> {
    const readable = await FileReadable.open(join(FIXTURES, 'disappearingVehicle.mcap'));
    const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers: zstd });
    const out = join(dir.path, name);
    const writable = await FileWritable.create(out);
    const writer = new McapWriter({ writable });
    await writer.start({ profile: '', library: 'test' });
    const [channel] = reader.channelsById.values();
    const schema = reader.schemasById.get(channel!.schemaId)!;
    const schemaId = await writer.registerSchema({
      name: schema.name,
      encoding: schema.encoding,
      data: mangle.schema ? mangle.schema(schema.data) : schema.data,
    });
    const channelId = await writer.registerChannel({
      schemaId,
      topic: channel!.topic,
      messageEncoding: 'protobuf',
      metadata: new Map(),
    });
    let sequence = 0;
    for await (const m of reader.readMessages())
      await writer.addMessage({
        channelId,
        sequence: sequence++,
        logTime: m.logTime,
        publishTime: m.publishTime,
        data: sequence === 20 && mangle.message ? mangle.message(m.data) : m.data,
      });
    await writer.end();
    await readable.close();
    return out;
  }

  it('a truncated protobuf message', async () => {
    const file = await mangled('cut-message.mcap', { message: (d) => d.subarray(0, d.length - 7) });
    const runs = (await store.listRuns()).length;
    await assert.rejects(
      importRecording(store, 'mcap', file),
      /cut-message\.mcap: \/PMSF\.SensorView message 19: not a osi3\.SensorView message/,
    );
    assert.equal((await store.listRuns()).length, runs);
  });

  it('a schema record that is no FileDescriptorSet of its type', async () => {
    const file = await mangled('bad-schema.mcap', {
      schema: () => new TextEncoder().encode('not a descriptor'),
    });
    const runs = (await store.listRuns()).length;
    await assert.rejects(
      importRecording(store, 'mcap', file),
      /\/PMSF\.SensorView: schema osi3\.SensorView: not a protobuf FileDescriptorSet holding it/,
    );
    assert.equal((await store.listRuns()).length, runs);
  });
});
