import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  isTrafficLane,
  polylineLength,
  validateRoadNetwork,
  type RoadNetwork,
} from '../src/model/roadnet.js';
import { readOpenDrive } from '../src/roadnet/opendrive/opendrive-reader.js';
import {
  arc,
  line,
  paramPoly3,
  poly3,
  spiral,
  type GeometryRecord,
} from '../src/roadnet/opendrive/reference-line.js';
import { readSumoNet } from '../src/roadnet/sumo/sumo-net-reader.js';
import { detectRoadNetworkFormat, readRoadNetwork } from '../src/roadnet/read-roadnet.js';
import { LaneIndex } from '../src/roadnet/spatial-index.js';
import { fixture } from './helpers/paths.js';
import { assertInvalid, lineOf } from './helpers/roadnet-helpers.js';

const XODR = readdirSync(fixture('esmini', 'xodr'))
  .filter((f) => f.endsWith('.xodr'))
  .map((f) => fixture('esmini', 'xodr', f));
const text = (file: string): string => readFileSync(file, 'utf8');
const num = (tag: string, name: string): number => Number(new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1]);
const blocks = (source: string, tag: string): string[] =>
  [...source.matchAll(new RegExp(`<${tag}[\\s>][\\s\\S]*?</${tag}>`, 'g'))].map((m) => m[0]);

/** The geometry records of every road, built from the regex-extracted attributes. */
function geometries(source: string): { road: string; records: { g: GeometryRecord; tag: string }[] }[] {
  return blocks(source, 'road').map((road) => {
    const records = [...road.matchAll(/<geometry\s[^>]*>\s*<(\w+)([^>]*)\/?>/g)].map((m) => {
      const tag = m[0];
      const [s, x, y, hdg, length] = ['s', 'x', 'y', 'hdg', 'length'].map((n) => num(tag, n)) as [
        number,
        number,
        number,
        number,
        number,
      ];
      const k = m[2]!;
      const g =
        m[1] === 'line'
          ? line(x, y, hdg, s, length)
          : m[1] === 'arc'
            ? arc(x, y, hdg, s, length, num(k, 'curvature'))
            : m[1] === 'spiral'
              ? spiral(x, y, hdg, s, length, num(k, 'curvStart'), num(k, 'curvEnd'))
              : paramPoly3(x, y, hdg, s, length, {
                  ...(Object.fromEntries(
                    ['aU', 'bU', 'cU', 'dU', 'aV', 'bV', 'cV', 'dV'].map((n) => [n, num(k, n)]),
                  ) as Record<'aU' | 'bU' | 'cU' | 'dU' | 'aV' | 'bV' | 'cV' | 'dV', number>),
                  pRange: /pRange="arcLength"/.test(k) ? 'arcLength' : 'normalized',
                });
      return { g, tag };
    });
    return { road: /<road [^>]*\sid="([^"]*)"/.exec(road)![1]!, records };
  });
}

