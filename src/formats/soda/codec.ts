import { SimrecError } from '../../model/errors.js';
import type { FormatCodec } from '../../model/codec-port.js';
import { isMongoUrl } from '../../mongodb/mongodb-url.js';
import { importSoda } from './read-soda.js';
import { SodaFolder } from './soda-files.js';
import type { SodaSink, SodaSource } from './soda-source.js';
import { exportSoda } from './write-soda.js';

export { importSoda, guidToString, type SodaImportOptions, type SodaImportResult } from './read-soda.js';
export { exportSoda, type SodaExportOptions, type SodaExportResult } from './write-soda.js';
export { SodaFolder } from './soda-files.js';
export type { SodaSource, SodaSink, SodaDocument } from './soda-source.js';

/** A folder of mongoexport files, or a live database for a `mongodb://` URL (its driver loaded then). */
export async function openSodaSource(location: string): Promise<SodaSource> {
  if (!isMongoUrl(location)) return SodaFolder.openForRead(location);
  const { SodaDatabase } = await import('./soda-mongodb.js');
  return SodaDatabase.open(location);
}

export async function openSodaSink(location: string): Promise<SodaSink> {
  if (!isMongoUrl(location)) return SodaFolder.openForWrite(location);
  const { SodaDatabase } = await import('./soda-mongodb.js');
  return SodaDatabase.open(location);
}

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
