/** A Perception-family dataset (legacy or SOLO) read into a run, and such a reader as a codec's read. */
import type { CodecOptions } from '../../../model/codec-port.js';
import type { RunInfo } from '../../../model/run.js';
import type { RunTarget } from '../../../model/run-ports.js';
import {
  datasetCounts,
  storeDataset,
  type PerceptionDataset,
  type StreamedDataset,
} from './perception-run.js';
import type { Warn } from './source-values.js';

export interface ImportOptions {
  description?: string;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

export interface ImportResult {
  run: RunInfo;
  captures: number;
  metrics: number;
  sensors: number;
  /** In the order found. */
  warnings: { where: string; message: string }[];
}

/**
 * Reads with `read`, then stores; nothing is written unless the whole dataset reads (a streaming reader
 * has checked every file before its captures are stored).
 */
export async function importDataset(
  into: RunTarget,
  dir: string,
  read: (dir: string, warn: Warn) => Promise<{ dataset: PerceptionDataset | StreamedDataset; root: string }>,
  options: ImportOptions & { simulator: { name: string; version?: string } },
): Promise<ImportResult> {
  const warnings: ImportResult['warnings'] = [];
  const warn: Warn = (where, message) => warnings.push({ where, message });
  const { dataset, root } = await read(dir, warn);
  const run = await storeDataset(into, dataset, {
    root,
    simulator: options.simulator,
    description: options.description ?? `imported from ${dir}`,
    begin: Date.now() * 1000,
    warn,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return {
    run,
    ...datasetCounts(dataset),
    // Sensors only captures name are kept for their captures but are not the dataset's.
    sensors: dataset.sensors.filter((s) => s.declared !== false).length,
    warnings,
  };
}

/** A Perception-family reader (legacy or SOLO) as a codec's read. */
export const perceptionRead =
  (read: (into: RunTarget, dir: string, options: ImportOptions) => Promise<ImportResult>) =>
  async (location: string, into: RunTarget, options: CodecOptions) => {
    const result = await read(into, location, { onProgress: options.onProgress, signal: options.signal });
    for (const w of result.warnings) options.warn(w.where, w.message);
    return {
      captures: result.captures,
      metrics: result.metrics,
      sensors: result.sensors,
      warnings: result.warnings.length,
    };
  };
