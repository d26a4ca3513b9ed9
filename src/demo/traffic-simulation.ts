import { invalid } from '../model/errors.js';
import type { RoadNetwork } from '../model/roadnet.js';
import { wrapAngle } from '../model/units.js';
import { idmAcceleration, safeApproachSpeed } from './car-following.js';
import { JunctionYielding } from './junction-yielding.js';
import { LaneGraph, type GraphLane, type LaneChange, type LanePlan } from './lane-graph.js';
import { PedestrianWorld } from './pedestrians.js';
import type { Random } from './random.js';
import { defaultVehicleType, type VehicleType } from '../roadnet/sumo/sumo-vehicle-types.js';
import type { VehicleDemand } from './route-files.js';
import { SignalController, signalRule, type SignalState } from './traffic-lights.js';

export interface Vehicle {
  id: string;
  type: VehicleType;
  ego: boolean;
  /** Lane ids, internal lanes included. */
  path: string[];
  /** Where the front bumper is: `path[index]`, `pos` metres along it. */
  index: number;
  pos: number;
  speed: number;
  accel: number;
  /** Of the lane limit, at most 1 (see `speedFactor` in the report). */
  speedFactor: number;
  /** Links claimed at junctions, by first internal lane, with the index in `path` where they end. */
  claims: Map<string, number>;
  /** Generated traffic keeps the ego driving: its route grows as it goes. */
  extend: boolean;
  /** Pose of the centre, updated each step. */
  x: number;
  y: number;
  yaw: number;
  yawRate: number;
  lane: string;
  lanePos: number;
  /** Curvature of the path at the centre, 1/m. */
  curvature: number;
  /** Lane changes still to make (see LaneGraph.lanePath). */
  laneChanges: LaneChange[];
  /**
   * Metres left of its lane's centre line: a lane change moves the vehicle onto the new lane at once
   * and this offset, the old lane's place, then shrinks to 0 at LATERAL_SPEED.
   */
  lateral: number;
  /** How fast `lateral` closes, m/s. */
  lateralSpeed: number;
}

export interface SimulationOptions {
  /** Seconds per step. */
  dt: number;
  random: Random;
  /** Vehicles from route files; without them, `vehicles` are generated. */
  demand?: VehicleDemand[];
  /** Generated traffic: how many vehicles other than the ego drive at once. */
  vehicles: number;
  pedestrians: number;
  warn: (message: string) => void;
}

const LOOKAHEAD = 250;
/** How fast a lane change moves sideways (m/s): a 3.2 m lane in about 3 s. */
const LATERAL_SPEED = 1.1;
/** m/s^2: how fast the sideways speed of a lane change builds up and dies away. */
const LATERAL_ACCEL = 1;
/** The headway (s) a follower on the target lane must keep for a lane change to be made. */
const CHANGE_HEADWAY = 1;
const CHORD = 2.5;
const PASSENGER = defaultVehicleType('demo.passenger');

interface Occupant {
  vehicle: Vehicle;
  /** Positions on the lane of the front and rear (clamped to the lane). */
  front: number;
  rear: number;
}

/**
 * A microscopic traffic simulation on a road network: vehicles follow their lanes with the IDM,
 * stop for red lights and for foes at junctions, keep below lane limits and their type's top speed,
 * and are inserted only where they fit; pedestrians walk the network's sidewalks and crossings.
 */
export class TrafficSimulation {
  readonly graph: LaneGraph;
  readonly lights: SignalController[];
  readonly yielding: JunctionYielding;
  readonly pedestrians: PedestrianWorld;
  readonly vehicles: Vehicle[] = [];
  signals = new Map<string, SignalState>();
  time = 0;
  private readonly options: SimulationOptions;
  private readonly random: Random;
  private pending: VehicleDemand[];
  private occupancy = new Map<string, Occupant[]>();
  private generatedCount = 0;
  private readonly entryEdges: string[];
  private readonly exitEdges: Set<string>;
  private readonly lastSpawn = new Map<string, number>();
  /** Vehicles that departed this step, for the recorder to declare. */
  departed: Vehicle[] = [];
  arrived: Vehicle[] = [];

