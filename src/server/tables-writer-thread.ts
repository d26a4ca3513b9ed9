import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { SimrecError, type ErrorCode } from '../model/errors.js';
import { staleRuns, type KeepTables, type KeepTablesResult } from '../tables/keep-tables.js';

/** What the tables writer's thread is given. */
export interface TablesWriterJob {
  /** The store's location, opened again on the thread. */
  location: string;
  /** The tables folder's path. */
  folder: string;
  /** Put in the names of its staging folders, which are removed if it is stopped. */
  stagingTag: string;
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
 * Parquet keeps JavaScript busy in long slices, which on the server's thread held up every viewer's
 * windows, seeks and live updates meanwhile. For a store a second connection can read while the first
 * is open (SQLite's). A signal that aborts stops the thread and removes what it had staged.
 */
export const keepTablesOnWorker: KeepTables = async (store, folder, runs, options = {}) => {
  // Nothing to write (most questions): no thread started.
  const { result, stale } = await staleRuns(store, folder, runs);
  if (stale.length === 0) return result;
  return writeOnWorker(store, folder, runs, options);
};

const writeOnWorker: KeepTables = (store, folder, runs, options = {}) =>
  new Promise<KeepTablesResult>((resolve, reject) => {
    const job: TablesWriterJob = {
      location: store.location,
      folder: folder.path,
      stagingTag: `w${randomBytes(4).toString('hex')}-`,
    };
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
      // The signal's reason, as an aborted read gives it (an Error when the caller gave one).
      const reason: unknown = options.signal?.reason;
      const error =
        reason instanceof Error ? reason : new SimrecError('invalid', 'writing the tables: given up');
      // Settled now (what the thread tells from here on is not heard), rejected once the thread is
      // stopped and what it had staged removed.
      settle(() => {
        void worker
          .terminate()
          .then(() => folder.discardStaging(job.stagingTag))
          .finally(() => reject(error));
      });
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
