import { describeValue } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import {
  boundsOf,
  CONNECTION_DIRECTIONS,
  networkLines,
  type Connection,
  type ConnectionDirection,
  type EdgeFunction,
  type GeoReference,
  type Junction,
  type LaneFunction,
  type RoadEdge,
  type RoadLane,
  type RoadNetwork,
  type TrafficLight,
  type TrafficLightPhase,
  type TrafficLightProgram,
} from '../../model/roadnet.js';
import {
  childrenNamed,
  XmlSource,
  type ReadOptions,
  type ReadResult,
  type XmlElement,
} from '../xml/xml-source.js';

/** SUMO's default lane width when a lane declares none (netconvert's `default.lanewidth`). */
export const SUMO_DEFAULT_LANE_WIDTH = 3.2;

const EDGE_FUNCTIONS_BY_ATTRIBUTE: Record<string, EdgeFunction> = {
  normal: 'normal',
  internal: 'internal',
  crossing: 'crossing',
  walkingarea: 'walkingarea',
  connector: 'connector',
};

/** Attributes of an element the model has a field for; everything else goes to `extra`. */
function extraAttributes(element: XmlElement, mapped: readonly string[]): JsonObject | undefined {
  let extra: JsonObject | undefined;
  for (const [key, value] of Object.entries(element.attrs))
    if (!mapped.includes(key) && !key.startsWith('xmlns') && !key.startsWith('xsi:'))
      (extra ??= {})[key] = value;
  return extra;
}

function params(element: XmlElement, source: XmlSource): Record<string, string> | undefined {
  let result: Record<string, string> | undefined;
  for (const p of childrenNamed(element, 'param'))
    (result ??= {})[source.required(p, 'key')] = p.attrs.value ?? '';
  return result;
}

const words = (value: string | undefined): string[] | undefined =>
  value === undefined ? undefined : value.split(/\s+/).filter((w) => w !== '');

function boundary(
  source: XmlSource,
  element: XmlElement,
  name: string,
): [number, number, number, number] | undefined {
  const raw = element.attrs[name];
  if (raw === undefined) return undefined;
  const values = raw.split(',').map(Number);
  if (values.length !== 4 || !values.every(Number.isFinite))
    throw source.error(element, name, `expected "xmin,ymin,xmax,ymax", got ${describeValue(raw)}`);
  return values as [number, number, number, number];
}

function readLocation(source: XmlSource, location: XmlElement | undefined): GeoReference | undefined {
  if (!location) return undefined;
  const geo: GeoReference = {};
  const offset = location.attrs.netOffset;
  if (offset !== undefined) {
    const [point] = source.points(location, 'netOffset', offset);
    if (point) geo.offset = { x: point[0], y: point[1] };
  }
  const conv = boundary(source, location, 'convBoundary');
  if (conv) geo.convBoundary = conv;
  const orig = boundary(source, location, 'origBoundary');
  if (orig) geo.origBoundary = orig;
  // SUMO writes "!" for "no projection".
  const proj = location.attrs.projParameter;
  if (proj !== undefined && proj !== '!') geo.projection = proj;
  return geo;
}