  constructor(net: RoadNetwork, options: SimulationOptions) {
    this.options = options;
    this.random = options.random.fork('traffic');
    this.graph = new LaneGraph(net);
    if (
      !this.graph.hasDrivableLane('passenger') &&
      !(options.demand ?? []).some((v) => this.graph.hasDrivableLane(v.type.vClass))
    )
      throw invalid(
        'road network: no lane a vehicle may drive on (every lane is a sidewalk, internal or closed to cars)',
      );
    this.lights = net.trafficLights
      .map((l) => SignalController.of(l))
      .filter((c): c is SignalController => !!c);
    this.yielding = new JunctionYielding(this.graph);
    this.pedestrians = new PedestrianWorld(net, options.random.fork('pedestrians'));
    this.updateSignals();
    const edges = [...this.graph.edgeLanes.keys()].filter(
      (e) => this.graph.drivableLanes(e, 'passenger').length > 0,
    );
    const incoming = new Set(edges.flatMap((e) => this.graph.nextEdges(e, 'passenger')));
    this.exitEdges = new Set(
      edges.filter((e) => this.graph.nextEdges(e, 'passenger').every((n) => this.isReverse(e, n))),
    );
    this.entryEdges = edges.filter((e) => ![...incoming].includes(e) || this.isEntry(e));
    this.pending = [...(options.demand ?? [])];
    if (options.demand) this.egoId = (options.demand.find((d) => d.id === 'ego') ?? options.demand[0])?.id;
    if (!options.demand) this.seedGeneratedTraffic();
    for (let i = 0; i < options.pedestrians && this.pedestrians.hasWalkways; i++)
      this.pedestrians.spawn(`ped${i + 1}`);
  }

  /** An edge only reachable by turning round at its start (a fringe entry). */
  private isEntry(edge: string): boolean {
    const e = this.graph.net.edges.find((x) => x.id === edge);
    const from = e?.from;
    if (from === undefined) return false;
    return this.graph.net.junctions.find((j) => j.id === from)?.type === 'dead_end';
  }

  private isReverse(a: string, b: string): boolean {
    const ea = this.graph.net.edges.find((x) => x.id === a);
    const eb = this.graph.net.edges.find((x) => x.id === b);
    return ea?.from !== undefined && ea.from === eb?.to && ea.to === eb?.from;
  }

  private updateSignals(): void {
    this.signals = new Map(this.lights.map((l) => [l.id, l.at(this.time)]));
  }

  // ---- generated traffic -------------------------------------------------------------------------

  private randomRoute(start: string, forEgo: boolean): string[] {
    if (!forEgo && this.exitEdges.size) {
      const exits = [...this.exitEdges].filter((e) => e !== start);
      for (let attempt = 0; attempt < 6 && exits.length; attempt++) {
        const route = this.graph.route(start, this.random.pick(exits), 'passenger');
        if (route && route.length > 1 && !route.slice(1).some((e, i) => this.isReverse(route[i]!, e)))
          return route;
      }
    }
    const route = [start];
    for (let k = 0; k < 8; k++) {
      const next = this.nextEdgeChoices(route[route.length - 1]!, forEgo);
      if (next.length === 0) break;
      route.push(this.random.pick(next));
    }
    return route;
  }

  private nextEdgeChoices(edge: string, avoidExits: boolean): string[] {
    const all = this.graph.nextEdges(edge, 'passenger');
    const forward = all.filter((n) => !this.isReverse(edge, n));
    const inside = forward.filter((n) => !avoidExits || !this.exitEdges.has(n));
    return inside.length ? inside : forward.length ? forward : all;
  }

