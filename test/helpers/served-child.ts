/**
 * `simrec serve` in a child process, as a user runs it, for the flood tests: its memory is its own
 * (read from /proc), and a watcher asks its health check all along, timing each answer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { encodeMessage } from '../../src/ingest/framing.js';
import type { ErrorMessage, ServerMessage } from '../../src/ingest/protocol.js';
import { SIMREC_BIN, tempDir } from './paths.js';

export interface ServedChild {
  /** `http://127.0.0.1:PORT/` */
  url: string;
  wsUrl: string;
  child: ChildProcess;
  /** The process's resident memory now, MiB. */
  rssMiB(): number;
  /** The most it has held since it started, MiB. */
  peakRssMiB(): number;
  stderr(): string;
  close(): Promise<void>;
}

function statusMiB(pid: number, key: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${key}:`));
  if (!line) throw new Error(`no ${key} in /proc/${pid}/status`);
  return Number(line.split(/\s+/)[1]) / 1024;
}

export async function startServedChild(args: string[] = []): Promise<ServedChild> {
  const dir = tempDir('simrec-served-');
  const child = spawn(
    process.execPath,
    [SIMREC_BIN, '--store', join(dir.path, 'served.db'), 'serve', '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += String(chunk);
      const found = /simrec viewer: (http:\/\/\S+\/)/.exec(stdout);
      if (found) resolve(found[1]!);
    });
    // exited never rejects: a child gone before its address fails the wait for the address.
    void exited.then(() => reject(new Error(`simrec serve exited: ${stderr}`)));
  });
  return {
    url,
    wsUrl: url.replace(/^http/, 'ws') + 'ingest',
    child,
    rssMiB: () => statusMiB(child.pid!, 'VmRSS'),
    peakRssMiB: () => statusMiB(child.pid!, 'VmHWM'),
    stderr: () => stderr,
    async close() {
      child.kill('SIGTERM');
      await exited;
      dir.cleanup();
    },
  };
}

/**
 * Asks GET /api/health one request after another until stopped, from a process of its own (the test's
 * own event loop, busy masking the 48 MiB it sends, would delay the asking, not the answer); `stop`
 * resolves with the slowest answer's time (ms) and how many were asked. A request not answered within
 * 10 s counts as 10 s.
 */
export function watchHealth(url: string): { stop(): Promise<{ slowestMs: number; asked: number }> } {
  const script = `
    let running = true, slowestMs = 0, asked = 0;
    process.stdin.on('data', () => (running = false));
    (async () => {
      while (running) {
        const start = performance.now();
        try {
          const answer = await fetch(${JSON.stringify(`${url}api/health`)}, { signal: AbortSignal.timeout(10000) });
          await answer.arrayBuffer();
          if (!answer.ok) throw new Error('health: HTTP ' + answer.status);
        } catch (error) {
          if (error.name !== 'TimeoutError') throw error;
        }
        slowestMs = Math.max(slowestMs, performance.now() - start);
        asked++;
        await new Promise((r) => setTimeout(r, 20));
      }
      process.stdout.write(JSON.stringify({ slowestMs, asked }));
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk) => (out += String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    async stop() {
      child.stdin.end('stop');
      const code = await exited;
      if (code !== 0) throw new Error(`the health watcher exited ${code}`);
      return JSON.parse(out) as { slowestMs: number; asked: number };
    },
  };
}

/** A WebSocket ingest session spoken by hand: raw messages out, every answer kept. */
export class WsSession {
  readonly received: ServerMessage[] = [];
  readonly closed: Promise<number>;
  private readonly ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => this.received.push(JSON.parse(String(data)) as ServerMessage));
    ws.on('error', () => {});
    this.closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
  }

  /** Opens, says hello (protocol 2) and waits for the welcome. */
  static async open(url: string): Promise<WsSession> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const session = new WsSession(ws);
    session.text({ type: 'hello', protocol: 2, simulator: { name: 'flood' } });
    await session.next((m) => m.type === 'welcome', 'the welcome');
    return session;
  }

  text(header: object): void {
    this.ws.send(JSON.stringify(header));
  }

  /** Sends a binary message; resolves once ws has handed it to the socket. */
  binary(header: object, body?: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) =>
      this.ws.send(encodeMessage(header, body), (error) => (error ? reject(error) : resolve())),
    );
  }

  /** Sends bytes as they are, as one binary message. */
  raw(bytes: Uint8Array | string): Promise<void> {
    return new Promise((resolve, reject) =>
      this.ws.send(bytes, (error) => (error ? reject(error) : resolve())),
    );
  }

  async next(match: (m: ServerMessage) => boolean, what: string, timeoutMs = 60_000): Promise<ServerMessage> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const i = this.received.findIndex(match);
      if (i >= 0) return this.received.splice(i, 1)[0]!;
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** The answer to `seq`: an ack or an error. */
  answer(seq: number): Promise<ServerMessage> {
    return this.next(
      (m) => (m.type === 'ack' && m.seq === seq) || (m.type === 'error' && m.ref?.seq === seq),
      `the answer to ${seq}`,
    );
  }

  /** The answer to `seq`, which must be an error. */
  async refusal(seq: number): Promise<ErrorMessage> {
    const answer = await this.answer(seq);
    if (answer.type !== 'error') throw new Error(`message ${seq} was acknowledged, expected a refusal`);
    return answer;
  }

  close(): void {
    this.ws.close();
  }
}
