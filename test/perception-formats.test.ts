import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportCoco } from './helpers/formats.js';
import { encodePng, readImageSize } from '../src/formats/common/labelled-images/image-files.js';
import {
  exportPerception,
  importPerception,
  loadDataset,
  RECORDS_PER_FILE,
  type LoadedDataset,
} from './helpers/formats.js';
import { exportSolo, importSolo } from './helpers/formats.js';
import { exportYolo } from './helpers/formats.js';
import { recordDemoRun } from '../src/demo/demo-run.js';
import {
  readAll,
  recordCameraRun,
  startIngestFixture,
  type IngestFixture,
} from './helpers/ingest-helpers.js';
import { exportMcap } from '../src/formats/mcap/write-mcap.js';
import { storeRunSource } from '../src/replay/run-source.js';
import { perceptionStats } from '../src/formats/common/labelled-images/perception-stats.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const tmp = tempDir('simrec-perception-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(tmp.path, 'store.db'));
});
after(async () => {
  await store.close();
  tmp.cleanup();
});

const ignore = (): void => {};
const BBOX2D = 'f9f22e05-443f-4602-a422-ebe4ea9b55cb';
const BBOX3D = '0bfbe00d-00fa-4555-88d1-471b58449f5c';
const WIDTH = 64;
const HEIGHT = 48;

/** A Unity perspective projection's 3x3 (columns), for a 60 degree vertical field of view at 4:3. */
const P11 = 1 / Math.tan(Math.PI / 6);
const PROJECTION = [
  [P11 * (HEIGHT / WIDTH), 0, 0],
  [0, P11, 0],
  [0, 0, -1.0006],
];

/**
 * A dataset shaped as Unity's writer (0.9) emits it: GUID definition ids, float seconds, 3D boxes as
 * objects, two cameras, two sequences, real PNGs, one box over the image edge.
 */
function writeLegacyDataset(root: string, captures: number): void {
  const dataset = join(root, 'Dataset');
  mkdirSync(dataset, { recursive: true });
  mkdirSync(join(root, 'RGB'), { recursive: true });
  const write = (name: string, body: object): void =>
    writeFileSync(join(dataset, name), JSON.stringify({ version: '0.0.1', ...body }, null, 2));
  write('egos.json', { egos: [{ id: 'ego', description: 'the car' }] });
  write('sensors.json', {
    sensors: [
      { id: 'cam-front', ego_id: 'ego', modality: 'camera', description: 'front' },
      { id: 'cam-rear', ego_id: 'ego', modality: 'camera', description: 'rear' },
    ],
  });
  const spec = [
    { label_id: 1, label_name: 'car' },
    { label_id: 5, label_name: 'person' },
  ];
  write('annotation_definitions.json', {
    annotation_definitions: [
      { id: BBOX2D, name: 'bounding box', description: '2d', format: 'JSON', spec },
      { id: BBOX3D, name: 'bounding box 3D', description: '3d', format: 'JSON', spec },
    ],
  });
  write('metric_definitions.json', {
    metric_definitions: [{ id: 'count', name: 'object count', description: 'objects', spec }],
  });
  const pixels = new Uint8Array(WIDTH * HEIGHT * 3).fill(90);
  const png = encodePng(WIDTH, HEIGHT, 3, pixels);
  const records = [];
  const metrics = [];
  for (let i = 0; i < captures; i++) {
    const sensor = i % 2 === 0 ? 'cam-front' : 'cam-rear';
    const frame = Math.floor(i / 2);
    const sequence = frame < captures / 4 ? 'seq-a' : 'seq-b';
    const step = sequence === 'seq-a' ? frame : frame - Math.ceil(captures / 4);
    const file = `RGB/rgb_${i}.png`;
    writeFileSync(join(root, file), png);
    records.push({
      id: `cap-${i}`,
      sequence_id: sequence,
      step,
      timestamp: step * 0.0166,
      sensor: {
        sensor_id: sensor,
        ego_id: 'ego',
        modality: 'camera',
        translation: [0, 1.5, 0.5],
        rotation: [0, 0, 0, 1],
        camera_intrinsic: PROJECTION,
        projection: 'perspective',
      },
      ego: {
        ego_id: 'ego',
        translation: [-2, 3, 1 + i],
        rotation: [0, 0.3826834, 0, 0.9238795],
        velocity: [0, 0, 10],
        acceleration: null,
      },
      filename: file,
      format: 'PNG',
      annotations: [
        {
          id: `bb-${i}`,
          annotation_definition: BBOX2D,
          values: [
            { label_id: 1, label_name: 'car', instance_id: 1, x: 4, y: 6, width: 20, height: 10 },
            { label_id: 5, label_name: 'person', instance_id: 2, x: 50, y: 40, width: 30, height: 20 },
          ],
        },
        {
          id: `b3-${i}`,
          annotation_definition: BBOX3D,
          values: [
            {
              label_id: 1,
              label_name: 'car',
              instance_id: 1,
              translation: { x: 1, y: 0, z: 12 },
              size: { x: 1.9, y: 1.5, z: 4.6 },
              rotation: { x: 0, y: 0, z: 0, w: 1 },
              velocity: { x: 0, y: 0, z: 0 },
              acceleration: { x: 0, y: 0, z: 0 },
            },
          ],
        },
      ],
    });
    metrics.push({
      capture_id: `cap-${i}`,
      annotation_id: null,
      sequence_id: sequence,
      step,
      metric_definition: 'count',
      values: [{ label_id: 1, label_name: 'car', count: 1 }],
    });
  }
  for (let f = 0; f * 150 < captures; f++)
    write(`captures_${String(f).padStart(3, '0')}.json`, { captures: records.slice(f * 150, f * 150 + 150) });
  write('metrics_000.json', { metrics });
}

