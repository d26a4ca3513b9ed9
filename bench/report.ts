import type { ChildReport, Workload } from './child.js';
import { PEERS } from './peers/index.js';
import { median } from './stats.js';
import { evaluateTargets, type TargetResult } from './targets.js';

export interface Measurement extends ChildReport {
  workload: Workload;
  peer: string;
  rep: number;
}

export interface PeerSummary {
  /** Median over the repetitions of each numeric result. */
  median: Record<string, number>;
  /** The highest over the repetitions. */
  maxRssBytes: number;
  repetitions: Record<string, unknown>[];
}

type ByPeer<T> = Record<string, T>;

export interface Ratios {
  /** simrec's actor-states per second over the peer's (above 1: simrec is faster). */
  record: ByPeer<{ speedup: number; sizeRatio: number }>;
  /** The peer's time over simrec's (above 1: simrec is faster). */
  seek: ByPeer<{ speedupMedian: number; speedupP99: number }>;
  trajectory: ByPeer<{ speedup: number }>;
}

export interface BenchResults {
  date: string;
  command: string;
  machine: Record<string, unknown>;
  config: {
    quick: boolean;
    size: { actors: number; steps: number; hz: number };
    reps: number;
    seeks: number;
    trajectories: number;
    commitEverySteps: number;
  };
  seconds: number;
  peers: { name: string; description: string; readNote?: string }[];
  generator: PeerSummary;
  workloads: Record<'record' | 'seek' | 'trajectory', ByPeer<PeerSummary>>;
  ratios: Ratios;
  targets: TargetResult[];
}

const SIMREC = 'simrec';

function summarizeRuns(runs: Measurement[]): PeerSummary {
  // `--only` sections without the record workload measure no runs.
  if (runs.length === 0) return { median: {}, maxRssBytes: 0, repetitions: [] };
  const keys = Object.keys(runs[0]!.result).filter((k) => typeof runs[0]!.result[k] === 'number');
  return {
    median: Object.fromEntries(keys.map((k) => [k, median(runs.map((r) => r.result[k] as number))])),
    maxRssBytes: Math.max(...runs.map((r) => r.maxRssBytes)),
    repetitions: runs.map((r) => r.result),
  };
}

function byPeer(measurements: Measurement[], workload: Workload): ByPeer<PeerSummary> {
  const out: ByPeer<PeerSummary> = {};
  for (const peer of PEERS) {
    const runs = measurements.filter((m) => m.workload === workload && m.peer === peer.name);
    if (runs.length) out[peer.name] = summarizeRuns(runs);
  }
  return out;
}

function ratios(workloads: BenchResults['workloads']): Ratios {
  const r: Ratios = { record: {}, seek: {}, trajectory: {} };
  const ours = (w: keyof BenchResults['workloads']): Record<string, number> => workloads[w][SIMREC]!.median;
  for (const [peer, s] of Object.entries(workloads.record))
    if (peer !== SIMREC)
      r.record[peer] = {
        speedup: ours('record').statesPerSecond! / s.median.statesPerSecond!,
        sizeRatio: ours('record').bytes! / s.median.bytes!,
      };
  for (const [peer, s] of Object.entries(workloads.seek))
    if (peer !== SIMREC)
      r.seek[peer] = {
        speedupMedian: s.median.medianMs! / ours('seek').medianMs!,
        speedupP99: s.median.p99Ms! / ours('seek').p99Ms!,
      };
  for (const [peer, s] of Object.entries(workloads.trajectory))
    if (peer !== SIMREC) r.trajectory[peer] = { speedup: s.median.medianMs! / ours('trajectory').medianMs! };
  return r;
}

export function summarize(
  measurements: Measurement[],
  head: Pick<BenchResults, 'date' | 'command' | 'machine' | 'config' | 'seconds'>,
): BenchResults {
  const workloads = {
    record: byPeer(measurements, 'record'),
    seek: byPeer(measurements, 'seek'),
    trajectory: byPeer(measurements, 'trajectory'),
  };
  const r = ratios(workloads);
  return {
    ...head,
    peers: PEERS.map((p) => ({
      name: p.name,
      description: p.description,
      ...(p.readNote ? { readNote: p.readNote } : {}),
    })),
    generator: summarizeRuns(measurements.filter((m) => m.workload === 'generate')),
    workloads,
    ratios: r,
    targets: evaluateTargets(workloads, r),
  };
}

