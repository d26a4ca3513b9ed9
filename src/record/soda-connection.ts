import { conflict, SimrecError } from '../model/errors.js';
import type { RunInfo } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { storeRunSource } from '../replay/run-source.js';
import { withImportTarget } from './import-run.js';
import { redactUrl } from '../mongodb/mongodb-url.js';
import type { SodaDatabase, SodaDatasetSummary } from '../formats/soda/soda-mongodb.js';
import type { SodaConnectionSettings } from './soda-connection-settings.js';

/** SODA.Sim's DB status: Disconnected, Connecting, Connected, Faild (spelled right here). */
export const CONNECTION_STATES = ['disconnected', 'connecting', 'connected', 'error'] as const;
export type ConnectionState = (typeof CONNECTION_STATES)[number];

/** One finished run written to the database as a SODA.Sim dataset, or why it was not. */
export interface DatasetExport {
  run: number;
  /** Unix milliseconds. */
  at: number;
  dataset?: number;
  collection?: string;
  error?: string;
  /** Fields SODA.Sim's rows have no place for, by stream. */
  warnings?: string[];
}

export interface ConnectionStatus {
  state: ConnectionState;
  /** The URL (credentials hidden) and database of the current or last attempt. */
  location: string | null;
  database: string | null;
  /** Why the state is `error`. */
  message: string | null;
  /** Unix milliseconds of the last change of state. */
  since: number;
  /** The latest exports, newest first. */
  exports: DatasetExport[];
}

export interface SodaConnectionOptions {
  store: StoreBackend;
  settings: SodaConnectionSettings;
  /** SODA.Sim's record-dataset switch: runs that finish while it is off are not exported. */
  recordEveryRun: () => boolean;
  /** How often the store's run list is looked at for runs that finished. */
  pollMs?: number;
  /** How long a connection attempt waits for a server (a URL's own serverSelectionTimeoutMS wins). */
  serverSelectionTimeoutMS?: number;
}

const KEPT_EXPORTS = 10;

/**
 * The server's connection to a SODA.Sim MongoDB. While connected, it is where finished runs go: every
 * run begun in the store after the connection was made is exported, once it has ended and if
 * record-every-run is on, as a new SODA.Sim dataset (generation 1 layout, with its scenarios and
 * vehicles), so that SODA.Sim's users find simrec's runs where they find their own. It is also a
 * source: its datasets can be listed and imported as runs (those are never exported back).
 */
export class SodaConnection {
  private readonly options: SodaConnectionOptions;
  private readonly listeners = new Set<(status: ConnectionStatus) => void>();
  private current: ConnectionStatus = {
    state: 'disconnected',
    location: null,
    database: null,
    message: null,
    since: Date.now(),
    exports: [],
  };
  private db: SodaDatabase | null = null;
  /** Bumped by each connect and disconnect, so a slow attempt that was overtaken drops its result. */
  private attempt = 0;
  private pending: { attempt: number; outcome: Promise<ConnectionStatus> } | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Runs that are not to be exported: those present at connection, those handled, those imported. */
  private readonly settled = new Set<number>();
  /** Exports and imports run one at a time, so an import's run is settled before a poll can see it. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: SodaConnectionOptions) {
    this.options = options;
  }

  status(): ConnectionStatus {
    return { ...this.current, exports: [...this.current.exports] };
  }

  onChange(listener: (status: ConnectionStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Connects with the current settings (dropping a connection there was) and resolves with the
   * outcome: `connected`, or `error` with the reason. Never rejects: a failure is a status.
   */
  connect(): Promise<ConnectionStatus> {
    if (this.pending?.attempt === this.attempt) return this.pending.outcome;
    const attempt = ++this.attempt;
    const { url, database } = this.options.settings.get();
    const outcome = (async () => {
      await this.drop();
      this.set({ state: 'connecting', location: redactUrl(url), database, message: null });
      try {
        const { SodaDatabase } = await import('../formats/soda/soda-mongodb.js');
        const db = await SodaDatabase.open(url, {
          database,
          serverSelectionTimeoutMS: this.options.serverSelectionTimeoutMS ?? 5000,
        });
        if (attempt !== this.attempt) {
          await db.close().catch(() => {}); // a newer attempt took over: this connection is no one's
          return this.status();
        }
        this.settled.clear();
        for (const run of await this.options.store.listRuns()) this.settled.add(run.id);
        this.db = db;
        this.watch();
        this.set({ state: 'connected' });
      } catch (error) {
        if (attempt === this.attempt) this.set({ state: 'error', message: (error as Error).message });
      } finally {
        if (this.pending?.attempt === attempt) this.pending = null;
      }
      return this.status();
    })();
    this.pending = { attempt, outcome };
    return outcome;
  }

