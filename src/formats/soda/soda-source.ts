import type { BsonDoc } from './bson-fields.js';
import type { LaneMarkSources } from './duplicate-keys.js';

/**
 * Where SODA.Sim's documents come from: a live database or a folder of mongoexport files. Both give
 * documents decoded with their BSON types kept, in the collection's natural order, so everything
 * after this port is one code path.
 */
export interface SodaDocument {
  doc: BsonDoc;
  /** `dataset12.json line 3` or `sodasim.dataset12 document 65f0...`: where errors point. */
  where: string;
  /** Lane marks with every duplicate pair, when asked for and the document has any. */
  laneMarks?: LaneMarkSources;
}

export interface SodaSource {
  /** The folder or the URL (credentials hidden). */
  readonly location: string;
  /** The collections the source holds, as SODA.Sim names them. */
  collections(): Promise<string[]>;
  documents(collection: string, options?: { laneMarks?: boolean }): AsyncIterable<SodaDocument>;
  close(): Promise<void>;
}

/** A dataset written by writeDataset, handed to a sink. */
export interface DatasetSinkWrite {
  head: BsonDoc;
  batches: AsyncIterable<BsonDoc>;
  tail: () => BsonDoc;
}

/**
 * Where an export goes. `writeDataset` allocates the dataset id (never two datasets with one id),
 * writes everything, and on failure removes what it wrote: no dataset is left without its end.
 */
export interface SodaSink {
  readonly location: string;
  writeDataset(build: (id: number) => Promise<DatasetSinkWrite>): Promise<number>;
  /** Inserts or replaces documents by `_id` (scenarios, vehicles). */
  upsert(collection: 'scenarios' | 'vehicles', docs: BsonDoc[]): Promise<void>;
  close(): Promise<void>;
}
