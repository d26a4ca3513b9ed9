import type { FormatCodec } from '../../model/codec-port.js';
import { perceptionRead } from '../common/labelled-images/import-dataset.js';
import { importSolo } from './read-solo.js';
import { exportSolo } from './write-solo.js';

/** Unity Perception's SOLO dataset, both ways. */
export const soloCodec: FormatCodec = {
  name: 'solo',
  description: "Unity Perception's SOLO dataset (metadata.json, sequence.N/stepM.frame_data.json)",
  output: 'folder',
  read: perceptionRead(importSolo),
  async write(sources, location, options) {
    const result = await exportSolo(sources.runs[0]!, location, {
      warn: options.warn,
      signal: options.signal,
      onProgress: options.onProgress,
    });
    return { ...result };
  },
};
