import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { SimrecError, type ErrorCode } from '../model/errors.js';
import { STATE_STREAM } from '../model/standard-streams.js';
import type { StoreBackend } from '../model/store-port.js';
import { parseFieldNames, streamId, type FieldDecl, type Sample } from '../model/stream.js';
import { describeRun, requireActor, requireRun, sceneAt, streamSamples } from '../replay/run-queries.js';
import { ChangedRows } from '../replay/sample-changes.js';
import { EventLoopTurns, whileAsked } from '../model/event-loop-turns.js';
import { toJson } from '../model/json.js';
import { wholeAnswer } from './answer-compression.js';
import { BirdviewCache } from './birdview-images.js';
import { ROADNET_ATTACHMENT } from '../roadnet/roadnet-attachment.js';
import { RecordingSettings } from './recording-settings.js';
import { CaptureIndexes } from './run-captures.js';
import { runEvaluation, withScores } from './run-scores.js';
import { STATE_WINDOW_MEDIA_TYPE } from './state-window-wire.js';
import { readStateWindow, stateWindowBytes, stateWindowJson, windowBounds } from './state-windows.js';
import type {
  CapturesAnswer,
  CapturesApart,
  CaptureTimesAnswer,
  HealthAnswer,
  RunDetail,
  SharedFieldsRunDetail,
  RunListEntry,
  SamplesAnswer,
  SceneAnswer,
  StateWindow,
  TrajectoryAnswer,
} from './wire-types.js';

const STATUS: Record<ErrorCode, 400 | 404 | 409 | 422 | 500> = {
  invalid: 400,
  not_found: 404,
  conflict: 409,
  unsupported: 422,
  io: 500,
};

/**
 * How much of a run one answer holds: /samples and /trajectory answer at most `limit` samples
 * (MAX_PAGE_SAMPLES, the default and the most) and say where the rest begins (`next`); /states answers
 * a window (state-windows.ts).
 */
export const MAX_PAGE_SAMPLES = 100_000;

/**
 * A page of a stream's samples over [from, to]: at most `limit`, ending before a time whose samples do
 * not all fit (so `next`, the `from` of the next page, repeats none); read a batch at a time and no
 * further than the page needs.
 */
async function samplePage(
  batches: AsyncIterable<Sample[]>,
  limit: number,
  what: string,
  signal: AbortSignal,
): Promise<{ samples: Sample[]; next: number | null }> {
  const samples: Sample[] = [];
  // A page of a long run takes a while to read: other requests are answered between its batches, and
  // a client that has gone (a page closed or moved on) stops the reading.
  const turns = new EventLoopTurns();
  await whileAsked(signal, what, async () => {
    for await (const batch of batches) {
      await turns.take();
      for (const sample of batch) samples.push(sample);
      if (samples.length > limit) break;
    }
  });
  if (samples.length <= limit) return { samples, next: null };
  const next = samples[limit]!.t;
  let end = limit;
  while (end > 0 && samples[end - 1]!.t === next) end--;
  if (end === 0)
    throw new SimrecError(
      'invalid',
      `${what}: more than ${limit} samples at t=${next}; ask with a larger limit (at most ${MAX_PAGE_SAMPLES})`,
    );
  samples.length = end;
  return { samples, next };
}

/** Samples made into JSON at once; a longer page is written a slice of this many at a time. */
const SAMPLES_SLICE = 2_000;

/** The camera images one /captures answer holds at most: a minute of a camera at 30 Hz. */
const CAPTURES_PAGE = 2_000;

/**
 * A page of samples as JSON: the same text as `json` gives, but a long page is written a slice of
 * samples at a time, the event loop given a turn between slices. Made into one JSON text, a page of
 * 100,000 samples held the server's thread for most of a second, every other viewer's request waiting.
 * Such a page goes as a stream (compressed as one, on libuv's threads).
 */