function readLane(source: XmlSource, element: XmlElement, edge: RoadEdge, fn: LaneFunction): RoadLane {
  const id = source.required(element, 'id');
  const index = source.number(element, 'index');
  if (!Number.isInteger(index) || index < 0)
    throw source.error(
      element,
      'index',
      `expected an integer >= 0, got ${describeValue(element.attrs.index)}`,
    );
  const centerLine = source.points(element, 'shape', source.required(element, 'shape'));
  if (centerLine.length < (fn === 'walkingarea' ? 1 : 2))
    throw source.error(
      element,
      'shape',
      `expected at least 2 points, got ${describeValue(element.attrs.shape)}`,
    );
  const lane: RoadLane = {
    id,
    edge: edge.id,
    index,
    function: fn,
    centerLine,
    width: source.number(element, 'width', SUMO_DEFAULT_LANE_WIDTH),
    speedLimit: source.number(element, 'speed'),
    length: source.number(element, 'length'),
  };
  if (lane.length < 0) throw source.error(element, 'length', `expected >= 0, got ${lane.length}`);
  if (lane.width < 0) throw source.error(element, 'width', `expected >= 0, got ${lane.width}`);
  if (element.attrs.type !== undefined) lane.type = element.attrs.type;
  const allow = words(element.attrs.allow);
  if (allow) lane.allow = allow;
  const disallow = words(element.attrs.disallow);
  if (disallow) lane.disallow = disallow;
  const extra = extraAttributes(element, [
    'id',
    'index',
    'speed',
    'length',
    'width',
    'shape',
    'type',
    'allow',
    'disallow',
  ]);
  const laneParams = params(element, source);
  if (laneParams) (lane.extra = extra ?? {}).params = laneParams;
  else if (extra) lane.extra = extra;
  return lane;
}

function readTrafficLightProgram(source: XmlSource, element: XmlElement): TrafficLightProgram {
  const phases = childrenNamed(element, 'phase').map((p): TrafficLightPhase => {
    const phase: TrafficLightPhase = {
      duration: source.number(p, 'duration'),
      state: source.required(p, 'state'),
    };
    const minDuration = source.number(p, 'minDur', undefined);
    if (minDuration !== undefined) phase.minDuration = minDuration;
    const maxDuration = source.number(p, 'maxDur', undefined);
    if (maxDuration !== undefined) phase.maxDuration = maxDuration;
    if (p.attrs.name !== undefined) phase.name = p.attrs.name;
    const next = words(p.attrs.next);
    if (next) {
      phase.next = next.map(Number);
      if (!phase.next.every(Number.isInteger))
        throw source.error(p, 'next', `expected phase indices, got ${describeValue(p.attrs.next)}`);
    }
    const extra = extraAttributes(p, ['duration', 'state', 'minDur', 'maxDur', 'name', 'next']);
    if (extra) phase.extra = extra;
    return phase;
  });
  const program: TrafficLightProgram = {
    programId: element.attrs.programID ?? '0',
    type: element.attrs.type ?? 'static',
    offset: source.number(element, 'offset', 0),
    phases,
  };
  const programParams = params(element, source);
  if (programParams) program.params = programParams;
  const extra = extraAttributes(element, ['id', 'programID', 'type', 'offset']);
  if (extra) program.extra = extra;
  return program;
}

function readDirection(source: XmlSource, element: XmlElement): ConnectionDirection | undefined {
  const dir = element.attrs.dir;
  if (dir === undefined) return undefined;
  if (!(CONNECTION_DIRECTIONS as readonly string[]).includes(dir))
    throw source.error(
      element,
      'dir',
      `expected one of ${CONNECTION_DIRECTIONS.join(' ')}, got ${describeValue(dir)}`,
    );
  return dir as ConnectionDirection;
}

/**
 * Reads a SUMO `.net.xml` into the road-network model: every edge and lane (internal lanes with their
 * real shapes, which LimSim throws away; crossings and walking areas as such), junctions with their
 * outlines, every connection, and the traffic-light programs with durations and offsets.
 */
