import type { BenchResults, Ratios } from './report.js';

export interface TargetResult {
  id: string;
  goal: string;
  met: boolean;
  measured: string;
  /** When missed: by how much. */
  gap?: string;
  /** When missed: why, and what would close it (the judgement of whoever last tuned the store). */
  analysis?: string;
}

/** Why a target is missed and what would close it, written from the measurements that missed it. */
const ANALYSIS: Record<string, string> = {};

interface Check {
  id: string;
  goal: string;
  value: number | undefined;
  /** Passes when value <= limit (or >= limit with atLeast). */
  limit: number;
  atLeast?: boolean;
  unit: string;
}

export function evaluateTargets(workloads: BenchResults['workloads'], r: Ratios): TargetResult[] {
  const mcap = ['mcap-per-state', 'mcap-per-frame'];
  const defined = (values: (number | undefined)[]): number[] => values.filter((v) => v !== undefined);
  const checks: Check[] = [
    {
      id: 'record-vs-limsim',
      goal: 'record >= 5x LimSim design',
      value: r.record['limsim-sqlite']?.speedup,
      limit: 5,
      atLeast: true,
      unit: 'x',
    },
    {
      id: 'record-vs-mcap',
      goal: 'record >= the faster MCAP writer',
      value: Math.min(...defined(mcap.map((p) => r.record[p]?.speedup))),
      limit: 1,
      atLeast: true,
      unit: 'x',
    },
    {
      id: 'size-vs-mcap',
      goal: 'store <= 1/2 of the smaller uncompressed MCAP file',
      value: Math.max(...defined(mcap.map((p) => r.record[p]?.sizeRatio))),
      limit: 0.5,
      unit: 'of it',
    },
    {
      id: 'size-vs-limsim',
      goal: 'store <= 1/4 of LimSim',
      value: r.record['limsim-sqlite']?.sizeRatio,
      limit: 0.25,
      unit: 'of it',
    },
    {
      id: 'seek-median',
      goal: 'seek median < 1 ms',
      value: workloads.seek.simrec?.median.medianMs,
      limit: 1,
      unit: 'ms',
    },
    {
      id: 'trajectory',
      goal: 'trajectory of one actor over the run < 10 ms',
      value: workloads.trajectory.simrec?.median.medianMs,
      limit: 10,
      unit: 'ms',
    },
  ];
  return checks.map((c) => {
    const value = c.value ?? NaN;
    const met = c.atLeast ? value >= c.limit : value <= c.limit;
    const result: TargetResult = { id: c.id, goal: c.goal, met, measured: `${value.toFixed(3)} ${c.unit}` };
    if (!met) {
      result.gap = c.atLeast
        ? `${(c.limit / value).toFixed(2)}x short`
        : `${(value / c.limit).toFixed(2)}x over`;
      const analysis = ANALYSIS[c.id];
      if (analysis) result.analysis = analysis;
    }
    return result;
  });
}
