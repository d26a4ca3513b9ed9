import type { FormatCodec } from '../registry.js';
import { exportPerception, importPerception } from './index.js';

/** Unity Perception's legacy dataset through `simrec import/export`. */
export const perceptionCodec: FormatCodec = {
  name: 'perception',
  description: "Unity Perception's legacy dataset (Dataset*/captures_*.json, definitions, images)",
  async importRun(store, location, options) {
    const result = await importPerception(
      store,
      location,
      options.onProgress ? { onProgress: options.onProgress } : {},
    );
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
  },
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