describe('OpenDRIVE reference lines', () => {
  it('every geometry record ends where the authoring tool says the next one starts (line, arc, spiral, paramPoly3)', () => {
    let checked = 0;
    const kinds = new Set<string>();
    for (const file of XODR)
      for (const { road, records } of geometries(text(file)))
        for (let i = 0; i + 1 < records.length; i++) {
          const { g } = records[i]!;
          const next = records[i + 1]!.tag;
          kinds.add(/<geometry[^>]*>\s*<(\w+)/.exec(records[i]!.tag)?.[1] ?? '');
          const end = g.at(g.length);
          const where = `${file.split('/').pop()} road ${road} geometry ${i}`;
          assert.ok(
            Math.hypot(end.x - num(next, 'x'), end.y - num(next, 'y')) < 0.01,
            `${where}: ${end.x},${end.y}`,
          );
          const dh = Math.atan2(Math.sin(end.hdg - num(next, 'hdg')), Math.cos(end.hdg - num(next, 'hdg')));
          assert.ok(Math.abs(dh) < 1e-3, `${where}: heading off by ${dh}`);
          checked++;
        }
    assert.ok(checked > 30, `${checked} joints checked`);
    for (const kind of ['line', 'arc', 'spiral', 'paramPoly3'])
      assert.ok(
        [...kinds].some((k) => k.startsWith(kind)),
        kind,
      );
  });

  it('a spiral of constant curvature is an arc; an Euler spiral matches its Fresnel series', () => {
    const a = arc(1, 2, 0.3, 0, 40, 0.02).at(40);
    const sp = spiral(1, 2, 0.3, 0, 40, 0.02, 0.02).at(40);
    assert.ok(Math.hypot(a.x - sp.x, a.y - sp.y) < 1e-9);
    // Unit clothoid (curvature = s): x = ∫cos(u²/2), y = ∫sin(u²/2), by their power series at s = 1.5.
    let x = 0;
    let y = 0;
    for (let n = 0; n < 20; n++) {
      const fact = (k: number): number => (k <= 1 ? 1 : k * fact(k - 1));
      x += ((-1) ** n * 1.5 ** (4 * n + 1)) / (fact(2 * n) * 2 ** (2 * n) * (4 * n + 1));
      y += ((-1) ** n * 1.5 ** (4 * n + 3)) / (fact(2 * n + 1) * 2 ** (2 * n + 1) * (4 * n + 3));
    }
    const e = spiral(0, 0, 0, 0, 1.5, 0, 1.5).at(1.5);
    assert.ok(Math.abs(e.x - x) < 1e-6 && Math.abs(e.y - y) < 1e-6, `${e.x},${e.y} vs ${x},${y}`);
    assert.ok(Math.abs(e.hdg - 1.125) < 1e-12);
  });

  it('poly3 is parameterized by arc length', () => {
    // v = u²/20: arc length from u=0 to u=10 is ∫sqrt(1 + (u/10)²) du.
    const exact = (10 / 2) * (Math.SQRT2 + Math.asinh(1));
    const g = poly3(0, 0, 0, 0, exact, { a: 0, b: 0, c: 0.05, d: 0 });
    const end = g.at(exact);
    assert.ok(Math.hypot(end.x - 10, end.y - 5) < 0.01, `${end.x},${end.y}`);
    assert.ok(Math.abs(end.hdg - Math.atan(1)) < 1e-3);
  });
});

