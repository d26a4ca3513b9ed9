import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { IngestClient, IngestError } from '../src/ingest/ingest-client.js';
import type { ControlMessage } from '../src/ingest/protocol.js';
import {
  closedRun,
  poseSample,
  poseStream,
  RawClient,
  readAll,
  startIngestFixture,
  waitFor,
  type IngestFixture,
} from './helpers/ingest-helpers.js';
import { REPO_ROOT } from './helpers/paths.js';

let fx: IngestFixture;
before(async () => {
  fx = await startIngestFixture();
});
after(async () => {
  await fx.close();
});

const steps = (samples: { step: number }[]): number[] => samples.map((s) => s.step);
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

async function recordBatches(
  client: IngestClient,
  actor: string,
  batches: number,
  size: number,
): Promise<void> {
  const pending: Promise<void>[] = [];
  for (let b = 0; b < batches; b++)
    pending.push(
      client.append({ [`${actor}/pose`]: Array.from({ length: size }, (_, i) => poseSample(b * size + i)) }),
    );
  await Promise.all(pending);
}

describe('ingest over WebSocket and TCP with the TypeScript client', () => {
  for (const transport of ['ws', 'tcp'] as const)
    it(`records a run with actors, streams, sensors, samples and captures (${transport})`, async () => {
      const url = transport === 'ws' ? fx.wsUrl : fx.tcpUrl;
      const client = await IngestClient.connect({
        url,
        simulator: { name: `sim-${transport}`, version: '2.1' },
      });
      const run = await client.beginRun({ description: 'loop', metadata: { town: 'Town01' } });
      await client.declareActors([
        { id: 'ego', kind: 'ego', extents: { length: 4.5, width: 1.8, height: 1.5 } },
      ]);
      await client.declareStreams([poseStream('ego')]);
      await client.declareSensors([
        { id: 'front', actor: 'ego', modality: 'camera', width: 4, height: 2, fov: 1.2, captureInterval: 0 },
      ]);
      await recordBatches(client, 'ego', 40, 25);
      const image = Uint8Array.from({ length: 4 * 2 * 3 }, (_, i) => (i * 37) & 0xff);
      await client.capture({ sensor: 'front', t: 1_500_000, step: 50, mediaType: 'image/png', data: image });
      await client.attach({
        name: 'scenario.bin',
        mediaType: 'application/octet-stream',
        data: new Uint8Array([1, 2, 3]),
      });
      assert.deepEqual(await client.endRun('scenario_stop_trigger'), { run, closed: true });
      await client.close();

      const info = await fx.store.getRun(run);
      assert.equal(info?.state, 'closed');
      assert.equal(info?.endReason, 'scenario_stop_trigger');
      assert.deepEqual(info?.simulator, { name: `sim-${transport}`, version: '2.1' });
      assert.deepEqual(info?.metadata, { town: 'Town01' });
      const samples = await readAll(fx.store, run, 'ego/pose');
      assert.deepEqual(steps(samples), range(0, 1000));
      assert.deepEqual(samples[999], poseSample(999));
      const capture = await fx.store.getAttachment(run, 'front/00000050.png');
      assert.deepEqual(capture?.data, image);
      assert.equal(capture?.t, 1_500_000);
      const rows = await readAll(fx.store, run, 'front/captures');
      assert.deepEqual(rows, [
        { t: 1_500_000, step: 50, name: 'front/00000050.png', mediaType: 'image/png', bytes: 24 },
      ]);
      const actors = await fx.store.listActors(run);
      assert.deepEqual(
        actors.map((a) => [a.id, a.kind]),
        [
          ['ego', 'ego'],
          ['front', 'sensor'],
        ],
      );
    });

  it('says when an actor leaves and comes back (leave, appear), and refuses one not declared (#20)', async () => {
    const client = await IngestClient.connect({ url: fx.tcpUrl, simulator: { name: 'comings' } });
    const run = await client.beginRun({ description: 'comings and goings' });
    await client.declareActors([{ id: 'car', kind: 'vehicle' }]);
    await client.declareStreams([poseStream('car')]);
    await client.append({ 'car/pose': [poseSample(0), poseSample(1), poseSample(2)] });
    const { t: lastSeen } = poseSample(2);
    await client.leave('car', lastSeen + 50_000);
    await client.appear('car', lastSeen + 500_000);
    await assert.rejects(client.leave('bus', lastSeen), (e: IngestError) => {
      assert.match(e.message, /leave\.actor: actor "bus" is not declared/);
      return true;
    });
    await client.endRun();
    await client.close();
    const car = (await fx.store.listActors(run)).find((a) => a.id === 'car')!;
    assert.deepEqual(car.presence, [
      { from: poseSample(0).t, to: lastSeen + 50_000 },
      { from: lastSeen + 500_000, to: null },
    ]);
  });

  it('resends what was not acknowledged after a dropped connection, storing nothing twice', async () => {
    for (const url of [fx.wsUrl, fx.tcpUrl]) {
      const client = await IngestClient.connect({
        url,
        simulator: { name: 'flaky' },
        reconnect: { delayMs: 20 },
      });
      const run = await client.beginRun();
      await client.declareActors([{ id: 'car', kind: 'vehicle' }]);
      await client.declareStreams([poseStream('car')]);
      const pending: Promise<void>[] = [];
      for (let b = 0; b < 60; b++) {
        pending.push(client.append({ 'car/pose': [poseSample(b * 2), poseSample(b * 2 + 1)] }));
        // Drops in the middle of the stream, while batches are in flight in both directions.
        if (b === 10) client.disconnect();
        if (b === 35) {
          await waitFor(() => client.reconnects === 1, 'the first reconnect');
          client.disconnect();
        }
        if (b % 7 === 0) await new Promise((r) => setImmediate(r));
      }
      await Promise.all(pending);
      await client.endRun();
      await client.close();
      assert.equal(client.reconnects, 2);
      assert.deepEqual(steps(await readAll(fx.store, run, 'car/pose')), range(0, 120));
      assert.equal((await fx.store.getRun(run))?.endReason, 'user_request');
    }
  });

  it('lets several simulators record at once, and several connections record one run', async () => {
    const clients = await Promise.all(
      range(0, 4).map((i) =>
        IngestClient.connect({ url: i % 2 ? fx.tcpUrl : fx.wsUrl, simulator: { name: `sim${i}` } }),
      ),
    );
    // Two of them share one run: the first begins it, the second joins with its own actors.
    const [a, b, c, d] = clients as [IngestClient, IngestClient, IngestClient, IngestClient];
    const shared = await a.beginRun();
    assert.equal(await b.joinRun(shared), shared);
    const own = [await c.beginRun(), await d.beginRun()];
    const actors: [IngestClient, string][] = [
      [a, 'a1'],
      [b, 'b1'],
      [c, 'c1'],
      [d, 'd1'],
    ];
    for (const [client, id] of actors) {
      await client.declareActors([{ id, kind: 'vehicle' }]);
      await client.declareStreams([poseStream(id)]);
    }
    await Promise.all(actors.map(([client, id]) => recordBatches(client, id, 50, 10)));
    // Another connection's actor is not yours to write.
    await assert.rejects(
      b.declareActors([{ id: 'a1', kind: 'vehicle' }]),
      (e: IngestError) => e.code === 'conflict',
    );
    await assert.rejects(
      b.append({ 'a1/pose': [poseSample(9999)] }),
      (e: IngestError) => e.code === 'conflict',
    );
    // Nor in a frame, whoever comes first in it, before or after frames of its own (the server
    // keeps the actor lists it found to be the connection's: a new list is looked up again).
    await b.declareActors([{ id: 'b2', kind: 'vehicle' }]);
    await b.declareStreams([poseStream('b2')]);
    const frame = (step: number, actors: string[]) => ({
      t: 1_000_000 + step * 10_000,
      step,
      actors,
      columns: { x: new Float64Array(actors.length).fill(step), v: new Float64Array(actors.length) },
    });
    await b.appendFrame('pose', frame(1, ['b2']));
    await b.appendFrame('pose', frame(2, ['b2']));
    for (const step of [3, 4])
      await assert.rejects(
        b.appendFrame('pose', frame(step, ['b2', 'a1'])),
        (e: IngestError) => e.code === 'conflict' && /frame\.actors\[1\]/.test(e.message),
      );
    await b.appendFrame('pose', frame(5, ['b2']));
    assert.deepEqual(steps(await readAll(fx.store, shared, 'b2/pose')), [1, 2, 5]);
    assert.deepEqual(await a.endRun(), { run: shared, closed: false });
    assert.equal((await fx.store.getRun(shared))?.state, 'recording');
    assert.deepEqual(await b.endRun('completed'), { run: shared, closed: true });
    await c.endRun();
    await d.endRun();
    await Promise.all(clients.map((client) => client.close()));
    for (const [run, id] of [
      [shared, 'a1'],
      [shared, 'b1'],
      [own[0]!, 'c1'],
      [own[1]!, 'd1'],
    ] as const)
      assert.deepEqual(
        steps(await readAll(fx.store, run, `${id}/pose`)),
        range(0, 500),
        `${id} in run ${run}`,
      );
    assert.equal((await fx.store.getRun(shared))?.endReason, 'completed');
  });

  it('holds a client to the credit window without losing anything', async () => {
    const small = await startIngestFixture({ window: { messages: 3 } });
    try {
      const client = await IngestClient.connect({ url: small.tcpUrl, simulator: { name: 'eager' } });
      const run = await client.beginRun();
      await client.declareActors([{ id: 'car', kind: 'vehicle' }]);
      await client.declareStreams([poseStream('car')]);
      let maxInFlight = 0;
      const pending: Promise<void>[] = [];
      for (let b = 0; b < 100; b++) {
        pending.push(client.append({ 'car/pose': [poseSample(b)] }));
        maxInFlight = Math.max(maxInFlight, client.inFlight);
        if (b % 10 === 9) await new Promise((r) => setTimeout(r, 1));
      }
      assert.ok(client.pending > 0, 'the client queues what the window does not let through');
      await Promise.all(pending);
      await client.endRun();
      await client.close();
      assert.equal(maxInFlight, 3);
      assert.deepEqual(steps(await readAll(small.store, run, 'car/pose')), range(0, 100));

      // A client that ignores the window is slowed by the transport, not buffered without bound.
      const raw = await RawClient.greeted(small.tcpPort);
      raw.send({ type: 'begin', seq: 1 });
      raw.send({ type: 'actors', seq: 2, actors: [{ id: 'car', kind: 'vehicle' }] });
      raw.send({ type: 'streams', seq: 3, streams: [poseStream('car')] });
      for (let i = 0; i < 300; i++)
        raw.send({ type: 'samples', seq: 4 + i, samples: { 'car/pose': [poseSample(i)] } });
      raw.send({ type: 'end', seq: 304, reason: 'user_request' });
      const end = (await raw.ack(304)) as { run: number };
      assert.equal(raw.received.filter((m) => m.type === 'error').length, 0);
      assert.deepEqual(steps(await readAll(small.store, end.run, 'car/pose')), range(0, 300));
      raw.destroy();
    } finally {
      await small.close();
    }
  });

  it('sends control messages to simulators and obeys the record-every-run switch', async () => {
    const controls: ControlMessage[] = [];
    const client = await IngestClient.connect({
      url: fx.wsUrl,
      simulator: { name: 'controlled' },
      onControl: (c) => controls.push(c),
    });
    const run = await client.beginRun();
    await client.declareActors([{ id: 'ego', kind: 'ego' }]);
    await client.declareSensors([{ id: 'front', actor: 'ego', modality: 'camera' }]);
    assert.equal(fx.server.ingest.control({ action: 'deactivate_camera', sensor: 'front' }, { run }), 1);
    assert.equal(
      fx.server.ingest.control({ action: 'set_capture_interval', sensor: 'front', interval: 0.5 }, { run }),
      1,
    );
    assert.equal(
      fx.server.ingest.control({ action: 'activate_camera', sensor: 'front' }, { run: run + 1000 }),
      0,
    );
    fx.server.settings.update({ recordEveryRun: false });
    await waitFor(() => controls.length === 3, 'three control messages');
    assert.deepEqual(controls, [
      { type: 'control', action: 'deactivate_camera', sensor: 'front' },
      { type: 'control', action: 'set_capture_interval', sensor: 'front', interval: 0.5 },
      { type: 'control', action: 'stop_recording' },
    ]);
    // The run under way goes on; a new one is refused until the switch is back on.
    await client.endRun();
    await assert.rejects(client.beginRun(), (e: IngestError) => e.code === 'recording_off');
    fx.server.settings.update({ recordEveryRun: true });
    await waitFor(() => controls.length === 4, 'start_recording');
    assert.equal(controls[3]?.action, 'start_recording');
    assert.ok((await client.beginRun()) > run);
    await client.endRun();
    await client.close();
  });
});

