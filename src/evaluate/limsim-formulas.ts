/**
 * LimSim's five per-frame metrics and their display normalisation, as its code computes them
 * (evaluation/evaluation.py, RealTimeEvaluation): raw values are what it stores in evaluationINFO,
 * the [1, 4] scores are only for its radar.
 */
export const LIMSIM_METRICS = ['offset', 'discomfort', 'collision', 'orientation', 'consumption'] as const;
export type LimsimMetric = (typeof LIMSIM_METRICS)[number];

/** The units of LimSim's raw metrics (the display scores are unitless). */
export const LIMSIM_METRIC_UNITS: Record<LimsimMetric, string> = {
  offset: 'm^2',
  discomfort: 'm^2/s^6',
  collision: 's',
  orientation: '1',
  consumption: 'm^2/s^3',
};

/** fmod(fmod(θ, 2π) + 2π, π): maps any angle into [0, π), so a heading and its reverse compare equal. */
export const limsimNormAngle = (theta: number): number =>
  (((theta % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI)) % Math.PI;

export const orientation = (yaw: number, laneYaw: number): number =>
  (Math.sin(limsimNormAngle(yaw)) - Math.sin(limsimNormAngle(laneYaw))) ** 2;

export const consumption = (speed: number, accel: number): number => (speed * accel) ** 2 + speed ** 3;

export const discomfort = (jerk: number): number => jerk ** 2;

export const offset = (lateral: number): number => lateral ** 2;

/** LimSim's normalize_result: each metric to [1, 4], higher is worse (TTC 20 s gives 1). */
export function limsimScore(metric: LimsimMetric, raw: number): number {
  let v: number;
  switch (metric) {
    case 'offset':
      v = Math.min(raw / 1.75 ** 2, 1) * 4;
      break;
    case 'discomfort':
      v = Math.min(raw / 18, 1) * 4;
      break;
    case 'collision':
      v = 4 - 0.15 * raw;
      break;
    case 'orientation':
      v = Math.min(raw, 1) * 4;
      break;
    case 'consumption':
      v = Math.min(raw / 4000, 1) * 4;
      break;
  }
  return Math.max(v, 1);
}
