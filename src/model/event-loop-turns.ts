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
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.last = performance.now();
  }
}
