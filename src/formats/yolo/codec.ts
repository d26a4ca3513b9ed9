import { SimrecError } from '../../model/errors.js';
import type { FormatCodec } from '../../model/codec-port.js';
import { exportYolo } from './export-yolo.js';

/** YOLO labels with a contiguous class map: export only. */
export const yoloCodec: FormatCodec = {
  name: 'yolo',
  description: 'YOLO labels (one .txt per image, normalised to [0,1]) and classes; export only',
  async importRun() {
    throw new SimrecError(
      'unsupported',
      'yolo: import is not supported; import the Perception or SOLO dataset the images came from',
    );
  },
  async exportRun(store, run, location, options) {
    const result = await exportYolo(store, run, location, {
      warn: (where, message) => options.warn?.(`${where}: ${message}`),
    });
    return { details: JSON.parse(JSON.stringify(result)) };
  },
};