function samplesAnswer<T extends { samples: Sample[] }>(c: Context, answer: T): Response {
  const { samples } = answer;
  if (samples.length <= SAMPLES_SLICE) return json(c, answer);
  const encoder = new TextEncoder();
  async function* pieces(): AsyncGenerator<string> {
    const turns = new EventLoopTurns();
    let opened = false;
    for (const [key, value] of Object.entries(answer)) {
      if (value === undefined) continue;
      const head = `${opened ? ',' : '{'}${JSON.stringify(key)}:`;
      opened = true;
      if (value !== samples) {
        yield head + toJson(value, 0);
        continue;
      }
      yield `${head}[`;
      for (let i = 0; i < samples.length; i += SAMPLES_SLICE) {
        await turns.take();
        const slice = toJson(samples.slice(i, i + SAMPLES_SLICE), 0);
        yield (i === 0 ? '' : ',') + slice.slice(1, -1);
      }
      yield ']';
    }
    yield '}';
  }
  const text = pieces();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await text.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await text.return(undefined);
    },
  });
  return c.body(body, 200, { 'content-type': 'application/json' });
}

function limitParam(c: Context): number {
  const limit = intParam(c, 'limit', MAX_PAGE_SAMPLES)!;
  if (limit < 1 || limit > MAX_PAGE_SAMPLES)
    throw new SimrecError(
      'invalid',
      `query parameter limit: expected 1 to ${MAX_PAGE_SAMPLES} samples, got ${limit}`,
    );
  return limit;
}

function intParam(c: Context, name: string, fallback?: number): number | undefined {
  const raw = c.req.query(name);
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value))
    throw new SimrecError(
      'invalid',
      `query parameter ${name}: expected an integer (microseconds), got ${JSON.stringify(raw)}`,
    );
  return value;
}

/** The window a request asks for (`from`, `to`: inclusive, microseconds since the epoch). */
function windowParams(c: Context): { from?: number; to?: number } {
  const window: { from?: number; to?: number } = {};
  const from = intParam(c, 'from');
  const to = intParam(c, 'to');
  if (from !== undefined) window.from = from;
  if (to !== undefined) window.to = to;
  return window;
}

/** `fields=a,b`: only these fields of each sample (t and step always); undefined when not given. */
function fieldsParam(c: Context): string[] | undefined {
  const text = c.req.query('fields');
  return text === undefined ? undefined : parseFieldNames('query parameter fields', text);
}

/**
 * The time a request asks about: `t` in microseconds since the epoch, or `at` in seconds from the
 * run's begin (as the command line's --at).
 */
async function timeParam(c: Context, store: StoreBackend, run: number): Promise<number> {
  const at = c.req.query('at');
  const t = intParam(c, 't');
  if (at !== undefined && at !== '') {
    const seconds = Number(at);
    if (!Number.isFinite(seconds) || seconds < 0)
      throw new SimrecError(
        'invalid',
        `query parameter at: expected seconds from the run's begin (a number >= 0), got ${JSON.stringify(at)}`,
      );
    if (t !== undefined) throw new SimrecError('invalid', 'query parameters t and at: give one');
    return (await requireRun(store, run)).begin + Math.round(seconds * 1e6);
  }
  if (t === undefined)
    throw new SimrecError(
      'invalid',
      "query parameter t (microseconds since the epoch) or at (seconds from the run's begin): required",
    );
  return t;
}

/** A query parameter that must be a number; the error gives what came. */
function numberParam(name: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value))
    throw new SimrecError(
      'invalid',
      `query parameter ${name}: expected a number, got ${JSON.stringify(raw)}`,
    );
  return value;
}

/** A query parameter that is either absent or `value` (what it means, for the error). */
function choiceParam(c: Context, name: string, value: string, meaning: string): string | undefined {
  const raw = c.req.query(name);
  if (raw !== undefined && raw !== value)
    throw new SimrecError(
      'invalid',
      `query parameter ${name}: expected ${value} (${meaning}) or nothing, got ${JSON.stringify(raw)}`,
    );
  return raw;
}