describe('OpenDRIVE reader on the esmini maps', () => {
  for (const file of XODR) {
    const name = file.split('/').pop()!;
    it(`${name}: lanes, lane marks and junction links the file declares`, () => {
      const source = text(file);
      const { network, warnings } = readOpenDrive(source, { file });
      assert.deepEqual(warnings, []);
      validateRoadNetwork(network);
      const laneTags = [...source.matchAll(/<lane\s+(?:[^>]*\s)?id="\s*(-?\d+)"/g)].filter(
        (m) => m[1] !== '0',
      );
      assert.equal(network.lanes.length, laneTags.length, 'lanes (the centre lane is not a lane)');
      const sides = blocks(source, 'left').length + blocks(source, 'right').length;
      assert.equal(network.edges.length, sides, 'one edge per side of each lane section');
      assert.equal(network.junctions.length, [...source.matchAll(/<junction\s/g)].length, 'junctions');
      const laneLinks = blocks(source, 'junction').reduce(
        (n, j) => n + [...j.matchAll(/<laneLink\s/g)].length,
        0,
      );
      assert.equal(
        network.connections.filter((c) => c.via !== undefined).length,
        laneLinks,
        'junction lane links',
      );
      const marks = [...source.matchAll(/<roadMark\s[^>]*type="([^"]*)"/g)].filter((m) => m[1] !== 'none');
      assert.ok(marks.length > 0);
      assert.equal(network.laneMarks.length, marks.length, 'one lane mark per road mark');
      for (const mark of network.laneMarks)
        assert.ok(mark.shape.length >= 2 && polylineLength(mark.shape) > 1, mark.id);
      // Each road's lanes are as long as the road (give or take the curve's inside and outside).
      for (const lane of network.lanes.filter((l) => l.function === 'normal')) {
        const road = new RegExp(`<road [^>]*length="([^"]*)"[^>]*id="${lane.openDrive!.road}"`).exec(source);
        if (
          road &&
          network.lanes
            .filter((l) => l.openDrive!.road === lane.openDrive!.road)
            .every((l) => l.openDrive!.laneSection === 0)
        )
          assert.ok(
            Math.abs(lane.length / Number(road[1]) - 1) < 0.05,
            `${lane.id}: ${lane.length} vs road ${road[1]}`,
          );
      }
    });
  }

  const pairs = [
    ['straight_500m.xodr', 'straight.net.xml'],
    ['e6mini.xodr', 'e6mini.net.xml'],
    ['fabriksgatan.xodr', 'fabriksgatan.net.xml'],
  ] as const;
  for (const [xodr, net] of pairs)
    it(`${xodr} and the ${net} netconvert made from it agree on total lane length within 2%`, () => {
      const sumoText = text(fixture('esmini', 'sumo', net));
      const sumo = readSumoNet(sumoText).network;
      const odr = readOpenDrive(text(fixture('esmini', 'xodr', xodr))).network;
      // netconvert keeps the lane types its <type> list names without discard="1" (no sidewalks in 0.32).
      const kept = new Set(
        [...sumoText.matchAll(/<type id="([^"]*)"[^>]*>/g)]
          .filter((m) => !/discard="1"/.test(m[0]))
          .map((m) => m[1]!),
      );
      const total = (n: RoadNetwork, keep: (type: string | undefined) => boolean): number =>
        n.lanes.filter((l) => l.function === 'normal' && keep(l.type)).reduce((s, l) => s + l.length, 0);
      const sumoTotal = total(sumo, () => true);
      const odrTotal = total(odr, (t) => kept.has(t ?? ''));
      assert.ok(sumoTotal > 0);
      assert.ok(Math.abs(odrTotal / sumoTotal - 1) < 0.02, `OpenDRIVE ${odrTotal} vs SUMO ${sumoTotal}`);
      assert.equal(
        odr.lanes.filter((l) => l.function === 'normal' && kept.has(l.type ?? '')).length,
        sumo.lanes.filter((l) => l.function === 'normal').length,
        'same number of lanes',
      );
    });

  it('straight_500m: lane geometry, widths, marks and geoReference', () => {
    const { network } = readOpenDrive(text(fixture('esmini', 'xodr', 'straight_500m.xodr')));
    const byId = new Map(network.lanes.map((l) => [l.id, l]));
    const right = byId.get('1_0_-1')!;
    // Width 3.07: the centre of lane -1 is 1.535 m right of the reference line, travelling along +x.
    assert.deepEqual(right.centerLine[0], [0, -1.535, 0]);
    assert.deepEqual(right.centerLine.at(-1), [500, -1.535, 0]);
    assert.equal(right.centerLine.length, 1001, 'sampled every 0.5 m');
    assert.ok(Math.abs(right.width - 3.07) < 1e-9 && right.widths === undefined, 'constant width');
    assert.equal(right.type, 'driving');
    const left = byId.get('1_0_1')!;
    assert.deepEqual(left.centerLine[0], [500, 1.535, 0], 'left lanes run against s');
    assert.deepEqual([left.index, byId.get('1_0_3')!.index], [2, 0], 'index 0 is the outermost lane');
    assert.ok(isTrafficLane(right) && !isTrafficLane(byId.get('1_0_-2')!), 'shoulders carry no traffic');
    const centre = network.laneMarks.find((m) => m.id === '1_0_0_mark0')!;
    assert.equal(centre.type, 'broken');
    assert.deepEqual([centre.shape[0], centre.lane, centre.side], [[0, 0, 0], '1_0_-1', 'left']);
    const edge = network.laneMarks.find((m) => m.id === '1_0_-1_mark0')!;
    assert.deepEqual(
      [edge.type, edge.shape[0], edge.lane, edge.side, edge.width],
      ['solid', [0, -3.07, 0], '1_0_-1', 'right', 0.12],
    );
    assert.match(network.geoReference!.projection!, /^\+proj=utm \+lat_0=37\.35429341239328/);
    assert.deepEqual(network.boundary, { min: [0, -7.75], max: [500, 7.75] });
    const coarse = readOpenDrive(text(fixture('esmini', 'xodr', 'straight_500m.xodr')), {
      resolution: 10,
    }).network;
    assert.equal(coarse.lanes.find((l) => l.id === '1_0_-1')!.centerLine.length, 51);
    assert.equal(coarse.resolution, 10);
  });

  it('curves_elevation: elevation profile reaches the lanes', () => {
    const source = text(fixture('esmini', 'xodr', 'curves_elevation.xodr'));
    const { network } = readOpenDrive(source);
    const lane = network.lanes.find((l) => l.id === '1_0_-1')!;
    const elevations = [...source.matchAll(/<elevation\s[^>]*>/g)].map((m) => m[0]);
    const last = elevations.at(-1)!;
    const roadLength = num(/<road [^>]*>/.exec(source)![0], 'length');
    const ds = roadLength - num(last, 's');
    const zEnd = num(last, 'a') + num(last, 'b') * ds + num(last, 'c') * ds ** 2 + num(last, 'd') * ds ** 3;
    assert.ok(
      Math.abs((lane.centerLine.at(-1)![2] ?? NaN) - zEnd) < 0.01,
      `${lane.centerLine.at(-1)} vs z ${zEnd}`,
    );
    const zs = lane.centerLine.map((p) => p[2] ?? 0);
    assert.ok(Math.max(...zs) - Math.min(...zs) > 5, 'the road climbs');
  });

  it('fabriksgatan: junction connections run incoming lane -> connecting lane -> outgoing lane, with outline', () => {
    const { network } = readOpenDrive(text(fixture('esmini', 'xodr', 'fabriksgatan.xodr')));
    const lanes = new Map(network.lanes.map((l) => [l.id, l]));
    const [junction] = network.junctions;
    assert.ok(junction!.outline.length >= 4);
    for (const c of network.connections.filter((x) => x.via)) {
      const [from, via, to] = [lanes.get(c.fromLane)!, lanes.get(c.via!)!, lanes.get(c.toLane)!];
      assert.equal(via.function, 'internal');
      assert.equal(via.junction, junction!.id);
      assert.ok(junction!.internalLanes.includes(via.id) && junction!.incomingLanes.includes(from.id));
      // The lanes touch: incoming end = connecting start, connecting end = outgoing start.
      const gap = (a: number[], b: number[]): number => Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!);
      assert.ok(gap(from.centerLine.at(-1)!, via.centerLine[0]!) < 0.05, `${c.fromLane} -> ${c.via}`);
      assert.ok(gap(via.centerLine.at(-1)!, to.centerLine[0]!) < 0.05, `${c.via} -> ${c.toLane}`);
    }
    const directions = new Set(network.connections.map((c) => c.direction));
    assert.ok(directions.has('l') && directions.has('r') && directions.has('s'), [...directions].join());
  });

  it('fabriksgatan_traffic_lights: dynamic signals become traffic lights that control links', () => {
    const source = text(fixture('esmini', 'xodr', 'fabriksgatan_traffic_lights.xodr'));
    const { network } = readOpenDrive(source);
    const dynamic = [...source.matchAll(/<signal\s[^>]*dynamic="yes"[^>]*>/g)];
    assert.equal(network.trafficLights.length, dynamic.length);
    const light = network.trafficLights.find((l) => l.id === '1')!;
    assert.equal(light.signals[0]!.s, 109);
    assert.equal(light.signals[0]!.t, -4);
    assert.ok(light.signals[0]!.lanes.length > 0);
    const controlled = network.connections.filter((c) => c.trafficLight !== undefined);
    assert.ok(controlled.length > 0);
    for (const c of controlled) assert.ok(Number.isInteger(c.linkIndex));
  });
});

