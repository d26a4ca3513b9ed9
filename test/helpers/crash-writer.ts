/**
 * A recording process for the crash tests. It records a deterministic run into the store given as
 * argv[2] and prints `ack N` after each commit that the store acknowledged as durable (N samples of
 * `car/state` in all). The parent kills it with SIGKILL at a moment of its choosing and then checks
 * that every acknowledged sample is in the store.
 */
import { openStore } from '../../src/store/open-store.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { RunRecorder } from '../../src/record/run-recorder.js';
import { stateStream } from '../../src/model/standard-streams.js';
import { crashSample } from './crash-sample.js';

const location = process.argv[2]!;
const batch = Number(process.argv[3] ?? 7);
// argv[4]: samples per sealed chunk (SQLite only): small, so that the writer thread seals all the time.
const chunkSamples = process.argv[4] ? Number(process.argv[4]) : undefined;
const store = chunkSamples
  ? SqliteBackend.open(location, { chunkSamples, blockSamples: 16 })
  : await openStore(location);
const rec = await RunRecorder.begin(
  store,
  { simulator: { name: 'crash-writer' }, begin: 1_000_000 },
  { commitIntervalMs: 1 },
);
await rec.declareActor({ id: 'car', kind: 'vehicle' });
await rec.declareStream(stateStream('car'));
process.stdout.write(`run ${rec.id}\n`);
let written = 0;
for (;;) {
  const samples = Array.from({ length: batch }, (_, i) => crashSample(written + i));
  await rec.appendBatch('car/state', samples);
  written += batch;
  process.stdout.write(`ack ${written}\n`);
}
