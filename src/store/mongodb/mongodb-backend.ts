import type { Db, MongoClient } from 'mongodb';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import type { ColumnBatch } from '../../model/columns.js';
import type { CatalogPort, IntegrityReport, ReadColumnsArgs, StoreBackend } from '../../model/store-port.js';
import { connectMongo } from '../../mongodb/connect-mongo.js';
import { BackendOfParts } from '../common/backend-of-parts.js';
import { scenarioCatalog, vehicleCatalog } from '../common/catalogs.js';
import { readColumnsJoinedViaBatches } from '../common/sample-reads.js';
import { MongoAttachments } from './mongodb-attachments.js';
import { scenarioRows, vehicleRows } from './mongodb-catalogs.js';
import { checkMongoIntegrity } from './mongodb-integrity.js';
import { MongoRuns } from './mongodb-runs.js';
import { MongoSamples } from './mongodb-samples.js';
import { MongoStore, type MongoStoreOptions } from './mongodb-store.js';

export type { MongoStoreOptions } from './mongodb-store.js';

/**
 * The central store: every simulator of a team writes into one MongoDB. simrec's runs live in
 * `simrec_*` collections; scenarios and vehicle configurations live in SODA.Sim's own `scenarios`
 * and `vehicles` collections, in its layout, so SODA.Sim and simrec share them.
 *
 * Scale: run ids come from an atomic counter (`$inc` on `simrec_counters`), not "largest id + 1",
 * which races between two simulators. Samples are chunked as in SQLite (a few hundred KB a document,
 * far below the 16 MB limit). Every write waits for the majority, journaled.
 *
 * Recommended shard key for `simrec_chunks` on a sharded cluster: `{ run: 'hashed', stream: 1, begin: 1 }`.
 * Reads are always one run's stream over a time range: with `run` leading, a read goes to the shard
 * holding that run, never to all. Hashing `run` matters because run ids only grow: a ranged
 * `{ run: 1, ... }` key would send every new run's inserts to the last chunk, one shard taking all
 * writes; hashed, concurrent runs land on different shards. `stream, begin` after it let one long
 * run split into chunks instead of becoming one jumbo chunk. The other collections are small (one
 * document per run, actor, stream) and stay unsharded.
 *
 * One type, its work split by job: the database and what the parts share of it (mongodb-store.ts),
 * runs, actors and streams (mongodb-runs.ts), samples (mongodb-samples.ts), attachments
 * (mongodb-attachments.ts), `simrec check` (mongodb-integrity.ts) and SODA.Sim's catalogs
 * (mongodb-catalogs.ts). The port's methods go to the part that does each (BackendOfParts); this class
 * opens the store, puts the parts together and does what is its own.
 */
export class MongoBackend extends BackendOfParts implements StoreBackend {
  readonly kind = 'mongodb';
  readonly location: string;
  readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;
  private readonly store: MongoStore;
  protected readonly runs: MongoRuns;
  protected readonly samples: MongoSamples;
  protected readonly attachments: MongoAttachments;

  private constructor(client: MongoClient, db: Db, location: string, options: MongoStoreOptions) {
    super();
    this.store = new MongoStore(client, db, location, options);
    this.location = location;
    this.runs = new MongoRuns(this.store);
    this.samples = new MongoSamples(this.store, this.runs);
    this.attachments = new MongoAttachments(this.store);
    this.scenarios = scenarioCatalog(scenarioRows(db));
    this.vehicles = vehicleCatalog(vehicleRows(db));
  }

  /** Connects (the URL's path names the database, default `simrec`) and makes the indexes it serves. */
  static async open(url: string, options: MongoStoreOptions = {}): Promise<MongoBackend> {
    // Give up on an absent server after 10 s (a URL's own serverSelectionTimeoutMS wins).
    const {
      client,
      db,
      location: safe,
    } = await connectMongo(url, {
      defaultDatabase: 'simrec',
      serverSelectionTimeoutMS: 10_000,
    });
    const backend = new MongoBackend(client, db, safe, options);
    await Promise.all([
      backend.store.chunks().createIndex({ run: 1, stream: 1, begin: 1 }),
      backend.store.actors().createIndex({ '_id.run': 1, ord: 1 }),
      backend.store.streams().createIndex({ '_id.run': 1 }),
      backend.store.runs().createIndex({ state: 1 }),
    ]);
    return backend;
  }

  readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch> {
    return readColumnsJoinedViaBatches(this, args);
  }

  checkIntegrity(options: { repair?: boolean } = {}): Promise<IntegrityReport> {
    return checkMongoIntegrity(this.store, options);
  }

  async close(): Promise<void> {
    await this.store.client.close();
  }
}
