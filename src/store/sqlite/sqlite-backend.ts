import type Database from 'better-sqlite3';
import type { Attachment, AttachmentInfo } from '../../model/attachment.js';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import type { ColumnBatch } from '../../model/columns.js';
import type { ActorInfo, ActorPresence, EndReason, RunInfo, RunSummary } from '../../model/run.js';
import type {
  BracketArgs,
  CatalogPort,
  ColumnAppend,
  IntegrityReport,
  ListRunsArgs,
  ReadColumnsArgs,
  ReadSamplesArgs,
  SampleBracket,
  StoreBackend,
  WriterIdentity,
} from '../../model/store-port.js';
import type { Sample, StreamInfo, StreamSchema } from '../../model/stream.js';
import { scenarioCatalog, vehicleCatalog } from '../common/catalogs.js';
import { readSamplesViaColumns, sampleBracketViaMany } from '../common/sample-reads.js';
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
 * (sqlite-catalogs.ts). This class is the port, each method handing its call to the part that does it.
 */
export class SqliteBackend implements StoreBackend {
  readonly kind = 'sqlite';
  /** Declarations and appends go, at the call, to the writer thread's queue (or are written at once). */
  readonly keepsWriteOrder = true;
  readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;
  readonly location: string;

  private readonly file: SqliteStoreFile;
  private readonly runs: SqliteRuns;
  private readonly samples: SqliteSamples;
  private readonly attachments: SqliteAttachments;

  private constructor(db: Database.Database, path: string, options: SqliteStoreOptions, version: number) {
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
    backend.samples.preloadIndexes();
    return backend;
  }

  // ---- runs ----------------------------------------------------------------------------------------

  createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo> {
    return this.runs.createRun(run, writer);
  }

  getRun(id: number): Promise<RunInfo | undefined> {
    return this.runs.getRun(id);
  }

  listRuns(args: ListRunsArgs = {}): Promise<RunSummary[]> {
    return this.runs.listRuns(args);
  }

  endRun(id: number, end: { end: number; endReason: EndReason }): Promise<RunInfo> {
    return this.runs.endRun(id, end);
  }

  deleteRun(id: number): Promise<boolean> {
    return this.runs.deleteRun(id);
  }

  runVersions(runs: readonly number[]): Promise<Map<number, string>> {
    return this.runs.runVersions(runs);
  }

  closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]> {
    return this.runs.closeAbandonedRuns(isAlive);
  }

  // ---- actors and streams --------------------------------------------------------------------------

  putActors(run: number, actors: ActorInfo[]): Promise<void> {
    return this.runs.putActors(run, actors);
  }

  putPresence(run: number, presence: ActorPresence[]): Promise<void> {
    return this.runs.putPresence(run, presence);
  }

  listActors(run: number): Promise<ActorInfo[]> {
    return this.runs.listActors(run);
  }

  putStreams(run: number, streams: StreamSchema[]): Promise<void> {
    return this.runs.putStreams(run, streams);
  }

  listStreams(run: number): Promise<StreamInfo[]> {
    return this.runs.listStreams(run);
  }

  // ---- samples -------------------------------------------------------------------------------------

  appendColumns(run: number, appends: ColumnAppend[], presence?: ActorPresence[]): Promise<void> {
    return this.samples.appendColumns(run, appends, presence);
  }

  putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void> {
    return this.samples.putDerivedStream(run, schema, samples);
  }

  readColumns(args: ReadColumnsArgs): AsyncIterable<ColumnBatch> {
    return this.samples.readColumns(args);
  }

  readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch> {
    return this.samples.readColumnsJoined(args);
  }

  readSamples(args: ReadSamplesArgs): AsyncIterable<Sample[]> {
    return readSamplesViaColumns(this, args);
  }

  bracketMany(run: number, args: BracketArgs): Promise<SampleBracket[]> {
    return this.samples.bracketMany(run, args);
  }

  sampleBracket(run: number, stream: string, t: number): Promise<SampleBracket> {
    return sampleBracketViaMany(this, run, stream, t);
  }

  // ---- attachments ---------------------------------------------------------------------------------

  putAttachment(run: number, a: Attachment): Promise<void> {
    return this.attachments.putAttachment(run, a);
  }

  getAttachment(run: number, name: string): Promise<Attachment | undefined> {
    return this.attachments.getAttachment(run, name);
  }

  listAttachments(run: number): Promise<AttachmentInfo[]> {
    return this.attachments.listAttachments(run);
  }

  // ---- the store as a whole ------------------------------------------------------------------------

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
