import { describeValue, invalid } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import {
  boundsOf,
  LANE_MARK_TYPES,
  networkLines,
  polylineLength,
  type Connection,
  type ConnectionDirection,
  type GeoReference,
  type Junction,
  type LaneMark,
  type LaneMarkType,
  type RoadEdge,
  type RoadLane,
  type RoadNetwork,
  type RoadPoint,
  type TrafficLight,
  type TrafficSignal,
} from '../../model/roadnet.js';
import {
  childNamed,
  childrenNamed,
  XmlSource,
  type ReadOptions,
  type ReadResult,
  type XmlElement,
} from '../xml/xml-source.js';
import { convexHull } from './convex-hull.js';
import {
  arc,
  cubicAt,
  line,
  paramPoly3,
  poly3,
  recordAt,
  ReferenceLine,
  spiral,
  type Cubic,
  type GeometryRecord,
  type Pose,
} from './reference-line.js';

export interface OpenDriveReadOptions extends ReadOptions {
  /** Metres between samples along each road (default 0.5). */
  resolution?: number;
}

export const DEFAULT_RESOLUTION = 0.5;

type ContactPoint = 'start' | 'end';

interface LinkRef {
  type: 'road' | 'junction';
  id: string;
  contactPoint?: ContactPoint;
  element: XmlElement;
}

interface OdrLane {
  id: number;
  element: XmlElement;
  type: string;
  widths: Cubic[];
  borders: Cubic[];
  predecessor?: number;
  successor?: number;
  speed?: number;
  /** Travels towards increasing s. */
  forward: boolean;
  model?: RoadLane;
}

interface OdrSection {
  index: number;
  s0: number;
  s1: number;
  /** Innermost first (ids 1, 2, ... and -1, -2, ...). */
  left: OdrLane[];
  right: OdrLane[];
  center: OdrLane | undefined;
  byId: Map<number, OdrLane>;
}

interface OdrRoad {
  id: string;
  element: XmlElement;
  length: number;
  junction: string | undefined;
  ref: ReferenceLine;
  elevation: Cubic[];
  superelevation: Cubic[];
  laneOffset: Cubic[];
  sections: OdrSection[];
  predecessor?: LinkRef;
  successor?: LinkRef;
  speeds: { s: number; speed: number }[];
}

/** The lateral position of every lane border of a section at one s: outer borders, innermost lane first. */
interface Cut {
  pose: Pose;
  z: number;
  superelevation: number;
  offset: number;
  left: number[];
  right: number[];
}

const SPEED_UNITS: Record<string, number> = { 'm/s': 1, 'km/h': 1 / 3.6, mph: 0.44704 };

const laneId = (road: string, section: number, lane: number): string => `${road}_${section}_${lane}`;

function speedOf(source: XmlSource, element: XmlElement | undefined): number | undefined {
  if (!element) return undefined;
  const max = element.attrs.max;
  // OpenDRIVE writes "no limit" and "undefined" as well as numbers.
  if (max === undefined || !Number.isFinite(Number(max))) return undefined;
  const unit = element.attrs.unit ?? 'm/s';
  const factor = SPEED_UNITS[unit];
  if (factor === undefined)
    throw source.error(
      element,
      'unit',
      `expected one of ${Object.keys(SPEED_UNITS).join(', ')}, got ${describeValue(unit)}`,
    );
  return Number(max) * factor;
}

function readCubic(source: XmlSource, element: XmlElement, sName: string): Cubic {
  return {
    s: source.number(element, sName),
    a: source.number(element, 'a'),
    b: source.number(element, 'b', 0),
    c: source.number(element, 'c', 0),
    d: source.number(element, 'd', 0),
  };
}

const bySOrder = <T extends { s: number }>(records: T[]): T[] => records.sort((a, b) => a.s - b.s);