  private generatedDemand(id: string, edges: string[], depart: number): VehicleDemand {
    return {
      id,
      type: PASSENGER,
      depart,
      route: { edges },
      where: `generated vehicle ${JSON.stringify(id)}`,
    };
  }

  private seedGeneratedTraffic(): void {
    const edges = [...this.graph.edgeLanes.keys()].filter(
      (e) => this.graph.drivableLanes(e, 'passenger').length > 0,
    );
    const inner = edges.filter((e) => !this.exitEdges.has(e));
    const egoEdge = this.random.pick(inner.length ? inner : edges);
    const ego = this.insert(
      { ...this.generatedDemand('ego', this.randomRoute(egoEdge, true), 0), departSpeed: 'desired' },
      { ego: true, pos: 'random' },
    );
    if (ego) ego.extend = true;
    for (
      let attempt = 0;
      attempt < this.options.vehicles * 8 && this.generatedCount < this.options.vehicles;
      attempt++
    ) {
      const start = this.random.pick(edges);
      this.spawnGenerated(start, 'random');
    }
  }

  private spawnGenerated(start: string, pos: 'random' | 'base'): void {
    const id = `veh${this.generatedCount + 1}`;
    const demand = {
      ...this.generatedDemand(id, this.randomRoute(start, false), this.time),
      departSpeed: 'desired' as const,
    };
    if (this.insert(demand, { ego: false, pos, quiet: true })) this.generatedCount++;
  }

  private keepGeneratedTraffic(): void {
    if (this.options.demand) return;
    const others = this.vehicles.filter((v) => !v.ego).length;
    if (others >= this.options.vehicles || this.entryEdges.length === 0) return;
    const edge = this.random.pick(this.entryEdges);
    if (this.time - (this.lastSpawn.get(edge) ?? -Infinity) < 2.5) return;
    this.lastSpawn.set(edge, this.time);
    this.spawnGenerated(edge, 'base');
  }

  // ---- insertion -------------------------------------------------------------------------------

  private resolveEdges(d: VehicleDemand): string[] {
    if ('edges' in d.route) return d.route.edges;
    const stops = [d.route.from, ...d.route.via, d.route.to];
    const edges: string[] = [stops[0]!];
    for (let i = 1; i < stops.length; i++) {
      const part = this.graph.route(stops[i - 1]!, stops[i]!, d.type.vClass);
      if (!part)
        throw invalid(
          `${d.where}: no route from edge ${JSON.stringify(stops[i - 1])} to ${JSON.stringify(stops[i])} on the network`,
        );
      edges.push(...part.slice(1));
    }
    return edges;
  }

