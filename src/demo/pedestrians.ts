import type { RoadLane, RoadNetwork } from '../model/roadnet.js';
import { Path, pointInPolygon, pointPolylineDistance, type Point } from './polyline.js';
import type { Random } from './random.js';
import { signalRule, type SignalState } from './traffic-lights.js';
import type { JunctionYielding } from './junction-yielding.js';

/** One end of a sidewalk or crossing, and the walking area it opens onto. */
interface LaneEnd {
  lane: string;
  end: 'start' | 'end';
  point: Point;
  area?: string;
}

interface WalkLane {
  lane: RoadLane;
  path: Path;
  crossing: boolean;
  /** The light and link index that control entering this crossing. */
  signal?: { light: string; index: number };
}

export interface Pedestrian {
  id: string;
  speed: number;
  /** Metres to the left of the lane's centre line, so that walkers do not all tread one line. */
  offset: number;
  /** Walking along a lane (`dir` +1 with it, -1 against it), or across a walking area from one end to another. */
  on:
    | { kind: 'lane'; lane: string; s: number; dir: 1 | -1 }
    | { kind: 'area'; area: string; from: LaneEnd; to: LaneEnd; s: number };
  waiting: boolean;
  x: number;
  y: number;
  yaw: number;
  moved: number;
}

const isWalkable = (lane: RoadLane): boolean =>
  lane.function === 'crossing' ||
  lane.function === 'walkingarea' ||
  (lane.function === 'normal' &&
    (lane.type === 'sidewalk' ||
      (lane.allow !== undefined && lane.allow.length === 1 && lane.allow[0] === 'pedestrian')));

const OFFSET_FADE = 2;
// A lane end this close to a walking area's outline opens onto it (SUMO draws them touching).
const END_TOLERANCE = 1.5;

/**
 * Pedestrians walk sidewalks in either direction; at a walking area they pick another sidewalk or a
 * crossing that opens onto it and walk straight to it; a crossing is entered only on its green and
 * when no vehicle holds a way across it; at a dead end they turn round.
 */
export class PedestrianWorld {
  private readonly lanes = new Map<string, WalkLane>();
  private readonly areas = new Map<string, { polygon: Point[]; ends: LaneEnd[] }>();
  private readonly ends = new Map<string, LaneEnd>();
  readonly walkers: Pedestrian[] = [];
  private readonly random: Random;

  constructor(net: RoadNetwork, random: Random) {
    this.random = random;
    const signals = new Map<string, { light: string; index: number }>();
    for (const c of net.connections)
      if (c.trafficLight !== undefined && c.linkIndex !== undefined && c.linkIndex >= 0)
        signals.set(c.toLane, { light: c.trafficLight, index: c.linkIndex });
    for (const lane of net.lanes) {
      if (!isWalkable(lane)) continue;
      if (lane.function === 'walkingarea') {
        this.areas.set(lane.id, { polygon: lane.centerLine.map((p) => [p[0], p[1]] as const), ends: [] });
        continue;
      }
      const w: WalkLane = {
        lane,
        path: new Path(lane.centerLine, lane.length),
        crossing: lane.function === 'crossing',
      };
      const signal = signals.get(lane.id);
      if (w.crossing && signal) w.signal = signal;
      this.lanes.set(lane.id, w);
    }
    for (const w of this.lanes.values())
      for (const end of ['start', 'end'] as const) {
        const point = end === 'start' ? w.path.start : w.path.end;
        const laneEnd: LaneEnd = { lane: w.lane.id, end, point };
        for (const [id, area] of this.areas)
          if (
            area.polygon.length >= 3 &&
            (pointInPolygon(point, area.polygon) ||
              pointPolylineDistance(point, [...area.polygon, area.polygon[0]!]) < END_TOLERANCE)
          ) {
            laneEnd.area = id;
            area.ends.push(laneEnd);
            break;
          }
        this.ends.set(`${w.lane.id}|${end}`, laneEnd);
      }
  }

  get hasWalkways(): boolean {
    for (const w of this.lanes.values()) if (!w.crossing) return true;
    return false;
  }

  get hasWalkingAreas(): boolean {
    return this.areas.size > 0;
  }

  /** Adds a pedestrian somewhere on a sidewalk. */
  spawn(id: string): Pedestrian | undefined {
    const sidewalks = [...this.lanes.values()].filter((w) => !w.crossing && w.path.length > 2);
    if (sidewalks.length === 0) return undefined;
    const w = this.random.pick(sidewalks);
    const p: Pedestrian = {
      id,
      speed: Math.max(0.8, Math.min(1.8, this.random.normal(1.3, 0.2))),
      offset: this.random.uniform(-0.4, 0.4) * Math.min(1, w.lane.width / 2),
      on: {
        kind: 'lane',
        lane: w.lane.id,
        s: this.random.uniform(1, w.path.length - 1),
        dir: this.random.next() < 0.5 ? 1 : -1,
      },
      waiting: false,
      x: 0,
      y: 0,
      yaw: 0,
      moved: 0,
    };
    this.place(p);
    this.walkers.push(p);
    return p;
  }