function readGeometry(source: XmlSource, element: XmlElement): GeometryRecord {
  const s = source.number(element, 's');
  const x = source.number(element, 'x');
  const y = source.number(element, 'y');
  const hdg = source.number(element, 'hdg');
  const length = source.number(element, 'length');
  if (length < 0) throw source.error(element, 'length', `expected >= 0, got ${length}`);
  const kind = element.children[0];
  if (!kind)
    throw source.error(
      element,
      undefined,
      'geometry has no type (expected <line>, <arc>, <spiral>, <poly3> or <paramPoly3>)',
    );
  switch (kind.tag) {
    case 'line':
      return line(x, y, hdg, s, length);
    case 'arc':
      return arc(x, y, hdg, s, length, source.number(kind, 'curvature'));
    case 'spiral':
      return spiral(x, y, hdg, s, length, source.number(kind, 'curvStart'), source.number(kind, 'curvEnd'));
    case 'poly3':
      return poly3(x, y, hdg, s, length, {
        a: source.number(kind, 'a'),
        b: source.number(kind, 'b'),
        c: source.number(kind, 'c'),
        d: source.number(kind, 'd'),
      });
    case 'paramPoly3': {
      const pRange = kind.attrs.pRange ?? 'normalized';
      if (pRange !== 'normalized' && pRange !== 'arcLength')
        throw source.error(kind, 'pRange', `expected normalized or arcLength, got ${describeValue(pRange)}`);
      const n = (name: string): number => source.number(kind, name);
      return paramPoly3(x, y, hdg, s, length, {
        aU: n('aU'),
        bU: n('bU'),
        cU: n('cU'),
        dU: n('dU'),
        aV: n('aV'),
        bV: n('bV'),
        cV: n('cV'),
        dV: n('dV'),
        pRange,
      });
    }
    default:
      throw source.error(
        element,
        undefined,
        `unknown geometry type <${kind.tag}> (expected line, arc, spiral, poly3 or paramPoly3)`,
      );
  }
}

function readLink(source: XmlSource, element: XmlElement | undefined): LinkRef | undefined {
  if (!element) return undefined;
  const type = element.attrs.elementType ?? 'road';
  if (type !== 'road' && type !== 'junction')
    throw source.error(element, 'elementType', `expected road or junction, got ${describeValue(type)}`);
  const link: LinkRef = { type, id: source.required(element, 'elementId'), element };
  const contact = element.attrs.contactPoint;
  if (contact !== undefined) {
    if (contact !== 'start' && contact !== 'end')
      throw source.error(element, 'contactPoint', `expected start or end, got ${describeValue(contact)}`);
    link.contactPoint = contact;
  }
  return link;
}

function readLane(source: XmlSource, element: XmlElement, leftHand: boolean): OdrLane {
  const id = source.number(element, 'id');
  if (!Number.isInteger(id))
    throw source.error(element, 'id', `expected an integer, got ${describeValue(element.attrs.id)}`);
  const laneLink = childNamed(element, 'link');
  const lane: OdrLane = {
    id,
    element,
    type: element.attrs.type ?? 'none',
    widths: bySOrder(childrenNamed(element, 'width').map((w) => readCubic(source, w, 'sOffset'))),
    borders: bySOrder(childrenNamed(element, 'border').map((w) => readCubic(source, w, 'sOffset'))),
    // Right-hand traffic drives the right lanes (negative ids) along the reference line.
    forward: id < 0 !== leftHand,
  };
  const direction = element.attrs.direction;
  if (direction === 'reversed') lane.forward = !lane.forward;
  for (const end of ['predecessor', 'successor'] as const) {
    const link = laneLink && childNamed(laneLink, end);
    if (link) {
      const target = source.number(link, 'id');
      if (!Number.isInteger(target))
        throw source.error(link, 'id', `expected a lane id, got ${describeValue(link.attrs.id)}`);
      lane[end] = target;
    }
  }
  const speed = speedOf(source, childNamed(element, 'speed'));
  if (speed !== undefined) lane.speed = speed;
  if (id !== 0 && lane.widths.length === 0 && lane.borders.length === 0)
    source.warn(element, 'lane has no <width> or <border>; taken as 0 m wide');
  return lane;
}