function runParam(c: Context): number {
  const raw = c.req.param('run') ?? '';
  if (!/^\d+$/.test(raw))
    throw new SimrecError('invalid', `run id: expected a positive integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/**
 * Answers are typed by the wire types the viewer reads (wire-types.ts): `json<RunDetail>(c, ...)`. Their
 * length is told, so that an answer too small to gain from compression goes as it is.
 */
export function json<T = unknown>(c: Context, value: T): Response {
  return jsonText(c, toJson(value, 0));
}

/**
 * The detail with each distinct list of fields once (SharedFieldsRunDetail). Streams of one schema
 * share their list as one object in the store's lists, which is looked up first; lists that are equal
 * without being one object (another backend's) are found by their text.
 */
function withSharedFields(detail: RunDetail): SharedFieldsRunDetail {
  const fieldLists: FieldDecl[][] = [];
  const byList = new Map<FieldDecl[], number>();
  const byText = new Map<string, number>();
  const indexOf = (fields: FieldDecl[]): number => {
    let index = byList.get(fields);
    if (index === undefined) {
      const text = JSON.stringify(fields);
      index = byText.get(text);
      if (index === undefined) {
        index = fieldLists.push(fields) - 1;
        byText.set(text, index);
      }
      byList.set(fields, index);
    }
    return index;
  };
  return { ...detail, fieldLists, streams: detail.streams.map((s) => ({ ...s, fields: indexOf(s.fields) })) };
}

/** An answer already written as JSON text, encoded once (its length and its compression from the bytes). */
function jsonText(c: Context, text: string): Response {
  return bytesAnswer(c, Buffer.from(text, 'utf8'), { 'content-type': 'application/json' });
}

/**
 * An answer of bytes, its length told. A Response made of bytes does not say its length, and the
 * compression would take it for a stream: its last bytes would wait for the event loop to come free,
 * behind every other page's read (answer-compression.ts).
 */
function bytesAnswer(c: Context, bytes: Uint8Array, headers: Record<string, string>): Response {
  const whole =
    bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
      ? bytes.buffer
      : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  return wholeAnswer(
    c.body(whole as ArrayBuffer, 200, { ...headers, 'content-length': String(bytes.byteLength) }),
    bytes,
  );
}

/** Errors become answers here, with the status their code implies; the server never crashes on a bad request. */
export function answerError(error: Error, c: Context): Response {
  if (error instanceof SimrecError)
    return c.json({ error: error.message, code: error.code }, STATUS[error.code]);
  console.error(error);
  return c.json({ error: `internal error: ${error.message}`, code: 'io' }, 500);
}

/** A settings change is a few bytes; a larger body is refused before it is read into memory. */
export const smallBody = (what: string) =>
  bodyLimit({
    maxSize: 64 * 1024,
    onError: () => {
      throw new SimrecError('invalid', `${what}: request body over 64 KiB; refused`);
    },
  });

export async function jsonBody(c: Context, what: string): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new SimrecError('invalid', `${what}: the request body is not JSON`);
  }
}

/**
 * Raster images a browser only ever draws; the viewer shows captures of these types inline. Anything
 * else (HTML, SVG, JavaScript, PDF... any bytes a simulator sent) would run as a page of this
 * server's origin, with its token and its API, if a browser opened it: it is sent as a download.
 */
const INLINE_MEDIA_TYPES = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/bmp',
  'image/avif',
]);

/**
 * How an attachment is answered: never as active content of the API's origin. Besides the disposition,
 * `nosniff` stops a browser from guessing HTML in an image, and the sandbox CSP gives whatever is
 * opened anyway a unique origin with no scripts.
 */
export function attachmentHeaders(name: string, mediaType: string): Record<string, string> {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const ascii = base.replace(/[^\w.+-]/g, '_');
  const inline = INLINE_MEDIA_TYPES.has(mediaType.toLowerCase());
  return {
    'content-type': mediaType,
    'content-disposition': `${inline ? 'inline' : 'attachment'}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(base)}`,
    'x-content-type-options': 'nosniff',
    'content-security-policy':
      "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; frame-ancestors 'none'",
  };
}

/** The HTTP API over a store: everything the viewer shows, as JSON. Errors become answers in `answerError`. */
export function createApi(store: StoreBackend, settings: RecordingSettings = new RecordingSettings()): Hono {
  const api = new Hono();

  api.onError(answerError);

  api.get('/settings', (c) => json(c, settings.get()));
  api.put('/settings', smallBody('settings'), async (c) =>
    json(c, settings.update(await jsonBody(c, 'settings'))),
  );

  api.get('/health', (c) =>
    json<HealthAnswer>(c, { store: { kind: store.kind, location: store.location, status: 'connected' } }),
  );

  api.get('/runs', async (c) => json<RunListEntry[]>(c, await withScores(store, await store.listRuns())));

  /**
   * Run details being written, by run: a request that arrives while one is written shares it. Every
   * viewer of a live run asks at once, at each update the live channel sends (twice a second while the
   * run grows), and a big run's detail (its actors and streams) was written once per viewer. Nothing
   * is kept once written: the next request reads the run as it is then.
   */
  const detailsBeingWritten = new Map<string, Promise<string>>();
  const captureIndexes = new CaptureIndexes(store);
  const writeDetail = async (run: number, sharedFields: boolean, capturesApart: boolean): Promise<string> => {
    const attachmentsVersion = (await store.attachmentsVersion(run)) ?? null;
    const captures = capturesApart ? await captureIndexes.of(run) : undefined;
    const d = await describeRun(store, run, captures && (async () => captures.others));
    const detail: RunDetail | (RunDetail & CapturesApart) = {
      ...d,
      hasRoadNetwork: d.attachments.some((a) => a.name === ROADNET_ATTACHMENT),
      evaluation: await runEvaluation(store, d.run.id, d.samples),
      attachmentsVersion,
      ...(captures ? { captures: captures.summary() } : {}),
    };
    return toJson(sharedFields ? withSharedFields(detail) : detail, 0);
  };
  api.get('/runs/:run', async (c) => {
    const run = runParam(c);
    const fields = choiceParam(c, 'fields', 'shared', 'each list of fields once');
    const captures = choiceParam(c, 'captures', 'apart', 'the camera images counted, not listed');
    const key = `${run}:${fields ?? ''}:${captures ?? ''}`;
    let detail = detailsBeingWritten.get(key);
    if (!detail) {
      detail = writeDetail(run, fields !== undefined, captures !== undefined).finally(() =>
        detailsBeingWritten.delete(key),
      );
      detailsBeingWritten.set(key, detail);
    }
    return jsonText(c, await detail);
  });

  api.get('/runs/:run/captures', async (c) => {
    const run = runParam(c);
    await requireRun(store, run);
    const from = intParam(c, 'from');
    const to = intParam(c, 'to');
    if (from === undefined || to === undefined || to < from)
      throw new SimrecError(
        'invalid',
        `query parameters from and to: expected both, from <= to (microseconds), got ${JSON.stringify(c.req.query('from') ?? null)} and ${JSON.stringify(c.req.query('to') ?? null)}`,
      );
    const window = (await captureIndexes.of(run)).window(c.req.query('sensor'), from, to, CAPTURES_PAGE);
    return json<CapturesAnswer>(c, window);
  });

  api.get('/runs/:run/capture-times', async (c) => {
    const run = runParam(c);
    const info = await requireRun(store, run);
    const raw = c.req.query('buckets');
    const buckets = raw === undefined || raw === '' ? 1000 : Number(raw);
    if (!Number.isInteger(buckets) || buckets < 1 || buckets > 100_000)
      throw new SimrecError(
        'invalid',
        `query parameter buckets: expected an integer from 1 to 100000, got ${JSON.stringify(c.req.query('buckets'))}`,
      );
    const captures = await captureIndexes.of(run);
    return json<CaptureTimesAnswer>(c, { times: captures.firstTimes(info.begin, info.end, buckets) });
  });

  api.get('/runs/:run/scene', async (c) => {
    const run = runParam(c);
    const t = await timeParam(c, store, run);
    return json<SceneAnswer>(
      c,
      // Only the blocks holding t: a page's inspector asks at every pause of its playback, and whole
      // chunks of every actor decoded at once (a seeking reader's read-ahead) held the server's thread
      // from every other page (viewer.md, long runs).
      await sceneAt(store, run, {
        t,
        interpolate: c.req.query('interpolate') === '1',
        includeDeparted: c.req.query('departed') === '1',
        readAhead: false,
      }),
    );
  });

  /** DI-drive's bird's-eye view of a moment, as `simrec birdview` draws it (what a didrive export holds). */
  const birdviews = new BirdviewCache(store);
  api.get('/runs/:run/birdview', async (c) => {
    const run = runParam(c);
    const t = await timeParam(c, store, run);
    const png = await birdviews.png(run, t);
    return bytesAnswer(c, png, { 'content-type': 'image/png', 'cache-control': 'no-store' });
  });

  /**
   * Every actor's pose over a window, column by column: what the viewer plays back from, as binary
   * columns with `format=columns` (state-window-wire.ts), as JSON otherwise. Read as columns of the four
   * fields it plays (the store decodes no other), not as sample objects of every field.
   */
  api.get('/runs/:run/states', async (c) => {
    const run = runParam(c);
    const format = c.req.query('format') ?? 'json';
    if (format !== 'json' && format !== 'columns')
      throw new SimrecError(
        'invalid',
        `query parameter format: expected json or columns, got ${JSON.stringify(format)}`,
      );
    const moment = c.req.query('moment');
    const bounds = await windowBounds(
      store,
      run,
      {
        from: intParam(c, 'from'),
        to: intParam(c, 'to'),
        around: intParam(c, 'around'),
        moment: moment === undefined || moment === '' ? undefined : numberParam('moment', moment),
      },
      (field) => `query parameter ${field}`,
    );
    // The request's signal: a page that sought elsewhere closes it, and the reading stops.
    const window = await readStateWindow(store, run, bounds, c.req.raw.signal);
    if (format === 'json') return json<StateWindow>(c, stateWindowJson(window));
    return bytesAnswer(c, stateWindowBytes(window), { 'content-type': STATE_WINDOW_MEDIA_TYPE });
  });

  api.get('/runs/:run/trajectory/:actor', async (c) => {
    const run = runParam(c);
    const actor = c.req.param('actor');
    const limit = limitParam(c);
    const window = windowParams(c);
    await requireActor(store, run, actor);
    const page = await samplePage(
      streamSamples(store, run, streamId(actor, STATE_STREAM), {
        ...window,
        transient: true,
        signal: c.req.raw.signal,
      }),
      limit,
      `trajectory of ${actor}`,
      c.req.raw.signal,
    );
    return samplesAnswer<TrajectoryAnswer>(c, { actor, ...page });
  });

  /**
   * Any stream over a window. The stream id may contain `/` (actor/name), so it is a query parameter.
   * `changes=1`: only the samples whose values differ from the sample before them (a page after the
   * first begins with its first sample, whatever the one before it held).
   */
  api.get('/runs/:run/samples', async (c) => {
    const run = runParam(c);
    const stream = c.req.query('stream');
    if (!stream) throw new SimrecError('invalid', 'query parameter stream: required (e.g. ego/state)');
    const limit = limitParam(c);
    const changes = c.req.query('changes');
    if (changes !== undefined && changes !== '0' && changes !== '1')
      throw new SimrecError(
        'invalid',
        `query parameter changes: expected 0 or 1, got ${JSON.stringify(changes)}`,
      );
    // Not kept in the store's caches: each page is a copy into JSON, and a server that kept the decoded
    // chunks of every stream its pages went through held the runs they were shown, not what they show.
    const fields = fieldsParam(c);
    // With changes=1 and fields=state, a traffic light's hour is its few hundred switches of state, not
    // the 36,000 samples its countdown changes at.
    const samples = streamSamples(store, run, stream, {
      ...windowParams(c),
      ...(fields ? { fields } : {}),
      ...(changes === '1' ? { rows: new ChangedRows() } : {}),
      transient: true,
      signal: c.req.raw.signal,
    });
    const page = await samplePage(samples, limit, stream, c.req.raw.signal);
    return samplesAnswer<SamplesAnswer>(c, { stream, ...page });
  });

  api.get('/runs/:run/roadnet', async (c) => {
    const run = runParam(c);
    await requireRun(store, run);
    const attachment = await store.getAttachment(run, ROADNET_ATTACHMENT);
    if (!attachment) throw new SimrecError('not_found', `run ${run} has no road network`);
    return bytesAnswer(c, attachment.data, { 'content-type': 'application/json' });
  });

  api.get('/runs/:run/attachments', async (c) => {
    const run = runParam(c);
    await requireRun(store, run);
    return json(c, await store.listAttachments(run));
  });

  api.get('/runs/:run/attachment', async (c) => {
    const run = runParam(c);
    const name = c.req.query('name') ?? '';
    const attachment = await store.getAttachment(run, name);
    if (!attachment)
      throw new SimrecError('not_found', `run ${run} has no attachment ${JSON.stringify(name)}`);
    return bytesAnswer(c, attachment.data, attachmentHeaders(attachment.name, attachment.mediaType));
  });

  api.get('/scenarios', async (c) => json(c, await store.scenarios.list()));
  api.get('/vehicles', async (c) => json(c, await store.vehicles.list()));

  return api;
}
