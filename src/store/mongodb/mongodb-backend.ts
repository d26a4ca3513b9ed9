import { createHash } from 'node:crypto';
import {
  Binary,
  Long,
  MongoClient,
  type Collection,
  type Db,
  type ObjectId,
  type WriteConcernSettings,
} from 'mongodb';
import type { Attachment, AttachmentInfo } from '../../model/attachment.js';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import { notFound, SimrecError } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { ActorInfo, ActorPresence, EndReason, RunInfo, RunSummary } from '../../model/run.js';
import type {
  CatalogPort,
  ListRunsArgs,
  ReadSamplesArgs,
  SampleBracket,
  StoreBackend,
  IntegrityReport,
  BracketArgs,
  ColumnAppend,
  ReadColumnsArgs,
  WriterIdentity,
} from '../../model/store-port.js';
import { type InferredField, type Sample, type StreamInfo, type StreamSchema } from '../../model/stream.js';
import { connectMongo } from '../../mongodb/connect-mongo.js';
import { samplesToColumns, type ColumnBatch } from '../../model/columns.js';
import {
  ChunkCache,
  firstRowOfBlock,
  firstAtOrAfter,
  lastAtOrBefore,
  openChunk,
  ownSampleAt,
  sliceBatch,
  type ChunkView,
} from '../common/chunk-reader.js';
import { scenarioCatalog, vehicleCatalog } from '../common/catalogs.js';
import { checkStoreIntegrity } from '../common/integrity-check.js';
import {
  readColumnsJoinedViaBatches,
  readSamplesViaColumns,
  sampleBracketViaMany,
} from '../common/sample-reads.js';
import {
  DEFAULT_TAIL_OPTIONS,
  encodeChunks,
  type ChunkToWrite,
  type StreamTailOptions,
} from '../common/stream-tail.js';

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
 */
const DURABLE: WriteConcernSettings = { w: 'majority', journal: true };

/** Attachments above this go to GridFS-style parts: a document may not exceed 16 MB. */
const ATTACHMENT_PART_BYTES = 8 * 1024 * 1024;

interface RunDoc {
  _id: number;
  begin: number;
  end: number | null;
  endReason: string | null;
  state: 'recording' | 'closed';
  simulator: { name: string; version?: string };
  description: string;
  metadata: JsonObject;
  writer: WriterIdentity | null;
}
interface ActorDoc extends Omit<ActorInfo, 'id'> {
  _id: { run: number; id: string };
  ord: number;
}
interface StreamDoc {
  _id: { run: number; id: string };
  schema: StreamSchema;
  extraFields: InferredField[];
  samples: number;
  begin: number | null;
  end: number | null;
}
interface ChunkDoc {
  _id?: ObjectId;
  run: number;
  stream: string;
  begin: number;
  end: number;
  count: number;
  data: Binary;
}
interface AttachmentDoc {
  _id: { run: number; name: string };
  mediaType: string;
  t?: number;
  metadata?: JsonObject;
  size: number;
  parts: number;
  data?: Binary;
}
interface AttachmentPartDoc {
  _id: { run: number; name: string; part: number };
  data: Binary;
}
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

const bytes = (b: Binary): Uint8Array => new Uint8Array(b.buffer.buffer, b.buffer.byteOffset, b.position);

export interface MongoStoreOptions {
  chunkSamples?: number;
  /** Bytes of decoded chunks kept in memory for queries (256 MiB by default; see ChunkCache). */
  cacheBytes?: number;
}

export class MongoBackend implements StoreBackend {
  readonly kind = 'mongodb';
  readonly location: string;
  readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;
  private readonly client: MongoClient;
  private readonly db: Db;
  private readonly cache: ChunkCache<string>;
  private readonly tailOptions: StreamTailOptions;
  private readonly schemas = new Map<string, StreamDoc>();