function readRoad(source: XmlSource, element: XmlElement): OdrRoad {
  const id = source.required(element, 'id');
  const length = source.number(element, 'length');
  if (!(length > 0)) throw source.error(element, 'length', `expected > 0, got ${length}`);
  const junctionAttr = element.attrs.junction ?? '-1';
  const leftHand = element.attrs.rule === 'LHT';
  const planView = childNamed(element, 'planView');
  if (!planView) throw source.error(element, undefined, 'road has no <planView>');
  const records = bySOrder(childrenNamed(planView, 'geometry').map((g) => readGeometry(source, g)));
  if (records.length === 0) throw source.error(planView, undefined, 'planView has no <geometry>');
  const last = records[records.length - 1]!;
  const planLength = last.s + last.length - records[0]!.s;
  if (Math.abs(planLength - length) > 0.01 * length + 0.01)
    source.warn(
      element,
      `attribute length: ${length} m, but its geometry records add up to ${planLength.toFixed(3)} m`,
    );
  const link = childNamed(element, 'link');
  const road: OdrRoad = {
    id,
    element,
    length,
    junction: junctionAttr === '-1' ? undefined : junctionAttr,
    ref: new ReferenceLine(records),
    elevation: bySOrder(
      childrenNamed(childNamed(element, 'elevationProfile') ?? element, 'elevation').map((e) =>
        readCubic(source, e, 's'),
      ),
    ),
    superelevation: bySOrder(
      childrenNamed(childNamed(element, 'lateralProfile') ?? element, 'superelevation').map((e) =>
        readCubic(source, e, 's'),
      ),
    ),
    laneOffset: [],
    sections: [],
    speeds: childrenNamed(element, 'type')
      .map((t) => ({ s: source.number(t, 's', 0), speed: speedOf(source, childNamed(t, 'speed')) }))
      .filter((t): t is { s: number; speed: number } => t.speed !== undefined),
  };
  const predecessor = readLink(source, link && childNamed(link, 'predecessor'));
  if (predecessor) road.predecessor = predecessor;
  const successor = readLink(source, link && childNamed(link, 'successor'));
  if (successor) road.successor = successor;

  const lanes = childNamed(element, 'lanes');
  if (!lanes) throw source.error(element, undefined, 'road has no <lanes>');
  road.laneOffset = bySOrder(childrenNamed(lanes, 'laneOffset').map((e) => readCubic(source, e, 's')));
  const sectionElements = childrenNamed(lanes, 'laneSection')
    .map((e) => ({ e, s: source.number(e, 's') }))
    .sort((a, b) => a.s - b.s);
  if (sectionElements.length === 0) throw source.error(lanes, undefined, 'lanes has no <laneSection>');
  sectionElements.forEach(({ e, s }, index) => {
    const s1 = sectionElements[index + 1]?.s ?? length;
    const side = (name: string): OdrLane[] => {
      const container = childNamed(e, name);
      return container ? childrenNamed(container, 'lane').map((l) => readLane(source, l, leftHand)) : [];
    };
    const left = side('left').sort((a, b) => a.id - b.id);
    const right = side('right').sort((a, b) => b.id - a.id);
    const center = side('center')[0];
    const byId = new Map<number, OdrLane>();
    for (const lane of [...left, ...right, ...(center ? [center] : [])]) {
      if (byId.has(lane.id))
        throw source.error(lane.element, 'id', `lane ${lane.id} appears twice in this laneSection`);
      if ((left.includes(lane) && lane.id <= 0) || (right.includes(lane) && lane.id >= 0))
        throw source.error(
          lane.element,
          'id',
          `lane ${lane.id} is on the wrong side (left lanes are > 0, right lanes < 0)`,
        );
      byId.set(lane.id, lane);
    }
    if (s1 - s < 1e-9) source.warn(e, `attribute s: the laneSection is empty (${s} to ${s1}); left out`);
    else road.sections.push({ index: road.sections.length, s0: s, s1, left, right, center, byId });
  });
  return road;
}

function cutAt(road: OdrRoad, section: OdrSection, s: number): Cut {
  const offset = cubicAt(road.laneOffset, s);
  const ds = s - section.s0;
  const side = (lanes: OdrLane[], sign: number): number[] => {
    const outer: number[] = [];
    let t = offset;
    for (const lane of lanes) {
      // A lane defined by its outer border (OpenDRIVE <border>) rather than by its width.
      if (lane.widths.length === 0 && lane.borders.length > 0)
        t = offset + sign * Math.abs(cubicAt(lane.borders, ds));
      else t += sign * cubicAt(lane.widths, ds);
      outer.push(t);
    }
    return outer;
  };
  return {
    pose: road.ref.pose(s),
    z: cubicAt(road.elevation, s),
    superelevation: cubicAt(road.superelevation, s),
    offset,
    left: side(section.left, 1),
    right: side(section.right, -1),
  };
}

function pointAt(cut: Cut, t: number): RoadPoint {
  const horizontal = t * Math.cos(cut.superelevation);
  return [
    cut.pose.x - Math.sin(cut.pose.hdg) * horizontal,
    cut.pose.y + Math.cos(cut.pose.hdg) * horizontal,
    cut.z + t * Math.sin(cut.superelevation),
  ];
}

/** Inner and outer border t of a lane in a cut. */
function bordersOf(cut: Cut, section: OdrSection, lane: OdrLane): [number, number] {
  if (lane.id === 0) return [cut.offset, cut.offset];
  const [list, ts] = lane.id > 0 ? [section.left, cut.left] : [section.right, cut.right];
  const k = list.indexOf(lane);
  return [k === 0 ? cut.offset : ts[k - 1]!, ts[k]!];
}

function stations(s0: number, s1: number, resolution: number): number[] {
  const n = Math.max(1, Math.ceil((s1 - s0) / resolution - 1e-9));
  const result: number[] = [];
  for (let i = 0; i <= n; i++) result.push(s0 + ((s1 - s0) * i) / n);
  return result;
}

