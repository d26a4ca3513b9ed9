/**
 * A fresh process's first read of a run, as a command that asks once makes it: the store opened with
 * its defaults, then one scene at the run's middle or one actor's whole trajectory, timed alone.
 * viewer-big-run.ts starts it in a process of its own for each measurement; it prints one JSON line.
 *
 *   node dist/bench/first-read.js STORE RUN scene|trajectory ACTOR
 */
import { sceneAt, trajectoryColumns } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';

export interface FirstRead {
  /** The read alone, ms (the store's open before it is not counted). */
  ms: number;
  /** Actors in the scene, or samples in the trajectory. */
  count: number;
}

const [path, runText, what, actor] = process.argv.slice(2);
const store = await openStore(path!);
try {
  const run = await store.getRun(Number(runText));
  if (!run) throw new Error(`${path}: no run ${runText}`);
  const start = performance.now();
  const count =
    what === 'scene'
      ? (await sceneAt(store, run.id, { t: Math.round((run.begin + (run.end ?? run.begin)) / 2) })).actors
          .length
      : (await trajectoryColumns(store, run.id, { actor: actor! })).t.length;
  const result: FirstRead = { ms: Math.round((performance.now() - start) * 10) / 10, count };
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  await store.close();
}
