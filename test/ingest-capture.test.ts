import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RunRecorder } from '../src/record/run-recorder.js';
import { CapturePipeline } from '../src/record/capture/capture-pipeline.js';
import { DeepDriveRegionSource, parseDeepDriveRegion } from '../src/record/capture/deepdrive-region.js';
import { LiveSink } from '../src/record/capture/live-sink.js';
import type { CaptureSink, Snapshot } from '../src/model/capture-port.js';
import { StoreSink } from '../src/record/capture/store-sink.js';
import { openStore } from '../src/store/open-store.js';
import { readAll } from './helpers/ingest-helpers.js';
import { regionCamera, writeRegion, type RegionCapture } from './helpers/ingest-deepdrive-region.js';
import { tempDir } from './helpers/paths.js';

const camera = regionCamera;

const capture = (messageId: number, extra: Partial<RegionCapture> = {}): RegionCapture => ({
  messageId,
  sequence: messageId * 10,
  timestamp: 100 + messageId * 0.05,
  // Heading north-east, climbing: in Unreal (y to the right) north-east is -45 degrees of yaw.
  position: [1000, -2000, 300],
  rotation: [0, Math.PI / 18, -Math.PI / 4],
  speed: 1500,
  cameras: [camera(7)],
  ...extra,
});

describe('deepdrive shared-memory snapshots', () => {
  it('reads the agent state in canonical units and the cameras as half-float RGB and depth', () => {
    const message = parseDeepDriveRegion(writeRegion(capture(3, { cameras: [camera(7), camera(8, 2, 2)] })))!;
    assert.equal(message.messageId, 3);
    assert.equal(message.sequenceNumber, 30);
    const a = message.snapshot.agent;
    assert.deepEqual([a.x, a.y, a.z], [10, 20, 3]);
    assert.ok(Math.abs((a.yaw as number) - Math.PI / 4) < 1e-12, 'yaw counter-clockwise from +x');
    assert.ok(Math.abs((a.pitch as number) + Math.PI / 18) < 1e-12, 'nose up is negative canonical pitch');
    assert.equal(a.speed, 15);
    assert.equal(a.length, 4.5);
    assert.deepEqual(
      message.snapshot.frames.map((f) => [f.camera, f.encoding, f.width, f.height, f.data.byteLength]),
      [
        ['7', 'rgb16f', 3, 2, 36],
        ['7_depth', 'depth16f', 3, 2, 12],
        ['8', 'rgb16f', 2, 2, 24],
        ['8_depth', 'depth16f', 2, 2, 8],
      ],
    );
    const rgb = message.snapshot.frames[0]!.data;
    assert.deepEqual(new Uint16Array(rgb.buffer, rgb.byteOffset, 18), camera(7).rgb);
  });

  it('takes an empty slot for no snapshot and names the offset of a malformed one', () => {
    assert.equal(parseDeepDriveRegion(writeRegion(capture(0))), null);
    const badPadding = writeRegion(capture(1));
    badPadding.writeUInt32LE(0, 68 + 12);
    assert.throws(() => parseDeepDriveRegion(badPadding), /header_padding at offset 80/);
    const truncated = writeRegion(capture(1)).subarray(0, 700);
    assert.throws(
      () => parseDeepDriveRegion(truncated),
      /message_size \d+ does not fit the region of 700 bytes/,
    );
    const huge = writeRegion(capture(1));
    huge.writeInt32LE(5000, 68 + 584 + 32);
    huge.writeUInt32LE(5000 * 2 * 6, 68 + 584 + 48);
    assert.throws(
      () => parseDeepDriveRegion(huge),
      /camera 0 at offset 652: 5000x2 pixels run past message_size/,
    );
  });

  it('records each new snapshot once from the region file into the store', async () => {
    const dir = tempDir('simrec-deepdrive-');
    const store = await openStore(join(dir.path, 'dd.db'));
    try {
      const path = join(dir.path, 'deepdrive_shared_memory');
      const source = new DeepDriveRegionSource({ path, pollMs: 2 });
      source.begin = 5_000_000;
      const recorder = await RunRecorder.begin(store, {
        simulator: { name: 'deepdrive' },
        begin: source.begin,
      });
      const pipeline = new CapturePipeline({ sinks: [new StoreSink(recorder)] });
      for (const id of [1, 2, 3]) {
        writeFileSync(path, writeRegion(capture(id)));
        const snapshot = await source.next();
        assert.ok(snapshot);
        await pipeline.offer(snapshot);
      }
      // The same message is not taken twice.
      const stale = await source.next(AbortSignal.timeout(50));
      assert.equal(stale, null);
      await source.close();
      await pipeline.close();
      await recorder.end('user_request');
      const states = await readAll(store, recorder.id, 'ego/snapshot');
      assert.deepEqual(
        states.map((s) => [s.t, s.step, s.x]),
        [
          [5_000_000, 10, 10],
          [5_050_000, 20, 10],
          [5_100_000, 30, 10],
        ],
      );
      const captures = await readAll(store, recorder.id, 'camera_7/captures');
      assert.equal(captures.length, 3);
      const frame = await store.getAttachment(recorder.id, 'camera_7/00000020.rgb16f');
      assert.equal(frame?.data.byteLength, 36);
      assert.equal(frame?.metadata?.type, 'front');
    } finally {
      await store.close();
      dir.cleanup();
    }
  });
});