  /** Puts a vehicle on the network if it fits; undefined if it has to wait. Bad routes throw. */
  private insert(
    d: VehicleDemand,
    how: { ego: boolean; pos?: 'random' | 'base'; quiet?: boolean },
  ): Vehicle | undefined {
    const edges = this.resolveEdges(d);
    const departLane = typeof d.departLane === 'number' ? d.departLane : undefined;
    const pick = (lanes: GraphLane[]): GraphLane =>
      d.departLane === 'random' || how.pos === 'random' ? this.random.pick(lanes) : lanes[0]!;
    const lanePath = (arrivalLane?: number): LanePlan =>
      this.graph.lanePath(edges, d.type.vClass, d.where, {
        ...(departLane === undefined ? {} : { departLane }),
        ...(arrivalLane === undefined ? {} : { arrivalLane }),
        pick,
      });
    let plan: LanePlan;
    try {
      plan = lanePath(d.arrivalLane);
    } catch (error) {
      // An arrival lane may be out of reach (no lane changes after the last junction); any will do.
      if (d.arrivalLane === undefined) throw error;
      plan = lanePath();
    }
    const path = plan.path;
    const first = this.graph.lanes.get(path[0]!)!;
    const length = first.path.length;
    const type = d.type;
    let pos =
      typeof d.departPos === 'number'
        ? d.departPos < 0
          ? length + d.departPos
          : d.departPos
        : d.departPos === 'random' || how.pos === 'random'
          ? this.random.uniform(Math.min(type.length, length), length)
          : Math.min(type.length, length);
    pos = Math.max(0, Math.min(length, pos));
    const factor = Math.min(
      1,
      Math.max(
        type.speedFactor.min,
        Math.min(type.speedFactor.max, this.random.normal(type.speedFactor.mean, type.speedFactor.deviation)),
      ),
    );
    const desired = Math.min(type.maxSpeed, first.speedLimit * factor);
    // Fits only with its gap to whoever is ahead and behind on the lane.
    const occupants = this.occupancy.get(first.lane.id) ?? [];
    let leaderGap = Infinity;
    let leaderSpeed = 0;
    for (const o of occupants) {
      if (o.front > pos - type.length - type.minGap && o.rear < pos + type.minGap) return undefined;
      if (o.rear >= pos && o.rear - pos < leaderGap) {
        leaderGap = o.rear - pos;
        leaderSpeed = o.vehicle.speed;
      }
      if (o.front <= pos - type.length) {
        // The follower must be able to stop behind the newcomer.
        const gap = pos - type.length - o.front;
        if ((o.vehicle.speed * o.vehicle.speed) / (2 * o.vehicle.type.decel) > gap) return undefined;
      }
    }
    const safe = safeApproachSpeed(leaderGap - type.minGap, leaderSpeed, type.decel, this.options.dt);
    const wanted =
      typeof d.departSpeed === 'number'
        ? d.departSpeed
        : d.departSpeed === 'max' ||
            d.departSpeed === 'desired' ||
            d.departSpeed === 'speedLimit' ||
            d.departSpeed === 'avg'
          ? desired
          : d.departSpeed === 'random'
            ? this.random.uniform(0, desired)
            : 0;
    if (
      typeof d.departSpeed === 'number' &&
      d.departSpeed > Math.min(type.maxSpeed, first.speedLimit) &&
      !how.quiet
    )
      this.options.warn(
        `${d.where}: departSpeed ${d.departSpeed} m/s is above what vehicle ${JSON.stringify(d.id)} may drive there; it departs at ${desired.toFixed(2)} m/s`,
      );
    const v: Vehicle = {
      id: d.id,
      type,
      ego: how.ego,
      path,
      index: 0,
      pos,
      speed: Math.max(
        0,
        Math.min(wanted, desired, safe, this.stopSpeedAhead({ path, index: 0, pos, type } as Vehicle)),
      ),
      accel: 0,
      speedFactor: factor,
      claims: new Map(),
      extend: false,
      x: 0,
      y: 0,
      yaw: 0,
      yawRate: 0,
      lane: path[0]!,
      lanePos: 0,
      curvature: 0,
      laneChanges: plan.changes,
      lateral: 0,
      lateralSpeed: 0,
    };
    this.vehicles.push(v);
    this.registerOccupancy(v);
    this.placeCentre(v, true);
    this.departed.push(v);
    return v;
  }

  /** The speed that still stops before the first red or unclaimed junction ahead (for insertion). */
  private stopSpeedAhead(v: Vehicle): number {
    const first = this.graph.lanes.get(v.path[v.index]!)!;
    const d = first.path.length - v.pos;
    return v.path.length > 1 ? safeApproachSpeed(d, 0, v.type.decel, this.options.dt) : Infinity;
  }

  private insertPending(): void {
    const still: VehicleDemand[] = [];
    for (const d of this.pending) {
      if (d.depart > this.time + 1e-9) {
        still.push(d);
        continue;
      }
      try {
        const v = this.insert(d, { ego: d.id === this.egoId });
        if (!v) still.push(d);
      } catch (error) {
        this.options.warn(`${(error as Error).message}; vehicle ${JSON.stringify(d.id)} skipped`);
        // The ego's part passes to the next vehicle to depart.
        if (d.id === this.egoId) this.egoId = this.pending[this.pending.indexOf(d) + 1]?.id;
      }
    }
    this.pending = still;
  }

