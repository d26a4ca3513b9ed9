import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { decodeMessage, encodeFrame, FrameDecoder } from '../../src/ingest/framing.js';
import { IngestClient } from '../../src/ingest/ingest-client.js';
import { stateStream } from '../../src/model/standard-streams.js';
import type { SensorDecl, ServerMessage } from '../../src/ingest/protocol.js';
import type { Sample, StreamDecl } from '../../src/model/stream.js';
import type { StoreBackend } from '../../src/model/store-port.js';
import type { RunInfo } from '../../src/model/run.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/start-server.js';
import { openStore } from '../../src/store/open-store.js';
import { REPO_ROOT, tempDir } from './paths.js';

export interface IngestFixture {
  store: StoreBackend;
  server: RunningServer;
  wsUrl: string;
  tcpUrl: string;
  tcpPort: number;
  close(): Promise<void>;
}

/** A real server on loopback ports with a fresh SQLite store; short timeouts so tests are quick. */
export async function startIngestFixture(ingest: ServerOptions['ingest'] = {}): Promise<IngestFixture> {
  const dir = tempDir('simrec-ingest-');
  const store = await openStore(join(dir.path, 'ingest.db'));
  const server = await startServer({
    store,
    port: 0,
    // A client cut off resumes within 2 s: on a loaded machine (append-paths' twelve runs at once beside
    // another test file) a reconnect took longer than the 300 ms this was, and the session was gone.
    ingest: { tcpPort: 0, resumeGraceMs: 2000, keepaliveMs: 2000, ...ingest },
  });
  const tcpPort = server.ingestTcpPort!;
  return {
    store,
    server,
    tcpPort,
    wsUrl: server.url.replace(/^http/, 'ws') + 'ingest',
    tcpUrl: `tcp://127.0.0.1:${tcpPort}`,
    async close() {
      await server.close();
      await store.close();
      dir.cleanup();
    },
  };
}

/**
 * A run recorded through the fixture's ingest as a simulator with a camera sends it: the ego's state at
 * 10 Hz from `begin`, and camera `front`'s image `images[k]` at step k x `every`. Returns the run's id.
 */
export async function recordCameraRun(
  fx: IngestFixture,
  options: {
    ego: string;
    begin: number;
    every: number;
    images: readonly Uint8Array[];
    /** Overrides of the camera's declaration (`front`, 4 x 2 pixels, 1.2 rad wide). */
    sensor?: Partial<SensorDecl>;
    /** The ego's yaw at each step, radians (0: it drives along x, a metre a step). */
    yawPerStep?: number;
  },
): Promise<number> {
  const { ego, begin, every, images } = options;
  const client = await IngestClient.connect({ url: fx.wsUrl, simulator: { name: 'camera' } });
  const run = await client.beginRun({ description: 'a camera, live' });
  await client.declareActors([{ id: ego, kind: 'ego' }]);
  await client.declareStreams([stateStream(ego)]);
  await client.declareSensors([
    {
      id: 'front',
      actor: ego,
      modality: 'camera',
      width: 4,
      height: 2,
      fov: 1.2,
      captureInterval: 0,
      ...options.sensor,
    },
  ]);
  for (let step = 0; step < images.length * every; step++) {
    const t = begin + step * 100_000;
    const yaw = step * (options.yawPerStep ?? 0);
    await client.append({ [`${ego}/state`]: [{ t, step, x: step, y: 0, yaw, speed: 10 }] });
    if (step % every === 0)
      await client.capture({ sensor: 'front', t, step, mediaType: 'image/png', data: images[step / every]! });
  }
  await client.endRun('completed');
  await client.close();
  return run;
}

/** The stream every ingest test records: one number per step, so losses and repeats are visible. */
export const poseStream = (actor: string): StreamDecl => ({
  name: 'pose',
  actor,
  fields: [
    { name: 'x', type: 'f64', unit: 'm' },
    { name: 'v', type: 'f64', unit: 'm/s' },
  ],
});

export const poseSample = (i: number): Sample => ({
  t: 1_000_000 + i * 10_000,
  step: i,
  x: i * 0.5,
  v: i / 3,
});

export async function readAll(store: StoreBackend, run: number, stream: string): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of store.readSamples({ run, stream })) out.push(...batch);
  return out;
}

export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const closedRun = (store: StoreBackend, run: number): Promise<RunInfo> =>
  waitFor(async () => {
    const info = await store.getRun(run);
    return info?.state === 'closed' ? info : null;
  }, `run ${run} to close`);

/** A TCP client that speaks frames by hand, for the bad-input tests. */
export class RawClient {
  readonly received: ServerMessage[] = [];
  readonly closed: Promise<void>;
  private readonly socket: Socket;
  private readonly decoder = new FrameDecoder(Number.MAX_SAFE_INTEGER);

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      for (const bytes of this.decoder.push(chunk))
        this.received.push(decodeMessage(bytes).header as ServerMessage);
    });
    socket.on('error', () => {});
    this.closed = new Promise((resolve) => socket.on('close', () => resolve()));
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  /** Connects and says hello; resolves with the welcome. */
  static async greeted(port: number, hello: object = {}): Promise<RawClient> {
    const client = await RawClient.connect(port);
    client.send({ type: 'hello', protocol: 1, simulator: { name: 'raw' }, ...hello });
    await client.next((m) => m.type === 'welcome');
    return client;
  }

  send(header: object, body?: Uint8Array): void {
    this.socket.write(encodeFrame(header, body));
  }

  sendRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** The first message (received so far or later) that matches, removed from the list. */
  async next(
    match: (m: ServerMessage) => boolean,
    what = 'a message',
    timeoutMs?: number,
  ): Promise<ServerMessage> {
    return waitFor(
      () => {
        const i = this.received.findIndex(match);
        return i < 0 ? null : this.received.splice(i, 1)[0]!;
      },
      what,
      timeoutMs,
    );
  }

  ack(seq: number): Promise<ServerMessage> {
    return this.next(
      (m) => (m.type === 'ack' && m.seq === seq) || (m.type === 'error' && m.ref?.seq === seq),
      `answer ${seq}`,
    );
  }

  /** Reads nothing more: what the server sends piles up (a client that never reads its answers). */
  stopReading(): void {
    this.socket.pause();
  }

  readAgain(): void {
    this.socket.resume();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** The bytes of the code blocks that follow the document's binary example, comments stripped. */
export function documentedBytes(): Buffer[] {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'protocol.md'), 'utf8');
  const example = doc.slice(doc.indexOf('**Example.** With `ego/state`'));
  const blocks = [...example.matchAll(/```\n([\s\S]*?)```/g)].slice(0, 3);
  assert.equal(blocks.length, 3, 'the document shows a frame, a columns body and a frame body with a bitmap');
  return blocks.map(([, text]) =>
    Buffer.from(
      text!
        .split('\n')
        .map((line) => line.split(/ {2,}/)[0]!.trim())
        .filter((hex) => /^([0-9a-f]{2} ?)+$/.test(hex))
        .join(' ')
        .replaceAll(' ', ''),
      'hex',
    ),
  );
}
