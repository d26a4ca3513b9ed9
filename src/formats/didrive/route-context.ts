/**
 * The two measurements CARLA's planner and traffic lights give DI-drive, worked out from what a simrec
 * run has: the ego's own lanes over the episode (its route as driven) and the road network's
 * connections, and the traffic lights' `signal` streams.
 *
 * - command (RoadOption): on a junction's internal lane, the direction of the link it crosses
 *   (LEFT, RIGHT, STRAIGHT); on a lane whose next lane is a junction link within JUNCTION_AHEAD metres of
 *   driving, that link's direction; before a change to a sibling lane within LANE_CHANGE_AHEAD metres,
 *   CHANGELANELEFT/RIGHT; otherwise LANEFOLLOW. Without lanes or a network: LANEFOLLOW.
 * - tl_state and tl_dis: the light controlling the link the ego takes out of its current lane (or,
 *   when the run ends before it leaves the lane, the lane's first controlled link), its colour at that
 *   frame and the distance to the lane's end, capped at 200 m. No such light: OFF and 200.
 */
import type { Connection, RoadLane, RoadNetwork } from '../../model/roadnet.js';
import type { Sample } from '../../model/stream.js';
import { lastAtOrBefore } from '../../model/sorted-search.js';
import { ROAD_OPTION, TL_DISTANCE_CAP, TL_STATE } from './didrive-layout.js';

/** CARLA's planner gives a junction's turn this far before it (its sampling radius times a few). */
export const JUNCTION_AHEAD = 20;
export const LANE_CHANGE_AHEAD = 10;

export interface FrameContext {
  command: number;
  tlState: number;
  tlDistance: number;
}

/** A traffic light's `signal` samples (SUMO-style state strings, one character per link). */
export type SignalTimeline = Sample[];

const directionToCommand = (direction: string | undefined): number => {
  switch (direction) {
    case 'l':
    case 'L':
    case 't':
    case 'T':
      return ROAD_OPTION.LEFT;
    case 'r':
    case 'R':
      return ROAD_OPTION.RIGHT;
    case 's':
      return ROAD_OPTION.STRAIGHT;
    default:
      return ROAD_OPTION.LANEFOLLOW;
  }
};

/** SUMO's link states to CARLA's colours: red-yellow counts as yellow, "stop then go" as red. */
export function signalToTlState(c: string | undefined): number {
  switch (c) {
    case 'r':
    case 's':
      return TL_STATE.RED;
    case 'y':
    case 'Y':
    case 'u':
      return TL_STATE.YELLOW;
    case 'g':
    case 'G':
      return TL_STATE.GREEN;
    default:
      return TL_STATE.OFF;
  }
}

/** The latest sample at or before t, found by bisection. */
export function sampleAt(samples: readonly Sample[], t: number): Sample | undefined {
  const i = lastAtOrBefore(samples, t, (s) => s.t);
  return i >= 0 ? samples[i] : undefined;
}

export function frameContexts(
  frames: readonly Sample[],
  network: RoadNetwork | undefined,
  signals: ReadonlyMap<string, SignalTimeline>,
): FrameContext[] {
  const none = (): FrameContext => ({
    command: ROAD_OPTION.LANEFOLLOW,
    tlState: TL_STATE.OFF,
    tlDistance: TL_DISTANCE_CAP,
  });
  if (!network) return frames.map(none);
  const lanes = new Map<string, RoadLane>(network.lanes.map((l) => [l.id, l]));
  const outOf = new Map<string, Connection[]>();
  const byVia = new Map<string, Connection>();
  for (const c of network.connections) {
    const list = outOf.get(c.fromLane);
    if (list) list.push(c);
    else outOf.set(c.fromLane, [c]);
    if (c.via) byVia.set(c.via, c);
  }
  // Distance driven up to each frame, and for each frame the next frame on another lane.
  const driven: number[] = [0];
  for (let i = 1; i < frames.length; i++) {
    const a = frames[i - 1]!;
    const b = frames[i]!;
    driven.push(driven[i - 1]! + Math.hypot(Number(b.x) - Number(a.x), Number(b.y) - Number(a.y)));
  }
  const nextChange: (number | undefined)[] = new Array<number | undefined>(frames.length);
  let next: number | undefined;
  for (let i = frames.length - 1; i >= 0; i--) {
    nextChange[i] = next;
    if (i > 0 && frames[i - 1]!.lane !== frames[i]!.lane) next = i;
  }

  return frames.map((frame, i) => {
    const context = none();
    const laneId = typeof frame.lane === 'string' ? frame.lane : undefined;
    const lane = laneId === undefined ? undefined : lanes.get(laneId);
    if (!lane || !laneId) return context;
    const j = nextChange[i];
    const nextLaneId = j === undefined ? undefined : frames[j]!.lane;
    const ahead = j === undefined ? Infinity : driven[j]! - driven[i]!;
    const crossing = byVia.get(laneId);
    const leaving = (outOf.get(laneId) ?? []).filter((c) => c.toLane === nextLaneId || c.via === nextLaneId);
    const link = leaving[0];
    if (lane.function === 'internal' && crossing) context.command = directionToCommand(crossing.direction);
    else if (link && ahead <= JUNCTION_AHEAD) context.command = directionToCommand(link.direction);
    else if (typeof nextLaneId === 'string' && ahead <= LANE_CHANGE_AHEAD) {
      const sibling = lanes.get(nextLaneId);
      if (sibling && sibling.edge === lane.edge && sibling.index !== lane.index)
        context.command =
          sibling.index > lane.index ? ROAD_OPTION.CHANGELANELEFT : ROAD_OPTION.CHANGELANERIGHT;
    }
    const controlled =
      link?.trafficLight !== undefined
        ? link
        : j === undefined
          ? (outOf.get(laneId) ?? []).find((c) => c.trafficLight !== undefined)
          : undefined;
    if (controlled?.trafficLight !== undefined && controlled.linkIndex !== undefined) {
      const signal = sampleAt(signals.get(controlled.trafficLight) ?? [], frame.t);
      const state = typeof signal?.state === 'string' ? signal.state[controlled.linkIndex] : undefined;
      if (state !== undefined) {
        context.tlState = signalToTlState(state);
        const along = typeof frame.lanePos === 'number' ? lane.length - frame.lanePos : ahead;
        context.tlDistance = Math.min(TL_DISTANCE_CAP, Math.max(0, along));
      }
    }
    return context;
  });
}
