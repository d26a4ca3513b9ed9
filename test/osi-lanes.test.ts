/**
 * OSI lanes and lane boundaries as the run's road network (formats/common/osi3/osi-lanes.ts): the example
 * traces of asam-osi-converter against what protobufjs decodes with each file's own schema, the same
 * trace as a .osi file, simrec's own OSI export read back (the same lanes), and the conversion's rules
 * on small hand-made ground truths.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import protobuf from 'protobufjs';
import 'protobufjs/ext/descriptor.js';
import { McapWriter } from '@mcap/core';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { osiRoadNetwork, type OsiLane, type OsiLaneBoundary } from '../src/formats/common/osi3/osi-lanes.js';
import { GroundTruthType, skimRoad } from '../src/formats/common/osi3/osi3-schema.js';
import { FileWritable } from '../src/formats/mcap/mcap-files.js';
import type { RoadNetwork, RoadPoint } from '../src/model/roadnet.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { laneBordersOf } from '../src/roadnet/lane-borders.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { openStore } from '../src/store/open-store.js';
import { openMcap } from './helpers/open-mcap.js';
import { disappearingVehicleTrace, lengthPrefixed } from './helpers/osi-trace.js';
import { fixture, tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-osi-lanes-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(dir.path, 'lanes.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

interface DecodedRoad {
  proj_string?: string;
  lane: {
    id: { value: number };
    classification: {
      type: string;
      centerline: { x: number; y: number; z: number }[];
      left_adjacent_lane_id: { value: number }[];
      right_adjacent_lane_id: { value: number }[];
      left_lane_boundary_id: { value: number }[];
      right_lane_boundary_id: { value: number }[];
    };
  }[];
  lane_boundary: {
    id: { value: number };
    boundary_line: { position: { x: number; y: number; z: number }; width: number }[];
    classification: { type: string; color: string };
  }[];
}

/** A schema record's FileDescriptorSet as a protobufjs root, proto field names kept. */
const rootOf = (descriptor: Uint8Array): protobuf.Root =>
  (protobuf.Root as unknown as { fromDescriptor(d: Uint8Array, o: object): protobuf.Root }).fromDescriptor(
    descriptor,
    { keepCase: true },
  );

/** A GroundTruth's bytes as a SensorView's: its `global_ground_truth` (field 7), as traces carry it. */
const inSensorView = (gt: Uint8Array): Uint8Array =>
  protobuf.Writer.create()
    .uint32((7 << 3) | 2)
    .bytes(gt)
    .finish();

/** The first SensorView's world, decoded with the file's own schema; and every message's bytes. */
async function decodeFirst(file: string): Promise<{ gt: DecodedRoad; messages: Uint8Array[] }> {
  const { reader, close } = await openMcap(file);
  try {
    const schema = [...reader.schemasById.values()].find((s) => s.name === 'osi3.SensorView')!;
    const SensorView = rootOf(schema.data).lookupType('osi3.SensorView');
    const messages: Uint8Array[] = [];
    for await (const m of reader.readMessages()) messages.push(m.data);
    const view = SensorView.toObject(SensorView.decode(messages[0]!), {
      longs: Number,
      enums: String,
      arrays: true,
    }) as { global_ground_truth: DecodedRoad };
    return { gt: view.global_ground_truth, messages };
  } finally {
    await close();
  }
}

const point = (p: { x: number; y: number; z: number }): RoadPoint => [p.x, p.y, p.z];
const ids = (list: { value: number }[]) => list.map((i) => i.value);
/** OSI's points have a z: a network's 2D points come back at z = 0. */
const in3d = (line: RoadPoint[]): RoadPoint[] => line.map(([x, y, z]) => [x, y, z ?? 0]);

