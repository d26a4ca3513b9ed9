import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { RunSummary } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { toJson } from '../model/json.js';
import { withScores } from './run-scores.js';
import type { LiveMessage } from './wire-types.js';

export const LIVE_PATH = '/api/live';
/** Updates a viewer may leave unread before it is disconnected: many run lists' worth. */
const MAX_UNREAD_BYTES = 4 * 1024 * 1024;

/**
 * Tells connected viewers when runs appear, grow or end. It watches the store itself (any process
 * may be recording into it), so it polls the run list and sends it whenever something changed.
 */
export class LiveUpdates {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
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
      const signature = runs.map((r) => `${r.id}:${r.state}:${r.samples}:${r.end}`).join(',');
      if (signature === this.lastSignature) return;
      this.lastSignature = signature;
      for (const listener of this.runListeners) listener(runs);
      this.lastMessage = this.broadcast({ type: 'runs', runs: await withScores(this.store, runs) });
    } catch (error) {
      // Forget the last list, so the viewer hears the runs again once the store is back.
      this.lastSignature = '';
      this.broadcast({ type: 'store-error', error: (error as Error).message });
    } finally {
      this.polling = false;
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