/**
 * Sampled points are kept to 0.1 mm: finer digits are noise, and they bloat the stored JSON. `+ 0`
 * drops negative zero, which JSON cannot carry.
 */
const round = (p: RoadPoint): RoadPoint => {
  const r = (c: number): number => Math.round(c * 1e4) / 1e4 + 0;
  return p.length === 3 ? [r(p[0]), r(p[1]), r(p[2])] : [r(p[0]), r(p[1])];
};

function markType(raw: string): { type: LaneMarkType; custom: boolean } | undefined {
  const normalized = raw.trim().toLowerCase().replace(/\s+/g, '_');
  if (normalized === 'none') return undefined;
  if ((LANE_MARK_TYPES as readonly string[]).includes(normalized))
    return { type: normalized as LaneMarkType, custom: false };
  return { type: 'custom', custom: true };
}

function headingAtEnd(line: RoadPoint[], atStart: boolean): number {
  const [a, b] = atStart
    ? [line[0]!, line[1] ?? line[0]!]
    : [line[line.length - 2] ?? line[0]!, line[line.length - 1]!];
  return Math.atan2(b[1] - a[1], b[0] - a[0]);
}

/** SUMO's direction letters from the turn angle between the end of one lane and the start of the next. */
function directionOf(from: RoadPoint[], to: RoadPoint[]): ConnectionDirection {
  let angle = headingAtEnd(to, true) - headingAtEnd(from, false);
  while (angle > Math.PI) angle -= 2 * Math.PI;
  while (angle <= -Math.PI) angle += 2 * Math.PI;
  const degrees = (angle * 180) / Math.PI;
  if (Math.abs(degrees) <= 15) return 's';
  if (Math.abs(degrees) >= 150) return 't';
  return degrees > 0 ? 'l' : 'r';
}

/**
 * Reads an OpenDRIVE `.xodr` into the road-network model. Reference lines (line, arc, spiral, poly3,
 * paramPoly3) with elevation, superelevation and lane offsets are sampled every `resolution` metres;
 * each lane section's lanes become lanes of one edge per side, connecting roads become internal
 * lanes, road marks become lane marks, and dynamic signals become traffic lights.
 */
