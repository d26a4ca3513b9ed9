import type { ActorInfo, RunInfo } from '../../src/model/run.js';
import type { StreamInfo, Sample } from '../../src/model/stream.js';
import type { AttachmentInfo } from '../../src/model/attachment.js';
import {
  decodeStateWindow,
  WINDOW_FRAME_OFFSET,
  type BinaryStateWindow,
} from '../../src/server/state-window-wire.js';
import type { RoadNetwork } from '../../src/model/roadnet.js';
import type {
  CapturesAnswer,
  CapturesApart,
  CaptureTimesAnswer,
  ErrorAnswer,
  HealthAnswer,
  LiveMessage,
  LiveRequest,
  RunDetail,
  RunDiff,
  RunEvaluation,
  RunListEntry,
  SamplesAnswer,
  SceneAnswer,
  Settings,
  SharedFieldsRunDetail,
  SqlAnswer,
} from '../../src/server/wire-types.js';

/** A run's detail as the viewer asks for it: camera images counted, not listed (`captures=apart`). */
export type ViewerRunDetail = RunDetail & CapturesApart;

export type {
  ActorInfo,
  AttachmentInfo,
  RoadNetwork,
  RunDetail,
  RunDiff,
  RunEvaluation,
  RunInfo,
  RunListEntry,
  Sample,
  Settings,
  SqlAnswer,
  StreamInfo,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The token the server asked for, from the address it printed (`?token=...`). */
const token = new URLSearchParams(location.search).get('token');
const withToken = (url: string): string =>
  token ? `${url}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}` : url;
const authHeaders = (): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

/** A GET of the API; an error answer becomes an ApiError with its message. */
async function request(path: string, signal?: AbortSignal): Promise<Response> {
  const response = await fetch(`api${path}`, { headers: authHeaders(), ...(signal ? { signal } : {}) });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      message = ((await response.json()) as ErrorAnswer).error;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(response.status, message);
  }
  return response;
}

async function get<T>(path: string): Promise<T> {
  return (await (await request(path)).json()) as T;
}

