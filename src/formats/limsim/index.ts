import { evaluateRun } from '../../evaluate/evaluate-run.js';
import type { FormatCodec } from '../../model/codec-port.js';
import type { Sample } from '../../model/stream.js';
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
    // LimSim's recorder always fills evaluationINFO (its report.py fails on an empty one): a run
    // not yet evaluated is, in LimSim's mode, for the file only (nothing is stored in the run).
    const evaluate = async (): Promise<Sample[]> => {
      const frames: Sample[] = [];
      await evaluateRun(store, run, { mode: 'limsim', store: false, onFrame: (s) => frames.push(s) });
      return frames;
    };
    const { rows, resampled, evaluation } = await exportLimSim(store, run, location, {
      ...options,
      evaluate,
    });
    return { details: { rows, resampled, evaluation } };
  },
};
