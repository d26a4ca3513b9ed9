import type Database from 'better-sqlite3';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import type { ColumnBatch } from '../../model/columns.js';
import type { CatalogPort, IntegrityReport, ReadColumnsArgs, StoreBackend } from '../../model/store-port.js';
import { BackendOfParts } from '../common/backend-of-parts.js';
import { scenarioCatalog, vehicleCatalog } from '../common/catalogs.js';
import { SqliteAttachments } from './sqlite-attachments.js';
import { scenarioRows, vehicleRows } from './sqlite-catalogs.js';
import { checkSqliteIntegrity } from './sqlite-integrity.js';
import { openStoreDatabase } from './sqlite-open.js';
import { SqliteRuns } from './sqlite-runs.js';
import { PRELOAD_INDEX_CHUNKS, SqliteSamples } from './sqlite-samples.js';
import { SqliteStoreFile, type SqliteStoreOptions } from './sqlite-store-file.js';

export type { SqliteStoreOptions } from './sqlite-store-file.js';

/**
 * The embedded store: one SQLite file (better-sqlite3). Runs, actors, streams and attachments are
 * rows; samples are chunks (chunk-codes.ts) written by the store's writer thread. Reads go through an
 * index of each run's chunks, read in one query the first time a run is read and dropped when another
 * connection commits (SQLite's data_version), and through a cache of opened chunks and decoded blocks.
 *
 * One type, its work split by job: the file and what the parts share of it (sqlite-store-file.ts),
 * opening (sqlite-open.ts), runs, actors and streams (sqlite-runs.ts), samples (sqlite-samples.ts),
 * attachments (sqlite-attachments.ts), `simrec check` (sqlite-integrity.ts) and the catalogs
 * (sqlite-catalogs.ts). The port's methods go to the part that does each (BackendOfParts); this class
 * opens the store, puts the parts together and does what is its own.
 */
export class SqliteBackend extends BackendOfParts implements StoreBackend {
  readonly kind = 'sqlite';
  /** Declarations and appends go, at the call, to the writer thread's queue (or are written at once). */
  readonly keepsWriteOrder = true;
  readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;
  readonly location: string;

  private readonly file: SqliteStoreFile;
  protected readonly runs: SqliteRuns;
  protected readonly samples: SqliteSamples;
  protected readonly attachments: SqliteAttachments;

  private constructor(db: Database.Database, path: string, options: SqliteStoreOptions, version: number) {
    super();
    this.file = new SqliteStoreFile(db, path, options, version);
    this.location = this.file.location;
    this.runs = new SqliteRuns(this.file);
    this.samples = new SqliteSamples(this.file, this.runs, this);
    this.attachments = new SqliteAttachments(this.file);
    this.scenarios = scenarioCatalog(scenarioRows(db));
    this.vehicles = vehicleCatalog(vehicleRows(db));
  }

  /** Opens (creating if absent) a store file; refuses files that are not simrec stores. */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteBackend {
    const { db, version } = openStoreDatabase(path, options);
    const backend = new SqliteBackend(db, path, options, version);
    backend.samples.preloadIndexes(options.preloadIndexChunks ?? PRELOAD_INDEX_CHUNKS);
    return backend;
  }

  warm(): void {
    this.samples.warmDecoders();
  }

  readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch> {
    return this.samples.readColumnsJoined(args);
  }

  checkIntegrity(options: { repair?: boolean } = {}): Promise<IntegrityReport> {
    return checkSqliteIntegrity(this.file, options);
  }

  async close(): Promise<void> {
    // This connection first, at once: a caller that does not await close() finds the file released
    // (the writer thread, if it ever started, has its own connection and finishes what it was given).
    if (this.file.db.open) this.file.db.close();
    await this.file.writer.close();
  }

  /** Every run's index at open, for stores of up to this many chunks. */
  static readonly PRELOAD_INDEX_CHUNKS = PRELOAD_INDEX_CHUNKS;
}