describe('a simulator that vanishes', () => {
  for (const mode of ['json', 'binary'] as const)
    it(`leaves its run interrupted with every acknowledged batch (SIGKILL, ${mode} batches)`, async () => {
      const child = spawn(
        process.execPath,
        [join(REPO_ROOT, 'dist', 'test', 'helpers', 'ingest-crash-client.js'), fx.tcpUrl, mode],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let run = 0;
      let acked = 0;
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`the client exited early (${code})`)));
        createInterface({ input: child.stdout }).on('line', (line) => {
          const [word, n] = line.split(' ');
          if (word === 'run') run = Number(n);
          if (word === 'ack') acked = Number(n);
          if (acked >= 200) {
            child.removeAllListeners('exit');
            child.kill('SIGKILL');
            resolve();
          }
        });
      });
      const info = await closedRun(fx.store, run);
      assert.equal(info.endReason, 'interrupted');
      const stored = steps(await readAll(fx.store, run, 'car/pose'));
      assert.ok(stored.length >= acked, `${stored.length} samples stored, ${acked} acknowledged`);
      assert.deepEqual(stored, range(0, stored.length), 'no gap and no repeat');
    });

  it('closes the run when the connection drops mid-frame, keeping what was acknowledged', async () => {
    const raw = await RawClient.greeted(fx.tcpPort);
    raw.send({ type: 'begin', seq: 1 });
    const { run } = (await raw.ack(1)) as { run: number };
    raw.send({ type: 'actors', seq: 2, actors: [{ id: 'car', kind: 'vehicle' }] });
    raw.send({ type: 'streams', seq: 3, streams: [poseStream('car')] });
    raw.send({ type: 'samples', seq: 4, samples: { 'car/pose': [poseSample(0), poseSample(1)] } });
    assert.equal((await raw.ack(4)).type, 'ack');
    const frame = Buffer.from(
      JSON.stringify({ type: 'samples', seq: 5, samples: { 'car/pose': [poseSample(2)] } }),
    );
    const head = Buffer.alloc(8);
    head.writeUInt32BE(frame.length + 4, 0);
    head.writeUInt32BE(frame.length, 4);
    raw.sendRaw(Buffer.concat([head, frame.subarray(0, 10)]));
    await new Promise((r) => setTimeout(r, 50));
    raw.destroy();
    const info = await closedRun(fx.store, run);
    assert.equal(info.endReason, 'interrupted');
    assert.deepEqual(steps(await readAll(fx.store, run, 'car/pose')), [0, 1]);
  });
});

