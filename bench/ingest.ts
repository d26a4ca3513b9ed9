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
import type { Sample, StreamDecl } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { startServer } from '../src/server/start-server.js';
import { limitYoungGeneration, SERVER_YOUNG_GENERATION_MIB } from '../src/server/young-generation.js';
import { openStore } from '../src/store/open-store.js';
import { median } from './stats.js';

export interface IngestSpeed {
  actors: number;
  steps: number;
  /** In-process, a frame of every actor a step (appendFrame), and over loopback as binary frames. */
  inProcessSamplesPerSecond: number;
  loopbackSamplesPerSecond: number;
  /** loopback / in-process for binary frames: what the network hop and the acknowledgements cost. */
  loopbackToInProcess: number;
  /** The same for JSON samples (protocol 1) against appendMany with sample objects. */
  inProcessJsonSamplesPerSecond: number;
  loopbackJsonSamplesPerSecond: number;
  loopbackJsonToInProcess: number;
  /** The server process's resident memory: after start, and its peak while the client floods it. */
  serverBaselineMiB: number;
  serverPeakMiB: number;
  /** What the client sent in that time, for scale. */
  sentMiB: number;
  /** The same flood with four times the steps: a bounded server peaks about as high. */
  serverPeakMiB4x: number;
  sentMiB4x: number;
  /** The server's heap after that flood and a full GC: what it keeps, not what it had yet to collect. */
  serverRetainedHeapMiB4x: number;
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

async function inProcess(dir: string, actors: number, steps: number, path: Path): Promise<number> {
  const store = await openStore(join(dir, `in-process-${path}.simrec.db`));
  try {
    const start = performance.now();
    const rec = await RunRecorder.begin(store, { simulator: { name: 'bench' }, begin: BEGIN_US });
    await rec.declareActors(Array.from({ length: actors }, (_, i) => ({ id: `v${i}`, kind: 'vehicle' })));
    await rec.declareStreams(streamsOf(actors));
    const durable: Promise<void>[] = [];
    const ids = actorIds(actors);
    for (let step = 0; step < steps; step++) {
      if (path === 'frames') {
        durable.push(rec.appendFrame('pose', stepFrame(actors, step, ids)));
        continue;
      }
      const batch = stepBatch(actors, step);
      durable.push(rec.appendMany(Object.entries(batch).map(([stream, samples]) => ({ stream, samples }))));
    }
    await Promise.all(durable);
    await rec.end('completed');
    return (actors * steps) / ((performance.now() - start) / 1000);
  } finally {
    await store.close();
  }
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
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const ready = JSON.parse(((await lines.next()).value as string) ?? '{}') as {
    port: number;
    rssBytes: number;
  };
  return {
    port: ready.port,
    baselineBytes: ready.rssBytes,
    async stop() {
      child.stdin!.end('stop\n');
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
  await client.declareActors(Array.from({ length: actors }, (_, i) => ({ id: `v${i}`, kind: 'vehicle' })));
  await client.declareStreams(streamsOf(actors));
  let bytes = 0;
  const acked: Promise<void>[] = [];
  const ids = actorIds(actors);
  for (let step = 0; step < steps; step++) {
    if (path === 'frames') {
      acked.push(client.appendFrame('pose', stepFrame(actors, step, ids)));
      continue;
    }
    const batch = stepBatch(actors, step);
    bytes += JSON.stringify(batch).length;
    acked.push(client.append(batch));
  }
  await Promise.all(acked);
  await client.endRun('completed');
  await client.close();
  return { rate: (actors * steps) / ((performance.now() - start) / 1000), bytes };
}

export async function measureIngest(scratch: string, quick: boolean): Promise<IngestSpeed> {
  const actors = quick ? 20 : 100;
  const steps = quick ? 200 : 3000;
  const reps = quick ? 1 : 3;
  const local: Record<Path, number[]> = { frames: [], json: [] };
  const remote: Record<Path, number[]> = { frames: [], json: [] };
  let baseline = 0;
  let peak = 0;
  let sent = 0;
  for (let rep = 0; rep < reps; rep++) {
    const dir = join(scratch, `ingest-${rep}`);
    mkdirSync(dir, { recursive: true });
    for (const path of ['frames', 'json'] as const) {
      local[path].push(await inProcess(dir, actors, steps, path));
      mkdirSync(join(dir, path), { recursive: true });
      const server = await startServerChild(join(dir, path));
      const { rate, bytes } = await overLoopback(server.port, actors, steps, path);
      remote[path].push(rate);
      const { maxRssBytes } = await server.stop();
      if (path === 'frames') continue;
      // The memory figures are the JSON flood's: the larger messages, the heavier parse.
      sent = bytes;
      baseline = Math.max(baseline, server.baselineBytes);
      peak = Math.max(peak, maxRssBytes);
    }
  }
  const dir = join(scratch, 'ingest-4x');
  mkdirSync(dir, { recursive: true });
  const server = await startServerChild(dir);
  const { bytes: sent4x } = await overLoopback(server.port, actors, steps * 4, 'json');
  const { maxRssBytes: peak4x, retainedHeapBytes: retained4x } = await server.stop();
  const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;
  const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;
  return {
    actors,
    steps,
    inProcessSamplesPerSecond: Math.round(median(local.frames)),
    loopbackSamplesPerSecond: Math.round(median(remote.frames)),
    loopbackToInProcess: ratio(median(remote.frames), median(local.frames)),
    inProcessJsonSamplesPerSecond: Math.round(median(local.json)),
    loopbackJsonSamplesPerSecond: Math.round(median(remote.json)),
    loopbackJsonToInProcess: ratio(median(remote.json), median(local.json)),
    serverBaselineMiB: mib(baseline),
    serverPeakMiB: mib(peak),
    sentMiB: mib(sent),
    serverPeakMiB4x: mib(peak4x),
    sentMiB4x: mib(sent4x),
    serverRetainedHeapMiB4x: mib(retained4x),
  };
}

export const formatIngest = (r: IngestSpeed): string =>
  [
    `ingest (${r.actors} actors x ${r.steps} steps, one batch a step):`,
    `  binary frames (protocol 2) over loopback TCP, acknowledged when durable: ${r.loopbackSamplesPerSecond} actor-samples/s, ${r.loopbackToInProcess}x the in-process RunRecorder.appendFrame (${r.inProcessSamplesPerSecond}/s)`,
    `  JSON samples (protocol 1) over loopback TCP: ${r.loopbackJsonSamplesPerSecond} actor-samples/s, ${r.loopbackJsonToInProcess}x the in-process RunRecorder.appendMany (${r.inProcessJsonSamplesPerSecond}/s)`,
    `  server memory with the client sending all ${r.sentMiB} MiB at once: ${r.serverBaselineMiB} MiB after start, peak ${r.serverPeakMiB} MiB; sending ${r.sentMiB4x} MiB, peak ${r.serverPeakMiB4x} MiB (${(r.serverPeakMiB4x / r.serverPeakMiB).toFixed(2)}x for 4x the data; ${r.serverRetainedHeapMiB4x} MiB of heap held after it)`,
  ].join('\n');

if (process.argv[2] === 'server') await serverChild(process.argv[3]!);
