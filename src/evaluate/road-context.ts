import type { Connection, RoadLane, RoadNetwork } from '../model/roadnet.js';
import { lastAtOrBefore } from '../model/sorted-search.js';
import type { StoreBackend } from '../model/store-port.js';
import { LaneIndex, type LanePosition } from '../roadnet/spatial-index.js';
import type { ActorTrack } from './actor-tracks.js';

/** What the road detectors look up: the run's road network, indexed, and the lanes its signals control. */
export interface RoadContext {
  net: RoadNetwork;
  index: LaneIndex;
  lanes: Map<string, RoadLane>;
  /** Internal lane (or to-lane when no via) -> the signal that controls it. */
  signalOfVia: Map<string, Connection>;
  /** Lanes that end at a signal: a vehicle standing on one may be waiting for it. */
  signalledFromLanes: Map<string, Connection[]>;
}

export function roadContext(net: RoadNetwork): RoadContext {
  const signalOfVia = new Map<string, Connection>();
  const signalledFromLanes = new Map<string, Connection[]>();
  for (const c of net.connections) {
    if (c.trafficLight === undefined || c.linkIndex === undefined) continue;
    signalOfVia.set(c.via ?? c.toLane, c);
    signalledFromLanes.set(c.fromLane, [...(signalledFromLanes.get(c.fromLane) ?? []), c]);
  }
  return {
    net,
    index: LaneIndex.build(net),
    lanes: new Map(net.lanes.map((l) => [l.id, l])),
    signalOfVia,
    signalledFromLanes,
  };
}

/**
 * Where the actor is on the road at its sample k: on the lane it says it is on where that is near, else
 * on the lane under it; undefined off the road.
 */
export function positionOnRoad(road: RoadContext, track: ActorTrack, k: number): LanePosition | undefined {
  const x = track.x[k]!;
  const y = track.y[k]!;
  const named = track.lane[k] ? road.lanes.get(track.lane[k]) : undefined;
  return named
    ? road.index.lanesNear(x, y, 20).find((p) => p.lane.id === named.id)
    : road.index.locate(x, y, { maxDistance: 10 });
}

/** Traffic-light states over time: each light's `state` strings, by light. */
export type SignalStates = Map<string, { t: number[]; state: string[] }>;

/** Traffic-light states over time: each light's `state` strings, from the run's signal streams. */
export async function loadSignals(store: StoreBackend, run: number): Promise<SignalStates> {
  const [actors, streams] = await Promise.all([store.listActors(run), store.listStreams(run)]);
  const lights = new Set(actors.filter((a) => a.kind === 'traffic_light').map((a) => a.id));
  const signals: SignalStates = new Map();
  for (const s of streams) {
    if (
      s.actor === null ||
      !lights.has(s.actor) ||
      !s.fields.some((f) => f.name === 'state' && f.type === 'string')
    )
      continue;
    const series = { t: [] as number[], state: [] as string[] };
    for await (const batch of store.readSamples({ run, stream: s.id }))
      for (const sample of batch)
        if (typeof sample.state === 'string') {
          series.t.push(sample.t);
          series.state.push(sample.state);
        }
    signals.set(s.actor, series);
  }
  return signals;
}

export function signalStateAt(
  series: { t: number[]; state: string[] } | undefined,
  t: number,
): string | undefined {
  if (!series) return undefined;
  const found = lastAtOrBefore(series.t, t);
  return found < 0 ? undefined : series.state[found];
}

export const isRed = (ch: string | undefined): boolean => ch === 'r' || ch === 'R' || ch === 's';
