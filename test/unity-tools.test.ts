/**
 * What Unity's own clients (datasetinsights, pysolotools, pycocotools) showed about simrec's Perception,
 * SOLO and COCO files, pinned on simrec's side: CI cannot fetch those tools. Each test names the run of
 * the tool that found the behaviour; the samples are Unity's own (test/fixtures/datasetinsights,
 * test/fixtures/pysolotools, test/fixtures/perception-simrun).
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportCoco } from './helpers/formats.js';
import { exportPerception, importPerception, loadDataset, type LoadedDataset } from './helpers/formats.js';
import { perceptionStats } from './helpers/formats.js';
import { importSolo } from './helpers/formats.js';
import { exportSolo } from './helpers/formats.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, REPO_ROOT, tempDir } from './helpers/paths.js';

const tmp = tempDir('simrec-unity-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(tmp.path, 'store.db'));
});
after(async () => {
  await store.close();
  tmp.cleanup();
});

const KEYPOINT_SAMPLE = join(REPO_ROOT, 'test', 'fixtures', 'datasetinsights', 'simrun_keypoint_dataset');
const SOLO_SAMPLE = join(REPO_ROOT, 'test', 'fixtures', 'pysolotools', 'solo');
const MOCK = fixture('perception-simrun', 'Dataset');
const DI_COPY = fixture('perception-simrun', 'datasetinsights', 'Dataset');

type Json = Record<string, any>;
const readJson = (...path: string[]): Json => JSON.parse(readFileSync(join(...path), 'utf8')) as Json;
const collect = (): { warn: (where: string, message: string) => void; warnings: string[] } => {
  const warnings: string[] = [];
  return { warnings, warn: (where, message) => warnings.push(`${where}: ${message}`) };
};
let outputs = 0;
const out = (name: string): string => join(tmp.path, `${name}-${++outputs}`);

async function exported(
  exporter: typeof exportPerception | typeof exportSolo | typeof exportCoco,
  run: number,
  name: string,
): Promise<{ dir: string; warnings: string[] }> {
  const dir = out(name);
  const { warn, warnings } = collect();
  await exporter(store, run, dir, { warn });
  return { dir, warnings };
}

const comparable = (d: LoadedDataset): object => {
  const { run: _run, ...rest } = d;
  return rest;
};

describe('legacy layouts (datasetinsights: Captures, its COCO converters copy the images)', () => {
  it("the flat layout (datasetinsights' keypoint sample) imports every image", async () => {
    const result = await importPerception(store, KEYPOINT_SAMPLE);
    assert.deepEqual(result.warnings, []);
    const names = (await store.listAttachments(result.run.id)).map((a) => a.name).sort();
    assert.ok(
      names.includes('annotations/keypoint_000.png') && names.includes('annotations/keypoint_001.png'),
    );
  });

  it('the same dataset nested (tables in Dataset/, images beside it) imports the same files', async () => {
    const dir = out('nested');
    cpSync(KEYPOINT_SAMPLE, dir, { recursive: true });
    mkdirSync(join(dir, 'Dataset'));
    for (const f of readdirSync(dir))
      if (f.endsWith('.json')) renameSync(join(dir, f), join(dir, 'Dataset', f));
    for (const location of [dir, join(dir, 'Dataset')]) {
      const result = await importPerception(store, location);
      assert.deepEqual(result.warnings, [], location);
      const d = await loadDataset(store, result.run.id);
      assert.deepEqual(
        d.captures.map((c) => c.file),
        ['annotations/keypoint_000.png', 'annotations/keypoint_001.png'],
      );
    }
  });
});

describe('ids, egos, sensors and specs as the files have them (datasetinsights: filter(1), filter_metrics(1), Egos, Sensors)', () => {
  it("the mock's integer ids stay integers, its string ids strings", async () => {
    const mock = await importPerception(store, MOCK);
    const { dir } = await exported(exportPerception, mock.run.id, 'mock');
    const defs = readJson(dir, 'Dataset', 'annotation_definitions.json').annotation_definitions as Json[];
    assert.deepEqual(
      defs.map((d) => d.id),
      [1, 2, 3, 4],
    );
    assert.deepEqual(
      (readJson(dir, 'Dataset', 'metric_definitions.json').metric_definitions as Json[]).map((d) => d.id),
      [1],
    );
    assert.ok(
      (readJson(dir, 'Dataset', 'metrics_000.json').metrics as Json[]).every(
        (m) => m.metric_definition === 1,
      ),
    );
    // The export holds the 3 captures in one file (up to 150 a file); the last two are captures_001's.
    const captures = (readJson(dir, 'Dataset', 'captures_000.json').captures as Json[]).slice(1);
    assert.deepEqual(
      captures.map((c) => [c.sensor.sensor_id, c.sensor.ego_id, c.ego.ego_id]),
      [
        [1, 1, 1],
        [2, 1, 1],
      ],
    );
    assert.ok(captures[0]!.annotations.every((a: Json) => typeof a.annotation_definition === 'number'));
    // The UUID sensor of captures_000 stays a string beside the integer ego it names.
    const first = (readJson(dir, 'Dataset', 'captures_000.json').captures as Json[])[0]!;
    assert.deepEqual([first.sensor.sensor_id, first.ego.ego_id], ['b4f6a75e-12de-4b4c-9574-5b135cecac6f', 1]);

    const copy = await importPerception(store, DI_COPY);
    const copied = await exported(exportPerception, copy.run.id, 'di-copy');
    assert.deepEqual(
      (readJson(copied.dir, 'Dataset', 'annotation_definitions.json').annotation_definitions as Json[]).map(
        (d) => d.id,
      ),
      ['1', '2', '3', '4'],
    );
  });

  it('declares only the 1 ego and 2 sensors the mock declares; the dangling ones are warnings', async () => {
    const mock = await importPerception(store, MOCK);
    assert.equal(mock.sensors, 2);
    assert.ok(mock.warnings.some((w) => /ego 1 is not in egos\.json/.test(w)));
    assert.ok(mock.warnings.some((w) => /sensor 2 is not in sensors\.json/.test(w)));
    const { dir } = await exported(exportPerception, mock.run.id, 'mock-refs');
    assert.deepEqual(readJson(dir, 'Dataset', 'egos.json'), readJson(MOCK, 'egos.json'));
    assert.deepEqual(readJson(dir, 'Dataset', 'sensors.json'), readJson(MOCK, 'sensors.json'));
  });

  it('adds no "spec" to a definition that had none, and keeps null filename and values as written', async () => {
    const sample = await importPerception(store, KEYPOINT_SAMPLE);
    const { dir } = await exported(exportPerception, sample.run.id, 'kp');
    assert.deepEqual(
      readJson(dir, 'Dataset', 'metric_definitions.json'),
      readJson(KEYPOINT_SAMPLE, 'metric_definitions.json'),
    );
    const mock = await importPerception(store, MOCK);
    const m = await exported(exportPerception, mock.run.id, 'mock-nulls');
    const annotations = (readJson(m.dir, 'Dataset', 'captures_000.json').captures as Json[])[1]!
      .annotations as Json[];
    const source = (readJson(MOCK, 'captures_001.json').captures as Json[])[0]!.annotations as Json[];
    assert.deepEqual(
      annotations.map((a) => [a.filename, a.values === null]),
      source.map((a) => [a.filename, a.values === null]),
    );
  });
});

describe('COCO (pycocotools: loads both files, its own boxes evaluate to AP 1.0)', () => {
  it('every capture dropped for want of its image is a warning naming it', async () => {
    const mock = await importPerception(store, MOCK);
    const { warnings } = await exported(exportCoco, mock.run.id, 'coco-mock');
    assert.ok(
      warnings.some((w) =>
        /capture 4521949a-2a71-4c03-beb0-4f6362676639: image captures\/camera_001\.png was not imported .* its 3 labels/.test(
          w,
        ),
      ),
      warnings.join('\n'),
    );
    assert.ok(
      warnings.some((w) =>
        /capture e8b44709-dddf-439d-94d2-975460924903: image captures\/camera_000\.png/.test(w),
      ),
    );
    // The lidar capture is no image and carries no image labels: not COCO material, no warning.
    assert.ok(!warnings.some((w) => /4b35a47a/.test(w)));
  });

  it("SOLO keypoints keep their location, the template's names and skeleton, and their instance's box", async () => {
    const solo = await importSolo(store, SOLO_SAMPLE);
    const { dir, warnings } = await exported(exportCoco, solo.run.id, 'coco-solo');
    // COCO has no place for the sample's metrics, and says so; nothing else is lost.
    assert.deepEqual(warnings, [
      `run ${solo.run.id}: stream perception.metrics of the run left out: a COCO export holds the captures' images and labels only`,
    ]);
    const keypoints = readJson(dir, 'annotations', 'keypoints.json');
    const [category] = keypoints.categories as Json[];
    assert.equal(category!.name, 'Coco');
    assert.equal(category!.keypoints.length, 18);
    assert.deepEqual(category!.keypoints.slice(0, 2), ['nose', 'neck']);
    assert.equal(category!.skeleton.length, 17);
    assert.deepEqual(category!.skeleton[0], [1, 2]);
    const [annotation] = keypoints.annotations as Json[];
    // Point 1 (neck) at SOLO's location [483.8889, 313.687439], visible; point 0 absent.
    assert.deepEqual(annotation!.keypoints.slice(0, 6), [0, 0, 0, 483.8889, 313.687439, 2]);
    assert.deepEqual(annotation!.bbox, [418, 243, 128, 336]);
    assert.ok(existsSync(join(dir, 'images', 'sequence.0', 'step0.camera.png')));
  });

  it("keypoints pair with the box of the same instance id, not the same position (datasetinsights' converter zips by position)", async () => {
    const sample = await importPerception(store, KEYPOINT_SAMPLE);
    const { dir } = await exported(exportCoco, sample.run.id, 'coco-kp');
    const instances = readJson(dir, 'annotations', 'instances.json');
    const keypoints = readJson(dir, 'annotations', 'keypoints.json');
    assert.equal(keypoints.annotations.length, 15);
    for (const k of keypoints.annotations as Json[]) {
      const box = (instances.annotations as Json[]).find(
        (b) => b.image_id === k.image_id && b.instance_id === k.instance_id,
      );
      assert.deepEqual(k.bbox, box!.bbox, `instance ${k.instance_id}`);
    }
    // In the sample the orders differ: the first box is instance 14, the first keypoints instance 2.
    assert.deepEqual([instances.annotations[0].instance_id, keypoints.annotations[0].instance_id], [14, 2]);
  });
});

describe('SOLO to legacy (datasetinsights: RenderedObjectInfo, filter_metrics, COCO converters on the export)', () => {
  it('writes the legacy shapes: definition names, keypoint spec, snake_case values, colour objects, record metrics', async () => {
    const solo = await importSolo(store, SOLO_SAMPLE);
    const { dir } = await exported(exportPerception, solo.run.id, 'solo-legacy');
    const defs = readJson(dir, 'Dataset', 'annotation_definitions.json').annotation_definitions as Json[];
    const byId = new Map<string, Json>(defs.map((d) => [d.id, d] as const));
    assert.equal(byId.get('bounding box')!.name, 'bounding box');
    const keypointDef = byId.get('8b3ef246-daa7-4dd5-a0e8-a943f6e7f8c2')!;
    assert.equal(keypointDef.name, 'keypoints');
    assert.equal(keypointDef.spec[0].template_name, 'Coco');
    assert.equal(keypointDef.spec[0].key_points.length, 18);
    assert.deepEqual(keypointDef.spec[0].key_points[0].color, { r: 1, g: 0, b: 0, a: 1 });
    assert.deepEqual(keypointDef.spec[0].skeleton[0].joint2, 1);
    assert.ok(!('@type' in keypointDef) && !('template' in keypointDef));

    const captures = readJson(dir, 'Dataset', 'captures_000.json').captures as Json[];
    const first = captures.find((c) => c.id === 'sequence.0/step0/camera')!;
    const value = (definition: string): Json =>
      (first.annotations as Json[]).find((a) => a.annotation_definition === definition)!.values[0];
    assert.deepEqual(value('8b3ef246-daa7-4dd5-a0e8-a943f6e7f8c2').keypoints[1], {
      index: 1,
      x: 483.8889,
      y: 313.687439,
      state: 2,
    });
    assert.equal(
      value('8b3ef246-daa7-4dd5-a0e8-a943f6e7f8c2').template_guid,
      '4a7b253a-334e-460c-bc81-3f4e2c4871c0',
    );
    assert.deepEqual(value('instance segmentation').color, { r: 149, g: 255, b: 0, a: 255 });
    assert.equal(value('instance segmentation').label_id, 1);
    assert.deepEqual(Object.keys(value('bounding box 3D').translation), ['x', 'y', 'z']);
    assert.equal(captures.find((c) => c.id === 'sequence.1/step0/camera')!.sequence_id, '1');

    const metricDefs = readJson(dir, 'Dataset', 'metric_definitions.json').metric_definitions as Json[];
    const rendered = metricDefs.find((d) => d.id === 'RenderedObjectInfo')!;
    assert.equal(rendered.name, 'rendered object info');
    assert.equal(rendered.spec.length, 5);
    assert.equal(metricDefs.find((d) => d.id === 'ObjectCount')!.name, 'object count');
    assert.ok(!('spec' in metricDefs.find((d) => d.id === 'random-seed')!));
    const metrics = readJson(dir, 'Dataset', 'metrics_000.json').metrics as Json[];
    const of = (id: string): Json => metrics.find((m) => m.metric_definition === id)!;
    assert.deepEqual(Object.keys(of('RenderedObjectInfo').values[0]).sort(), [
      'instance_color',
      'instance_id',
      'label_id',
      'visible_pixels',
    ]);
    assert.deepEqual(of('random-seed').values, [{ value: 539662031 }]);
    assert.deepEqual(of('scenario_iteration').values, [{ iteration: 0 }]);
    assert.ok(of('ObjectCount').values.every((v: Json) => 'label_id' in v && 'count' in v));
  });
});

describe('SOLO export (pysolotools: Solo(...).frames(), categories(), StatsHandler)', () => {
  it("pysolotools' sample comes back frame for frame, and reads back as the same run", async () => {
    const solo = await importSolo(store, SOLO_SAMPLE);
    const { dir, warnings } = await exported(exportSolo, solo.run.id, 'solo-solo');
    assert.deepEqual(warnings, []);
    const metadata = readJson(dir, 'metadata.json');
    assert.deepEqual([metadata.totalFrames, metadata.totalSequences], [2, 2]);
    assert.equal(metadata.perceptionVersion, '0.10.0-preview.1');
    for (const sequence of ['sequence.0', 'sequence.1']) {
      const original = readJson(SOLO_SAMPLE, sequence, 'step0.frame_data.json');
      const written = readJson(dir, sequence, 'step0.frame_data.json');
      assert.deepEqual(
        [written.frame, written.sequence, written.step],
        [original.frame, original.sequence, original.step],
      );
      const [a, b] = [original.captures[0], written.captures[0]];
      assert.equal(b.filename, a.filename);
      assert.ok(existsSync(join(dir, sequence, b.filename)));
      assert.deepEqual(b.dimension, a.dimension);
      assert.deepEqual(
        b.annotations.map((x: Json) => [x['@type'], x.id, (x.values ?? x.instances ?? []).length]),
        a.annotations.map((x: Json) => [x['@type'], x.id, (x.values ?? x.instances ?? []).length]),
      );
      const boxes = (c: Json): Json => c.annotations.find((x: Json) => x.id === 'bounding box').values;
      assert.deepEqual(boxes(b), boxes(a));
      assert.equal(written.metrics.length, original.metrics.length);
    }
    const again = await importSolo(store, dir);
    assert.deepEqual(
      comparable(await loadDataset(store, again.run.id)),
      comparable(await loadDataset(store, solo.run.id)),
    );
  });

  it('a legacy dataset as SOLO: boxes at origin/dimension, keypoints at location, the template, the same statistics', async () => {
    const sample = await importPerception(store, KEYPOINT_SAMPLE);
    const { dir } = await exported(exportSolo, sample.run.id, 'kp-solo');
    const definitions = readJson(dir, 'annotation_definitions.json').annotationDefinitions as Json[];
    const keypointDef = definitions.find(
      (d) => d['@type'] === 'type.unity.com/unity.solo.KeypointAnnotation',
    )!;
    assert.equal(keypointDef.template.keypoints.length, 17);
    assert.deepEqual(keypointDef.template.keypoints[0].color, [255, 0, 0, 255]);
    const frame = readJson(dir, 'sequence.0', 'step0.frame_data.json');
    const capture = frame.captures[0];
    assert.equal(capture['@type'], 'type.unity.com/unity.solo.RGBCamera');
    assert.deepEqual(capture.dimension, [640, 640]);
    assert.equal(capture.matrix.length, 9);
    const box = capture.annotations.find((a: Json) => a['@type'].endsWith('BoundingBox2DAnnotation'))
      .values[0];
    assert.deepEqual(box, {
      labelId: 1,
      labelName: 'person',
      instanceId: 14,
      origin: [72, 0],
      dimension: [45, 23],
    });
    const keypoint = capture.annotations.find((a: Json) => a['@type'].endsWith('KeypointAnnotation'));
    assert.equal(keypoint.templateId, '0bc62974-239f-4c87-995b-dc4d1c55a9a0');
    assert.deepEqual(Object.keys(keypoint.values[0].keypoints[0]).sort(), ['index', 'location', 'state']);
    // pysolotools' statistics on this export equal simrec's on the legacy run; simrec's own on the
    // SOLO export read back equal both.
    const again = await importSolo(store, dir);
    const [a, b] = [await perceptionStats(store, sample.run.id), await perceptionStats(store, again.run.id)];
    assert.deepEqual(
      [b.boxes, b.perLabel, b.perFrame.map((f) => f.count), b.relativeSize],
      [a.boxes, a.perLabel, a.perFrame.map((f) => f.count), a.relativeSize],
    );
    assert.equal(a.boxes, 15);
  });
});
