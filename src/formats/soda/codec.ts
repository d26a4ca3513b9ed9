import { SimrecError } from '../../model/errors.js';
import type { FormatCodec } from '../../model/codec-port.js';
import { exportSoda, importSoda, openSodaSink, openSodaSource } from './index.js';

/**
 * SODA.Sim's layout, in a live MongoDB (mongodb://HOST/DB) or as mongoexport files (a folder).
 * An import may hold several datasets: each becomes a run; the first is the one reported.
 */
export const sodaCodec: FormatCodec = {
  name: 'soda',
  description:
    "SODA.Sim's MongoDB layout: a live database (mongodb://HOST/DB) or mongoexport files (a folder)",
  async importRun(store, location, options) {
    const source = await openSodaSource(location);
    const result = await importSoda(store, source, options.warn ? { warn: options.warn } : {});
    const first = result.runs[0];
    if (!first) throw new SimrecError('not_found', `${location}: no SODA.Sim dataset to import`);
    return {
      run: first.run,
      details: {
        runs: result.runs.map((r) => ({ dataset: r.dataset, collection: r.collection, run: r.run.id })),
        scenarios: result.scenarios,
        vehicles: result.vehicles,
      },
    };
  },
  async exportRun(store, run, location, options) {
    const result = await exportSoda(
      store,
      run,
      await openSodaSink(location),
      options.warn ? { warn: options.warn } : {},
    );
    return { details: { ...result } };
  },
};
