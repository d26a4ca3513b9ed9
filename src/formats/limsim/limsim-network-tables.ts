import type { JsonObject } from '../../model/json.js';
import type { RoadLane, RoadNetwork, RoadPoint } from '../../model/roadnet.js';
import {
  limSimTablesFromRoadNetwork,
  roadNetworkFromLimSimTables,
  type LimSimNetworkTables,
} from './limsim-network-rows.js';
import type { ReadResult } from '../../roadnet/xml/xml-source.js';
import { formatIdList } from './limsim-encodings.js';

/**
 * LimSim's network tables, as a whole database holds them, to and from the road-network model. The
 * row-to-model mapping itself is limsim-network-rows.ts's (column for column); this adds what a
 * database round trip needs beyond it: junction lanes no connection passes through (the model has no
 * geometry for them, so they ride on their junction's `extra`), edge ends naming no junction row,
 * LimSim++'s lane classes and junction-named lights, netBoundary, and the geohash grid.
 */

export type JunctionLaneRow = LimSimNetworkTables['junctionLaneINFO'][number];

export interface GeohashRow {
  ghx: number;
  ghy: number;
  edges: string | null;
  junctions: string | null;
}

/** The rows of LimSim++'s extra lane columns, by lane id. */
export interface LaneClasses {
  type: string | null;
  allow: string | null;
  disallow: string | null;
}

export interface NetworkRowsIn extends LimSimNetworkTables {
  /** `simINFO.netBoundary`, SUMO's convBoundary. */
  netBoundary?: [number, number, number, number];
  /** LimSim++: lane classes per lane or junction lane id. */
  laneClasses?: Map<string, LaneClasses>;
  /**
   * LimSim++: traffic lights known only from trafficLightStates; it names a light after its junction
   * and keeps no tlLogicID, so junction lanes of that junction are taken as its links.
   */
  junctionLights?: string[];
}

export interface NetworkRowsOut extends LimSimNetworkTables {
  geohashINFO: GeohashRow[];
}

/** Where stray junction-lane rows are kept on their junction. */
const STRAY_LANES = 'limsimJunctionLanes';
const FROM_JUNCTION = 'limsimFromJunction';
const TO_JUNCTION = 'limsimToJunction';

const junctionOfLane = (laneId: string): string | undefined => /^:(.*)_\d+_\d+$/.exec(laneId)?.[1];

export function networkFromLimSimRows(rows: NetworkRowsIn): ReadResult<RoadNetwork> {
  const warnings: string[] = [];
  const seenEdges = new Set<string>();
  const edgeINFO = rows.edgeINFO.filter((row, i) => {
    if (!seenEdges.has(row.id)) return seenEdges.add(row.id);
    // LimSim's `RRIMARY KEY` typo leaves edgeINFO without a key, so an id can repeat.
    warnings.push(`edgeINFO row ${i + 1}: edge ${JSON.stringify(row.id)} repeats an earlier row; left out`);
    return false;
  });
  const { network, warnings: mapped } = roadNetworkFromLimSimTables({ ...rows, edgeINFO });
  warnings.push(...mapped.filter((w) => !/no connection leads through it/.test(w)));

  const junctions = new Map(network.junctions.map((j) => [j.id, j]));
  const lanes = new Map(network.lanes.map((l) => [l.id, l]));
  for (const row of rows.junctionLaneINFO) {
    if (lanes.has(row.id)) continue;
    const junction = junctions.get(junctionOfLane(row.id) ?? '');
    if (!junction) {
      warnings.push(
        `junctionLaneINFO ${row.id}: no connection passes through it and no junction holds it; left out`,
      );
      continue;
    }
    const extra: JsonObject = (junction.extra ??= {});
    const stray = (extra[STRAY_LANES] ??= []) as JsonObject[];
    stray.push({ ...row });
  }
  // The mapper opens an internal edge for every junction-lane row; those whose lanes all stayed out are empty.
  network.edges = network.edges.filter((e) => e.function === 'normal' || e.lanes.length > 0);
  const edges = new Map(network.edges.map((e) => [e.id, e]));
  for (const row of edgeINFO) {
    const edge = edges.get(row.id)!;
    if (row.from_junction !== null && edge.from === undefined)
      (edge.extra ??= {})[FROM_JUNCTION] = row.from_junction;
    if (row.to_junction !== null && edge.to === undefined) (edge.extra ??= {})[TO_JUNCTION] = row.to_junction;
  }
  if (rows.laneClasses)
    for (const [id, classes] of rows.laneClasses) {
      const lane = lanes.get(id);
      if (lane) setClasses(lane, classes);
    }
  if (rows.junctionLights?.length) linkJunctionLights(network, rows, rows.junctionLights);
  if (rows.netBoundary) network.geoReference = { convBoundary: rows.netBoundary };
  return { network, warnings };
}