  private constructor(client: MongoClient, db: Db, location: string, options: MongoStoreOptions) {
    this.client = client;
    this.db = db;
    this.location = location;
    this.tailOptions = {
      ...DEFAULT_TAIL_OPTIONS,
      ...(options.chunkSamples ? { chunkSamples: options.chunkSamples } : {}),
    };
    this.cache = new ChunkCache(options.cacheBytes ? { wholeBytes: options.cacheBytes } : {});
    this.scenarios = scenarioCatalog(this.scenarioRows());
    this.vehicles = vehicleCatalog(this.vehicleRows());
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
      backend.chunks().createIndex({ run: 1, stream: 1, begin: 1 }),
      backend.actors().createIndex({ '_id.run': 1, ord: 1 }),
      backend.streams().createIndex({ '_id.run': 1 }),
      backend.runs().createIndex({ state: 1 }),
    ]);
    return backend;
  }

  private runs = (): Collection<RunDoc> => this.db.collection<RunDoc>('simrec_runs');
  private actors = (): Collection<ActorDoc> => this.db.collection<ActorDoc>('simrec_actors');
  private streams = (): Collection<StreamDoc> => this.db.collection<StreamDoc>('simrec_streams');
  private chunks = (): Collection<ChunkDoc> => this.db.collection<ChunkDoc>('simrec_chunks');
  private attachments = (): Collection<AttachmentDoc> =>
    this.db.collection<AttachmentDoc>('simrec_attachments');
  private attachmentParts = (): Collection<AttachmentPartDoc> =>
    this.db.collection<AttachmentPartDoc>('simrec_attachment_parts');

  // ---- runs ----------------------------------------------------------------------------------------

  async createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo> {
    const counter = await this.db
      .collection<{ _id: string; seq: number }>('simrec_counters')
      .findOneAndUpdate(
        { _id: 'runs' },
        { $inc: { seq: 1 } },
        { upsert: true, returnDocument: 'after', writeConcern: DURABLE },
      );
    const id = counter!.seq;
    await this.runs().insertOne(
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
    const doc = await this.runs().findOne({ _id: id });
    return doc ? runFromDoc(doc) : undefined;
  }

  async listRuns(args: ListRunsArgs = {}): Promise<RunSummary[]> {
    const cursor = this.runs().find({}, { sort: { _id: args.newestFirst === false ? 1 : -1 } });
    if (args.limit !== undefined) cursor.limit(args.limit);
    const runs = await cursor.toArray();
    const ids = runs.map((r) => r._id);
    const [actorCounts, streamCounts] = await Promise.all([
      this.actors()
        .aggregate<{ _id: number; n: number }>([
          { $match: { '_id.run': { $in: ids } } },
          { $group: { _id: '$_id.run', n: { $sum: 1 } } },
        ])
        .toArray(),
      this.streams()
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
    const doc = await this.runs().findOneAndUpdate(
      { _id: id, state: 'recording' },
      { $set: { end: end.end, endReason: end.endReason, state: 'closed', writer: null } },
      { returnDocument: 'after', writeConcern: DURABLE },
    );
    if (!doc) throw await this.runStateError(id);
    return runFromDoc(doc);
  }

  async deleteRun(id: number): Promise<boolean> {
    const deleted = (await this.runs().deleteOne({ _id: id }, { writeConcern: DURABLE })).deletedCount > 0;
    // The run document goes first: a crash half way leaves orphans that nothing lists, not a half run.
    await Promise.all([
      this.actors().deleteMany({ '_id.run': id }),
      this.streams().deleteMany({ '_id.run': id }),
      this.chunks().deleteMany({ run: id }),
      this.attachments().deleteMany({ '_id.run': id }),
      this.attachmentParts().deleteMany({ '_id.run': id }),
    ]);
    for (const key of this.schemas.keys()) if (key.startsWith(`${id}\0`)) this.schemas.delete(key);
    return deleted;
  }

  async runVersions(runs: readonly number[]): Promise<Map<number, string>> {
    const versions = new Map<number, string>();
    for (const run of runs) {
      const doc = await this.runs().findOne({ _id: run }, { projection: { writer: 0 } });
      if (!doc) continue;
      // A chunk replaced or removed changes the count, the samples or the largest id (ObjectIds grow
      // with their creation time, so a chunk written later has a larger one).
      const [chunks] = await this.chunks()
        .aggregate<{ n: number; last: ObjectId | null; samples: number }>([
          { $match: { run } },
          { $group: { _id: null, n: { $sum: 1 }, last: { $max: '$_id' }, samples: { $sum: '$count' } } },
        ])
        .toArray();
      const hash = createHash('sha256').update(JSON.stringify(doc));
      hash.update(JSON.stringify(chunks ?? null));
      for (const actor of await this.actors().find({ '_id.run': run }).sort({ ord: 1 }).toArray())
        hash.update(JSON.stringify(actor));
      for (const stream of await this.streams().find({ '_id.run': run }).sort({ _id: 1 }).toArray())
        hash.update(JSON.stringify(stream));
      versions.set(run, hash.digest('base64url').slice(0, 22));
    }
    return versions;
  }

  async closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]> {
    const closed: number[] = [];
    for (const run of await this.runs().find({ state: 'recording' }).toArray()) {
      if (run.writer && isAlive(run.writer)) continue;
      // Counters may lag the chunks if the writer died between the two writes: recount from chunks.
      const stats = await this.chunks()
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
        await this.streams().updateOne(
          { _id: { run: run._id, id: s._id } },
          { $set: { samples: s.samples, begin: s.begin, end: s.end } },
        );
      const end = stats.reduce((max, s) => Math.max(max, s.end), run.begin);
      const result = await this.runs().updateOne(
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
    await this.requireRun(run);
    const last = await this.actors().find({ '_id.run': run }).sort({ ord: -1 }).limit(1).next();
    let ord = (last?.ord ?? -1) + 1;
    if (!actors.length) return;
    await this.actors().bulkWrite(
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
    await this.requireRun(run);
    if (!presence.length) return;
    const result = await this.actors().bulkWrite(
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

  async listActors(run: number): Promise<ActorInfo[]> {
    const docs = await this.actors().find({ '_id.run': run }).sort({ ord: 1 }).toArray();
    return docs.map(({ _id, ord: _ord, ...rest }) => ({ id: _id.id, ...rest }));
  }

  async putStreams(run: number, streams: StreamSchema[]): Promise<void> {
    await this.requireRun(run);
    if (!streams.length) return;
    await this.streams().bulkWrite(
      streams.map((schema) => ({
        updateOne: {
          filter: { _id: { run, id: schema.id } },
          update: { $set: { schema }, $setOnInsert: { extraFields: [], samples: 0, begin: null, end: null } },
          upsert: true,
        },
      })),
      { writeConcern: DURABLE },
    );
    for (const s of streams) this.schemas.delete(`${run}\0${s.id}`);
  }

  async listStreams(run: number): Promise<StreamInfo[]> {
    const docs = await this.streams().find({ '_id.run': run }).toArray();
    return docs.map((d) => ({
      ...d.schema,
      samples: d.samples,
      begin: d.begin,
      end: d.end,
      extraFields: d.extraFields,
    }));
  }

  // ---- samples -------------------------------------------------------------------------------------

  /**
   * Chunks first, then the stream's counters. Without a replica-set transaction the two writes are
   * separate; a writer dying between them leaves counters behind the chunks, which
   * closeAbandonedRuns recounts. The chunks themselves are never partial: one insertMany, ordered.
   * Each append is its stream's chunks as they are (a document per commit and stream, in the chunk
   * format of every backend); there are no tails to seal, the server being a round trip away.
   */
  async appendColumns(run: number, appends: ColumnAppend[], presence?: ActorPresence[]): Promise<void> {
    const state = await this.runs().findOne({ _id: run }, { projection: { state: 1 } });
    if (!state || state.state !== 'recording') throw await this.runStateError(run);
    const docs: ChunkDoc[] = [];
    const updates: { id: string; count: number; begin: number; end: number; extra: InferredField[] }[] = [];
    for (const { stream, batch } of appends) {
      const n = batch.t.length;
      if (!n) continue;
      const entry = await this.stream(run, stream);
      const { chunks, extras } = encodeChunks(entry.schema.fields, batch, this.tailOptions);
      for (const c of chunks) docs.push(chunkDoc(run, stream, c));
      entry.extraFields = mergeExtras(entry.extraFields, extras);
      updates.push({
        id: stream,
        count: n,
        begin: batch.t[0]!,
        end: batch.t[n - 1]!,
        extra: entry.extraFields,
      });
    }
    if (!docs.length) return;
    try {
      await this.chunks().insertMany(docs, { ordered: true, writeConcern: DURABLE });
      await this.streams().bulkWrite(
        updates.map((u) => ({
          updateOne: {
            filter: { _id: { run, id: u.id } },
            update: [
              {
                $set: {
                  samples: { $add: ['$samples', u.count] },
                  begin: { $ifNull: ['$begin', u.begin] },
                  end: u.end,
                  extraFields: u.extra,
                },
              },
            ],
          },
        })),
        { writeConcern: DURABLE },
      );
    } catch (error) {
      throw new SimrecError('io', `${this.location}: appending to run ${run}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    // After the samples (no transaction spans both without a replica set): a crash between the two
    // leaves samples with the presence before them, which scenes judge by the staleness rule.
    if (presence?.length) await this.putPresence(run, presence);
  }

  async putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void> {
    await this.requireRun(run);
    const { chunks, extras } = encodeChunks(
      schema.fields,
      samplesToColumns(samples, schema.fields),
      this.tailOptions,
    );
    const docs = chunks.map((c) => chunkDoc(run, schema.id, c));
    // Replaced in the order that never shows a mixture: old chunks out, new in, then the counters.
    await this.chunks().deleteMany({ run, stream: schema.id }, { writeConcern: DURABLE });
    if (docs.length) await this.chunks().insertMany(docs, { ordered: true, writeConcern: DURABLE });
    await this.streams().replaceOne(
      { _id: { run, id: schema.id } },
      {
        schema,
        extraFields: extras,
        samples: samples.length,
        begin: samples[0]?.t ?? null,
        end: samples.at(-1)?.t ?? null,
      },
      { upsert: true, writeConcern: DURABLE },
    );
    this.schemas.delete(`${run}\0${schema.id}`);
  }

  async *readColumns(args: ReadColumnsArgs): AsyncIterable<ColumnBatch> {
    await this.stream(args.run, args.stream);
    const from = args.from ?? Number.MIN_SAFE_INTEGER;
    const to = args.to ?? Number.MAX_SAFE_INTEGER;
    const fields = args.fields ? new Set<string>(args.fields) : undefined;
    const first = await this.chunks()
      .find({ run: args.run, stream: args.stream, begin: { $lte: from } }, { projection: { begin: 1 } })
      .sort({ begin: -1 })
      .limit(1)
      .next();
    let lowest = first?.begin ?? from;
    // A chunk that begins at `from` may follow one that ends there (time stood still across their
    // boundary); any before that one ended before `from`.
    if (first && first.begin === from) {
      const earlier = await this.chunks()
        .find(
          { run: args.run, stream: args.stream, begin: { $lt: from } },
          { projection: { begin: 1, end: 1 } },
        )
        .sort({ begin: -1 })
        .limit(1)
        .next();
      if (earlier && earlier.end >= from) lowest = earlier.begin;
    }
    const cursor = this.chunks()
      .find({ run: args.run, stream: args.stream, begin: { $gte: lowest, $lte: to } })
      .sort({ begin: 1, _id: 1 });
    for await (const doc of cursor) {
      args.signal?.throwIfAborted();
      if (doc.end < from) continue;
      const view = this.view(doc);
      const batch = this.cache.whole(String(doc._id), view, fields);
      const lo = firstAtOrAfter(batch.t, from);
      const hi = lastAtOrBefore(batch.t, to) + 1;
      if (hi > lo) yield sliceBatch(batch, view.columns, lo, hi);
    }
  }

  readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch> {
    return readColumnsJoinedViaBatches(this, args);
  }

  readSamples(args: ReadSamplesArgs): AsyncIterable<Sample[]> {
    return readSamplesViaColumns(this, args);
  }

  async bracketMany(run: number, args: BracketArgs): Promise<SampleBracket[]> {
    const fields = args.fields ? new Set<string>(args.fields) : undefined;
    const brackets = await Promise.all(
      args.streams.map((stream: string) => this.bracket(run, stream, args.t, fields, args.after !== false)),
    );
    return brackets;
  }

  sampleBracket(run: number, stream: string, t: number): Promise<SampleBracket> {
    return sampleBracketViaMany(this, run, stream, t);
  }

  private async bracket(
    run: number,
    stream: string,
    t: number,
    fields: ReadonlySet<string> | undefined,
    wantAfter: boolean,
  ): Promise<SampleBracket> {
    await this.stream(run, stream);
    const bracket: SampleBracket = {};
    const decode = (doc: ChunkDoc, view: ChunkView, block: number): ColumnBatch =>
      this.cache.block(String(doc._id), view, block, fields, run, stream);
    const before = await this.chunks()
      .find({ run, stream, begin: { $lte: t } })
      .sort({ begin: -1, _id: -1 })
      .limit(1)
      .next();
    if (before) {
      const view = this.view(before);
      const b = view.blockAtOrBefore(t);
      const batch = decode(before, view, b);
      const row = lastAtOrBefore(batch.t, t);
      bracket.before = ownSampleAt(batch, view.columns, row);
      if (!wantAfter) return bracket;
      if (row + 1 < batch.t.length) {
        bracket.after = ownSampleAt(batch, view.columns, row + 1);
        return bracket;
      }
      // The next block, unless what was decoded is the whole chunk already.
      if (batch.t.length < view.n && b + 1 < view.blocks.length) {
        const next = decode(before, view, b + 1);
        bracket.after = ownSampleAt(next, view.columns, firstRowOfBlock(view, next, b + 1));
        return bracket;
      }
    }
    if (!wantAfter) return bracket;
    const after = await this.chunks()
      .find({ run, stream, begin: { $gt: t } })
      .sort({ begin: 1, _id: 1 })
      .limit(1)
      .next();
    if (after) {
      const view = this.view(after);
      bracket.after = ownSampleAt(decode(after, view, 0), view.columns, 0);
    }
    return bracket;
  }

  // ---- attachments ---------------------------------------------------------------------------------

  async putAttachment(run: number, a: Attachment): Promise<void> {
    await this.requireRun(run);
    const key = { run, name: a.name };
    const parts = Math.ceil(a.data.byteLength / ATTACHMENT_PART_BYTES);
    // Parts first, the document that names them last: a reader never finds a document without its parts.
    await this.attachmentParts().deleteMany({ '_id.run': run, '_id.name': a.name });
    if (parts > 1)
      for (let p = 0; p < parts; p++)
        await this.attachmentParts().insertOne(
          {
            _id: { ...key, part: p },
            data: new Binary(a.data.subarray(p * ATTACHMENT_PART_BYTES, (p + 1) * ATTACHMENT_PART_BYTES)),
          },
          { writeConcern: DURABLE },
        );
    const doc: AttachmentDoc = {
      _id: key,
      mediaType: a.mediaType,
      size: a.data.byteLength,
      parts: parts > 1 ? parts : 0,
    };
    if (a.t !== undefined) doc.t = a.t;
    if (a.metadata !== undefined) doc.metadata = a.metadata;
    if (parts <= 1) doc.data = new Binary(a.data);
    await this.attachments().replaceOne({ _id: key }, doc, { upsert: true, writeConcern: DURABLE });
  }

  async getAttachment(run: number, name: string): Promise<Attachment | undefined> {
    const doc = await this.attachments().findOne({ _id: { run, name } });
    if (!doc) return undefined;
    let data: Uint8Array;
    if (doc.parts > 0) {
      const parts = await this.attachmentParts()
        .find({ '_id.run': run, '_id.name': name })
        .sort({ '_id.part': 1 })
        .toArray();
      data = new Uint8Array(doc.size);
      let offset = 0;
      for (const p of parts) {
        const b = bytes(p.data);
        data.set(b, offset);
        offset += b.length;
      }
    } else data = doc.data ? bytes(doc.data) : new Uint8Array(0);
    return { ...attachmentInfo(doc), data };
  }

  async listAttachments(run: number): Promise<AttachmentInfo[]> {
    const docs = await this.attachments()
      .find({ '_id.run': run }, { projection: { data: 0 } })
      .sort({ '_id.name': 1 })
      .toArray();
    return docs.map((d) => ({ ...attachmentInfo(d), size: d.size }));
  }

  async checkIntegrity(options: { repair?: boolean } = {}): Promise<IntegrityReport> {
    const chunks = this.chunks();
    return checkStoreIntegrity<StreamDoc['_id'], ObjectId>(
      {
        // MongoDB checks its own storage (validate, repair) outside a client's reach.
        databaseProblems: async () => [],
        streams: async () =>
          (await this.streams().find().toArray()).map((s) => ({
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
            yield { id: doc._id!, begin: doc.begin, end: doc.end, count: doc.count, data: bytes(doc.data) };
        },
        runCount: () => this.runs().countDocuments(),
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
          await this.streams().updateOne({ _id: stream.key }, { $set: c }, { writeConcern: DURABLE });
        },
        forgetCaches: () => {
          this.schemas.clear();
          this.cache.clear();
        },
      },
      options,
    );
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  // ---- internals -----------------------------------------------------------------------------------

  private view(doc: ChunkDoc): ChunkView {
    const key = String(doc._id);
    return this.cache.chunk(key, () => openChunk(bytes(doc.data), `${this.location} chunk ${key}`))!;
  }

  private async requireRun(run: number): Promise<void> {
    if (!(await this.runs().findOne({ _id: run }, { projection: { _id: 1 } })))
      throw notFound(`run ${run} does not exist in ${this.location}`);
  }

  private async runStateError(run: number): Promise<SimrecError> {
    const doc = await this.runs().findOne({ _id: run }, { projection: { state: 1 } });
    return doc
      ? new SimrecError('conflict', `run ${run} is closed; it cannot be changed`)
      : notFound(`run ${run} does not exist in ${this.location}`);
  }

  private async stream(run: number, id: string): Promise<StreamDoc> {
    const key = `${run}\0${id}`;
    let entry = this.schemas.get(key);
    if (!entry) {
      const doc = await this.streams().findOne({ _id: { run, id } });
      if (!doc) {
        await this.requireRun(run);
        throw notFound(`run ${run} has no stream ${JSON.stringify(id)}`);
      }
      entry = doc;
      this.schemas.set(key, entry);
    }
    return entry;
  }

  /** SODA.Sim's own `scenarios` collection: `_id` int64, `timestamp` int64 us, `description`, `bin`. */
  private scenarioRows(): CatalogPort<Scenario, ScenarioSummary, bigint> {
    const scenarios = (): Collection<ScenarioDoc> => this.db.collection<ScenarioDoc>('scenarios');
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
        (await scenarios().deleteOne({ _id: Long.fromBigInt(id) }, { writeConcern: DURABLE })).deletedCount >
        0,
    };
  }

  /** SODA.Sim's `vehicles`: `_id` the name, `timestamp` int64 us, `soda.sim` the configuration. */
  private vehicleRows(): CatalogPort<VehicleConfig, VehicleConfig, string> {
    const vehicles = (): Collection<VehicleDoc> => this.db.collection<VehicleDoc>('vehicles');
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

function attachmentInfo(doc: AttachmentDoc): Omit<AttachmentInfo, 'size'> {
  const info: Omit<AttachmentInfo, 'size'> = { name: doc._id.name, mediaType: doc.mediaType };
  if (doc.t !== undefined) info.t = doc.t;
  if (doc.metadata !== undefined) info.metadata = doc.metadata;
  return info;
}

function chunkDoc(run: number, stream: string, c: ChunkToWrite): ChunkDoc {
  return { run, stream, begin: c.begin, end: c.end, count: c.count, data: new Binary(c.data) };
}

/** Undeclared fields known so far and those of a new chunk; a field seen with two types is json. */
function mergeExtras(known: InferredField[], seen: InferredField[]): InferredField[] {
  const out = known.map((f) => ({ ...f }));
  for (const f of seen) {
    const k = out.find((o) => o.name === f.name);
    if (!k) out.push({ ...f });
    else if (k.type !== f.type) k.type = 'json';
  }
  return out;
}
