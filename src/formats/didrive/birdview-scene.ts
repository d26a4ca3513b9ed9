/**
 * A run's bird's-eye scenes: what DI-drive's BeVWrapper takes from CARLA (the map, every actor's
 * bounding box, the lights' states, the hero's route) taken from what simrec stores (the road network
 * attachment, each actor's `state` samples and extents, the lights' `signal` streams).
 *
 * Choices where CARLA and a simrec run differ, written down here and in docs/formats/didrive.md:
 * - A light is drawn where the lane it controls ends (its stop line): simrec's networks place no
 *   light heads, CARLA draws each at its actor's location. Each controlled link draws its own state.
 * - The route is the path the ego drives for the rest of the run, 50 m of it: CARLA's planner draws
 *   the waypoints it will drive, which a recording knows only as what was driven.
 * - An actor is in a frame's scene from its first state sample to one step after its last (a
 *   vehicle that has left the simulation is not drawn where it was last seen).
 */
import { invalid } from '../../model/errors.js';
import type { RoadLane, RoadNetwork, RoadPoint } from '../../model/roadnet.js';
import { isMarginLane } from '../../model/roadnet.js';
import type { ActorInfo } from '../../model/run.js';
import { absenceAt, usualSampleInterval } from '../../model/presence.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import type { RunSource } from '../../model/run-ports.js';
import { readWholeStream, StreamWalk, type SampleSeries } from '../../model/sample-series.js';
import { lastAtOrBefore } from '../../model/sorted-search.js';
import type { Sample } from '../../model/stream.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { TL_STATE } from './didrive-layout.js';
import { renderBirdview, type Birdview, type BirdviewScene, type BoxActor } from './birdview.js';
import { signalToTlState } from './route-context.js';

const ROUTE_AHEAD = 50;
const DEFAULT_LANE_WIDTH = 3.5;
/** CARLA's default car and walker boxes, for actors declared without extents. */
const DEFAULT_EXTENTS: Record<string, { length: number; width: number }> = {
  pedestrian: { length: 0.6, width: 0.6 },
  cyclist: { length: 1.8, width: 0.8 },
  vehicle: { length: 4.5, width: 1.8 },
};
const PEDESTRIAN_KINDS = new Set(['pedestrian']);
const NOT_ON_THE_ROAD = new Set(['traffic_light', 'sensor', 'ego']);

/** An actor drawn in the scenes besides the ego: where its states are and how to tell it has gone. */
interface Drawn {
  actor: ActorInfo;
  stream: string;
  /** The state stream's usual sample interval, for the staleness rule (model/presence.ts). */
  usual: number | null;
}

/**
 * What a run's bird's-eye scenes share whatever the moment: its map, the ego's states (whole: the route
 * is the path it drives next), which actors and lights are drawn and from which streams.
 */
export interface BirdviewBasis {
  network: RoadNetwork | undefined;
  /** Time range of the ego's states, microseconds. */
  begin: number;
  end: number;
  ego: ActorInfo;
  /** Kept as columns: a server drawing a long run's bird's-eye views holds no object per sample. */
  egoSamples: SampleSeries;
  others: Drawn[];
  /** Each light's `signal` stream, by the light's actor id. */
  lights: Map<string, string>;
  lanes: BirdviewScene['lanes'];
  areas: RoadPoint[][];
  laneById: Map<string, RoadLane>;
  controlled: NonNullable<RoadNetwork['connections']>;
}

export interface BirdviewSource {
  network: RoadNetwork | undefined;
  /** Time range of the ego's states, microseconds. */
  begin: number;
  end: number;
  /**
   * A walk through the run's scenes: the function it gives draws the scene at t, for times that never
   * go back (each call reads on). A walk holds every sample's time and a window of each stream, not the
   * run; each pass over the frames takes a walk of its own.
   */
  walk(): Promise<(t: number) => Promise<BirdviewScene>>;
}

