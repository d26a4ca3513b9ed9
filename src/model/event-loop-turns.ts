import { SimrecError } from './errors.js';

/** A turn of the event loop: timers and I/O run before the promise settles. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Long work on a thread that also serves others (a server's, answering every viewer) gives the event
 * loop a turn now and then: an `await` of a promise already settled runs the next microtask, never a
 * timer or an incoming request, so work that only awaits its own reads holds the thread to its end.
 */
export class EventLoopTurns {
  private readonly sliceMs: number;
  private last = performance.now();

  /** `sliceMs`: the longest stretch of work between two turns. */
  constructor(sliceMs = 10) {
    this.sliceMs = sliceMs;
  }

  /** Gives the event loop a turn (timers, I/O) once a slice of work has passed since the last. */
  async take(): Promise<void> {
    if (performance.now() - this.last < this.sliceMs) return;
    await nextTurn();
    this.last = performance.now();
  }
}

/**
 * `work`, asked for by a client whose going `signal` tells of: if it fails once the client has gone
 * (the read or comparison stopped by the signal), the failure says so instead of passing for the
 * server's own.
 */
export async function whileAsked<T>(signal: AbortSignal, what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (signal.aborted) throw new SimrecError('invalid', `${what}: the client gave it up`);
    throw error;
  }
}
