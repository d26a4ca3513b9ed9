import type { JsonObject } from '../../../model/json.js';
import {
  boundsOf,
  networkLines,
  polylineLength,
  type Connection,
  type GeoReference,
  type LaneMark,
  type LaneMarkType,
  type RoadEdge,
  type RoadLane,
  type RoadNetwork,
  type RoadPoint,
} from '../../../model/roadnet.js';
import { SIMREC_REFERENCE_TYPE } from './osi-ground-truth.js';

/*
 * The lanes and lane boundaries of an ASAM OSI ground truth as the run's road network, whichever file
 * the trace comes from (an MCAP trace, read-mcap.ts, or a .osi trace file, ../osi). OSI sends the road
 * either in every message (the example traces of asam-osi-converter, simrec's own export) or only in
 * the first (esmini, by default): each lane and boundary is taken the first time its id appears.
 *
 * OSI has lanes, not roads: a lane is a centre line with the boundaries on its left and right, its
 * adjacent lanes and the lanes before and after it. simrec's model groups lanes into edges, numbered
 * from the right; here the lanes adjacent to each other and driving the same way are an edge. Left,
 * right, before and after are OSI's along the centre line; a lane whose centre line runs against its
 * driving direction (centerline_is_driving_direction false) is turned round, as simrec's centre lines
 * run in the direction of travel.
 */

/** OSI's enums come by name (from the trace's own schema) or by number (older readers, unknown values). */
type OsiEnum = string | number;
interface OsiId {
  value?: number;
}
interface OsiVector {
  x?: number;
  y?: number;
  z?: number;
}
interface OsiReference {
  type?: string;
  identifier?: string[];
}
export interface OsiLane {
  id?: OsiId | null;
  classification?: {
    type?: OsiEnum;
    subtype?: OsiEnum;
    centerline?: OsiVector[];
    centerline_is_driving_direction?: boolean;
    left_adjacent_lane_id?: OsiId[];
    right_adjacent_lane_id?: OsiId[];
    lane_pairing?: { antecessor_lane_id?: OsiId | null; successor_lane_id?: OsiId | null }[];
    left_lane_boundary_id?: OsiId[];
    right_lane_boundary_id?: OsiId[];
  } | null;
  source_reference?: OsiReference[];
}
export interface OsiLaneBoundary {
  id?: OsiId | null;
  boundary_line?: { position?: OsiVector | null; width?: number }[];
  classification?: { type?: OsiEnum; color?: OsiEnum } | null;
  source_reference?: OsiReference[];
}
/** What a GroundTruth holds of the road. */
export interface OsiRoadMessage {
  version?: { version_major?: number; version_minor?: number; version_patch?: number } | null;
  lane?: OsiLane[];
  lane_boundary?: OsiLaneBoundary[];
  proj_string?: string;
  proj_frame_offset?: { position?: OsiVector | null } | null;
}

/** OSI 3.x enum values by number, for messages decoded without the names. */
const LANE_TYPES = ['TYPE_UNKNOWN', 'TYPE_OTHER', 'TYPE_DRIVING', 'TYPE_NONDRIVING', 'TYPE_INTERSECTION'];
const LANE_SUBTYPES = [
  'SUBTYPE_UNKNOWN',
  'SUBTYPE_OTHER',
  'SUBTYPE_NORMAL',
  'SUBTYPE_BIKING',
  'SUBTYPE_SIDEWALK',
  'SUBTYPE_PARKING',
  'SUBTYPE_STOP',
  'SUBTYPE_RESTRICTED',
  'SUBTYPE_BORDER',
  'SUBTYPE_SHOULDER',
  'SUBTYPE_EXIT',
  'SUBTYPE_ENTRY',
  'SUBTYPE_ONRAMP',
  'SUBTYPE_OFFRAMP',
  'SUBTYPE_CONNECTINGRAMP',
];
const BOUNDARY_TYPES = [
  'TYPE_UNKNOWN',
  'TYPE_OTHER',
  'TYPE_NO_LINE',
  'TYPE_SOLID_LINE',
  'TYPE_DASHED_LINE',
  'TYPE_BOTTS_DOTS',
  'TYPE_ROAD_EDGE',
  'TYPE_SNOW_EDGE',
  'TYPE_GRASS_EDGE',
  'TYPE_GRAVEL_EDGE',
  'TYPE_SOIL_EDGE',
  'TYPE_GUARD_RAIL',
  'TYPE_CURB',
  'TYPE_STRUCTURE',
  'TYPE_BARRIER',
  'TYPE_SOUND_BARRIER',
];
const BOUNDARY_COLORS = [
  'COLOR_UNKNOWN',
  'COLOR_OTHER',
  'COLOR_NONE',
  'COLOR_WHITE',
  'COLOR_YELLOW',
  'COLOR_RED',
  'COLOR_BLUE',
  'COLOR_GREEN',
  'COLOR_VIOLET',
  'COLOR_ORANGE',
];