describe("OSI lanes and lane boundaries as the run's road network", () => {
  for (const name of [
    'MovingHostWith3DModel.mcap',
    'MovingHostWithStopLine.mcap',
    'testBrakeAndIndicatorLights.mcap',
  ])
    it(`${name}: each lane and boundary where the file's own schema puts it`, async () => {
      const file = fixture('asam-osi-converter', name);
      const { gt } = await decodeFirst(file);
      const run = (await importRecording(store, 'mcap', file)).runs[0]!;
      const net = (await loadRoadNetwork(store, run.id))!;
      assert.ok(net, 'the run has a road network');
      assert.equal(net.format, 'osi');
      assert.equal(net.version, '3.7.0');
      assert.equal(net.geoReference?.projection, gt.proj_string);
      // Three lanes side by side, driving the same way: one edge, numbered from the right.
      assert.equal(net.lanes.length, gt.lane.length);
      assert.equal(net.edges.length, 1);
      const laneOf = new Map(net.lanes.map((l) => [l.extra!.osiId as number, l]));
      for (const osi of gt.lane) {
        const lane = laneOf.get(osi.id.value)!;
        assert.equal(lane.id, `osi-lane-${osi.id.value}`);
        assert.deepEqual(lane.centerLine, osi.classification.centerline.map(point));
        assert.ok(
          Math.abs(lane.width - 3.5) < 1e-3,
          `${lane.id}: width ${lane.width} between its boundaries`,
        );
        assert.equal(lane.widths, undefined, 'one width along the lane');
        assert.equal(lane.type, 'driving');
        assert.equal(lane.function, 'normal');
        for (const right of ids(osi.classification.right_adjacent_lane_id))
          assert.equal(
            laneOf.get(right)!.index,
            lane.index - 1,
            `${lane.id}: its right neighbour is numbered before it`,
          );
        assert.deepEqual(
          lane.extra!.leftBoundaries,
          ids(osi.classification.left_lane_boundary_id).map((id) => `osi-boundary-${id}`),
        );
        assert.deepEqual(
          lane.extra!.rightBoundaries,
          ids(osi.classification.right_lane_boundary_id).map((id) => `osi-boundary-${id}`),
        );
      }
      assert.deepEqual(
        net.edges[0]!.lanes,
        [...net.lanes].sort((a, b) => a.index - b.index).map((l) => l.id),
      );
      const markOf = new Map(net.laneMarks.map((m) => [m.extra!.osiId as number, m]));
      assert.equal(net.laneMarks.length, gt.lane_boundary.length);
      const types = { TYPE_DASHED_LINE: 'broken', TYPE_SOLID_LINE: 'solid' } as Record<string, string>;
      for (const osi of gt.lane_boundary) {
        const mark = markOf.get(osi.id.value)!;
        assert.equal(mark.id, `osi-boundary-${osi.id.value}`);
        assert.equal(mark.type, types[osi.classification.type]);
        assert.equal(mark.extra!.osiType, osi.classification.type);
        assert.deepEqual(
          mark.shape,
          osi.boundary_line.map((p) => point(p.position)),
        );
        assert.equal(mark.width, osi.boundary_line[0]!.width);
        assert.equal(mark.color, undefined, 'COLOR_OTHER names no colour');
      }
      // The outer boundaries are solid, the ones between lanes dashed, as the viewer draws them.
      const outer = net.laneMarks.filter(
        (m) => (m.extra!.leftOf as string[]).length === 0 || (m.extra!.rightOf as string[]).length === 0,
      );
      assert.deepEqual(
        outer.map((m) => m.type),
        ['solid', 'solid'],
      );
    });

  it('disappearingVehicle.mcap holds no lanes: no road network', async () => {
    const run = (
      await importRecording(store, 'mcap', fixture('asam-osi-converter', 'disappearingVehicle.mcap'))
    ).runs[0]!;
    assert.equal(await loadRoadNetwork(store, run.id), undefined);
  });

  it("the same trace as a .osi file (read with simrec's OSI subset, no schema): the same network", async () => {
    const file = fixture('asam-osi-converter', 'MovingHostWithStopLine.mcap');
    const { messages } = await decodeFirst(file);
    const osi = join(dir.path, 'stop-line.osi');
    writeFileSync(osi, lengthPrefixed(messages));
    const fromMcap = (await loadRoadNetwork(
      store,
      (await importRecording(store, 'mcap', file)).runs[0]!.id,
    ))!;
    const fromOsi = (await loadRoadNetwork(store, (await importRecording(store, 'osi', osi)).runs[0]!.id))!;
    const { source: _a, ...mcapModel } = fromMcap;
    const { source: _b, ...osiModel } = fromOsi;
    assert.deepEqual(osiModel, mcapModel);
  });

  it("simrec's OSI export read back: the same lanes, edges, connections and lane marks", async () => {
    const run = (await recordDemoRun(store, { duration: 3, vehicles: 3, pedestrians: 2, seed: 5 })).run.id;
    const original = (await loadRoadNetwork(store, run))!;
    const osi = join(dir.path, 'demo.osi');
    await exportRecording(store, 'osi', [run], osi);
    const back = (await loadRoadNetwork(store, (await importRecording(store, 'osi', osi)).runs[0]!.id))!;
    assert.equal(back.format, 'osi');
    assert.deepEqual(back.lanes.map((l) => l.id).sort(), original.lanes.map((l) => l.id).sort());
    const backOf = new Map(back.lanes.map((l) => [l.id, l]));
    const edgeOf = new Map(original.edges.map((e) => [e.id, e]));
    let crossings = 0;
    for (const lane of original.lanes) {
      const read = backOf.get(lane.id)!;
      assert.deepEqual(read.centerLine, in3d(lane.centerLine), `${lane.id}: centre line`);
      assert.equal(read.index, lane.index, `${lane.id}: index`);
      // OSI has no crossings or walking areas (nondriving lanes) and no width of a lane: each
      // width is measured between the lane's boundaries, or taken from the lanes it links.
      if (lane.function === 'crossing') {
        crossings++;
        assert.equal(read.extra!.widthFrom, 'unknown');
        continue;
      }
      assert.ok(
        Math.abs(read.width - lane.width) < 1e-3,
        `${lane.id}: width ${read.width}, was ${lane.width}`,
      );
      if (lane.function === 'normal' || lane.function === 'internal')
        assert.equal(read.function, lane.function, `${lane.id}: function`);
      else assert.equal(read.type, 'sidewalk', `${lane.id}: a ${lane.function} is a sidewalk`);
      // The lanes of an edge come back together, in the same order.
      const siblings = edgeOf.get(lane.edge)!.lanes;
      assert.deepEqual(back.edges.find((e) => e.id === read.edge)!.lanes, siblings, `${lane.id}: its edge`);
    }
    assert.ok(crossings > 0, 'the demo network has crossings');
    const key = (c: { fromLane: string; toLane: string; via?: string }) =>
      `${c.fromLane} ${c.via ?? '-'} ${c.toLane}`;
    assert.deepEqual(back.connections.map(key).sort(), original.connections.map(key).sort());
    // The borders the export drew (SUMO declares no marks) are the marks read back.
    const borders = laneBordersOf(original);
    assert.deepEqual(
      back.laneMarks.map((m) => [m.id, m.type, m.shape]).sort(),
      borders.map((b) => [b.mark.id, b.mark.type, in3d(b.mark.shape)]).sort(),
    );
  });
  it('a trace whose road grows message by message (.osi, and MCAP with a real SensorView schema): each lane and boundary as the first message listing it has it', async () => {
    // Messages after the first list the road again (as traces do) and are read with its lanes as ids
    // only; a message bringing a new lane or boundary is read whole. Later copies of a known lane
    // carry another centre line, which must not be the one kept.
    const line = (y: number, ...xs: number[]) => xs.map((x) => ({ x, y, z: 0 }));
    const lane = (n: number, y: number, ...xs: number[]) => ({
      id: { value: n },
      classification: {
        type: 2,
        centerline: line(y, ...xs),
        centerline_is_driving_direction: true,
        left_lane_boundary_id: [{ value: 10 + n }],
        right_lane_boundary_id: [{ value: 10 }],
      },
    });
    const boundary = (n: number, y: number) => ({
      id: { value: n },
      boundary_line: line(y, 0, 100).map((position) => ({ position, width: 0.15 })),
      classification: { type: 3, color: 3 },
    });
    const car = {
      id: { value: 7 },
      base: { dimension: { length: 4, width: 2, height: 1.5 }, position: { x: 5, y: 1, z: 0.75 } },
    };
    const message = (k: number, lanes: unknown[], boundaries: unknown[]) =>
      GroundTruthType.encode(
        GroundTruthType.fromObject({
          version: { version_major: 3, version_minor: 8, version_patch: 0 },
          timestamp: { seconds: k, nanos: 0 },
          moving_object: [car],
          lane: lanes,
          lane_boundary: boundaries,
        }),
      ).finish();
    const osiFile = async (name: string, messages: Uint8Array[]): Promise<string> => {
      const file = join(dir.path, `${name}_gt.osi`);
      await writeFile(file, lengthPrefixed(messages));
      return file;
    };
    // As asam-osi-converter's traces: SensorViews holding each ground truth (field 7), with the
    // schema record osi3test wrote, OSI's whole SensorView and not simrec's subset.
    const { schema } = await disappearingVehicleTrace();
    const mcapFile = async (name: string, messages: Uint8Array[]): Promise<string> => {
      const file = join(dir.path, `${name}.mcap`);
      const writer = new McapWriter({ writable: await FileWritable.create(file) });
      await writer.start({ profile: '', library: 'test' });
      const schemaId = await writer.registerSchema({ ...schema, encoding: 'protobuf' });
      const channelId = await writer.registerChannel({
        schemaId,
        topic: '/sensor_view',
        messageEncoding: 'protobuf',
        metadata: new Map(),
      });
      for (const [k, gt] of messages.entries()) {
        const time = BigInt(k) * 1_000_000_000n;
        await writer.addMessage({
          channelId,
          sequence: k,
          logTime: time,
          publishTime: time,
          data: inSensorView(gt),
        });
      }
      await writer.end();
      return file;
    };
    const growing = [
      message(0, [lane(1, 1.75, 0, 100)], [boundary(10, 0), boundary(11, 3.5)]),
      message(1, [lane(1, 9, 0, 50, 100)], [boundary(10, 0), boundary(11, 3.5)]),
      message(2, [lane(1, 9, 0, 100), lane(2, 5.25, 0, 100)], [boundary(10, 0), boundary(11, 3.5)]),
      // A new boundary alone, then again elsewhere.
      message(3, [lane(2, 9, 100, 0)], [boundary(12, 7)]),
      message(4, [lane(1, 9, 0, 100)], [boundary(12, 20), boundary(10, 1)]),
    ];
    const whole = [
      message(
        0,
        [lane(1, 1.75, 0, 100), lane(2, 5.25, 0, 100)],
        [boundary(10, 0), boundary(11, 3.5), boundary(12, 7)],
      ),
    ];
    const networkOf = async (format: 'osi' | 'mcap', file: string) => {
      const run = (await importRecording(store, format, file)).runs[0]!.id;
      const { source: _s, ...network } = (await loadRoadNetwork(store, run))!;
      return network;
    };
    // The two readers differ in what a default gives (a MCAP trace's schema fills in unset enums:
    // osiSubtype), so each container's grown road is compared with its own whole one.
    for (const [format, file] of [
      ['osi', osiFile],
      ['mcap', mcapFile],
    ] as const) {
      const grown = await networkOf(format, await file('growing', growing));
      assert.deepEqual(grown, await networkOf(format, await file('whole', whole)), format);
      assert.deepEqual(
        grown.lanes.map((l) => [l.id, l.centerLine]),
        [
          [
            'osi-lane-1',
            [
              [0, 1.75, 0],
              [100, 1.75, 0],
            ],
          ],
          [
            'osi-lane-2',
            [
              [0, 5.25, 0],
              [100, 5.25, 0],
            ],
          ],
        ],
        format,
      );
    }
  });
});

