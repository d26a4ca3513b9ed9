import { SimrecError } from '../../model/errors.js';
import type { FormatCodec } from '../../model/codec-port.js';
import { perceptionImportRun } from '../perception/codec.js';
import { importSolo } from './read-solo.js';

/** Unity Perception's SOLO dataset: read only (export writes the legacy layout: `perception`). */
export const soloCodec: FormatCodec = {
  name: 'solo',
  description: "Unity Perception's SOLO dataset (sequence.N/stepM.frame_data.json); import only",
  importRun: perceptionImportRun(importSolo),
  async exportRun() {
    throw new SimrecError(
      'unsupported',
      'solo: export is not supported; export as perception (the legacy layout) instead',
    );
  },
};