/** A run's basis: its map and the ego's states read, every other actor's only named. */
export async function loadBirdviewBasis(source: RunSource): Promise<BirdviewBasis> {
  const runId = source.run.id;
  const [actors, streams, network] = await Promise.all([
    source.actors(),
    source.streams(),
    readRoadNetwork(source, runId),
  ]);
  const ego = actors.find((a) => a.kind === 'ego');
  if (!ego) throw invalid(`run ${runId}: no actor of kind ego; a bird's-eye view is drawn around the ego`);
  const stateOf = new Map(
    streams
      .filter((s) => s.name === STATE_STREAM && s.actor !== null && s.samples > 0)
      .map((s) => [s.actor!, s] as const),
  );
  const egoStream = stateOf.get(ego.id);
  if (!egoStream) throw invalid(`run ${runId}: the ego ${ego.id} has no ${STATE_STREAM} samples`);
  const others: Drawn[] = [];
  for (const actor of actors) {
    const stream = stateOf.get(actor.id);
    if (!stream || NOT_ON_THE_ROAD.has(actor.kind)) continue;
    others.push({ actor, stream: stream.id, usual: usualSampleInterval(stream, actor.presence) });
  }
  const lights = new Map<string, string>();
  const lightIds = new Set(actors.filter((a) => a.kind === 'traffic_light').map((a) => a.id));
  for (const s of streams)
    if (s.actor !== null && lightIds.has(s.actor) && s.name === 'signal' && s.samples > 0)
      lights.set(s.actor, s.id);
  const egoSamples = await readWholeStream(source, egoStream);
  const laneById = new Map(network?.lanes.map((l) => [l.id, l]));
  return {
    network,
    begin: egoSamples.times[0]!,
    end: egoSamples.times[egoSamples.length - 1]!,
    ego,
    egoSamples,
    others,
    lights,
    lanes: network ? roadLanes(network) : [],
    areas: network ? network.junctions.filter((j) => j.outline.length >= 3).map((j) => j.outline) : [],
    laneById,
    controlled: (network?.connections ?? []).filter(
      (c) => c.trafficLight !== undefined && c.linkIndex !== undefined && laneById.has(c.fromLane),
    ),
  };
}

/**
 * Every moment's scene of a run in time order: for a writer that draws every frame of a run
 * (write-didrive.ts), the other actors' and the lights' streams walked a window at a time: read whole,
 * a long run's states were all in memory at once. One moment alone is read with birdviewSceneAt.
 */
export async function loadBirdviewSource(source: RunSource): Promise<BirdviewSource> {
  const basis = await loadBirdviewBasis(source);
  const infos = new Map((await source.streams()).map((s) => [s.id, s]));
  const walked = [...basis.others.map((o) => o.stream), ...basis.lights.values()].map((id) => infos.get(id)!);
  return {
    network: basis.network,
    begin: basis.begin,
    end: basis.end,
    async walk() {
      const { walk, series } = await StreamWalk.over(source, walked);
      let last = -Infinity;
      return async (t) => {
        if (t < last) throw new RangeError(`a walk through a run's scenes goes forward: ${t} after ${last}`);
        last = t;
        await walk.advanceTo(t);
        return sceneOf(
          basis,
          t,
          basis.others.map((o) => series.get(o.stream)!.latestAt(t)),
          (light) => {
            const stream = basis.lights.get(light);
            return stream === undefined ? undefined : series.get(stream)!.latestAt(t)?.state;
          },
        );
      };
    },
  };
}

/**
 * The scene at t read from the store for that moment only: each actor's latest state and each light's
 * latest `state`, from the blocks that hold them (a server drawing a view of an hour of traffic reads
 * a block per actor, not the run). The same scene as loadBirdviewSource's.
 */
export async function birdviewSceneAt(
  basis: BirdviewBasis,
  source: RunSource,
  t: number,
): Promise<BirdviewScene> {
  const states = await source.bracket({
    streams: basis.others.map((o) => o.stream),
    t,
    after: false,
    readAhead: false,
  });
  const lightIds = [...basis.lights.keys()];
  const signals = lightIds.length
    ? await source.bracket({
        streams: lightIds.map((id) => basis.lights.get(id)!),
        t,
        fields: ['state'],
        after: false,
        readAhead: false,
      })
    : [];
  const lightState = new Map(lightIds.map((id, i) => [id, signals[i]!.before?.state]));
  return sceneOf(
    basis,
    t,
    states.map((b) => b.before),
    (light) => lightState.get(light),
  );
}

