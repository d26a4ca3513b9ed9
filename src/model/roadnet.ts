import { describeValue, invalid } from './errors.js';
import { checkJsonValue, type JsonObject } from './json.js';

/**
 * The road network a run drives on, in one model for SUMO .net.xml and OpenDRIVE .xodr. Coordinates
 * are the network's own metres (x east, y north, z up), as the source file has them; lines are
 * polylines, which is how SUMO stores them and how OpenDRIVE's curves are sampled.
 */

/** [x, y] or [x, y, z] in metres. */
export type RoadPoint = [number, number] | [number, number, number];

/**
 * What a lane is for. `internal` lanes cross a junction (SUMO's `:`-lanes, OpenDRIVE's connecting
 * roads); `crossing` and `walkingarea` are SUMO's pedestrian elements, kept as such.
 */
export const LANE_FUNCTIONS = ['normal', 'internal', 'crossing', 'walkingarea'] as const;
export type LaneFunction = (typeof LANE_FUNCTIONS)[number];

/** SUMO's `function` attribute of an edge; OpenDRIVE roads map to `normal` and `internal`. */
export const EDGE_FUNCTIONS = ['normal', 'internal', 'crossing', 'walkingarea', 'connector'] as const;
export type EdgeFunction = (typeof EDGE_FUNCTIONS)[number];

/**
 * SUMO's link directions: straight, turn (U-turn), left, right, partially left/right, and `invalid`
 * (SUMO writes it for links it cannot classify). OpenDRIVE readings get one computed from headings.
 */
export const CONNECTION_DIRECTIONS = ['s', 't', 'T', 'l', 'r', 'L', 'R', 'invalid'] as const;
export type ConnectionDirection = (typeof CONNECTION_DIRECTIONS)[number];

/** OpenDRIVE's road-mark types, with spaces as underscores ("solid broken" is `solid_broken`). */
export const LANE_MARK_TYPES = [
  'solid',
  'broken',
  'solid_solid',
  'solid_broken',
  'broken_solid',
  'broken_broken',
  'botts_dots',
  'grass',
  'curb',
  'edge',
  'custom',
] as const;
export type LaneMarkType = (typeof LANE_MARK_TYPES)[number];

/**
 * OpenDRIVE lane types that carry no traffic: they shape the road surface but are not lanes a vehicle
 * or pedestrian uses (netconvert discards them too). They stay in the model for drawing.
 */
export const MARGIN_LANE_TYPES = ['border', 'shoulder', 'median', 'curb', 'none'] as const;

export interface RoadLane {
  id: string;
  edge: string;
  /** 0 is the rightmost lane in the direction of travel, as in SUMO. */
  index: number;
  function: LaneFunction;
  /** In the direction of travel. */
  centerLine: RoadPoint[];
  /** Metres; the mean width when it varies (see `widths`). */
  width: number;
  /** The width at each centre-line point, when it is not constant (OpenDRIVE). */
  widths?: number[];
  /** m/s; absent when the source declares none. */
  speedLimit?: number;
  /** Metres. SUMO's declared `length` (what routing uses; it can differ from the shape's length). */
  length: number;
  /** SUMO lane type or OpenDRIVE lane type (`driving`, `sidewalk`, `border`...). */
  type?: string;
  /** SUMO vehicle classes. */
  allow?: string[];
  disallow?: string[];
  /** The junction an internal lane crosses. */
  junction?: string;
  /** Where an OpenDRIVE lane came from. */
  openDrive?: { road: string; laneSection: number; lane: number };
  /** The source element's attributes the model has no field for, kept so nothing is lost. */
  extra?: JsonObject;
}

export interface RoadEdge {
  id: string;
  function: EdgeFunction;
  /** Junction ids. */
  from?: string;
  to?: string;
  /** Lane ids by index (rightmost first). */
  lanes: string[];
  type?: string;
  name?: string;
  priority?: number;
  extra?: JsonObject;
}

export interface Junction {
  id: string;
  /** SUMO's junction type (`priority`, `traffic_light`, `internal`...) or OpenDRIVE's (`default`, `virtual`...). */
  type?: string;
  position?: RoadPoint;
  /** The junction's area, a polygon (not repeated at the end); empty when the source has none. */
  outline: RoadPoint[];
  incomingLanes: string[];
  internalLanes: string[];
  name?: string;
  extra?: JsonObject;
}

