/**
 * A simulator process for the ingest crash test: it records through the TypeScript client at the URL
 * given as argv[2] and prints `ack N` whenever the server has acknowledged batches up to step N (as JSON
 * samples, or as binary columns with argv[3] = `binary`). The
 * parent kills it with SIGKILL and checks that the server closed the run as interrupted with every
 * acknowledged sample.
 */
import { IngestClient } from '../../src/ingest/ingest-client.js';
import { poseSample, poseStream } from './ingest-helpers.js';

const url = process.argv[2]!;
const binary = process.argv[3] === 'binary';
const batch = 5;
const client = await IngestClient.connect({
  url,
  simulator: { name: 'crash-client' },
  protocol: binary ? 2 : 1,
});
const run = await client.beginRun();
await client.declareActors([{ id: 'car', kind: 'vehicle' }]);
await client.declareStreams([poseStream('car')]);
process.stdout.write(`run ${run}\n`);
for (let step = 0; ; step += batch) {
  const samples = Array.from({ length: batch }, (_, i) => poseSample(step + i));
  if (binary) {
    const column = (name: string): number[] => samples.map((s) => s[name] as number);
    await client.appendColumns([
      {
        stream: 'car/pose',
        t: column('t'),
        step: column('step'),
        columns: { x: column('x'), v: column('v') },
      },
    ]);
  } else await client.append({ 'car/pose': samples });
  process.stdout.write(`ack ${step + batch}\n`);
}
