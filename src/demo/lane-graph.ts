import { invalid } from '../model/errors.js';
import { isTrafficLane, type Connection, type RoadLane, type RoadNetwork } from '../model/roadnet.js';
import { Path } from './polyline.js';

/** A lane as vehicles see it: its path, limit and where it leads. */
export interface GraphLane {
  lane: RoadLane;
  path: Path;
  /** m/s; lanes without a declared limit get SUMO's default, 13.89. */
  speedLimit: number;
  internal: boolean;
  /** Connections leaving this lane (for normal lanes, towards the next edge; for internal ones, onwards). */
  out: Connection[];
}

/** A lane change on the way: at `path[index]`, to each of `lanes` in turn (neighbours, one at a time). */
export interface LaneChange {
  index: number;
  lanes: string[];
}

/** A route as driven: the lanes followed, and the lane changes made on them. */
export interface LanePlan {
  path: string[];
  changes: LaneChange[];
}

/** SUMO's vehicle classes that a lane with no `allow` still refuses by default are not modelled here. */
const DEFAULT_SPEED = 13.89;

/**
 * The network's lanes and connections as a graph for driving: which lane follows which (through the
 * internal lanes that cross junctions, however many SUMO chains), which lanes a vehicle class may use,
 * and routes between edges.
 */
export class LaneGraph {
  readonly net: RoadNetwork;
  readonly lanes = new Map<string, GraphLane>();
  /** Normal edges and their lanes, rightmost first. */
  readonly edgeLanes = new Map<string, GraphLane[]>();
  /** For internal lanes, the connection they are the `via` of (its light and link index). */
  readonly viaOf = new Map<string, Connection>();

  constructor(net: RoadNetwork) {
    this.net = net;
    for (const lane of net.lanes)
      this.lanes.set(lane.id, {
        lane,
        path: new Path(lane.centerLine, lane.length),
        speedLimit: lane.speedLimit ?? DEFAULT_SPEED,
        internal: lane.function === 'internal',
        out: [],
      });
    for (const edge of net.edges) {
      if (edge.function !== 'normal' && edge.function !== 'connector') continue;
      this.edgeLanes.set(
        edge.id,
        edge.lanes.map((id) => this.lanes.get(id)!),
      );
    }
    for (const c of net.connections) {
      this.lanes.get(c.fromLane)?.out.push(c);
      if (c.via !== undefined) this.viaOf.set(c.via, c);
    }
  }

  /** Whether `vClass` may drive on a lane (SUMO's `ignoring` class may drive anywhere). */
  allows(lane: RoadLane, vClass: string): boolean {
    if (vClass === 'ignoring') return true;
    if (lane.function === 'crossing' || lane.function === 'walkingarea') return false;
    if (!isTrafficLane(lane) && lane.function !== 'internal') return false;
    if (lane.allow) return lane.allow.includes(vClass) || lane.allow.includes('all');
    if (lane.disallow) return !lane.disallow.includes(vClass) && !lane.disallow.includes('all');
    if (lane.type === 'sidewalk' || lane.type === 'footway') return false;
    return true;
  }

  drivableLanes(edge: string, vClass: string): GraphLane[] {
    return (this.edgeLanes.get(edge) ?? []).filter((l) => this.allows(l.lane, vClass));
  }

  /** Every normal lane any vehicle of the class may drive on. */
  hasDrivableLane(vClass: string): boolean {
    for (const lanes of this.edgeLanes.values())
      if (lanes.some((l) => this.allows(l.lane, vClass))) return true;
    return false;
  }

  /**
   * The internal lanes of the link from `from` to `to` (a normal lane on the next edge), and the lane
   * they really end on: some SUMO networks chain a link's internal lane to another lane of the target
   * edge than the link names. Undefined if no link leads there.
   */
  linkChain(from: string, to: string): { via: string[]; end: string } | undefined {
    const first = this.lanes.get(from)?.out.find((x) => x.toLane === to);
    if (!first) return undefined;
    const via: string[] = [];
    let c = first;
    for (let guard = 0; c.via !== undefined && guard < 16; guard++) {
      via.push(c.via);
      const out = this.lanes.get(c.via)?.out ?? [];
      const next = out.find((x) => x.toLane === to) ?? out[0];
      if (!next) return { via, end: to };
      c = next;
    }
    return { via, end: c.toLane };
  }

  linkLanes(from: string, to: string): string[] | undefined {
    return this.linkChain(from, to)?.via;
  }

  /** The edges that follow `edge` for a vehicle class. */
  nextEdges(edge: string, vClass: string): string[] {
    const next = new Set<string>();
    for (const l of this.drivableLanes(edge, vClass))
      for (const c of l.out) {
        const to = this.lanes.get(c.toLane);
        if (to && this.allows(to.lane, vClass)) next.add(to.lane.edge);
      }
    return [...next];
  }

  edgeLength(edge: string): number {
    return this.edgeLanes.get(edge)?.[0]?.lane.length ?? 0;
  }

