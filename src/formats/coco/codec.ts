import type { FormatCodec } from '../../model/codec-port.js';
import type { JsonObject } from '../../model/json.js';
import { exportCoco } from './write-coco.js';

/** COCO instances and keypoints: export only (what Perception's users train on). */
export const cocoCodec: FormatCodec = {
  name: 'coco',
  description: 'COCO instances and keypoints JSON with the images; export only',
  output: 'folder',
  async write(sources, location, options) {
    const result = await exportCoco(sources.runs[0]!, location, {
      warn: options.warn,
      onProgress: options.onProgress,
    });
    return JSON.parse(JSON.stringify(result)) as JsonObject;
  },
};