  async disconnect(): Promise<ConnectionStatus> {
    this.attempt++;
    await this.drop();
    this.set({ state: 'disconnected', message: null });
    return this.status();
  }

  /** The datasets of the connected database. */
  async datasets(): Promise<SodaDatasetSummary[]> {
    return this.requireDb().datasetSummaries();
  }

  /** Imports one dataset of the connected database as a run of the store. */
  importDataset(id: number): Promise<RunInfo> {
    const db = this.requireDb();
    return this.serially(async () => {
      const { importSoda } = await import('../formats/soda/read-soda.js');
      const { runs } = await withImportTarget(this.options.store, {}, (into) =>
        importSoda(into, db, { dataset: id }),
      );
      for (const run of runs) this.settled.add(run.id);
      return runs[0]!;
    });
  }

  async close(): Promise<void> {
    this.attempt++;
    this.listeners.clear();
    await this.drop();
  }

  private requireDb(): SodaDatabase {
    if (!this.db)
      throw conflict(
        `MongoDB: not connected (the connection is ${this.current.state}${this.current.message ? `: ${this.current.message}` : ''}); connect first`,
      );
    return this.db;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work);
    // The queue only keeps the work in turn: a failure reaches its caller through `next`.
    this.queue = next.catch(() => {});
    return next;
  }

  private watch(): void {
    this.timer = setInterval(
      // Each export's outcome, a failure included, goes to the status the viewer shows: no one waits here.
      () => void this.serially(() => this.exportFinishedRuns()),
      this.options.pollMs ?? 1000,
    );
    this.timer.unref();
  }

  private async exportFinishedRuns(): Promise<void> {
    const db = this.db;
    if (!db) return;
    const runs = await this.options.store.listRuns().catch(() => []);
    for (const run of runs) {
      if (this.settled.has(run.id) || run.state !== 'closed') continue;
      this.settled.add(run.id);
      if (!this.options.recordEveryRun()) continue;
      const record: DatasetExport = { run: run.id, at: Date.now() };
      try {
        const { exportSoda } = await import('../formats/soda/write-soda.js');
        const warnings: string[] = [];
        const store = this.options.store;
        const result = await exportSoda(await storeRunSource(store, run.id), store, db, {
          warn: (m) => warnings.push(m),
        });
        Object.assign(record, { dataset: result.dataset, collection: result.collection });
        if (warnings.length) record.warnings = warnings;
        this.addExport(record);
      } catch (error) {
        record.error = (error as Error).message;
        this.addExport(record);
        // A run SODA.Sim's layout cannot hold is that run's problem; a failing database is everyone's.
        if (!(error instanceof SimrecError) || error.code === 'io') {
          this.attempt++;
          await this.drop();
          this.set({ state: 'error', message: `exporting run ${run.id}: ${record.error}` });
          return;
        }
      }
    }
  }

  private addExport(record: DatasetExport): void {
    this.set({ exports: [record, ...this.current.exports].slice(0, KEPT_EXPORTS) });
  }

  private async drop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const db = this.db;
    this.db = null;
    await db?.close().catch(() => {}); // let go of: a failure to close leaves nothing to act on
  }

  private set(change: Partial<ConnectionStatus>): void {
    const since = change.state && change.state !== this.current.state ? Date.now() : this.current.since;
    this.current = { ...this.current, ...change, since };
    const status = this.status();
    for (const listener of this.listeners) listener(status);
  }
}

/** For `simrec serve`: a line on stderr for each change of the connection's state and each export. */
export function reportMongoConnection(connection: SodaConnection): void {
  let last: ConnectionState = 'disconnected';
  let lastExport: DatasetExport | undefined;
  const show = (s: ConnectionStatus): void => {
    const write = (text: string): boolean => process.stderr.write(`simrec mongodb: ${text}\n`);
    if (s.exports[0] && s.exports[0] !== lastExport) {
      const e = (lastExport = s.exports[0]);
      write(
        e.error
          ? `run ${e.run} not exported: ${e.error}`
          : `run ${e.run} -> dataset ${e.dataset} (${e.collection})`,
      );
    }
    if (s.state === last) return;
    last = s.state;
    write(s.state === 'error' ? `error: ${s.message}` : `${s.state} (${s.location} database ${s.database})`);
  };
  connection.onChange(show);
  show(connection.status());
}