/** The scene at t from each other actor's latest state (in `basis.others`' order) and the lights'. */
function sceneOf(
  basis: BirdviewBasis,
  t: number,
  latest: readonly (Sample | undefined)[],
  lightStateOf: (light: string) => unknown,
): BirdviewScene {
  const { egoSamples, laneById } = basis;
  const egoState = egoSamples.latestAt(t) ?? egoSamples.at(0);
  const hero = box(basis.ego, egoState);
  const vehicles: BoxActor[] = [];
  const pedestrians: BoxActor[] = [];
  basis.others.forEach((other, i) => {
    const s = latest[i];
    // Drawn only where present, by the rules every scene keeps (the run's presence, then staleness).
    if (!s || absenceAt(other.actor.presence, other.usual, s.t, t) !== null) return;
    (PEDESTRIAN_KINDS.has(other.actor.kind) ? pedestrians : vehicles).push(box(other.actor, s));
  });
  const lights: BirdviewScene['lights'] = [];
  const drawn = new Set<string>();
  for (const c of basis.controlled) {
    const state = lightStateOf(c.trafficLight!);
    const colour = typeof state === 'string' ? signalToTlState(state[c.linkIndex!]) : TL_STATE.OFF;
    const channel =
      colour === TL_STATE.RED
        ? 'red_light'
        : colour === TL_STATE.YELLOW
          ? 'yellow_light'
          : colour === TL_STATE.GREEN
            ? 'green_light'
            : undefined;
    if (!channel || drawn.has(`${c.fromLane} ${channel}`)) continue;
    drawn.add(`${c.fromLane} ${channel}`);
    const end = laneById.get(c.fromLane)!.centerLine.at(-1)!;
    lights.push({ x: end[0], y: end[1], channel });
  }
  const egoLane = typeof egoState.lane === 'string' ? laneById.get(egoState.lane) : undefined;
  return {
    hero,
    lanes: basis.lanes,
    areas: basis.areas,
    vehicles,
    pedestrians,
    lights,
    // map_utils draws the route `world_to_pixel_width(lane_width * 0.5)` wide.
    route: { points: routeAhead(egoSamples, t), width: (egoLane?.width ?? DEFAULT_LANE_WIDTH) * 0.5 },
  };
}

function box(actor: ActorInfo, s: Sample): BoxActor {
  const size = actor.extents ?? DEFAULT_EXTENTS[actor.kind] ?? DEFAULT_EXTENTS.vehicle!;
  return { x: Number(s.x), y: Number(s.y), yaw: Number(s.yaw ?? 0), length: size.length, width: size.width };
}

/** Lanes CARLA's map would hold: the ones vehicles drive, with lane lines on the normal ones. */
function roadLanes(network: RoadNetwork): BirdviewScene['lanes'] {
  const edges = new Map(network.edges.map((e) => [e.id, e]));
  const laneById = new Map(network.lanes.map((l) => [l.id, l]));
  const driving = (l: RoadLane | undefined): boolean =>
    l !== undefined &&
    (l.function === 'normal' || l.function === 'internal') &&
    !isMarginLane(l) &&
    l.type !== 'sidewalk' &&
    !(l.allow && l.allow.length > 0 && l.allow.every((c) => c === 'pedestrian'));
  return network.lanes.filter(driving).map((lane) => {
    const out: BirdviewScene['lanes'][number] = { centerLine: lane.centerLine, width: lane.width };
    if (lane.function !== 'normal') return out;
    // A line between two lanes of one road is broken; a road's outer lines are solid.
    const siblings = edges.get(lane.edge)?.lanes ?? [];
    const left = laneById.get(siblings[lane.index + 1] ?? '');
    const right = lane.index > 0 ? laneById.get(siblings[lane.index - 1] ?? '') : undefined;
    out.leftLine = driving(left) ? 'broken' : 'solid';
    out.rightLine = driving(right) ? 'broken' : 'solid';
    return out;
  });
}

function routeAhead(samples: SampleSeries, t: number): RoadPoint[] {
  const points: RoadPoint[] = [];
  let length = 0;
  // From the first sample at or after t (each frame used to walk the ego's samples from the run's start).
  // Back over samples at t itself: time may stand still, and each of them is a point of the route.
  let before = lastAtOrBefore(samples.times, t);
  while (before >= 0 && samples.times[before] === t) before--;
  for (let i = before + 1; i < samples.length; i++) {
    const s = samples.at(i);
    const p: RoadPoint = [Number(s.x), Number(s.y)];
    const last = points.at(-1);
    if (last) length += Math.hypot(p[0] - last[0], p[1] - last[1]);
    points.push(p);
    if (length >= ROUTE_AHEAD) break;
  }
  return points;
}

/** The birdview at t (microseconds, absolute) of a run, as DI-drive's simulator would have drawn it. */
export async function birdviewAt(
  run: RunSource,
  t: number,
): Promise<{ birdview: Birdview; scene: BirdviewScene; network: boolean }> {
  const basis = await loadBirdviewBasis(run);
  const scene = await birdviewSceneAt(basis, run, t);
  return { birdview: renderBirdview(scene), scene, network: basis.network !== undefined };
}
