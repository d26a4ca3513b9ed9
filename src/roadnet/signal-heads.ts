import type { RoadLane, RoadNetwork, RoadPoint } from '../model/roadnet.js';

/**
 * Where a traffic light shows each of its links: SUMO gives a light no place of its own, only the
 * links it controls (a connection's `tl` and `linkIndex`), so a head stands where its link begins: at
 * the stop line (the end of the incoming lane) for vehicles, at the start of the crossing for
 * pedestrians. Several links leaving one lane stand side by side across it, in link order. Exports
 * that draw lights (MCAP's scene, OSI ground truth) place them here; a light's state string has one
 * character per link index.
 */
export interface SignalHead {
  light: string;
  linkIndex: number;
  /** The lane the link leaves from, whose traffic the head governs. */
  lane: string;
  position: [number, number, number];
  /** Radians, counter-clockwise from +x: the direction of travel of the traffic it faces. */
  heading: number;
  /** The link crosses a road on foot. */
  pedestrian: boolean;
}

/** Metres between heads of links leaving the same lane. */
const HEAD_SPACING = 0.6;

/** Metres above the ground a head's lamps are drawn at: a vehicle's head, a pedestrian's. */
export const headHeight = (head: Pick<SignalHead, 'pedestrian'>): number => (head.pedestrian ? 1.6 : 2.5);

export function signalHeads(network: RoadNetwork): SignalHead[] {
  const lanes = new Map(network.lanes.map((l) => [l.id, l] as const));
  const placed: { head: Omit<SignalHead, 'position'>; at: RoadPoint; toward: RoadPoint }[] = [];
  const seen = new Set<string>();
  for (const c of network.connections) {
    if (c.trafficLight === undefined || c.linkIndex === undefined || c.linkIndex < 0) continue;
    const key = `${c.trafficLight}\u0000${c.linkIndex}`;
    if (seen.has(key)) continue;
    const from = lanes.get(c.fromLane);
    const to = lanes.get(c.toLane);
    const crossing = to?.function === 'crossing' ? to : undefined;
    const ends = crossing ? startOf(crossing) : from ? endOf(from) : undefined;
    if (!ends) continue;
    seen.add(key);
    placed.push({
      head: {
        light: c.trafficLight,
        linkIndex: c.linkIndex,
        lane: crossing ? crossing.id : c.fromLane,
        heading: Math.atan2(ends.toward[1] - ends.at[1], ends.toward[0] - ends.at[0]),
        pedestrian: crossing !== undefined,
      },
      ...ends,
    });
  }
  // Side by side across the lane: its links in order, centred on the lane's centre line.
  const byLane = new Map<string, typeof placed>();
  for (const p of placed) byLane.set(p.head.lane, [...(byLane.get(p.head.lane) ?? []), p]);
  const heads: SignalHead[] = [];
  for (const group of byLane.values()) {
    group.sort((a, b) => a.head.linkIndex - b.head.linkIndex);
    group.forEach((p, i) => {
      const across = (i - (group.length - 1) / 2) * HEAD_SPACING;
      const left = p.head.heading + Math.PI / 2;
      heads.push({
        ...p.head,
        position: [p.at[0] + across * Math.cos(left), p.at[1] + across * Math.sin(left), p.at[2] ?? 0],
      });
    });
  }
  return heads.sort((a, b) => (a.light < b.light ? -1 : a.light > b.light ? 1 : a.linkIndex - b.linkIndex));
}

/** The lane's last point, and the point before it (for the direction of travel). */
function endOf(lane: RoadLane): { at: RoadPoint; toward: RoadPoint } | undefined {
  const n = lane.centerLine.length;
  if (n < 2) return undefined;
  const before = lane.centerLine[n - 2]!;
  const at = lane.centerLine[n - 1]!;
  return { at, toward: [2 * at[0] - before[0], 2 * at[1] - before[1]] };
}

function startOf(lane: RoadLane): { at: RoadPoint; toward: RoadPoint } | undefined {
  return lane.centerLine.length < 2 ? undefined : { at: lane.centerLine[0]!, toward: lane.centerLine[1]! };
}

/** What a link's state character shows: SUMO's r y g G s u o O (tls state characters). */
export type SignalLamp = 'red' | 'yellow' | 'green' | 'red_yellow' | 'flashing_yellow' | 'off';

export function signalLamp(state: string | undefined): SignalLamp {
  switch (state) {
    case 'r':
    case 's': // a stop sign's link: halt, then go; of the lamps, red says it
      return 'red';
    case 'y':
      return 'yellow';
    case 'g':
    case 'G':
      return 'green';
    case 'u':
      return 'red_yellow';
    case 'o':
      return 'flashing_yellow';
    default: // 'O' (off, no signal) or a link beyond the state string
      return 'off';
  }
}
