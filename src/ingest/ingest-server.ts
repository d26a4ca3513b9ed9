/**
 * The ingest server: greets connections, keeps the sessions and the runs they record, keeps
 * connections alive, and sends control messages to simulators. Transports (tcp-listener.ts,
 * websocket-endpoint.ts) only move messages; everything about the protocol happens here and in
 * ingest-session.ts.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { describeValue } from '../model/errors.js';
import type { JsonObject } from '../model/json.js';
import type { EndReason } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { RunRecorder, type RecorderOptions } from '../record/run-recorder.js';
import type { FlowLimits } from './connection-flow.js';
import { DEFAULT_MAX_FRAME_BYTES, type DecodedMessage } from './framing.js';
import {
  IngestSession,
  toErrorMessage,
  type IngestConnection,
  type SessionHost,
  type SharedRun,
} from './ingest-session.js';
import {
  DEFAULT_MAX_BATCH_BYTES,
  messageRef,
  parseClientMessage,
  ProtocolError,
  PROTOCOL_VERSIONS,
  type ControlMessage,
  type HelloMessage,
} from './protocol.js';

export interface IngestServerOptions {
  store: StoreBackend;
  /** When set, a hello without this token is refused. */
  token?: string;
  maxFrameBytes?: number;
  /**
   * The most bytes of a message's JSON header (more is a fatal `frame_too_large`, before it is parsed)
   * and of a `columns` or `frame` body (more is refused): 1 MiB, what the main thread decodes at once.
   */
  maxBatchBytes?: number;
  /** The credit window: sequenced messages (and their bytes) a client may have unanswered. */
  window?: { messages?: number; bytes?: number };
  /** How often the server pings; a connection silent for `idleTimeoutMs` is dropped. */
  keepaliveMs?: number;
  idleTimeoutMs?: number;
  /** How long a vanished client's session waits for it to reconnect before its run is interrupted. */
  resumeGraceMs?: number;
  /**
   * Until its hello is accepted (token checked) a connection is nobody: it may send this many bytes
   * (64 KiB, far more than a hello), it has `helloTimeoutMs` (5 s) to say it, and at most
   * `maxGreetingConnections` (64) such connections are held at once.
   */
  maxPreAuthBytes?: number;
  helloTimeoutMs?: number;
  maxGreetingConnections?: number;
  /** A client that leaves more than this of the server's replies unread (1 MiB) is not read from... */
  maxUnreadBytes?: number;
  /** ...and after this long (`idleTimeoutMs`) it is cut, its run ended `interrupted` (connection-flow.ts). */
  slowReaderMs?: number;
  /** The server's "record every run" switch; while it is off, begin is refused. */
  isRecording?: () => boolean;
  recorder?: RecorderOptions;
}

/** What a transport calls for one connection. */
export interface ConnectionHandler {
  /** Raw bytes arrived (before they make a frame): counted against the pre-hello limit. */
  received(bytes: number): void;
  message(decoded: DecodedMessage, size: number): void;
  /** A frame that could not be decoded: the connection is answered and closed. */
  frameError(error: unknown): void;
  /** The client left its replies unread too long (connection-flow.ts); the transport cuts it after this. */
  slowReader(): void;
  /** The connection closed (a half-written frame is dropped with it). */
  closed(): void;
}

const IGNORE: ConnectionHandler = {
  received() {},
  message() {},
  frameError() {},
  slowReader() {},
  closed() {},
};

export interface IngestStats {
  sessions: number;
  connections: number;
  runs: number[];
  /** Answers the sessions keep for a resume: errors and the acks that carry a run. */
  keptAnswers: number;
}

export class IngestServer implements SessionHost {
  readonly window: { messages: number; bytes: number };
  readonly maxFrameBytes: number;
  readonly maxBatchBytes: number;
  readonly keepaliveMs: number;
  readonly resumeGraceMs: number;
  readonly flow: FlowLimits;
  private readonly idleTimeoutMs: number;
  private readonly maxPreAuthBytes: number;
  private readonly helloTimeoutMs: number;
  private readonly maxGreetingConnections: number;
  private readonly store: StoreBackend;
  private readonly token: Buffer | null;
  private readonly recording: () => boolean;
  private readonly recorderOptions: RecorderOptions;
  private readonly sessions = new Map<string, IngestSession>();
  private readonly runs = new Map<number, SharedRun>();
  /** Connections whose hello has not been accepted yet, with the timer that cuts them. */
  private readonly greeting = new Map<IngestConnection, NodeJS.Timeout>();
  private readonly timer: NodeJS.Timeout;
  private closing = false;

