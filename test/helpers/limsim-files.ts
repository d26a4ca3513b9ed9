import Database from 'better-sqlite3';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { StoreBackend } from '../../src/model/store-port.js';
import { openStore } from '../../src/store/open-store.js';
import { fixture, tempDir } from './paths.js';

export const LIMSIM_FIXTURE = fixture('limsim-db', 'egoTrackingTest.db');

export type Row = Record<string, unknown>;

/** Every row of a table, in the file's order. */
export function tableRows(file: string, table: string): Row[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(`SELECT * FROM "${table}"`).all() as Row[];
  } finally {
    db.close();
  }
}

export function tableSql(file: string): Map<string, string> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'table'`).all() as {
      name: string;
      sql: string;
    }[];
    return new Map(rows.map((r) => [r.name, r.sql]));
  } finally {
    db.close();
  }
}

/** A copy of LimSim's sample database, changed by `sql` (a damaged or variant recording). */
export function alteredFixture(dir: string, name: string, sql: string): string {
  const file = join(dir, name);
  copyFileSync(LIMSIM_FIXTURE, file);
  const db = new Database(file);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
  return file;
}

/** Equal as LimSim values: numbers within 1e-9 relative, anything else exactly. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number')
    return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  return a === b;
}

/** A store in a fresh directory for the tests of one file: opened before them, removed after. */
export function storeForTests(prefix: string): { readonly dir: string; readonly store: StoreBackend } {
  const dir = tempDir(prefix);
  let store: StoreBackend | undefined;
  before(async () => {
    store = await openStore(join(dir.path, 'store.db'));
  });
  after(async () => {
    await store?.close();
    dir.cleanup();
  });
  return {
    dir: dir.path,
    get store(): StoreBackend {
      return store!;
    },
  };
}
