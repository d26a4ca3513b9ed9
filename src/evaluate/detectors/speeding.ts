import type { JsonObject } from '../../model/json.js';
import type { EvaluationEvent } from '../evaluation-types.js';
import type { Detector, Frame } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/**
 * The lane's speed limit (`speedLimit`), and speeding: over the speed allowed by more than the
 * tolerance, the speed allowed being the lane's limit times the actor's own speed factor.
 */
export class Speeding implements Detector {
  private readonly episodes = new EpisodeTracker('speeding');
  private readonly actorId: string;
  /** Over the speed allowed by more than this (m/s) is speeding. */
  private readonly tolerance: number;
  private readonly speedFactor: number;

  constructor(actorId: string, attributes: JsonObject | undefined, tolerance: number) {
    this.actorId = actorId;
    this.tolerance = tolerance;
    this.speedFactor = ownSpeedFactor(attributes);
  }

  frame({ t, x, y, speed, position, sample }: Frame): void {
    const { speedFactor } = this;
    const lane = position?.lane;
    if (lane?.speedLimit !== undefined) {
      sample.speedLimit = lane.speedLimit;
      const allowed = lane.speedLimit * speedFactor;
      if (speed > allowed + this.tolerance) {
        this.episodes.hold(
          'speeding',
          t,
          { x, y },
          [this.actorId],
          `${speed.toFixed(1)} m/s on ${lane.id} limited to ${lane.speedLimit.toFixed(1)} m/s` +
            (speedFactor > 1
              ? ` (${allowed.toFixed(1)} m/s with its speed factor ${speedFactor.toFixed(2)})`
              : ''),
        );
      }
    }
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}

/**
 * The factor on a lane's limit that the actor was meant to drive up to: its `speedFactor` attribute
 * (SUMO's, as `record sumo` and the demo keep it) where above 1, else 1. A factor below 1 lowers no
 * limit: driving under the sign is no speeding, whatever the driver intended.
 */
function ownSpeedFactor(attributes: JsonObject | undefined): number {
  const factor = attributes?.speedFactor;
  return typeof factor === 'number' && Number.isFinite(factor) && factor > 1 ? factor : 1;
}
