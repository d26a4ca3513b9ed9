import type { FormatCodec } from '../../model/codec-port.js';
import { importCarla } from './read-carla.js';
import { exportCarla } from './write-carla.js';

export { importCarla, type CarlaImportOptions, type CarlaImportResult } from './read-carla.js';
export { exportCarla, type CarlaExportOptions, type CarlaExportResult } from './write-carla.js';

/** CARLA's recorder file (.log, `client.start_recorder`): every layout 0.9.4 to 0.9.16 wrote, read; written back byte for byte, and runs from elsewhere in 0.9.16's. */
export const carlaCodec: FormatCodec = {
  name: 'carla',
  description:
    "CARLA's recorder file (.log): frames, actors, poses, lights, controls, collisions; ScenarioRunner's criteria",
  output: 'file',
  fileExtension: 'log',
  async read(location, into, options) {
    const { criteria, xodr } = options.settings;
    const result = await importCarla(into, location, {
      warn: (message) => options.warn(location, message),
      onProgress: options.onProgress,
      signal: options.signal,
      ...(typeof criteria === 'string' ? { criteria } : {}),
      ...(typeof xodr === 'string' ? { xodr } : {}),
    });
    return { frames: result.frames, actors: result.actors, layout: result.layout, criteria: result.criteria };
  },
  async write(sources, location, options) {
    const source = sources.runs[0]!;
    const { map, blueprintsFrom } = options.settings;
    const result = await exportCarla(source, location, {
      warn: (message) => options.warn(`run ${source.run.id}`, message),
      onProgress: options.onProgress,
      signal: options.signal,
      beside: options.beside,
      ...(typeof map === 'string' ? { map } : {}),
      ...(typeof blueprintsFrom === 'string' ? { blueprintsFrom } : {}),
    });
    return { frames: result.frames, actors: result.actors, mode: result.mode };
  },
};