function setClasses(lane: RoadLane, classes: LaneClasses): void {
  if (classes.type) lane.type = classes.type;
  if (classes.allow) lane.allow = classes.allow.split(' ').filter(Boolean);
  if (classes.disallow) lane.disallow = classes.disallow.split(' ').filter(Boolean);
}

function linkJunctionLights(network: RoadNetwork, rows: NetworkRowsIn, lightIds: string[]): void {
  const known = new Set(network.trafficLights.map((t) => t.id));
  for (const id of lightIds)
    if (!known.has(id)) network.trafficLights.push({ id, programs: [], signals: [] });
  const lights = new Set(lightIds);
  const tlsIndex = new Map(rows.junctionLaneINFO.map((r) => [r.id, r.tlsIndex]));
  for (const c of network.connections) {
    const junction = c.via === undefined ? undefined : junctionOfLane(c.via);
    if (c.trafficLight !== undefined || junction === undefined || !lights.has(junction)) continue;
    c.trafficLight = junction;
    c.linkIndex = tlsIndex.get(c.via!) ?? 0;
  }
}

/** The network tables LimSim would write for a network, with the rows an import kept aside. */
export function limSimRowsFromNetwork(network: RoadNetwork): { rows: NetworkRowsOut; warnings: string[] } {
  const warnings: string[] = [];
  const tables = limSimTablesFromRoadNetwork(network);
  const lengths = new Map(network.lanes.map((l) => [l.id, l.length]));
  for (const row of tables.junctionLaneINFO)
    // LimSim sets a junction lane's light only where it builds the lane (via length >= 1).
    if ((lengths.get(row.id) ?? 0) < 1) {
      row.tlLogicID = null;
      row.tlsIndex = 0;
    }
  const shape = shapeFormat(network);
  const lanes = new Map(network.lanes.map((l) => [l.id, l]));
  for (const row of tables.laneINFO) row.rawShape = shape(lanes.get(row.id)!.centerLine);
  const outlines = new Map(network.junctions.map((j) => [j.id, j.outline]));
  for (const row of tables.junctionINFO) row.rawShape = shape(outlines.get(row.id)!);
  const laneIds = new Set(network.lanes.map((l) => l.id));
  for (const junction of network.junctions) {
    const stray = junction.extra?.[STRAY_LANES];
    if (!Array.isArray(stray)) continue;
    for (const row of stray as unknown as JunctionLaneRow[])
      if (!laneIds.has(row.id)) tables.junctionLaneINFO.push({ ...row });
  }
  const edges = new Map(network.edges.map((e) => [e.id, e]));
  for (const row of tables.edgeINFO) {
    const extra = edges.get(row.id)?.extra;
    if (row.from_junction === null && typeof extra?.[FROM_JUNCTION] === 'string')
      row.from_junction = extra[FROM_JUNCTION];
    if (row.to_junction === null && typeof extra?.[TO_JUNCTION] === 'string')
      row.to_junction = extra[TO_JUNCTION];
  }
  if (network.format === 'opendrive') {
    const margins = network.lanes.filter(
      (l) => l.function === 'normal' && l.type !== undefined && l.type !== 'driving',
    );
    warnings.push(
      `the road network is OpenDRIVE: roads are written as edges and lanes as SUMO-style lanes; ${margins.length} non-driving lanes (sidewalk, border, shoulder...) are written too, ${network.trafficLights.length} signals have no phase program to write, and ${network.laneMarks.length} lane marks have no LimSim table`,
    );
  }
  return { rows: { ...tables, geohashINFO: geohashRows(network, tables) }, warnings };
}

/**
 * rawShape is SUMO's `shape` attribute as LimSim copied it, and SUMO writes coordinates with two
 * decimals (`304.90`); a network whose every coordinate has at most two is written that way, so the
 * text is SUMO's own, and any other with the shortest digits that read back the same number.
 */
function shapeFormat(network: RoadNetwork): (points: readonly RoadPoint[]) => string {
  const twoDecimals = [
    ...network.lanes.map((l) => l.centerLine),
    ...network.junctions.map((j) => j.outline),
  ].every((line) => line.every((p) => p.every((c) => Number(c.toFixed(2)) === c)));
  const coordinate = twoDecimals ? (c: number): string => c.toFixed(2) : String;
  return (points) => points.map((p) => p.map(coordinate).join(',')).join(' ');
}

