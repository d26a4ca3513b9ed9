import type { LimsimMetric } from '../model/evaluation-scores.js';
import type { Sample } from '../model/stream.js';

/**
 * `limsim`: LimSim's numbers as its code computes them (jerk from the stored `accel`, TTC against
 * vehicles within 50 m, offset zeroed near a lane's start). `simrec` (the default) makes two
 * documented fixes: jerk from the measured acceleration (the change of speed over time, since
 * LimSim's `accel` column holds the vType's max-accel parameter), and TTC over every actor on the
 * road within 100 m (pedestrians and cyclists too), refined below LimSim's 0.1 s step.
 */
export type EvaluationMode = 'simrec' | 'limsim';

export interface EvaluationOptions {
  /** The actor to score; default: the run's ego. */
  actor?: string;
  mode?: EvaluationMode;
  /** TTC below this (s), but above 0, is a near miss. */
  nearMissTtc?: number;
  /** Not moving (speed below 0.1 m/s) this long (s), not at a red light, is a blocked actor. */
  blockedSeconds?: number;
  /** Deceleration beyond this (m/s^2, positive) is hard braking. */
  hardBraking?: number;
  /**
   * Over the speed allowed by more than this (m/s, default 0.5) is speeding. The speed allowed is the
   * lane's limit, times the actor's own speed factor where its attributes carry one above 1
   * (`speedFactor`: SUMO's vehicles drive up to it times a lane's limit by design, as `record sumo` and
   * the demo record it).
   */
  speedingTolerance?: number;
  /**
   * Microseconds of the run whose states of the actors besides the scored one are held at once; by
   * default as much as holds about a million states at the run's rate. The evaluation is the same
   * whatever it is: it bounds the memory a long run takes.
   */
  readWindow?: number;
  /** Write the metrics and events into the run (default true). */
  store?: boolean;
  /** Each frame's metrics as they are computed (what the `evaluation` stream stores). */
  onFrame?: (sample: Sample) => void;
  signal?: AbortSignal;
  onProgress?: (fraction: number) => void;
}

export interface EvaluationEvent {
  kind: 'collision' | 'near_miss' | 'blocked' | 'lane_departure' | 'speeding' | 'red_light' | 'hard_braking';
  /** Start of the event (microseconds) and how long it lasted (s). */
  t: number;
  duration: number;
  actors: string[];
  x: number;
  y: number;
  detail: string;
}

export interface MetricSummary {
  min: number;
  mean: number;
  p50: number;
  p95: number;
  max: number;
  samples: number;
}

export interface EvaluationSummary {
  run: number;
  actor: string;
  mode: EvaluationMode;
  frames: number;
  /** Time gaps longer than 2.5 nominal steps: jerk is not computed across them. */
  gaps: number;
  metrics: Record<string, MetricSummary>;
  /** Mean LimSim display score per metric, in [1, 4]. */
  limsimScores: Partial<Record<LimsimMetric, number>>;
  events: EvaluationEvent[];
  eventCounts: Record<string, number>;
  score: number;
  weights: Record<string, number>;
  skipped: string[];
  streams: string[];
}
