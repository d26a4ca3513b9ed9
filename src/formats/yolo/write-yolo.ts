/**
 * YOLO labels from a run's Perception captures: `images/<name>`, `labels/<name>.txt` with one
 * `class cx cy w h` line per box (normalised to [0,1]), and the class map beside them (`classes.txt`,
 * `data.yaml`). Classes are numbered 0..n-1 in label id order: pysolotools' solo2yolo writes Unity's
 * label ids as they are, which leaves gaps YOLO trainers read as empty classes.
 */
import { join } from 'node:path';
import type { RunSource } from '../../model/run-ports.js';
import { labelKey, labelledExport } from '../common/labelled-images/labelled-images.js';
import type { Warn } from '../common/labelled-images/source-values.js';
import { copyAttachments, writeFileAtomic } from '../common/labelled-images/dataset-files.js';

export interface YoloExportResult {
  images: number;
  classes: number;
  labels: number;
  files: number;
}

/** Six decimals: a tenth of a pixel on a 10,000-pixel image. */
const norm = (v: number): string => Math.min(1, Math.max(0, v)).toFixed(6);

export const labelFileName = (imageName: string): string => imageName.replace(/\.[^./]*$/, '') + '.txt';

export async function exportYolo(
  source: RunSource,
  dir: string,
  options: { warn: Warn; onProgress?: (done: number, total: number) => void },
): Promise<YoloExportResult> {
  const { images, labels } = await labelledExport(source, dir, 'a YOLO export', options.warn);
  const classOf = new Map(labels.map((l, i) => [String(l.id), i] as const));
  let lines = 0;
  for (const [i, image] of images.entries()) {
    const { width, height } = image.size;
    const text = image.boxes
      .map((b) => {
        lines++;
        return [
          classOf.get(labelKey(b))!,
          norm((b.x + b.width / 2) / width),
          norm((b.y + b.height / 2) / height),
          norm(b.width / width),
          norm(b.height / height),
        ].join(' ');
      })
      .join('\n');
    // An image with no boxes still gets its (empty) label file: YOLO reads that as background.
    await writeFileAtomic(join(dir, 'labels', labelFileName(image.file)), text ? `${text}\n` : '');
    options.onProgress?.(i + 1, images.length);
  }
  await writeFileAtomic(join(dir, 'classes.txt'), labels.map((l) => `${l.name}\n`).join(''));
  const yaml = [
    '# written by simrec; class index: Unity Perception label id',
    ...labels.map((l, i) => `# ${i}: ${JSON.stringify(l.id)}`),
    'path: .',
    'train: images',
    'val: images',
    `nc: ${labels.length}`,
    'names:',
    ...labels.map((l, i) => `  ${i}: ${JSON.stringify(l.name)}`),
    '',
  ].join('\n');
  await writeFileAtomic(join(dir, 'data.yaml'), yaml);
  const files = await copyAttachments(
    source,
    images.map((i) => i.file),
    (name) => join(dir, 'images', name),
    options.warn,
  );
  return { images: images.length, classes: labels.length, labels: lines, files };
}
