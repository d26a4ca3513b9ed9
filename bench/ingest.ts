/**
 * End-to-end ingest: the same traffic recorded in-process and sent over loopback TCP by the TypeScript
 * client to a real ingest server in a process of its own (every batch acknowledged once durable), in
 * actor-samples per second, like for like: protocol 2's binary frames against RunRecorder.appendFrame,
 * protocol 1's JSON samples against RunRecorder.appendMany. And the server's memory while the client
 * sends every JSON batch at once, as fast as it can (the credit window, not the server's heap, must hold
 * the backlog).
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { IngestClient } from '../src/ingest/ingest-client.js';
import type { FrameInput } from '../src/model/columns.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { ActorDecl } from '../src/model/run.js';
import type { Sample, StreamDecl } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { startServer } from '../src/server/start-server.js';
import { limitYoungGeneration, SERVER_YOUNG_GENERATION_MIB } from '../src/server/young-generation.js';
import { openStore } from '../src/store/open-store.js';
import { median } from './stats.js';

/**
 * Each side records `runs` runs one after another in one process, as a simulator's process and a
 * server do (`simrec serve` runs for days; each run here is a fraction of a second): in-process into one
 * store kept open, over loopback into one server process started for them. The figures are the median
 * of the runs after the first; the first runs, with V8 still compiling each process's code and the
 * store's writer thread starting, are in `firstRun`. (Until 2026-11-26 each run had a fresh server and
 * store: a first run's cost on the loopback side, the in-process side's code already compiled.)
 */
export interface IngestSpeed {
  actors: number;
  steps: number;
  runs: number;
  /** In-process, a frame of every actor a step (appendFrame), and over loopback as binary frames. */
  inProcessSamplesPerSecond: number;
  loopbackSamplesPerSecond: number;
  /** loopback / in-process for binary frames: what the network hop and the acknowledgements cost. */
  loopbackToInProcess: number;
  /** The same for JSON samples (protocol 1) against appendMany with sample objects. */
  inProcessJsonSamplesPerSecond: number;
  loopbackJsonSamplesPerSecond: number;
  loopbackJsonToInProcess: number;
  /** The same for each side's first run. */
  firstRun: {
    inProcessSamplesPerSecond: number;
    loopbackSamplesPerSecond: number;
    loopbackToInProcess: number;
    loopbackJsonToInProcess: number;
  };
  /** A server's resident memory: after start, and its peak while one client floods it (JSON). */
  serverBaselineMiB: number;
  serverPeakMiB: number;
  /** What the client sent, for scale. */
  sentMiB: number;
  /** One flood of four times the steps, into a fresh server: a bounded server peaks about as high. */
  serverPeakMiB4x: number;
  sentMiB4x: number;
  /** The server's heap after that flood and a full GC: what it keeps, not what it had yet to collect. */
  serverRetainedHeapMiB4x: number;
  /**
   * The JSON speed runs' server, flooded run after run: its peak rises over the first ten or so runs
   * and then stays (forty measured), the main thread's malloc heap and the writer thread's young
   * generation grown, the main thread's V8 heap not.
   */
  serverOverRuns: { runs: number; sentMiB: number; baselineMiB: number; peakMiB: number };
}

const BEGIN_US = 1_700_000_000_000_000;
const STEP_US = 10_000;

const actorIds = (actors: number): string[] => Array.from({ length: actors }, (_, i) => `v${i}`);

const streamsOf = (actors: number): StreamDecl[] =>
  Array.from({ length: actors }, (_, i) => ({
    name: 'pose',
    actor: `v${i}`,
    fields: ['x', 'y', 'yaw', 'speed'].map((name) => ({ name, type: 'f64' as const })),
  }));

/** One step of the traffic: every actor's pose, as a batch keyed by stream id. */
function stepBatch(actors: number, step: number): Record<string, Sample[]> {
  const batch: Record<string, Sample[]> = {};
  const t = BEGIN_US + step * STEP_US;
  for (let i = 0; i < actors; i++) {
    const s = step * 0.01;
    batch[`v${i}/pose`] = [
      { t, step, x: i * 7 + s * 13.1, y: Math.sin(s + i) * 3, yaw: (i % 7) * 0.3, speed: 13.1 + (i % 5) },
    ];
  }
  return batch;
}

/** One step of the traffic as a frame: every actor's pose as columns, one value per actor. */
function stepFrame(actors: number, step: number, ids: string[]): FrameInput {
  const s = step * 0.01;
  const x = new Float64Array(actors);
  const y = new Float64Array(actors);
  const yaw = new Float64Array(actors);
  const speed = new Float64Array(actors);
  for (let i = 0; i < actors; i++) {
    x[i] = i * 7 + s * 13.1;
    y[i] = Math.sin(s + i) * 3;
    yaw[i] = (i % 7) * 0.3;
    speed[i] = 13.1 + (i % 5);
  }
  return { t: BEGIN_US + step * STEP_US, step, actors: ids, columns: { x, y, yaw, speed } };
}

type Path = 'frames' | 'json';

