import { createHash } from 'node:crypto';
import type { ObjectId } from 'mongodb';
import { notFound } from '../../model/errors.js';
import type { ActorInfo, ActorPresence, EndReason, RunInfo, RunSummary } from '../../model/run.js';
import type { ListRunsArgs, WriterIdentity } from '../../model/store-port.js';
import type { StreamInfo, StreamSchema } from '../../model/stream.js';
import { DURABLE, type MongoStore, type RunDoc } from './mongodb-store.js';

/** MongoBackend's runs, actors and streams: a document each, run ids from an atomic counter. */
export class MongoRuns {
  private readonly store: MongoStore;

  constructor(store: MongoStore) {
    this.store = store;
  }

  // ---- runs ----------------------------------------------------------------------------------------

  async createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo> {
    const counter = await this.store.db
      .collection<{ _id: string; seq: number }>('simrec_counters')
      .findOneAndUpdate(
        { _id: 'runs' },
        { $inc: { seq: 1 } },
        { upsert: true, returnDocument: 'after', writeConcern: DURABLE },
      );
    const id = counter!.seq;
    await this.store.runs().insertOne(
      {
        _id: id,
        begin: run.begin,
        end: null,
        endReason: null,
        state: 'recording',
        simulator: run.simulator,
        description: run.description,
        metadata: run.metadata,
        writer,
      },
      { writeConcern: DURABLE },
    );
    return { ...run, id };
  }

  async getRun(id: number): Promise<RunInfo | undefined> {
    const doc = await this.store.runs().findOne({ _id: id });
    return doc ? runFromDoc(doc) : undefined;
  }

  async listRuns(args: ListRunsArgs = {}): Promise<RunSummary[]> {
    const cursor = this.store.runs().find({}, { sort: { _id: args.newestFirst === false ? 1 : -1 } });
    if (args.limit !== undefined) cursor.limit(args.limit);
    const runs = await cursor.toArray();
    const ids = runs.map((r) => r._id);
    const [actorCounts, streamCounts] = await Promise.all([
      this.store
        .actors()
        .aggregate<{ _id: number; n: number }>([
          { $match: { '_id.run': { $in: ids } } },
          { $group: { _id: '$_id.run', n: { $sum: 1 } } },
        ])
        .toArray(),
      this.store
        .streams()
        .aggregate<{ _id: number; n: number; samples: number }>([
          { $match: { '_id.run': { $in: ids } } },
          { $group: { _id: '$_id.run', n: { $sum: 1 }, samples: { $sum: '$samples' } } },
        ])
        .toArray(),
    ]);
    const actorsOf = new Map(actorCounts.map((a) => [a._id, a.n]));
    const streamsOf = new Map(streamCounts.map((s) => [s._id, s]));
    return runs.map((r) => ({
      ...runFromDoc(r),
      actorCount: actorsOf.get(r._id) ?? 0,
      streamCount: streamsOf.get(r._id)?.n ?? 0,
      samples: streamsOf.get(r._id)?.samples ?? 0,
    }));
  }

  async endRun(id: number, end: { end: number; endReason: EndReason }): Promise<RunInfo> {
    const doc = await this.store
      .runs()
      .findOneAndUpdate(
        { _id: id, state: 'recording' },
        { $set: { end: end.end, endReason: end.endReason, state: 'closed', writer: null } },
        { returnDocument: 'after', writeConcern: DURABLE },
      );
    if (!doc) throw await this.store.runStateError(id);
    return runFromDoc(doc);
  }

  async deleteRun(id: number): Promise<boolean> {
    const deleted =
      (await this.store.runs().deleteOne({ _id: id }, { writeConcern: DURABLE })).deletedCount > 0;
    // The run document goes first: a crash half way leaves orphans that nothing lists, not a half run.
    await Promise.all([
      this.store.actors().deleteMany({ '_id.run': id }),
      this.store.streams().deleteMany({ '_id.run': id }),
      this.store.chunks().deleteMany({ run: id }),
      this.store.attachments().deleteMany({ '_id.run': id }),
      this.store.attachmentParts().deleteMany({ '_id.run': id }),
    ]);
    for (const key of this.store.schemas.keys())
      if (key.startsWith(`${id}\0`)) this.store.schemas.delete(key);
    return deleted;
  }

  async runVersions(runs: readonly number[]): Promise<Map<number, string>> {
    const versions = new Map<number, string>();
    for (const run of runs) {
      const doc = await this.store.runs().findOne({ _id: run }, { projection: { writer: 0 } });
      if (!doc) continue;
      // A chunk replaced or removed changes the count, the samples or the largest id (ObjectIds grow
      // with their creation time, so a chunk written later has a larger one).
      const [chunks] = await this.store
        .chunks()
        .aggregate<{ n: number; last: ObjectId | null; samples: number }>([
          { $match: { run } },
          { $group: { _id: null, n: { $sum: 1 }, last: { $max: '$_id' }, samples: { $sum: '$count' } } },
        ])
        .toArray();
      const hash = createHash('sha256').update(JSON.stringify(doc));
      hash.update(JSON.stringify(chunks ?? null));
      for (const actor of await this.store.actors().find({ '_id.run': run }).sort({ ord: 1 }).toArray())
        hash.update(JSON.stringify(actor));
      for (const stream of await this.store.streams().find({ '_id.run': run }).sort({ _id: 1 }).toArray())
        hash.update(JSON.stringify(stream));
      versions.set(run, hash.digest('base64url').slice(0, 22));
    }
    return versions;
  }

