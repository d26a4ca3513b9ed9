import type { FormatCodec } from '../../model/codec-port.js';
import { exportLimSim } from './write-limsim.js';
import { importLimSim } from './read-limsim.js';

export { importLimSim, type LimSimImportOptions, type LimSimImportResult } from './read-limsim.js';
export { exportLimSim, type LimSimExportOptions, type LimSimExportResult } from './write-limsim.js';

/** LimSim's SQLite recording (.db), master and LimSim++ read, master written. */
export const limsimCodec: FormatCodec = {
  name: 'limsim',
  description: "LimSim's SQLite recording (.db): vehicles, frames, traffic lights, evaluation, road network",
  output: 'file',
  // Several runs exported at once: run-ID.db each in a folder (LimSim's recorder writes one per run).
  fileExtension: 'db',
  async read(location, into, options) {
    const { variant, rows } = await importLimSim(into, location, {
      warn: (message) => options.warn(location, message),
      onProgress: options.onProgress,
    });
    return { variant, rows };
  },
  async write(sources, location, options) {
    const source = sources.runs[0]!;
    const { rows, resampled, evaluation } = await exportLimSim(source, location, {
      warn: (message) => options.warn(`run ${source.run.id}`, message),
      onProgress: options.onProgress,
      evaluate: () => options.evaluate(source.run.id),
    });
    return { rows, resampled, evaluation };
  },
};
