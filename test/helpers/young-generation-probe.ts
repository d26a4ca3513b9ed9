/**
 * Run by young-generation.test.ts in a process of its own (V8's flags are the process's): with a
 * number as argv[2], holds the young generation to that many MiB (as `simrec serve` does), then, either
 * way, starts a worker thread (which makes Node apply V8's flags again) and keeps a stream of objects
 * alive for a few collections each, a little at a time, as an ingest server under a flood does (it
 * returns to its event loop after each socket read). Prints, as JSON, the
 * largest young generation V8 had, in MiB.
 */
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import { limitYoungGeneration } from '../../src/server/young-generation.js';

const limit = process.argv[2] === undefined ? undefined : Number(process.argv[2]);
const stop = limit === undefined ? undefined : limitYoungGeneration(limit);
const worker = new Worker('setInterval(() => {}, 1000)', { eval: true });
await new Promise((resolve) => worker.once('online', resolve));

const youngBytes = (): number =>
  v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size;
let largest = youngBytes();
const alive: object[][] = [];
for (let round = 0; round < 3_000; round++) {
  const batch: object[] = [];
  for (let i = 0; i < 2_000; i++) batch.push({ id: `v${i}`, x: i * 0.5, wheels: [i, i + 1] });
  alive.push(batch);
  if (alive.length > 100) alive.shift();
  largest = Math.max(largest, youngBytes());
  // A server returns to its event loop between messages; the check runs there.
  await new Promise((resolve) => setImmediate(resolve));
}
stop?.();
await worker.terminate();
process.stdout.write(JSON.stringify({ largestMiB: largest / 2 ** 20 }) + '\n');
