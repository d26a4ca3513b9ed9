import { describeValue, invalid } from '../../model/errors.js';
import {
  boundsOf,
  networkLines,
  polylineLength,
  type Connection,
  type ConnectionDirection,
  type Junction,
  type RoadEdge,
  type RoadLane,
  type RoadNetwork,
  type RoadPoint,
  type TrafficLight,
} from '../../model/roadnet.js';
import type { ReadResult } from '../../roadnet/xml/xml-source.js';

/**
 * The rows of LimSim's road-network tables (master schema, `NetworkBuild.getData`), column for column.
 * A LimSim .db reader or writer moves these rows; this module maps them to and from the model.
 */
export interface LimSimNetworkTables {
  edgeINFO: { id: string; laneNumber: number; from_junction: string | null; to_junction: string | null }[];
  laneINFO: {
    id: string;
    rawShape: string;
    width: number;
    maxSpeed: number;
    edgeID: string;
    length: number;
  }[];
  junctionLaneINFO: {
    id: string;
    width: number;
    maxSpeed: number;
    length: number;
    tlLogicID: string | null;
    tlsIndex: number;
  }[];
  junctionINFO: { id: string; rawShape: string }[];
  tlLogicINFO: { id: string; tlType: string; preDefPhases: string }[];
  connectionINFO: { fromLane: string; toLane: string; direction: string | null; via: string | null }[];
}

/** What LimSim writes for a junction lane without a speed (`speed or 13.89`). */
const LIMSIM_DEFAULT_SPEED = 13.89;
const LIMSIM_DEFAULT_WIDTH = 3.2;

const formatPoints = (points: readonly RoadPoint[]): string => points.map((p) => p.join(',')).join(' ');

/**
 * How much of a shape a LimSim import reads (docs/formats/limsim.md): a lane's or junction's `rawShape` of
 * more than MAX_SHAPE_BYTES is not read at all (the lane is left out, the junction has no outline), and one
 * of more than MAX_SHAPE_POINTS points is thinned to that many, evenly, keeping both ends; each is named in a
 * warning. A lane of 40 M points took an import to 5 GB, and one of 5 M made the road network's answer 50 MB
 * and a bird's-eye view 4.9 s. SUMO's lanes have a few to a few hundred points.
 */
export const MAX_SHAPE_BYTES = 1024 * 1024;
export const MAX_SHAPE_POINTS = 10_000;

/** Every k-th point of a shape, and its last, so that at most MAX_SHAPE_POINTS are kept. */
function thinned(points: RoadPoint[], where: string, warnings: string[]): RoadPoint[] {
  if (points.length <= MAX_SHAPE_POINTS) return points;
  const every = Math.ceil((points.length - 1) / (MAX_SHAPE_POINTS - 1));
  const kept: RoadPoint[] = [];
  for (let i = 0; i < points.length - 1; i += every) kept.push(points[i]!);
  kept.push(points.at(-1)!);
  warnings.push(
    `${where}: ${points.length} points, more than ${MAX_SHAPE_POINTS}; thinned to ${kept.length} (every ${every}th and the last)`,
  );
  return kept;
}

function parsePoints(raw: string, where: string): RoadPoint[] {
  return raw
    .trim()
    .split(/\s+/)
    .filter((t) => t !== '')
    .map((token) => {
      const coords = token.split(',').map(Number);
      if ((coords.length !== 2 && coords.length !== 3) || !coords.every(Number.isFinite))
        throw invalid(`${where}: expected points "x,y x,y", got ${describeValue(raw)}`);
      return coords as RoadPoint;
    });
}

/**
 * The LimSim rows for a network, as LimSim builds them from a SUMO net: normal lanes with their shapes,
 * junction lanes without (LimSim drops them), links between normal lanes only, phase states only.
 */
