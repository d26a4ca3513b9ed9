import { Binary, Long } from 'mongodb';
import type { ExportSources, RunSource } from '../../model/run-ports.js';
import { fromPlainJson, toInt64, type BsonDoc } from './bson-fields.js';
import { datasetCollection } from './soda-layout.js';
import type { SodaSink } from './soda-source.js';
import { writeDataset } from './write-soda-dataset.js';

export interface SodaExportOptions {
  /** Write simrec's extension field (default true). */
  extension?: boolean;
  warn?: (message: string) => void;
}

export interface SodaExportResult {
  dataset: number;
  collection: string;
  scenarios: number;
  vehicles: number;
}

/** Exports a run as a new SODA.Sim dataset, with the store's scenarios and vehicle configurations. */
export async function exportSoda(
  source: RunSource,
  catalogs: Pick<ExportSources, 'scenarios' | 'vehicles'>,
  sink: SodaSink,
  options: SodaExportOptions = {},
): Promise<SodaExportResult> {
  const id = await sink.writeDataset((id) => writeDataset(source, id, options));
  const scenarios: BsonDoc[] = [];
  for (const summary of await catalogs.scenarios.list()) {
    const s = await catalogs.scenarios.get(summary.id);
    if (s)
      scenarios.push({
        _id: Long.fromBigInt(s.id),
        timestamp: toInt64(s.timestamp),
        description: s.description,
        bin: new Binary(s.bin, 0),
      });
  }
  const vehicles: BsonDoc[] = (await catalogs.vehicles.list()).map((v) => ({
    _id: v.name,
    timestamp: toInt64(v.timestamp),
    'soda.sim': fromPlainJson(v.doc),
  }));
  if (scenarios.length) await sink.upsert('scenarios', scenarios);
  if (vehicles.length) await sink.upsert('vehicles', vehicles);
  return {
    dataset: id,
    collection: datasetCollection(id),
    scenarios: scenarios.length,
    vehicles: vehicles.length,
  };
}
