import { SimrecError } from '../../model/errors.js';
import type { FormatCodec } from '../registry.js';
import { importSolo } from './read-solo.js';

/** Unity Perception's SOLO dataset: read only (export writes the legacy layout: `perception`). */
export const soloCodec: FormatCodec = {
  name: 'solo',
  description: "Unity Perception's SOLO dataset (sequence.N/stepM.frame_data.json); import only",
  async importRun(store, location, options) {
    const result = await importSolo(
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
  async exportRun() {
    throw new SimrecError(
      'unsupported',
      'solo: export is not supported; export as perception (the legacy layout) instead',
    );
  },
};