/** Where the traffic goes: the in-process recorder or the ingest client, each call durable when it resolves. */
interface TrafficSink {
  declareActors(decls: ActorDecl[]): Promise<unknown>;
  declareStreams(decls: StreamDecl[]): Promise<unknown>;
  frame(frame: FrameInput): Promise<unknown>;
  batch(batch: Record<string, Sample[]>): Promise<unknown>;
}

/** Declares the traffic, then sends every step at once (a frame, or JSON samples) and waits for all. */
async function sendTraffic(to: TrafficSink, actors: number, steps: number, path: Path): Promise<void> {
  await to.declareActors(Array.from({ length: actors }, (_, i) => ({ id: `v${i}`, kind: 'vehicle' })));
  await to.declareStreams(streamsOf(actors));
  const durable: Promise<unknown>[] = [];
  const ids = actorIds(actors);
  for (let step = 0; step < steps; step++)
    durable.push(
      path === 'frames' ? to.frame(stepFrame(actors, step, ids)) : to.batch(stepBatch(actors, step)),
    );
  await Promise.all(durable);
}

/** One run recorded in this process into `store` (open for every run, as a simulator's process keeps it). */
async function inProcess(store: StoreBackend, actors: number, steps: number, path: Path): Promise<number> {
  const start = performance.now();
  const rec = await RunRecorder.begin(store, { simulator: { name: 'bench' }, begin: BEGIN_US });
  await sendTraffic(
    {
      declareActors: (decls) => rec.declareActors(decls),
      declareStreams: (decls) => rec.declareStreams(decls),
      frame: (frame) => rec.appendFrame('pose', frame),
      batch: (batch) =>
        rec.appendMany(Object.entries(batch).map(([stream, samples]) => ({ stream, samples }))),
    },
    actors,
    steps,
    path,
  );
  await rec.end('completed');
  return (actors * steps) / ((performance.now() - start) / 1000);
}

interface ServerChild {
  port: number;
  baselineBytes: number;
  /** Stops the server and gives its peak resident memory and the heap it still holds after a full GC. */
  stop(): Promise<{ maxRssBytes: number; retainedHeapBytes: number }>;
}

/** A real ingest server on a loopback port, in its own process so its memory is its own. */
async function startServerChild(dir: string): Promise<ServerChild> {
  const child = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), 'server', dir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const ready = JSON.parse(((await lines.next()).value as string) ?? '{}') as {
    port: number;
    rssBytes: number;
  };
  return {
    port: ready.port,
    baselineBytes: ready.rssBytes,
    async stop() {
      child.stdin.end('stop\n');
      return JSON.parse((await lines.next()).value as string) as {
        maxRssBytes: number;
        retainedHeapBytes: number;
      };
    },
  };
}

/** The server as `simrec serve` runs it: its young generation held as that command holds it. */
async function serverChild(dir: string): Promise<void> {
  limitYoungGeneration(SERVER_YOUNG_GENERATION_MIB);
  const store = await openStore(join(dir, 'ingest.simrec.db'));
  const server = await startServer({ store, port: 0, ingest: { tcpPort: 0 } });
  process.stdout.write(
    JSON.stringify({ port: server.ingestTcpPort, rssBytes: process.memoryUsage().rss }) + '\n',
  );
  for await (const line of createInterface({ input: process.stdin })) if (line === 'stop') break;
  // What the flood left behind, as opposed to garbage V8 had not yet collected when it peaked.
  (globalThis as { gc?: () => void }).gc?.();
  const retainedHeapBytes = process.memoryUsage().heapUsed;
  await server.close();
  await store.close();
  process.stdout.write(
    JSON.stringify({ maxRssBytes: process.resourceUsage().maxRSS * 1024, retainedHeapBytes }) + '\n',
  );
}

/** Sends every step at once (the client queues what the window does not let through) and waits for all acks. */
async function overLoopback(
  port: number,
  actors: number,
  steps: number,
  path: Path,
): Promise<{ rate: number; bytes: number }> {
  const start = performance.now();
  const client = await IngestClient.connect({
    url: `tcp://127.0.0.1:${port}`,
    simulator: { name: 'bench' },
    protocol: path === 'frames' ? 2 : 1,
  });
  await client.beginRun({ begin: BEGIN_US });
  let bytes = 0;
  await sendTraffic(
    {
      declareActors: (decls) => client.declareActors(decls),
      declareStreams: (decls) => client.declareStreams(decls),
      frame: (frame) => client.appendFrame('pose', frame),
      batch: (batch) => {
        bytes += JSON.stringify(batch).length;
        return client.append(batch);
      },
    },
    actors,
    steps,
    path,
  );
  await client.endRun('completed');
  await client.close();
  return { rate: (actors * steps) / ((performance.now() - start) / 1000), bytes };
}

