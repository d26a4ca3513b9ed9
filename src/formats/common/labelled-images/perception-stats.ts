/**
 * What datasetinsights and pysolotools show of a dataset: objects per frame and per label, the boxes'
 * relative size sqrt(box area / image area), and a heat map of where boxes fall.
 */
import { writeFile } from 'node:fs/promises';
import type { RunSource } from '../../../model/run-ports.js';
import { encodePng } from './image-files.js';
import { labelledImages } from './labelled-images.js';
import { loadDataset } from './perception-run.js';

export interface Heatmap {
  width: number;
  height: number;
  /** Boxes covering each cell, row by row; images of other sizes are scaled onto this grid. */
  cells: number[];
  max: number;
}

export interface PerceptionStats {
  run: number;
  captures: number;
  /** Camera images with a known size, which the box figures are about. */
  images: number;
  boxes: number;
  perFrame: { capture: string; sensor: string; step: number; count: number }[];
  perLabel: { label: string; count: number }[];
  relativeSize: { bins: { from: number; to: number; count: number }[]; quartiles: number[] };
  heatmap: Heatmap;
  warnings: string[];
}

/** The heat map's longer side, in cells: fine enough to see, small enough to print as JSON. */
const HEATMAP_CELLS = 128;
const SIZE_BINS = 10;

export async function perceptionStats(source: RunSource): Promise<PerceptionStats> {
  const runId = source.run.id;
  const dataset = await loadDataset(source);
  const warnings: string[] = [];
  const images = await labelledImages(source, dataset, (where, message) =>
    warnings.push(`${where}: ${message}`),
  );
  const sizes = new Map<string, number>();
  for (const i of images)
    sizes.set(`${i.size.width}x${i.size.height}`, (sizes.get(`${i.size.width}x${i.size.height}`) ?? 0) + 1);
  const common = [...sizes]
    .sort((a, b) => b[1] - a[1])[0]?.[0]
    .split('x')
    .map(Number) ?? [1, 1];
  const scale = HEATMAP_CELLS / Math.max(common[0]!, common[1]!);
  const width = Math.max(1, Math.round(common[0]! * scale));
  const height = Math.max(1, Math.round(common[1]! * scale));
  const cells = new Array<number>(width * height).fill(0);
  const perLabel = new Map<string, number>();
  const relative: number[] = [];
  const perFrame: PerceptionStats['perFrame'] = [];
  for (const image of images) {
    perFrame.push({
      capture: image.capture.id,
      sensor: image.capture.sensor,
      step: image.capture.step,
      count: image.boxes.length,
    });
    const area = image.size.width * image.size.height;
    for (const b of image.boxes) {
      perLabel.set(b.label, (perLabel.get(b.label) ?? 0) + 1);
      relative.push(Math.sqrt((b.width * b.height) / area));
      const sx = width / image.size.width;
      const sy = height / image.size.height;
      const [x0, x1] = [Math.floor(b.x * sx), Math.min(width, Math.ceil((b.x + b.width) * sx))];
      const [y0, y1] = [Math.floor(b.y * sy), Math.min(height, Math.ceil((b.y + b.height) * sy))];
      for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) cells[y * width + x]!++;
    }
  }
  relative.sort((a, b) => a - b);
  const quantile = (q: number): number =>
    relative[Math.min(relative.length - 1, Math.floor(q * relative.length))]!;
  const bins = Array.from({ length: SIZE_BINS }, (_, i) => ({
    from: i / SIZE_BINS,
    to: (i + 1) / SIZE_BINS,
    count: 0,
  }));
  for (const r of relative) bins[Math.min(SIZE_BINS - 1, Math.floor(r * SIZE_BINS))]!.count++;
  return {
    run: runId,
    captures: dataset.captures.length,
    images: images.length,
    boxes: relative.length,
    perFrame,
    perLabel: [...perLabel].map(([label, count]) => ({ label, count })).sort((a, b) => b.count - a.count),
    relativeSize: { bins, quartiles: relative.length ? [0.25, 0.5, 0.75].map(quantile) : [] },
    heatmap: { width, height, cells, max: Math.max(0, ...cells) },
    warnings,
  };
}

/** The heat map as a greyscale PNG, white where most boxes fall. */
export async function writeHeatmapPng(heatmap: Heatmap, path: string): Promise<void> {
  const pixels = Uint8Array.from(heatmap.cells, (c) =>
    heatmap.max ? Math.round((255 * c) / heatmap.max) : 0,
  );
  await writeFile(path, encodePng(heatmap.width, heatmap.height, 1, pixels));
}