/** The model, without what belongs to the run rather than to the dataset. */
function comparable(d: LoadedDataset): object {
  const { run: _run, ...rest } = d;
  return rest;
}

async function roundTrip(
  dir: string,
  name: string,
): Promise<{ first: LoadedDataset; second: LoadedDataset }> {
  const a = await importPerception(store, dir);
  const first = await loadDataset(store, a.run.id);
  const out = join(tmp.path, `${name}-export`);
  await exportPerception(store, a.run.id, out, { warn: ignore });
  const b = await importPerception(store, out);
  return { first, second: await loadDataset(store, b.run.id) };
}

describe('Perception legacy import', () => {
  it("imports Unity's mock and reports its known inconsistencies with their location", async () => {
    const result = await importPerception(store, fixture('perception-simrun', 'Dataset'));
    assert.equal(result.captures, 3);
    assert.equal(result.metrics, 3);
    const has = (pattern: RegExp): void =>
      assert.ok(
        result.warnings.some((w) => pattern.test(w)),
        `no warning matches ${pattern}:\n${result.warnings.join('\n')}`,
      );
    // Mixed id types: sensors 1 and 2 and ego 1 are not the UUIDs of sensors.json and egos.json.
    has(/captures_001\.json: captures\[0\]\.sensor\.sensor_id: sensor 1 is not in sensors\.json/);
    has(/captures_000\.json: captures\[0\]\.ego\.ego_id: ego 1 is not in egos\.json; .*no ego is made/);
    // Annotation files that do not exist (the real ones are spelt "sementic_segmantation").
    has(/annotations\/semantic_segmentation_000\.png does not exist/);
    // 3D and 2D box annotations sharing one id.
    has(/captures\[0\]\.annotations\[2\]\.id: annotation id 36db01f8-.* is used twice/);
    // Metric 2 says step 1 for a step-2 capture and names another capture's annotation; metric 3's capture does not exist.
    has(/metrics_000\.json: metrics\[1\]\.step: says step 1 but capture 4b35a47a/);
    has(/metrics\[1\]\.annotation_id: annotation 35cbdf6e-.* belongs to capture e8b44709/);
    has(/metrics\[2\]\.capture_id: capture 3d09bbce-.* does not exist/);
    // Placeholder geometry.
    has(/captures\[1\]\.sensor\.rotation: quaternion \[0,0,0,0\] has length 0\.000/);
    has(/camera_intrinsic: not the top-left 3x3 of a perspective projection/);
    const d = await loadDataset(store, result.run.id);
    // What the files declare: 2 sensors, 1 ego. Sensors 1 and 2, which only captures name, keep their
    // captures but are not declared; ego 1 stays a reference in the captures that name it.
    assert.equal(result.sensors, 2);
    assert.deepEqual(d.sensors.map((s) => [s.id, s.declared !== false]).sort(), [
      ['1', false],
      ['2', false],
      ['6fb1a823-5b83-4a79-b566-fe4435ec1942', true],
      ['b4f6a75e-12de-4b4c-9574-5b135cecac6f', true],
    ]);
    assert.deepEqual(
      d.egos.map((e) => e.id),
      ['4f80234d-4342-420f-9187-07004613cd1f'],
    );
    assert.equal(d.captures.find((c) => c.ego?.id === '1')?.sensor, 'b4f6a75e-12de-4b4c-9574-5b135cecac6f');
    // The lidar annotation has no values key; the others carry values: null.
    const lidar = d.captures.find((c) => c.id === '4b35a47a-3f63-4af3-b0e8-e68cb384ad75')!;
    assert.equal(lidar.annotations[0]!.kind, 'semantic_segmentation');
    assert.equal(lidar.annotations[0]!.values, undefined);
    const actors = await store.listActors(result.run.id);
    assert.ok(actors.some((a) => a.id === '1' && a.kind === 'sensor'));
    assert.deepEqual(
      actors.filter((a) => a.kind === 'ego').map((a) => a.id),
      ['4f80234d-4342-420f-9187-07004613cd1f'],
    );
    assert.equal(
      d.metrics.map((m) => (m.annotation ? 'annotation' : m.capture ? 'capture' : 'run')).join(),
      'capture,capture,annotation',
    );
  });

  it("imports datasetinsights' corrected copy: string definition ids, float boxes, two metric definitions", async () => {
    const result = await importPerception(store, fixture('perception-simrun', 'datasetinsights'));
    assert.equal(result.captures, 3);
    assert.equal(result.metrics, 4);
    const d = await loadDataset(store, result.run.id);
    assert.deepEqual(
      d.annotationDefinitions.map((x) => [x.id, x.kind]),
      [
        ['1', 'semantic_segmentation'],
        ['2', 'bbox3d'],
        ['3', 'semantic_segmentation'],
        ['4', 'bbox2d'],
      ],
    );
    assert.equal(d.metricDefinitions.length, 2);
    const camera = d.captures.find((c) => c.id === '4521949a-2a71-4c03-beb0-4f6362676639')!;
    const box = camera.annotations.find((a) => a.kind === 'bbox2d')!.values![2] as Record<string, number>;
    assert.deepEqual([box.x, box.y, box.width, box.height], [132, 83, 10, 20]);
    // Sequences laid on the run's clock: steps 1 and 2 at their time stamps (1 s, 2 s).
    assert.deepEqual(
      d.captures.map((c) => c.t),
      [1_000_000, 2_000_000, 2_000_000],
    );
  });

  it('merges the Dataset folders of several instances, file names kept per instance', async () => {
    const dir = join(tmp.path, 'instances');
    writeLegacyDataset(join(dir, 'instance-1'), 2);
    writeLegacyDataset(join(dir, 'instance-2'), 2);
    const path = join(dir, 'instance-2', 'Dataset', 'captures_000.json');
    writeFileSync(path, readFileSync(path, 'utf8').replaceAll('"cap-', '"cap2-'));
    const result = await importPerception(store, dir);
    assert.equal(result.captures, 4);
    const d = await loadDataset(store, result.run.id);
    assert.deepEqual(d.captures.map((c) => c.file).sort(), [
      'instance-1/RGB/rgb_0.png',
      'instance-1/RGB/rgb_1.png',
      'instance-2/RGB/rgb_0.png',
      'instance-2/RGB/rgb_1.png',
    ]);
    assert.equal((await store.listAttachments(result.run.id)).filter((a) => a.t !== undefined).length, 4);
  });

  it('converts Unity poses to the canonical frame (a car heading north-east, climbing)', async () => {
    const dir = join(tmp.path, 'poses');
    writeLegacyDataset(dir, 2);
    const { run } = await importPerception(store, dir);
    const c = (await loadDataset(store, run.id)).captures[0]!;
    // Unity (x right, y up, z forward) [-2, 3, 1] is canonical [1, 2, 3].
    assert.deepEqual(c.ego!.pose.position, [1, 2, 3]);
    // Unity's 45 degrees about y (left-handed, turning right) is canonical yaw -45 degrees about z.
    const [x, y, z, w] = c.ego!.pose.rotation;
    assert.ok(Math.abs(x) < 1e-9 && Math.abs(y) < 1e-9);
    assert.ok(Math.abs(2 * Math.atan2(z, w) + Math.PI / 4) < 1e-6);
    assert.deepEqual(c.ego!.velocity, [10, -0, 0]);
    // The 3D box (4.6 m long along Unity z) is 4.6 m along canonical x.
    const box = c.annotations.find((a) => a.kind === 'bbox3d')!.values![0] as Record<string, unknown>;
    assert.deepEqual(box.size, [4.6, 1.9, 1.5]);
    assert.deepEqual(box.translation, [12, -1, 0]);
    // K from Unity's projection and the image's size: fy = P11 * H / 2, principal point at the centre.
    assert.deepEqual(c.imageSize, { width: WIDTH, height: HEIGHT });
    const K = c.intrinsics!.K!;
    assert.ok(Math.abs(K[1]![1]! - (P11 * HEIGHT) / 2) < 1e-9);
    assert.ok(Math.abs(K[0]![0]! - K[1]![1]!) < 1e-9, 'square pixels');
    assert.deepEqual([K[0]![2], K[1]![2]], [WIDTH / 2, HEIGHT / 2]);
    // The image is an attachment at the capture's time with the boxes the viewer draws.
    const info = (await store.listAttachments(run.id)).find((a) => a.name === c.file)!;
    assert.equal(info.mediaType, 'image/png');
    assert.equal(info.t, run.begin + c.t);
    assert.deepEqual((info.metadata as { boxes: unknown[] }).boxes[0], {
      x: 4,
      y: 6,
      width: 20,
      height: 10,
      label: 'car',
    });
  });
});