/** A request with a JSON body (or none), answering JSON; an error answer becomes an ApiError with its message. */
export async function send<T>(method: 'POST' | 'PUT', path: string, body?: unknown): Promise<T> {
  const response = await fetch(`api${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...authHeaders() },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new ApiError(response.status, ((await response.json()) as ErrorAnswer).error);
  return (await response.json()) as T;
}

export { get as getJson };

/**
 * A stream's samples over [from, to], all of them: the server answers at most 100,000 at a time and
 * says where the rest begins (`next`); the plot, the traffic lights and the evaluation want the stream.
 */
async function samplePages(
  id: number,
  stream: string,
  from?: number,
  to?: number,
  changesOnly = false,
  fields?: readonly string[],
): Promise<SamplesAnswer> {
  const samples: SamplesAnswer['samples'] = [];
  let at = from;
  for (;;) {
    const page = await get<SamplesAnswer>(
      `/runs/${id}/samples?stream=${encodeURIComponent(stream)}${at === undefined ? '' : `&from=${at}`}${to === undefined ? '' : `&to=${to}`}${changesOnly ? '&changes=1' : ''}${fields ? `&fields=${fields.map(encodeURIComponent).join(',')}` : ''}`,
    );
    for (const sample of page.samples) samples.push(sample);
    if (page.next === null || page.next === undefined) return { stream, samples, next: null };
    at = page.next;
  }
}

export const api = {
  health: () => get<HealthAnswer>('/health'),
  runs: () => get<RunListEntry[]>('/runs'),
  /**
   * A run's detail, its lists of fields sent once each (SharedFieldsRunDetail) and given back to each
   * stream, its camera images counted (they come a window at a time: `captures`).
   */
  run: async (id: number): Promise<ViewerRunDetail> => {
    const { fieldLists, ...detail } = await get<SharedFieldsRunDetail & CapturesApart>(
      `/runs/${id}?fields=shared&captures=apart`,
    );
    return { ...detail, streams: detail.streams.map((s) => ({ ...s, fields: fieldLists[s.fields]! })) };
  },
  /** The camera images of `sensor` (every sensor's when '') over [from, to], and the one before. */
  captures: (id: number, sensor: string, from: number, to: number) =>
    get<CapturesAnswer>(
      `/runs/${id}/captures?from=${from}&to=${to}${sensor ? `&sensor=${encodeURIComponent(sensor)}` : ''}`,
    ),
  /** The first camera image's time in each of `buckets` parts of the run that hold any. */
  captureTimes: (id: number, buckets: number) =>
    get<CaptureTimesAnswer>(`/runs/${id}/capture-times?buckets=${buckets}`),
  /**
   * The window holding a moment, before the page knows the run: `seconds` from its first sample (a
   * link's `t`) or `at`, microseconds since the epoch (a link's `at`).
   */
  stateWindowAt: (id: number, moment: { seconds: number } | { at: number }, signal?: AbortSignal) =>
    stateWindow(
      id,
      'seconds' in moment ? { moment: moment.seconds } : { around: moment.at },
      'seconds' in moment ? `moment=${moment.seconds}` : `around=${moment.at}`,
      signal,
    ),
  /** Every actor's poses over [from, to] as binary columns (src/server/state-window-wire.ts). */
  stateWindow: (id: number, from: number, to: number, signal?: AbortSignal) =>
    stateWindow(id, { from, to }, `from=${from}&to=${to}`, signal),
  scene: (id: number, t: number) => get<SceneAnswer>(`/runs/${id}/scene?t=${t}&interpolate=1`),
  /** A stream's samples over [from, to] (all of it without them), only `fields` when given. */
  samples: (id: number, stream: string, from?: number, to?: number, fields?: readonly string[]) =>
    samplePages(id, stream, from, to, false, fields),
  /**
   * A stream's samples where the given fields change, with only those fields (a traffic light's
   * switches of `state`, whatever its countdown does): `changes=1&fields=`.
   */
  changes: (id: number, stream: string, fields: readonly string[]) =>
    samplePages(id, stream, undefined, undefined, true, fields),
  roadnet: (id: number) => get<RoadNetwork>(`/runs/${id}/roadnet`),
  diff: (a: number, b: number) => get<RunDiff>(`/diff?a=${a}&b=${b}`),
  sql: (query: string) => get<SqlAnswer>(`/sql?q=${encodeURIComponent(query)}`),
  settings: () => get<Settings>('/settings'),
  putSettings: (patch: Partial<Settings>) => send<Settings>('PUT', '/settings', patch),
  birdviewUrl: (id: number, t: number) => withToken(`api/runs/${id}/birdview?t=${t}`),
  attachmentUrl: (id: number, name: string) =>
    withToken(`api/runs/${id}/attachment?name=${encodeURIComponent(name)}`),
};

/**
 * A window of states over the live channel when it is open (one connection, no request's headers, a
 * cancel is a message), over HTTP otherwise; `query` is the same bounds as GET /states takes them.
 */
async function stateWindow(
  run: number,
  bounds: Omit<Extract<LiveRequest, { type: 'states' }>, 'type' | 'request' | 'run'>,
  query: string,
  signal?: AbortSignal,
): Promise<BinaryStateWindow> {
  const socket = liveSocket;
  if (socket?.readyState !== WebSocket.OPEN)
    return decodeStateWindow(
      await (await request(`/runs/${run}/states?${query}&format=columns`, signal)).arrayBuffer(),
    );
  signal?.throwIfAborted();
  const id = nextWindowRequest++;
  const asked: LiveRequest = { type: 'states', request: id, run, ...bounds };
  socket.send(JSON.stringify(asked));
  return new Promise<BinaryStateWindow>((resolve, reject) => {
    windowsAsked.set(id, { resolve, reject });
    signal?.addEventListener('abort', () => {
      windowsAsked.delete(id);
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'cancel', request: id }));
      reject(signal.reason as Error);
    });
  });
}

/** The live channel while it is open, and the windows asked for on it and not yet answered. */
let liveSocket: WebSocket | null = null;
let nextWindowRequest = 1;
const windowsAsked = new Map<
  number,
  { resolve: (window: BinaryStateWindow) => void; reject: (error: Error) => void }
>();

/** A window's frame on the live channel: its request's number, then the window from WINDOW_FRAME_OFFSET. */
function windowArrived(frame: ArrayBuffer): void {
  const id = new DataView(frame).getUint32(0, true);
  const asked = windowsAsked.get(id);
  if (!asked) return; // cancelled meanwhile
  windowsAsked.delete(id);
  try {
    asked.resolve(decodeStateWindow(frame, WINDOW_FRAME_OFFSET));
  } catch (error) {
    asked.reject(error as Error);
  }
}

/** The windows asked for on a channel that closed: their askers ask again (over HTTP until it is back). */
function windowsLost(): void {
  for (const asked of windowsAsked.values()) asked.reject(new Error('the live channel closed'));
  windowsAsked.clear();
}

/** The live channel: run-list updates pushed by the server, reconnecting when it goes away. */
export function connectLive(
  onRuns: (runs: RunListEntry[]) => void,
  onSettings: (settings: Settings) => void,
  onState: (state: 'connecting' | 'connected' | 'disconnected' | 'error', detail?: string) => void,
  /** Every message, for panels that listen to their own types. */
  onMessage?: (message: LiveMessage) => void,
): () => void {
  let socket: WebSocket | null = null;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const open = (): void => {
    onState('connecting');
    const url = new URL(withToken('api/live'), location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    socket = new WebSocket(url);
    socket.binaryType = 'arraybuffer';
    const opened = socket;
    socket.onopen = () => {
      liveSocket = opened;
      onState('connected');
    };
    socket.onmessage = (event) => {
      if (event.data instanceof ArrayBuffer) return windowArrived(event.data);
      const message = JSON.parse(String(event.data)) as LiveMessage;
      if (message.type === 'states-error' && message.request !== null) {
        windowsAsked.get(message.request)?.reject(new ApiError(400, message.error));
        windowsAsked.delete(message.request);
      }
      if (message.type === 'settings') onSettings(message.settings);
      if (message.type === 'runs') {
        onState('connected');
        onRuns(message.runs);
      }
      if (message.type === 'store-error') onState('error', message.error);
      onMessage?.(message);
    };
    socket.onclose = () => {
      if (liveSocket === opened) liveSocket = null;
      windowsLost();
      if (stopped) return;
      onState('disconnected');
      retry = setTimeout(open, 1000);
    };
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(retry);
    socket?.close();
  };
}