export function readSumoNet(text: string, options: ReadOptions = {}): ReadResult<RoadNetwork> {
  const source = new XmlSource(text, options);
  const root = source.parseRoot('net');
  const edges: RoadEdge[] = [];
  const lanes: RoadLane[] = [];
  const junctions: Junction[] = [];
  const connectionElements: XmlElement[] = [];
  const junctionElements = new Map<Junction, XmlElement>();
  const lights = new Map<string, TrafficLight>();
  const laneById = new Map<string, RoadLane>();
  const edgeIds = new Set<string>();
  const edgeEnds: { edge: RoadEdge; element: XmlElement }[] = [];
  let geoReference: GeoReference | undefined;

  for (const element of root.children) {
    switch (element.tag) {
      case 'location':
        geoReference = readLocation(source, element);
        break;
      case 'edge': {
        const id = source.required(element, 'id');
        if (edgeIds.has(id))
          throw source.error(element, 'id', `edge ${JSON.stringify(id)} is declared twice`);
        edgeIds.add(id);
        const fnName = element.attrs.function ?? 'normal';
        const fn = EDGE_FUNCTIONS_BY_ATTRIBUTE[fnName];
        if (!fn)
          throw source.error(
            element,
            'function',
            `expected one of ${Object.keys(EDGE_FUNCTIONS_BY_ATTRIBUTE).join(', ')}, got ${describeValue(fnName)}`,
          );
        const edge: RoadEdge = { id, function: fn, lanes: [] };
        if (element.attrs.type !== undefined) edge.type = element.attrs.type;
        if (element.attrs.name !== undefined) edge.name = element.attrs.name;
        const priority = source.number(element, 'priority', undefined);
        if (priority !== undefined) edge.priority = priority;
        const extra = extraAttributes(element, ['id', 'function', 'from', 'to', 'type', 'name', 'priority']);
        const edgeParams = params(element, source);
        if (edgeParams) (edge.extra = extra ?? {}).params = edgeParams;
        else if (extra) edge.extra = extra;
        const laneFunction: LaneFunction = fn === 'connector' ? 'normal' : fn;
        const edgeLanes = childrenNamed(element, 'lane').map((l) => readLane(source, l, edge, laneFunction));
        if (edgeLanes.length === 0) source.warn(element, 'edge has no lanes');
        edgeLanes.sort((a, b) => a.index - b.index);
        for (const lane of edgeLanes) {
          if (laneById.has(lane.id))
            throw source.error(element, 'id', `lane ${JSON.stringify(lane.id)} is declared twice`);
          laneById.set(lane.id, lane);
          lanes.push(lane);
          edge.lanes.push(lane.id);
        }
        edges.push(edge);
        edgeEnds.push({ edge, element });
        break;
      }
      case 'junction': {
        const junction: Junction = {
          id: source.required(element, 'id'),
          outline: source.points(element, 'shape', element.attrs.shape ?? ''),
          incomingLanes: words(element.attrs.incLanes) ?? [],
          internalLanes: words(element.attrs.intLanes) ?? [],
        };
        if (element.attrs.type !== undefined) junction.type = element.attrs.type;
        if (element.attrs.name !== undefined) junction.name = element.attrs.name;
        const x = source.number(element, 'x', undefined);
        const y = source.number(element, 'y', undefined);
        const z = source.number(element, 'z', undefined);
        if (x !== undefined && y !== undefined) junction.position = z === undefined ? [x, y] : [x, y, z];
        const extra = extraAttributes(element, [
          'id',
          'type',
          'x',
          'y',
          'z',
          'incLanes',
          'intLanes',
          'shape',
          'name',
        ]);
        if (extra) junction.extra = extra;
        junctions.push(junction);
        junctionElements.set(junction, element);
        break;
      }
      case 'connection':
        connectionElements.push(element);
        break;
      case 'tlLogic': {
        const id = source.required(element, 'id');
        let light = lights.get(id);
        if (!light) lights.set(id, (light = { id, programs: [], signals: [] }));
        const program = readTrafficLightProgram(source, element);
        if (light.programs.some((p) => p.programId === program.programId))
          throw source.error(
            element,
            'programID',
            `program ${JSON.stringify(program.programId)} of ${JSON.stringify(id)} is declared twice`,
          );
        light.programs.push(program);
        break;
      }
    }
  }

  const junctionIds = new Set<string>();
  for (const junction of junctions) {
    const element = junctionElements.get(junction)!;
    if (junctionIds.has(junction.id))
      throw source.error(element, 'id', `junction ${JSON.stringify(junction.id)} is declared twice`);
    junctionIds.add(junction.id);
    for (const key of ['incomingLanes', 'internalLanes'] as const) {
      const known = junction[key].filter((id) => laneById.has(id));
      if (known.length !== junction[key].length) {
        const attribute = key === 'incomingLanes' ? 'incLanes' : 'intLanes';
        const unknown = junction[key].filter((id) => !laneById.has(id));
        source.warn(
          element,
          `attribute ${attribute}: no lane ${unknown.map((u) => JSON.stringify(u)).join(', ')}; left out`,
        );
        junction[key] = known;
      }
    }
    if (junction.type !== 'internal')
      for (const id of junction.internalLanes) {
        const lane = laneById.get(id)!;
        if (lane.function !== 'normal') lane.junction = junction.id;
      }
  }
  for (const { edge, element } of edgeEnds)
    for (const end of ['from', 'to'] as const) {
      const junction = element.attrs[end];
      if (junction === undefined) continue;
      if (junctionIds.has(junction)) edge[end] = junction;
      else source.warn(element, `attribute ${end}: no junction ${JSON.stringify(junction)}; left out`);
    }
  // Internal edges are named `:<junction>_<n>`; a net without intLanes still tells where they belong.
  for (const lane of lanes)
    if (lane.function !== 'normal' && lane.junction === undefined) {
      const junction = /^:(.*)_\d+$/.exec(lane.edge)?.[1];
      if (junction !== undefined && junctionIds.has(junction)) lane.junction = junction;
    }

  const connections = connectionElements.map((element) => {
    const laneRef = (edgeAttr: 'from' | 'to', laneAttr: 'fromLane' | 'toLane'): string => {
      const edge = source.required(element, edgeAttr);
      const index = source.required(element, laneAttr);
      const id = `${edge}_${index}`;
      if (!laneById.has(id))
        throw source.error(
          element,
          laneAttr,
          edgeIds.has(edge)
            ? `edge ${JSON.stringify(edge)} has no lane ${describeValue(index)}`
            : `no edge ${JSON.stringify(edge)}`,
        );
      return id;
    };
    const connection: Connection = { fromLane: laneRef('from', 'fromLane'), toLane: laneRef('to', 'toLane') };
    const via = element.attrs.via;
    if (via !== undefined) {
      if (!laneById.has(via)) throw source.error(element, 'via', `no lane ${JSON.stringify(via)}`);
      connection.via = via;
    }
    const direction = readDirection(source, element);
    if (direction) connection.direction = direction;
    if (element.attrs.state !== undefined) connection.state = element.attrs.state;
    const tl = element.attrs.tl;
    if (tl !== undefined) {
      if (lights.has(tl)) connection.trafficLight = tl;
      else
        source.warn(
          element,
          `attribute tl: no tlLogic ${JSON.stringify(tl)}; the link is kept without its light`,
        );
      const linkIndex = source.number(element, 'linkIndex', undefined);
      if (linkIndex !== undefined) {
        if (!Number.isInteger(linkIndex))
          throw source.error(element, 'linkIndex', `expected an integer, got ${linkIndex}`);
        connection.linkIndex = linkIndex;
      }
    }
    const extra = extraAttributes(element, [
      'from',
      'to',
      'fromLane',
      'toLane',
      'via',
      'dir',
      'state',
      'tl',
      'linkIndex',
    ]);
    if (extra) connection.extra = extra;
    return connection;
  });

  const network: RoadNetwork = {
    format: 'sumo',
    edges,
    lanes,
    junctions,
    connections,
    trafficLights: [...lights.values()],
    laneMarks: [],
    boundary: boundsOf(networkLines({ lanes, laneMarks: [], junctions })),
    source: { format: 'sumo', text },
  };
  if (root.attrs.version !== undefined) network.version = root.attrs.version;
  if (geoReference) network.geoReference = geoReference;
  return { network, warnings: source.warnings };
}
