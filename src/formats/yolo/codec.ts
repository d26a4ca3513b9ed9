import type { FormatCodec } from '../../model/codec-port.js';
import type { JsonObject } from '../../model/json.js';
import { exportYolo } from './write-yolo.js';

/** YOLO labels with a contiguous class map: export only. */
export const yoloCodec: FormatCodec = {
  name: 'yolo',
  description: 'YOLO labels (one .txt per image, normalised to [0,1]) and classes; export only',
  output: 'folder',
  async write(sources, location, options) {
    const result = await exportYolo(sources.runs[0]!, location, {
      warn: options.warn,
      onProgress: options.onProgress,
    });
    return JSON.parse(JSON.stringify(result)) as JsonObject;
  },
};