  /** With route files: the vehicle that is the ego (`ego` if there is one, else the first to depart). */
  egoId: string | undefined;

  /** Vehicles still waiting to depart (their place was taken), for the end-of-run warning. */
  get waiting(): VehicleDemand[] {
    return this.pending.filter((d) => d.depart <= this.time);
  }

  // ---- the step --------------------------------------------------------------------------------

  private registerOccupancy(v: Vehicle): void {
    let remaining = v.type.length;
    let i = v.index;
    let front = v.pos;
    while (remaining > 0 && i >= 0) {
      const lane = v.path[i]!;
      const rear = front - remaining;
      let list = this.occupancy.get(lane);
      if (!list) this.occupancy.set(lane, (list = []));
      list.push({ vehicle: v, front, rear: Math.max(0, rear) });
      if (rear >= 0) break;
      remaining = -rear;
      i--;
      if (i >= 0) front = this.graph.lanes.get(v.path[i]!)!.path.length;
    }
  }

  private rebuildOccupancy(): void {
    this.occupancy = new Map();
    for (const v of this.vehicles) this.registerOccupancy(v);
  }

  /** Whether the lane after a link has room for the vehicle, so that it does not stop inside the junction. */
  private exitHasRoom(v: Vehicle, afterIndex: number): boolean {
    const lane = v.path[afterIndex];
    if (lane === undefined) return true;
    const gl = this.graph.lanes.get(lane)!;
    let lowestRear = gl.path.length;
    let nextLane = false;
    for (const o of this.occupancy.get(lane) ?? [])
      if (o.vehicle !== v) lowestRear = Math.min(lowestRear, o.rear);
    if (afterIndex + 1 < v.path.length && lowestRear >= gl.path.length) nextLane = true;
    return nextLane || lowestRear >= Math.min(gl.path.length, v.type.length + v.type.minGap);
  }

  /** Decides speed caps for one vehicle: leader, limits ahead, lights and right of way. */
  private plan(v: Vehicle, dt: number): { speed: number; stopAt: number; leaderRear: number } {
    const type = v.type;
    let limit = type.maxSpeed;
    // Every lane the body is on bounds the speed, so the centre never runs over a lower limit.
    for (let i = v.index, covered = 0; i >= 0 && covered < type.length; i--) {
      const gl = this.graph.lanes.get(v.path[i]!)!;
      limit = Math.min(limit, gl.speedLimit * v.speedFactor);
      covered += i === v.index ? v.pos : gl.path.length;
    }
    let leaderGap = Infinity;
    let leaderSpeed = 0;
    let leaderRear = Infinity;
    let cap = Infinity;
    let stopAt = Infinity;
    // A junction not yet decided on is not braked for, but never passed without a decision.
    let undecided = Infinity;
    let distance = 0;
    for (let i = v.index; i < v.path.length && distance < LOOKAHEAD; i++) {
      const gl = this.graph.lanes.get(v.path[i]!)!;
      const from = i === v.index ? v.pos : 0;
      if (i > v.index) {
        const laneLimit = gl.speedLimit * Math.min(1, v.speedFactor);
        cap = Math.min(cap, safeApproachSpeed(distance, Math.min(gl.speedLimit, laneLimit), type.decel, dt));
        if (gl.internal && !this.graph.lanes.get(v.path[i - 1]!)!.internal && stopAt === Infinity) {
          const decision = this.mayEnter(v, i, distance);
          if (decision === 'stop') stopAt = distance;
          else if (decision === 'later') undecided = Math.min(undecided, distance);
        }
      }
      if (leaderGap === Infinity)
        for (const o of this.occupancy.get(gl.lane.id) ?? []) {
          if (o.vehicle === v || o.rear < from - 1e-9) continue;
          const gap = distance + o.rear - from;
          if (gap < leaderGap) {
            leaderGap = gap;
            leaderSpeed = o.vehicle.speed;
          }
        }
      if (leaderGap !== Infinity && stopAt !== Infinity) break;
      distance += gl.path.length - from;
    }
    if (leaderGap !== Infinity) leaderRear = leaderGap;
    // A lane still to be changed from is not driven past: the vehicle waits at its end for a gap.
    if (v.laneChanges[0]?.index === v.index) {
      const end = this.graph.lanes.get(v.path[v.index]!)!.path.length - 1 - v.pos;
      stopAt = Math.min(stopAt, Math.max(0, end));
    }
    const obstacleGap = Math.min(leaderGap, stopAt === Infinity ? Infinity : stopAt + type.minGap);
    const obstacleSpeed = stopAt < leaderGap - type.minGap ? 0 : leaderSpeed;
    const accel = idmAcceleration(type, v.speed, limit, obstacleGap, obstacleSpeed);
    let speed = v.speed + accel * dt;
    speed = Math.min(speed, limit, cap);
    if (leaderGap !== Infinity)
      speed = Math.min(speed, safeApproachSpeed(leaderGap - 1, leaderSpeed, type.decel, dt));
    if (stopAt !== Infinity) speed = Math.min(speed, safeApproachSpeed(stopAt, 0, type.decel, dt));
    speed = Math.max(0, speed, v.speed - type.emergencyDecel * dt * 2);
    const hardStop = Math.min(stopAt, undecided);
    if (hardStop !== Infinity)
      speed = Math.min(speed, safeApproachSpeed(hardStop, 0, type.emergencyDecel, dt), hardStop / dt);
    if (leaderGap !== Infinity) speed = Math.min(speed, Math.max(0, leaderGap - 0.2) / dt);
    return { speed: Math.max(0, speed), stopAt: hardStop, leaderRear };
  }

