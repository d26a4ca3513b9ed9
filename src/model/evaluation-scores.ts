/**
 * Scores of an evaluation, for people: LimSim's display normalisation of its five metrics (what its
 * radar draws, 1 best to 4 worst), simrec's overall score from them, and the summary of the
 * evaluation a run carries. Pure: the evaluator, the server and the viewer all use them.
 */

/** Where `simrec eval` writes a run's per-frame metrics (`<actor>/evaluation`) and its events. */
export const EVALUATION_STREAM = 'evaluation';
export const EVENTS_STREAM = 'events';

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

/**
 * The overall score: 100 less the weighted mean of LimSim's display scores, each mapped from [1, 4]
 * to a [0, 1] penalty; halved when anything collided with the actor. Safety weighs most.
 */
export const SCORE_WEIGHTS: Record<LimsimMetric, number> = {
  collision: 0.4,
  offset: 0.15,
  discomfort: 0.15,
  orientation: 0.15,
  consumption: 0.15,
};

/** The overall score from each metric's mean display score (see SCORE_WEIGHTS), one decimal. */
export function overallScore(limsimScores: Partial<Record<LimsimMetric, number>>, collided: boolean): number {
  let penalty = 0;
  let weight = 0;
  for (const m of LIMSIM_METRICS) {
    const mean = limsimScores[m];
    if (mean === undefined) continue;
    penalty += SCORE_WEIGHTS[m] * ((mean - 1) / 3);
    weight += SCORE_WEIGHTS[m];
  }
  return Math.round(100 * (1 - penalty / (weight || 1)) * (collided ? 0.5 : 1) * 10) / 10;
}

/**
 * The evaluation a run carries (simrec's own, or the one a LimSim recording brought), summed up:
 * the API's GET /api/runs/:id has it whole, the run list its score.
 */
export interface RunEvaluation {
  /** The stream the scores come from (its id). */
  stream: string;
  /** The actor it scores. */
  actor: string | null;
  /** `simrec`: computed by `simrec eval`; `limsim`: LimSim's own, kept by the import. */
  source: 'simrec' | 'limsim';
  /** Mean LimSim display score per metric over the run: 1 is best, 4 worst. */
  scores: Partial<Record<LimsimMetric, number>>;
  /** simrec's overall score, 0..100, higher is better (halved when something collided with the actor). */
  score: number;
  collided: boolean;
  frames: number;
}