export function readOpenDrive(text: string, options: OpenDriveReadOptions = {}): ReadResult<RoadNetwork> {
  const resolution = options.resolution ?? DEFAULT_RESOLUTION;
  if (!Number.isFinite(resolution) || resolution <= 0)
    throw invalid(`resolution: expected a positive number of metres, got ${describeValue(resolution)}`);
  const source = new XmlSource(text, options);
  const root = source.parseRoot('OpenDRIVE');
  const header = childNamed(root, 'header');

  const roads = new Map<string, OdrRoad>();
  for (const element of childrenNamed(root, 'road')) {
    const road = readRoad(source, element);
    if (roads.has(road.id))
      throw source.error(element, 'id', `road ${JSON.stringify(road.id)} is declared twice`);
    roads.set(road.id, road);
  }
  const junctionElements = new Map<string, XmlElement>();
  for (const element of childrenNamed(root, 'junction')) {
    const id = source.required(element, 'id');
    if (junctionElements.has(id))
      throw source.error(element, 'id', `junction ${JSON.stringify(id)} is declared twice`);
    junctionElements.set(id, element);
  }

  const lanes: RoadLane[] = [];
  const edges: RoadEdge[] = [];
  const laneMarks: LaneMark[] = [];
  const borderPoints = new Map<string, RoadPoint[]>();

  for (const road of roads.values()) {
    if (road.junction !== undefined && !junctionElements.has(road.junction)) {
      source.warn(
        road.element,
        `attribute junction: no junction ${JSON.stringify(road.junction)}; read as an ordinary road`,
      );
      road.junction = undefined;
    }
    for (const section of road.sections) {
      const cuts = stations(section.s0, section.s1, resolution).map((s) => cutAt(road, section, s));
      for (const [sideName, list] of [
        ['right', section.right],
        ['left', section.left],
      ] as const) {
        if (list.length === 0) continue;
        const edge: RoadEdge = {
          id: `${road.id}_${section.index}_${sideName}`,
          function: road.junction === undefined ? 'normal' : 'internal',
          lanes: [],
        };
        const name = road.element.attrs.name;
        if (name) edge.name = name;
        for (const [index, lane] of [...list].reverse().entries()) {
          let centerLine: RoadPoint[] = [];
          let widths: number[] = [];
          const borders: RoadPoint[] = [];
          const inJunction = road.junction !== undefined;
          for (const cut of cuts) {
            const [tIn, tOut] = bordersOf(cut, section, lane);
            centerLine.push(round(pointAt(cut, (tIn + tOut) / 2)));
            widths.push(Math.round(Math.abs(tOut - tIn) * 1e4) / 1e4);
            // Only junction outlines need the borders.
            if (inJunction) borders.push(pointAt(cut, tIn), pointAt(cut, tOut));
          }
          if (!lane.forward) {
            centerLine = centerLine.reverse();
            widths = widths.reverse();
          }
          const model: RoadLane = {
            id: laneId(road.id, section.index, lane.id),
            edge: edge.id,
            index,
            function: road.junction === undefined ? 'normal' : 'internal',
            centerLine,
            width: widths.reduce((a, b) => a + b, 0) / widths.length,
            length: polylineLength(centerLine),
            type: lane.type,
            openDrive: { road: road.id, laneSection: section.index, lane: lane.id },
          };
          if (widths.some((w) => Math.abs(w - widths[0]!) > 1e-4)) model.widths = widths;
          const speed = lane.speed ?? recordAt(road.speeds, section.s0)?.speed;
          if (speed !== undefined) model.speedLimit = speed;
          if (road.junction !== undefined) {
            model.junction = road.junction;
            const points = borderPoints.get(road.junction) ?? [];
            for (const p of borders) points.push(p);
            borderPoints.set(road.junction, points);
          }
          lane.model = model;
          lanes.push(model);
          edge.lanes.push(model.id);
        }
        edges.push(edge);
      }
      for (const lane of [section.center, ...section.left, ...section.right]) {
        if (lane) laneMarks.push(...readRoadMarks(source, road, section, lane, resolution));
      }
    }
  }

  // Edges run between junctions only at a road's ends, where the road links to a junction.
  for (const edge of edges) {
    const [roadId, sectionIndex, side] = splitEdgeId(edge.id);
    const road = roads.get(roadId)!;
    if (road.junction !== undefined) continue;
    const forward =
      road.sections[sectionIndex]?.[side === 'right' ? 'right' : 'left'][0]?.forward ?? side === 'right';
    const first = sectionIndex === 0;
    const lastSection = sectionIndex === road.sections.length - 1;
    const start = first && road.predecessor?.type === 'junction' ? road.predecessor.id : undefined;
    const end = lastSection && road.successor?.type === 'junction' ? road.successor.id : undefined;
    const [from, to] = forward ? [start, end] : [end, start];
    if (from !== undefined && junctionElements.has(from)) edge.from = from;
    if (to !== undefined && junctionElements.has(to)) edge.to = to;
  }

  const connections: Connection[] = [];
  const junctions: Junction[] = [];
  for (const [id, element] of junctionElements)
    junctions.push(readJunction(source, id, element, roads, connections, borderPoints.get(id) ?? []));
  connections.push(...roadToRoadConnections(source, roads));

  const trafficLights = readTrafficLights(source, root, roads, connections);

  const network: RoadNetwork = {
    format: 'opendrive',
    edges,
    lanes,
    junctions,
    connections,
    trafficLights,
    laneMarks,
    boundary: boundsOf(networkLines({ lanes, laneMarks, junctions })),
    resolution,
    source: { format: 'opendrive', text },
  };
  if (header?.attrs.revMajor !== undefined)
    network.version = `${header.attrs.revMajor}.${header.attrs.revMinor ?? 0}`;
  const geo = readGeoReference(source, header);
  if (geo) network.geoReference = geo;
  return { network, warnings: source.warnings };
}

function splitEdgeId(id: string): [string, number, string] {
  const match = /^(.*)_(\d+)_(left|right)$/.exec(id)!;
  return [match[1]!, Number(match[2]), match[3]!];
}

function readGeoReference(source: XmlSource, header: XmlElement | undefined): GeoReference | undefined {
  if (!header) return undefined;
  const geo: GeoReference = {};
  const projection = childNamed(header, 'geoReference')?.text.trim();
  if (projection) geo.projection = projection;
  const offset = childNamed(header, 'offset');
  if (offset) {
    geo.offset = { x: source.number(offset, 'x', 0), y: source.number(offset, 'y', 0) };
    const z = source.number(offset, 'z', undefined);
    if (z !== undefined) geo.offset.z = z;
    const heading = source.number(offset, 'hdg', undefined);
    if (heading !== undefined) geo.offset.heading = heading;
  }
  return Object.keys(geo).length > 0 ? geo : undefined;
}

