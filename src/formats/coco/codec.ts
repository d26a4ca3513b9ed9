import { SimrecError } from '../../model/errors.js';
import type { FormatCodec } from '../../model/codec-port.js';
import { exportCoco } from './export-coco.js';

/** COCO instances and keypoints: export only (what Perception's users train on). */
export const cocoCodec: FormatCodec = {
  name: 'coco',
  description: 'COCO instances and keypoints JSON with the images; export only',
  async importRun() {
    throw new SimrecError(
      'unsupported',
      'coco: import is not supported; import the Perception or SOLO dataset the images came from',
    );
  },
  async exportRun(store, run, location, options) {
    const result = await exportCoco(store, run, location, {
      warn: (where, message) => options.warn?.(`${where}: ${message}`),
    });
    return { details: JSON.parse(JSON.stringify(result)) };
  },
};
