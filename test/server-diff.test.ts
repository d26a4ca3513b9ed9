/**
 * `GET /api/diff` on runs long enough that a comparison takes a while: the server keeps answering its
 * other requests meanwhile (a comparison of two hour-long runs held it for seconds), and past a few
 * comparisons waiting their turn another is refused rather than queued without end.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-server-diff-');
let store: StoreBackend;
let server: RunningServer;
let diffPath: string;

before(async () => {
  store = await openStore(join(dir.path, 'diff.db'));
  // Two runs of 10 minutes of 60 vehicles at 10 Hz (about 37,000 states each): each comparison reads
  // both through, a few hundred milliseconds here.
  const a = await recordSyntheticRun(store, { duration: 600, vehicles: 60 });
  const b = await recordSyntheticRun(store, { duration: 600, vehicles: 60 });
  diffPath = `/api/diff?a=${a.id}&b=${b.id}`;
  server = await startServer({ store, port: 0 });
});

after(async () => {
  await server.close();
  await store.close();
  dir.cleanup();
});

/** When each answer came, in the order they came. */
function answered(order: string[], name: string, response: Promise<Response>) {
  return response.then(async (r) => {
    const body = (await r.json()) as Record<string, unknown>;
    order.push(name);
    return { status: r.status, headers: r.headers, body };
  });
}

describe('comparisons on the server', () => {
  it('other requests are answered while two runs are compared', async () => {
    const order: string[] = [];
    const diff = answered(order, 'diff', fetch(new URL(diffPath, server.url)));
    // Asked once the comparison is under way: answered before it ends, not after.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const health = answered(order, 'health', fetch(new URL('/api/health', server.url)));
    const runs = answered(order, 'runs', fetch(new URL('/api/runs', server.url)));
    const [d, h, r] = await Promise.all([diff, health, runs]);
    assert.equal(d.status, 200);
    assert.equal(d.body.same, true, 'two runs of the same synthetic traffic are the same');
    assert.equal(h.status, 200);
    assert.equal(r.status, 200);
    assert.deepEqual(order, ['health', 'runs', 'diff']);
  });

  it('past four comparisons waiting behind the one running, another is refused: 503, Retry-After', async () => {
    const asked = Array.from({ length: 7 }, () => fetch(new URL(diffPath, server.url)));
    const answers = await Promise.all(asked.map((r) => answered([], 'diff', r)));
    const refused = answers.filter((a) => a.status === 503);
    const done = answers.filter((a) => a.status === 200);
    assert.equal(done.length, 5, 'the one running and four waiting');
    assert.equal(refused.length, 2);
    for (const a of refused) {
      assert.equal(a.body.code, 'busy');
      assert.match(String(a.body.error), /5 comparisons are running or waiting/);
      assert.equal(a.headers.get('retry-after'), '10');
    }
    for (const a of done) assert.equal(a.body.same, true);
    // Once answered, the next is taken again.
    assert.equal((await answered([], 'diff', fetch(new URL(diffPath, server.url)))).status, 200);
  });
});
