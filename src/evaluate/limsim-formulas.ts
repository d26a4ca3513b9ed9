/**
 * LimSim's five per-frame metrics, as its code computes them (evaluation/evaluation.py,
 * RealTimeEvaluation): raw values are what it stores in evaluationINFO. Their display normalisation
 * (the [1, 4] radar scores) is in model/evaluation-scores.ts, which the viewer shares.
 */
/** fmod(fmod(θ, 2π) + 2π, π): maps any angle into [0, π), so a heading and its reverse compare equal. */
export const limsimNormAngle = (theta: number): number =>
  (((theta % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI)) % Math.PI;

export const orientation = (yaw: number, laneYaw: number): number =>
  (Math.sin(limsimNormAngle(yaw)) - Math.sin(limsimNormAngle(laneYaw))) ** 2;

export const consumption = (speed: number, accel: number): number => (speed * accel) ** 2 + speed ** 3;

export const discomfort = (jerk: number): number => jerk ** 2;

export const offset = (lateral: number): number => lateral ** 2;
