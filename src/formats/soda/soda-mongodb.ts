import { BSON, Long, MongoClient, MongoServerError, type Db, type WriteConcernSettings } from 'mongodb';
import { SimrecError } from '../../model/errors.js';
import { connectMongo } from '../../mongodb/connect-mongo.js';
import { int64, string, type BsonDoc } from './bson-fields.js';
import { laneMarksFromBson } from './duplicate-keys.js';
import { collectionRole, datasetCollection, SODA_DEFAULT_DATABASE } from './soda-layout.js';
import type { DatasetSinkWrite, SodaDocument, SodaSink, SodaSource } from './soda-source.js';

const DURABLE: WriteConcernSettings = { w: 'majority', journal: true };
const DUPLICATE_KEY = 11000;

/** A dataset as a list shows it. Times are Unix microseconds, as SODA.Sim writes them. */
export interface SodaDatasetSummary {
  id: number;
  collection: string;
  generation: 'G1/G2' | 'G3';
  begin: number;
  end: number | null;
  endReason: string | null;
  version: string | null;
  actors: number;
}

/**
 * SODA.Sim's layout in a live MongoDB (`mongodb://HOST/DB`; SODA.Sim's default database is
 * `sodasim`). Documents are fetched raw and decoded here with their BSON types kept, and lane
 * marks are recovered from the raw bytes, so a live dataset reads exactly as its export does.
 */
export class SodaDatabase implements SodaSource, SodaSink {
  readonly location: string;
  private readonly client: MongoClient;
  private readonly db: Db;

  private constructor(location: string, client: MongoClient, db: Db) {
    this.location = location;
    this.client = client;
    this.db = db;
  }

  /**
   * Connects to SODA.Sim's database: the URL's own (`mongodb://HOST/DB`), or `options.database`, or
   * SODA.Sim's default `sodasim`. A command line should hear sooner than the driver's 30 s that no
   * server is there.
   */
  static async open(
    url: string,
    options: { database?: string; serverSelectionTimeoutMS?: number } = {},
  ): Promise<SodaDatabase> {
    const { client, db, location } = await connectMongo(url, {
      defaultDatabase: SODA_DEFAULT_DATABASE,
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 5000,
      ...(options.database === undefined ? {} : { database: options.database }),
    });
    return new SodaDatabase(location, client, db);
  }

  async collections(): Promise<string[]> {
    const list = await this.db.listCollections({}, { nameOnly: true }).toArray();
    return list.map((c) => c.name);
  }

  async *documents(collection: string, options: { laneMarks?: boolean } = {}): AsyncIterable<SodaDocument> {
    const cursor = this.db.collection(collection).find({}, { raw: true });
    for await (const raw of cursor as AsyncIterable<unknown>) {
      const bytes = raw as Uint8Array;
      const doc = BSON.deserialize(bytes, { promoteValues: false });
      const where = `${this.db.databaseName}.${collection} document ${describeId(doc._id)}`;
      const item: SodaDocument = { doc, where };
      if (options.laneMarks) item.laneMarks = laneMarksFromBson(bytes, where);
      yield item;
    }
  }

