import { gzipSync } from 'node:zlib';
import type { MiddlewareHandler } from 'hono';
import { accepts } from 'hono/accepts';
import { compress } from 'hono/compress';

/** Answers shorter than this go as they are: too small to gain from compression. */
const MIN_COMPRESSED_BYTES = 1024;
/** By default, answers of known length up to this are compressed whole; longer ones as a stream. */
const WHOLE_ANSWER_BYTES = 4 * 1024 * 1024;
const NO_TRANSFORM = /(?:^|,)\s*no-transform\s*(?:,|$)/i;

/** The bytes of answers made whole by the server's routes (wholeAnswer), by answer. */
const wholeBodies = new WeakMap<Response, Uint8Array>();

/**
 * Marks `answer` as made of `bytes` (the body it was made with), so that compressing it takes them as
 * they are: reading an answer's body back goes through a web stream, which took longer than writing
 * and compressing a run's detail (about 30 ms of a fresh page's three first answers). Returns `answer`.
 */
export function wholeAnswer(answer: Response, bytes: Uint8Array): Response {
  wholeBodies.set(answer, bytes);
  return answer;
}

/**
 * Answers compressed with gzip for a client that accepts it, those of a type `compressible` names.
 *
 * An answer whose length is known (a run's detail, a window of states, a road network) is compressed
 * whole, at once, on the server's thread (a detail of 750 KB in about 2 ms). hono's middleware
 * compresses as a stream on libuv's threads, each piece handed back through the event loop, so an
 * answer was finished only when the thread next came free: a page's detail, asked for while another
 * page's window was being read (40 to 150 ms on a long run), waited for the read before its last bytes
 * left (viewer.md, several pages). Streamed answers, and those over `wholeBytes`, are still compressed
 * as a stream.
 */
export function compressAnswers(
  compressible: (contentType: string) => boolean,
  { wholeBytes = WHOLE_ANSWER_BYTES }: { wholeBytes?: number } = {},
): MiddlewareHandler {
  const streamed = compress({
    encoding: 'gzip',
    threshold: MIN_COMPRESSED_BYTES,
    contentTypeFilter: compressible,
  });
  return async (c, next) => {
    await next();
    const answer = c.res;
    const length = Number(answer.headers.get('content-length') ?? Number.NaN);
    const whole =
      Number.isSafeInteger(length) &&
      length >= MIN_COMPRESSED_BYTES &&
      length <= wholeBytes &&
      answer.status !== 206 &&
      c.req.method !== 'HEAD' &&
      answer.body !== null &&
      !answer.headers.has('content-encoding') &&
      compressible(answer.headers.get('content-type') ?? '') &&
      !NO_TRANSFORM.test(answer.headers.get('cache-control') ?? '');
    if (!whole) {
      await streamed(c, () => Promise.resolve());
      return;
    }
    // Whatever is chosen, a cache must know the answer depends on what the client accepts.
    const vary = answer.headers.get('vary');
    if (vary === null) answer.headers.set('vary', 'Accept-Encoding');
    else if (vary !== '*' && !/\baccept-encoding\b/i.test(vary))
      answer.headers.set('vary', `${vary}, Accept-Encoding`);
    if (accepts(c, { header: 'Accept-Encoding', supports: ['gzip'], default: 'identity' }) !== 'gzip') return;
    const body = gzipSync(wholeBodies.get(answer) ?? new Uint8Array(await answer.arrayBuffer()));
    const headers = new Headers(answer.headers);
    headers.set('content-encoding', 'gzip');
    headers.set('content-length', String(body.length));
    const etag = headers.get('etag');
    if (etag && !etag.startsWith('W/')) headers.set('etag', `W/${etag}`);
    // Replaced, not merged: hono's setter copies the old answer's headers (its length) over a new one.
    c.res = undefined;
    c.res = new Response(body, { status: answer.status, statusText: answer.statusText, headers });
  };
}