/** OSI's LaneBoundary types as lane marks; the rest (guard rails, barriers, other) are `custom`. */
const MARK_TYPES: Record<string, LaneMarkType> = {
  TYPE_SOLID_LINE: 'solid',
  TYPE_DASHED_LINE: 'broken',
  TYPE_BOTTS_DOTS: 'botts_dots',
  TYPE_ROAD_EDGE: 'edge',
  TYPE_SNOW_EDGE: 'edge',
  TYPE_GRAVEL_EDGE: 'edge',
  TYPE_SOIL_EDGE: 'edge',
  TYPE_GRASS_EDGE: 'grass',
  TYPE_CURB: 'curb',
};
/** A boundary without a line separates lanes (and gives their widths) but marks nothing: no lane mark. */
const NO_LINE = 'TYPE_NO_LINE';

/** OSI's lane subtypes as lane types: OpenDRIVE's names, which simrec's model uses. */
const LANE_TYPE_OF_SUBTYPE: Record<string, string> = {
  SUBTYPE_NORMAL: 'driving',
  SUBTYPE_BIKING: 'biking',
  SUBTYPE_SIDEWALK: 'sidewalk',
  SUBTYPE_PARKING: 'parking',
  SUBTYPE_STOP: 'stop',
  SUBTYPE_RESTRICTED: 'restricted',
  SUBTYPE_BORDER: 'border',
  SUBTYPE_SHOULDER: 'shoulder',
  SUBTYPE_EXIT: 'exit',
  SUBTYPE_ENTRY: 'entry',
  SUBTYPE_ONRAMP: 'onRamp',
  SUBTYPE_OFFRAMP: 'offRamp',
  SUBTYPE_CONNECTINGRAMP: 'connectingRamp',
};

const enumName = (value: OsiEnum | undefined, names: readonly string[]): string | undefined =>
  typeof value === 'number' ? (names[value] ?? String(value)) : value;

/** A lane's width varying by no more than this (metres) is one width. */
const CONSTANT_WIDTH = 0.01;

/**
 * Gathers a trace's road message by message (`add` each ground truth), then gives it as a road
 * network (`network`), or undefined when the trace has no lanes.
 */
export class OsiRoadCollector {
  private readonly lanes = new Map<number, OsiLane>();
  private readonly boundaries = new Map<number, OsiLaneBoundary>();
  private first: OsiRoadMessage | undefined;

  add(gt: OsiRoadMessage): void {
    for (const lane of gt.lane ?? []) {
      const id = lane.id?.value;
      if (id !== undefined && !this.lanes.has(id)) this.lanes.set(id, lane);
    }
    for (const boundary of gt.lane_boundary ?? []) {
      const id = boundary.id?.value;
      if (id !== undefined && !this.boundaries.has(id)) this.boundaries.set(id, boundary);
    }
    if (!this.first && (gt.lane?.length || gt.lane_boundary?.length)) this.first = gt;
  }

  /**
   * Whether `add` would keep nothing of `gt` (every lane and boundary it lists has been added before):
   * then only their ids need to be read (osi3-schema.ts, SkimmingTypes).
   */
  knows(gt: OsiRoadMessage): boolean {
    const lanes = gt.lane ?? [];
    const boundaries = gt.lane_boundary ?? [];
    if (!this.first && (lanes.length || boundaries.length)) return false;
    for (const lane of lanes) {
      const id = lane.id?.value;
      if (id !== undefined && !this.lanes.has(id)) return false;
    }
    for (const boundary of boundaries) {
      const id = boundary.id?.value;
      if (id !== undefined && !this.boundaries.has(id)) return false;
    }
    return true;
  }