function readRoadMarks(
  source: XmlSource,
  road: OdrRoad,
  section: OdrSection,
  lane: OdrLane,
  resolution: number,
): LaneMark[] {
  const records = childrenNamed(lane.element, 'roadMark')
    .map((e) => ({ e, sOffset: source.number(e, 'sOffset', 0) }))
    .sort((a, b) => a.sOffset - b.sOffset);
  const marks: LaneMark[] = [];
  records.forEach(({ e, sOffset }, k) => {
    const kind = markType(e.attrs.type ?? 'none');
    if (!kind) return;
    const from = section.s0 + sOffset;
    const to = Math.min(section.s0 + (records[k + 1]?.sOffset ?? Infinity), section.s1);
    if (to - from < 1e-6) return;
    const shape = stations(from, to, resolution).map((s) => {
      const cut = cutAt(road, section, s);
      return round(pointAt(cut, bordersOf(cut, section, lane)[1]));
    });
    const mark: LaneMark = {
      id: `${laneId(road.id, section.index, lane.id)}_mark${k}`,
      type: kind.type,
      shape,
    };
    // The centre lane's mark is the left border of the innermost lane that runs along s.
    const owner = lane.id === 0 ? (section.right[0] ?? section.left[0]) : lane;
    if (owner?.model) {
      mark.lane = owner.model.id;
      mark.side = lane.id === 0 ? (owner.forward === owner.id < 0 ? 'left' : 'right') : 'right';
    }
    if (e.attrs.color !== undefined) mark.color = e.attrs.color;
    const width = source.number(e, 'width', undefined);
    if (width !== undefined) mark.width = width;
    const extra: JsonObject = {};
    for (const key of ['weight', 'laneChange', 'material', 'height'] as const)
      if (e.attrs[key] !== undefined) extra[key] = e.attrs[key]!;
    if (kind.custom) extra.type = e.attrs.type ?? '';
    if (Object.keys(extra).length > 0) mark.extra = extra;
    marks.push(mark);
  });
  return marks;
}

/** The section at a road's end: `start` is the first section, `end` the last. */
const sectionAt = (road: OdrRoad, contact: ContactPoint): OdrSection | undefined =>
  contact === 'start' ? road.sections[0] : road.sections[road.sections.length - 1];

/**
 * Follows a lane through its road's sections in its direction of travel to the section where it
 * leaves the road; returns that lane (or undefined where a lane link is missing).
 */
function laneAtExit(
  road: OdrRoad,
  section: OdrSection,
  lane: OdrLane,
): { section: OdrSection; lane: OdrLane } | undefined {
  let current: { section: OdrSection; lane: OdrLane } | undefined = { section, lane };
  for (let guard = 0; current && guard < road.sections.length; guard++) {
    const next: OdrSection | undefined =
      road.sections[current.section.index + (current.lane.forward ? 1 : -1)];
    if (!next) return current;
    const target: number | undefined = current.lane.forward
      ? current.lane.successor
      : current.lane.predecessor;
    const nextLane: OdrLane | undefined = target === undefined ? undefined : next.byId.get(target);
    current = nextLane ? { section: next, lane: nextLane } : undefined;
  }
  return current;
}

