import { randomBytes } from 'node:crypto';
import { availableParallelism, freemem } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SimrecError, type ErrorCode } from '../model/errors.js';
import type { TablePart } from '../formats/parquet/write-parquet.js';
import type { StoreBackend } from '../model/store-port.js';
import {
  keepTablesInStep,
  planRun,
  staleRuns,
  type KeepTables,
  type KeepTablesOptions,
  type RunPlan,
} from './keep-tables.js';
import type { StagedPart, TablesFolder } from './tables-folder.js';

/** A part of a run's files one thread writes (writeRunPart's job, its tables as a list). */
export interface RunPieceJob {
  run: number;
  tables: string[];
  part: TablePart;
  /** The samples it is expected to hold (for progress before it starts). */
  samples: number;
}

/** What a tables writer's thread is given. */
export interface TablesWriterJob {
  /** The store's location, opened again on the thread. */
  location: string;
  /** The tables folder's path. */
  folder: string;
  /** Put in the names of its staging folders, which are removed if it is stopped. */
  stagingTag: string;
  /** The parts of runs it writes, in this order. */
  pieces: RunPieceJob[];
}

/** What it tells, in this order: warnings, progress and each part staged as they come, then that it is done. */
export type TablesWriterMessage =
  | { type: 'warn'; where: string; message: string }
  | { type: 'progress'; done: number; total: number }
  | { type: 'staged'; run: number; part: number; staged: StagedPart }
  | { type: 'done' }
  | { type: 'failed'; code: ErrorCode; message: string };

export interface TablesWritersOptions {
  /**
   * Threads at most (default: the machine's cores); never more than the work can be shared into, nor
   * than the free memory holds (writerThreads).
   */
  threads?: number;
  /**
   * Whether work that would go to a single thread is done on this one instead (the command line's
   * choice: a thread and a second store connection cost more than they give there). The server's
   * thread stays free for its pages whatever the work. Default false.
   */
  oneHere?: boolean;
  /**
   * The fewest samples a part of a run's table holds (default PART_SAMPLES): a run is cut into parts
   * written side by side only where each would hold as many.
   */
  partSamples?: number;
}

/**
 * The fewest samples of a part of a run's table: a few row groups' worth, so that a thread's start and
 * its store connection are small beside its writing, and a query reads few files a run.
 */
export const PART_SAMPLES = 500_000;

/**
 * keepTablesInStep on worker threads, the store opened again on each. The stale runs are shared out
 * by their samples, one share a thread; a run larger than a thread's share of the work is cut into
 * parts (its tables' streams in spans of about equal samples, `part-0.parquet`, `part-1.parquet`...
 * in its partition), each written on a thread of its own. This thread puts a run's files in place and
 * writes its manifest once all its parts are staged. Writing Parquet is JavaScript busy in long slices:
 * on the server's thread it held up every viewer's windows, seeks and live updates, and on one thread a
 * store of many runs took as long as their sum, an hour-long run as long as all its rows. For a store a
 * second connection can read while the first is open (SQLite's). A signal that aborts stops every
 * thread and removes what they had staged; a thread that fails stops the others.
 */
