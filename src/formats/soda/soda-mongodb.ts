import { BSON, Long, MongoClient, MongoServerError, type Db, type WriteConcernSettings } from 'mongodb';
import { SimrecError } from '../../model/errors.js';
import { int64, type BsonDoc } from './bson-fields.js';
import { laneMarksFromBson } from './duplicate-keys.js';
import { datasetCollection } from './soda-layout.js';
import type { DatasetSinkWrite, SodaDocument, SodaSink, SodaSource } from './soda-source.js';

const DURABLE: WriteConcernSettings = { w: 'majority', journal: true };
const DUPLICATE_KEY = 11000;

/** The URL as it may be shown: without its password. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
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

  static async open(url: string): Promise<SodaDatabase> {
    const location = redactUrl(url);
    let client: MongoClient;
    try {
      // The driver waits 30 s for a server by default; a command line should say sooner that none is there.
      client = new MongoClient(
        url,
        /serverSelectionTimeoutMS=/i.test(url) ? {} : { serverSelectionTimeoutMS: 5000 },
      );
    } catch (error) {
      throw new SimrecError('invalid', `${location}: not a MongoDB URL: ${(error as Error).message}`);
    }
    const name = new URL(url.replace(/^mongodb\+srv:/, 'mongodb:')).pathname.replace(/^\//, '') || 'sodasim';
    try {
      await client.connect();
      // SODA.Sim's own connection check.
      await client.db(name).command({ ping: 1 });
    } catch (error) {
      await client.close().catch(() => {});
      throw new SimrecError('io', `${location}: cannot connect to MongoDB: ${(error as Error).message}`, {
        cause: error,
      });
    }
    return new SodaDatabase(location, client, client.db(name));
  }

  async collections(): Promise<string[]> {
    const list = await this.db.listCollections({}, { nameOnly: true }).toArray();
    return list.map((c) => c.name);
  }

  async *documents(collection: string, options: { laneMarks?: boolean } = {}): AsyncIterable<SodaDocument> {
    const cursor = this.db.collection(collection).find({}, { raw: true });
    for await (const raw of cursor as AsyncIterable<unknown>) {
      const bytes = raw as Uint8Array;
      const doc = BSON.deserialize(bytes, { promoteValues: false }) as BsonDoc;
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
        await datasets.insertOne(write.head, { writeConcern: DURABLE });
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
      await datasets.updateOne(
        { _id: Long.fromNumber(id) },
        { $set: write.tail() },
        { writeConcern: DURABLE },
      );
    } catch (error) {
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