function readJunction(
  source: XmlSource,
  id: string,
  element: XmlElement,
  roads: Map<string, OdrRoad>,
  connections: Connection[],
  borders: RoadPoint[],
): Junction {
  const incoming = new Set<string>();
  const internal = new Set<string>();
  for (const c of childrenNamed(element, 'connection')) {
    const incomingId = c.attrs.incomingRoad;
    const connectingId = c.attrs.connectingRoad ?? c.attrs.linkedRoad;
    if (incomingId === undefined) throw source.error(c, 'incomingRoad', 'required attribute is missing');
    if (connectingId === undefined) throw source.error(c, 'connectingRoad', 'required attribute is missing');
    const incomingRoad = roads.get(incomingId);
    const connecting = roads.get(connectingId);
    if (!incomingRoad || !connecting) {
      const [attribute, missing] = incomingRoad
        ? ['connectingRoad', connectingId]
        : ['incomingRoad', incomingId];
      source.warn(
        c,
        `attribute ${attribute}: no road ${JSON.stringify(missing)}; the connection is left out`,
      );
      continue;
    }
    const contact = (c.attrs.contactPoint ?? 'start') as ContactPoint;
    if (contact !== 'start' && contact !== 'end')
      throw source.error(
        c,
        'contactPoint',
        `expected start or end, got ${describeValue(c.attrs.contactPoint)}`,
      );
    const incomingEnd: ContactPoint | undefined =
      incomingRoad.successor?.type === 'junction' && incomingRoad.successor.id === id
        ? 'end'
        : incomingRoad.predecessor?.type === 'junction' && incomingRoad.predecessor.id === id
          ? 'start'
          : undefined;
    if (!incomingEnd) {
      source.warn(
        c,
        `attribute incomingRoad: road ${JSON.stringify(incomingId)} does not link to junction ${JSON.stringify(id)}; the connection is left out`,
      );
      continue;
    }
    const fromSection = sectionAt(incomingRoad, incomingEnd)!;
    const viaSection = sectionAt(connecting, contact)!;
    for (const link of childrenNamed(c, 'laneLink')) {
      const fromId = source.number(link, 'from');
      const toId = source.number(link, 'to');
      const fromLane = fromSection.byId.get(fromId);
      const viaLane = viaSection.byId.get(toId);
      if (!fromLane?.model || !viaLane?.model) {
        const [attribute, road, lane] = !fromLane?.model
          ? ['from', incomingId, fromId]
          : ['to', connectingId, toId];
        source.warn(
          link,
          `attribute ${attribute}: road ${JSON.stringify(road)} has no lane ${lane} at the junction; the link is left out`,
        );
        continue;
      }
      const exit = laneAtExit(connecting, viaSection, viaLane);
      const toLane = exit && nextLaneAfter(source, roads, connecting, exit.section, exit.lane);
      if (!toLane) {
        source.warn(
          link,
          `lane ${toId} of connecting road ${JSON.stringify(connectingId)} leads to no lane; the link is left out`,
        );
        continue;
      }
      incoming.add(fromLane.model.id);
      for (const lane of connecting.sections.flatMap((s) => [...s.left, ...s.right]))
        if (lane.model) internal.add(lane.model.id);
      connections.push({
        fromLane: fromLane.model.id,
        toLane: toLane.id,
        via: viaLane.model.id,
        direction: directionOf(fromLane.model.centerLine, toLane.centerLine),
      });
    }
  }
  const outline = convexHull(borders).map(round);
  const junction: Junction = { id, outline, incomingLanes: [...incoming], internalLanes: [...internal] };
  if (element.attrs.type !== undefined) junction.type = element.attrs.type;
  if (element.attrs.name) junction.name = element.attrs.name;
  if (outline.length > 0) {
    const cx = outline.reduce((a, p) => a + p[0], 0) / outline.length;
    const cy = outline.reduce((a, p) => a + p[1], 0) / outline.length;
    junction.position = round([cx, cy]);
  }
  return junction;
}

/** The lane a lane leads into when it leaves its road at `section` (through the road's link). */
function nextLaneAfter(
  source: XmlSource,
  roads: Map<string, OdrRoad>,
  road: OdrRoad,
  section: OdrSection,
  lane: OdrLane,
): RoadLane | undefined {
  const [roadLink, laneLink] = lane.forward
    ? [road.successor, lane.successor]
    : [road.predecessor, lane.predecessor];
  if (!roadLink || roadLink.type !== 'road' || laneLink === undefined) return undefined;
  const next = roads.get(roadLink.id);
  if (!next) {
    source.warn(roadLink.element, `attribute elementId: no road ${JSON.stringify(roadLink.id)}`);
    return undefined;
  }
  const nextSection = sectionAt(next, roadLink.contactPoint ?? 'start');
  const target = nextSection?.byId.get(laneLink);
  if (!target?.model) {
    source.warn(
      lane.element,
      `lane link to lane ${laneLink} of road ${JSON.stringify(next.id)}, which has no such lane there`,
    );
    return undefined;
  }
  void section;
  return target.model;
}

/**
 * Links that need no junction: from one lane section to the next, and from a road to a road it links
 * to directly. Connecting roads are left to their junctions.
 */
function roadToRoadConnections(source: XmlSource, roads: Map<string, OdrRoad>): Connection[] {
  const connections: Connection[] = [];
  for (const road of roads.values()) {
    if (road.junction !== undefined) continue;
    for (const section of road.sections)
      for (const lane of [...section.left, ...section.right]) {
        if (!lane.model) continue;
        const nextSection = road.sections[section.index + (lane.forward ? 1 : -1)];
        let target: RoadLane | undefined;
        if (nextSection) {
          const id = lane.forward ? lane.successor : lane.predecessor;
          if (id === undefined) continue;
          target = nextSection.byId.get(id)?.model;
          if (!target) {
            source.warn(
              lane.element,
              `lane link to lane ${id} of the next laneSection of road ${JSON.stringify(road.id)}, which has no such lane`,
            );
            continue;
          }
        } else {
          const link = lane.forward ? road.successor : road.predecessor;
          if (link?.type !== 'road' || roads.get(link.id)?.junction !== undefined) continue;
          target = nextLaneAfter(source, roads, road, section, lane);
          if (!target) continue;
        }
        connections.push({
          fromLane: lane.model.id,
          toLane: target.id,
          direction: directionOf(lane.model.centerLine, target.centerLine),
        });
      }
  }
  return connections;
}

