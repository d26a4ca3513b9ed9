import { SimrecError } from '../../model/errors.js';
import type { FormatCodec } from '../../model/codec-port.js';
import { exportSoda, importSoda, openSodaSink, openSodaSource } from './read-soda.js';

/**
 * SODA.Sim's layout, in a live MongoDB (mongodb://HOST/DB) or as mongoexport files (a folder).
 * An import may hold several datasets: each becomes a run. Each export adds a dataset to the
 * database (or folder), as SODA.Sim's recorder does. The codec closes what it opens.
 */
export const sodaCodec: FormatCodec = {
  name: 'soda',
  description:
    "SODA.Sim's MongoDB layout: a live database (mongodb://HOST/DB) or mongoexport files (a folder)",
  output: 'database',
  async read(location, into, options) {
    const source = await openSodaSource(location);
    try {
      const dataset = options.settings.dataset;
      const result = await importSoda(into, source, {
        ...(typeof dataset === 'number' ? { dataset } : {}),
        warn: (message) => options.warn(source.location, message),
        onProgress: options.onProgress,
      });
      if (result.runs.length === 0)
        throw new SimrecError('not_found', `${source.location}: no SODA.Sim dataset to import`);
      return {
        runs: result.runs.map((r) => ({ dataset: r.dataset, collection: r.collection, run: r.run.id })),
        scenarios: result.scenarios,
        vehicles: result.vehicles,
      };
    } finally {
      await source.close();
    }
  },
  async write(sources, location, options) {
    const sink = await openSodaSink(location);
    try {
      const source = sources.runs[0]!;
      const result = await exportSoda(source, sources, sink, {
        extension: options.settings.extension !== false,
        warn: (message) => options.warn(`run ${source.run.id}`, message),
      });
      return { ...result };
    } finally {
      await sink.close();
    }
  },
};
