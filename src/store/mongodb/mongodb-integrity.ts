import { Binary, type ObjectId } from 'mongodb';
import type { IntegrityReport } from '../../model/store-port.js';
import { checkStoreIntegrity } from '../common/integrity-check.js';
import { bytes, DURABLE, type MongoStore, type StreamDoc } from './mongodb-store.js';

/**
 * `simrec check` on a MongoDB store: the rules every backend shares (integrity-check.ts) over what its
 * collections hold, repairs carried out on them.
 */
export async function checkMongoIntegrity(
  store: MongoStore,
  options: { repair?: boolean },
): Promise<IntegrityReport> {
  const chunks = store.chunks();
  return checkStoreIntegrity<StreamDoc['_id'], ObjectId>(
    {
      // MongoDB checks its own storage (validate, repair) outside a client's reach.
      databaseProblems: async () => [],
      streams: async () =>
        (await store.streams().find().toArray()).map((s) => ({
          key: s._id,
          run: s._id.run,
          id: s._id.id,
          samples: s.samples,
          begin: s.begin,
          end: s.end,
        })),
      chunks: async function* (this: void, stream) {
        for await (const doc of chunks
          .find({ run: stream.run, stream: stream.id })
          .sort({ begin: 1, _id: 1 }))
          yield { id: doc._id, begin: doc.begin, end: doc.end, count: doc.count, data: bytes(doc.data) };
      },
      runCount: () => store.runs().countDocuments(),
      replaceChunk: async (id, chunk) => {
        await chunks.updateOne(
          { _id: id },
          {
            $set: { data: new Binary(chunk.data), count: chunk.count, begin: chunk.begin, end: chunk.end },
          },
          { writeConcern: DURABLE },
        );
      },
      deleteChunk: async (id) => {
        await chunks.deleteOne({ _id: id }, { writeConcern: DURABLE });
      },
      setCounters: async (stream, c) => {
        await store.streams().updateOne({ _id: stream.key }, { $set: c }, { writeConcern: DURABLE });
      },
      forgetCaches: () => {
        store.schemas.clear();
        store.cache.clear();
      },
    },
    options,
  );
}