/** A one-road map to break in the bad-input tests. */
const TINY = `<?xml version="1.0"?>
<OpenDRIVE>
  <header revMajor="1" revMinor="6"><offset x="1" y="2" z="0" hdg="0"/></header>
  <road id="r" length="100" junction="-1">
    <link><successor elementType="road" elementId="s" contactPoint="start"/></link>
    <planView>
      <geometry s="0" x="0" y="0" hdg="0" length="100"><line/></geometry>
    </planView>
    <lanes>
      <laneSection s="0">
        <center><lane id="0" type="none"/></center>
        <right><lane id="-1" type="driving"><link><successor id="-1"/></link><width sOffset="0" a="3.5" b="0" c="0" d="0"/><speed sOffset="0" max="50" unit="km/h"/></lane></right>
      </laneSection>
    </lanes>
  </road>
  <road id="s" length="50" junction="-1">
    <link><predecessor elementType="road" elementId="r" contactPoint="end"/></link>
    <type s="0" type="town"><speed max="30" unit="mph"/></type>
    <planView>
      <geometry s="0" x="100" y="0" hdg="0" length="50"><arc curvature="0.01"/></geometry>
    </planView>
    <lanes>
      <laneOffset s="0" a="0.5" b="0" c="0" d="0"/>
      <laneSection s="0">
        <center><lane id="0" type="none"/></center>
        <right><lane id="-1" type="driving"><width sOffset="0" a="3.5" b="0" c="0" d="0"/></lane></right>
      </laneSection>
    </lanes>
  </road>
</OpenDRIVE>`;

