/**
 * The SQLite store's writer thread (see sqlite-writer-thread.ts): it owns a connection of its own and
 * runs the SqliteChunkWriter for the main thread, one request at a time, in the order they came.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { SimrecError } from '../../model/errors.js';
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
const writer = new SqliteChunkWriter(db, config.location, config.tail);

parentPort!.on('message', (request: WriterRequest) => {
  let response: WriterResponse;
  try {
    switch (request.op) {
      case 'append':
        writer.append(request.run, unpackBatches(request.batches));
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
});
