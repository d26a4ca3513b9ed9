import type { DemoSpeed } from './demo.js';
import type { IngestSpeed } from './ingest.js';
import type { BenchResults, Ratios } from './report.js';
import type { SumoOverhead } from './sumo-overhead.js';

/** The live-recording sections' results (#19's targets), when the run measured them. */
export interface LiveResults {
  sumo?: SumoOverhead | null;
  ingest?: IngestSpeed | null;
  demo?: DemoSpeed | null;
}

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
    "Each commit is made durable while the next steps are appended (as simrec's own recorders do), so " +
    'a run takes as long as the busier thread, the writer thread: instrumented on this benchmark it is ' +
    "busy for about 2.1 s of a 2.3 s run (packing each commit's tail blocks 0.77 s; SQLite's inserts, " +
    'counters and commits with their fsyncs 0.45 s; sealing 0.38 s, the sealed chunks written again; ' +
    'garbage collection), the appending thread about 0.8 s of a 2.1 s run since 2026-11-26 (1.4 s ' +
    'before; the generator 0.2 s of it). Profiled again on the night of 2026-11-26 (1.75 s busy): ' +
    "SQLite's commits, inserts and the seal's reads and writes about 0.8 s, packing about 0.45 s, " +
    'garbage collection 0.1 s. Since the afternoon of 2026-11-26 the writer packs string and ' +
    'integer columns and chunk tables into writers it keeps (about 4% faster in alternating runs). ' +
    'A run makes 149,000 pwrite and 70,000 pread calls (two writes a WAL frame) and 135 fsyncs; without ' +
    'fsyncs (simrec-normal) it is 2-3% faster: the SQLite time is page writes, not the disk. ' +
    'Waiting at each commit instead (simrec-awaited) is about 15% slower: the writer is still the ' +
    'larger share of the run. Measured and not kept: SQLite pages of 16 or 64 KB (no faster, files 3-10% ' +
    'larger), no auto-vacuum (no faster), no checkpoints during the run (no faster), the requests of a ' +
    'turn posted together (15-20% slower). 4x LimSim here is 2.4 M states/s, half of writing raw ' +
    '56-byte records to a file on this VM, while simrec packs every float losslessly to a third of that. ' +
    'What would close most of it: writing each sample once (a tail journal beside SQLite, which readers ' +
    'in other processes would have to read too) and packing on both threads.',
  'record-vs-mcap':
    'MCAP per frame appends one prebuilt byte message per step to a buffer and writes it with one ' +
    'fsync per commit point: the least work of all (82 B/state, nothing packed, the chunk being ' +
    'filled not durable). simrec packs every float losslessly (30.6 B/state) and indexes it per ' +
    'stream; see record-vs-limsim for where the time goes.',
  size:
    'The floats of the benchmark are full-precision noise: the six float fields take ~28 B/state after ' +
    'prediction and bit packing (since store schema 5 the residual is the difference of the bit patterns, ' +
    'the distance in units of the last place, not their XOR, whose carries widen it: 29.1 B as XOR; ' +
    'the accelerations, noise about zero, keep the XOR rotated so that a change of sign costs one bit). ' +
    'Blocks are the size of a commit (100 samples here): each restarts its predictions and frames its ' +
    'columns, about 0.5 B/state more than 256-sample blocks, which packing again at the seal would give ' +
    'for a decode and an encode of every sample on the writer thread, the bottleneck ' +
    "(docs/recording-engine.md); the rest is the ego wheels (0.8 B/state) and SQLite's pages around the " +
    'chunks (0.5 B/state). Counted byte by byte in a store of this benchmark (2026-11-26, XOR floats, ' +
    "31.63 B/state): a block's framing (column records, its entry in the chunk's table, time and step) " +
    "is about 77 bytes, 0.77 B/state at 100 samples; each chunk's header lists the stream's 20 declared " +
    "columns, 8 of them present (0.13 B/state); SQLite adds the space left in the chunks' pages (0.35 " +
    "B/state) and each stream's schema, 1.25 KB of JSON per actor (0.13 B/state).",
  'record-rss':
    'Two V8 isolates: the appending thread, whose young generation V8 grows to 16 MiB by what survives ' +
    'its collections (it cannot be capped from within a process: run with --max-semi-space-size=2 the ' +
    'same recording peaked 20 MiB lower, 5-8% slower), and the writer thread, whose young generation is ' +
    'capped at 4 MiB; SQLite page caches on two connections; the frames of the next commit appended ' +
    'while one is in flight. Since the night of 2026-11-26 (175 -> about 135 MiB): the writer thread makes ' +
    'a third less garbage (366 -> 239 MB a run: a float codec looked up, not found by iterating a Map; a ' +
    'string column packed straight from the batch; no view of a column that is a whole block); a seal ' +
    'reads its tail chunks back from SQLite and cuts their blocks out by the layout it kept, instead of ' +
    "keeping every block's bytes from commit to seal (about 13 MB, in the writer's malloc arena: 20-25 " +
    "MiB lower at the same rate); the writer unpacks a commit's batches one at a time as it packs them " +
    '(made all at once they lived through the collections packing caused: 48 -> 7 MB promoted a run), ' +
    'after which 4 MiB of young generation instead of 16 costs no speed (133-135 against 144-148 MiB in ' +
    "alternating runs). What remains: the node binary's pages (40 MiB), V8's pages of both isolates, " +
    "the writer's malloc arena (SQLite, chunks being assembled) and the appending thread's. Measured and " +
    'not kept: glibc arena and trim settings (10-15 MiB lower only), a writer page cache of 1 MiB ' +
    'instead of 4 (3 MiB lower, at the cost of reading index pages back at a few hundred actors).',
  'seek-first':
    "A fresh process's first scene reads one chunk per actor (200 here): 200 frames (header and block " +
    'table, a column of their own since store schema 6) and one 3 KB block of each, which SQLite cuts ' +
    "from the chunk's 60 KB blob with substr() after loading it whole (17 to 32 ms of a scene at a new " +
    'moment, timed statement by statement on 2026-12-06, with or without a memory map: more than MCAP ' +
    "per frame's whole first scene, so the target is out of reach on this layout); of each " +
    "block only the scene's row is decoded (a chunk's first look: each column up to that row), on code " +
    'V8 has not compiled yet. Listing the run (actors, 200 stream schemas) is about a tenth. The MCAP ' +
    'peer reads one 1 MiB chunk and one message of 200 records. Weighed (performance-history.md, "The ' +
    'levers left"): SQLite pages of 16 KB halve the block reads for 6 % more bytes a state, 64 KB quarter ' +
    "them for 12 %; incremental blob reads still walk the blob's overflow pages up to the block; code " +
    "compiled beforehand (the server's warm()) saves nothing measurable, a second scene at a new moment " +
    'taking 14-28 ms. None kept: bytes per state are a target too, and the rest is a layout choice.',
  'seek-median':
    'A scene of 200 actors finds 200 rows in chunks cached whole, builds 200 samples and 200 entries, ' +
    'and lists actors and streams (copies of 200 each): about 0.4 ms on this VM.',
  'seek-p99':
    'Decoding is paid by a few scenes: the first touches of chunk windows (a block per actor) and the ' +
    'scene that finds the streams browsed, which decodes every chunk touched once and, since ' +
    '2026-12-02, the chunks next to them: 4 of the 1,000 random scenes here, under the 1% that sets the ' +
    '99th percentile. What sets it is the scenes after the burst that run while V8 optimises the scene ' +
    "code on its compiler's threads (Node's pool of four, on two cores): read around each scene, " +
    "the scene thread's own schedstat shows those of 4-9 ms waiting 4 or 8 ms of it for a core, the " +
    'compiler taking both (2026-12-06; the column p99 waiting). How many scenes that hits moves with the ' +
    "machine from one process to the next (0.8 to 5 ms within an hour, the same code). LimSim's rows " +
    'are one indexed query a scene, cached by nothing and compiled by nobody, so its slowest scenes are ' +
    "the machine's: its p99 moves with the load (0.7 to 5 ms in runs of the same day).",
  trajectory:
    'A whole-run trajectory (readColumnsJoined, since 2026-11-26 afternoon) decodes its 5 chunks straight ' +
    'into the joined columns, nothing cached or copied again: 2.3 to 3.5 ms warm. The median of 3 is the ' +
    'second read of a fresh process, which runs code V8 is still compiling on its other thread: the ' +
    "decoder's loops (TurboFan 5-11 ms each here) and the functions called once a block (decodeNumbers, " +
    'decodeDictionary: 6-16 ms), whose compiles are queued during the first read and finish during the ' +
    'second or the third. A read after them takes 2.5-4 ms, one during them 6-10 (the repetitions of one run on 2026-11-26: ' +
    '4.5, 6.7, 8.2; twelve fresh processes measured 3.5-8.8, median 6.7, against 5.0-11.0, median 8.3, ' +
    'before). Until then the float decoder was also thrown away at the first column of another residual ' +
    'kind and compiled again for 10-17 ms (--trace-deopt), now a loop per kind. Written out without its ' +
    'small helper functions, the float decoder ran slower in a fresh process (first trajectory 18-24 ms ' +
    'against 13-16).',
  'sumo-vs-alone':
    'SUMO serving the recorded variables over TraCI, with nothing kept (the TraCI floor), steps at about ' +
    '0.35x its speed alone, and writing the same variables to its own FCD output at 0.33x: answering a ' +
    'step costs SUMO more than simulating it, so half its plain speed is out of reach of any TraCI ' +
    'recorder keeping what LimSim keeps. simrec reaches about 0.8x of that floor; the rest is decoding and ' +
    'recording on two cores that SUMO, the recorder and its writer thread share (the recorder runs below ' +
    "SUMO's priority, record sumo --nice 5).",
  'ingest-loopback':
    "The client, the server's main thread and its writer thread share two cores; a run's first seconds " +
    "add V8 compiling each process's code (the first runs' ratio is in firstRun).",
  demo:
    "The benchmark's demo is 60 simulated seconds, recorded in about a fifth of a second against 50 ms " +
    'simulated alone, and each repetition records into a new store, so a new writer thread: it takes ' +
    'about 40 ms to start (an empty worker 18) and then packs by code V8 has not optimised. Timed on ' +
    '2026-11-26: the demo waits 27-35 ms at its 10 s checkpoint for the first commit (the thread starting) ' +
    "and 43-50 ms at 20 s for the commit of its first ten seconds (the thread's first large commit, run " +
    'cold); later checkpoints wait under 5 ms. The same demo recorded again into a store whose writer ' +
    'thread is warm spends 65-70 ms stepping instead of 145, about 0.45x. A warm-up of the thread on a ' +
    'synthetic run at its start cost more (60-80 ms) than it saved. Over 600 simulated seconds recording ' +
    "costs the demo's thread about 1.4 us an actor-step (appending, its commits, their collections) " +
    'against 1 us of simulating: 0.37-0.40x there. The ratio moves with the machine: 0.20-0.28x in ten ' +
    'alternating processes of this code and the code before it on 2026-11-26 (0.22-0.27x), the speed ' +
    'without recording moving from 480k to 710k actor-steps a second between them.',
  'ingest-server-peak':
    "simrec serve keeps its main thread's young generation at 8 MiB (2.16-2.29x without it); the rest of " +
    "the peak is the main thread's malloc heap (22-51 MiB at the peak) and the store's writer thread, " +
    'started with the run (the baseline is measured before it). A credit window of 4 or 8 MiB instead ' +
    'of 32 did not lower it: on 2026-11-26 floods into fresh servers peaked at 1.85-2.19x with any of the ' +
    "three. Fresh servers measured apart peak at 1.71-2.04x (median 1.84x of 22 floods); the benchmark's " +
    'at 1.73-2.11x in its runs of 2026-11-26.',
};

