/** A tables writer's thread (tables-writer-threads.ts): the store opened again, its runs' tables kept in step. */
import { parentPort, workerData } from 'node:worker_threads';
import { SimrecError } from '../model/errors.js';
import { openStore } from '../store/open-store.js';
import { keepTablesInStep } from './keep-tables.js';
import { TablesFolder } from './tables-folder.js';
import type { TablesWriterJob, TablesWriterMessage } from './tables-writer-threads.js';

const job = workerData as TablesWriterJob;
const tell = (message: TablesWriterMessage): void => parentPort!.postMessage(message);
// Only reading: runs another process left open are that process's to close, or the server's.
const store = await openStore(job.location, { recoverAbandoned: false });
try {
  const result = await keepTablesInStep(
    store,
    new TablesFolder(job.folder, { stagingTag: job.stagingTag }),
    job.runs,
    {
      warn: (where, message) => tell({ type: 'warn', where, message }),
      onProgress: (done, total) => tell({ type: 'progress', done, total }),
    },
  );
  tell({ type: 'done', result });
} catch (error) {
  tell({
    type: 'failed',
    code: error instanceof SimrecError ? error.code : 'io',
    message: (error as Error).message,
  });
} finally {
  await store.close();
}