describe('OpenDRIVE reader on a hand-made map and on bad input', () => {
  it('links roads directly, converts speed units, applies lane offsets, keeps the offset', () => {
    const { network, warnings } = readOpenDrive(TINY);
    assert.deepEqual(warnings, []);
    assert.deepEqual(network.connections, [{ fromLane: 'r_0_-1', toLane: 's_0_-1', direction: 's' }]);
    const [r, s] = network.lanes;
    assert.ok(Math.abs(r!.speedLimit! - 50 / 3.6) < 1e-9);
    assert.ok(Math.abs(s!.speedLimit! - 30 * 0.44704) < 1e-9);
    assert.deepEqual(
      s!.centerLine[0],
      [100, -1.25, 0],
      'offset 0.5 m to the left, then half of 3.5 m to the right',
    );
    assert.deepEqual(network.geoReference, { offset: { x: 1, y: 2, z: 0, heading: 0 } });
    assert.equal(network.version, '1.6');
  });

  it('an unknown geometry type: names the geometry and its line', () => {
    const bad = TINY.replace('<arc curvature="0.01"/>', '<clothoid curvature="0.01"/>');
    assertInvalid(
      () => readOpenDrive(bad, { file: 'm.xodr' }),
      new RegExp(
        `^m\\.xodr: <geometry> \\(line ${lineOf(bad, '<clothoid')}\\): unknown geometry type <clothoid>`,
      ),
    );
  });

  it('a missing attribute, a bad number, malformed XML, a bad resolution', () => {
    assertInvalid(
      () => readOpenDrive(TINY.replace(' hdg="0" length="50"', ' length="50"')),
      new RegExp(
        `<geometry> \\(line ${lineOf(TINY, '<arc')}\\) attribute hdg: required attribute is missing`,
      ),
    );
    assertInvalid(
      () => readOpenDrive(TINY.replace('curvature="0.01"', 'curvature="1/100"')),
      new RegExp(
        `<arc> \\(line ${lineOf(TINY, '<arc')}\\) attribute curvature: expected a number, got "1/100"`,
      ),
    );
    assertInvalid(
      () => readOpenDrive(TINY.replace('</planView>', '</planview>')),
      new RegExp(`malformed XML: .*\\(line ${lineOf(TINY, '</planView>')}, column \\d+\\)`),
    );
    assertInvalid(() => readOpenDrive(TINY, { resolution: 0 }), /resolution: expected a positive number/);
    assertInvalid(
      () =>
        readOpenDrive(
          TINY.replace('<lane id="-1" type="driving"><width', '<lane id="1" type="driving"><width'),
        ),
      new RegExp(
        `<lane id="1"> \\(line ${lineOf(TINY, '<lane id="-1" type="driving"><width')}\\) attribute id: lane 1 is on the wrong side`,
      ),
    );
  });

  it('a link to a lane that does not exist is a warning naming the element; strict makes it an error', () => {
    const bad = TINY.replace('<successor id="-1"/>', '<successor id="-4"/>');
    const { network, warnings } = readOpenDrive(bad, { file: 'm.xodr' });
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      new RegExp(
        `^m\\.xodr: <lane id="-1"> \\(line ${lineOf(bad, '<successor id="-4"')}\\): lane link to lane -4 of road "s", which has no such lane there`,
      ),
    );
    assert.equal(network.connections.length, 0);
    assertInvalid(() => readOpenDrive(bad, { strict: true }), /lane link to lane -4/);
  });
});