  /** Whether the vehicle may pass the stop line into the link that starts at `path[i]`, `distance` ahead. */
  private mayEnter(v: Vehicle, i: number, distance: number): 'go' | 'stop' | 'later' {
    const laneId = v.path[i]!;
    if (v.claims.has(laneId)) return 'go';
    const c = this.graph.viaOf.get(laneId);
    const ch =
      c?.trafficLight !== undefined && c.linkIndex !== undefined
        ? this.signals.get(c.trafficLight)?.state[c.linkIndex]
        : undefined;
    const rule = signalRule(ch);
    if (rule === 'stop') return 'stop';
    const braking = (v.speed * v.speed) / (2 * v.type.decel);
    if (rule === 'stop_if_able' && braking <= distance) return 'stop';
    // Claim only when the decision is due: close enough that stopping would soon be impossible.
    if (distance > braking + v.speed * this.options.dt * 2 + 3) return 'later';
    const link = this.yielding.linkStartingWith(laneId);
    let end = i;
    while (end + 1 < v.path.length && this.graph.lanes.get(v.path[end + 1]!)!.internal) end++;
    if (!this.exitHasRoom(v, end + 1)) return 'stop';
    if (!this.yielding.claimLink(link?.key ?? laneId, v.id)) return 'stop';
    v.claims.set(laneId, end);
    return 'go';
  }

  /** The point `s` metres from the start of `path[i]`, walking into the lanes before or after it. */
  private pointOnPath(v: Vehicle, i: number, s: number): { x: number; y: number } {
    let index = i;
    let at = s;
    while (at < 0 && index > 0) {
      index--;
      at += this.graph.lanes.get(v.path[index]!)!.path.length;
    }
    for (;;) {
      const len = this.graph.lanes.get(v.path[index]!)!.path.length;
      if (at <= len || index + 1 >= v.path.length) break;
      at -= len;
      index++;
    }
    return this.graph.lanes.get(v.path[index]!)!.path.at(at);
  }

