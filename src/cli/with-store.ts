import type { Command } from 'commander';
import type { StoreBackend } from '../model/store-port.js';
import { openStore, resolveStoreLocation } from '../store/open-store.js';

/** Opens the store the command names (--store, SIMREC_STORE, ./simrec.db), runs `work`, closes it. */
export async function withStore<T>(command: Command, work: (store: StoreBackend) => Promise<T>): Promise<T> {
  const { store: option } = command.optsWithGlobals<{ store?: string }>();
  const store = await openStore(resolveStoreLocation(option));
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}