export function keepTablesOnThreads(how: TablesWritersOptions = {}): KeepTables {
  return async (store, folder, runs, options = {}) => {
    // Nothing to write (most questions): no thread started.
    const { result, stale } = await staleRuns(store, folder, runs);
    if (stale.length === 0) return result;
    const threads = threadsToStart(how.threads);
    const manifests = folder.manifests();
    const plans = new Map<number, RunPlan>();
    for (const run of stale) plans.set(run.id, await planRun(store, folder, run.id, manifests.get(run.id)));
    const toWrite = stale.map((r) => ({
      id: r.id,
      samples: plans.get(r.id)!.samples,
      largest: plans.get(r.id)!.largest,
    }));
    const pieces = cutRuns(toWrite, threads, how.partSamples ?? PART_SAMPLES).map((piece) => ({
      ...piece,
      tables: [...plans.get(piece.run)!.write],
    }));
    const shares = shareRuns(pieces, threads);
    if (shares.length === 1 && how.oneHere) return keepTablesInStep(store, folder, runs, options);

    const stop = new AbortController();
    const onAbort = (): void => stop.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    // Each run's parts as they are staged; the run's files put in place when the last one is.
    const staged = new Map<number, StagedPart[]>();
    const written = new Set<number>();
    const onStaged = (run: number, index: number, part: StagedPart): void => {
      if (stop.signal.aborted) return folder.discard(part.staged);
      const parts = staged.get(run) ?? [];
      parts[index] = part;
      staged.set(run, parts);
      const count = pieces.filter((p) => p.run === run).length;
      if (parts.filter(Boolean).length < count) return;
      try {
        folder.replaceRun(run, result.versions.get(run)!, parts, plans.get(run));
        written.add(run);
      } catch (error) {
        stop.abort(error);
      }
    };
    // Each share's progress; a share not heard from yet counts its parts' samples as its total.
    const done = shares.map(() => 0);
    const totals = shares.map((share) => share.reduce((sum, p) => sum + p.samples, 0));
    const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
    const settled = await Promise.allSettled(
      shares.map((share, k) =>
        writeOnThread(store, folder, share, {
          ...(options.warn ? { warn: options.warn } : {}),
          onProgress: (d, t) => {
            done[k] = d;
            totals[k] = t;
            options.onProgress?.(sum(done), sum(totals));
          },
          onStaged,
          signal: stop.signal,
        }).catch((error: unknown) => {
          stop.abort(error);
          throw error;
        }),
      ),
    );
    options.signal?.removeEventListener('abort', onAbort);
    // A thread's failure stopped the others with its error (the stop signal's reason); the parts other
    // threads had staged of runs not put in place go with it.
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) {
      for (const [run, parts] of staged)
        if (!written.has(run)) for (const part of parts) if (part) folder.discard(part.staged);
      throw failed.reason;
    }
    result.written = stale.map((r) => r.id).filter((id) => written.has(id));
    return result;
  };
}

/** A part of a run to write: part `part.index` of `part.count` of its tables, about `samples` of them. */
export interface RunPiece {
  run: number;
  part: TablePart;
  samples: number;
}

/**
 * The runs to write as parts for `threads` threads: a run of more samples than a thread's share of
 * them all is cut into as many parts as it has shares (`threads` at most), as far as its largest table
 * can be cut into parts of `fewest` samples at least (its smaller tables stay whole, in part 0); others
 * are one part.
 */
export function cutRuns(
  runs: readonly { id: number; samples: number; largest: number }[],
  threads: number,
  fewest: number,
): RunPiece[] {
  const share = runs.reduce((sum, r) => sum + r.samples, 0) / Math.max(1, Math.floor(threads));
  return runs.flatMap((r) => {
    const count = Math.max(
      1,
      Math.min(
        Math.floor(threads),
        // Nothing but the run's own tables to write (no samples at all): one part.
        share > 0 ? Math.ceil(r.samples / share) : 1,
        Math.floor(r.largest / Math.max(1, fewest)),
      ),
    );
    return Array.from({ length: count }, (_, index) => ({
      run: r.id,
      part: { index, count, fewest },
      samples: r.samples / count,
    }));
  });
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
 * The runs (or parts of runs) to write in at most `threads` shares of about as many samples each (the
 * largest first, each to the share with the fewest so far), each share's runs in the order given.
 */
export function shareRuns<R extends { samples: number }>(runs: readonly R[], threads: number): R[][] {
  const count = Math.min(Math.max(1, Math.floor(threads)), runs.length);
  const shares = Array.from({ length: count }, () => ({ runs: new Set<R>(), samples: 0 }));
  for (const run of [...runs].sort((a, b) => b.samples - a.samples)) {
    const lightest = shares.reduce((a, b) => (b.samples < a.samples ? b : a));
    lightest.runs.add(run);
    lightest.samples += run.samples;
  }
  return shares.map((share) => runs.filter((r) => share.runs.has(r)));
}

/** Parts of runs written on a thread of its own (tables-writer-worker.ts), each told back as staged. */
function writeOnThread(
  store: StoreBackend,
  folder: TablesFolder,
  pieces: readonly (RunPiece & { tables: string[] })[],
  options: KeepTablesOptions & { onStaged: (run: number, part: number, staged: StagedPart) => void },
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const job: TablesWriterJob = {
      location: store.location,
      folder: folder.path,
      stagingTag: `w${randomBytes(4).toString('hex')}-`,
      pieces: pieces.map(({ run, tables, part, samples }) => ({ run, tables, part, samples })),
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
      else if (message.type === 'staged') {
        if (!settled) options.onStaged(message.run, message.part, message.staged);
      } else if (message.type === 'done') settle(resolve);
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
