import type { FormatCodec } from '../../model/codec-port.js';
import { perceptionRead } from '../common/labelled-images/import-dataset.js';
import { importPerception } from './read-perception.js';
import { exportPerception } from './write-perception.js';

export {
  loadDataset,
  storeDataset,
  type LoadedDataset,
  type PerceptionDataset,
} from '../common/labelled-images/perception-run.js';
export type { ImportOptions, ImportResult } from '../common/labelled-images/import-dataset.js';
export type { Warn } from '../common/labelled-images/source-values.js';
export { importPerception } from './read-perception.js';
export { exportPerception, RECORDS_PER_FILE, type ExportResult } from './write-perception.js';

/** Unity Perception's legacy dataset through `simrec import/export`. */
export const perceptionCodec: FormatCodec = {
  name: 'perception',
  description: "Unity Perception's legacy dataset (Dataset*/captures_*.json, definitions, images)",
  output: 'folder',
  read: perceptionRead(importPerception),
  async write(sources, location, options) {
    const result = await exportPerception(sources.runs[0]!, location, {
      warn: options.warn,
      signal: options.signal,
      onProgress: options.onProgress,
    });
    return {
      captures: result.captures,
      metrics: result.metrics,
      files: result.files,
      jsonFiles: result.jsonFiles,
    };
  },
};
