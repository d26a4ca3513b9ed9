import type { EvaluationEvent } from '../evaluation-types.js';
import type { Detector, Frame } from './detector.js';
import { EpisodeTracker } from './episodes.js';

/** Hard braking: a deceleration beyond the threshold. */
export class HardBraking implements Detector {
  private readonly episodes = new EpisodeTracker('hard_braking');
  private readonly actorId: string;
  /** Deceleration beyond this (m/s^2, positive) is hard braking. */
  private readonly threshold: number;

  constructor(actorId: string, threshold: number) {
    this.actorId = actorId;
    this.threshold = threshold;
  }

  frame({ t, x, y, accel }: Frame): void {
    if (accel < -this.threshold) {
      this.episodes.hold('braking', t, { x, y }, [this.actorId], `${accel.toFixed(1)} m/s^2`);
    }
    this.episodes.endFrame(t);
  }

  finish(end: number): EvaluationEvent[] {
    return this.episodes.finish(end);
  }
}
