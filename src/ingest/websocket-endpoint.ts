/**
 * The ingest protocol over WebSocket, at /ingest on the viewer's HTTP server: a text message is a
 * header alone, a binary message is `u32 header length | header | body` (framing.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { decodeHeaderText, decodeMessage, LENGTH_BYTES, type DecodedMessage } from './framing.js';
import type { IngestServer } from './ingest-server.js';
import type { IngestConnection } from './ingest-session.js';

export const INGEST_PATH = '/ingest';

/** RFC 6455's close codes: normal, and policy violation (after a fatal protocol error). */
const CLOSE_NORMAL = 1000;
const CLOSE_POLICY = 1008;

export class IngestWebSocketEndpoint {
  private readonly wss: WebSocketServer;
  private readonly ingest: IngestServer;

  constructor(ingest: IngestServer) {
    this.ingest = ingest;
    // ws itself refuses a larger message with close code 1009 before it is buffered whole.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: ingest.maxFrameBytes + LENGTH_BYTES });
    this.wss.on('connection', (socket: WebSocket) => this.connect(socket));
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(request, socket, head, (ws) => this.wss.emit('connection', ws, request));
  }

  private connect(socket: WebSocket): void {
    let closing = false;
    const connection: IngestConnection = {
      send: (message) => {
        if (!closing && socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
      },
      close: (options) => {
        if (closing) return;
        closing = true;
        socket.close(options?.fatal ? CLOSE_POLICY : CLOSE_NORMAL);
      },
      pause: () => socket.pause(),
      resume: () => socket.resume(),
    };
    const handler = this.ingest.accept(connection);
    socket.on('message', (data: RawData, isBinary: boolean) => {
      if (closing) return;
      const bytes = Buffer.isBuffer(data)
        ? data
        : Array.isArray(data)
          ? Buffer.concat(data)
          : Buffer.from(data);
      let decoded: DecodedMessage;
      try {
        decoded = isBinary ? decodeMessage(bytes) : decodeHeaderText(bytes.toString('utf8'));
      } catch (error) {
        handler.frameError(error);
        return;
      }
      handler.message(decoded, bytes.length);
    });
    socket.on('error', () => socket.terminate());
    socket.on('close', () => {
      closing = true;
      handler.closed();
    });
  }

  close(): void {
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
  }
}
