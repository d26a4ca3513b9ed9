import { LIMSIM_METRICS, type LimsimMetric } from '../model/evaluation-scores.js';
import type { Sample } from '../model/stream.js';
import type { MetricSummary } from './evaluation-types.js';

/** The metrics an evaluation summarizes, in the order its summary lists them. */
const SUMMARIZED_METRICS = [
  'offset',
  'discomfort',
  'collision',
  'orientation',
  'consumption',
  'jerk',
  'accel',
  'headway',
  'laneOffset',
];

/** Each metric's distribution over the frames that have it. */
export function summarizeMetrics(samples: readonly Sample[]): Record<string, MetricSummary> {
  const metrics: Record<string, MetricSummary> = {};
  for (const name of SUMMARIZED_METRICS) {
    const values = samples.map((s) => s[name]).filter((v): v is number => typeof v === 'number');
    if (values.length) metrics[name] = summarize(values);
  }
  return metrics;
}

/** The mean LimSim display score of each metric, over the frames that have one. */
export function meanLimsimScores(samples: readonly Sample[]): Partial<Record<LimsimMetric, number>> {
  const limsimScores: Partial<Record<LimsimMetric, number>> = {};
  for (const m of LIMSIM_METRICS) {
    const values = samples.map((s) => s[`${m}Score`]).filter((v): v is number => typeof v === 'number');
    if (values.length) limsimScores[m] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  return limsimScores;
}

function summarize(values: number[]): MetricSummary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return {
    min: sorted[0]!,
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    p50: at(0.5),
    p95: at(0.95),
    max: sorted[sorted.length - 1]!,
    samples: values.length,
  };
}