describe('format detection and lane lookup', () => {
  it('tells SUMO from OpenDRIVE by content, past comments that contain tags', () => {
    const sumo = text(fixture('esmini', 'sumo', 'straight.net.xml'));
    assert.match(sumo, /<!--[\s\S]*<configuration/, 'the fixture has a tag inside its header comment');
    assert.equal(detectRoadNetworkFormat(sumo), 'sumo');
    assert.equal(detectRoadNetworkFormat(`\uFEFF<!-- <net> -->\n<OpenDRIVE/>`), 'opendrive');
    assert.equal(detectRoadNetworkFormat('<osm version="0.6"/>'), undefined);
    assert.equal(readRoadNetwork(TINY).network.format, 'opendrive');
    assertInvalid(() => readRoadNetwork('{"a": 1}', { file: 'x.json' }), /^x\.json: not a road network/);
  });

  it("finds a point's lane, s and t, and the lanes near it", () => {
    const { network } = readSumoNet(text(fixture('esmini', 'sumo', 'straight.net.xml')));
    const index = LaneIndex.build(network);
    // Lane -1.0.00_0 runs east along y = -1.58; 1.0.00_0 runs west along y = 1.58.
    const east = index.locate(250, -1.0)!;
    assert.equal(east.lane.id, '-1.0.00_0');
    assert.ok(Math.abs(east.s - 250) < 1e-9 && Math.abs(east.t - 0.58) < 1e-9, `${east.s} ${east.t}`);
    // Facing west, north is to the right.
    const west = index.locate(100, 2.0)!;
    assert.equal(west.lane.id, '1.0.00_0');
    assert.ok(Math.abs(west.s - 400) < 1e-9 && Math.abs(west.t + 0.42) < 1e-9, `${west.s} ${west.t}`);
    assert.deepEqual(
      index
        .lanesNear(250, 0, 2)
        .map((p) => p.lane.id)
        .sort(),
      ['-1.0.00_0', '1.0.00_0'],
    );
    assert.equal(index.locate(250, 10), undefined);
    assert.deepEqual(index.lanesNear(250, 10, 2), []);
  });

  it('uses per-point widths of OpenDRIVE lanes', () => {
    const { network } = readOpenDrive(text(fixture('esmini', 'xodr', 'fabriksgatan.xodr')));
    const index = LaneIndex.build(network, { functions: ['normal'] });
    const lane = network.lanes.find((l) => l.function === 'normal' && l.type === 'driving')!;
    const [x, y] = lane.centerLine[10]!;
    const found = index.locate(x, y)!;
    assert.equal(found.lane.id, lane.id);
    assert.ok(Math.abs(found.t) < 1e-6);
  });
});