export interface Connection {
  fromLane: string;
  toLane: string;
  /** The internal lane that carries the link across the junction. */
  via?: string;
  direction?: ConnectionDirection;
  /** SUMO's link state (`M`, `m`, `o`, `=`, ...). */
  state?: string;
  /** The id of the traffic light that controls the link, and the link's index in its phase states. */
  trafficLight?: string;
  linkIndex?: number;
  extra?: JsonObject;
}

export interface TrafficLightPhase {
  /** Seconds. */
  duration: number;
  /** One character per link index: r, y, g, G, s, u, o, O. */
  state: string;
  minDuration?: number;
  maxDuration?: number;
  name?: string;
  next?: number[];
  extra?: JsonObject;
}

export interface TrafficLightProgram {
  programId: string;
  /** `static`, `actuated`, `delay_based`... */
  type: string;
  /** Seconds. */
  offset: number;
  phases: TrafficLightPhase[];
  /** SUMO `<param key value>` children. */
  params?: Record<string, string>;
  extra?: JsonObject;
}

/** A signal head placed in the world (OpenDRIVE `<signal dynamic="yes">`). */
export interface TrafficSignal {
  id: string;
  position: RoadPoint;
  /** Radians, counter-clockwise from +x: the direction the signal faces traffic from. */
  heading: number;
  type?: string;
  subtype?: string;
  name?: string;
  road?: string;
  s?: number;
  t?: number;
  /** The lanes it governs. */
  lanes: string[];
  extra?: JsonObject;
}

export interface TrafficLight {
  id: string;
  /** SUMO programs (`<tlLogic>`), with phases; OpenDRIVE has none. */
  programs: TrafficLightProgram[];
  /** OpenDRIVE signal heads; SUMO has none. */
  signals: TrafficSignal[];
  name?: string;
}

export interface LaneMark {
  id: string;
  type: LaneMarkType;
  shape: RoadPoint[];
  /** The lane whose border it marks, and which border, in the lane's direction of travel. */
  lane?: string;
  side?: 'left' | 'right';
  color?: string;
  /** Metres. */
  width?: number;
  extra?: JsonObject;
}

export interface RoadBounds {
  min: [number, number];
  max: [number, number];
}

/** Where the network sits on the earth, as the source states it. */
export interface GeoReference {
  /** A PROJ string (SUMO `projParameter`, OpenDRIVE `<geoReference>`). */
  projection?: string;
  /** SUMO `netOffset`, OpenDRIVE `<offset x y z hdg>`: added to the source's coordinates. */
  offset?: { x: number; y: number; z?: number; heading?: number };
  /** SUMO `convBoundary` (what LimSim stores as `netBoundary`) and `origBoundary`. */
  convBoundary?: [number, number, number, number];
  origBoundary?: [number, number, number, number];
}

/** `osi`: the lanes and lane boundaries of an ASAM OSI trace's ground truth (formats/common/osi3/osi-lanes.ts). */
export const ROAD_NETWORK_FORMATS = ['sumo', 'opendrive', 'osi'] as const;
export type RoadNetworkFormat = (typeof ROAD_NETWORK_FORMATS)[number];

export interface RoadNetwork {
  format: RoadNetworkFormat;
  /** SUMO `<net version>`, OpenDRIVE `revMajor.revMinor`, or the OSI version of the trace. */
  version?: string;
  edges: RoadEdge[];
  lanes: RoadLane[];
  junctions: Junction[];
  connections: Connection[];
  trafficLights: TrafficLight[];
  laneMarks: LaneMark[];
  /** Of every lane, mark and junction outline. */
  boundary: RoadBounds;
  geoReference?: GeoReference;
  /** The step, in metres, OpenDRIVE curves were sampled at. */
  resolution?: number;
  /** The original file text, so nothing the model leaves out is lost (OSI: its lanes and boundaries as JSON). */
  source: { format: RoadNetworkFormat; text: string };
}