  step(dt: number, signals: ReadonlyMap<string, SignalState>, yielding: JunctionYielding): void {
    for (const p of this.walkers) {
      const x = p.x;
      const y = p.y;
      this.advance(p, p.speed * dt, signals, yielding);
      this.place(p);
      p.moved = Math.hypot(p.x - x, p.y - y);
    }
  }

  private advance(
    p: Pedestrian,
    distance: number,
    signals: ReadonlyMap<string, SignalState>,
    yielding: JunctionYielding,
  ): void {
    let left = distance;
    for (let guard = 0; left > 1e-9 && guard < 8; guard++) {
      if (p.on.kind === 'lane') {
        const w = this.lanes.get(p.on.lane)!;
        const target = p.on.dir === 1 ? w.path.length : 0;
        const room = Math.abs(target - p.on.s);
        if (left < room) {
          p.on.s += p.on.dir * left;
          return;
        }
        left -= room;
        p.on.s = target;
        if (w.crossing) yielding.release(w.lane.id, p.id);
        const here = this.ends.get(`${w.lane.id}|${p.on.dir === 1 ? 'end' : 'start'}`)!;
        const area = here.area === undefined ? undefined : this.areas.get(here.area);
        const choices = area ? area.ends.filter((e) => e !== here) : [];
        if (!area || choices.length === 0) {
          if (w.crossing) return;
          p.on.dir = p.on.dir === 1 ? -1 : 1;
          continue;
        }
        p.on = { kind: 'area', area: here.area!, from: here, to: this.random.pick(choices), s: 0 };
      } else {
        const length = Math.hypot(
          p.on.to.point[0] - p.on.from.point[0],
          p.on.to.point[1] - p.on.from.point[1],
        );
        if (left < length - p.on.s) {
          p.on.s += left;
          return;
        }
        const next = this.lanes.get(p.on.to.lane)!;
        if (next.crossing && !this.mayCross(p, next, signals, yielding)) {
          p.on.s = length;
          p.waiting = true;
          return;
        }
        p.waiting = false;
        left -= length - p.on.s;
        p.on = {
          kind: 'lane',
          lane: next.lane.id,
          s: p.on.to.end === 'start' ? 0 : next.path.length,
          dir: p.on.to.end === 'start' ? 1 : -1,
        };
      }
    }
  }

  private mayCross(
    p: Pedestrian,
    crossing: WalkLane,
    signals: ReadonlyMap<string, SignalState>,
    yielding: JunctionYielding,
  ): boolean {
    if (crossing.signal) {
      const ch = signals.get(crossing.signal.light)?.state[crossing.signal.index];
      if (signalRule(ch) !== 'go' && signalRule(ch) !== 'yield') return false;
    }
    return yielding.claimCrossing(crossing.lane.id, p.id);
  }

  private place(p: Pedestrian): void {
    if (p.on.kind === 'lane') {
      const w = this.lanes.get(p.on.lane)!;
      const at = w.path.at(p.on.s);
      const heading = p.on.dir === 1 ? at.heading : at.heading + Math.PI;
      // The offset fades out near the lane's ends, where walkers meet the walking areas' straight legs.
      const fromEnd = Math.min(p.on.s, w.path.length - p.on.s);
      const offset = p.offset * Math.max(0, Math.min(1, fromEnd / OFFSET_FADE));
      p.x = at.x - Math.sin(heading) * offset;
      p.y = at.y + Math.cos(heading) * offset;
      p.yaw = heading;
    } else {
      const { from, to, s } = p.on;
      const dx = to.point[0] - from.point[0];
      const dy = to.point[1] - from.point[1];
      const length = Math.hypot(dx, dy);
      const f = length > 0 ? s / length : 1;
      p.x = from.point[0] + dx * f;
      p.y = from.point[1] + dy * f;
      if (length > 0) p.yaw = Math.atan2(dy, dx);
    }
  }

  /** The lane (or walking area) a pedestrian is on and how far along it. */
  laneOf(p: Pedestrian): { lane: string; lanePos: number } {
    return p.on.kind === 'lane' ? { lane: p.on.lane, lanePos: p.on.s } : { lane: p.on.area, lanePos: p.on.s };
  }
}
