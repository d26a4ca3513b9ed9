import { randomBytes } from 'node:crypto';
import { availableParallelism, freemem } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SimrecError, type ErrorCode } from '../model/errors.js';
import type { RunSummary } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import {
  keepTablesInStep,
  staleRuns,
  type KeepTables,
  type KeepTablesOptions,
  type KeepTablesResult,
} from './keep-tables.js';
import type { TablesFolder } from './tables-folder.js';

/** What a tables writer's thread is given. */
export interface TablesWriterJob {
  /** The store's location, opened again on the thread. */
  location: string;
  /** The tables folder's path. */
  folder: string;
  /** Put in the names of its staging folders, which are removed if it is stopped. */
  stagingTag: string;
  /** The runs it keeps in step. */
  runs: readonly number[];
}

/** What it tells, in this order: warnings and progress as they come, then its answer. */
export type TablesWriterMessage =
  | { type: 'warn'; where: string; message: string }
  | { type: 'progress'; done: number; total: number }
  | { type: 'done'; result: KeepTablesResult }
  | { type: 'failed'; code: ErrorCode; message: string };

export interface TablesWritersOptions {
  /**
   * Threads at most (default: the machine's cores); never more than the runs to write, nor than the
   * free memory holds (writerThreads).
   */
  threads?: number;
  /**
   * Whether a single run to write is written on this thread rather than on one started for it (the
   * command line's choice: a thread and a second store connection cost more than they give there).
   * The server's thread stays free for its pages whatever the work. Default false.
   */
  oneHere?: boolean;
}

/**
 * keepTablesInStep on worker threads, the store opened again on each: the stale runs are shared out
 * by their samples, one share a thread, each thread writing its runs' files and manifests (a run's
 * files are its own: threads never write the same ones). Writing Parquet is JavaScript busy in long
 * slices: on the server's thread it held up every viewer's windows, seeks and live updates, and on one
 * thread a store of many runs took as long as their sum. For a store a second connection can read
 * while the first is open (SQLite's). A signal that aborts stops every thread and removes what they
 * had staged; a thread that fails stops the others.
 */
export function keepTablesOnThreads(how: TablesWritersOptions = {}): KeepTables {
  return async (store, folder, runs, options = {}) => {
    // Nothing to write (most questions): no thread started.
    const { result, stale } = await staleRuns(store, folder, runs);
    if (stale.length === 0) return result;
    const shares = shareRuns(stale, threadsToStart(how.threads));
    if (shares.length === 1 && how.oneHere) return keepTablesInStep(store, folder, runs, options);

    const stop = new AbortController();
    const onAbort = (): void => stop.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    // Each share's progress; a share not heard from yet counts its runs' samples as its total.
    const done = shares.map(() => 0);
    const totals = shares.map((share) => share.reduce((sum, r) => sum + r.samples, 0));
    const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
    const settled = await Promise.allSettled(
      shares.map((share, k) =>
        writeOnThread(
          store,
          folder,
          share.map((r) => r.id),
          {
            ...(options.warn ? { warn: options.warn } : {}),
            onProgress: (d, t) => {
              done[k] = d;
              totals[k] = t;
              options.onProgress?.(sum(done), sum(totals));
            },
            signal: stop.signal,
          },
        ).catch((error: unknown) => {
          stop.abort(error);
          throw error;
        }),
      ),
    );
    options.signal?.removeEventListener('abort', onAbort);
    // A thread's failure stopped the others with its error (the stop signal's reason).
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const written = new Set<number>();
    for (const s of settled) {
      const share = (s as PromiseFulfilledResult<KeepTablesResult>).value;
      for (const id of share.written) written.add(id);
      // Written meanwhile by another writer of the folder: current when the thread looked.
      for (const id of share.current) if (!result.current.includes(id)) result.current.push(id);
      for (const [id, version] of share.versions) result.versions.set(id, version);
    }
    result.written = stale.map((r) => r.id).filter((id) => written.has(id));
    return result;
  };
}

/**
 * What one writer thread may hold at its peak, with room to spare: its own heap, its store connection's
 * cache and a row group of each table it writes (performance-history.md, "The tables of several runs
 * side by side").
 */
const THREAD_MEMORY_BYTES = 512 * 2 ** 20;

/** Threads to write with now: those asked (the machine's cores by default), as free memory holds. */
export const threadsToStart = (asked = availableParallelism()): number => writerThreads(asked, freemem());

/** Threads to write with: those asked, as many as `freeBytes` of memory hold, one at least. */
export function writerThreads(asked: number, freeBytes: number): number {
  return Math.max(1, Math.min(Math.floor(asked), Math.floor(freeBytes / THREAD_MEMORY_BYTES)));
}

/**
 * The runs to write in at most `threads` shares of about as many samples each (the largest first, each
 * to the share with the fewest so far), each share's runs in the order given.
 */
export function shareRuns<R extends Pick<RunSummary, 'id' | 'samples'>>(
  runs: readonly R[],
  threads: number,
): R[][] {
  const count = Math.min(Math.max(1, Math.floor(threads)), runs.length);
  const shares = Array.from({ length: count }, () => ({ runs: new Set<R>(), samples: 0 }));
  for (const run of [...runs].sort((a, b) => b.samples - a.samples)) {
    const lightest = shares.reduce((a, b) => (b.samples < a.samples ? b : a));
    lightest.runs.add(run);
    lightest.samples += run.samples;
  }
  return shares.map((share) => runs.filter((r) => share.runs.has(r)));
}

/** keepTablesInStep of `runs` on a thread of its own (tables-writer-worker.ts). */
function writeOnThread(
  store: StoreBackend,
  folder: TablesFolder,
  runs: readonly number[],
  options: KeepTablesOptions,
): Promise<KeepTablesResult> {
  return new Promise<KeepTablesResult>((resolve, reject) => {
    const job: TablesWriterJob = {
      location: store.location,
      folder: folder.path,
      stagingTag: `w${randomBytes(4).toString('hex')}-`,
      runs,
    };
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
}