  /** The shortest route (by length) from one edge to another, both included; undefined if there is none. */
  route(from: string, to: string, vClass: string): string[] | undefined {
    const dist = new Map<string, number>([[from, 0]]);
    const prev = new Map<string, string>();
    const open = new Set<string>([from]);
    while (open.size) {
      let best: string | undefined;
      for (const e of open) if (best === undefined || dist.get(e)! < dist.get(best)!) best = e;
      open.delete(best!);
      if (best === to) {
        const edges = [to];
        while (edges[0] !== from) edges.unshift(prev.get(edges[0]!)!);
        return edges;
      }
      const d = dist.get(best!)! + this.edgeLength(best!);
      for (const next of this.nextEdges(best!, vClass))
        if (d < (dist.get(next) ?? Infinity)) {
          dist.set(next, d);
          prev.set(next, best!);
          open.add(next);
        }
    }
    return undefined;
  }

  /**
   * The lanes a vehicle drives for a route of edges, internal lanes included, and the lane changes it
   * needs on the way. Each edge's lanes are taken from the end backwards: a lane is usable when one of
   * its edge's exit lanes (those with a link towards the next edge's usable lanes) lies across lanes
   * the class may drive on. The vehicle keeps its lane where that lane is an exit, and otherwise
   * changes lane by lane to the nearest exit before the junction (SUMO drives such routes the same
   * way). Throws (with `what` in the message) when the route cannot be driven.
   */
  lanePath(
    edges: readonly string[],
    vClass: string,
    what: string,
    choice: { departLane?: number; arrivalLane?: number; pick: (lanes: GraphLane[]) => GraphLane },
  ): LanePlan {
    if (edges.length === 0) throw invalid(`${what}: the route has no edges`);
    for (const e of edges)
      if (!this.edgeLanes.has(e))
        throw invalid(`${what}: the route's edge ${JSON.stringify(e)} is not on the network`);
    const feasible: GraphLane[][] = new Array<GraphLane[]>(edges.length);
    const exits: GraphLane[][] = new Array<GraphLane[]>(edges.length);
    for (let k = edges.length - 1; k >= 0; k--) {
      let lanes = this.drivableLanes(edges[k]!, vClass);
      if (lanes.length === 0)
        throw invalid(`${what}: edge ${JSON.stringify(edges[k])} has no lane a ${vClass} may drive on`);
      // The vehicle does not change lanes after its last junction: an arrival lane out of reach
      // there leaves any lane to arrive on.
      if (k === edges.length - 1 && choice.arrivalLane !== undefined) {
        const wanted = lanes.filter((l) => l.lane.index === choice.arrivalLane);
        if (wanted.length) lanes = wanted;
      }
      if (k < edges.length - 1) {
        const next = feasible[k + 1]!;
        const out = lanes.filter((l) => next.some((m) => this.linkLanes(l.lane.id, m.lane.id) !== undefined));
        if (out.length === 0)
          throw invalid(
            `${what}: no connection from edge ${JSON.stringify(edges[k])} to ${JSON.stringify(edges[k + 1])}`,
          );
        exits[k] = out;
        lanes = lanes.filter((l) => this.changesTo(l, out, vClass) !== undefined);
      } else exits[k] = lanes;
      feasible[k] = lanes;
    }
    const first = feasible[0]!;
    let current =
      (choice.departLane !== undefined && first.find((l) => l.lane.index === choice.departLane)) ||
      choice.pick(first);
    const path = [current.lane.id];
    const changes: LaneChange[] = [];
    for (let k = 0; k < edges.length - 1; k++) {
      const steps = this.changesTo(current, exits[k]!, vClass)!;
      if (steps.length) {
        changes.push({ index: path.length - 1, lanes: steps.map((l) => l.lane.id) });
        current = steps[steps.length - 1]!;
      }
      const options = feasible[k + 1]!.filter(
        (m) => this.linkLanes(current.lane.id, m.lane.id) !== undefined,
      );
      options.sort(
        (a, b) => Math.abs(a.lane.index - current.lane.index) - Math.abs(b.lane.index - current.lane.index),
      );
      const chain = this.linkChain(current.lane.id, options[0]!.lane.id)!;
      path.push(...chain.via, chain.end);
      current = this.lanes.get(chain.end)!;
      // A chain that ends off the usable lanes (see linkChain) is driven as SUMO would: from there.
      if (k + 1 < edges.length - 1 && this.changesTo(current, exits[k + 1]!, vClass) === undefined)
        throw invalid(
          `${what}: the link from edge ${JSON.stringify(edges[k])} ends on lane ${current.lane.id}, from which edge ${JSON.stringify(edges[k + 2])} cannot be reached`,
        );
    }
    return { path, changes };
  }

  /**
   * The lanes to change through, one neighbour at a time, from `lane` to the nearest of `targets` on
   * its edge: empty when it is one, undefined when a lane between may not be driven.
   */
  changesTo(lane: GraphLane, targets: readonly GraphLane[], vClass: string): GraphLane[] | undefined {
    if (targets.includes(lane)) return [];
    const all = this.edgeLanes.get(lane.lane.edge) ?? [];
    let best: GraphLane[] | undefined;
    for (const target of targets) {
      const step = Math.sign(target.lane.index - lane.lane.index);
      const through: GraphLane[] = [];
      for (let i = lane.lane.index + step; ; i += step) {
        const next = all.find((l) => l.lane.index === i);
        if (!next || !this.allows(next.lane, vClass)) break;
        through.push(next);
        if (next === target) {
          if (!best || through.length < best.length) best = through;
          break;
        }
      }
    }
    return best;
  }
}
