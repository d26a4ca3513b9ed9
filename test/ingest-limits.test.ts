/**
 * What a connection may cost the server before and after it is trusted (issue #23): before its hello
 * is accepted it may send little, for a short time, and few such connections are held; after, a client
 * that never reads what it is answered is cut, its run ended `interrupted` with everything acknowledged.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { encodeFrame } from '../src/ingest/framing.js';
import {
  closedRun,
  poseSample,
  poseStream,
  RawClient,
  readAll,
  startIngestFixture,
  waitFor,
} from './helpers/ingest-helpers.js';

const errorCode = (m: { type: string; code?: string }): string | undefined =>
  m.type === 'error' ? m.code : undefined;

/** A WebSocket to /ingest that keeps what the server sends; resolves once open. */
function openWs(
  url: string,
): Promise<{ ws: WebSocket; received: { type: string; code?: string }[]; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const received: { type: string; code?: string }[] = [];
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    ws.on('message', (data) => received.push(JSON.parse(String(data))));
    ws.on('error', () => {});
    ws.once('open', () => resolve({ ws, received, closed }));
    ws.once('unexpected-response', () => reject(new Error('refused')));
  });
}

describe('before hello', () => {
  it('a connection may send 64 KiB until its hello is accepted, over TCP and WebSocket', async () => {
    const fx = await startIngestFixture();
    try {
      // A frame announcing 60 MiB, within the limit for a greeted client, half sent: it must not be buffered.
      const raw = await RawClient.connect(fx.tcpPort);
      const head = Buffer.alloc(8);
      head.writeUInt32BE(60 * 1024 * 1024, 0);
      head.writeUInt32BE(100, 4);
      raw.sendRaw(Buffer.concat([head, Buffer.alloc(256 * 1024)]));
      const error = await raw.next((m) => m.type === 'error', 'the refusal');
      assert.equal(errorCode(error), 'frame_too_large');
      assert.match(
        error.type === 'error' ? error.message : '',
        /bytes before hello: a connection may send 65536 bytes until its hello is accepted/,
      );
      await raw.closed;

      const { ws, received, closed } = await openWs(fx.wsUrl);
      ws.send(Buffer.alloc(1024 * 1024));
      assert.notEqual(await closed, 1000, 'closed as a violation');
      assert.deepEqual(received.map(errorCode).filter(Boolean), ['frame_too_large']);

      const greeted = await RawClient.greeted(fx.tcpPort);
      greeted.send(
        { type: 'attach', seq: 1, name: 'a.bin', mediaType: 'application/octet-stream' },
        Buffer.alloc(256 * 1024),
      );
      assert.equal(
        errorCode(await greeted.ack(1)),
        'out_of_order',
        'after hello the frame limit is the full one',
      );
      greeted.destroy();
    } finally {
      await fx.close();
    }
  });

  it('holds at most maxGreetingConnections connections that have not said hello; more are refused as busy', async () => {
    const fx = await startIngestFixture({ maxGreetingConnections: 4 });
    try {
      const silent = await Promise.all(Array.from({ length: 4 }, () => RawClient.connect(fx.tcpPort)));
      await waitFor(() => fx.server.ingest.stats().connections === 4, 'four connections');
      const fifth = await RawClient.connect(fx.tcpPort);
      const busy = await fifth.next((m) => m.type === 'error', 'the refusal');
      assert.equal(errorCode(busy), 'busy');
      assert.match(busy.type === 'error' ? busy.message : '', /4 connections have not said hello yet/);
      await fifth.closed;
      silent[0]!.send({ type: 'hello', protocol: 1, simulator: { name: 'late' } });
      await silent[0]!.next((m) => m.type === 'welcome');
      const sixth = await RawClient.greeted(fx.tcpPort);
      for (const c of [...silent, sixth]) c.destroy();
    } finally {
      await fx.close();
    }
  });

  it('cuts a connection that says no hello within helloTimeoutMs', async () => {
    const fx = await startIngestFixture({ helloTimeoutMs: 200 });
    try {
      const raw = await RawClient.connect(fx.tcpPort);
      raw.sendRaw(Buffer.from([0, 0])); // half a length: something, never a frame
      const error = await raw.next((m) => m.type === 'error', 'the timeout', 3000);
      assert.equal(errorCode(error), 'timeout');
      assert.match(error.type === 'error' ? error.message : '', /no hello within 200 ms/);
      await raw.closed;
    } finally {
      await fx.close();
    }
  });
});