describe("a trace's road skimmed in messages after the first (skimRoad)", () => {
  it("with a real tool's SensorView schema: lanes and boundaries as ids, the road's unread parts skipped, the objects whole", async () => {
    const { schema } = await disappearingVehicleTrace();
    const whole = rootOf(schema.data).lookupType('osi3.SensorView');
    const skimmed = skimRoad(rootOf(schema.data)).lookupType('osi3.SensorView');
    const gt = GroundTruthType.encode(
      GroundTruthType.fromObject({
        moving_object: [{ id: { value: 7 }, base: { position: { x: 5, y: 1, z: 0.75 } } }],
        lane: [{ id: { value: 1 }, classification: { type: 2, centerline: [{ x: 0, y: 1.75, z: 0 }] } }],
        lane_boundary: [
          { id: { value: 10 }, boundary_line: [{ position: { x: 0, y: 0, z: 0 }, width: 0.15 }] },
        ],
        reference_line: [{ id: { value: 3 } }],
        logical_lane: [{ id: { value: 4 } }],
      }),
    ).finish();
    const data = inSensorView(gt);
    const read = (T: protobuf.Type) =>
      (
        T.toObject(T.decode(data), { longs: Number, enums: String, arrays: true }) as {
          global_ground_truth: never;
        }
      ).global_ground_truth as Record<string, unknown[]>;
    const all = read(whole);
    const skim = read(skimmed);
    assert.deepEqual(skim.lane, [{ id: { value: 1 } }]);
    assert.deepEqual(skim.lane_boundary, [{ id: { value: 10 } }]);
    assert.equal(skim.reference_line, undefined);
    assert.equal(skim.logical_lane, undefined);
    assert.deepEqual(skim.moving_object, all.moving_object);
    // The whole schema reads what the skimmed one skipped: the bytes were there.
    assert.equal(all.reference_line!.length, 1);
    assert.notDeepEqual(all.lane, skim.lane);
  });
});

