import type { RunSource } from '../model/run-ports.js';
import type { StoreBackend } from '../model/store-port.js';
import { nextTurn } from '../model/event-loop-turns.js';
import { requireRun } from './run-queries.js';

/**
 * A stored run as a format's writer reads it. Every answer first gives the event loop a turn and
 * checks the signal: a writer that reads from SQLite (synchronous underneath) and writes synchronously
 * would otherwise never let a Ctrl-C handler run, and an abort would wait for the whole export.
 */
export async function storeRunSource(
  store: StoreBackend,
  runId: number,
  signal: AbortSignal = new AbortController().signal,
): Promise<RunSource> {
  const run = await requireRun(store, runId);
  // The store is asked only after the turn and the check: a question asked before, then abandoned
  // by the abort, could reject with nobody listening (a joined read checks the signal itself).
  const turn = async <T>(ask: () => Promise<T>): Promise<T> => {
    await nextTurn();
    signal.throwIfAborted();
    return ask();
  };
  async function* turns<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
    for await (const item of source) {
      await nextTurn();
      signal.throwIfAborted();
      yield item;
    }
  }
  return {
    run,
    actors: () => turn(() => store.listActors(runId)),
    streams: () => turn(() => store.listStreams(runId)),
    samples: (stream, window = {}) => turns(store.readSamples({ run: runId, stream, ...window, signal })),
    columns: (stream, window = {}) => turns(store.readColumns({ run: runId, stream, ...window, signal })),
    columnsJoined: (stream, window = {}) =>
      turn(() => store.readColumnsJoined({ run: runId, stream, ...window, signal })),
    bracket: (args) => turn(() => store.bracketMany(runId, args)),
    attachments: () => turn(() => store.listAttachments(runId)),
    attachment: (name) => turn(() => store.getAttachment(runId, name)),
  };
}
