/** DI-drive's benchmark dataset (CARLA): metadata JSON, PNG camera frames, LMDB measurements. */
import type { FormatCodec } from '../../model/codec-port.js';
import { importDidrive } from './read-didrive.js';
import { exportDidrive } from './write-didrive.js';

export { importDidrive, type DidriveImportOptions, type DidriveImportResult } from './read-didrive.js';
export { exportDidrive, type DidriveExportOptions, type DidriveExportResult } from './write-didrive.js';
export { readLmdb, LmdbWriter } from './lmdb-file.js';
export { birdviewAt, loadBirdviewSource } from './birdview-scene.js';
export * from './birdview.js';
export { MEASUREMENT_LAYOUTS, pythonJsonDumps } from './didrive-layout.js';

/**
 * Every episode of a dataset becomes a run. Several runs go out as the episodes of one dataset, or are
 * added to one (`append`).
 */
export const didriveCodec: FormatCodec = {
  name: 'didrive',
  description:
    "DI-drive's benchmark dataset (metainfo.json, episode_%05d/ with measurements.lmdb and PNG frames)",
  output: 'dataset',
  multiRun: true,
  async read(location, into, options) {
    const result = await importDidrive(into, location, {
      warn: (message) => options.warn(location, message),
      onProgress: options.onProgress,
    });
    return {
      runs: result.runs.map((r) => ({
        episode: r.episode,
        run: r.run.id,
        frames: r.frames,
        images: r.images,
        layout: r.layout,
      })),
    };
  },
  async write(sources, location, options) {
    const result = await exportDidrive(sources.runs, location, {
      overwrite: options.overwrite,
      append: options.append,
      warn: (message) => options.warn(location, message),
      onProgress: options.onProgress,
    });
    return { episodes: result.episodes, frames: result.frames };
  },
};
