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
 * Every episode of a dataset becomes a run; the first is the one reported, all are in `details.runs`.
 * Several runs go out as the episodes of one dataset (`exportRuns`), or are added to one (`append`).
 */
export const didriveCodec: FormatCodec = {
  name: 'didrive',
  description:
    "DI-drive's benchmark dataset (metainfo.json, episode_%05d/ with measurements.lmdb and PNG frames)",
  async importRun(store, location, options) {
    const result = await importDidrive(store, location, options);
    const first = result.runs[0]!;
    return {
      run: first.run,
      details: {
        runs: result.runs.map((r) => ({
          episode: r.episode,
          run: r.run.id,
          frames: r.frames,
          images: r.images,
          layout: r.layout,
        })),
      },
    };
  },
  exportRun(store, run, location, options) {
    return didriveCodec.exportRuns!(store, [run], location, options);
  },
  async exportRuns(store, runs, location, options) {
    const result = await exportDidrive(store, runs, location, options);
    return { details: { episodes: result.episodes, frames: result.frames } };
  },
};