export function limSimTablesFromRoadNetwork(net: RoadNetwork): LimSimNetworkTables {
  const lanesById = new Map(net.lanes.map((l) => [l.id, l]));
  const lightOf = new Map<string, Connection>();
  for (const c of net.connections)
    if (c.via !== undefined && c.trafficLight !== undefined) lightOf.set(c.via, c);
  const normalEdges = net.edges.filter((e) => e.function === 'normal');
  return {
    edgeINFO: normalEdges.map((e) => ({
      id: e.id,
      laneNumber: e.lanes.length,
      from_junction: e.from ?? null,
      to_junction: e.to ?? null,
    })),
    laneINFO: normalEdges.flatMap((e) =>
      e.lanes.map((id) => {
        const lane = lanesById.get(id)!;
        return {
          id,
          rawShape: formatPoints(lane.centerLine),
          width: lane.width,
          maxSpeed: lane.speedLimit ?? LIMSIM_DEFAULT_SPEED,
          edgeID: e.id,
          length: lane.length,
        };
      }),
    ),
    junctionLaneINFO: net.lanes
      .filter((l) => l.function !== 'normal')
      .map((l) => {
        const link = lightOf.get(l.id);
        return {
          id: l.id,
          width: l.width,
          maxSpeed: l.speedLimit ?? LIMSIM_DEFAULT_SPEED,
          length: l.length,
          tlLogicID: link?.trafficLight ?? null,
          tlsIndex: link?.linkIndex ?? 0,
        };
      }),
    junctionINFO: net.junctions
      .filter((j) => j.type !== 'internal')
      .map((j) => ({ id: j.id, rawShape: formatPoints(j.outline) })),
    tlLogicINFO: net.trafficLights
      .filter((tl) => tl.programs.length > 0)
      .map((tl) => ({
        id: tl.id,
        tlType: tl.programs[0]!.type,
        preDefPhases: tl.programs[0]!.phases.map((p) => p.state).join(' '),
      })),
    connectionINFO: net.connections
      .filter(
        (c) =>
          lanesById.get(c.fromLane)?.function === 'normal' && lanesById.get(c.toLane)?.function === 'normal',
      )
      .map((c) => ({
        fromLane: c.fromLane,
        toLane: c.toLane,
        direction: c.direction ?? null,
        via: c.via ?? null,
      })),
  };
}

/**
 * A network rebuilt from LimSim's rows. LimSim kept no junction-lane shapes, phase durations or
 * program ids, so junction lanes get the chord from their incoming lane's end to their outgoing
 * lane's start (LimSim's own geohash uses the same chords), and phases a duration of 0; each such
 * stand-in is reported as a warning.
 */
