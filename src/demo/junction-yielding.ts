import type { LaneGraph } from './lane-graph.js';
import { polylineDistance, trimStart, type Point } from './polyline.js';

/** A way across a junction: the internal lanes one connection chains, from a normal lane's stop line. */
interface Link {
  key: string;
  fromLane: string;
  lanes: string[];
  line: Point[];
  /** Keys of links and crossing lanes whose paths come close enough to collide. */
  foes: Set<string>;
  crossings: string[];
}

// Lanes closer than this carry vehicles that would touch (two 1.8 m wide cars, with margin).
const CLEARANCE = 2.4;
// Links from the same lane share their first metres; the vehicles on them follow each other there.
const SHARED_START = 6;

/**
 * Right of way inside junctions. A vehicle (or pedestrian on a crossing) may enter a link only after
 * claiming it, and a claim is granted only when no foe link or crossing is claimed or occupied. Claims
 * are held until the vehicle has wholly left the link, so two vehicles never share a conflict area.
 * The order is first come, first served, within what the traffic lights allow.
 */
export class JunctionYielding {
  private readonly links = new Map<string, Link>();
  /** Link or crossing key -> who holds it. */
  private readonly holders = new Map<string, Set<string>>();

  constructor(graph: LaneGraph) {
    const byJunction = new Map<string, Link[]>();
    const crossingsByJunction = new Map<string, { id: string; line: Point[]; width: number }[]>();
    for (const gl of graph.lanes.values()) {
      if (gl.lane.function === 'crossing') {
        const j = gl.lane.junction ?? junctionOfEdge(gl.lane.edge);
        const list = crossingsByJunction.get(j) ?? [];
        list.push({ id: gl.lane.id, line: gl.path.points, width: gl.lane.width });
        crossingsByJunction.set(j, list);
      }
      if (gl.internal) continue;
      for (const c of gl.out) {
        if (c.via === undefined) continue;
        const lanes = graph.linkLanes(gl.lane.id, c.toLane);
        if (!lanes || lanes.length === 0) continue;
        const first = graph.lanes.get(lanes[0]!)!;
        const junction = first.lane.junction ?? junctionOfEdge(first.lane.edge);
        const line = lanes.flatMap((id) => graph.lanes.get(id)!.path.points);
        const link: Link = {
          key: lanes[0]!,
          fromLane: gl.lane.id,
          lanes,
          line,
          foes: new Set(),
          crossings: [],
        };
        this.links.set(link.key, link);
        const list = byJunction.get(junction) ?? [];
        list.push(link);
        byJunction.set(junction, list);
      }
    }
    for (const [junction, links] of byJunction) {
      for (let i = 0; i < links.length; i++)
        for (let k = i + 1; k < links.length; k++) {
          const a = links[i]!;
          const b = links[k]!;
          const distance =
            a.fromLane === b.fromLane
              ? polylineDistance(trimStart(a.line, SHARED_START), trimStart(b.line, SHARED_START))
              : polylineDistance(a.line, b.line);
          if (distance < CLEARANCE) {
            a.foes.add(b.key);
            b.foes.add(a.key);
          }
        }
      for (const crossing of crossingsByJunction.get(junction) ?? [])
        for (const link of links)
          if (polylineDistance(link.line, crossing.line) < crossing.width / 2 + 1.2) {
            link.foes.add(crossing.id);
            link.crossings.push(crossing.id);
          }
    }
  }

  /** The link that starts with internal lane `lane`, if it starts one. */
  linkStartingWith(lane: string): { key: string; lanes: string[] } | undefined {
    return this.links.get(lane);
  }

  private heldByOthers(key: string, who: string): boolean {
    const h = this.holders.get(key);
    if (!h) return false;
    for (const x of h) if (x !== who) return true;
    return false;
  }

  /** Claims a link for `who` if no foe is held; true if `who` holds it now. */
  claimLink(key: string, who: string): boolean {
    if (this.holders.get(key)?.has(who)) return true;
    const link = this.links.get(key);
    if (!link) return true;
    for (const foe of link.foes) if (this.heldByOthers(foe, who)) return false;
    this.hold(key, who);
    return true;
  }

  /** Claims a crossing for a pedestrian if no vehicle holds a link across it. */
  claimCrossing(crossing: string, who: string): boolean {
    for (const link of this.links.values())
      if (link.crossings.includes(crossing) && this.heldByOthers(link.key, who)) return false;
    this.hold(crossing, who);
    return true;
  }

  private hold(key: string, who: string): void {
    let h = this.holders.get(key);
    if (!h) this.holders.set(key, (h = new Set()));
    h.add(who);
  }

  release(key: string, who: string): void {
    const h = this.holders.get(key);
    h?.delete(who);
    if (h && h.size === 0) this.holders.delete(key);
  }
}

/** SUMO names internal edges `:<junction>_<n>`, crossings `:<junction>_c<n>`, walking areas `_w<n>`. */
function junctionOfEdge(edge: string): string {
  return /^:(.*)_[cw]?\d+$/.exec(edge)?.[1] ?? edge;
}