  network(warn: (message: string) => void = () => {}): RoadNetwork | undefined {
    if (!this.first) return undefined;
    return osiRoadNetwork(this.first, [...this.lanes.values()], [...this.boundaries.values()], warn);
  }
}

/** A lane as simrec's model has it, before it is placed on an edge. */
interface PlacedLane {
  osiId: number;
  name: string;
  function: RoadLane['function'];
  centerLine: RoadPoint[];
  /** OSI ids, along the direction of travel. */
  left: number[];
  right: number[];
  leftAdjacent: number[];
  rightAdjacent: number[];
  antecessors: number[];
  successors: number[];
  osi: OsiLane;
}

/**
 * The network of a ground truth's lanes and boundaries (`road` gives the version and where the network
 * lies on the earth). Lanes and marks are named by the simrec id their source reference carries (a
 * trace simrec wrote), else `osi-lane-<id>` and `osi-boundary-<id>`; the OSI ids are kept in `extra`.
 */
export function osiRoadNetwork(
  road: OsiRoadMessage,
  osiLanes: readonly OsiLane[],
  osiBoundaries: readonly OsiLaneBoundary[],
  warn: (message: string) => void = () => {},
): RoadNetwork | undefined {
  const boundaryNames = namesOf(osiBoundaries, 'osi-boundary-');
  const laneNames = namesOf(osiLanes, 'osi-lane-');
  const boundaryLines = new Map<number, RoadPoint[]>();
  for (const b of osiBoundaries)
    boundaryLines.set(
      b.id!.value!,
      (b.boundary_line ?? []).flatMap((p) => (p.position ? [point(p.position)] : [])),
    );

  const placed: PlacedLane[] = [];
  const unplaced: number[] = [];
  for (const lane of osiLanes) {
    const c = lane.classification ?? {};
    const osiId = lane.id!.value!;
    const centerLine = (c.centerline ?? []).map(point);
    if (centerLine.length < 2) {
      unplaced.push(osiId);
      continue;
    }
    const ids = (list: OsiId[] | undefined) =>
      (list ?? []).flatMap((i) => (i.value === undefined ? [] : [i.value]));
    const before = ids(
      (c.lane_pairing ?? []).flatMap((p) => (p.antecessor_lane_id ? [p.antecessor_lane_id] : [])),
    );
    const after = ids(
      (c.lane_pairing ?? []).flatMap((p) => (p.successor_lane_id ? [p.successor_lane_id] : [])),
    );
    const turned = c.centerline_is_driving_direction === false;
    const sides = {
      left: ids(c.left_lane_boundary_id),
      right: ids(c.right_lane_boundary_id),
      leftAdjacent: ids(c.left_adjacent_lane_id),
      rightAdjacent: ids(c.right_adjacent_lane_id),
      antecessors: [...new Set(before)],
      successors: [...new Set(after)],
    };
    placed.push({
      osiId,
      name: laneNames.get(osiId)!,
      function: enumName(c.type, LANE_TYPES) === 'TYPE_INTERSECTION' ? 'internal' : 'normal',
      centerLine: turned ? centerLine.reverse() : centerLine,
      osi: lane,
      ...(turned
        ? {
            left: sides.right,
            right: sides.left,
            leftAdjacent: sides.rightAdjacent,
            rightAdjacent: sides.leftAdjacent,
            antecessors: sides.successors,
            successors: sides.antecessors,
          }
        : sides),
    });
  }
  if (unplaced.length)
    warn(
      `OSI lanes ${unplaced.join(', ')} have no centre line (fewer than 2 points): left out of the road network`,
    );
  if (!placed.length && !osiBoundaries.length) return undefined;

  const byOsiId = new Map(placed.map((l) => [l.osiId, l] as const));
  const nameOf = (osiId: number): string => laneNames.get(osiId) ?? `osi-lane-${osiId}`;
  const { edges, edgeOf, indexOf } = edgesOf(placed, byOsiId);

  const widths = widthsOf(placed, boundaryLines);
  const lanes: RoadLane[] = placed.map((lane) => {
    const { width, widths: varying, from } = widths.get(lane.osiId)!;
    const c = lane.osi.classification ?? {};
    const type = enumName(c.type, LANE_TYPES);
    const subtype = enumName(c.subtype, LANE_SUBTYPES);
    const laneType =
      (subtype && LANE_TYPE_OF_SUBTYPE[subtype]) ?? (type === 'TYPE_NONDRIVING' ? 'none' : 'driving');
    const extra: JsonObject = {
      osiId: lane.osiId,
      ...(type ? { osiType: type } : {}),
      ...(subtype ? { osiSubtype: subtype } : {}),
      ...(c.centerline_is_driving_direction === false ? { centerlineReversed: true } : {}),
      widthFrom: from,
      leftBoundaries: lane.left.map((id) => boundaryNames.get(id) ?? `osi-boundary-${id}`),
      rightBoundaries: lane.right.map((id) => boundaryNames.get(id) ?? `osi-boundary-${id}`),
      leftAdjacent: lane.leftAdjacent.map(nameOf),
      rightAdjacent: lane.rightAdjacent.map(nameOf),
    };
    return {
      id: lane.name,
      edge: edgeOf.get(lane.osiId)!,
      index: indexOf.get(lane.osiId)!,
      function: lane.function,
      centerLine: lane.centerLine,
      width,
      ...(varying ? { widths: varying } : {}),
      length: round(polylineLength(lane.centerLine)),
      type: laneType,
      extra,
    };
  });

  const laneMarks = marksOf(osiBoundaries, boundaryNames, boundaryLines, placed);
  const version = versionOf(road);
  const geoReference = geoReferenceOf(road);
  const net: Omit<RoadNetwork, 'boundary' | 'source'> = {
    format: 'osi',
    ...(version ? { version } : {}),
    edges,
    lanes,
    junctions: [],
    connections: connectionsOf(placed, byOsiId),
    trafficLights: [],
    laneMarks,
    ...(geoReference ? { geoReference } : {}),
  };
  return {
    ...net,
    boundary: boundsOf(networkLines(net)),
    source: { format: 'osi', text: JSON.stringify({ lane: osiLanes, lane_boundary: osiBoundaries }) },
  };
}