  private placeCentre(v: Vehicle, first: boolean): void {
    let i = v.index;
    let s = v.pos - v.type.length / 2;
    while (s < 0 && i > 0) {
      i--;
      s += this.graph.lanes.get(v.path[i]!)!.path.length;
    }
    s = Math.max(0, s);
    const gl = this.graph.lanes.get(v.path[i]!)!;
    const at = gl.path.at(s);
    // Heading and curvature from chords a few metres either side: lane shapes are polylines, whose
    // segment headings jump at every vertex.
    const behind = this.pointOnPath(v, i, s - CHORD);
    const ahead = this.pointOnPath(v, i, s + CHORD);
    const h1 = Math.atan2(at.y - behind.y, at.x - behind.x);
    const h2 = Math.atan2(ahead.y - at.y, ahead.x - at.x);
    const span =
      (Math.hypot(at.x - behind.x, at.y - behind.y) + Math.hypot(ahead.x - at.x, ahead.y - at.y)) / 2;
    v.curvature = span > 0.5 ? wrapAngle(h2 - h1) / span : 0;
    const yaw = span > 0.5 ? Math.atan2(ahead.y - behind.y, ahead.x - behind.x) : at.heading;
    // Mid lane change: the old lane's side of the new one, closing sideways at up to LATERAL_SPEED
    // (less when slow), speeding up and slowing down at LATERAL_ACCEL so the heading eases in and out.
    let heading = yaw;
    if (v.lateral !== 0 && !first) {
      const dt = this.options.dt;
      const wanted = Math.min(
        LATERAL_SPEED,
        Math.max(v.speed * 0.3, 0.5),
        Math.sqrt(2 * LATERAL_ACCEL * Math.abs(v.lateral)),
      );
      v.lateralSpeed = Math.min(wanted, v.lateralSpeed + LATERAL_ACCEL * dt);
      const step = Math.min(Math.abs(v.lateral), Math.max(v.lateralSpeed, 0.02) * dt);
      // Moving towards the centre line: to the right (negative yaw) from a place left of it.
      const towards = -Math.sign(v.lateral);
      v.lateral += towards * step;
      if (Math.abs(v.lateral) < 1e-6) v.lateral = v.lateralSpeed = 0;
      heading = wrapAngle(yaw + towards * Math.atan2(step / dt, Math.max(v.speed, 1)));
    }
    v.yawRate = first ? v.speed * v.curvature : wrapAngle(heading - v.yaw) / this.options.dt;
    v.x = at.x - Math.sin(yaw) * v.lateral;
    v.y = at.y + Math.cos(yaw) * v.lateral;
    v.yaw = heading;
    v.lane = gl.lane.id;
    v.lanePos = s;
  }

  private extendEgoRoute(v: Vehicle): void {
    let remaining = -v.pos;
    for (let i = v.index; i < v.path.length; i++) remaining += this.graph.lanes.get(v.path[i]!)!.path.length;
    if (remaining > LOOKAHEAD + 50) return;
    const lastLane = this.graph.lanes.get(v.path[v.path.length - 1]!)!;
    const choices = this.nextEdgeChoices(lastLane.lane.edge, true);
    if (choices.length === 0) return;
    const nextEdge = this.random.pick(choices);
    const targets = this.graph.drivableLanes(nextEdge, v.type.vClass);
    const reachable = targets.filter((t) => this.graph.linkLanes(lastLane.lane.id, t.lane.id) !== undefined);
    const target: GraphLane | undefined = reachable[0];
    if (!target) return;
    const chain = this.graph.linkChain(lastLane.lane.id, target.lane.id)!;
    v.path.push(...chain.via, chain.end);
  }

