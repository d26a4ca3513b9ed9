/**
 * `simrec record deepdrive`: the real command, in a child process, reading a region file the test writes
 * in deepdrive's layout snapshot by snapshot; and the disk sink's folder read back byte for byte.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decode as decodePng } from 'fast-png';
import { REGION_DATA_OFFSET } from '../src/record/capture/deepdrive-region.js';
import { AGENT_FILE, DiskSink, FRAMES_INDEX } from '../src/record/capture/disk-sink.js';
import type { Snapshot } from '../src/model/capture-port.js';
import { openStore } from '../src/store/open-store.js';
import { readAll } from './helpers/ingest-helpers.js';
import {
  regionCamera,
  writeRegion,
  type RegionCamera,
  type RegionCapture,
} from './helpers/ingest-deepdrive-region.js';
import { SIMREC_BIN, tempDir } from './helpers/paths.js';
import { runCli } from './helpers/run-cli.js';

const camera = (id: number): RegionCamera => regionCamera(id, 4, 3);

const capture = (messageId: number): RegionCapture => ({
  messageId,
  sequence: messageId * 10,
  timestamp: 100 + messageId * 0.05,
  position: [1000 + messageId * 100, -2000, 300],
  rotation: [0, 0, 0],
  speed: 1500,
  cameras: [camera(7)],
});

/**
 * Overwrites the region in place as the plugin does (same file, same size), the message header last, so
 * a reader that sees a new message id also sees its body.
 */
function overwriteRegion(path: string, region: Buffer): void {
  const fd = openSync(path, 'r+');
  try {
    const body = REGION_DATA_OFFSET + 16;
    writeSync(fd, region, body, region.length - body, body);
    writeSync(fd, region, 0, body, 0);
  } finally {
    closeSync(fd);
  }
}

