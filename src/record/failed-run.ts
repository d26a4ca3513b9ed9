import { SimrecError } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';

/**
 * Removes a run a failed command began (an import, the demo), so that nothing partial is left. When
 * that fails too (the disk that stopped the run is still full), the error that stopped it says so in
 * its one line, naming the run and how to remove it once there is space.
 */
export async function removeFailedRun(store: StoreBackend, run: number, error: unknown): Promise<unknown> {
  try {
    await store.deleteRun(run);
    return error;
  } catch (removal) {
    const why = removal instanceof Error ? removal.message : String(removal);
    const said = error instanceof Error ? error.message : String(error);
    const message = `${said}; run ${run} is left incomplete: removing it failed too (${why}); remove it with \`simrec rm ${run}\` once there is space`;
    return error instanceof SimrecError
      ? new SimrecError(error.code, message, { cause: error })
      : new SimrecError('io', message, { cause: error });
  }
}