describe('bad input', () => {
  it('refuses a wrong protocol version, a missing token and a first message that is not hello', async () => {
    const cases: [object, string][] = [
      [{ type: 'hello', protocol: 99, simulator: { name: 's' } }, 'unsupported_version'],
      [{ type: 'begin', seq: 1 }, 'out_of_order'],
      [{ type: 'hello', protocol: 1 }, 'bad_message'],
    ];
    for (const [hello, code] of cases) {
      const raw = await RawClient.connect(fx.tcpPort);
      raw.send(hello);
      const error = await raw.next((m) => m.type === 'error');
      assert.equal(error.type === 'error' && error.code, code);
      assert.equal(error.type === 'error' && error.fatal, true);
      await raw.closed;
    }
    const secured = await startIngestFixture({ token: 's3cret' });
    try {
      await assert.rejects(
        IngestClient.connect({ url: secured.wsUrl, simulator: { name: 's' }, token: 'guess' }),
        (e: IngestError) => e.code === 'unauthorized' && e.field === 'token',
      );
      await assert.rejects(
        IngestClient.connect({ url: secured.tcpUrl, simulator: { name: 's' } }),
        (e: IngestError) => e.code === 'unauthorized',
      );
      const ok = await IngestClient.connect({
        url: secured.tcpUrl,
        simulator: { name: 's' },
        token: 's3cret',
      });
      await ok.close();
    } finally {
      await secured.close();
    }
  });

  it('answers messages that are invalid for the state or the model, naming message and field, and goes on', async () => {
    const raw = await RawClient.greeted(fx.tcpPort);
    raw.send({ type: 'samples', seq: 1, samples: { 'car/pose': [poseSample(0)] } });
    assert.deepEqual(await raw.ack(1), {
      type: 'error',
      code: 'out_of_order',
      message: 'samples: no run has begun in this session (send begin or join first)',
      ref: { type: 'samples', seq: 1 },
      fatal: false,
    });
    raw.send({ type: 'begin', seq: 2 });
    const { run } = (await raw.ack(2)) as { run: number };
    raw.send({ type: 'actors', seq: 3, actors: [{ id: 'car', kind: 'vehicle' }] });
    raw.send({ type: 'streams', seq: 4, streams: [poseStream('car')] });
    raw.send({ type: 'samples', seq: 5, samples: { 'car/pose': [poseSample(0)] } });
    raw.send({ type: 'samples', seq: 6, samples: { 'car/nope': [poseSample(1)] } });
    raw.send({
      type: 'samples',
      seq: 7,
      samples: { 'car/pose': [poseSample(1), { ...poseSample(2), x: 'far' }] },
    });
    raw.send({ type: 'samples', seq: 8, samples: { 'car/pose': [{ ...poseSample(0), t: 999_000 }] } });
    raw.send({ type: 'samples', seq: 9, samples: [] });
    raw.send({ type: 'warp', seq: 10 });
    raw.send(
      { type: 'capture', seq: 11, sensor: 'front', t: 1, step: 1, mediaType: 'image/png' },
      new Uint8Array(3),
    );
    raw.send({ type: 'attach', seq: 12, name: '../etc/passwd', mediaType: 'text/plain' }, new Uint8Array(3));
    raw.send({ type: 'samples', seq: 13, samples: { 'car/pose': [poseSample(1)] } });
    const answers = await Promise.all(range(5, 14).map((seq) => raw.ack(seq)));
    const brief = answers.map((m) =>
      m.type === 'error'
        ? `${m.ref?.seq} ${m.code} ${m.field ?? '-'}`
        : m.type === 'ack'
          ? `${m.seq} ack`
          : m.type,
    );
    assert.deepEqual(brief, [
      '5 ack',
      '6 invalid samples.car/nope',
      '7 invalid stream car/pose sample at t=1020000',
      '8 invalid stream car/pose sample at t=999000',
      '9 bad_message samples',
      '10 bad_message type',
      '11 invalid sensor',
      '12 invalid attachment.name',
      '13 ack',
    ]);
    const nope = answers[1]!;
    assert.match(nope.type === 'error' ? nope.message : '', /no declared stream "car\/nope"/);
    raw.send({ type: 'end', seq: 14, reason: 'user_request' });
    await raw.ack(14);
    raw.destroy();
    assert.deepEqual(steps(await readAll(fx.store, run, 'car/pose')), [0, 1]);
  });

  it('disconnects a client that sends an oversized or unreadable frame or skips a sequence number; others go on', async () => {
    const small = await startIngestFixture({ maxFrameBytes: 4096 });
    try {
      const bystander = await IngestClient.connect({ url: small.tcpUrl, simulator: { name: 'bystander' } });
      const run = await bystander.beginRun();
      await bystander.declareActors([{ id: 'car', kind: 'vehicle' }]);
      await bystander.declareStreams([poseStream('car')]);
      await bystander.append({ 'car/pose': [poseSample(0)] });

      const huge = await RawClient.greeted(small.tcpPort);
      huge.send(
        { type: 'attach', seq: 1, name: 'big', mediaType: 'application/octet-stream' },
        new Uint8Array(10_000),
      );
      const tooLarge = await huge.next((m) => m.type === 'error');
      assert.equal(tooLarge.type === 'error' && tooLarge.code, 'frame_too_large');
      await huge.closed;

      const garbled = await RawClient.greeted(small.tcpPort);
      const junk = Buffer.from('{"type": "samp');
      const frame = Buffer.alloc(8);
      frame.writeUInt32BE(junk.length + 4, 0);
      frame.writeUInt32BE(junk.length, 4);
      garbled.sendRaw(Buffer.concat([frame, junk]));
      const badFrame = await garbled.next((m) => m.type === 'error');
      assert.equal(badFrame.type === 'error' && badFrame.code, 'bad_frame');
      await garbled.closed;

      const skipper = await RawClient.greeted(small.tcpPort);
      skipper.send({ type: 'begin', seq: 1 });
      const skipped = (await skipper.ack(1)) as { run: number };
      skipper.send({ type: 'begin', seq: 5 });
      const gap = await skipper.next((m) => m.type === 'error');
      assert.equal(gap.type === 'error' && `${gap.code} ${gap.field} ${gap.fatal}`, 'sequence_gap seq true');
      await skipper.closed;
      assert.equal((await closedRun(small.store, skipped.run)).endReason, 'interrupted');

      // The client refuses what the server would; over WebSocket the server closes with 1009.
      const client = await IngestClient.connect({ url: small.wsUrl, simulator: { name: 'ws-huge' } });
      await client.beginRun();
      await assert.rejects(
        client.attach({ name: 'big', mediaType: 'application/octet-stream', data: new Uint8Array(10_000) }),
        (e: IngestError) => e.code === 'frame_too_large',
      );
      await client.endRun();
      await client.close();
      const ws = new WebSocket(small.wsUrl);
      await new Promise((r) => ws.once('open', r));
      ws.send(new Uint8Array(10_000));
      assert.equal(await new Promise((r) => ws.once('close', r)), 1009);

      await bystander.append({ 'car/pose': [poseSample(1)] });
      await bystander.endRun();
      await bystander.close();
      assert.deepEqual(steps(await readAll(small.store, run, 'car/pose')), [0, 1]);
      assert.deepEqual((await small.store.checkIntegrity()).problems, []);
    } finally {
      await small.close();
    }
  });
});
