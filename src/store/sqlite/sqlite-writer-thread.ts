import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { ColumnBatch } from '../../model/columns.js';
import { SimrecError, type ErrorCode } from '../../model/errors.js';
import type { ActorInfo, ActorPresence, EndReason } from '../../model/run.js';
import type { StreamSchema } from '../../model/stream.js';
import { ArenaPool, packBatches, type WireBatches } from '../common/column-wire.js';
import type { StreamTailOptions } from '../common/stream-tail.js';
import { SqliteChunkWriter } from './sqlite-chunk-writer.js';

export interface WriterThreadConfig {
  path: string;
  location: string;
  durability: 'full' | 'normal';
  tail: StreamTailOptions;
}

type WriterRequestBody =
  /** Declarations as JSON text (see WriterThread.putActors). */
  | { op: 'actors'; run: number; json: string }
  | { op: 'streams'; run: number; json: string }
  | { op: 'append'; run: number; batches: WireBatches; presence?: ActorPresence[] }
  | { op: 'end'; run: number; end: number; reason: EndReason }
  | { op: 'forget'; run: number }
  | { op: 'close' };

export type WriterRequest = { id: number } & WriterRequestBody;

export type WriterResponse =
  | ({ id: number } & ({ ok: true } | { ok: false; code: ErrorCode; message: string }))
  /** Sent once, when the thread has opened its connection and takes requests. */
  | { ready: true };

/** The pragmas every connection to a store runs with, the writer thread's included. */
export function configureConnection(db: Database.Database, durability: 'full' | 'normal'): void {
  db.pragma('busy_timeout = 10000');
  db.pragma(`synchronous = ${durability === 'normal' ? 'NORMAL' : 'FULL'}`);
  db.pragma('foreign_keys = ON');
}

/**
 * How many writes this process's store writers have committed (a writer thread's answers, an inline
 * writer's and a thread's stand-in's writes on the caller's thread): a reader that asked SQLite for its
 * data_version earlier in the same turn of the event loop asks again once this has moved
 * (SqliteStoreFile.syncWithOtherConnections), so that what a caller awaited is read.
 */
export const localWrites = { count: 0 };

/** What the backend asks of whoever writes its chunks: the writer thread, or the same thread. */
export interface ChunkWriterPort {
  /** A run is about to record: get ready to write (start the thread) while the caller declares. */
  prepare(): void;
  /** Declarations, in order with the appends (SqliteChunkWriter.putActors, putStreams). */
  putActors(run: number, actors: readonly ActorInfo[]): Promise<void>;
  putStreams(run: number, streams: readonly StreamSchema[]): Promise<void>;
  append(
    run: number,
    appends: readonly { stream: string; batch: ColumnBatch }[],
    presence?: readonly ActorPresence[],
  ): Promise<void>;
  endRun(run: number, end: number, reason: EndReason): Promise<void>;
  forgetRun(run: number): void;
  close(): Promise<void>;
}

/**
 * The store's chunks are encoded and written on a worker thread, with a connection of its own, so that
 * the thread a simulator appends from only validates and copies (these machines have two cores; SQLite's
 * fsync alone holds a thread for milliseconds). Durability is unchanged: an append resolves when the
 * writer has committed it, and requests run in the order they were made.
 */
export class WriterThread implements ChunkWriterPort {
  private worker: Worker | null = null;
  private readonly config: WriterThreadConfig;
  private nextId = 1;
  /** Requests posted and not answered; an append's arena is the pool's again once it is answered. */
  private readonly waiting = new Map<
    number,
    { resolve(): void; reject(e: unknown): void; arena?: Float64Array }
  >();
  private readonly arenas = new ArenaPool();
  private failure: Error | null = null;
  /** Whether the thread has started and takes requests. */
  private ready = false;
  /**
   * Writes declarations on the caller's connection until the thread is ready. A thread takes a while to
   * start (its modules, its connection; longer while the caller keeps the other core busy), and a
   * recorder's first declarations, sent to it, waited for that: a large share of a short recording. A
   * declaration written here may land before an append handed to
   * the thread earlier and still in its queue (a recorder hands writes to this store at once,
   * RunRecorder.inOrder): harmless, since samples need their declarations before them, not after. If
   * the thread has just opened its connection and holds the write lock, this waits for it in SQLite's
   * busy handler, once, at a run's start.
   */
  private readonly meanwhile: SqliteChunkWriter;

  constructor(config: WriterThreadConfig, meanwhile: SqliteChunkWriter) {
    this.config = config;
    this.meanwhile = meanwhile;
  }

  prepare(): void {
    if (this.failure) return;
    // Unref'd until a request waits on it: a thread started for a run that never writes holds nothing up.
    this.start();
  }