describe('the capture pipeline', () => {
  const snapshot = (i: number): Snapshot => ({
    t: i * 50_000,
    step: i,
    agent: { x: i },
    frames: [
      { camera: 'front', encoding: 'rgb8', width: 1, height: 1, data: new Uint8Array(3) },
      { camera: 'back', encoding: 'depth32f', width: 1, height: 1, data: new Uint8Array(4) },
    ],
  });
  const collect = (): CaptureSink & { got: Snapshot[] } => {
    const got: Snapshot[] = [];
    return { got, write: async (s) => void got.push(s), close: async () => {} };
  };
  const shape = (got: Snapshot[]): string[] =>
    got.map((s) => `${s.step}:${'x' in s.agent ? 'a' : ''}${s.frames.map((f) => f.camera[0]).join('')}`);

  it('captures each source at its interval, cameras while active, and on request', async () => {
    const sink = collect();
    const pipeline = new CapturePipeline({ sinks: [sink] });
    pipeline.setInterval(0.1, 'front');
    pipeline.setInterval(-1, 'back');
    for (let i = 0; i < 4; i++) await pipeline.offer(snapshot(i));
    pipeline.deactivate('front');
    pipeline.request('back');
    await pipeline.offer(snapshot(4));
    pipeline.activate('front');
    pipeline.setInterval(-1);
    await pipeline.offer(snapshot(5));
    await pipeline.offer(snapshot(6));
    assert.deepEqual(shape(sink.got), ['0:af', '1:a', '2:af', '3:a', '4:ab', '5:f']);
    assert.deepEqual(pipeline.counts, { offered: 7, captured: 6, frames: 4 });
  });

  it('drops the oldest snapshots for a slow live client and counts them', async () => {
    const live = new LiveSink();
    const slow = live.subscribe({ maxQueue: 2 });
    const fast = live.subscribe({ maxQueue: 8 });
    const pipeline = new CapturePipeline({ sinks: [live] });
    for (let i = 0; i < 5; i++) await pipeline.offer(snapshot(i));
    assert.equal(slow.dropped, 3);
    assert.equal(fast.dropped, 0);
    assert.deepEqual([(await slow.next())?.step, (await slow.next())?.step], [3, 4]);
    const waiting = slow.next();
    await pipeline.offer(snapshot(5));
    assert.equal((await waiting)?.step, 5);
    await pipeline.close();
    assert.equal(await slow.next(), null);
    assert.equal(live.clients, 0);
  });
});
