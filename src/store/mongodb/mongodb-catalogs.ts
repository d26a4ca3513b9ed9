import { Binary, Long, type Collection, type Db } from 'mongodb';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import type { JsonObject } from '../../model/json.js';
import type { CatalogPort } from '../../model/store-port.js';
import { bytes, DURABLE } from './mongodb-store.js';

interface ScenarioDoc {
  _id: Long;
  timestamp: Long;
  description: string;
  bin: Binary;
}
interface VehicleDoc {
  _id: string;
  timestamp: Long | number;
  'soda.sim': JsonObject;
}

/** SODA.Sim's own `scenarios` collection: `_id` int64, `timestamp` int64 us, `description`, `bin`. */
export function scenarioRows(db: Db): CatalogPort<Scenario, ScenarioSummary, bigint> {
  const scenarios = (): Collection<ScenarioDoc> => db.collection<ScenarioDoc>('scenarios');
  return {
    put: async (s) => {
      await scenarios().replaceOne(
        { _id: Long.fromBigInt(s.id) },
        { timestamp: Long.fromNumber(s.timestamp), description: s.description, bin: new Binary(s.bin) },
        { upsert: true, writeConcern: DURABLE },
      );
    },
    get: async (id) => {
      const doc = await scenarios().findOne({ _id: Long.fromBigInt(id) });
      return doc
        ? {
            id: BigInt(doc._id.toString()),
            timestamp: Number(doc.timestamp),
            description: doc.description,
            bin: bytes(doc.bin),
          }
        : undefined;
    },
    list: async () => {
      const docs = await scenarios()
        .aggregate<{ _id: Long; timestamp: Long; description: string; size: number }>([
          { $sort: { _id: 1 } },
          { $project: { timestamp: 1, description: 1, size: { $binarySize: '$bin' } } },
        ])
        .toArray();
      return docs.map((d) => ({
        id: BigInt(d._id.toString()),
        timestamp: Number(d.timestamp),
        description: d.description,
        size: d.size,
      }));
    },
    delete: async (id) =>
      (await scenarios().deleteOne({ _id: Long.fromBigInt(id) }, { writeConcern: DURABLE })).deletedCount > 0,
  };
}

/** SODA.Sim's `vehicles`: `_id` the name, `timestamp` int64 us, `soda.sim` the configuration. */
export function vehicleRows(db: Db): CatalogPort<VehicleConfig, VehicleConfig, string> {
  const vehicles = (): Collection<VehicleDoc> => db.collection<VehicleDoc>('vehicles');
  const fromDoc = (d: VehicleDoc): VehicleConfig => ({
    name: d._id,
    timestamp: Number(d.timestamp),
    doc: d['soda.sim'],
  });
  return {
    put: async (v) => {
      await vehicles().replaceOne(
        { _id: v.name },
        { timestamp: Long.fromNumber(v.timestamp), 'soda.sim': v.doc },
        { upsert: true, writeConcern: DURABLE },
      );
    },
    get: async (name) => {
      const doc = await vehicles().findOne({ _id: name });
      return doc ? fromDoc(doc) : undefined;
    },
    list: async () => (await vehicles().find().sort({ _id: 1 }).toArray()).map(fromDoc),
    delete: async (name) =>
      (await vehicles().deleteOne({ _id: name }, { writeConcern: DURABLE })).deletedCount > 0,
  };
}