describe('Perception export and round trip', () => {
  it('mock: import -> export -> import gives the same model', async () => {
    const { first, second } = await roundTrip(fixture('perception-simrun', 'Dataset'), 'mock');
    assert.deepEqual(comparable(second), comparable(first));
  });

  it('datasetinsights copy: import -> export -> import gives the same model', async () => {
    const { first, second } = await roundTrip(fixture('perception-simrun', 'datasetinsights'), 'di');
    assert.deepEqual(comparable(second), comparable(first));
  });

  it('writes captures in files of at most 150, with a root version, definitions and images', async () => {
    const dir = join(tmp.path, 'big');
    writeLegacyDataset(dir, 320);
    const { first, second } = await roundTrip(dir, 'big');
    assert.deepEqual(comparable(second), comparable(first));
    const out = join(tmp.path, 'big-export');
    const files = readdirSync(join(out, 'Dataset')).sort();
    assert.deepEqual(files, [
      'annotation_definitions.json',
      'captures_000.json',
      'captures_001.json',
      'captures_002.json',
      'egos.json',
      'metric_definitions.json',
      'metrics_000.json',
      'metrics_001.json',
      'metrics_002.json',
      'sensors.json',
    ]);
    const chunk = JSON.parse(readFileSync(join(out, 'Dataset', 'captures_002.json'), 'utf8'));
    assert.equal(chunk.version, '0.0.1');
    assert.equal(chunk.captures.length, 20);
    // 3D boxes go back as the writer's objects, in Unity's frame.
    assert.deepEqual(chunk.captures[0].annotations[1].values[0].size, { x: 1.9, y: 1.5, z: 4.6 });
    assert.deepEqual(
      readFileSync(join(out, 'RGB', 'rgb_7.png')),
      readFileSync(join(dir, 'RGB', 'rgb_7.png')),
    );
    assert.equal(second.captures.length, 320);
    assert.deepEqual(second.info.sequences, ['seq-a', 'seq-b']);
  });
});

