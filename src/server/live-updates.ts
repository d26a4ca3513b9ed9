import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { RawData } from 'ws';
import { SimrecError } from '../model/errors.js';
import type { RunSummary } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { toJson } from '../model/json.js';
import { withScores } from './run-scores.js';
import { WINDOW_FRAME_OFFSET } from './state-window-wire.js';
import { readStateWindow, stateWindowBytes, windowBounds } from './state-windows.js';
import type { LiveMessage, LiveRequest } from './wire-types.js';

export const LIVE_PATH = '/api/live';
/** Updates and windows a viewer may leave unread before it is disconnected: many run lists' worth. */
const MAX_UNREAD_BYTES = 4 * 1024 * 1024;
/** Windows a viewer may have asked for over its socket and not yet been answered. */
export const MAX_PENDING_WINDOWS = 4;

/**
 * Tells connected viewers when runs appear, grow (samples or attachments) or end. It watches the
 * store itself (any process may be recording into it), so it polls the run list and sends it whenever
 * something changed. A viewer may also ask it for windows of states (`{"type": "states", "request": N,
 * "run": R, ...}`, bounds as GET /states takes them), answered as binary frames on the same socket, and
 * cancel them (`{"type": "cancel", "request": N}`): docs/viewer.md, "The live channel".
 */
export class LiveUpdates {
  private readonly wss = new WebSocketServer({
    noServer: true,
    // Inflated size: a viewer's compressed message is refused past it like any other.
    maxPayload: 64 * 1024,
    // Windows and run lists compressed for a viewer that offers it (every browser): a big run's window
    // of states is tens of times smaller, and a viewer across a network keeps up with 10x playback. The
    // fastest level: most of the gain, for a small part of the time a window takes to read. Each message
    // compressed on its own (no context taken over), which is also what lets small ones go as they are.
    perMessageDeflate: { threshold: 1024, zlibDeflateOptions: { level: 1 }, serverNoContextTakeover: true },
  });
  private readonly timer: NodeJS.Timeout;
  private lastSignature = '';
  private lastMessage = '';
  private polling = false;
  private readonly store: StoreBackend;
  private readonly runListeners: ((runs: readonly RunSummary[]) => void)[] = [];