export interface RoadNetworkSummary {
  format: RoadNetworkFormat;
  version?: string;
  /** Every lane, of every function (see lanesByFunction). */
  lanes: number;
  /** Every edge, of every function (see edgesByFunction). */
  edges: number;
  /** Every junction, SUMO's internal junctions included (see junctionsByKind). */
  junctions: number;
  /** Lanes by what they are for: normal (roads), internal (across junctions), crossing, walkingarea. */
  lanesByFunction: Record<LaneFunction, number>;
  /** Edges the same way (and SUMO's connectors). */
  edgesByFunction: Record<EdgeFunction, number>;
  /** Junctions where roads meet, and SUMO's internal junctions (waiting points inside a junction). */
  junctionsByKind: { junction: number; internal: number };
  /** What each count counts, said in the JSON itself. */
  counts: Record<string, string>;
  connections: number;
  trafficLights: number;
  laneMarks: number;
  /** Metres, lanes with function `normal` that carry traffic (margin lanes excluded). */
  totalLaneLength: number;
  bounds: RoadBounds;
}

export const isMarginLane = (lane: RoadLane): boolean =>
  lane.type !== undefined && (MARGIN_LANE_TYPES as readonly string[]).includes(lane.type);

/** A normal lane a vehicle or pedestrian uses: not internal, not a shoulder or border. */
export const isTrafficLane = (lane: RoadLane): boolean => lane.function === 'normal' && !isMarginLane(lane);

export function polylineLength(points: readonly RoadPoint[]): number {
  let length = 0;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    length += Math.hypot(b[0] - a[0], b[1] - a[1], (b[2] ?? 0) - (a[2] ?? 0));
  }
  return length;
}

/** The bounds of every point given; a network with no geometry gets zero bounds at the origin. */
export function boundsOf(lines: Iterable<readonly RoadPoint[]>): RoadBounds {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const line of lines)
    for (const [x, y] of line) {
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
  if (minX > maxX) return { min: [0, 0], max: [0, 0] };
  return { min: [minX, minY], max: [maxX, maxY] };
}

export function* networkLines(
  net: Pick<RoadNetwork, 'lanes' | 'laneMarks' | 'junctions'>,
): Iterable<RoadPoint[]> {
  for (const lane of net.lanes) yield lane.centerLine;
  for (const mark of net.laneMarks) yield mark.shape;
  for (const junction of net.junctions) yield junction.outline;
}

export function summarizeRoadNetwork(net: RoadNetwork): RoadNetworkSummary {
  let totalLaneLength = 0;
  for (const lane of net.lanes) if (isTrafficLane(lane)) totalLaneLength += lane.length;
  const lanesByFunction = Object.fromEntries(LANE_FUNCTIONS.map((f) => [f, 0])) as Record<
    LaneFunction,
    number
  >;
  for (const lane of net.lanes) lanesByFunction[lane.function]++;
  const edgesByFunction = Object.fromEntries(EDGE_FUNCTIONS.map((f) => [f, 0])) as Record<
    EdgeFunction,
    number
  >;
  for (const edge of net.edges) edgesByFunction[edge.function]++;
  const internalJunctions = net.junctions.filter((j) => j.type === 'internal').length;
  const summary: RoadNetworkSummary = {
    format: net.format,
    lanes: net.lanes.length,
    edges: net.edges.length,
    junctions: net.junctions.length,
    lanesByFunction,
    edgesByFunction,
    junctionsByKind: { junction: net.junctions.length - internalJunctions, internal: internalJunctions },
    counts: {
      lanes: 'every lane: normal, internal (across junctions), crossing and walkingarea (lanesByFunction)',
      edges: 'every edge, internal ones included (edgesByFunction)',
      junctions: "every junction, SUMO's internal junctions included (junctionsByKind)",
      totalLaneLength:
        'metres of normal lanes that carry traffic (no internal, crossing, walkingarea or margin lanes)',
    },
    connections: net.connections.length,
    trafficLights: net.trafficLights.length,
    laneMarks: net.laneMarks.length,
    totalLaneLength: Math.round(totalLaneLength * 1000) / 1000,
    bounds: net.boundary,
  };
  if (net.version !== undefined) summary.version = net.version;
  return summary;
}

const oneOf = <T extends string>(values: readonly T[], value: unknown): value is T =>
  typeof value === 'string' && (values as readonly string[]).includes(value);

function checkNumber(value: unknown, where: string, { min }: { min?: number } = {}): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || (min !== undefined && value < min))
    throw invalid(
      `${where}: expected a finite number${min === undefined ? '' : ` >= ${min}`}, got ${describeValue(value)}`,
    );
}

function checkString(value: unknown, where: string): void {
  if (typeof value !== 'string' || value === '')
    throw invalid(`${where}: expected a non-empty string, got ${describeValue(value)}`);
}

