import type { FormatCodec } from '../../model/codec-port.js';
import { exportPerception, importPerception, type ImportOptions, type ImportResult } from './index.js';
import type { StoreBackend } from '../../model/store-port.js';

/** A Perception-family importer (legacy or SOLO) as a registry codec's importRun. */
export const perceptionImportRun =
  (
    read: (store: StoreBackend, dir: string, options: ImportOptions) => Promise<ImportResult>,
  ): FormatCodec['importRun'] =>
  async (store, location, options) => {
    const result = await read(store, location, options.onProgress ? { onProgress: options.onProgress } : {});
    for (const w of result.warnings) options.warn?.(w);
    return {
      run: result.run,
      details: {
        captures: result.captures,
        metrics: result.metrics,
        sensors: result.sensors,
        warnings: result.warnings.length,
      },
    };
  };

/** Unity Perception's legacy dataset through `simrec import/export`. */
export const perceptionCodec: FormatCodec = {
  name: 'perception',
  description: "Unity Perception's legacy dataset (Dataset*/captures_*.json, definitions, images)",
  importRun: perceptionImportRun(importPerception),
  async exportRun(store, run, location, options) {
    const result = await exportPerception(store, run, location, {
      warn: (where, message) => options.warn?.(`${where}: ${message}`),
    });
    return {
      details: {
        captures: result.captures,
        metrics: result.metrics,
        files: result.files,
        jsonFiles: result.jsonFiles,
      },
    };
  },
};