describe('Perception: streamed import and interrupted export', () => {
  it('reads captures files out of time order, each capture once and in time order per sensor', async () => {
    const dir = join(tmp.path, 'shuffled');
    writeLegacyDataset(dir, 320);
    // The last file's captures come first in the folder's order: the second pass must hold two files.
    const data = join(dir, 'Dataset');
    const first = readFileSync(join(data, 'captures_000.json'));
    writeFileSync(join(data, 'captures_000.json'), readFileSync(join(data, 'captures_002.json')));
    writeFileSync(join(data, 'captures_002.json'), first);
    const result = await importPerception(store, dir);
    assert.equal(result.captures, 320);
    const loaded = await loadDataset(store, result.run.id);
    const ids = loaded.captures.map((c) => c.id);
    assert.equal(new Set(ids).size, 320);
    const bySensor = new Map<string, number[]>();
    for (const c of loaded.captures) bySensor.set(c.sensor, [...(bySensor.get(c.sensor) ?? []), c.t]);
    for (const [sensor, times] of bySensor)
      assert.ok(
        times.every((t, i) => i === 0 || t >= times[i - 1]!),
        `captures of sensor ${sensor} in time order`,
      );
  });

  it('an export stopped after its first captures file is a dataset that imports, definitions and all', async () => {
    const dir = join(tmp.path, 'to-interrupt');
    writeLegacyDataset(dir, 320);
    const source = await importPerception(store, dir);
    const out = join(tmp.path, 'interrupted-export');
    const abort = new AbortController();
    await assert.rejects(
      exportPerception(store, source.run.id, out, {
        warn: ignore,
        signal: abort.signal,
        onProgress: (done) => done >= RECORDS_PER_FILE && abort.abort(),
      }),
      { name: 'AbortError' },
    );
    const files = readdirSync(join(out, 'Dataset'));
    assert.ok(files.includes('captures_000.json') && !files.includes('captures_001.json'), files.join(' '));
    const partial = await importPerception(store, out);
    assert.equal(partial.captures, RECORDS_PER_FILE);
    const whole = await loadDataset(store, source.run.id);
    const got = await loadDataset(store, partial.run.id);
    assert.deepEqual(
      got.annotationDefinitions.map((d) => d.id),
      whole.annotationDefinitions.map((d) => d.id),
    );
    assert.deepEqual(
      got.sensors.map((x) => x.id),
      whole.sensors.map((x) => x.id),
    );
    assert.ok(
      !partial.warnings.some((w) => /has no (sensors|annotation_definitions)\.json/.test(w)),
      partial.warnings.join('\n'),
    );
  });
});

interface Coco {
  images: { id: number; width: number; height: number; file_name: string }[];
  annotations: { id: number; image_id: number; category_id: number; bbox: number[]; area: number }[];
  categories: { id: number; name: string }[];
}