export function roadNetworkFromLimSimTables(
  tables: LimSimNetworkTables,
  sourceText = '',
): ReadResult<RoadNetwork> {
  const warnings: string[] = [];
  const junctions: Junction[] = tables.junctionINFO.map((row) => {
    const where = `junctionINFO ${row.id}.rawShape`;
    const outline = thinned(parsePoints(row.rawShape ?? '', where), where, warnings);
    return { id: row.id, outline, incomingLanes: [], internalLanes: [] };
  });
  const junctionIds = new Set(junctions.map((j) => j.id));
  const edges: RoadEdge[] = [];
  const lanes: RoadLane[] = [];
  const edgeById = new Map<string, RoadEdge>();
  for (const row of tables.edgeINFO) {
    const edge: RoadEdge = { id: row.id, function: 'normal', lanes: [] };
    if (row.from_junction !== null && junctionIds.has(row.from_junction)) edge.from = row.from_junction;
    if (row.to_junction !== null && junctionIds.has(row.to_junction)) edge.to = row.to_junction;
    edges.push(edge);
    edgeById.set(edge.id, edge);
  }
  for (const row of tables.laneINFO) {
    const edge = edgeById.get(row.edgeID);
    if (!edge) throw invalid(`laneINFO ${row.id}.edgeID: no edgeINFO ${describeValue(row.edgeID)}`);
    const index = Number(/_(\d+)$/.exec(row.id)?.[1] ?? edge.lanes.length);
    lanes.push({
      id: row.id,
      edge: edge.id,
      index,
      function: 'normal',
      centerLine: thinned(
        parsePoints(row.rawShape, `laneINFO ${row.id}.rawShape`),
        `laneINFO ${row.id}.rawShape`,
        warnings,
      ),
      width: row.width ?? LIMSIM_DEFAULT_WIDTH,
      speedLimit: row.maxSpeed,
      length: row.length,
    });
    edge.lanes[index] = row.id;
  }
  const laneById = new Map(lanes.map((l) => [l.id, l]));
  const connectionRows = new Map(tables.connectionINFO.filter((c) => c.via !== null).map((c) => [c.via!, c]));
  let chords = 0;
  for (const row of tables.junctionLaneINFO) {
    const edgeId = row.id.replace(/_\d+$/, '');
    let edge = edgeById.get(edgeId);
    if (!edge) {
      edge = { id: edgeId, function: 'internal', lanes: [] };
      edges.push(edge);
      edgeById.set(edgeId, edge);
    }
    const link = connectionRows.get(row.id);
    const from = link && laneById.get(link.fromLane)?.centerLine.at(-1);
    const to = link && laneById.get(link.toLane)?.centerLine[0];
    const centerLine: RoadPoint[] = from && to ? [from, to] : [];
    if (centerLine.length === 0)
      warnings.push(`junctionLaneINFO ${row.id}: no connection leads through it; left out`);
    else {
      chords++;
      const index = Number(/_(\d+)$/.exec(row.id)?.[1] ?? 0);
      const lane: RoadLane = {
        id: row.id,
        edge: edgeId,
        index,
        function: 'internal',
        centerLine,
        width: row.width,
        speedLimit: row.maxSpeed,
        length: row.length ?? polylineLength(centerLine),
      };
      const junction = /^:(.*)_\d+_\d+$/.exec(row.id)?.[1];
      if (junction !== undefined && junctionIds.has(junction)) {
        lane.junction = junction;
        junctions.find((j) => j.id === junction)!.internalLanes.push(row.id);
      }
      lanes.push(lane);
      laneById.set(lane.id, lane);
      edge.lanes[index] = row.id;
    }
  }
  for (const edge of edges) edge.lanes = edge.lanes.filter((id) => id !== undefined);
  if (chords > 0)
    warnings.push(`${chords} junction lanes drawn as chords: LimSim does not keep their shapes`);

  const trafficLights: TrafficLight[] = tables.tlLogicINFO.map((row) => ({
    id: row.id,
    programs: [
      {
        programId: '0',
        type: row.tlType,
        offset: 0,
        phases: row.preDefPhases.split(' ').map((state) => ({ duration: 0, state })),
      },
    ],
    signals: [],
  }));
  if (trafficLights.length > 0)
    warnings.push('traffic-light phases have no durations: LimSim does not keep them');
  const lightIds = new Set(trafficLights.map((t) => t.id));
  const lightOfLane = new Map(
    tables.junctionLaneINFO.filter((r) => r.tlLogicID !== null).map((r) => [r.id, r]),
  );
  const connections: Connection[] = [];
  for (const row of tables.connectionINFO) {
    if (!laneById.has(row.fromLane) || !laneById.has(row.toLane)) {
      warnings.push(`connectionINFO ${row.fromLane} -> ${row.toLane}: no such lane; left out`);
      continue;
    }
    const connection: Connection = { fromLane: row.fromLane, toLane: row.toLane };
    if (row.via !== null && laneById.has(row.via)) connection.via = row.via;
    if (row.direction !== null) connection.direction = row.direction as ConnectionDirection;
    const light = connection.via === undefined ? undefined : lightOfLane.get(connection.via);
    if (light && lightIds.has(light.tlLogicID!)) {
      connection.trafficLight = light.tlLogicID!;
      connection.linkIndex = light.tlsIndex;
    }
    connections.push(connection);
    if (connection.via) {
      const junction = laneById.get(connection.via)?.junction;
      const j = junction === undefined ? undefined : junctions.find((x) => x.id === junction);
      if (j && !j.incomingLanes.includes(row.fromLane)) j.incomingLanes.push(row.fromLane);
    }
  }
  const network: RoadNetwork = {
    format: 'sumo',
    edges,
    lanes,
    junctions,
    connections,
    trafficLights,
    laneMarks: [],
    boundary: boundsOf(networkLines({ lanes, laneMarks: [], junctions })),
    source: { format: 'sumo', text: sourceText },
  };
  return { network, warnings };
}
