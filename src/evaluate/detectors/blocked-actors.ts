import type { ActorTrack } from '../actor-tracks.js';
import type { EvaluationEvent } from '../evaluation-types.js';
import { signalStateAt, type RoadContext, type SignalStates } from '../road-context.js';
import { STOPPED, type Detector, type Frame, type Present } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/**
 * Blocked actors, any actor present, not only the scored one: not moving for the minimum duration, not
 * waiting at a red light nor queued behind another stopped vehicle.
 */
export class BlockedActors implements Detector {
  private readonly episodes: EpisodeTracker;
  private readonly road: RoadContext | null;
  private readonly signals: SignalStates;

  /** `seconds`: not moving this long is blocked. */
  constructor(seconds: number, road: RoadContext | null, signals: SignalStates) {
    this.episodes = new EpisodeTracker('blocked', seconds);
    this.road = road;
    this.signals = signals;
  }

  frame({ t, present }: Frame): void {
    const { road, signals } = this;
    // The only ones that can be blocked, or queued: looked at once, they are few of a dense run's actors.
    const stopped: Present[] = [];
    for (const actor of present)
      if (actor.track.speed[actor.k]! < STOPPED && actor.track.actor.kind !== 'pedestrian')
        stopped.push(actor);
    const queued = queuedBehindStoppedLeader(stopped);
    for (const { track, k } of stopped) {
      // A prop standing still is where it belongs, not blocked.
      if (track.actor.kind === 'static') continue;
      // A queue is one event, at its head: the vehicles behind wait for it, not for the road.
      if (queued.has(track)) continue;
      const lane = track.lane[k] ?? (road ? road.index.locate(track.x[k]!, track.y[k]!)?.lane.id : undefined);
      const waiting =
        lane !== undefined &&
        (road?.signalledFromLanes.get(lane) ?? []).some(
          (c) => !/^[gG]$/.test(signalStateAt(signals.get(c.trafficLight!), t)?.[c.linkIndex!] ?? 'r'),
        );
      if (waiting) continue;
      this.episodes.hold(
        track.actor.id,
        t,
        { x: track.x[k]!, y: track.y[k]! },
        [track.actor.id],
        'not moving, not at a red light',
      );
    }
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}

/** How far behind a stopped vehicle (front to front, m) another stopped one on its lane is in its queue. */
const QUEUE_SPACING = 15;

/** Of the stopped actors (no pedestrian), those that wait behind another stopped one on the same lane. */
function queuedBehindStoppedLeader(stopped: Present[]): Set<ActorTrack> {
  const stoppedByLane = new Map<string, { track: ActorTrack; pos: number }[]>();
  for (const { track, k } of stopped) {
    const lane = track.lane[k];
    const pos = track.lanePos[k]!;
    if (lane === null || lane === undefined || Number.isNaN(pos)) continue;
    const onLane = stoppedByLane.get(lane);
    if (onLane) onLane.push({ track, pos });
    else stoppedByLane.set(lane, [{ track, pos }]);
  }
  const queued = new Set<ActorTrack>();
  for (const onLane of stoppedByLane.values()) {
    onLane.sort((a, b) => b.pos - a.pos);
    for (let n = 1; n < onLane.length; n++)
      if (onLane[n - 1]!.pos - onLane[n]!.pos <= QUEUE_SPACING) queued.add(onLane[n]!.track);
  }
  return queued;
}