const measured = (c: Check): c is Check & { value: number } =>
  c.value !== undefined && Number.isFinite(c.value);

interface Check {
  id: string;
  goal: string;
  value: number | undefined;
  /** Passes when value <= limit (>= limit with atLeast, < limit with below). */
  limit: number;
  atLeast?: boolean;
  below?: boolean;
  unit: string;
}

/** simrec's figure over a peer's, when the run measured both. */
const ratioOf = (simrec: number | undefined, peer: number | undefined): number | undefined =>
  simrec === undefined || peer === undefined ? undefined : simrec / peer;

/** The targets whose measurements the run has (a run of some sections leaves the others out). */
export function evaluateTargets(
  workloads: BenchResults['workloads'],
  r: Ratios,
  live: LiveResults = {},
): TargetResult[] {
  const { sumo, ingest, demo } = live;
  const mcap = ['mcap-per-state', 'mcap-per-frame'];
  const defined = (values: (number | undefined)[]): number[] => values.filter((v) => v !== undefined);
  const checks: Check[] = [
    {
      id: 'record-vs-limsim',
      goal: 'durable recording >= 4x LimSim rows',
      value: r.record['limsim-sqlite']?.speedup,
      limit: 4,
      atLeast: true,
      unit: 'x',
    },
    {
      id: 'record-vs-mcap',
      goal: 'durable recording >= 1.5x MCAP one message per frame',
      value: r.record['mcap-per-frame']?.speedup,
      limit: 1.5,
      atLeast: true,
      unit: 'x',
    },
    {
      id: 'size',
      goal: 'store <= 31 bytes per actor-state',
      value: workloads.record.simrec?.median.bytesPerState,
      limit: 31,
      unit: 'B',
    },
    {
      id: 'size-f32',
      goal: 'store <= 12 bytes per actor-state with the state declared f32',
      value: workloads.record['simrec-f32']?.median.bytesPerState,
      limit: 12,
      unit: 'B',
    },
    {
      id: 'record-rss',
      goal: 'recording peak RSS <= 150 MiB',
      value: (workloads.record.simrec?.maxRssBytes ?? NaN) / 2 ** 20,
      limit: 150,
      unit: 'MiB',
    },
    {
      id: 'size-vs-mcap',
      goal: 'store <= 1/2 of the smaller uncompressed MCAP file',
      value: Math.max(...defined(mcap.map((p) => r.record[p]?.sizeRatio))),
      limit: 0.5,
      unit: 'of it',
    },
    {
      id: 'seek-first',
      goal: "first scene of a fresh process <= MCAP one message per frame's",
      value: ratioOf(workloads.seek.simrec?.median.firstMs, workloads.seek['mcap-per-frame']?.median.firstMs),
      limit: 1,
      unit: 'x',
    },
    {
      id: 'seek-median',
      goal: 'seek median <= 0.5 ms',
      value: workloads.seek.simrec?.median.medianMs,
      limit: 0.5,
      unit: 'ms',
    },
    {
      id: 'seek-p99',
      goal: "scene p99 <= 2x LimSim rows' p99",
      value: ratioOf(workloads.seek.simrec?.median.p99Ms, workloads.seek['limsim-sqlite']?.median.p99Ms),
      limit: 2,
      unit: 'x',
    },
    {
      id: 'trajectory',
      goal: 'trajectory of one actor over the run (10,000 samples) <= 5 ms median',
      value: workloads.trajectory.simrec?.median.medianMs,
      limit: 5,
      unit: 'ms',
    },
    {
      id: 'sumo-vs-alone',
      goal: 'SUMO with every vehicle recorded >= 0.5x its speed alone',
      value: sumo?.plainStepsPerSecond
        ? (sumo.recordedStepsPerSecond ?? NaN) / sumo.plainStepsPerSecond
        : undefined,
      limit: 0.5,
      atLeast: true,
      unit: 'x',
    },
    {
      id: 'ingest-loopback',
      goal: 'loopback TCP ingest >= 0.6x the in-process rate',
      value: ingest?.loopbackToInProcess,
      limit: 0.6,
      atLeast: true,
      unit: 'x',
    },
    {
      id: 'demo',
      goal: 'the demo with recording on >= 0.8x of off',
      value: demo?.recordingOnToOff,
      limit: 0.8,
      atLeast: true,
      unit: 'x',
    },
    {
      id: 'ingest-server-peak',
      goal: "the ingest server's peak under a flood < 2x its baseline",
      value: ingest ? ingest.serverPeakMiB / ingest.serverBaselineMiB : undefined,
      limit: 2,
      below: true,
      unit: 'x',
    },
  ];
  return checks.filter(measured).map((c) => {
    const value = c.value;
    const met = c.atLeast ? value >= c.limit : c.below ? value < c.limit : value <= c.limit;
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
