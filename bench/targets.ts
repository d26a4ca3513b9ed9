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
const ANALYSIS: Record<string, string> = {
  'record-vs-limsim':
    "simrec's write path is JavaScript per sample: every actor-state is an object that is validated, " +
    'queued, and read field by field twice (into the durable tail chunk of its commit, then into the ' +
    'sealed chunk that replaces the tails), with keyed property reads the engine cannot specialise; ' +
    "LimSim's best case hands 11 scalars per row to SQLite's C code. Profiles put the time in " +
    'encodeColumn/encodeValues, validation and GC, not in SQLite or fsync. To close it: an appendColumns ' +
    'path that takes a frame as typed arrays (no per-sample objects), tails kept columnar so sealing ' +
    'concatenates encoded columns instead of re-reading objects, and sealing on a worker thread (2 cores).',
  'record-vs-mcap':
    'Same cause as the LimSim gap: the MCAP writer appends prebuilt byte messages to a buffer, while simrec ' +
    'transposes sample objects into columns; per frame (one message for 200 actors) MCAP does the least ' +
    'work of all. The same columnar append path would close it.',
  'size-vs-mcap':
    'Float columns are lossless: after the linear prediction each noisy float64 still carries 4-7 bytes of ' +
    'significant bits. Sealed chunks are deflated at level 1; a higher deflateLevel or a declared precision ' +
    'per field would take more off.',
  'size-vs-limsim':
    "LimSim's file is ~99 B/state, so the target is ~25 B/state. The generator's speed and acceleration " +
    'change by noise every step, so those two fields alone carry ~12 B/state of incompressible low-order ' +
    'bits, and positions ~4 B each after prediction: the lossless floor measured with prediction + deflate ' +
    'is ~30 B/state. Closing it needs a declared precision per field (e.g. 1 mm, 1e-6 rad), stored as ' +
    'integer deltas: an opt-in model change, since simrec promises every bit of a numeric field back.',
  'seek-median':
    'Each scene reads one decoded chunk per actor; the first seeks decode them (inflate + transposition) ' +
    'and later ones hit the cache. A per-scene column cache of the state fields would cut the decode.',
  trajectory:
    'A whole-run trajectory decodes ~10 chunks and builds 10,000 sample objects; object construction ' +
    'dominates. Returning columns (typed arrays) instead of objects would close it.',
};

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