const CELL = 100; // m: LimSim's geohash grid
const LANE_SAMPLES = 50; // LimSim samples each lane's centre spline at 50 points
const OVERLAP = 0.1; // m: LimSim's junction-lane chord uses this much of each lane's end

const cellOf = (p: readonly number[]): string => `${Math.floor(p[0]! / CELL)},${Math.floor(p[1]! / CELL)}`;

/** Points at fractions of a polyline's length. */
function pointsAlong(line: readonly RoadPoint[], distances: readonly number[]): RoadPoint[] {
  const out: RoadPoint[] = [];
  let i = 1;
  let along = 0;
  for (const d of distances) {
    while (i < line.length - 1) {
      const step = Math.hypot(line[i]![0] - line[i - 1]![0], line[i]![1] - line[i - 1]![1]);
      if (along + step >= d) break;
      along += step;
      i++;
    }
    const a = line[i - 1] ?? line[0]!;
    const b = line[i] ?? a;
    const step = Math.hypot(b[0] - a[0], b[1] - a[1]);
    const u = step > 0 ? Math.min(1, Math.max(0, (d - along) / step)) : 0;
    out.push([a[0] + u * (b[0] - a[0]), a[1] + u * (b[1] - a[1])]);
  }
  return out;
}

const lineLength = (line: readonly RoadPoint[]): number => {
  let s = 0;
  for (let i = 1; i < line.length; i++)
    s += Math.hypot(line[i]![0] - line[i - 1]![0], line[i]![1] - line[i - 1]![1]);
  return s;
};

/**
 * LimSim's 100 m grid (`NetworkBuild.getData`): a cell lists the edges one of whose lanes' 50 centre
 * samples falls in it, and the junctions one of whose junction-lane chords (the last 0.1 m of the
 * lane in, the first 0.1 m of the lane out) does. LimSim samples a spline through the shape, simrec
 * the shape itself; they agree but for a sample within millimetres of a cell border.
 */
function geohashRows(network: RoadNetwork, tables: LimSimNetworkTables): GeohashRow[] {
  const cells = new Map<string, { edges: Set<string>; junctions: Set<string> }>();
  const cell = (key: string): { edges: Set<string>; junctions: Set<string> } => {
    let c = cells.get(key);
    if (!c) cells.set(key, (c = { edges: new Set(), junctions: new Set() }));
    return c;
  };
  const lanes = new Map(network.lanes.map((l) => [l.id, l]));
  for (const row of tables.laneINFO) {
    const line = lanes.get(row.id)?.centerLine ?? [];
    if (line.length === 0) continue;
    const length = lineLength(line);
    const at = Array.from({ length: LANE_SAMPLES }, (_, k) => (length * k) / (LANE_SAMPLES - 1));
    for (const p of pointsAlong(line, at)) cell(cellOf(p)).edges.add(row.edgeID);
  }
  const edgeTo = new Map(tables.edgeINFO.map((e) => [e.id, e.to_junction]));
  const junctionIds = new Set(tables.junctionINFO.map((j) => j.id));
  const laneEdge = new Map(tables.laneINFO.map((l) => [l.id, l.edgeID]));
  const viaLength = new Map(tables.junctionLaneINFO.map((j) => [j.id, j.length]));
  for (const c of tables.connectionINFO) {
    if (c.via === null || (viaLength.get(c.via) ?? 0) < 1) continue;
    const junction = edgeTo.get(laneEdge.get(c.fromLane) ?? '');
    const from = lanes.get(c.fromLane)?.centerLine;
    const to = lanes.get(c.toLane)?.centerLine;
    if (!junction || !junctionIds.has(junction) || !from?.length || !to?.length) continue;
    const fromLength = lineLength(from);
    const points = [
      ...pointsAlong(from, [Math.max(0, fromLength - OVERLAP), fromLength]),
      ...pointsAlong(to, [0, Math.min(OVERLAP, lineLength(to))]),
    ];
    for (const p of points) cell(cellOf(p)).junctions.add(junction);
  }
  return [...cells].map(([key, { edges, junctions }]) => {
    const [ghx, ghy] = key.split(',').map(Number) as [number, number];
    return { ghx, ghy, edges: formatIdList(edges), junctions: formatIdList(junctions) };
  });
}
