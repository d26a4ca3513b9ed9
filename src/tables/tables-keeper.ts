import type { RunSummary } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import type { SqlResult } from '../formats/parquet/duckdb-sql.js';
import { FleetSql, type FleetQuery } from './fleet-sql.js';
import { keepTablesInStep, type KeepTables } from './keep-tables.js';
import type { TablesFolder } from './tables-folder.js';

/**
 * A long-running process's tables (the server's): questions answered one at a time over one DuckDB,
 * and the runs that end while it watches written in the background, so that the first question after
 * a recording does not pay for it. Writing waits until nothing in the store is recording: a recording
 * must never be slowed by it. A question asked meanwhile writes what it needs itself, as any question
 * does. Both write through `keep`: the server gives one that writes on a worker thread, since Parquet
 * written on its own thread held up its viewers for as long as each row group took.
 */
export class TablesKeeper {
  private readonly store: StoreBackend;
  private readonly folder: TablesFolder;
  private readonly fleet: FleetSql;
  private readonly onError: (error: unknown) => void;
  private readonly keep: KeepTables;
  /** One piece of work at a time: questions and writes share the folder and the DuckDB. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Runs seen recording, whose end is waited for. */
  private readonly recording = new Set<number>();
  /** Runs that ended while watched and are not written yet. */
  private readonly ended = new Set<number>();
  private closed = false;

  constructor(
    store: StoreBackend,
    folder: TablesFolder,
    onError: (error: unknown) => void,
    keep: KeepTables = keepTablesInStep,
  ) {
    this.store = store;
    this.folder = folder;
    this.keep = keep;
    this.fleet = new FleetSql(store, folder, keep);
    this.onError = onError;
  }

  /** Answers a question after the work before it. */
  query<T>(query: FleetQuery, read: (result: SqlResult) => Promise<T>): Promise<T> {
    return this.enqueue(() => this.fleet.query(query, read));
  }

  /**
   * Told the store's runs whenever they change (the server's live updates): runs that were recording
   * and are closed now are written, once no run is recording.
   */
  runsChanged(runs: readonly RunSummary[]): void {
    const present = new Set<number>();
    for (const run of runs) {
      present.add(run.id);
      if (run.state === 'recording') this.recording.add(run.id);
      else if (this.recording.delete(run.id)) this.ended.add(run.id);
    }
    // A run deleted while recording (or before it was written) has nothing to write.
    for (const id of this.recording) if (!present.has(id)) this.recording.delete(id);
    for (const id of this.ended) if (!present.has(id)) this.ended.delete(id);
    if (this.ended.size === 0 || this.recording.size > 0 || this.closed) return;
    const runsToWrite = [...this.ended];
    this.ended.clear();
    // Nothing waits for the write: the next question finds the files, or writes them itself.
    void this.enqueue(() => this.keep(this.store, this.folder, runsToWrite)).catch(this.onError);
  }

  /** Waits for the work queued so far (a background write included). */
  async settled(): Promise<void> {
    await this.queue;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await this.fleet.close();
  }

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const done = this.queue.then(work, work);
    this.queue = done.catch(() => undefined);
    return done;
  }
}
