import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { notFound } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';
import { openStore, resolveStoreLocation } from '../store/open-store.js';
import { TablesFolder, tablesFolderFor } from '../tables/tables-folder.js';

export interface WithStoreOptions {
  /**
   * A command that only reads refuses a store file that does not exist: `simrec ls --store typo.db`
   * must say so, not create an empty store and list nothing. Commands that record create it.
   */
  read?: boolean;
}

/** Opens the store the command names (--store, SIMREC_STORE, ./simrec.db), runs `work`, closes it. */
export async function withStore<T>(
  command: Command,
  work: (store: StoreBackend) => Promise<T>,
  options: WithStoreOptions = {},
): Promise<T> {
  const { store: option } = command.optsWithGlobals<{ store?: string }>();
  const location = resolveStoreLocation(option);
  // Only a file path can be checked here; a database URL names a server, which says itself what it has.
  if (options.read && !/^[a-z][a-z0-9+.-]*:\/\//i.test(location) && !existsSync(location))
    throw notFound(
      `${location}: no such store (a command that only reads does not create one; check --store or $SIMREC_STORE)`,
    );
  const store = await openStore(location);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/** For commands that only read (or add to runs already there): the store must exist. */
export const withExistingStore = <T>(
  command: Command,
  work: (store: StoreBackend) => Promise<T>,
): Promise<T> => withStore(command, work, { read: true });

/** The store's tables folder: --tables, $SIMREC_TABLES, or beside the store (tables/tables-folder.ts). */
export function tablesFolderOf(command: Command, store: StoreBackend): TablesFolder {
  const { tables } = command.optsWithGlobals<{ tables?: string }>();
  return new TablesFolder(tablesFolderFor(store.location, tables));
}