const point = (v: OsiVector): RoadPoint => [v.x ?? 0, v.y ?? 0, v.z ?? 0];
const round = (metres: number): number => Math.round(metres * 1000) / 1000;

/** Each entity's name: its simrec id when simrec wrote the trace (and the id is unique), else prefix + OSI id. */
function namesOf(
  entities: readonly { id?: OsiId | null; source_reference?: OsiReference[] }[],
  prefix: string,
): Map<number, string> {
  const names = new Map<number, string>();
  const taken = new Set<string>();
  for (const e of entities) {
    const simrec = e.source_reference?.find((r) => r.type === SIMREC_REFERENCE_TYPE)?.identifier?.[0];
    const name = simrec && !taken.has(simrec) ? simrec : `${prefix}${e.id!.value}`;
    taken.add(name);
    names.set(e.id!.value!, name);
  }
  return names;
}

/**
 * Edges: lanes adjacent to each other (either says so) that drive the same way and are of one
 * function. Within an edge, lanes are numbered from the right by how far left of the edge's first lane
 * their middle lies, which holds where lanes fork or begin part way along.
 */
function edgesOf(placed: readonly PlacedLane[], byOsiId: ReadonlyMap<number, PlacedLane>) {
  const parent = new Map(placed.map((l) => [l.osiId, l.osiId] as const));
  const find = (id: number): number => {
    let root = id;
    while (parent.get(root) !== root) root = parent.get(root)!;
    parent.set(id, root);
    return root;
  };
  for (const lane of placed)
    for (const other of [...lane.leftAdjacent, ...lane.rightAdjacent].map((id) => byOsiId.get(id))) {
      if (!other || other.function !== lane.function) continue;
      if (dot(direction(lane.centerLine), direction(other.centerLine)) <= 0) continue;
      parent.set(find(lane.osiId), find(other.osiId));
    }
  const groups = new Map<number, PlacedLane[]>();
  for (const lane of placed) {
    const root = find(lane.osiId);
    groups.set(root, [...(groups.get(root) ?? []), lane]);
  }
  const edges: RoadEdge[] = [];
  const edgeOf = new Map<number, string>();
  const indexOf = new Map<number, number>();
  for (const group of groups.values()) {
    const reference = group[0]!.centerLine;
    const offset = new Map(group.map((l) => [l.osiId, distanceTo(middle(l.centerLine), reference)] as const));
    group.sort((a, b) => offset.get(a.osiId)! - offset.get(b.osiId)! || a.osiId - b.osiId);
    const id = `osi-road-${Math.min(...group.map((l) => l.osiId))}`;
    group.forEach((lane, index) => {
      edgeOf.set(lane.osiId, id);
      indexOf.set(lane.osiId, index);
    });
    edges.push({ id, function: group[0]!.function, lanes: group.map((l) => l.name) });
  }
  return { edges, edgeOf, indexOf };
}

