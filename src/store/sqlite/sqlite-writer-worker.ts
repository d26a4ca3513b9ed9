/**
 * The SQLite store's writer thread (see sqlite-writer-thread.ts): it owns a connection of its own and
 * runs the SqliteChunkWriter for the main thread, one request at a time, in the order they came.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { SimrecError } from '../../model/errors.js';
import type { ActorInfo } from '../../model/run.js';
import type { StreamSchema } from '../../model/stream.js';
import { unpackBatches } from '../common/column-wire.js';
import { SqliteChunkWriter } from './sqlite-chunk-writer.js';
import {
  configureConnection,
  type WriterRequest,
  type WriterResponse,
  type WriterThreadConfig,
} from './sqlite-writer-thread.js';

const config = workerData as WriterThreadConfig;
const db = new Database(config.path);
configureConnection(db, config.durability);
// A larger WAL before each checkpoint: tail chunks live a few seconds, and a page rewritten several
// times between checkpoints is copied into the database once (the default, 1,000 pages, checkpointed
// every few commits at 200 actors). Bounded: the WAL is reused, not grown, after each checkpoint.
db.pragma('wal_autocheckpoint = 8192');
db.pragma('cache_size = -4096');
const writer = new SqliteChunkWriter(db, config.location, config.tail, config.durability);

/**
 * Sealing runs between requests, a slice at a time: a commit that arrives meanwhile waits for one
 * slice at most, and the thread seals while the simulator is busy with its next steps.
 */
let sealing = false;
function sealInBackground(): void {
  if (sealing || !writer.hasDue) return;
  sealing = true;
  setImmediate(() => {
    sealing = false;
    try {
      writer.sealDue();
    } catch {
      // The tails stay as they are (readable, durable); the run's end seals them again.
    }
    sealInBackground();
  });
}

parentPort!.on('message', (request: WriterRequest) => {
  let response: WriterResponse;
  try {
    switch (request.op) {
      case 'actors':
        writer.putActors(request.run, JSON.parse(request.json) as ActorInfo[]);
        break;
      case 'streams':
        writer.putStreams(request.run, JSON.parse(request.json) as StreamSchema[]);
        break;
      case 'append':
        writer.append(request.run, unpackBatches(request.batches), request.presence);
        break;
      case 'end':
        writer.endRun(request.run, request.end, request.reason);
        break;
      case 'forget':
        writer.forgetRun(request.run);
        break;
      case 'close':
        db.close();
        break;
    }
    response = { id: request.id, ok: true };
  } catch (error) {
    const e = error as Error;
    response = {
      id: request.id,
      ok: false,
      code: error instanceof SimrecError ? error.code : 'io',
      message: error instanceof SimrecError ? e.message : `${config.location}: ${e.message}`,
    };
  }
  parentPort!.postMessage(response);
  if (request.op !== 'close') sealInBackground();
});
parentPort!.postMessage({ ready: true } satisfies WriterResponse);