  /** Started when a run begins: a store opened to read never starts a thread. */
  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./sqlite-writer-worker.js', import.meta.url), {
      workerData: this.config,
      // V8 let the thread's young generation grow as far as its garbage (unpacked batches, packed blocks)
      // filled it. Small, since the thread makes little garbage and lets its batches die young
      // (unpackBatches): a small young generation holds recording's memory lower at the same speed
      // (docs/performance-history.md). The old generation, where what the thread keeps lives (tails'
      // layouts, prepared statements), is not capped.
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
    });
    worker.on('message', (response: WriterResponse) => {
      if ('ready' in response) {
        this.ready = true;
        return;
      }
      const pending = this.waiting.get(response.id);
      if (!pending) return;
      if (pending.arena) this.arenas.give(pending.arena);
      this.waiting.delete(response.id);
      if (this.waiting.size === 0) worker.unref();
      localWrites.count++;
      if (response.ok) pending.resolve();
      else pending.reject(new SimrecError(response.code, response.message));
    });
    const fail = (error: Error): void => {
      this.failure = new SimrecError(
        'io',
        `${this.config.location}: the store's writer thread stopped: ${error.message}`,
        {
          cause: error,
        },
      );
      for (const pending of this.waiting.values()) pending.reject(this.failure);
      this.waiting.clear();
      this.worker = null;
      this.ready = false;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (this.waiting.size > 0) fail(new Error(`exited with code ${code}`));
      this.worker = null;
      this.ready = false;
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private request(body: WriterRequestBody, arena?: Float64Array): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const worker = this.start();
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, arena ? { resolve, reject, arena } : { resolve, reject });
      worker.ref();
      worker.postMessage({ ...body, id });
    });
  }

  /**
   * Declarations go to the thread as JSON text, which the store keeps anyway: posting a stream's schema
   * (a score of field objects) as objects costs several times what its text does.
   */
  putActors(run: number, actors: readonly ActorInfo[]): Promise<void> {
    if (!this.ready) return this.declareMeanwhile(run, (w) => w.putActors(run, actors));
    return this.request({ op: 'actors', run, json: JSON.stringify(actors) });
  }

  putStreams(run: number, streams: readonly StreamSchema[]): Promise<void> {
    if (!this.ready) return this.declareMeanwhile(run, (w) => w.putStreams(run, streams));
    return this.request({ op: 'streams', run, json: JSON.stringify(streams) });
  }

  private async declareMeanwhile(run: number, write: (writer: SqliteChunkWriter) => void): Promise<void> {
    if (this.failure) throw this.failure;
    // What it knew of the run's actors may be stale: the thread declares once it is ready.
    this.meanwhile.forgetRun(run);
    write(this.meanwhile);
    localWrites.count++;
  }

  append(
    run: number,
    appends: readonly { stream: string; batch: ColumnBatch }[],
    presence?: readonly ActorPresence[],
  ): Promise<void> {
    // The arena is shared with the thread, not copied nor transferred (column-wire.ts ArenaPool).
    const batches = packBatches(appends, this.arenas);
    return this.request(
      { op: 'append', run, batches, ...(presence?.length ? { presence: [...presence] } : {}) },
      batches.arena,
    );
  }

  endRun(run: number, end: number, reason: EndReason): Promise<void> {
    return this.request({ op: 'end', run, end, reason });
  }

  forgetRun(run: number): void {
    // Only frees the thread's memory of the run: nothing waits for it, and a failure changes nothing stored.
    if (this.worker) this.request({ op: 'forget', run }).catch(() => {});
  }

  async close(): Promise<void> {
    if (!this.worker) return;
    const worker = this.worker;
    await this.request({ op: 'close' }).catch(() => {}); // the thread is terminated next, whatever it answers
    await worker.terminate();
    this.worker = null;
  }
}

/** The same writer on the caller's thread and connection (a store opened with `writerThread: false`). */
export class InlineWriter implements ChunkWriterPort {
  private readonly writer: SqliteChunkWriter;
  constructor(writer: SqliteChunkWriter) {
    this.writer = writer;
  }
  prepare(): void {}
  async putActors(run: number, actors: readonly ActorInfo[]): Promise<void> {
    this.writer.putActors(run, actors);
    localWrites.count++;
  }
  async putStreams(run: number, streams: readonly StreamSchema[]): Promise<void> {
    this.writer.putStreams(run, streams);
    localWrites.count++;
  }
  async append(
    run: number,
    appends: readonly { stream: string; batch: ColumnBatch }[],
    presence?: readonly ActorPresence[],
  ): Promise<void> {
    this.writer.append(run, appends, presence);
    // No thread to seal in the background: seal now, after the commit.
    while (this.writer.sealDue());
    localWrites.count++;
  }
  async endRun(run: number, end: number, reason: EndReason): Promise<void> {
    this.writer.endRun(run, end, reason);
    localWrites.count++;
  }
  forgetRun(run: number): void {
    this.writer.forgetRun(run);
  }
  async close(): Promise<void> {}
}