export async function measureIngest(scratch: string, quick: boolean): Promise<IngestSpeed> {
  const actors = quick ? 20 : 100;
  const steps = quick ? 200 : 3000;
  const runs = quick ? 2 : 5;
  const local: Record<Path, number[]> = { frames: [], json: [] };
  const remote: Record<Path, number[]> = { frames: [], json: [] };
  let overRuns = { baseline: 0, peak: 0 };
  let sent = 0;
  for (const path of ['frames', 'json'] as const) {
    const dir = join(scratch, `ingest-${path}`);
    mkdirSync(join(dir, 'server'), { recursive: true });
    const store = await openStore(join(dir, 'in-process.simrec.db'));
    const server = await startServerChild(join(dir, 'server'));
    let peak: number;
    try {
      // In turn, so that a slow spell of the machine does not land on one side only.
      for (let run = 0; run < runs; run++) {
        local[path].push(await inProcess(store, actors, steps, path));
        const { rate, bytes } = await overLoopback(server.port, actors, steps, path);
        remote[path].push(rate);
        if (path === 'json') sent = bytes;
      }
    } finally {
      await store.close();
      peak = (await server.stop()).maxRssBytes;
    }
    if (path === 'json') overRuns = { baseline: server.baselineBytes, peak };
  }
  // The memory figures are a JSON flood's (the larger messages, the heavier parse), each into a server
  // started for it.
  const flood = async (name: string, floodSteps: number) => {
    const dir = join(scratch, name);
    mkdirSync(dir, { recursive: true });
    const server = await startServerChild(dir);
    const { bytes } = await overLoopback(server.port, actors, floodSteps, 'json');
    return { baseline: server.baselineBytes, bytes, ...(await server.stop()) };
  };
  const once = await flood('ingest-flood', steps);
  const fourTimes = await flood('ingest-flood-4x', steps * 4);
  const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;
  const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;
  // The runs after each process's first: its code compiled by V8, its store's writer thread started.
  const steady = (rates: number[]): number => median(rates.length > 1 ? rates.slice(1) : rates);
  return {
    actors,
    steps,
    runs,
    inProcessSamplesPerSecond: Math.round(steady(local.frames)),
    loopbackSamplesPerSecond: Math.round(steady(remote.frames)),
    loopbackToInProcess: ratio(steady(remote.frames), steady(local.frames)),
    inProcessJsonSamplesPerSecond: Math.round(steady(local.json)),
    loopbackJsonSamplesPerSecond: Math.round(steady(remote.json)),
    loopbackJsonToInProcess: ratio(steady(remote.json), steady(local.json)),
    firstRun: {
      inProcessSamplesPerSecond: Math.round(local.frames[0]!),
      loopbackSamplesPerSecond: Math.round(remote.frames[0]!),
      loopbackToInProcess: ratio(remote.frames[0]!, local.frames[0]!),
      loopbackJsonToInProcess: ratio(remote.json[0]!, local.json[0]!),
    },
    serverBaselineMiB: mib(once.baseline),
    serverPeakMiB: mib(once.maxRssBytes),
    sentMiB: mib(once.bytes),
    serverPeakMiB4x: mib(fourTimes.maxRssBytes),
    sentMiB4x: mib(fourTimes.bytes),
    serverRetainedHeapMiB4x: mib(fourTimes.retainedHeapBytes),
    serverOverRuns: {
      runs,
      sentMiB: mib(sent),
      baselineMiB: mib(overRuns.baseline),
      peakMiB: mib(overRuns.peak),
    },
  };
}

export const formatIngest = (r: IngestSpeed): string =>
  [
    `ingest (${r.actors} actors x ${r.steps} steps, one batch a step; ${r.runs} runs a process, the median of those after the first):`,
    `  binary frames (protocol 2) over loopback TCP, acknowledged when durable: ${r.loopbackSamplesPerSecond} actor-samples/s, ${r.loopbackToInProcess}x the in-process RunRecorder.appendFrame (${r.inProcessSamplesPerSecond}/s)`,
    `  JSON samples (protocol 1) over loopback TCP: ${r.loopbackJsonSamplesPerSecond} actor-samples/s, ${r.loopbackJsonToInProcess}x the in-process RunRecorder.appendMany (${r.inProcessJsonSamplesPerSecond}/s)`,
    `  first runs: binary frames ${r.firstRun.loopbackSamplesPerSecond} actor-samples/s over loopback, ${r.firstRun.loopbackToInProcess}x in-process (${r.firstRun.inProcessSamplesPerSecond}/s); JSON ${r.firstRun.loopbackJsonToInProcess}x`,
    `  server memory with the client sending all ${r.sentMiB} MiB at once: ${r.serverBaselineMiB} MiB after start, peak ${r.serverPeakMiB} MiB (${(r.serverPeakMiB / r.serverBaselineMiB).toFixed(2)}x); sending ${r.sentMiB4x} MiB, peak ${r.serverPeakMiB4x} MiB (${(r.serverPeakMiB4x / r.serverPeakMiB).toFixed(2)}x for 4x the data; ${r.serverRetainedHeapMiB4x} MiB of heap held after it); flooded ${r.serverOverRuns.runs} times, ${r.serverOverRuns.sentMiB} MiB each, peak ${r.serverOverRuns.peakMiB} MiB (${(r.serverOverRuns.peakMiB / r.serverOverRuns.baselineMiB).toFixed(2)}x)`,
  ].join('\n');

if (process.argv[2] === 'server') await serverChild(process.argv[3]!);