  /**
   * Makes the vehicle's next lane change if it is on the lane to change from, wholly on it, and the
   * target lane has room: the leader there at least minGap plus half a second ahead, the follower
   * there at least minGap plus CHANGE_HEADWAY of its speed behind. Returns whether it changed.
   */
  private changeLane(v: Vehicle): boolean {
    const change = v.laneChanges[0];
    // One lane at a time: the last change is finished first.
    if (change?.index !== v.index || (v.pos < v.type.length && v.index > 0) || v.lateral !== 0) return false;
    const from = this.graph.lanes.get(v.path[v.index]!)!;
    const to = this.graph.lanes.get(change.lanes[0]!)!;
    const front = (v.pos * to.path.length) / from.path.length;
    const rear = front - v.type.length;
    for (const o of this.occupancy.get(to.lane.id) ?? []) {
      if (o.vehicle === v) continue;
      const ahead = o.rear - front;
      const behind = rear - o.front;
      if (ahead < v.type.minGap + v.speed * 0.5 && behind < v.type.minGap + o.vehicle.speed * CHANGE_HEADWAY)
        return false;
    }
    // The new lane at the same distance along: the old place, seen from it, is the lateral offset.
    const old = { x: v.x, y: v.y };
    const s = Math.max(0, Math.min(to.path.length, front - v.type.length / 2));
    const at = to.path.at(s);
    v.lateral = -(old.x - at.x) * Math.sin(at.heading) + (old.y - at.y) * Math.cos(at.heading);
    v.path[v.index] = to.lane.id;
    v.pos = front;
    change.lanes.shift();
    if (change.lanes.length === 0) v.laneChanges.shift();
    // Seen at once by the others changing lanes in this step (its old place stays taken until then).
    this.registerOccupancy(v);
    return true;
  }

  /** Advances the world by one step. */
  step(): void {
    const dt = this.options.dt;
    this.departed = [];
    this.arrived = [];
    this.rebuildOccupancy();
    if (this.vehicles.filter((v) => this.changeLane(v)).length) this.rebuildOccupancy();
    for (const v of this.vehicles) if (v.extend) this.extendEgoRoute(v);
    // Plans read the world as it was; moves apply them together.
    const plans = this.vehicles.map((v) => this.plan(v, dt));
    this.vehicles.forEach((v, k) => {
      const plan = plans[k]!;
      let move = plan.speed * dt;
      if (move > plan.stopAt) move = Math.max(0, plan.stopAt);
      if (move > plan.leaderRear - 0.1) move = Math.max(0, plan.leaderRear - 0.1);
      const speed = move / dt;
      v.accel = (speed - v.speed) / dt;
      v.speed = speed;
      v.pos += move;
      for (;;) {
        const len = this.graph.lanes.get(v.path[v.index]!)!.path.length;
        if (v.pos <= len || v.index + 1 >= v.path.length) break;
        v.pos -= len;
        v.index++;
      }
    });
    this.time += dt;
    this.updateSignals();
    const still: Vehicle[] = [];
    for (const v of this.vehicles) {
      const last = this.graph.lanes.get(v.path[v.path.length - 1]!)!;
      if (v.index === v.path.length - 1 && v.pos >= last.path.length - 1e-9) {
        for (const key of v.claims.keys())
          this.yielding.release(this.yielding.linkStartingWith(key)?.key ?? key, v.id);
        this.arrived.push(v);
        continue;
      }
      still.push(v);
      this.placeCentre(v, false);
      // A link is left once the rear is past its last lane.
      for (const [key, end] of v.claims) {
        let rearIndex = v.index;
        for (let s = v.pos - v.type.length; s < 0 && rearIndex > 0;) {
          rearIndex--;
          s += this.graph.lanes.get(v.path[rearIndex]!)!.path.length;
        }
        if (rearIndex > end) {
          v.claims.delete(key);
          this.yielding.release(this.yielding.linkStartingWith(key)?.key ?? key, v.id);
        }
      }
    }
    this.vehicles.length = 0;
    this.vehicles.push(...still);
    this.rebuildOccupancy();
    this.insertPending();
    this.keepGeneratedTraffic();
    this.pedestrians.step(dt, this.signals, this.yielding);
  }
}
