/**
 * The ingest protocol over WebSocket, at /ingest on the viewer's HTTP server: a text message is a
 * header alone, a binary message is `u32 header length | header | body` (framing.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { ConnectionFlow } from './connection-flow.js';
import { decodeHeaderText, decodeMessage, LENGTH_BYTES, type DecodedMessage } from './framing.js';
import type { IngestServer } from './ingest-server.js';
import type { IngestConnection } from './ingest-session.js';

export const INGEST_PATH = '/ingest';

/** RFC 6455's close codes: normal, and policy violation (after a fatal protocol error). */
const CLOSE_NORMAL = 1000;
const CLOSE_POLICY = 1008;
/** A client that does not answer the close handshake (or does not read it) is cut after this long. */
const CLOSE_TIMEOUT_MS = 2000;

export class IngestWebSocketEndpoint {
  private readonly wss: WebSocketServer;
  private readonly ingest: IngestServer;

  constructor(ingest: IngestServer) {
    this.ingest = ingest;
    // ws itself refuses a larger message with close code 1009 before it is buffered whole.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: ingest.maxFrameBytes + LENGTH_BYTES });
    this.wss.on('connection', (socket: WebSocket, request: IncomingMessage) => this.connect(socket, request));
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(request, socket, head, (ws) => this.wss.emit('connection', ws, request));
  }

  private connect(socket: WebSocket, request: IncomingMessage): void {
    let closing = false;
    const flow = new ConnectionFlow(socket, this.ingest.flow, () => {
      handler.slowReader();
      socket.terminate();
    });
    const connection: IngestConnection = {
      send: (message) => {
        if (closing || socket.readyState !== socket.OPEN) return;
        const text = JSON.stringify(message);
        const bytes = Buffer.byteLength(text);
        flow.queued(bytes);
        socket.send(text, () => flow.written(bytes));
      },
      close: (options) => {
        if (closing) return;
        closing = true;
        socket.close(options?.fatal ? CLOSE_POLICY : CLOSE_NORMAL);
        // ws destroys the socket only once its close frame is written: never, for a client that does not read.
        setTimeout(() => socket.terminate(), CLOSE_TIMEOUT_MS).unref();
      },
      pause: () => flow.hold('window'),
      resume: () => flow.release('window'),
    };
    const handler = this.ingest.accept(connection);
    // Counted as they arrive, before ws gathers a message: a connection that has not said hello
    // cannot make the server buffer a 64 MiB frame.
    request.socket.on('data', (chunk: Buffer) => handler.received(chunk.length));
    socket.on('message', (data: RawData, isBinary: boolean) => {
      if (closing) return;
      const bytes = Buffer.isBuffer(data)
        ? data
        : Array.isArray(data)
          ? Buffer.concat(data)
          : Buffer.from(data);
      let decoded: DecodedMessage;
      try {
        decoded = isBinary
          ? decodeMessage(bytes, this.ingest.maxBatchBytes)
          : decodeHeaderText(bytes, this.ingest.maxBatchBytes);
      } catch (error) {
        handler.frameError(error);
        return;
      }
      handler.message(decoded, bytes.length);
    });
    socket.on('error', () => socket.terminate());
    socket.on('close', () => {
      closing = true;
      flow.stop();
      handler.closed();
    });
  }

  close(): void {
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
  }
}