function checkLine(points: unknown, where: string, minPoints: number): void {
  if (!Array.isArray(points) || points.length < minPoints)
    throw invalid(`${where}: expected at least ${minPoints} points, got ${describeValue(points)}`);
  for (let i = 0; i < points.length; i++) {
    const p: unknown = points[i];
    if (!Array.isArray(p) || (p.length !== 2 && p.length !== 3) || !p.every((c) => Number.isFinite(c)))
      throw invalid(
        `${where}[${i}]: expected [x, y] or [x, y, z] of finite numbers, got ${describeValue(p)}`,
      );
  }
}

function checkUnique(items: readonly { id: string }[], where: string): Set<string> {
  const ids = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const id = items[i]!.id;
    checkString(id, `${where}[${i}].id`);
    if (ids.has(id)) throw invalid(`${where}[${i}].id: ${JSON.stringify(id)} appears twice`);
    ids.add(id);
  }
  return ids;
}

function checkExtra(extra: unknown, where: string): void {
  if (extra !== undefined) checkJsonValue(extra, `${where}.extra`);
}

/**
 * Checks a road network that comes from outside a reader (a stored attachment, a client): ids unique,
 * every reference resolves, numbers finite, lines well formed. Returns it unchanged.
 */
export function validateRoadNetwork(net: RoadNetwork): RoadNetwork {
  if (typeof net !== 'object' || net === null)
    throw invalid(`roadnet: expected an object, got ${describeValue(net)}`);
  if (!oneOf(ROAD_NETWORK_FORMATS, net.format))
    throw invalid(
      `roadnet.format: expected one of ${ROAD_NETWORK_FORMATS.join(', ')}, got ${describeValue(net.format)}`,
    );
  for (const key of ['edges', 'lanes', 'junctions', 'connections', 'trafficLights', 'laneMarks'] as const)
    if (!Array.isArray(net[key]))
      throw invalid(`roadnet.${key}: expected an array, got ${describeValue(net[key])}`);
  const edgeIds = checkUnique(net.edges, 'roadnet.edges');
  const laneIds = checkUnique(net.lanes, 'roadnet.lanes');
  const junctionIds = checkUnique(net.junctions, 'roadnet.junctions');
  const lightIds = checkUnique(net.trafficLights, 'roadnet.trafficLights');
  checkUnique(net.laneMarks, 'roadnet.laneMarks');

  net.lanes.forEach((lane, i) => {
    const where = `roadnet.lanes[${i}] (${lane.id})`;
    if (!edgeIds.has(lane.edge)) throw invalid(`${where}.edge: no edge ${describeValue(lane.edge)}`);
    if (!oneOf(LANE_FUNCTIONS, lane.function))
      throw invalid(
        `${where}.function: expected one of ${LANE_FUNCTIONS.join(', ')}, got ${describeValue(lane.function)}`,
      );
    if (!Number.isInteger(lane.index) || lane.index < 0)
      throw invalid(`${where}.index: expected an integer >= 0, got ${describeValue(lane.index)}`);
    checkLine(lane.centerLine, `${where}.centerLine`, lane.function === 'walkingarea' ? 1 : 2);
    checkNumber(lane.width, `${where}.width`, { min: 0 });
    checkNumber(lane.length, `${where}.length`, { min: 0 });
    if (lane.speedLimit !== undefined) checkNumber(lane.speedLimit, `${where}.speedLimit`, { min: 0 });
    if (lane.widths !== undefined) {
      if (!Array.isArray(lane.widths) || lane.widths.length !== lane.centerLine.length)
        throw invalid(
          `${where}.widths: expected one width per centre-line point, got ${describeValue(lane.widths)}`,
        );
      lane.widths.forEach((w, k) => checkNumber(w, `${where}.widths[${k}]`));
    }
    if (lane.junction !== undefined && !junctionIds.has(lane.junction))
      throw invalid(`${where}.junction: no junction ${describeValue(lane.junction)}`);
    checkExtra(lane.extra, where);
  });
  net.edges.forEach((edge, i) => {
    const where = `roadnet.edges[${i}] (${edge.id})`;
    if (!oneOf(EDGE_FUNCTIONS, edge.function))
      throw invalid(
        `${where}.function: expected one of ${EDGE_FUNCTIONS.join(', ')}, got ${describeValue(edge.function)}`,
      );
    if (!Array.isArray(edge.lanes))
      throw invalid(`${where}.lanes: expected an array, got ${describeValue(edge.lanes)}`);
    for (const lane of edge.lanes)
      if (!laneIds.has(lane)) throw invalid(`${where}.lanes: no lane ${describeValue(lane)}`);
    for (const end of ['from', 'to'] as const) {
      const junction = edge[end];
      if (junction !== undefined && !junctionIds.has(junction))
        throw invalid(`${where}.${end}: no junction ${describeValue(junction)}`);
    }
    checkExtra(edge.extra, where);
  });
  net.junctions.forEach((junction, i) => {
    const where = `roadnet.junctions[${i}] (${junction.id})`;
    checkLine(junction.outline, `${where}.outline`, 0);
    if (junction.position !== undefined) checkLine([junction.position], `${where}.position`, 1);
    for (const key of ['incomingLanes', 'internalLanes'] as const)
      for (const lane of junction[key])
        if (!laneIds.has(lane)) throw invalid(`${where}.${key}: no lane ${describeValue(lane)}`);
    checkExtra(junction.extra, where);
  });
  net.connections.forEach((c, i) => {
    const where = `roadnet.connections[${i}] (${c.fromLane} -> ${c.toLane})`;
    for (const key of ['fromLane', 'toLane', 'via'] as const) {
      const lane = c[key];
      if ((key !== 'via' || lane !== undefined) && !laneIds.has(lane!))
        throw invalid(`${where}.${key}: no lane ${describeValue(lane)}`);
    }
    if (c.direction !== undefined && !oneOf(CONNECTION_DIRECTIONS, c.direction))
      throw invalid(
        `${where}.direction: expected one of ${CONNECTION_DIRECTIONS.join(' ')}, got ${describeValue(c.direction)}`,
      );
    if (c.trafficLight !== undefined && !lightIds.has(c.trafficLight))
      throw invalid(`${where}.trafficLight: no traffic light ${describeValue(c.trafficLight)}`);
    if (c.linkIndex !== undefined && (!Number.isInteger(c.linkIndex) || c.linkIndex < -1))
      throw invalid(`${where}.linkIndex: expected an integer, got ${describeValue(c.linkIndex)}`);
    checkExtra(c.extra, where);
  });
  net.trafficLights.forEach((tl, i) => {
    const where = `roadnet.trafficLights[${i}] (${tl.id})`;
    tl.programs.forEach((program, k) => {
      const at = `${where}.programs[${k}]`;
      checkString(program.programId, `${at}.programId`);
      checkNumber(program.offset, `${at}.offset`);
      program.phases.forEach((phase, p) => {
        checkNumber(phase.duration, `${at}.phases[${p}].duration`, { min: 0 });
        if (typeof phase.state !== 'string')
          throw invalid(`${at}.phases[${p}].state: expected a string, got ${describeValue(phase.state)}`);
      });
      checkExtra(program.extra, at);
    });
    tl.signals.forEach((signal, k) => {
      const at = `${where}.signals[${k}] (${signal.id})`;
      checkLine([signal.position], `${at}.position`, 1);
      checkNumber(signal.heading, `${at}.heading`);
      for (const lane of signal.lanes)
        if (!laneIds.has(lane)) throw invalid(`${at}.lanes: no lane ${describeValue(lane)}`);
    });
  });
  net.laneMarks.forEach((mark, i) => {
    const where = `roadnet.laneMarks[${i}] (${mark.id})`;
    if (!oneOf(LANE_MARK_TYPES, mark.type))
      throw invalid(
        `${where}.type: expected one of ${LANE_MARK_TYPES.join(', ')}, got ${describeValue(mark.type)}`,
      );
    checkLine(mark.shape, `${where}.shape`, 2);
    if (mark.lane !== undefined && !laneIds.has(mark.lane))
      throw invalid(`${where}.lane: no lane ${describeValue(mark.lane)}`);
    checkExtra(mark.extra, where);
  });
  if (typeof net.source?.text !== 'string' || !oneOf(ROAD_NETWORK_FORMATS, net.source.format))
    throw invalid(`roadnet.source: expected {format, text}, got ${describeValue(net.source)}`);
  checkLine([net.boundary?.min, net.boundary?.max], 'roadnet.boundary', 2);
  if (net.resolution !== undefined)
    checkNumber(net.resolution, 'roadnet.resolution', { min: Number.MIN_VALUE });
  return net;
}
