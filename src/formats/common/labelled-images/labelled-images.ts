/**
 * The camera images of a dataset with their size and 2D boxes clipped to them: what COCO, YOLO and the
 * statistics work from. Every camera counts (pysolotools' solo2coco takes only the first, issue #144).
 */
import type { AnnotationDefinition, Box2D, ImageSize, PerceptionCapture } from '../../../model/perception.js';
import { captureBoxes } from '../../../model/perception.js';
import type { RunSource } from '../../../model/run-ports.js';
import { isImageFormat, mediaTypeFromName, readImageSize } from './image-files.js';
import { loadDataset, type LoadedDataset } from './perception-run.js';
import type { Warn } from './source-values.js';
import { requireEmptyTarget } from './dataset-files.js';

export interface LabelledImage {
  capture: PerceptionCapture;
  /** The attachment name of the image. */
  file: string;
  size: ImageSize;
  /** Clipped to the image; boxes wholly outside it are left out. */
  boxes: Box2D[];
}

/** How many 2D boxes and keypoint instances a capture carries. */
function imageLabels(capture: PerceptionCapture): number {
  let n = 0;
  for (const a of capture.annotations)
    if ((a.kind === 'bbox2d' || a.kind === 'keypoints') && a.values) n += a.values.length;
  return n;
}

export interface Label {
  id: number | string;
  name: string;
}

export async function labelledImages(
  source: RunSource,
  dataset: LoadedDataset,
  warn: Warn,
): Promise<LabelledImage[]> {
  const images: LabelledImage[] = [];
  let clipped = 0;
  const attachments = new Map((await source.attachments()).map((a) => [a.name, a] as const));
  for (const capture of dataset.captures) {
    const file = capture.file;
    const where = `capture ${capture.id}`;
    if (file === undefined || !attachments.get(file)?.mediaType.startsWith('image/')) {
      // A capture that is not an image (a lidar's point cloud) is no COCO or YOLO material; one that
      // should have been, or that carries image labels, is dropped with a word saying so.
      const labels = imageLabels(capture);
      const claimsImage =
        isImageFormat(capture.format) || (file !== undefined && mediaTypeFromName(file).startsWith('image/'));
      if (labels || claimsImage)
        warn(
          where,
          file === undefined
            ? `has no image file; its ${labels} labels (2D boxes, keypoints) are left out`
            : `image ${file} was not imported (${attachments.has(file) ? 'it is not an image' : 'it was missing when the dataset was imported'}); the capture${labels ? ` and its ${labels} labels (2D boxes, keypoints)` : ''} ${labels ? 'are' : 'is'} left out`,
        );
      continue;
    }
    let size = capture.imageSize;
    if (!size) {
      const data = (await source.attachment(file))?.data;
      size = data && readImageSize(data);
    }
    if (!size) {
      warn(where, `the size of ${file} is unknown (not a PNG or JPEG); the image is left out`);
      continue;
    }
    const boxes: Box2D[] = [];
    for (const box of captureBoxes(capture)) {
      const x0 = Math.max(0, box.x);
      const y0 = Math.max(0, box.y);
      const x1 = Math.min(size.width, box.x + box.width);
      const y1 = Math.min(size.height, box.y + box.height);
      if (x1 <= x0 || y1 <= y0) {
        warn(
          where,
          `box ${JSON.stringify([box.x, box.y, box.width, box.height])} (${box.label}) lies outside the ${size.width}x${size.height} image; left out`,
        );
        continue;
      }
      if (x0 !== box.x || y0 !== box.y || x1 !== box.x + box.width || y1 !== box.y + box.height) clipped++;
      boxes.push({ ...box, x: x0, y: y0, width: x1 - x0, height: y1 - y0 });
    }
    images.push({ capture, file, size, boxes });
  }
  if (clipped) warn(`run ${dataset.run.id}`, `${clipped} boxes reached over the image edge and were clipped`);
  return images;
}

/**
 * The labels of the 2D-box definitions, in label id order, followed by labels only the boxes name.
 * Numeric label ids are kept as given (COCO category ids); others get the next free number.
 */
export function boxLabels(
  definitions: readonly AnnotationDefinition[],
  images: readonly LabelledImage[],
): Label[] {
  const byKey = new Map<string, Label>();
  const add = (id: unknown, name: unknown): void => {
    if (id === undefined || id === null) return;
    const key = String(id);
    if (!byKey.has(key)) byKey.set(key, { id: id as number | string, name: String(name ?? id) });
  };
  for (const def of definitions)
    if (def.kind === 'bbox2d')
      for (const s of def.spec ?? [])
        if (typeof s === 'object' && s !== null && !Array.isArray(s)) add(s.label_id, s.label_name);
  for (const image of images) for (const b of image.boxes) add(b.labelId ?? b.label, b.label);
  const labels = [...byKey.values()];
  labels.sort((a, b) =>
    typeof a.id === 'number' && typeof b.id === 'number'
      ? a.id - b.id
      : String(a.id).localeCompare(String(b.id)),
  );
  return labels;
}

export const labelKey = (box: Box2D): string => String(box.labelId ?? box.label);

/** What COCO and YOLO exports start from: the run's dataset, its labelled images and their labels. */
export async function labelledExport(
  source: RunSource,
  dir: string,
  what: string,
  warn: Warn,
): Promise<{ dataset: LoadedDataset; images: LabelledImage[]; labels: Label[] }> {
  const dataset = await loadDataset(source, warn, { name: what, metrics: false });
  await requireEmptyTarget(dir, what);
  const images = await labelledImages(source, dataset, warn);
  return { dataset, images, labels: boxLabels(dataset.annotationDefinitions, images) };
}
