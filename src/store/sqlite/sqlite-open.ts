import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { SimrecError } from '../../model/errors.js';
import {
  SCHEMA_DDL,
  SCHEMA_VERSION,
  SIMREC_APPLICATION_ID,
  upgradeSchema,
  widenChunkTimeIndex,
} from './sqlite-schema.js';
import type { SqliteStoreOptions } from './sqlite-store-file.js';
import { configureConnection } from './sqlite-writer-thread.js';

/**
 * Opens (creating if absent) a store file's database, ready for SqliteBackend: a new file given the
 * schema, an older one upgraded, a file that is not a simrec store (or is a newer simrec's) refused.
 * Returns the schema version the file is at.
 */
export function openStoreDatabase(
  path: string,
  options: SqliteStoreOptions,
): { db: Database.Database; version: number } {
  let fresh = !options.readonly && (!existsSync(path) || statSync(path).size === 0);
  let db: Database.Database;
  let version = SCHEMA_VERSION;
  try {
    db = new Database(path, options.readonly ? { readonly: true, fileMustExist: true } : {});
    // First of all: another process may hold the file (creating it, switching it to WAL), and
    // every statement after this one must wait for it rather than fail at once.
    db.pragma('busy_timeout = 10000');
  } catch (error) {
    throw new SimrecError('io', `${path}: cannot open the store: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    const durability = options.durability ?? 'full';
    const prepare = (): void => {
      // Switching to WAL needs the file to itself for a moment, and SQLite answers "busy" at once
      // (without its busy timeout) when another process is opening the same new store.
      if (!options.readonly) retryWhileBusy(() => db.pragma('journal_mode = WAL'));
      configureConnection(db, durability);
      // Reads through SQLite's page cache, never a memory map (whatever the build's default): a page
      // read through a map stays in the process's resident memory, so a server's memory grew with
      // every part of the store its viewers had visited, up to the whole file, where the cache holds
      // a bounded number of pages. The map no longer made reads faster (performance-history.md).
      db.pragma('mmap_size = 0');
    };
    // A file another process is creating this very moment has no schema yet: it is new, not foreign.
    if (!fresh && !options.readonly) fresh = isEmptyDatabase(db);
    if (fresh) {
      // Before any table exists, or it has no effect: lets endRun hand back the pages that tail
      // chunks freed, so a finished run's file holds its data and little else.
      db.pragma('auto_vacuum = INCREMENTAL');
      prepare();
      // Immediate, and checked again inside: two processes may create the same new store at once.
      db.transaction(() => {
        if (db.pragma('application_id', { simple: true }) === SIMREC_APPLICATION_ID) return;
        db.exec(SCHEMA_DDL);
        db.pragma(`application_id = ${SIMREC_APPLICATION_ID}`);
        db.pragma(`user_version = ${SCHEMA_VERSION}`);
      }).immediate();
    } else {
      version = checkStoreFile(db, path);
      prepare();
      if (version < SCHEMA_VERSION && !options.readonly) {
        upgradeSchema(db, version);
        version = SCHEMA_VERSION;
      }
      if (!options.readonly) retryWhileBusy(() => widenChunkTimeIndex(db));
    }
  } catch (error) {
    db.close();
    throw error;
  }
  return { db, version };
}

function retryWhileBusy<T>(work: () => T, attempts = 200): T {
  for (let i = 1; ; i++)
    try {
      return work();
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || i >= attempts) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
}

/** An SQLite file with no tables and no application id: one that is being created, or never was. */
function isEmptyDatabase(db: Database.Database): boolean {
  try {
    const tables = (db.prepare('SELECT COUNT(*) AS n FROM sqlite_master').get() as { n: number }).n;
    return tables === 0 && db.pragma('application_id', { simple: true }) === 0;
  } catch {
    // Not SQLite at all: checkStoreFile says so, naming the file.
    return false;
  }
}

/** Checks the file is a simrec store this simrec reads; returns its schema version. */
function checkStoreFile(db: Database.Database, path: string): number {
  let applicationId: number;
  let version: number;
  try {
    applicationId = db.pragma('application_id', { simple: true }) as number;
    version = db.pragma('user_version', { simple: true }) as number;
  } catch (error) {
    throw new SimrecError('unsupported', `${path} is not a simrec store: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (applicationId !== SIMREC_APPLICATION_ID)
    throw new SimrecError(
      'unsupported',
      `${path} is not a simrec store: its SQLite application_id is ${applicationId}, expected ${SIMREC_APPLICATION_ID} ` +
        `(to read another tool's database, use simrec import)`,
    );
  if (version > SCHEMA_VERSION)
    throw new SimrecError(
      'unsupported',
      `${path} is from a newer simrec: store schema version ${version}, this simrec reads up to ${SCHEMA_VERSION}; upgrade simrec`,
    );
  return version;
}
