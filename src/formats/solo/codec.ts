import type { FormatCodec } from '../../model/codec-port.js';
import { perceptionImportRun } from '../perception/codec.js';
import { importSolo } from './read-solo.js';
import { exportSolo } from './write-solo.js';

/** Unity Perception's SOLO dataset, both ways. */
export const soloCodec: FormatCodec = {
  name: 'solo',
  description: "Unity Perception's SOLO dataset (metadata.json, sequence.N/stepM.frame_data.json)",
  importRun: perceptionImportRun(importSolo),
  async exportRun(store, run, location, options) {
    const result = await exportSolo(store, run, location, {
      warn: (where, message) => options.warn?.(`${where}: ${message}`),
    });
    return { details: { ...result } };
  },
};
