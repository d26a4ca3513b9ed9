import type { ActorInfo, RunInfo } from '../../src/model/run.js';
import type { StreamInfo, Sample } from '../../src/model/stream.js';
import type { AttachmentInfo } from '../../src/model/attachment.js';
import { decodeStateWindow } from '../../src/server/state-window-wire.js';
import type { RoadNetwork } from '../../src/model/roadnet.js';
import type {
  ErrorAnswer,
  HealthAnswer,
  LiveMessage,
  RunDetail,
  RunDiff,
  RunEvaluation,
  RunListEntry,
  SamplesAnswer,
  SceneAnswer,
  Settings,
  SqlAnswer,
} from '../../src/server/wire-types.js';

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
): Promise<SamplesAnswer> {
  const samples: SamplesAnswer['samples'] = [];
  let at = from;
  for (;;) {
    const page = await get<SamplesAnswer>(
      `/runs/${id}/samples?stream=${encodeURIComponent(stream)}${at === undefined ? '' : `&from=${at}`}${to === undefined ? '' : `&to=${to}`}${changesOnly ? '&changes=1' : ''}`,
    );
    for (const sample of page.samples) samples.push(sample);
    if (page.next === null || page.next === undefined) return { stream, samples, next: null };
    at = page.next;
  }
}

export const api = {
  health: () => get<HealthAnswer>('/health'),
  runs: () => get<RunListEntry[]>('/runs'),
  run: (id: number) => get<RunDetail>(`/runs/${id}`),
  /**
   * The window holding a moment, before the page knows the run: `seconds` from its first sample (a
   * link's `t`) or `at`, microseconds since the epoch (a link's `at`).
   */
  stateWindowAt: async (id: number, moment: { seconds: number } | { at: number }, signal?: AbortSignal) =>
    decodeStateWindow(
      await (
        await request(
          `/runs/${id}/states?${'seconds' in moment ? `moment=${moment.seconds}` : `around=${moment.at}`}&format=columns`,
          signal,
        )
      ).arrayBuffer(),
    ),
  /** Every actor's poses over [from, to] as binary columns (src/server/state-window-wire.ts). */
  stateWindow: async (id: number, from: number, to: number, signal?: AbortSignal) =>
    decodeStateWindow(
      await (await request(`/runs/${id}/states?from=${from}&to=${to}&format=columns`, signal)).arrayBuffer(),
    ),
  scene: (id: number, t: number) => get<SceneAnswer>(`/runs/${id}/scene?t=${t}&interpolate=1`),
  samples: (id: number, stream: string, from?: number, to?: number) => samplePages(id, stream, from, to),
  /** A stream's samples where its values change (a traffic light's switches): `changes=1`. */
  changes: (id: number, stream: string) => samplePages(id, stream, undefined, undefined, true),
  roadnet: (id: number) => get<RoadNetwork>(`/runs/${id}/roadnet`),
  diff: (a: number, b: number) => get<RunDiff>(`/diff?a=${a}&b=${b}`),
  sql: (query: string) => get<SqlAnswer>(`/sql?q=${encodeURIComponent(query)}`),
  settings: () => get<Settings>('/settings'),
  putSettings: (patch: Partial<Settings>) => send<Settings>('PUT', '/settings', patch),
  birdviewUrl: (id: number, t: number) => withToken(`api/runs/${id}/birdview?t=${t}`),
  attachmentUrl: (id: number, name: string) =>
    withToken(`api/runs/${id}/attachment?name=${encodeURIComponent(name)}`),
};

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
    socket.onopen = () => onState('connected');
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data)) as LiveMessage;
      if (message.type === 'settings') onSettings(message.settings);
      if (message.type === 'runs') {
        onState('connected');
        onRuns(message.runs);
      }
      if (message.type === 'store-error') onState('error', message.error);
      onMessage?.(message);
    };
    socket.onclose = () => {
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
