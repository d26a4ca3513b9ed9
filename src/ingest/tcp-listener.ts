/**
 * The ingest protocol over plain TCP: length-prefixed frames (framing.ts), so that a simulator in
 * C++, C# or Python speaks it with its standard library.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ConnectionFlow } from './connection-flow.js';
import { decodeMessage, encodeFrame, FrameDecoder } from './framing.js';
import type { IngestServer } from './ingest-server.js';
import type { IngestConnection } from './ingest-session.js';

export interface TcpListener {
  port: number;
  close(): Promise<void>;
}

/** A connection that does not close after being told to is cut after this long. */
const CLOSE_TIMEOUT_MS = 2000;

export async function listenTcp(
  ingest: IngestServer,
  options: { port?: number; host?: string } = {},
): Promise<TcpListener> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    const decoder = new FrameDecoder(ingest.maxFrameBytes);
    let closing = false;
    const flow = new ConnectionFlow(socket, ingest.flow, () => {
      handler.slowReader();
      // What it left unread will never be read: drop it with the socket now.
      socket.destroy();
    });
    // Answers sent in one tick (the acks of one commit, each message's) leave in one write, not a
    // system call each: the socket is corked until the next tick.
    let corked = false;
    const uncork = (): void => {
      corked = false;
      socket.uncork();
    };
    const connection: IngestConnection = {
      send: (message) => {
        if (closing || !socket.writable) return;
        const frame = encodeFrame(message);
        flow.queued(frame.length);
        if (!corked) {
          corked = true;
          socket.cork();
          process.nextTick(uncork);
        }
        socket.write(frame, () => flow.written(frame.length));
      },
      close: () => {
        if (closing) return;
        closing = true;
        socket.end();
        // Whatever the client sends from now on is not read; it must not keep the socket open.
        socket.resume();
        setTimeout(() => socket.destroy(), CLOSE_TIMEOUT_MS).unref();
      },
      pause: () => {
        if (!closing) flow.hold('window');
      },
      resume: () => flow.release('window'),
    };
    const handler = ingest.accept(connection);
    socket.on('data', (chunk: Buffer) => {
      if (closing) return;
      handler.received(chunk.length);
      if (closing) return;
      let messages: Buffer[];
      try {
        messages = decoder.push(chunk);
      } catch (error) {
        handler.frameError(error);
        return;
      }
      for (const bytes of messages) {
        if (closing) return;
        let decoded;
        try {
          decoded = decodeMessage(bytes, ingest.maxBatchBytes);
        } catch (error) {
          handler.frameError(error);
          return;
        }
        handler.message(decoded, bytes.length);
      }
    });
    // 'close' follows every error; the session learns of it there.
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      closing = true;
      flow.stop();
      handler.closed();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
