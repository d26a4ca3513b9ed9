/**
 * COCO instances and keypoints from a run's Perception captures: `annotations/instances.json`,
 * `annotations/keypoints.json` (when the run has keypoints) and `images/` holding every camera's
 * images. Image sizes come from the images themselves (the legacy captures never recorded them, Unity
 * issue #152). Annotation ids are numbered per box: pysolotools' solo2coco reuses instance ids, which
 * repeat across images, so COCO tools merge unrelated boxes.
 */
import { join } from 'node:path';
import type { JsonObject, JsonValue } from '../../model/json.js';
import type { RunSource } from '../../model/run-ports.js';
import { labelKey, labelledExport, type LabelledImage } from '../common/labelled-images/labelled-images.js';
import type { LoadedDataset } from '../common/labelled-images/perception-run.js';
import { isObject, type Warn } from '../common/labelled-images/source-values.js';
import { keypointTemplates, keypointXY } from '../common/labelled-images/value-shapes.js';
import { copyAttachments, writeFileAtomic } from '../common/labelled-images/dataset-files.js';

export interface CocoExportResult {
  images: number;
  categories: number;
  annotations: number;
  keypointAnnotations: number;
  files: number;
}

export async function exportCoco(
  source: RunSource,
  dir: string,
  options: { warn: Warn; onProgress?: (done: number, total: number) => void },
): Promise<CocoExportResult> {
  const runId = source.run.id;
  const { dataset, images, labels } = await labelledExport(source, dir, 'a COCO export', options.warn);
  let nextCategory = Math.max(0, ...labels.map((l) => (typeof l.id === 'number' ? l.id : 0))) + 1;
  const categoryOf = new Map(
    labels.map(
      (l) =>
        [String(l.id), typeof l.id === 'number' && Number.isInteger(l.id) ? l.id : nextCategory++] as const,
    ),
  );
  const info = {
    description: dataset.run.description || `simrec run ${runId}`,
    version: '1.0',
    year: new Date(dataset.run.begin / 1000).getUTCFullYear(),
    contributor: 'simrec',
    date_created: new Date(dataset.run.begin / 1000).toISOString(),
  };
  const cocoImages = images.map((image, i) => ({
    id: i + 1,
    file_name: image.file,
    width: image.size.width,
    height: image.size.height,
    sensor: image.capture.sensor,
    capture_id: image.capture.id,
    sequence: image.capture.sequence,
    step: image.capture.step,
    timestamp: image.capture.timestamp,
  }));
  const annotations: JsonObject[] = [];
  images.forEach((image, i) => {
    for (const box of image.boxes)
      annotations.push({
        id: annotations.length + 1,
        image_id: i + 1,
        category_id: categoryOf.get(labelKey(box))!,
        bbox: [box.x, box.y, box.width, box.height],
        area: box.width * box.height,
        iscrowd: 0,
        segmentation: [],
        ...(box.instanceId === undefined ? {} : { instance_id: box.instanceId }),
      });
  });
  const categories = labels.map((l) => ({
    id: categoryOf.get(String(l.id))!,
    name: l.name,
    supercategory: 'default',
  }));
  await writeFileAtomic(
    join(dir, 'annotations', 'instances.json'),
    JSON.stringify({ info, licenses: [], images: cocoImages, annotations, categories }),
  );
  const keypoints = keypointAnnotations(dataset, images);
  if (keypoints.annotations.length)
    await writeFileAtomic(
      join(dir, 'annotations', 'keypoints.json'),
      JSON.stringify({ info, licenses: [], images: cocoImages, ...keypoints }),
    );
  const files = await copyAttachments(
    source,
    images.map((i) => i.file),
    (name) => join(dir, 'images', name),
    options.warn,
  );
  options.onProgress?.(images.length, images.length);
  return {
    images: images.length,
    categories: categories.length,
    annotations: annotations.length,
    keypointAnnotations: keypoints.annotations.length,
    files,
  };
}

/**
 * Perception's keypoint values as COCO person_keypoints: `[x, y, v]` per template point, v = state (0
 * absent, 1 occluded, 2 visible, as in COCO), from the legacy `{template_guid, keypoints: [{index, x,
 * y, state}]}` or SOLO's `{keypoints: [{index, location: [x, y], state}]}` with the annotation's
 * `templateId`. The category is the template, with its point names and skeleton (1-based, as COCO
 * numbers them) from the legacy definition's `spec` or SOLO's `template`. The box is the 2D box of the
 * same instance id in the same capture (the labelers agree on instance ids, not on order), else the
 * visible keypoints' extent.
 */
function keypointAnnotations(
  dataset: LoadedDataset,
  images: readonly LabelledImage[],
): { annotations: JsonObject[]; categories: JsonObject[] } {
  const templates = new Map<string, { id: number; name: string; names: string[]; skeleton: number[][] }>();
  for (const def of dataset.annotationDefinitions) {
    if (def.kind !== 'keypoints') continue;
    for (const t of keypointTemplates(def))
      if (!templates.has(t.id))
        templates.set(t.id, {
          id: templates.size + 1,
          name: t.name,
          names: t.names,
          skeleton: t.skeleton.map(([a, b]) => [a + 1, b + 1]),
        });
  }
  const annotations: JsonObject[] = [];
  images.forEach((image, i) => {
    for (const a of image.capture.annotations) {
      if (a.kind !== 'keypoints' || !a.values) continue;
      for (const v of a.values) {
        if (!isObject(v) || !Array.isArray(v.keypoints)) continue;
        const templateId = v.template_guid ?? v.template_id ?? a.extra?.templateId ?? a.definition;
        const template = templates.get(String(templateId)) ??
          templates.values().next().value ?? { id: 1, name: 'keypoints', names: [], skeleton: [] };
        const flat: number[] = [];
        let count = 0;
        const xs: number[] = [];
        const ys: number[] = [];
        const byIndex = new Map<number, JsonValue>();
        for (const k of v.keypoints) if (isObject(k)) byIndex.set(Number(k.index ?? byIndex.size), k);
        const n = Math.max(template.names.length, ...[...byIndex.keys()].map((k) => k + 1));
        for (let j = 0; j < n; j++) {
          const k = byIndex.get(j);
          const [x, y, state] = isObject(k) ? keypointXY(k) : [0, 0, 0];
          flat.push(x, y, state);
          if (state > 0) {
            count++;
            xs.push(x);
            ys.push(y);
          }
        }
        const box = image.boxes.find(
          (b) => b.instanceId !== undefined && String(b.instanceId) === String(v.instance_id),
        );
        const bbox = box
          ? [box.x, box.y, box.width, box.height]
          : xs.length
            ? [
                Math.min(...xs),
                Math.min(...ys),
                Math.max(...xs) - Math.min(...xs),
                Math.max(...ys) - Math.min(...ys),
              ]
            : [0, 0, 0, 0];
        annotations.push({
          id: annotations.length + 1,
          image_id: i + 1,
          category_id: template.id,
          keypoints: flat,
          num_keypoints: count,
          bbox,
          area: bbox[2]! * bbox[3]!,
          iscrowd: 0,
          ...(v.instance_id === undefined ? {} : { instance_id: v.instance_id }),
        });
      }
    }
  });
  if (annotations.length && templates.size === 0)
    templates.set('keypoints', { id: 1, name: 'keypoints', names: [], skeleton: [] });
  const categories = [...templates.values()].map((t) => ({
    id: t.id,
    name: t.name,
    supercategory: 'default',
    keypoints: t.names,
    skeleton: t.skeleton,
  }));
  return { annotations, categories };
}
