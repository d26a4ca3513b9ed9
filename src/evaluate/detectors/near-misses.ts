import type { EvaluationEvent } from '../evaluation-types.js';
import { LIMSIM_TTC, SIMREC_TTC, timeToCollision } from '../time-to-collision.js';
import { movingBox, STOPPED, type Detector, type Frame } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/**
 * Time to collision (the `collision` metric) with the actor it is with, headway to the actor ahead, and
 * near misses: a time to collision below the threshold, above 0. LimSim's mode looks at vehicles within
 * 50 m, simrec's at every actor within 100 m.
 */
export class NearMisses implements Detector {
  private readonly episodes = new EpisodeTracker('near_miss');
  private readonly actorId: string;
  private readonly limsim: boolean;
  /** TTC below this (s), but above 0, is a near miss. */
  private readonly nearMiss: number;

  constructor(actorId: string, limsim: boolean, nearMiss: number) {
    this.actorId = actorId;
    this.limsim = limsim;
    this.nearMiss = nearMiss;
  }

  frame({ ego, i, t, x, y, yaw, speed, others, sample }: Frame): void {
    const agentRadius = this.limsim ? 50 : 100;
    const egoBox = movingBox(ego, i);
    const agents: ReturnType<typeof movingBox>[] = [];
    for (const { track, k } of others) {
      if (this.limsim && track.actor.kind !== 'vehicle' && track.actor.kind !== 'ego') continue;
      if (withinRadius(track.x[k]! - x, track.y[k]! - y, agentRadius)) agents.push(movingBox(track, k));
    }
    const ttc = timeToCollision(egoBox, agents, this.limsim ? LIMSIM_TTC : SIMREC_TTC);
    sample.collision = ttc.ttc;
    if (ttc.agent) sample.ttcActor = ttc.agent;
    if (ttc.agent && ttc.ttc > 0 && ttc.ttc < this.nearMiss) {
      this.episodes.hold(
        ttc.agent,
        t,
        egoBox,
        [this.actorId, ttc.agent],
        `time to collision ${ttc.ttc.toFixed(2)} s`,
      );
    }
    this.episodes.endFrame(t);

    // Headway: the nearest actor ahead within half a lane of the actor's heading line.
    let headway: number | undefined;
    for (const a of agents) {
      const dx = (a.x - x) * Math.cos(yaw) + (a.y - y) * Math.sin(yaw);
      const dy = -(a.x - x) * Math.sin(yaw) + (a.y - y) * Math.cos(yaw);
      if (dx <= 0 || Math.abs(dy) > 1.75 || speed < STOPPED) continue;
      const h = Math.max(0, dx - (egoBox.length + a.length) / 2) / speed;
      if (headway === undefined || h < headway) headway = h;
    }
    if (headway !== undefined) sample.headway = headway;
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}

/**
 * Whether (dx, dy) is within `radius`, as `Math.hypot(dx, dy) <= radius` answers: by the squares where
 * they are clear of the radius by more than rounding, by hypot itself near it (asked for every other
 * actor of every frame, hypot's care against overflow is paid for nothing).
 */
function withinRadius(dx: number, dy: number, radius: number): boolean {
  const squared = dx * dx + dy * dy;
  const radiusSquared = radius * radius;
  if (squared < radiusSquared * (1 - 1e-9)) return true;
  if (squared > radiusSquared * (1 + 1e-9)) return false;
  return Math.hypot(dx, dy) <= radius;
}
