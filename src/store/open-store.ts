import { SimrecError } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';
import { isWriterAlive } from './common/writer-identity.js';
import { BACKENDS } from './registry.js';

// Who is writing: the recorder stamps it on the runs it opens, and openStore's recovery checks it.
export { currentWriter } from './common/writer-identity.js';

export const DEFAULT_STORE = './simrec.db';

/** The store location a command uses: its --store option, else SIMREC_STORE, else ./simrec.db. */
export const resolveStoreLocation = (option?: string): string =>
  option ?? process.env.SIMREC_STORE ?? DEFAULT_STORE;

export interface OpenStoreOptions {
  /** Close the runs of writers that died (as `interrupted`). Default true: that is how a crash is healed. */
  recoverAbandoned?: boolean;
}

/**
 * Opens the store at a location: a file path (SQLite, the embedded default) or a URL whose scheme a
 * registered backend accepts. Runs left open by a writer that died are closed as `interrupted`.
 */
export async function openStore(location: string, options: OpenStoreOptions = {}): Promise<StoreBackend> {
  const entry = BACKENDS.find((b) => b.accepts(location));
  if (!entry)
    throw new SimrecError(
      'unsupported',
      `store ${JSON.stringify(location)}: no backend for this location (known: ${BACKENDS.map((b) => b.kind).join(', ')})`,
    );
  const store = await entry.open(location);
  if (options.recoverAbandoned !== false) await store.closeAbandonedRuns(isWriterAlive);
  return store;
}
