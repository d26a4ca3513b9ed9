import type { FormatCodec } from '../../model/codec-port.js';
import { importFcd } from './read-fcd.js';
import { exportFcd } from './write-fcd.js';

export { importFcd, type FcdImportOptions, type FcdImportResult } from './read-fcd.js';
export { exportFcd, type FcdExportOptions, type FcdExportResult } from './write-fcd.js';

const list = (value: unknown): string[] | undefined =>
  typeof value === 'string' && value !== ''
    ? value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean)
    : undefined;

/** SUMO's floating car data (`sumo --fcd-output`), plain or gzip-compressed. */
export const fcdCodec: FormatCodec = {
  name: 'fcd',
  description: "SUMO's floating car data (sumo --fcd-output, .xml or .xml.gz): vehicles, persons, containers",
  output: 'file',
  fileExtension: 'xml',
  async read(location, into, options) {
    const net = typeof options.settings.net === 'string' ? options.settings.net : undefined;
    const routes = list(options.settings.routes);
    const result = await importFcd(into, location, {
      warn: (message) => options.warn(location, message),
      onProgress: options.onProgress,
      signal: options.signal,
      ...(net ? { net } : {}),
      ...(routes ? { routes } : {}),
    });
    return {
      timesteps: result.timesteps,
      states: result.states,
      actors: result.actors,
      positions: result.positions,
    };
  },
  async write(sources, location, options) {
    const source = sources.runs[0]!;
    const result = await exportFcd(source, location, {
      warn: (message) => options.warn(`run ${source.run.id}`, message),
      onProgress: options.onProgress,
      signal: options.signal,
      generator: 'simrec 0.1.0',
    });
    return { ...result };
  },
};