  constructor(store: StoreBackend, intervalMs = 500) {
    this.store = store;
    this.wss.on('connection', (socket: WebSocket) => {
      if (this.lastMessage) socket.send(this.lastMessage);
      socket.on('error', () => socket.terminate());
      const pending = new Map<number, AbortController>();
      // answer never rejects: what goes wrong is told to the viewer as a states-error.
      socket.on('message', (data, isBinary) => void this.answer(socket, pending, data, isBinary));
      socket.on('close', () => {
        for (const request of pending.values()) request.abort();
        pending.clear();
      });
    });
    // poll never rejects: a failing store is told to the viewers as a store-error. Nothing waits for it.
    this.timer = setInterval(() => void this.poll(), intervalMs);
    this.timer.unref();
    void this.poll();
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(request, socket, head, (ws) => this.wss.emit('connection', ws, request));
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const runs = await this.store.listRuns();
      // Only runs being recorded: attachments put to a closed run (a road network attached later) are
      // read by the pages that open it, and every run's would be a query per run at each poll.
      const attachments = new Map<number, string>();
      for (const r of runs) {
        if (r.state !== 'recording') continue;
        const version = await this.store.attachmentsVersion(r.id);
        if (version !== undefined) attachments.set(r.id, version);
      }
      const signature = runs
        .map((r) => `${r.id}:${r.state}:${r.samples}:${r.end}:${attachments.get(r.id) ?? ''}`)
        .join(',');
      if (signature === this.lastSignature) return;
      this.lastSignature = signature;
      for (const listener of this.runListeners) listener(runs);
      const entries = (await withScores(this.store, runs)).map((entry) => {
        const attachmentsVersion = attachments.get(entry.id);
        return attachmentsVersion === undefined ? entry : { ...entry, attachmentsVersion };
      });
      this.lastMessage = this.broadcast({ type: 'runs', runs: entries });
    } catch (error) {
      // Forget the last list, so the viewer hears the runs again once the store is back.
      this.lastSignature = '';
      this.broadcast({ type: 'store-error', error: (error as Error).message });
    } finally {
      this.polling = false;
    }
  }

  /** A viewer's message: a window asked for (answered as a binary frame), or one cancelled. */
  private async answer(
    socket: WebSocket,
    pending: Map<number, AbortController>,
    data: RawData,
    isBinary: boolean,
  ): Promise<void> {
    let request: number | null = null;
    let controller: AbortController | undefined;
    try {
      const message = liveRequest(data, isBinary);
      request = message.request;
      if (message.type === 'cancel') {
        pending.get(request)?.abort();
        pending.delete(request);
        return;
      }
      if (pending.has(request))
        throw new SimrecError('invalid', `states message: request ${request} is already being answered`);
      if (pending.size >= MAX_PENDING_WINDOWS)
        throw new SimrecError(
          'invalid',
          `states message: more than ${MAX_PENDING_WINDOWS} windows asked for at once; wait for one`,
        );
      controller = new AbortController();
      pending.set(request, controller);
      const named = (field: string): string => `states message's ${field}`;
      const bounds = await windowBounds(this.store, message.run, message, named);
      const window = await readStateWindow(this.store, message.run, bounds, controller.signal);
      if (controller.signal.aborted || socket.readyState !== socket.OPEN) return;
      // A viewer that does not read what it asked for is cut rather than buffered for without end.
      if (socket.bufferedAmount > MAX_UNREAD_BYTES) {
        socket.terminate();
        return;
      }
      const bytes = stateWindowBytes(window);
      const frame = new Uint8Array(WINDOW_FRAME_OFFSET + bytes.length);
      new DataView(frame.buffer).setUint32(0, request, true);
      frame.set(bytes, WINDOW_FRAME_OFFSET);
      socket.send(frame, { binary: true });
    } catch (error) {
      if (controller?.signal.aborted || socket.readyState !== socket.OPEN) return;
      const code = error instanceof SimrecError ? error.code : 'io';
      socket.send(toJson({ type: 'states-error', request, error: (error as Error).message, code }, 0));
    } finally {
      if (request !== null && pending.get(request) === controller) pending.delete(request);
    }
  }

  /** Calls `listener` with the store's runs whenever they change (appear, grow, end, go). */
  onRuns(listener: (runs: readonly RunSummary[]) => void): void {
    this.runListeners.push(listener);
  }

  /** Sends a message to every connected viewer now; returns its text. */
  broadcast(message: LiveMessage): string {
    const text = toJson(message, 0);
    for (const client of this.wss.clients) {
      if (client.readyState !== client.OPEN) continue;
      // A viewer that does not read its updates is cut rather than buffered for without end.
      if (client.bufferedAmount > MAX_UNREAD_BYTES) client.terminate();
      else client.send(text);
    }
    return text;
  }

  close(): void {
    clearInterval(this.timer);
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
  }
}

/** A viewer's message, checked field by field; anything else is refused by what is wrong with it. */
function liveRequest(data: RawData, isBinary: boolean): LiveRequest {
  if (isBinary) throw new SimrecError('invalid', 'live channel: messages are JSON text; got a binary one');
  let message: unknown;
  try {
    message = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : String(data));
  } catch {
    throw new SimrecError('invalid', 'live channel: a message that is not JSON');
  }
  if (typeof message !== 'object' || message === null)
    throw new SimrecError('invalid', `live channel: expected an object, got ${JSON.stringify(message)}`);
  const fields = message as Record<string, unknown>;
  const type = fields.type;
  if (type !== 'states' && type !== 'cancel')
    throw new SimrecError(
      'invalid',
      `live channel: message type ${JSON.stringify(type)}; expected "states" or "cancel"`,
    );
  // Numbers a message names: a count (request, run) is a whole number >= 0 and required; a time
  // (from, to, around) is an integer of microseconds, or absent.
  const number = (name: string, kind: 'count' | 'time'): number | undefined => {
    const value = fields[name];
    if (value === undefined && kind === 'time') return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || (kind === 'count' && value < 0))
      throw new SimrecError(
        'invalid',
        `${type} message's ${name}: expected ${kind === 'time' ? 'an integer (microseconds)' : 'a whole number >= 0'}, got ${JSON.stringify(value) ?? 'nothing'}`,
      );
    return value;
  };
  const request = number('request', 'count')!;
  if (request > 0xffff_ffff)
    throw new SimrecError(
      'invalid',
      `${type} message's request: expected at most ${0xffff_ffff}, got ${request}`,
    );
  if (type === 'cancel') return { type, request };
  const moment = fields.moment;
  if (moment !== undefined && typeof moment !== 'number')
    throw new SimrecError(
      'invalid',
      `states message's moment: expected seconds from the run's first sample, got ${JSON.stringify(moment)}`,
    );
  return {
    type,
    request,
    run: number('run', 'count')!,
    from: number('from', 'time'),
    to: number('to', 'time'),
    around: number('around', 'time'),
    moment,
  };
}
