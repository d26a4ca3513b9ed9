import type { FormatCodec } from '../../model/codec-port.js';
import { exportLimSim } from './limsim-writer.js';
import { importLimSim } from './limsim-reader.js';

export { importLimSim, type LimSimImportOptions, type LimSimImportResult } from './limsim-reader.js';
export { exportLimSim, type LimSimExportOptions, type LimSimExportResult } from './limsim-writer.js';

/** LimSim's SQLite recording (.db), master and LimSim++ read, master written. */
export const limsimCodec: FormatCodec = {
  name: 'limsim',
  description: "LimSim's SQLite recording (.db): vehicles, frames, traffic lights, evaluation, road network",
  async importRun(store, location, options) {
    const { run, variant, rows } = await importLimSim(store, location, options);
    return { run, details: { variant, rows } };
  },
  async exportRun(store, run, location, options) {
    const { evaluate, ...rest } = options;
    const { rows, resampled, evaluation } = await exportLimSim(store, run, location, {
      ...rest,
      ...(evaluate ? { evaluate: () => evaluate(run) } : {}),
    });
    return { details: { rows, resampled, evaluation } };
  },
};