describe('OSI lanes: the rules of the conversion', () => {
  const id = (value: number) => ({ value });
  const line = (...points: [number, number][]) => points.map(([x, y]) => ({ x, y, z: 0 }));
  const boundary = (n: number, type: string | number, y: number, color?: string): OsiLaneBoundary => ({
    id: id(n),
    boundary_line: line([0, y], [100, y]).map((position) => ({ position, width: 0.15 })),
    classification: { type, ...(color ? { color } : {}) },
  });
  const road = (lanes: OsiLane[], boundaries: OsiLaneBoundary[], warn?: (m: string) => void): RoadNetwork =>
    osiRoadNetwork(
      { version: { version_major: 3, version_minor: 8, version_patch: 0 } },
      lanes,
      boundaries,
      warn,
    )!;

  it('a centre line against the driving direction is turned round, its sides and links swapped', () => {
    const net = road(
      [
        {
          id: id(1),
          classification: {
            type: 'TYPE_DRIVING',
            centerline: line([0, 0], [50, 0], [100, 0]),
            centerline_is_driving_direction: false,
            left_lane_boundary_id: [id(10)],
            right_lane_boundary_id: [id(11)],
            lane_pairing: [{ antecessor_lane_id: id(3), successor_lane_id: id(2) }],
          },
        },
        { id: id(2), classification: { type: 'TYPE_DRIVING', centerline: line([200, 0], [100, 0]) } },
        { id: id(3), classification: { type: 'TYPE_DRIVING', centerline: line([0, 0], [-100, 0]) } },
      ],
      [boundary(10, 'TYPE_SOLID_LINE', 1.5), boundary(11, 'TYPE_DASHED_LINE', -2)],
    );
    const lane = net.lanes.find((l) => l.id === 'osi-lane-1')!;
    assert.deepEqual(lane.centerLine, [
      [100, 0, 0],
      [50, 0, 0],
      [0, 0, 0],
    ]);
    assert.equal(lane.width, 3.5);
    assert.deepEqual(lane.extra!.leftBoundaries, ['osi-boundary-11']);
    assert.equal(lane.extra!.centerlineReversed, true);
    // Driving from x=100 to 0: lane 2 (after it along the centre line) comes before it, lane 3 after.
    assert.deepEqual(net.connections.map((c) => [c.fromLane, c.toLane]).sort(), [
      ['osi-lane-1', 'osi-lane-3'],
      ['osi-lane-2', 'osi-lane-1'],
    ]);
  });

  it('boundary types and colours by name or number; a boundary with no line gives a width, no mark', () => {
    const lanes: OsiLane[] = [
      {
        id: id(1),
        classification: {
          type: 2,
          subtype: 4,
          centerline: line([0, 0], [100, 0]),
          left_lane_boundary_id: [id(10)],
          right_lane_boundary_id: [id(11)],
        },
      },
    ];
    const net = road(lanes, [
      boundary(10, 2, 1.6),
      boundary(11, 'TYPE_CURB', -1.6, 'COLOR_YELLOW'),
      boundary(12, 11, 5),
      boundary(13, 8, 6),
    ]);
    assert.equal(net.lanes[0]!.width, 3.2);
    assert.equal(net.lanes[0]!.type, 'sidewalk');
    assert.equal(net.lanes[0]!.extra!.osiSubtype, 'SUBTYPE_SIDEWALK');
    assert.deepEqual(
      net.laneMarks.map((m) => [m.id, m.type, m.color ?? null, m.lane ?? null, m.side ?? null]),
      [
        ['osi-boundary-11', 'curb', 'yellow', 'osi-lane-1', 'right'],
        ['osi-boundary-12', 'custom', null, null, null],
        ['osi-boundary-13', 'grass', null, null, null],
      ],
    );
    assert.equal(net.laneMarks[1]!.extra!.osiType, 'TYPE_GUARD_RAIL');
  });

  it("a lane without a centre line is left out and named in a warning; one without boundaries takes its links' width", () => {
    const warnings: string[] = [];
    const net = road(
      [
        {
          id: id(1),
          classification: {
            type: 'TYPE_DRIVING',
            centerline: line([0, 0], [10, 0]),
            left_lane_boundary_id: [id(10)],
            right_lane_boundary_id: [id(11)],
          },
        },
        {
          id: id(2),
          classification: {
            type: 'TYPE_INTERSECTION',
            centerline: line([10, 0], [20, 5]),
            lane_pairing: [{ antecessor_lane_id: id(1), successor_lane_id: id(3) }],
          },
        },
        { id: id(3), classification: { type: 'TYPE_DRIVING', centerline: line([20, 5], [20, 50]) } },
        { id: id(4), classification: { type: 'TYPE_INTERSECTION', centerline: [] } },
      ],
      [boundary(10, 'TYPE_SOLID_LINE', 1.5), boundary(11, 'TYPE_SOLID_LINE', -1.5)],
      (m) => warnings.push(m),
    );
    assert.deepEqual(warnings, [
      'OSI lanes 4 have no centre line (fewer than 2 points): left out of the road network',
    ]);
    const junction = net.lanes.find((l) => l.id === 'osi-lane-2')!;
    assert.equal(junction.function, 'internal');
    assert.equal(junction.width, 3);
    assert.equal(junction.extra!.widthFrom, 'linked lanes');
    assert.equal(net.lanes.find((l) => l.id === 'osi-lane-3')!.extra!.widthFrom, 'unknown');
    assert.deepEqual(net.connections.map((c) => `${c.fromLane} ${c.via ?? '-'} ${c.toLane}`).sort(), [
      'osi-lane-1 osi-lane-2 osi-lane-3',
      'osi-lane-2 - osi-lane-3',
    ]);
  });
});