describe('COCO and YOLO export', () => {
  let runId: number;
  before(async () => {
    const dir = join(tmp.path, 'labelled');
    writeLegacyDataset(dir, 6);
    runId = (await importPerception(store, dir)).run.id;
  });

  it('COCO: every annotation points to an image and a category, and lies inside its image', async () => {
    const out = join(tmp.path, 'coco');
    const warnings: string[] = [];
    const result = await exportCoco(store, runId, out, { warn: (w, m) => warnings.push(`${w}: ${m}`) });
    const coco = JSON.parse(readFileSync(join(out, 'annotations', 'instances.json'), 'utf8')) as Coco;
    assert.equal(coco.images.length, 6, 'every camera');
    assert.equal(coco.annotations.length, 12);
    assert.equal(result.annotations, 12);
    const images = new Map(coco.images.map((i) => [i.id, i]));
    const categories = new Set(coco.categories.map((c) => c.id));
    assert.deepEqual([...categories], [1, 5]);
    assert.equal(new Set(coco.annotations.map((a) => a.id)).size, coco.annotations.length, 'unique ids');
    for (const a of coco.annotations) {
      const image = images.get(a.image_id);
      assert.ok(image, `annotation ${a.id}: image ${a.image_id}`);
      assert.ok(categories.has(a.category_id), `annotation ${a.id}: category ${a.category_id}`);
      const [x, y, w, h] = a.bbox as [number, number, number, number];
      assert.ok(x >= 0 && y >= 0 && w > 0 && h > 0, `annotation ${a.id}: ${a.bbox}`);
      assert.ok(x + w <= image.width && y + h <= image.height, `annotation ${a.id} leaves its image`);
      assert.equal(a.area, w * h);
      assert.deepEqual(readImageSize(readFileSync(join(out, 'images', image.file_name))), {
        width: image.width,
        height: image.height,
      });
    }
    assert.ok(warnings.some((w) => /6 boxes reached over the image edge/.test(w)));
  });

  it('YOLO: labels normalised to [0,1], a contiguous class map beside them', async () => {
    const out = join(tmp.path, 'yolo');
    await exportYolo(store, runId, out, { warn: ignore });
    assert.equal(readFileSync(join(out, 'classes.txt'), 'utf8'), 'car\nperson\n');
    assert.match(
      readFileSync(join(out, 'data.yaml'), 'utf8'),
      /nc: 2\nnames:\n {2}0: "car"\n {2}1: "person"/,
    );
    const labels = readdirSync(join(out, 'labels', 'RGB'));
    assert.equal(labels.length, 6);
    for (const file of labels) {
      const lines = readFileSync(join(out, 'labels', 'RGB', file), 'utf8')
        .trim()
        .split('\n');
      assert.equal(lines.length, 2);
      for (const line of lines) {
        const [cls, ...rest] = line.split(' ').map(Number);
        assert.ok(cls === 0 || cls === 1);
        for (const v of rest) assert.ok(v >= 0 && v <= 1, `${file}: ${line}`);
      }
      assert.equal(lines[0], '0 0.218750 0.229167 0.312500 0.208333');
    }
  });
});