/**
 * Connections from the lanes before and after each lane: a lane across an intersection is the `via`
 * of each of its antecessors to each of its successors, and leads on to each successor itself; other
 * lanes lead straight to their successors, and from their antecessors.
 */
function connectionsOf(
  placed: readonly PlacedLane[],
  byOsiId: ReadonlyMap<number, PlacedLane>,
): Connection[] {
  const connections = new Map<string, Connection>();
  const add = (from: PlacedLane | undefined, to: PlacedLane | undefined, via?: PlacedLane): void => {
    if (!from || !to) return;
    const key = `${from.name}\n${to.name}\n${via?.name ?? ''}`;
    if (!connections.has(key))
      connections.set(key, { fromLane: from.name, toLane: to.name, ...(via ? { via: via.name } : {}) });
  };
  for (const lane of placed) {
    if (lane.function === 'internal') {
      for (const a of lane.antecessors)
        for (const s of lane.successors) add(byOsiId.get(a), byOsiId.get(s), lane);
      // As SUMO has it: the junction lane itself leads on to the lane after it.
      for (const s of lane.successors) add(lane, byOsiId.get(s));
      continue;
    }
    for (const s of lane.successors) {
      const next = byOsiId.get(s);
      if (next?.function !== 'internal') add(lane, next);
    }
    // A trace may name a link on one side only: the lane before this one leads to it.
    for (const a of lane.antecessors) add(byOsiId.get(a), lane);
  }
  return [...connections.values()];
}

/** The boundaries as lane marks, each on the lane it is the left border of (else the right one). */
function marksOf(
  osiBoundaries: readonly OsiLaneBoundary[],
  names: ReadonlyMap<number, string>,
  lines: ReadonlyMap<number, RoadPoint[]>,
  placed: readonly PlacedLane[],
): LaneMark[] {
  const leftOf = new Map<number, string[]>();
  const rightOf = new Map<number, string[]>();
  for (const lane of placed) {
    for (const id of lane.left) leftOf.set(id, [...(leftOf.get(id) ?? []), lane.name]);
    for (const id of lane.right) rightOf.set(id, [...(rightOf.get(id) ?? []), lane.name]);
  }
  const marks: LaneMark[] = [];
  for (const b of osiBoundaries) {
    const id = b.id!.value!;
    const shape = lines.get(id)!;
    const type = enumName(b.classification?.type, BOUNDARY_TYPES);
    if (type === NO_LINE || shape.length < 2) continue;
    const color = enumName(b.classification?.color, BOUNDARY_COLORS);
    const colour = color?.startsWith('COLOR_') ? color.slice('COLOR_'.length).toLowerCase() : undefined;
    const width = b.boundary_line?.find((p) => p.width)?.width;
    const left = leftOf.get(id) ?? [];
    const right = rightOf.get(id) ?? [];
    marks.push({
      id: names.get(id)!,
      type: (type ? MARK_TYPES[type] : undefined) ?? 'custom',
      shape,
      ...(left.length
        ? { lane: left[0]!, side: 'left' as const }
        : right.length
          ? { lane: right[0]!, side: 'right' as const }
          : {}),
      ...(colour && !['unknown', 'other', 'none'].includes(colour) ? { color: colour } : {}),
      ...(width ? { width } : {}),
      extra: {
        osiId: id,
        ...(type ? { osiType: type } : {}),
        ...(color ? { osiColor: color } : {}),
        leftOf: left,
        rightOf: right,
      },
    });
  }
  return marks;
}

/**
 * Each lane's width: measured between its boundaries (`widths` where it varies along the lane); for a
 * lane without boundaries (SUMO's junction lanes and crossings, as simrec exports them), the mean width
 * of the lanes it links, which it continues; else 0, unknown (OSI has no width of its own for a lane).
 */