describe('a client that never reads', () => {
  /** Begins a run and records two acknowledged samples; returns how to send, stop reading, and the close. */
  async function recording(
    transport: 'TCP' | 'WebSocket',
    fx: Awaited<ReturnType<typeof startIngestFixture>>,
  ): Promise<{ run: number; flood(messages: object[]): void; readAgain(): void; closed: Promise<unknown> }> {
    const setup = [
      { type: 'begin', seq: 1 },
      { type: 'actors', seq: 2, actors: [{ id: 'car', kind: 'vehicle' }] },
      { type: 'streams', seq: 3, streams: [poseStream('car')] },
      { type: 'samples', seq: 4, samples: { 'car/pose': [poseSample(0), poseSample(1)] } },
    ];
    const acked = (received: { type: string; seq?: number; run?: number }[], seq: number) =>
      waitFor(() => received.find((m) => m.type === 'ack' && m.seq === seq), `ack ${seq}`);
    if (transport === 'TCP') {
      const raw = await RawClient.greeted(fx.tcpPort);
      for (const m of setup) raw.send(m);
      const { run } = (await raw.ack(1)) as { run: number };
      assert.equal((await raw.ack(4)).type, 'ack');
      raw.stopReading();
      return {
        run,
        flood: (messages) => raw.sendRaw(Buffer.concat(messages.map((m) => encodeFrame(m)))),
        readAgain: () => raw.readAgain(),
        closed: raw.closed,
      };
    }
    const { ws, received, closed } = await openWs(fx.wsUrl);
    ws.send(JSON.stringify({ type: 'hello', protocol: 1, simulator: { name: 'ws' } }));
    for (const m of setup) ws.send(JSON.stringify(m));
    const { run } = (await acked(received, 1)) as { run: number };
    await acked(received, 4);
    ws.pause();
    return {
      run,
      flood: (messages) => messages.forEach((m) => ws.send(JSON.stringify(m))),
      readAgain: () => ws.resume(),
      closed,
    };
  }

  for (const transport of ['TCP', 'WebSocket'] as const)
    it(`is cut and its run ended interrupted, with every acknowledged batch (${transport})`, async () => {
      // Keepalive far off: the client is cut for not reading, not for falling silent.
      const fx = await startIngestFixture({
        maxUnreadBytes: 64 * 1024,
        slowReaderMs: 200,
        keepaliveMs: 60_000,
      });
      try {
        const client = await recording(transport, fx);
        // Pings and unknown messages: each is answered, and none counts in the credit window.
        client.flood(
          Array.from({ length: 200_000 }, (_, i) => (i % 2 ? { type: 'ping' } : { type: 'gossip' })),
        );
        await waitFor(() => fx.server.ingest.stats().sessions === 0, 'the server to cut the client', 20_000);
        // The client learns of it once it reads again (a paused socket sees no end).
        client.readAgain();
        let closed = false;
        void client.closed.then(() => (closed = true)); // waited for by waitFor, next
        await waitFor(() => closed, 'the connection to be closed');
        const info = await closedRun(fx.store, client.run);
        assert.equal(info.endReason, 'interrupted');
        assert.deepEqual(
          (await readAll(fx.store, client.run, 'car/pose')).map((s) => s.step),
          [0, 1],
        );
      } finally {
        await fx.close();
      }
    });
});