/**
 * Dynamic signals become traffic lights: one per `<controller>`, and one per signal no controller
 * names. A light controls the connections that leave the lanes its signals govern.
 */
function readTrafficLights(
  source: XmlSource,
  root: XmlElement,
  roads: Map<string, OdrRoad>,
  connections: Connection[],
): TrafficLight[] {
  const signals = new Map<
    string,
    { signal: TrafficSignal; governs: { road: OdrRoad; section: OdrSection; lane: OdrLane }[] }
  >();
  for (const road of roads.values())
    for (const container of childrenNamed(road.element, 'signals'))
      for (const element of childrenNamed(container, 'signal')) {
        if (element.attrs.dynamic !== 'yes') continue;
        const id = source.required(element, 'id');
        const s = Math.min(Math.max(source.number(element, 's'), 0), road.length);
        const t = source.number(element, 't');
        const section = recordAt(
          road.sections.map((x) => ({ ...x, s: x.s0 })),
          s,
        );
        if (!section) continue;
        const sec = road.sections[section.index]!;
        const cut = cutAt(road, sec, s);
        const orientation = element.attrs.orientation ?? 'none';
        const [x, y, z] = pointAt(cut, t) as [number, number, number];
        // A '+' signal governs traffic along s and so faces against it.
        const facing =
          cut.pose.hdg + source.number(element, 'hOffset', 0) + (orientation === '-' ? 0 : Math.PI);
        const validity = childrenNamed(element, 'validity');
        const governed = [...sec.left, ...sec.right].filter((lane) => {
          if (
            lane.type === 'border' ||
            lane.type === 'shoulder' ||
            lane.type === 'none' ||
            lane.type === 'median'
          )
            return false;
          if (validity.length > 0)
            return validity.some((v) => {
              const a = source.number(v, 'fromLane');
              const b = source.number(v, 'toLane');
              return lane.id >= Math.min(a, b) && lane.id <= Math.max(a, b);
            });
          if (orientation === '+') return lane.forward;
          if (orientation === '-') return !lane.forward;
          return true;
        });
        const signal: TrafficSignal = {
          id,
          position: round([x, y, z + source.number(element, 'zOffset', 0)]),
          heading: Math.atan2(Math.sin(facing), Math.cos(facing)) + 0,
          road: road.id,
          s,
          t,
          lanes: governed.flatMap((lane) => (lane.model ? [lane.model.id] : [])),
        };
        if (element.attrs.type !== undefined) signal.type = element.attrs.type;
        if (element.attrs.subtype !== undefined) signal.subtype = element.attrs.subtype;
        if (element.attrs.name) signal.name = element.attrs.name;
        if (signals.has(id))
          throw source.error(element, 'id', `signal ${JSON.stringify(id)} is declared twice`);
        signals.set(id, { signal, governs: governed.map((lane) => ({ road, section: sec, lane })) });
      }

  const lights: TrafficLight[] = [];
  const claimed = new Set<string>();
  for (const controller of childrenNamed(root, 'controller')) {
    const light: TrafficLight = { id: source.required(controller, 'id'), programs: [], signals: [] };
    if (controller.attrs.name) light.name = controller.attrs.name;
    for (const control of childrenNamed(controller, 'control')) {
      const signalId = source.required(control, 'signalId');
      const entry = signals.get(signalId);
      if (!entry) {
        source.warn(control, `attribute signalId: no dynamic signal ${JSON.stringify(signalId)}`);
        continue;
      }
      claimed.add(signalId);
      light.signals.push(entry.signal);
    }
    lights.push(light);
  }
  for (const [id, entry] of signals)
    if (!claimed.has(id)) {
      const light: TrafficLight = { id, programs: [], signals: [entry.signal] };
      if (entry.signal.name) light.name = entry.signal.name;
      if (lights.some((l) => l.id === id))
        source.warn(undefined, `signal ${JSON.stringify(id)} has the id of a controller; it is left out`);
      else lights.push(light);
    }

  for (const light of lights) {
    let linkIndex = 0;
    const exits = new Set<string>();
    for (const signal of light.signals)
      for (const { road, section, lane } of signals.get(signal.id)!.governs) {
        const exit = laneAtExit(road, section, lane);
        if (exit?.lane.model) exits.add(exit.lane.model.id);
      }
    for (const connection of connections)
      if (
        exits.has(connection.fromLane) &&
        connection.via !== undefined &&
        connection.trafficLight === undefined
      ) {
        connection.trafficLight = light.id;
        connection.linkIndex = linkIndex++;
      }
  }
  return lights;
}