  async streamVersions(run: number): Promise<Map<string, string>> {
    // As runVersions: ObjectIds grow with their creation time, so a chunk written later raises the
    // largest; one removed lowers the count.
    const groups = await this.store
      .chunks()
      .aggregate<{ _id: string; n: number; last: ObjectId }>([
        { $match: { run } },
        { $group: { _id: '$stream', n: { $sum: 1 }, last: { $max: '$_id' } } },
      ])
      .toArray();
    const versions = new Map<string, string>();
    for (const stream of await this.store.streams().find({ '_id.run': run }).toArray())
      versions.set(stream._id.id, '0:');
    for (const g of groups) versions.set(g._id, `${g.n}:${g.last.toHexString()}`);
    return versions;
  }

  async closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]> {
    const closed: number[] = [];
    for (const run of await this.store.runs().find({ state: 'recording' }).toArray()) {
      if (run.writer && isAlive(run.writer)) continue;
      // Counters may lag the chunks if the writer died between the two writes: recount from chunks.
      const stats = await this.store
        .chunks()
        .aggregate<{ _id: string; samples: number; begin: number; end: number }>([
          { $match: { run: run._id } },
          {
            $group: {
              _id: '$stream',
              samples: { $sum: '$count' },
              begin: { $min: '$begin' },
              end: { $max: '$end' },
            },
          },
        ])
        .toArray();
      for (const s of stats)
        await this.store
          .streams()
          .updateOne(
            { _id: { run: run._id, id: s._id } },
            { $set: { samples: s.samples, begin: s.begin, end: s.end } },
          );
      const end = stats.reduce((max, s) => Math.max(max, s.end), run.begin);
      const result = await this.store
        .runs()
        .updateOne(
          { _id: run._id, state: 'recording' },
          { $set: { end, endReason: 'interrupted', state: 'closed', writer: null } },
          { writeConcern: DURABLE },
        );
      if (result.modifiedCount) closed.push(run._id);
    }
    return closed;
  }

  // ---- actors and streams --------------------------------------------------------------------------

  async putActors(run: number, actors: ActorInfo[]): Promise<void> {
    await this.store.requireRun(run);
    const last = await this.store.actors().find({ '_id.run': run }).sort({ ord: -1 }).limit(1).next();
    let ord = (last?.ord ?? -1) + 1;
    if (!actors.length) return;
    await this.store.actors().bulkWrite(
      // presence is putPresence's: a re-declaration keeps it.
      actors.map(({ id, presence: _presence, ...rest }) => ({
        updateOne: {
          filter: { _id: { run, id } },
          update: { $set: rest, $setOnInsert: { ord: ord++ } },
          upsert: true,
        },
      })),
      { writeConcern: DURABLE },
    );
  }

  async putPresence(run: number, presence: ActorPresence[]): Promise<void> {
    await this.store.requireRun(run);
    if (!presence.length) return;
    const result = await this.store.actors().bulkWrite(
      presence.map((p) => ({
        updateOne: { filter: { _id: { run, id: p.actor } }, update: { $set: { presence: p.intervals } } },
      })),
      { writeConcern: DURABLE },
    );
    if (result.matchedCount < presence.length) {
      const known = new Set((await this.listActors(run)).map((a) => a.id));
      const missing = presence.find((p) => !known.has(p.actor));
      if (missing) throw notFound(`run ${run} has no actor ${JSON.stringify(missing.actor)}`);
    }
  }

  /** Fresh from the database at every call: a shared list (ListOptions) is a copy too. */
  async listActors(run: number): Promise<ActorInfo[]> {
    const docs = await this.store.actors().find({ '_id.run': run }).sort({ ord: 1 }).toArray();
    return docs.map(({ _id, ord: _ord, ...rest }) => ({ id: _id.id, ...rest }));
  }

  async putStreams(run: number, streams: StreamSchema[]): Promise<void> {
    await this.store.requireRun(run);
    if (!streams.length) return;
    await this.store.streams().bulkWrite(
      streams.map((schema) => ({
        updateOne: {
          filter: { _id: { run, id: schema.id } },
          update: { $set: { schema }, $setOnInsert: { extraFields: [], samples: 0, begin: null, end: null } },
          upsert: true,
        },
      })),
      { writeConcern: DURABLE },
    );
    for (const s of streams) this.store.schemas.delete(`${run}\0${s.id}`);
  }

  async listStreams(run: number): Promise<StreamInfo[]> {
    const docs = await this.store.streams().find({ '_id.run': run }).toArray();
    return docs.map((d) => ({
      ...d.schema,
      samples: d.samples,
      begin: d.begin,
      end: d.end,
      extraFields: d.extraFields,
    }));
  }
}

function runFromDoc(doc: RunDoc): RunInfo {
  return {
    id: doc._id,
    begin: doc.begin,
    end: doc.end,
    endReason: doc.endReason,
    state: doc.state,
    simulator: doc.simulator,
    description: doc.description,
    metadata: doc.metadata,
  };
}