describe('bad input', () => {
  const count = async (): Promise<number> => (await store.listRuns()).length;

  it('invalid JSON: says which file, line and column, and stores nothing', async () => {
    const dir = join(tmp.path, 'broken');
    writeLegacyDataset(dir, 2);
    writeFileSync(
      join(dir, 'Dataset', 'captures_000.json'),
      '{\n  "version": "0.0.1",\n  "captures": [,]\n}',
    );
    const runs = await count();
    await assert.rejects(
      importPerception(store, dir),
      /Dataset\/captures_000\.json: invalid JSON at line 3, column 16/,
    );
    assert.equal(await count(), runs);
  });

  it('a file name outside the dataset is refused', async () => {
    for (const name of ['../../etc/passwd', '/etc/passwd']) {
      const dir = join(tmp.path, `escape-${name.length}`);
      writeLegacyDataset(dir, 2);
      const path = join(dir, 'Dataset', 'captures_000.json');
      writeFileSync(path, readFileSync(path, 'utf8').replace('RGB/rgb_1.png', name));
      const runs = await count();
      await assert.rejects(importPerception(store, dir), /captures\[1\]\.filename: file name .* refused/);
      assert.equal(await count(), runs);
    }
  });

  it('an image that is not an image: a clear error, and the run begun is deleted', async () => {
    const dir = join(tmp.path, 'not-image');
    writeLegacyDataset(dir, 4);
    writeFileSync(join(dir, 'RGB', 'rgb_3.png'), 'hello, I am text');
    const runs = await count();
    await assert.rejects(
      importPerception(store, dir),
      /capture cap-3: RGB\/rgb_3\.png is not an image \(16 bytes/,
    );
    assert.equal(await count(), runs);
  });

  it('an unknown annotation type is kept as generic data, with a warning', async () => {
    const dir = join(tmp.path, 'unknown-type');
    writeLegacyDataset(dir, 2);
    for (const name of ['annotation_definitions.json', 'captures_000.json']) {
      const path = join(dir, 'Dataset', name);
      const text = readFileSync(path, 'utf8').replaceAll(BBOX3D, 'grid-1');
      writeFileSync(path, text.replace('"bounding box 3D"', '"occupancy grid"'));
    }
    const result = await importPerception(store, dir);
    assert.ok(result.warnings.some((w) => /"occupancy grid" is not one simrec knows/.test(w)));
    const d = await loadDataset(store, result.run.id);
    const generic = d.captures[0]!.annotations[1]!;
    assert.equal(generic.kind, 'generic');
    assert.deepEqual((generic.values![0] as { size: unknown }).size, { x: 1.9, y: 1.5, z: 4.6 });
  });
});

describe('SOLO import', () => {
  it('reads sequence.N/stepM.frame_data.json with its definitions; boxes become x, y, width, height', async () => {
    const dir = join(tmp.path, 'solo');
    mkdirSync(join(dir, 'sequence.0'), { recursive: true });
    mkdirSync(join(dir, 'sequence.1'), { recursive: true });
    const w = (name: string, body: object): void => writeFileSync(join(dir, name), JSON.stringify(body));
    w('metadata.json', { perceptionVersion: '1.0.0', totalFrames: 3, totalSequences: 2 });
    w('sensor_definitions.json', {
      sensorDefinitions: [
        { '@type': 'type.unity.com/unity.solo.RGBCamera', id: 'camera', modality: 'camera' },
      ],
    });
    w('annotation_definitions.json', {
      annotationDefinitions: [
        {
          '@type': 'type.unity.com/unity.solo.BoundingBox2DAnnotation',
          id: 'bounding box',
          description: 'boxes',
          spec: [{ label_id: 1, label_name: 'car' }],
        },
      ],
    });
    w('metric_definitions.json', { metricDefinitions: [{ id: 'scenario_iteration', description: 'it' }] });
    const png = encodePng(WIDTH, HEIGHT, 1, new Uint8Array(WIDTH * HEIGHT));
    const frames: [number, number][] = [
      [0, 0],
      [0, 1],
      [1, 0],
    ];
    for (const [sequence, step] of frames) {
      writeFileSync(join(dir, `sequence.${sequence}`, `step${step}.camera.png`), png);
      w(`sequence.${sequence}/step${step}.frame_data.json`, {
        frame: sequence * 2 + step,
        sequence,
        step,
        timestamp: step * 0.5,
        captures: [
          {
            '@type': 'type.unity.com/unity.solo.RGBCamera',
            id: 'camera',
            position: [0, 1, 0],
            rotation: [0, 0, 0, 1],
            filename: `step${step}.camera.png`,
            imageFormat: 'Png',
            dimension: [WIDTH, HEIGHT],
            projection: 'Perspective',
            matrix: [PROJECTION[0]![0], 0, 0, 0, P11, 0, 0, 0, -1],
            annotations: [
              {
                '@type': 'type.unity.com/unity.solo.BoundingBox2DAnnotation',
                id: 'bounding box',
                sensorId: 'camera',
                values: [
                  { instanceId: 7, labelId: 1, labelName: 'car', origin: [2, 3], dimension: [10, 12] },
                ],
              },
            ],
          },
        ],
        metrics: [
          { '@type': 'GenericMetric', id: 'scenario_iteration', sensorId: '', annotationId: '', value: 4 },
        ],
      });
    }
    const result = await importSolo(store, dir);
    assert.deepEqual(result.warnings, []);
    assert.equal(result.captures, 3);
    const d = await loadDataset(store, result.run.id);
    assert.deepEqual(
      d.captures.map((c) => [c.sequence, c.step, c.t]),
      [
        ['0', 0, 0],
        ['0', 1, 500_000],
        ['1', 0, 1_000_000],
      ],
    );
    const c = d.captures[0]!;
    assert.equal(c.file, 'sequence.0/step0.camera.png');
    assert.deepEqual(c.annotations[0]!.values![0], {
      instance_id: 7,
      label_id: 1,
      label_name: 'car',
      x: 2,
      y: 3,
      width: 10,
      height: 12,
    });
    assert.ok(Math.abs(c.intrinsics!.K![1]![1]! - (P11 * HEIGHT) / 2) < 1e-9);
    assert.equal(d.metrics[0]!.values, 4);
    assert.equal(d.info.layout, 'solo');
  });
});

describe('simrec import perception, export coco and stats', () => {
  it('imports, exports and prints statistics with a heat map, quietly when piped', () => {
    const db = join(tmp.path, 'cli.db');
    const dir = join(tmp.path, 'cli-data');
    writeLegacyDataset(dir, 4);
    const imported = cliJson<{ run: { id: number }; captures: number; warnings: string[] }>([
      '--store',
      db,
      'import',
      'perception',
      dir,
      '--json',
    ]);
    assert.equal(imported.captures, 4);
    assert.deepEqual(imported.warnings, []);
    const exported = runCli([
      '--store',
      db,
      'export',
      String(imported.run.id),
      'coco',
      join(tmp.path, 'cli-coco'),
    ]);
    assert.equal(exported.status, 0, exported.stderr);
    assert.doesNotMatch(exported.stderr, /\r/);
    const heatmap = join(tmp.path, 'heat.png');
    const stats = cliJson<{
      boxes: number;
      perLabel: { label: string; count: number }[];
      perFrame: { count: number }[];
      relativeSize: { quartiles: number[] };
    }>(['--store', db, 'stats', String(imported.run.id), '--json', '--heatmap', heatmap]);
    assert.equal(stats.boxes, 8);
    assert.deepEqual(stats.perLabel, [
      { label: 'car', count: 4 },
      { label: 'person', count: 4 },
    ]);
    assert.deepEqual(
      stats.perFrame.map((f) => f.count),
      [2, 2, 2, 2],
    );
    assert.ok(stats.relativeSize.quartiles.every((q) => q > 0 && q <= 1));
    assert.ok(readImageSize(readFileSync(heatmap)));
    const again = runCli([
      '--store',
      db,
      'export',
      String(imported.run.id),
      'perception',
      join(tmp.path, 'cli-coco'),
    ]);
    assert.equal(again.status, 2, 'an existing output is bad input (docs/command-line.md: exit codes)');
    assert.match(again.stderr, /cli-coco: already exists; --force replaces it/);
  });
});

describe('a camera recorded live, exported as images without labels (COCO, YOLO, Perception, SOLO)', () => {
  // A simulator's camera sent through the server's ingest (`sensors`, then `capture` every second
  // step), mounted 1.5 m ahead of and 1.6 m above its car, which turns as it drives.
  let fx: IngestFixture;
  let live: number;
  const images = [0, 1, 2].map((k) => encodePng(4, 2, 3, new Uint8Array(4 * 2 * 3).fill(60 * k + 10)));
  const YAW_PER_STEP = 0.1;
  before(async () => {
    fx = await startIngestFixture();
    live = await recordCameraRun(fx, {
      ego: 'hero',
      begin: 1_700_000_000_000_000,
      every: 2,
      images,
      yawPerStep: YAW_PER_STEP,
      sensor: { mount: { position: [1.5, 0, 1.6], rotation: [0, 0, 0, 1] } },
    });
  });
  after(() => fx.close());

  const sameBytes = (file: string, k: number): void =>
    assert.ok(readFileSync(file).equals(Buffer.from(images[k]!)), `${file} is image ${k}`);
  const close = (actual: readonly number[], expected: readonly number[], what: string): void =>
    assert.ok(
      actual.length === expected.length && actual.every((v, i) => Math.abs(v - expected[i]!) < 1e-9),
      `${what}: ${JSON.stringify(actual)} against ${JSON.stringify(expected)}`,
    );

  // Read by Unity's and COCO's own clients on the day (their code cannot be fetched in CI): pycocotools'
  // COCO loads the COCO export (3 images, no annotations or categories, each file present at its size),
  // datasetinsights' loaders read the Perception export's 3 captures with their files.
  it('COCO: every image with its declared size and no labels; YOLO: an empty label file an image', async () => {
    const coco = join(tmp.path, 'live-coco');
    const warnings: string[] = [];
    await exportCoco(fx.store, live, coco, { warn: (w, m) => warnings.push(`${w}: ${m}`) });
    const instances = JSON.parse(readFileSync(join(coco, 'annotations', 'instances.json'), 'utf8')) as Coco;
    assert.deepEqual(
      instances.images.map((i) => [i.file_name, i.width, i.height]),
      ['front/00000000.png', 'front/00000002.png', 'front/00000004.png'].map((f) => [f, 4, 2]),
    );
    assert.deepEqual(instances.annotations, []);
    assert.deepEqual(instances.categories, []);
    for (const [k, image] of instances.images.entries()) sameBytes(join(coco, 'images', image.file_name), k);
    // The car's states have no place in COCO, and the export says so; nothing else is dropped.
    assert.deepEqual(warnings, [
      `run ${live}: stream state of hero left out: a COCO export holds the captures' images and labels only`,
    ]);

    const yolo = join(tmp.path, 'live-yolo');
    await exportYolo(fx.store, live, yolo, { warn: ignore });
    assert.deepEqual(readdirSync(join(yolo, 'labels', 'front')).sort(), [
      '00000000.txt',
      '00000002.txt',
      '00000004.txt',
    ]);
    for (const file of readdirSync(join(yolo, 'labels', 'front')))
      assert.equal(readFileSync(join(yolo, 'labels', 'front', file), 'utf8'), '');
    sameBytes(join(yolo, 'images', 'front', '00000004.png'), 2);
  });

  it("Perception: each capture where its car was at that step, the camera's mount and matrix, seconds from the first capture; it imports back", async () => {
    const out = join(tmp.path, 'live-perception');
    await exportPerception(fx.store, live, out, { warn: ignore });
    const dataset = join(out, 'Dataset');
    const read = (file: string): Record<string, any> =>
      JSON.parse(readFileSync(join(dataset, file), 'utf8')) as Record<string, any>;
    assert.deepEqual(read('egos.json').egos, [{ id: 'hero', description: 'ego' }]);
    assert.deepEqual(read('sensors.json').sensors, [
      { id: 'front', ego_id: 'hero', modality: 'camera', description: 'camera front, recorded live' },
    ]);
    const captures = read('captures_000.json').captures as Record<string, any>[];
    assert.deepEqual(
      captures.map((c) => [c.id, c.sequence_id, c.step, c.timestamp, c.filename, c.format]),
      [0, 2, 4].map((step, k) => [
        `front/0000000${step}.png`,
        '0',
        step,
        [0, 0.2, 0.4][k],
        `front/0000000${step}.png`,
        'PNG',
      ]),
    );
    for (const [k, c] of captures.entries()) {
      const step = c.step as number;
      const yaw = step * YAW_PER_STEP;
      // Unity's frame: x = -canonical y, y = canonical z, z = canonical x; a yaw turns about -y.
      close(c.ego.translation, [-0, 0, step], `capture ${k}: the car's position`);
      close(c.ego.rotation, [0, -Math.sin(yaw / 2), 0, Math.cos(yaw / 2)], `capture ${k}: the car's heading`);
      close(c.ego.velocity, [-10 * Math.sin(yaw), 0, 10 * Math.cos(yaw)], `capture ${k}: its speed along it`);
      close(c.sensor.translation, [-0, 1.6, 1.5], `capture ${k}: the camera's mount`);
      assert.equal(c.sensor.ego_id, 'hero');
      // A pinhole camera 1.2 rad wide over 4 x 2 pixels: f = 2 / tan(0.6); Unity writes 2f/w, 2f/h.
      const f = 2 / Math.tan(0.6);
      assert.deepEqual(c.sensor.camera_intrinsic, [
        [f / 2, 0, 0],
        [0, f, 0],
        [0, 0, -1],
      ]);
      assert.equal(c.annotations, undefined, 'no labels');
      sameBytes(join(out, c.filename as string), k);
    }

    const back = await loadDataset(fx.store, (await importPerception(fx.store, out)).run.id);
    assert.deepEqual(
      back.captures.map((c) => [c.step, c.timestamp, c.imageSize]),
      [0, 2, 4].map((step, k) => [step, [0, 0.2, 0.4][k], { width: 4, height: 2 }]),
    );
  });

  it('SOLO: a frame a captured step, the camera where its car carried it', async () => {
    const out = join(tmp.path, 'live-solo');
    const warnings: string[] = [];
    await exportSolo(fx.store, live, out, { warn: (w, m) => warnings.push(`${w}: ${m}`) });
    // The frames keep the simulator's steps (0, 2, 4). pysolotools' FramesIterator, run on this
    // export, found the first frame only and stopped ("Metadata file not found for sequence 0"); with
    // a capture every step it iterates all. The export says so rather than renumbering the steps.
    assert.ok(
      warnings.some((w) =>
        /pysolotools' FramesIterator, which assumes so, will not find every frame/.test(w),
      ),
      warnings.join('\n'),
    );
    for (const [k, step] of [0, 2, 4].entries()) {
      const frame = JSON.parse(
        readFileSync(join(out, 'sequence.0', `step${step}.frame_data.json`), 'utf8'),
      ) as Record<string, any>;
      const [camera] = frame.captures as Record<string, any>[];
      const yaw = step * YAW_PER_STEP;
      // 1.5 m ahead of the car along its heading, 1.6 m up, in Unity's frame.
      close(
        camera!.position,
        [-1.5 * Math.sin(yaw), 1.6, step + 1.5 * Math.cos(yaw)],
        `step ${step}: the camera in the world`,
      );
      assert.deepEqual(camera!.dimension, [4, 2]);
      assert.equal(camera!.filename, `step${step}.front.png`);
      sameBytes(join(out, 'sequence.0', `step${step}.front.png`), k);
    }
  });

  it('a run without any sensor: the refusal says what a sensor is, for an export and for stats', async () => {
    const demo = await recordDemoRun(fx.store, { duration: 1, vehicles: 1, pedestrians: 0, seed: 1 });
    const refusal = new RegExp(
      `run ${demo.run.id} has no sensors \\(actors of kind sensor declared by a Perception, SOLO or DI-drive import, or by a simulator's \`sensors\` message\\): no labelled images to read$`,
    );
    await assert.rejects(
      exportCoco(fx.store, demo.run.id, join(tmp.path, 'no-sensor'), { warn: ignore }),
      refusal,
    );
    // `simrec stats` reads the same dataset: its refusal must not speak of an export.
    await assert.rejects(perceptionStats(await storeRunSource(fx.store, demo.run.id)), refusal);
  });
});

describe("a camera whose images are not of the size it declared: the images' own size is exported", () => {
  it('COCO, SOLO and the captures stream say 8 x 4 where the camera declared 4 x 2; no camera matrix is claimed', async () => {
    const fx = await startIngestFixture();
    try {
      const images = [0, 1].map((k) => encodePng(8, 4, 3, new Uint8Array(8 * 4 * 3).fill(90 * k)));
      const live = await recordCameraRun(fx, { ego: 'hero', begin: 2_000_000, every: 1, images });
      // Ingest reads the size from each PNG's header as the capture arrives.
      const rows = await readAll(fx.store, live, 'front/captures');
      assert.deepEqual(
        rows.map((r) => [r.width, r.height]),
        [
          [8, 4],
          [8, 4],
        ],
      );

      const coco = join(tmp.path, 'resized-coco');
      await exportCoco(fx.store, live, coco, { warn: ignore });
      const instances = JSON.parse(readFileSync(join(coco, 'annotations', 'instances.json'), 'utf8')) as Coco;
      assert.deepEqual(
        instances.images.map((i) => [i.width, i.height]),
        [
          [8, 4],
          [8, 4],
        ],
      );
      const solo = join(tmp.path, 'resized-solo');
      await exportSolo(fx.store, live, solo, { warn: ignore });
      const frame = JSON.parse(readFileSync(join(solo, 'sequence.0', 'step1.frame_data.json'), 'utf8')) as {
        captures: { dimension: number[]; matrix: number[] }[];
      };
      assert.deepEqual(frame.captures[0]!.dimension, [8, 4]);
      assert.deepEqual(frame.captures[0]!.matrix, [], "the declared camera's matrix is not these images'");

      const warnings: string[] = [];
      await exportMcap(await storeRunSource(fx.store, live), join(tmp.path, 'resized.mcap'), {
        warn: (m) => warnings.push(m),
      });
      assert.ok(
        warnings.includes(
          'camera front: its image of step 0 is 8x4 where the camera declared 4x2; no calibration is written',
        ),
        warnings.join('\n'),
      );
    } finally {
      await fx.close();
    }
  });
});
