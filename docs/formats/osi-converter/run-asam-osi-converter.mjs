// Runs asam-osi-converter's own SceneUpdate and FrameTransform converters over the OSI channels of an
// MCAP file, each message decoded as Lichtblick decodes protobuf (protobufjs 8: keepCase, defaults:
// true, 64-bit integers as BigInt, enums as numbers), and reports what they draw: every moving object
// as an entity at its position, the lanes and boundaries drawn, errors, alerts and console output.
// WATCH=1 also lists every GroundTruth field the converter read, and which it found missing.
// Not part of simrec: run it in a scratch folder beside the bundled converter (docs/formats/osi.md).
//   node run-asam-osi-converter.mjs FILE.mcap
import { McapIndexedReader } from '@mcap/core';
import zstd from '@foxglove/wasm-zstd';
import protobuf from 'protobufjs';
import 'protobufjs/ext/descriptor/index.js';
import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
const print = console.log.bind(console);
globalThis.window ??= globalThis; // their traffic-light models decode data URIs with window.atob
const consoleErrors = [];
console.error = (...a) => consoleErrors.push(a.map(String).join(' '));
const consoleWarnings = new Map();
console.warn = console.log = (...a) => {
  const k = a.map(String).join(' ').slice(0, 120);
  consoleWarnings.set(k, (consoleWarnings.get(k) ?? 0) + 1);
};
const { registerGroundTruthConverter, registerSensorViewConverter, convertGroundTruthToFrameTransforms } =
  await import(pathToFileURL(resolve('converter.mjs')).href);