  constructor(options: IngestServerOptions) {
    this.store = options.store;
    this.token = options.token === undefined ? null : Buffer.from(options.token, 'utf8');
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.maxBatchBytes = Math.min(options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES, this.maxFrameBytes);
    this.window = {
      // Deep enough that a client keeps sending while the group commit before makes its messages
      // durable (a shallower window held ingest below what it reaches). The bytes, not the count, bound
      // the server's memory: its peak under a flood does not depend on this.
      messages: options.window?.messages ?? 4096,
      // One message of the largest size must always fit, or a client could never send it.
      bytes: Math.max(options.window?.bytes ?? 32 * 1024 * 1024, this.maxFrameBytes),
    };
    this.keepaliveMs = options.keepaliveMs ?? 10_000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? this.keepaliveMs * 3;
    this.resumeGraceMs = options.resumeGraceMs ?? 30_000;
    this.maxPreAuthBytes = options.maxPreAuthBytes ?? 64 * 1024;
    this.helloTimeoutMs = options.helloTimeoutMs ?? 5000;
    this.maxGreetingConnections = options.maxGreetingConnections ?? 64;
    this.flow = {
      maxUnreadBytes: options.maxUnreadBytes ?? 1024 * 1024,
      slowReaderMs: options.slowReaderMs ?? this.idleTimeoutMs,
    };
    this.recording = options.isRecording ?? (() => true);
    this.recorderOptions = options.recorder ?? {};
    this.timer = setInterval(
      () => this.keepalive(),
      Math.max(10, Math.min(this.keepaliveMs, this.idleTimeoutMs / 2)),
    );
    this.timer.unref();
  }

  isRecording(): boolean {
    return this.recording();
  }

  /** Starts handling a new connection from a transport. */
  accept(connection: IngestConnection): ConnectionHandler {
    const refuseAtOnce = (code: 'server_closing' | 'busy', message: string): ConnectionHandler => {
      connection.send(toErrorMessage(new ProtocolError(code, message, { fatal: true }), {}));
      connection.close({ fatal: true });
      return IGNORE;
    };
    if (this.closing) return refuseAtOnce('server_closing', 'the server is closing');
    if (this.greeting.size >= this.maxGreetingConnections)
      return refuseAtOnce(
        'busy',
        `${this.greeting.size} connections have not said hello yet, the most this server holds; try again shortly`,
      );
    let session: Promise<IngestSession | null> | null = null;
    let done = false;
    let preAuthBytes = 0;
    const refuse = (error: unknown, ref: { type?: string; seq?: number } = {}): void => {
      done = true;
      this.greeted(connection);
      connection.send({ ...toErrorMessage(error, ref), fatal: true });
      connection.close({ fatal: true });
    };
    const deadline = setTimeout(
      () =>
        refuse(new ProtocolError('timeout', `no hello within ${this.helloTimeoutMs} ms`, { fatal: true })),
      this.helloTimeoutMs,
    );
    deadline.unref();
    this.greeting.set(connection, deadline);
    return {
      received: (bytes) => {
        if (done || session !== null) return;
        preAuthBytes += bytes;
        if (preAuthBytes > this.maxPreAuthBytes)
          refuse(
            new ProtocolError(
              'frame_too_large',
              `${preAuthBytes} bytes before hello: a connection may send ${this.maxPreAuthBytes} bytes until its hello is accepted`,
              { fatal: true },
            ),
          );
      },
      message: (decoded, size) => {
        if (done) return;
        if (session === null) {
          let hello: HelloMessage;
          try {
            hello = this.checkHello(decoded);
          } catch (error) {
            refuse(error, messageRef(decoded.header));
            return;
          }
          this.greeted(connection);
          session = this.open(connection, hello).catch((error: unknown) => {
            refuse(error, messageRef(decoded.header));
            return null;
          });
          return;
        }
        // Messages sent before the welcome wait for the hello to be handled, in order. `session` never
        // rejects (a hello that fails is refused, and the session is null), here and below.
        void session.then((s) => {
          if (s && s.isConnection(connection)) s.receive(decoded.header, decoded.body, size);
        });
      },
      frameError: (error) => {
        if (done) return;
        if (session === null) refuse(error);
        else {
          done = true;
          void session.then((s) => {
            if (s && s.isConnection(connection)) s.fail(error, {});
            else connection.close({ fatal: true });
          });
        }
      },
      slowReader: () => {
        if (done) return;
        const error = new ProtocolError(
          'slow_reader',
          `the client left over ${this.flow.maxUnreadBytes} bytes of replies unread for ${this.flow.slowReaderMs} ms`,
          { fatal: true },
        );
        if (session === null) refuse(error);
        else {
          done = true;
          void session.then((s) => {
            if (s && s.isConnection(connection)) s.fail(error, {});
          });
        }
      },
      closed: () => {
        done = true;
        this.greeted(connection);
        void session?.then((s) => s?.detach(connection));
      },
    };
  }

  /** The connection is no longer waiting for its hello (accepted, refused or gone). */
  private greeted(connection: IngestConnection): void {
    const deadline = this.greeting.get(connection);
    if (deadline) clearTimeout(deadline);
    this.greeting.delete(connection);
  }

