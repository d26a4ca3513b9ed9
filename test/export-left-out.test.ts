/**
 * Every export says what it leaves out of a run (#55, 8): exported from a real store, a scored demo run
 * (ego control and wheels, events, the evaluation, the road network) and a camera run with a car
 * beside it; each format's warnings name each stream or field it does not write, and one that writes
 * everything (MCAP) says nothing of the kind. LimSim's are in limsim-export.test.ts.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { capturesStreamDecl, captureToSample, SENSOR_ACTOR_KIND } from '../src/model/perception.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { exportRecording } from '../src/replay/export-run.js';
import { openStore } from '../src/store/open-store.js';
import { importPerception } from './helpers/formats.js';
import { fixture, tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-left-out-');
let store: StoreBackend;
let demo: number;
let camera: number;

before(async () => {
  store = await openStore(join(dir.path, 'left-out.db'));
  demo = (await recordDemoRun(store, { duration: 20, pedestrians: 3 })).run.id;
  const { events } = await evaluateRun(store, demo);
  assert.ok(events.length > 0, 'the demo run has events');
  camera = await recordCameraBesideACar(store);
});
after(async () => {
  await store?.close();
  dir.cleanup();
});

/** A camera (a Perception sensor with one capture) and a car driving past it, with its states. */
async function recordCameraBesideACar(s: StoreBackend): Promise<number> {
  const begin = 1_760_000_000_000_000;
  const rec = await RunRecorder.begin(s, { simulator: { name: 'camera-and-car' }, begin });
  await rec.declareActor({
    id: 'cam',
    kind: SENSOR_ACTOR_KIND,
    attributes: { perception: { id: 'cam', modality: 'camera', ego: null, description: 'a camera' } },
  });
  await rec.declareStream(capturesStreamDecl('cam'));
  await rec.declareActor({ id: 'car', kind: 'vehicle' });
  await rec.declareStream(stateStream('car'));
  await rec.append(
    'cam/captures',
    captureToSample({
      id: 'c0',
      sensor: 'cam',
      sequence: '0',
      step: 0,
      t: begin,
      timestamp: 0,
      annotations: [],
    }),
  );
  for (let i = 0; i < 10; i++)
    await rec.append('car/state', { t: begin + i * 100_000, step: i, x: i, y: 0, yaw: 0, speed: 10 });
  return (await rec.end('completed')).id;
}

async function warningsOf(run: number, format: string): Promise<string[]> {
  const warnings: string[] = [];
  await exportRecording(store, format, [run], join(dir.path, `${format}-${run}`), {
    warn: (where, message) => warnings.push(`${where}: ${message}`),
  });
  return warnings;
}

describe('what each export leaves out, it says', () => {
  it("DI-drive: the streams it has no place for, and the ego's fields its vector does not hold", async () => {
    const said = (await warningsOf(demo, 'didrive')).filter((w) => w.includes('left out'));
    const where = `${join(dir.path, `didrive-${demo}`)}: run ${demo}`;
    const why =
      "DI-drive's dataset has no place for it (it holds the ego's measurement vector, the bird's-eye view and camera images)";
    assert.deepEqual(said.sort(), [
      `${where}: stream control of ego: fields gear, handbrake left out: the measurement vector holds the ego's steer, throttle and brake only`,
      `${where}: stream evaluation of ego left out: ${why}`,
      `${where}: stream events of the run left out: ${why}`,
      `${where}: stream state of ego: fields roll, wx, wy, wz left out: the measurement vector holds the ego's position, heading, pitch, velocity, acceleration and lane only`,
      `${where}: stream wheels of ego left out: ${why}`,
    ]);
  });

  it("Parquet: the run's files (its road network)", async () => {
    assert.deepEqual(await warningsOf(demo, 'parquet'), [
      `run ${demo}: 2 attachments left out (roadnet/network.json, roadnet/source.net.xml): Parquet tables hold samples, actors and runs only`,
    ]);
  });

  it('MCAP writes every stream and file, and says nothing is left out', async () => {
    assert.deepEqual(
      (await warningsOf(demo, 'mcap')).filter((w) => /left out|not exported|not written/.test(w)),
      [],
    );
  });

  it("Perception, SOLO, COCO and YOLO: a vehicle's states beside the camera; COCO and YOLO the metrics", async () => {
    const said = {
      perception: "a Perception dataset holds sensors' captures and metrics only",
      solo: "a SOLO dataset holds sensors' captures and metrics only",
      coco: "a COCO export holds the captures' images and labels only",
      yolo: "a YOLO export holds the captures' images and labels only",
    };
    for (const [format, why] of Object.entries(said))
      assert.ok(
        (await warningsOf(camera, format)).includes(`run ${camera}: stream state of car left out: ${why}`),
        format,
      );
    // Unity's own mock dataset has metrics: COCO and YOLO have no place for them, the others do.
    const { run } = await importPerception(store, fixture('perception-simrun', 'datasetinsights'));
    for (const [format, why] of Object.entries(said)) {
      const metrics = (await warningsOf(run.id, format)).filter((w) => w.includes('perception.metrics'));
      assert.deepEqual(
        metrics,
        format === 'coco' || format === 'yolo'
          ? [`run ${run.id}: stream perception.metrics of the run left out: ${why}`]
          : [],
        format,
      );
    }
  });
});