await zstd.isLoaded;
const file = process.argv[2];
const h = await open(file);
const size = (await h.stat()).size;
const readable = {
  size: async () => BigInt(size),
  read: async (o, l) => {
    const b = Buffer.alloc(Number(l));
    await h.read(b, 0, Number(l), Number(o));
    return b;
  },
};
const r = await McapIndexedReader.Initialize({
  readable,
  decompressHandlers: { zstd: (d, s) => zstd.decompress(d, Number(s)) },
});
/** Every field path the converter reads, and those it found absent (undefined) in the decoded message. */
const reads = new Map();
function watch(value, path) {
  if (typeof value !== 'object' || value === null) return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof key === 'symbol' || (Array.isArray(target) && !/^\d+$/.test(key)))
        return typeof v === 'function' ? v.bind(receiver) : v;
      const p = Array.isArray(target) ? `${path}[]` : `${path}.${key}`;
      const entry = reads.get(p) ?? { absent: 0, present: 0 };
      if (v === undefined) entry.absent++;
      else entry.present++;
      reads.set(p, entry);
      return watch(v, p);
    },
  });
}
const report = {
  file,
  channels: [],
  messages: 0,
  errors: [],
  alerts: new Set(),
  missing: 0,
  misplaced: 0,
  maxOffset: 0,
  entityKinds: {},
  lanesDrawn: 0,
  boundariesDrawn: 0,
  objects: 0,
  frameTransforms: 0,
  sample: undefined,
};
for (const [, ch] of r.channelsById) {
  const schema = r.schemasById.get(ch.schemaId);
  if (!schema?.name.startsWith('osi3.')) continue;
  const root = protobuf.Root.fromDescriptor(schema.data, { keepCase: true });
  root.resolveAll();
  const T = root.lookupType(schema.name);
  const sv = schema.name === 'osi3.SensorView';
  const convert = sv ? registerSensorViewConverter() : registerGroundTruthConverter();
  report.channels.push(`${ch.topic} ${schema.name}`);
  const context = { emitAlert: (a, key) => report.alerts.add(`${key}: ${a.message}`) };
  for await (const m of r.readMessages({ topics: [ch.topic] })) {
    report.messages++;
    const plain = T.toObject(T.decode(m.data), { defaults: true, longs: BigInt });
    const msg = process.env.WATCH ? watch(plain, sv ? 'SensorView' : 'GroundTruth') : plain;
    const gt = sv ? plain.global_ground_truth : plain;
    let scene;
    try {
      scene = convert(
        msg,
        {
          topic: ch.topic,
          schemaName: schema.name,
          receiveTime: { sec: 0, nsec: 0 },
          message: msg,
          sizeInBytes: m.data.length,
        },
        {},
        context,
      );
      const tf = convertGroundTruthToFrameTransforms(gt);
      report.frameTransforms += tf?.transforms?.length ?? 0;
    } catch (error) {
      if (report.errors.length < 5)
        report.errors.push(`message ${report.messages}: ${error.stack.split('\n').slice(0, 3).join(' | ')}`);
      continue;
    }
    const byId = new Map(scene.entities.map((e) => [e.id, e]));
    for (const e of scene.entities) {
      const kind = e.id.replace(/_\d+$/, '').replace(/_-?\d+.*$/, '');
      report.entityKinds[kind] = (report.entityKinds[kind] ?? 0) + 1;
    }
    for (const o of gt.moving_object ?? []) {
      report.objects++;
      const e = byId.get(`moving_object_${o.id.value}`);
      if (!e || !e.cubes?.length) {
        report.missing++;
        continue;
      }
      const p = e.cubes[0].pose.position;
      const d = Math.hypot(p.x - o.base.position.x, p.y - o.base.position.y, p.z - o.base.position.z);
      report.maxOffset = Math.max(report.maxOffset, d);
      if (d > 1e-9) report.misplaced++;
      report.sample ??= {
        entity: e.id,
        frame_id: e.frame_id,
        timestamp: String(e.timestamp?.sec) + '.' + e.timestamp?.nsec,
        cube: { position: p, size: e.cubes[0].size },
        osi: { position: o.base.position, dimension: o.base.dimension },
        metadata: e.metadata?.slice(0, 6),
      };
    }
    const lanes = scene.entities.filter((e) => e.id.startsWith('lane_') && !e.id.startsWith('lane_boundary'));
    const points = (t) => t?.points?.length ?? 0;
    report.lastFrame = {
      osiLanes: gt.lane.length,
      osiBoundaries: gt.lane_boundary.length,
      laneEntities: lanes.length,
      withSurface: lanes.filter((e) => points(e.triangles?.[0]) > 0).length,
      withCentreLine: lanes.filter((e) => points(e.triangles?.[1]) > 0).length,
      lanesWithoutBoundaries: gt.lane.filter(
        (l) =>
          !l.classification.left_lane_boundary_id.length && !l.classification.right_lane_boundary_id.length,
      ).length,
      boundaryEntitiesWithLine: scene.entities.filter(
        (e) => e.id.startsWith('lane_boundary') && (e.triangles ?? []).some((t) => points(t) > 0),
      ).length,
    };
    report.lanesDrawn = Math.max(
      report.lanesDrawn,
      scene.entities.filter(
        (e) => /^lane_\d/.test(e.id) || (e.id.startsWith('lane_') && !e.id.startsWith('lane_boundary')),
      ).length,
    );
    report.boundariesDrawn = Math.max(
      report.boundariesDrawn,
      scene.entities.filter((e) => e.id.startsWith('lane_boundary')).length,
    );
  }
}
report.alerts = [...report.alerts];
if (process.env.WATCH)
  report.fieldsRead = Object.fromEntries(
    [...reads]
      .sort()
      .map(([p, e]) => [p, e.absent ? `absent ${e.absent}/${e.absent + e.present}` : 'present']),
  );
report.consoleErrors = consoleErrors.length;
report.consoleWarnings = Object.fromEntries(consoleWarnings);
report.firstConsoleErrors = consoleErrors.slice(0, 3).map((e) => e.slice(0, 400));
print(JSON.stringify(report, (k, v) => (typeof v === 'bigint' ? `${v}n` : v), 1));
await h.close();
