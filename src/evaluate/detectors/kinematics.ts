import type { Sample } from '../../model/stream.js';
import type { ActorTrack } from '../actor-tracks.js';
import { consumption, discomfort } from '../limsim-formulas.js';

/**
 * The scored actor's acceleration and jerk, and the metrics made of them (discomfort, consumption):
 * the first of a frame's measures, its acceleration judged by the detectors after it. Counts the gaps
 * in the actor's samples, which jerk is not computed across.
 */
export class Kinematics {
  /** Time gaps longer than 2.5 nominal steps. */
  gaps = 0;
  private readonly ego: ActorTrack;
  private readonly limsim: boolean;
  /** Nominal step: the median of the actor's sample intervals. */
  private readonly nominal: number;
  private previousSpeed: number | null = null;
  private previousAccel: number | null = null;
  private previousT: number | null = null;

  constructor(ego: ActorTrack, limsim: boolean) {
    this.ego = ego;
    this.limsim = limsim;
    const intervals = ego.t
      .slice(1)
      .map((t, i) => t - ego.t[i]!)
      .sort((a, b) => a - b);
    this.nominal = intervals[Math.floor(intervals.length / 2)] ?? 100_000;
  }

  /** Frame i's kinematic metrics added to its sample; returns its acceleration. */
  frame(i: number, sample: Sample): number {
    const { ego, nominal, previousT, previousSpeed, previousAccel } = this;
    const t = ego.t[i]!;
    const speed = ego.speed[i]!;
    const dt = previousT === null ? nominal / 1e6 : (t - previousT) / 1e6;
    const gap = previousT !== null && t - previousT > 2.5 * nominal;
    if (gap) this.gaps++;

    // Acceleration: LimSim uses its stored column; simrec measures it from the change of speed.
    let accel: number;
    const stored = ego.accel[i]!;
    if (this.limsim && !Number.isNaN(stored)) accel = stored;
    else if (previousSpeed === null || gap || dt <= 0) accel = Number.isNaN(stored) ? 0 : stored;
    else accel = (speed - previousSpeed) / dt;
    const jerk =
      previousAccel === null || gap || dt <= 0 ? 0 : (accel - previousAccel) / (this.limsim ? 0.1 : dt);

    sample.discomfort = discomfort(jerk);
    sample.consumption = consumption(speed, accel);
    sample.accel = accel;
    sample.jerk = jerk;
    this.previousSpeed = speed;
    this.previousAccel = accel;
    this.previousT = t;
    return accel;
  }
}
