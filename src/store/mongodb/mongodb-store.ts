import {
  type Binary,
  type Collection,
  type Db,
  type MongoClient,
  type ObjectId,
  type WriteConcernSettings,
} from 'mongodb';
import { notFound, SimrecError } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { ActorInfo } from '../../model/run.js';
import type { WriterIdentity } from '../../model/store-port.js';
import type { InferredField, StreamSchema } from '../../model/stream.js';
import { ChunkCache, openChunk, type ChunkView } from '../common/chunk-reader.js';
import { DEFAULT_TAIL_OPTIONS, type StreamTailOptions } from '../common/stream-tail.js';

export interface MongoStoreOptions {
  chunkSamples?: number;
  /** Bytes of decoded chunks kept in memory for queries (256 MiB by default; see ChunkCache). */
  cacheBytes?: number;
}

/** Every write waits for the majority, journaled. */
export const DURABLE: WriteConcernSettings = { w: 'majority', journal: true };

export interface RunDoc {
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
export interface ActorDoc extends Omit<ActorInfo, 'id'> {
  _id: { run: number; id: string };
  ord: number;
}
export interface StreamDoc {
  _id: { run: number; id: string };
  schema: StreamSchema;
  extraFields: InferredField[];
  samples: number;
  begin: number | null;
  end: number | null;
}
export interface ChunkDoc {
  _id?: ObjectId;
  run: number;
  stream: string;
  begin: number;
  end: number;
  count: number;
  data: Binary;
}
export interface AttachmentDoc {
  _id: { run: number; name: string };
  mediaType: string;
  t?: number;
  metadata?: JsonObject;
  size: number;
  parts: number;
  data?: Binary;
  /** When it was put (absent in documents put before it was kept): MongoAttachments.attachmentsVersion. */
  written?: ObjectId;
}
export interface AttachmentPartDoc {
  _id: { run: number; name: string; part: number };
  data: Binary;
}

export const bytes = (b: Binary): Uint8Array =>
  new Uint8Array(b.buffer.buffer, b.buffer.byteOffset, b.position);

/**
 * The connected database and what MongoBackend's parts share of it: its collections, the cache of
 * opened chunks and decoded blocks, the streams' schemas read so far. Each part of the backend (runs
 * and streams, samples, attachments, integrity) works through one.
 */
export class MongoStore {
  readonly client: MongoClient;
  readonly db: Db;
  readonly location: string;
  readonly cache: ChunkCache<string>;
  readonly tailOptions: StreamTailOptions;
  readonly schemas = new Map<string, StreamDoc>();

  constructor(client: MongoClient, db: Db, location: string, options: MongoStoreOptions) {
    this.client = client;
    this.db = db;
    this.location = location;
    this.tailOptions = {
      ...DEFAULT_TAIL_OPTIONS,
      ...(options.chunkSamples ? { chunkSamples: options.chunkSamples } : {}),
    };
    this.cache = new ChunkCache(options.cacheBytes ? { wholeBytes: options.cacheBytes } : {});
  }

  runs = (): Collection<RunDoc> => this.db.collection<RunDoc>('simrec_runs');
  actors = (): Collection<ActorDoc> => this.db.collection<ActorDoc>('simrec_actors');
  streams = (): Collection<StreamDoc> => this.db.collection<StreamDoc>('simrec_streams');
  chunks = (): Collection<ChunkDoc> => this.db.collection<ChunkDoc>('simrec_chunks');
  attachments = (): Collection<AttachmentDoc> => this.db.collection<AttachmentDoc>('simrec_attachments');
  attachmentParts = (): Collection<AttachmentPartDoc> =>
    this.db.collection<AttachmentPartDoc>('simrec_attachment_parts');

  view(doc: ChunkDoc): ChunkView {
    const key = String(doc._id);
    return this.cache.chunk(key, () => openChunk(bytes(doc.data), `${this.location} chunk ${key}`))!;
  }

  async requireRun(run: number): Promise<void> {
    if (!(await this.runs().findOne({ _id: run }, { projection: { _id: 1 } })))
      throw notFound(`run ${run} does not exist in ${this.location}`);
  }

  async runStateError(run: number): Promise<SimrecError> {
    const doc = await this.runs().findOne({ _id: run }, { projection: { state: 1 } });
    return doc
      ? new SimrecError('conflict', `run ${run} is closed; it cannot be changed`)
      : notFound(`run ${run} does not exist in ${this.location}`);
  }

  async stream(run: number, id: string): Promise<StreamDoc> {
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
}
