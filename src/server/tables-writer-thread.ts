import { Worker } from 'node:worker_threads';
import { SimrecError, type ErrorCode } from '../model/errors.js';
import { staleRuns, type KeepTables, type KeepTablesResult } from '../tables/keep-tables.js';

/** What the tables writer's thread is given. */
export interface TablesWriterJob {
  /** The store's location, opened again on the thread. */
  location: string;
  /** The tables folder's path. */
  folder: string;
  runs?: readonly number[];
}

/** What it tells, in this order: warnings and progress as they come, then its answer. */
export type TablesWriterMessage =
  | { type: 'warn'; where: string; message: string }
  | { type: 'progress'; done: number; total: number }
  | { type: 'done'; result: KeepTablesResult }
  | { type: 'failed'; code: ErrorCode; message: string };

/**
 * keepTablesInStep on a worker thread of its own, the store opened there again: writing a big run's
 * Parquet keeps JavaScript busy for a minute, in slices of up to half a second, which on the server's
 * thread held up every viewer's windows, seeks and live updates meanwhile. For a store a second
 * connection can read while the first is open (SQLite's). A signal that aborts stops the thread; a run
 * it left half written stays in the folder's staging until a later writing sweeps it, an hour on or
 * once this process is gone (TablesFolder.sweepStaging), and is never read.
 */
export const keepTablesOnWorker: KeepTables = async (store, folder, runs, options = {}) => {
  // Nothing to write (most questions): no thread started.
  const { result, stale } = await staleRuns(store, folder, runs);
  if (stale.length === 0) return result;
  return writeOnWorker(store, folder, runs, options);
};

const writeOnWorker: KeepTables = (store, folder, runs, options = {}) =>
  new Promise<KeepTablesResult>((resolve, reject) => {
    const job: TablesWriterJob = { location: store.location, folder: folder.path };
    if (runs) job.runs = runs;
    const worker = new Worker(new URL('./tables-writer-worker.js', import.meta.url), { workerData: job });
    let settled = false;
    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', abort);
      finish();
    };
    const abort = (): void => {
      void worker.terminate();
      // The signal's reason, as an aborted read gives it (an Error when the caller gave one).
      const reason: unknown = options.signal?.reason;
      settle(() =>
        reject(reason instanceof Error ? reason : new SimrecError('invalid', 'writing the tables: given up')),
      );
    };
    if (options.signal?.aborted) return abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    worker.on('message', (message: TablesWriterMessage) => {
      if (message.type === 'warn') options.warn?.(message.where, message.message);
      else if (message.type === 'progress') options.onProgress?.(message.done, message.total);
      else if (message.type === 'done') settle(() => resolve(message.result));
      else settle(() => reject(new SimrecError(message.code, message.message)));
    });
    worker.on('error', (error) => settle(() => reject(error)));
    worker.on('exit', (code) =>
      settle(() =>
        reject(new SimrecError('io', `writing the tables: its thread stopped (exit code ${code})`)),
      ),
    );
  });