const lineCount = (file: string): number =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    if (done()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Starts `simrec record deepdrive` and returns its exit and output once it ends. */
function startRecording(args: string[]) {
  const child = spawn(process.execPath, [SIMREC_BIN, 'record', 'deepdrive', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, exit };
}

describe('simrec record deepdrive', () => {
  const dir = tempDir('simrec-record-deepdrive-');
  const shm = join(dir.path, 'deepdrive_shared_memory');
  const storeFile = join(dir.path, 'dd.db');
  after(() => dir.cleanup());

  it('takes each new snapshot once, into the store and a folder per camera', async () => {
    const disk = join(dir.path, 'disk');
    writeFileSync(shm, writeRegion(capture(1)));
    const { exit } = startRecording([
      '--shm',
      shm,
      '--store',
      storeFile,
      '--disk',
      disk,
      '--snapshots',
      '3',
      '--json',
    ]);
    // The next snapshot is written once the command has taken the last (its agent line is on disk), and
    // each is left in place long enough to be read several times over: taken once all the same.
    for (const id of [2, 3]) {
      await until(`snapshot ${id - 1} taken`, () => lineCount(join(disk, AGENT_FILE)) === id - 1);
      await new Promise((r) => setTimeout(r, 50));
      overwriteRegion(shm, writeRegion(capture(id)));
    }
    const { code, stdout, stderr } = await exit;
    assert.equal(code, 0, stderr);
    const result = JSON.parse(stdout) as { run: { id: number; endReason: string }; snapshots: number };
    assert.equal(result.snapshots, 3);
    assert.equal(result.run.endReason, 'completed');

    const store = await openStore(storeFile);
    try {
      const states = await readAll(store, result.run.id, 'ego/snapshot');
      assert.deepEqual(
        states.map((s) => [s.step, s.x]),
        [
          [10, 11],
          [20, 12],
          [30, 13],
        ],
        'steps are deepdrive sequence numbers; x in metres, each snapshot once',
      );
      assert.equal((await readAll(store, result.run.id, 'camera_7/captures')).length, 3);
      assert.equal((await readAll(store, result.run.id, 'camera_7_depth/captures')).length, 3);
      const stored = await store.getAttachment(result.run.id, 'camera_7/00000020.rgb16f');
      const onDisk = readFileSync(join(disk, '7', '00000020.rgb16f'));
      assert.deepEqual(Buffer.from(stored!.data), onDisk, 'the store and the folder hold the same frame');
      const rgb = camera(7).rgb;
      assert.deepEqual(onDisk, Buffer.from(rgb.buffer, rgb.byteOffset, rgb.byteLength));
    } finally {
      await store.close();
    }
    assert.deepEqual(readdirSync(disk).sort(), ['7', '7_depth', AGENT_FILE]);
    assert.equal(lineCount(join(disk, '7_depth', FRAMES_INDEX)), 3);
  });

  it('ends on Ctrl-C (SIGINT) with the run closed as user_request, says so and exits 130', async () => {
    const disk = join(dir.path, 'disk-sigint');
    overwriteRegion(shm, writeRegion(capture(11)));
    const { child, exit } = startRecording(['--shm', shm, '--store', storeFile, '--disk', disk, '--json']);
    await until('the first snapshot taken', () => lineCount(join(disk, AGENT_FILE)) === 1);
    child.kill('SIGINT');
    const { code, stdout, stderr } = await exit;
    assert.equal(code, 130, stderr);
    const result = JSON.parse(stdout) as { run: { id: number; endReason: string }; snapshots: number };
    assert.deepEqual([result.run.endReason, result.snapshots], ['user_request', 1]);
    assert.equal(
      stderr,
      `simrec: interrupted; run ${result.run.id} is kept in ${storeFile} with the 1 snapshots recorded (ended user_request)\n`,
    );
  });

  it('killed (SIGKILL), leaves a run the next open closes as interrupted with every snapshot it completed', async () => {
    const disk = join(dir.path, 'disk-kill');
    const db = join(dir.path, 'killed.db');
    overwriteRegion(shm, writeRegion(capture(41)));
    const { child, exit } = startRecording(['--shm', shm, '--store', db, '--disk', disk]);
    for (const id of [42, 43]) {
      await until(`snapshot ${id - 1} taken`, () => lineCount(join(disk, AGENT_FILE)) === id - 41);
      overwriteRegion(shm, writeRegion(capture(id)));
    }
    await until('snapshot 43 taken', () => lineCount(join(disk, AGENT_FILE)) === 3);
    child.kill('SIGKILL');
    await exit;
    const store = await openStore(db);
    try {
      assert.equal((await store.getRun(1))?.endReason, 'interrupted');
      // Snapshot 43 is in the folder, so 41 and 42 went through every sink before it was offered.
      const stored = (await readAll(store, 1, 'ego/snapshot')).map((s) => s.step);
      assert.ok(stored.length >= 2, `${stored.length} snapshots stored`);
      assert.deepEqual(stored, [410, 420, 430].slice(0, stored.length), 'no gap and no repeat');
    } finally {
      await store.close();
    }
  });

  it('a malformed region: the error names the offset, and the snapshots before it stay recorded', async () => {
    const disk = join(dir.path, 'disk-bad');
    overwriteRegion(shm, writeRegion(capture(21)));
    const { exit } = startRecording(['--shm', shm, '--store', storeFile, '--disk', disk, '--json']);
    await until('the first snapshot taken', () => lineCount(join(disk, AGENT_FILE)) === 1);
    const bad = writeRegion(capture(22));
    bad.writeUInt32LE(0x12345678, REGION_DATA_OFFSET + 12);
    overwriteRegion(shm, bad);
    const { code, stderr } = await exit;
    assert.notEqual(code, 0);
    assert.match(stderr, /header_padding at offset 80 is not 0xEFBEADDE/);
    const store = await openStore(storeFile);
    try {
      const run = (await store.listRuns()).reduce((a, b) => (b.id > a.id ? b : a));
      assert.equal(run.endReason, 'inner_error');
      assert.deepEqual(
        (await readAll(store, run.id, 'ego/snapshot')).map((s) => s.step),
        [210],
      );
    } finally {
      await store.close();
    }
  });

  it('a region that does not exist: a clear error, and no run', async () => {
    const before = (await listRuns(storeFile)).length;
    const r = runCli(['record', 'deepdrive', '--shm', join(dir.path, 'nowhere'), '--store', storeFile]);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /nowhere: no deepdrive capture region there/);
    assert.equal((await listRuns(storeFile)).length, before);
  });

  it('refuses a negative --interval (capture on request only), which would record nothing', () => {
    const r = runCli(['record', 'deepdrive', '--shm', shm, '--store', storeFile, '--interval', '-1']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /--interval: expected 0 or a positive number of seconds, got -1/);
  });

  it('a region that goes quiet: the run ends interrupted after --idle', async () => {
    overwriteRegion(shm, writeRegion(capture(31)));
    const r = runCli(['record', 'deepdrive', '--shm', shm, '--store', storeFile, '--idle', '0.5', '--json']);
    assert.equal(r.status, 0, r.stderr);
    const result = JSON.parse(r.stdout) as { run: { endReason: string }; snapshots: number };
    assert.deepEqual([result.run.endReason, result.snapshots], ['interrupted', 1]);
  });
});

async function listRuns(file: string) {
  const store = await openStore(file);
  try {
    return await store.listRuns();
  } finally {
    await store.close();
  }
}

describe('the disk sink', () => {
  const dir = tempDir('simrec-disk-sink-');
  after(() => dir.cleanup());
  const rgb8 = Uint8Array.from({ length: 2 * 2 * 3 }, (_, i) => i * 20);
  const depth32 = new Uint8Array(Float32Array.from([0.5, 1.25, 1e-7, 3.4e38]).buffer);
  const snapshot = (step: number): Snapshot => ({
    t: step * 1000,
    step,
    agent: { x: step, speed: 2.5, handbrake: false },
    frames: [
      { camera: 'front', encoding: 'rgb8', width: 2, height: 2, data: rgb8 },
      { camera: 'front_depth', encoding: 'depth32f', width: 2, height: 2, data: depth32 },
    ],
  });
  let sink: DiskSink;
  before(async () => {
    sink = new DiskSink(join(dir.path, 'out'));
    for (const step of [1, 2]) await sink.write(snapshot(step));
    await sink.close();
  });

  it('writes 8-bit RGB as PNG and float frames as they came, each indexed in its camera folder', () => {
    const out = join(dir.path, 'out');
    const png = decodePng(readFileSync(join(out, 'front', '00000002.png')));
    assert.deepEqual([png.width, png.height, png.channels, png.depth], [2, 2, 3, 8]);
    assert.deepEqual(Array.from(png.data), Array.from(rgb8));
    assert.deepEqual(new Uint8Array(readFileSync(join(out, 'front_depth', '00000001.depth32f'))), depth32);
    const index = readFileSync(join(out, 'front_depth', FRAMES_INDEX), 'utf8')
      .trim()
      .split('\n');
    assert.deepEqual(JSON.parse(index[1]!), {
      t: 2000,
      step: 2,
      file: '00000002.depth32f',
      encoding: 'depth32f',
      width: 2,
      height: 2,
    });
  });

  it('keeps the agent state beside the cameras, one line per snapshot', () => {
    const lines = readFileSync(join(dir.path, 'out', AGENT_FILE), 'utf8')
      .trim()
      .split('\n');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      [1, 2].map((step) => ({ t: step * 1000, step, x: step, speed: 2.5, handbrake: false })),
    );
  });

  it('refuses a camera id that would leave the folder, and a frame of the wrong size', async () => {
    const escape = snapshot(3);
    escape.frames[0]!.camera = '../outside';
    await assert.rejects(sink.write(escape), /camera id "..\/outside" is not a safe folder name/);
    assert.equal(existsSync(join(dir.path, 'outside')), false);
    const short = snapshot(4);
    short.frames[1]!.data = depth32.subarray(0, 8);
    await assert.rejects(
      sink.write(short),
      /camera front_depth step 4: 8 bytes for 2x2 depth32f, expected 16/,
    );
  });
});