// ---- the table for people -------------------------------------------------------------------------

const fixed = (v: number | undefined, digits = 1): string => (v === undefined ? '-' : v.toFixed(digits));
const percent = (share: number | undefined): string =>
  share === undefined ? '-' : `${(100 * share).toFixed(0)}%`;
const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const rate = (v: number): string => `${(v / 1e6).toFixed(2)} M/s`;
const times = (v: number | undefined): string => (v === undefined ? '-' : `${v.toFixed(v < 10 ? 2 : 1)}x`);

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]): string =>
    cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

export function formatReport(r: BenchResults): string {
  const { actors, steps, hz } = r.config.size;
  const m = r.machine;
  const out: string[] = [
    `simrec bench: ${actors} actors x ${steps} steps at ${hz} Hz (${actors * steps} actor-states), ` +
      `medians of ${r.config.reps} repetition(s), a commit point every ${r.config.commitEverySteps} steps (simrec goes on appending while a commit is made durable, at most one behind; simrec-awaited waits)`,
    `machine: ${m.cpus as number} x ${m.cpuModel as string}, ${mb(m.memoryBytes as number)}, node ${m.node as string}; took ${r.seconds.toFixed(0)} s` +
      loadNote(m.loadAverage as { before: number[]; after: number[] } | undefined),
    `generator alone: ${rate(r.generator.median.statesPerSecond!)} (included in every record rate)`,
    '',
    'record               speedup = simrec rate / peer rate; size = simrec bytes / peer bytes',
    table(
      ['peer', 'actor-states/s', 'B/state', 'peak RSS', 'speedup', 'size'],
      Object.entries(r.workloads.record).map(([peer, s]) => [
        peer,
        rate(s.median.statesPerSecond!),
        fixed(s.median.bytesPerState, 1),
        mb(s.maxRssBytes),
        times(r.ratios.record[peer]?.speedup),
        fixed(r.ratios.record[peer]?.sizeRatio, 3),
      ]),
    ),
    '',
    `seek: scene of ${actors} actors at ${r.config.seeks} random times; speedup = peer time / simrec time; ` +
      'p99 waiting = how much of a scene in the slowest 1% went on waiting for a core (median)',
    table(
      [
        'peer',
        'median ms',
        'p99 ms',
        'p99 waiting',
        'slowest ms',
        'first ms',
        'first faults',
        'peak RSS',
        'speedup median',
        'speedup p99',
      ],
      Object.entries(r.workloads.seek).map(([peer, s]) => [
        peer,
        fixed(s.median.medianMs, 3),
        fixed(s.median.p99Ms, 3),
        percent(s.median.slowWaitingShare),
        fixed(s.median.slowestMs, 1),
        fixed(s.median.firstMs, 2),
        fixed(s.median.firstPageFaults, 0),
        mb(s.maxRssBytes),
        times(r.ratios.seek[peer]?.speedupMedian),
        times(r.ratios.seek[peer]?.speedupP99),
      ]),
    ),
    '',
    `trajectory: one actor's ${steps} states over the whole run (${r.config.trajectories} actors)`,
    table(
      ['peer', 'median ms', 'first ms', 'peak RSS', 'speedup'],
      Object.entries(r.workloads.trajectory).map(([peer, s]) => [
        peer,
        fixed(s.median.medianMs, 2),
        fixed(s.median.firstMs, 2),
        mb(s.maxRssBytes),
        times(r.ratios.trajectory[peer]?.speedup),
      ]),
    ),
    '',
    'targets',
    ...r.targets.map(
      (t) => `  [${t.met ? 'met' : 'MISSED'}] ${t.goal}: ${t.measured}${t.met ? '' : ` (${t.gap})`}`,
    ),
  ];
  for (const p of r.peers) if (p.readNote) out.push(`  note: ${p.name} is not read back: ${p.readNote}`);
  return out.join('\n');
}

/** The 1-minute load average before and after the run: on a shared machine, how busy it was. */
function loadNote(load: { before: number[]; after: number[] } | undefined): string {
  return load ? `; load ${load.before[0]!.toFixed(2)} before, ${load.after[0]!.toFixed(2)} after` : '';
}