  /**
   * SODA.Sim takes the largest `_id` plus one, which races between two recorders. Here the insert of
   * the datasets document claims the id: `_id` is unique, so of two exporters one gets a duplicate-key
   * error and tries the next id. A `dataset<ID>` collection left behind by a crashed recorder is
   * skipped rather than mixed into.
   */
  async writeDataset(build: (id: number) => Promise<DatasetSinkWrite>): Promise<number> {
    const datasets = this.db.collection<BsonDoc>('datasets');
    const existing = new Set(await this.collections());
    let write: DatasetSinkWrite | undefined;
    let id = -1;
    for (let attempt = 0; attempt < 100; attempt++) {
      const last = await datasets
        .find({}, { projection: { _id: 1 }, promoteValues: false })
        .sort({ _id: -1 })
        .limit(1)
        .toArray();
      id = last[0] ? int64(last[0]._id, `${this.db.databaseName}.datasets._id`) + 1 : 0;
      while (existing.has(datasetCollection(id))) id++;
      write = await build(id);
      try {
        // The claim already carries an end: should this process die before the real end is set, the
        // dataset left behind says it failed (SODA.Sim's `inner_error`) instead of looking unfinished.
        const claim: BsonDoc = { ...write.head, end_ts: write.head.begin_ts, end_reason: 'inner_error' };
        await datasets.insertOne(claim, { writeConcern: DURABLE });
        break;
      } catch (error) {
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) {
          write = undefined;
          continue;
        }
        throw error;
      }
    }
    if (!write)
      throw new SimrecError('conflict', `${this.location}: could not claim a dataset id after 100 tries`);
    const batches = this.db.collection(datasetCollection(id));
    try {
      for await (const doc of write.batches) await batches.insertOne(doc, { writeConcern: DURABLE });
      const tail = write.tail();
      // A run exported while still recording has no end yet: it then reads as unfinished, as SODA.Sim's would.
      const unset = Object.fromEntries(
        ['end_ts', 'end_reason'].filter((k) => !(k in tail)).map((k) => [k, '' as const]),
      );
      await datasets.updateOne(
        { _id: Long.fromNumber(id) },
        { $set: tail, ...(Object.keys(unset).length ? { $unset: unset } : {}) },
        { writeConcern: DURABLE },
      );
    } catch (error) {
      // Undoes what was written as far as it can: the failure thrown next is the one to report.
      await batches.drop().catch(() => {});
      await datasets.deleteOne({ _id: Long.fromNumber(id) }).catch(() => {});
      throw new SimrecError(
        'io',
        `${this.location}: writing dataset ${id} failed and it was removed: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    return id;
  }

  /**
   * The datasets in the database, newest first, from their descriptors only (never their batches):
   * G1/G2's `datasets` documents, and the descriptor of each G3 `dataset_<N>`.
   */
  async datasetSummaries(): Promise<SodaDatasetSummary[]> {
    const summaries: SodaDatasetSummary[] = [];
    const summary = (
      d: BsonDoc,
      id: number,
      collection: string,
      generation: SodaDatasetSummary['generation'],
      where: string,
    ): SodaDatasetSummary => ({
      id,
      collection,
      generation,
      begin: int64(d.begin_ts, `${where}.begin_ts`),
      end: 'end_ts' in d ? int64(d.end_ts, `${where}.end_ts`) : null,
      endReason: 'end_reason' in d ? string(d.end_reason, `${where}.end_reason`) : null,
      version: 'unreal_soda_ver' in d ? string(d.unreal_soda_ver, `${where}.unreal_soda_ver`) : null,
      actors: Array.isArray(d.actors) ? d.actors.length : Array.isArray(d.objects) ? d.objects.length : 0,
    });
    const names = await this.collections();
    const projection = {
      _id: 1,
      begin_ts: 1,
      end_ts: 1,
      end_reason: 1,
      unreal_soda_ver: 1,
      actors: 1,
      objects: 1,
    };
    if (names.includes('datasets'))
      for (const d of await this.db
        .collection<BsonDoc>('datasets')
        .find({}, { projection, promoteValues: false })
        .toArray()) {
        const where = `${this.db.databaseName}.datasets document ${describeId(d._id)}`;
        const id = int64(d._id, `${where}._id`);
        summaries.push(summary(d, id, datasetCollection(id), 'G1/G2', where));
      }
    for (const name of names) {
      const role = collectionRole(name);
      if (role?.role !== 'dataset' || !role.selfDescribed) continue;
      const d = await this.db
        .collection<BsonDoc>(name)
        .findOne({ batch: { $exists: false } }, { projection, promoteValues: false });
      if (d) summaries.push(summary(d, role.id, name, 'G3', `${this.db.databaseName}.${name} descriptor`));
    }
    return summaries.sort((a, b) => b.begin - a.begin || b.id - a.id);
  }

  async upsert(collection: 'scenarios' | 'vehicles', docs: BsonDoc[]): Promise<void> {
    const c = this.db.collection<BsonDoc>(collection);
    for (const doc of docs)
      await c.replaceOne({ _id: doc._id } as BsonDoc, doc, { upsert: true, writeConcern: DURABLE });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

function describeId(id: unknown): string {
  if (id instanceof Long) return id.toString();
  if (id && typeof id === 'object' && 'toHexString' in id)
    return (id as { toHexString(): string }).toHexString();
  return JSON.stringify(id);
}
