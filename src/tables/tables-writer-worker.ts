/** A tables writer's thread (tables-writer-threads.ts): the store opened again, parts of runs written and staged. */
import { parentPort, workerData } from 'node:worker_threads';
import { SimrecError } from '../model/errors.js';
import { openStore } from '../store/open-store.js';
import { writeRunPart } from './keep-tables.js';
import { TablesFolder } from './tables-folder.js';
import type { TablesWriterJob, TablesWriterMessage } from './tables-writer-threads.js';

const job = workerData as TablesWriterJob;
const tell = (message: TablesWriterMessage): void => parentPort!.postMessage(message);
// Only reading: runs another process left open are that process's to close, or the server's.
const store = await openStore(job.location, { recoverAbandoned: false });
try {
  const folder = new TablesFolder(job.folder, { stagingTag: job.stagingTag });
  const signal = new AbortController().signal; // stopped by terminate()
  // Samples written by the parts before, and those the parts after are expected to hold.
  let before = 0;
  let after = job.pieces.reduce((sum, p) => sum + p.samples, 0);
  for (const piece of job.pieces) {
    after -= piece.samples;
    let written = 0;
    const staged = await writeRunPart(
      store,
      folder,
      { run: piece.run, tables: new Set(piece.tables), part: piece.part },
      {
        warn: (where, message) => tell({ type: 'warn', where, message }),
        onProgress: (done, of) => {
          written = of;
          tell({ type: 'progress', done: before + done, total: before + of + after });
        },
        signal,
      },
    );
    before += written;
    tell({ type: 'staged', run: piece.run, part: piece.part.index, staged });
  }
  tell({ type: 'done' });
} catch (error) {
  tell({
    type: 'failed',
    code: error instanceof SimrecError ? error.code : 'io',
    message: (error as Error).message,
  });
} finally {
  await store.close();
}
