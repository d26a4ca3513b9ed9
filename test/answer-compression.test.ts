/**
 * How the server compresses its answers (src/server/answer-compression.ts): those of known length whole,
 * finished without waiting for the event loop, so that a page's detail is not held by another page's
 * read; streamed ones as before.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { Hono, type MiddlewareHandler } from 'hono';
import { compress } from 'hono/compress';
import { compressAnswers, wholeAnswer } from '../src/server/answer-compression.js';

const compressible = (type: string): boolean => type.startsWith('application/json');
const DETAIL = JSON.stringify({
  streams: Array.from({ length: 2000 }, (_, i) => ({ id: `veh${i}/state`, fields: ['x', 'y', 'yaw'] })),
});
const jsonHeaders = (text: string, more: Record<string, string> = {}): Record<string, string> => ({
  'content-type': 'application/json',
  'content-length': String(Buffer.byteLength(text)),
  ...more,
});

function appWith(middleware: MiddlewareHandler): Hono {
  const app = new Hono();
  app.use('*', middleware);
  app.get('/detail', (c) => c.body(DETAIL, 200, jsonHeaders(DETAIL)));
  app.get('/small', (c) => c.body('{"ok":true}', 200, jsonHeaders('{"ok":true}')));
  app.get('/image', (c) => c.body(Buffer.alloc(4096, 7), 200, { 'content-type': 'image/png' }));
  app.get('/no-transform', (c) =>
    c.body(DETAIL, 200, jsonHeaders(DETAIL, { 'cache-control': 'no-transform' })),
  );
  // Marked whole with the bytes it was made of: its body, a stream that fails when read, is never read.
  app.get('/marked', () => {
    const unread = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.error(new Error('the body was read back')),
    });
    return wholeAnswer(new Response(unread, { headers: jsonHeaders(DETAIL) }), Buffer.from(DETAIL));
  });
  app.get('/tagged', (c) => c.body(DETAIL, 200, jsonHeaders(DETAIL, { etag: '"v1"', vary: 'Origin' })));
  // An answer of unknown length, as a stream of NDJSON lines.
  app.get('/stream', (c) => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 200; i++)
          controller.enqueue(new TextEncoder().encode(`{"line":${i},"pad":"${'x'.repeat(40)}"}\n`));
        controller.close();
      },
    });
    return c.body(body, 200, { 'content-type': 'application/json' });
  });
  return app;
}

const ask = (app: Hono, path: string, headers: Record<string, string>, method = 'GET') =>
  app.request(path, { method, headers });

/** Whether the answer's body is all there before the event loop takes another turn. */
async function finishedWithinTheTurn(answer: Response): Promise<boolean> {
  const nextTurn = new Promise<'turn'>((resolve) => setImmediate(() => resolve('turn')));
  const body = answer.arrayBuffer().then(() => 'body' as const);
  return (await Promise.race([body, nextTurn])) === 'body';
}

describe('answer compression', () => {
  const app = appWith(compressAnswers(compressible));

  it('compresses an answer of known length whole: its length told, the same bytes once gunzipped', async () => {
    const answer = await ask(app, '/detail', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(answer.headers.get('content-encoding'), 'gzip');
    assert.equal(answer.headers.get('vary'), 'Accept-Encoding');
    const body = Buffer.from(await answer.arrayBuffer());
    assert.equal(Number(answer.headers.get('content-length')), body.length);
    assert.equal(gunzipSync(body).toString(), DETAIL);
    assert.ok(body.length < Buffer.byteLength(DETAIL) / 5, `${body.length} bytes of ${DETAIL.length}`);
  });

  it('compresses an answer marked whole from the bytes it was made of, not reading its body back', async () => {
    const answer = await ask(app, '/marked', { 'accept-encoding': 'gzip' });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('content-encoding'), 'gzip');
    assert.equal(gunzipSync(Buffer.from(await answer.arrayBuffer())).toString(), DETAIL);
  });

  it('finishes a whole answer without waiting for the event loop, which a streamed one does', async () => {
    // The reason it exists: while another page's window is read, the event loop is not free.
    const whole = await ask(app, '/detail', { 'accept-encoding': 'gzip' });
    assert.equal(await finishedWithinTheTurn(whole), true, 'compressed whole within the turn');
    const streamedApp = appWith(compress({ encoding: 'gzip', contentTypeFilter: compressible }));
    const streamed = await ask(streamedApp, '/detail', { 'accept-encoding': 'gzip' });
    assert.equal(streamed.headers.get('content-encoding'), 'gzip');
    assert.equal(
      await finishedWithinTheTurn(streamed),
      false,
      "hono's streamed compression waits for a turn",
    );
  });

  it('sends the answer as it is to a client that does not accept gzip, telling caches it depends on that', async () => {
    const offers: Record<string, string>[] = [
      {},
      { 'accept-encoding': 'gzip;q=0, deflate' },
      { 'accept-encoding': 'identity' },
    ];
    for (const headers of offers) {
      const answer = await ask(app, '/detail', headers);
      assert.equal(answer.headers.get('content-encoding'), null, JSON.stringify(headers));
      assert.equal(answer.headers.get('vary'), 'Accept-Encoding', JSON.stringify(headers));
      assert.equal(await answer.text(), DETAIL);
    }
  });

  it('leaves small answers, other types, no-transform answers and HEAD alone', async () => {
    const gzip = { 'accept-encoding': 'gzip' };
    for (const path of ['/small', '/image', '/no-transform']) {
      const answer = await ask(app, path, gzip);
      assert.equal(answer.headers.get('content-encoding'), null, path);
    }
    assert.equal(await (await ask(app, '/small', gzip)).text(), '{"ok":true}');
    const head = await ask(app, '/detail', gzip, 'HEAD');
    assert.equal(head.headers.get('content-encoding'), null);
  });

  it('keeps the headers an answer had: its other Vary, its ETag made weak', async () => {
    const answer = await ask(app, '/tagged', { 'accept-encoding': 'gzip' });
    assert.equal(answer.headers.get('content-encoding'), 'gzip');
    assert.equal(answer.headers.get('vary'), 'Origin, Accept-Encoding');
    assert.equal(answer.headers.get('etag'), 'W/"v1"');
    assert.equal(answer.headers.get('content-type'), 'application/json');
  });

  it('compresses streamed answers, and answers longer than its bound, as a stream', async () => {
    const streamed = await ask(app, '/stream', { 'accept-encoding': 'gzip' });
    assert.equal(streamed.headers.get('content-encoding'), 'gzip');
    assert.equal(streamed.headers.get('content-length'), null);
    const lines = gunzipSync(Buffer.from(await streamed.arrayBuffer()))
      .toString()
      .trim()
      .split('\n');
    assert.equal(lines.length, 200);
    assert.deepEqual(JSON.parse(lines[199]!), { line: 199, pad: 'x'.repeat(40) });

    const bounded = appWith(compressAnswers(compressible, { wholeBytes: 2048 }));
    const long = await ask(bounded, '/detail', { 'accept-encoding': 'gzip' });
    assert.equal(long.headers.get('content-encoding'), 'gzip');
    assert.equal(long.headers.get('content-length'), null, 'streamed: its length not known beforehand');
    assert.equal(gunzipSync(Buffer.from(await long.arrayBuffer())).toString(), DETAIL);
  });
});