  /** The hello's checks, done at once so that the connection counts as accepted from this message on. */
  private checkHello(decoded: DecodedMessage): HelloMessage {
    const message = parseClientMessage(decoded.header, decoded.body);
    if (message.type !== 'hello')
      throw new ProtocolError('out_of_order', `${message.type}: the first message must be hello`, {
        fatal: true,
      });
    const hello = message;
    if (!PROTOCOL_VERSIONS.includes(hello.protocol))
      throw new ProtocolError(
        'unsupported_version',
        `hello.protocol: this server speaks protocols ${PROTOCOL_VERSIONS.join(' and ')}, got ${hello.protocol}`,
        { field: 'protocol', fatal: true },
      );
    if (this.token !== null) {
      const given = Buffer.from(hello.token ?? '', 'utf8');
      if (given.length !== this.token.length || !timingSafeEqual(given, this.token))
        throw new ProtocolError('unauthorized', 'hello.token: missing or wrong token', {
          field: 'token',
          fatal: true,
        });
    }
    return hello;
  }

  private async open(connection: IngestConnection, hello: HelloMessage): Promise<IngestSession> {
    if (hello.resume) {
      const session = this.sessions.get(hello.resume.session);
      if (!session)
        throw new ProtocolError(
          'unknown_session',
          `hello.resume.session: no session ${describeValue(hello.resume.session)} (it ended, or the server restarted)`,
          { field: 'resume.session', fatal: true },
        );
      await session.attach(connection, hello.resume.pending, true);
      return session;
    }
    const session = new IngestSession(this, randomBytes(12).toString('hex'), hello.simulator, hello.protocol);
    this.sessions.set(session.id, session);
    await session.attach(connection, [], false);
    return session;
  }

  async beginRun(
    session: IngestSession,
    init: { description?: string; metadata?: object; begin?: number },
  ): Promise<SharedRun> {
    const runInit: Parameters<typeof RunRecorder.begin>[1] = { simulator: session.simulator };
    if (init.description !== undefined) runInit.description = init.description;
    if (init.metadata !== undefined) runInit.metadata = init.metadata as JsonObject;
    if (init.begin !== undefined) runInit.begin = init.begin;
    const recorder = await RunRecorder.begin(this.store, runInit, this.recorderOptions);
    const run: SharedRun = {
      recorder,
      participants: new Set([session]),
      owners: new Map(),
      sensors: new Map(),
      interrupted: false,
    };
    this.runs.set(recorder.id, run);
    return run;
  }

  findRun(id: number): SharedRun | undefined {
    return this.runs.get(id);
  }

  async leaveRun(run: SharedRun, session: IngestSession, reason: EndReason): Promise<boolean> {
    run.participants.delete(session);
    if (run.participants.size > 0) return false;
    this.runs.delete(run.recorder.id);
    await run.recorder.end(run.interrupted ? 'interrupted' : reason);
    return true;
  }

  forget(session: IngestSession): void {
    this.sessions.delete(session.id);
  }

  /**
   * Sends a control message to the simulators recording `run`, or to every connected simulator.
   * Returns how many sessions it reached.
   */
  control(message: Omit<ControlMessage, 'type'>, target: { run?: number } = {}): number {
    let reached = 0;
    for (const session of this.sessions.values()) {
      if (!session.attached) continue;
      if (target.run !== undefined && session.runId !== target.run) continue;
      session.send({ type: 'control', ...message });
      reached++;
    }
    return reached;
  }

  /** Tells every simulator to start or stop recording (the server's "record every run" switch). */
  setRecording(on: boolean): void {
    this.control({ action: on ? 'start_recording' : 'stop_recording' });
  }

  stats(): IngestStats {
    return {
      sessions: this.sessions.size,
      connections: [...this.sessions.values()].filter((s) => s.attached).length + this.greeting.size,
      runs: [...this.runs.keys()],
      keptAnswers: [...this.sessions.values()].reduce((sum, s) => sum + s.keptAnswers, 0),
    };
  }

  private keepalive(): void {
    const now = Date.now();
    for (const session of this.sessions.values()) {
      if (!session.attached) continue;
      if (now - session.lastHeard > this.idleTimeoutMs) {
        // Not a violation: the network may be down. The session waits for a resume as after any drop.
        session.send(
          toErrorMessage(new ProtocolError('timeout', `nothing heard for ${now - session.lastHeard} ms`), {}),
        );
        session.dropConnection();
      } else session.send({ type: 'ping' });
    }
  }

  /** Closes every connection; runs still being recorded end as `interrupted`. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    for (const [connection, deadline] of this.greeting) {
      clearTimeout(deadline);
      connection.close();
    }
    this.greeting.clear();
    const sessions = [...this.sessions.values()];
    for (const session of sessions)
      session.send(
        toErrorMessage(new ProtocolError('server_closing', 'the server is closing', { fatal: true }), {}),
      );
    await Promise.all(sessions.map((s) => s.terminate()));
  }
}
