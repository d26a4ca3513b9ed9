import { Binary } from 'mongodb';
import { samplesToColumns, type ColumnBatch } from '../../model/columns.js';
import { SimrecError } from '../../model/errors.js';
import type { ActorPresence } from '../../model/run.js';
import type { BracketArgs, ColumnAppend, ReadColumnsArgs, SampleBracket } from '../../model/store-port.js';
import type { InferredField, Sample, StreamSchema } from '../../model/stream.js';
import {
  firstRowOfBlock,
  firstAtOrAfter,
  lastAtOrBefore,
  LookedRow,
  ownSampleAt,
  sliceBatch,
  type ChunkView,
} from '../common/chunk-reader.js';
import { encodeChunks, type ChunkToWrite } from '../common/stream-tail.js';
import type { MongoRuns } from './mongodb-runs.js';
import { DURABLE, type ChunkDoc, type MongoStore } from './mongodb-store.js';

/**
 * MongoBackend's samples: each append its streams' chunks as documents, derived streams replaced whole,
 * reads by time range over the chunks' index and the cache of opened chunks and decoded blocks.
 */
export class MongoSamples {
  private readonly store: MongoStore;
  private readonly runs: MongoRuns;

  constructor(store: MongoStore, runs: MongoRuns) {
    this.store = store;
    this.runs = runs;
  }

  /**
   * Chunks first, then the stream's counters. Without a replica-set transaction the two writes are
   * separate; a writer dying between them leaves counters behind the chunks, which
   * closeAbandonedRuns recounts. The chunks themselves are never partial: one insertMany, ordered.
   * Each append is its stream's chunks as they are (a document per commit and stream, in the chunk
   * format of every backend); there are no tails to seal, the server being a round trip away.
   */
  async appendColumns(run: number, appends: ColumnAppend[], presence?: ActorPresence[]): Promise<void> {
    const state = await this.store.runs().findOne({ _id: run }, { projection: { state: 1 } });
    if (!state || state.state !== 'recording') throw await this.store.runStateError(run);
    const docs: ChunkDoc[] = [];
    const updates: { id: string; count: number; begin: number; end: number; extra: InferredField[] }[] = [];
    for (const { stream, batch } of appends) {
      const n = batch.t.length;
      if (!n) continue;
      const entry = await this.store.stream(run, stream);
      const { chunks, extras } = encodeChunks(entry.schema.fields, batch, this.store.tailOptions);
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
      await this.store.chunks().insertMany(docs, { ordered: true, writeConcern: DURABLE });
      await this.store.streams().bulkWrite(
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
      throw new SimrecError(
        'io',
        `${this.store.location}: appending to run ${run}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    // After the samples (no transaction spans both without a replica set): a crash between the two
    // leaves samples with the presence before them, which scenes judge by the staleness rule.
    if (presence?.length) await this.runs.putPresence(run, presence);
  }

  async putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void> {
    await this.store.requireRun(run);
    const { chunks, extras } = encodeChunks(
      schema.fields,
      samplesToColumns(samples, schema.fields),
      this.store.tailOptions,
    );
    const docs = chunks.map((c) => chunkDoc(run, schema.id, c));
    // Replaced in the order that never shows a mixture: old chunks out, new in, then the counters.
    await this.store.chunks().deleteMany({ run, stream: schema.id }, { writeConcern: DURABLE });
    if (docs.length) await this.store.chunks().insertMany(docs, { ordered: true, writeConcern: DURABLE });
    await this.store.streams().replaceOne(
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
    this.store.schemas.delete(`${run}\0${schema.id}`);
  }

  async *readColumns(args: ReadColumnsArgs): AsyncIterable<ColumnBatch> {
    await this.store.stream(args.run, args.stream);
    const from = args.from ?? Number.MIN_SAFE_INTEGER;
    const to = args.to ?? Number.MAX_SAFE_INTEGER;
    const fields = args.fields ? new Set<string>(args.fields) : undefined;
    const first = await this.store
      .chunks()
      .find({ run: args.run, stream: args.stream, begin: { $lte: from } }, { projection: { begin: 1 } })
      .sort({ begin: -1 })
      .limit(1)
      .next();
    let lowest = first?.begin ?? from;
    // A chunk that begins at `from` may follow one that ends there (time stood still across their
    // boundary); any before that one ended before `from`.
    if (first && first.begin === from) {
      const earlier = await this.store
        .chunks()
        .find(
          { run: args.run, stream: args.stream, begin: { $lt: from } },
          { projection: { begin: 1, end: 1 } },
        )
        .sort({ begin: -1 })
        .limit(1)
        .next();
      if (earlier && earlier.end >= from) lowest = earlier.begin;
    }
    const cursor = this.store
      .chunks()
      .find({ run: args.run, stream: args.stream, begin: { $gte: lowest, $lte: to } })
      .sort({ begin: 1, _id: 1 });
    for await (const doc of cursor) {
      args.signal?.throwIfAborted();
      if (doc.end < from) continue;
      const view = this.store.view(doc);
      for (const batch of this.store.cache.covering(String(doc._id), view, from, to, fields)) {
        const lo = firstAtOrAfter(batch.t, from);
        const hi = lastAtOrBefore(batch.t, to) + 1;
        if (hi > lo) yield sliceBatch(batch, view.columns, lo, hi);
      }
    }
  }

  async bracketMany(run: number, args: BracketArgs): Promise<SampleBracket[]> {
    const fields = args.fields ? new Set<string>(args.fields) : undefined;
    const brackets = await Promise.all(
      args.streams.map((stream: string) =>
        this.bracket(run, stream, args.t, fields, args.after !== false, args.readAhead !== false),
      ),
    );
    return brackets;
  }

  private async bracket(
    run: number,
    stream: string,
    t: number,
    fields: ReadonlySet<string> | undefined,
    wantAfter: boolean,
    readAhead: boolean,
  ): Promise<SampleBracket> {
    await this.store.stream(run, stream);
    const bracket: SampleBracket = {};
    const decode = (doc: ChunkDoc, view: ChunkView, block: number): ColumnBatch =>
      readAhead
        ? this.store.cache.block(String(doc._id), view, block, fields, run, stream)
        : this.store.cache.blockAlone(String(doc._id), view, block, fields);
    const before = await this.store
      .chunks()
      .find({ run, stream, begin: { $lte: t } })
      .sort({ begin: -1, _id: -1 })
      .limit(1)
      .next();
    if (before) {
      const view = this.store.view(before);
      const b = view.blockAtOrBefore(t);
      // A scene's first look at the chunk gives the one row decoded alone (ChunkCache.block).
      const got =
        !wantAfter && fields === undefined && readAhead
          ? this.store.cache.blockOrRow(String(before._id), view, b, run, stream, { t })
          : decode(before, view, b);
      if (got instanceof LookedRow) {
        // Without a head the row is made as a sample.
        if (got.row) bracket.before = got.row as Sample;
        return bracket;
      }
      const batch = got;
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
    const after = await this.store
      .chunks()
      .find({ run, stream, begin: { $gt: t } })
      .sort({ begin: 1, _id: 1 })
      .limit(1)
      .next();
    if (after) {
      const view = this.store.view(after);
      bracket.after = ownSampleAt(decode(after, view, 0), view.columns, 0);
    }
    return bracket;
  }
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