function widthsOf(
  placed: readonly PlacedLane[],
  lines: ReadonlyMap<number, RoadPoint[]>,
): Map<number, { width: number; widths?: number[]; from: 'boundaries' | 'linked lanes' | 'unknown' }> {
  const measured = new Map<number, { width: number; widths?: number[]; from: 'boundaries' }>();
  for (const lane of placed) {
    const widths = lane.centerLine.map((p) => widthAt(p, lane, lines));
    const known = widths.filter((w): w is number => w !== undefined);
    if (!known.length) continue;
    const varies = known.length === widths.length && Math.max(...known) - Math.min(...known) > CONSTANT_WIDTH;
    measured.set(lane.osiId, {
      width: round(known.reduce((a, b) => a + b, 0) / known.length),
      ...(varies ? { widths: widths.map((w) => round(w!)) } : {}),
      from: 'boundaries',
    });
  }
  const all = new Map<
    number,
    { width: number; widths?: number[]; from: 'boundaries' | 'linked lanes' | 'unknown' }
  >(measured);
  for (const lane of placed) {
    if (measured.has(lane.osiId)) continue;
    const linked = [...lane.antecessors, ...lane.successors].flatMap((id) => measured.get(id)?.width ?? []);
    all.set(
      lane.osiId,
      linked.length
        ? { width: round(linked.reduce((a, b) => a + b, 0) / linked.length), from: 'linked lanes' }
        : { width: 0, from: 'unknown' },
    );
  }
  return all;
}

/**
 * The lane's width at a centre-line point: the distance to its left boundary plus that to its right
 * one, or twice the one it has; undefined without boundaries.
 */
function widthAt(
  p: RoadPoint,
  lane: PlacedLane,
  lines: ReadonlyMap<number, RoadPoint[]>,
): number | undefined {
  const nearest = (ids: readonly number[]): number | undefined => {
    let best: number | undefined;
    for (const id of ids) {
      const line = lines.get(id);
      if (!line || line.length < 2) continue;
      const d = Math.abs(distanceTo(p, line));
      if (best === undefined || d < best) best = d;
    }
    return best;
  };
  const left = nearest(lane.left);
  const right = nearest(lane.right);
  if (left !== undefined && right !== undefined) return left + right;
  const one = left ?? right;
  return one === undefined ? undefined : 2 * one;
}

const dot = (a: [number, number], b: [number, number]): number => a[0] * b[0] + a[1] * b[1];
const direction = (line: readonly RoadPoint[]): [number, number] => [
  line[line.length - 1]![0] - line[0]![0],
  line[line.length - 1]![1] - line[0]![1],
];
const middle = (line: readonly RoadPoint[]): RoadPoint => line[Math.floor((line.length - 1) / 2)]!;

/** The distance in the plane from a point to a polyline, positive when the point lies to its left. */
function distanceTo(p: RoadPoint, line: readonly RoadPoint[]): number {
  let best = Infinity;
  let sign = 1;
  for (let i = 1; i < line.length; i++) {
    const a = line[i - 1]!;
    const b = line[i]!;
    const dx = b[0] - a[0];
    const dy = b[1] - a[1];
    const span = dx * dx + dy * dy;
    const t = span ? Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / span)) : 0;
    const d = Math.hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy);
    if (d < best) {
      best = d;
      sign = dx * (p[1] - a[1]) - dy * (p[0] - a[0]) >= 0 ? 1 : -1;
    }
  }
  return sign * best;
}

function versionOf(road: OsiRoadMessage): string | undefined {
  const v = road.version;
  if (!v || !(v.version_major || v.version_minor || v.version_patch)) return undefined;
  return `${v.version_major ?? 0}.${v.version_minor ?? 0}.${v.version_patch ?? 0}`;
}

/** OSI's proj_frame_offset is what takes the trace's coordinates to the projection's: the negated offset. */
function geoReferenceOf(road: OsiRoadMessage): GeoReference | undefined {
  const offset = road.proj_frame_offset?.position;
  const geo: GeoReference = {
    ...(road.proj_string ? { projection: road.proj_string } : {}),
    ...(offset ? { offset: { x: 0 - (offset.x ?? 0), y: 0 - (offset.y ?? 0), z: 0 - (offset.z ?? 0) } } : {}),
  };
  return Object.keys(geo).length ? geo : undefined;
}
