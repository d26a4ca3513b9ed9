/** Hostile content: every attack named in the reliability issue is refused and harms nothing. */
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SimrecError } from '../src/model/errors.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { importPerception } from './helpers/formats.js';
import { encodePng } from '../src/formats/common/labelled-images/image-files.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { describeRun, streamSamples } from '../src/replay/run-queries.js';
import { readRoadNetwork } from '../src/roadnet/read-roadnet.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import { decodeChunk } from '../src/store/common/chunk-v1.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-hostile-');
let store: StoreBackend;
let server: RunningServer;
before(async () => {
  store = await openStore(join(dir.path, 'hostile.db'));
  server = await startServer({ store, port: 0 });
});
after(async () => {
  await server.close();
  await store.close();
  dir.cleanup();
});

/** A PUT whose headers announce `length` bytes of JSON, none of which is sent: the server's answer. */
function answerBeforeBody(path: string, length: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, server.url);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: 'PUT',
        path: url.pathname,
        headers: { 'content-type': 'application/json', 'content-length': String(length) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => (req.destroy(), resolve({ status: res.statusCode!, body })));
      },
    );
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer while the body was withheld')));
    req.flushHeaders();
  });
}

const refused = (pattern: RegExp) => (error: unknown) =>
  error instanceof SimrecError && pattern.test(error.message);
const INJECTION = `x'); DROP TABLE runs; -- {"$ne": null} \${process.exit()}`;

describe('hostile content', () => {
  it('JSON nested 100,000 deep is refused without exhausting the stack', async () => {
    const rec = await RunRecorder.begin(store, {});
    await rec.declareActor({ id: 'a', kind: 'vehicle' });
    await rec.declareStream({ name: 'blob', actor: 'a', fields: [{ name: 'doc', type: 'json' }] });
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.throws(
      () => rec.append('a/blob', { t: 0, step: 0, doc: deep }),
      refused(/nested deeper than 64 levels/),
    );
    assert.throws(
      () => rec.append('a/blob', { t: 0, step: 0, doc: 1, other: deep }),
      refused(/nested deeper than 64 levels/),
    );
    await rec.end();
  });

  it('SQL and MongoDB operators in names, ids and metadata are kept as plain text', async () => {
    const rec = await RunRecorder.begin(store, {
      description: INJECTION,
      metadata: { [INJECTION]: INJECTION, $where: 'sleep(1000)' },
    });
    await rec.declareActor({ id: INJECTION, kind: 'vehicle', attributes: { $gt: '' } });
    await rec.declareStream(stateStream(INJECTION));
    await rec.append(`${INJECTION}/state`, { t: 0, step: 0, x: 1, y: 2, yaw: 0, lane: INJECTION });
    await rec.attach({ name: "a'--.bin", mediaType: 'application/octet-stream', data: new Uint8Array([1]) });
    await rec.end();
    const d = await describeRun(store, rec.id);
    assert.equal(d.run.description, INJECTION);
    assert.deepEqual(d.run.metadata, { [INJECTION]: INJECTION, $where: 'sleep(1000)' });
    assert.deepEqual(
      d.actors.map((a) => [a.id, a.attributes]),
      [[INJECTION, { $gt: '' }]],
    );
    const samples: Sample[] = [];
    for await (const b of streamSamples(store, rec.id, `${INJECTION}/state`)) samples.push(...b);
    assert.equal(samples[0]!.lane, INJECTION);
    assert.ok((await store.listRuns()).length >= 1, 'the runs table is still there');
  });

  it('the HTTP API refuses injected query parameters and oversized bodies, and keeps serving', async () => {
    const get = async (path: string) => fetch(new URL(path, server.url));
    assert.equal((await get('/api/runs/1%20OR%201=1')).status, 400);
    assert.equal((await get('/api/runs/1;DROP%20TABLE%20runs')).status, 400);
    assert.equal((await get(`/api/runs/1/samples?stream=${encodeURIComponent("x' OR '1'='1")}`)).status, 404);
    assert.equal(
      (await get('/api/runs/1/samples?stream[$ne]=x')).status,
      400,
      'an operator-shaped key is not the parameter',
    );
    assert.equal((await get('/api/runs/1/scene?t=1e400')).status, 400);
    // Announced as a mebibyte and never sent: the refusal comes from the length alone, before any of it
    // is read. (A client still writing a mebibyte when the answer comes may see the connection close
    // under it, which made a whole-body fetch here fail under load.)
    const announced = await answerBeforeBody('/api/settings', 1024 * 1024);
    assert.equal(announced.status, 400);
    assert.match(announced.body, /request body over 64 KiB/);
    const justOver = await fetch(new URL('/api/settings', server.url), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(64 * 1024 + 1),
    });
    assert.equal(justOver.status, 400);
    assert.match(((await justOver.json()) as { error: string }).error, /request body over 64 KiB/);
    assert.equal((await get('/api/runs')).status, 200);
  });

  it('XML entity expansion ("billion laughs") in a road network is refused before parsing', () => {
    const entities = [
      '<!ENTITY a0 "lollollollol">',
      ...Array.from({ length: 9 }, (_, i) => `<!ENTITY a${i + 1} "${`&a${i};`.repeat(10)}">`),
    ];
    for (const root of [
      '<net version="1.9"><edge id="&a9;"/></net>',
      '<OpenDRIVE><header name="&a9;"/></OpenDRIVE>',
    ]) {
      const text = `<?xml version="1.0"?>\n<!DOCTYPE x [\n${entities.join('\n')}\n]>\n${root}`;
      assert.throws(
        () => readRoadNetwork(text, { file: 'bomb.xml' }),
        refused(/bomb\.xml: refused: the document declares entities/),
      );
    }
    const external =
      '<?xml version="1.0"?><!DOCTYPE net [<!ENTITY x SYSTEM "file:///etc/passwd">]><net>&x;</net>';
    assert.throws(() => readRoadNetwork(external, { file: 'xxe.xml' }), refused(/declares entities/));
  });

  it('a dataset file that is a link out of the dataset folder is refused, and nothing is imported', async () => {
    const dataset = join(dir.path, 'linked');
    cpSync(fixture('perception-simrun', 'datasetinsights', 'Dataset'), join(dataset, 'Dataset'), {
      recursive: true,
    });
    const outside = join(dir.path, 'secret.png');
    writeFileSync(outside, encodePng(2, 2, 1, new Uint8Array(4)));
    // File names in Perception datasets are relative to the folder that holds Dataset/.
    mkdirSync(join(dataset, 'captures'));
    symlinkSync(outside, join(dataset, 'captures', 'camera_000.png'));
    const before = (await store.listRuns()).length;
    await assert.rejects(
      importPerception(store, dataset),
      refused(/captures\/camera_000\.png is a link that leads outside the dataset folder/),
    );
    assert.equal((await store.listRuns()).length, before, 'no run left behind');
  });

  it('a chunk of the first layout that claims a billion samples is refused at once, without allocating them', () => {
    const header = Buffer.from(
      JSON.stringify({
        n: 1e9,
        t: { kind: 'arith', start: 0, delta: 1 },
        step: { kind: 'arith', start: 0, delta: 1 },
        columns: [],
        deflate: false,
      }),
    );
    const chunk = Buffer.concat([Buffer.from('SRC1'), Buffer.alloc(4), header]);
    chunk.writeUInt32LE(header.length, 4);
    assert.throws(
      () => decodeChunk(chunk, 'chunk 9'),
      refused(/chunk 9: corrupt chunk \(header claims 1000000000 samples/),
    );
  });
});
