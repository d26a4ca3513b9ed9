/**
 * The TypeScript client of the ingest protocol (docs/protocol.md), over WebSocket or TCP. It keeps
 * every sequenced message until the server answers it, so that after a dropped connection it
 * reconnects, resumes its session and resends exactly what was not received; the server's sequence
 * numbers keep a resend from being stored twice. It never has more unanswered than the server's
 * credit window allows: a caller faster than the store waits in `await`, not in memory.
 */
import { connect as connectTcp, type Socket } from 'node:net';
import { WebSocket } from 'ws';
import { checkJsonValue, type JsonObject } from '../model/json.js';
import type { ActorDecl, EndReason, SimulatorInfo } from '../model/run.js';
import type { FrameInput } from '../model/columns.js';
import type { FieldDecl, Sample, StreamDecl } from '../model/stream.js';
import {
  encodeColumnsBody,
  encodeFrameBody,
  type ActorBlockCache,
  type StreamColumns,
} from './binary-batches.js';
import { ByteWriter } from '../model/bytes.js';
import { decodeMessage, encodeMessage, FrameDecoder, LENGTH_BYTES } from './framing.js';
import {
  PROTOCOL_VERSION,
  type AckMessage,
  type ControlMessage,
  type ErrorCode,
  type SensorDecl,
  type ServerMessage,
  type WelcomeMessage,
} from './protocol.js';

export interface IngestClientOptions {
  /** `ws://host:port/ingest` or `tcp://host:port`. */
  url: string;
  simulator: SimulatorInfo;
  token?: string;
  /** After a dropped connection: how many times to try again, and how long to wait between tries. */
  reconnect?: { attempts?: number; delayMs?: number };
  onControl?: (control: ControlMessage) => void;
  /**
   * The protocol version to ask for: 2 (the default) adds binary batches (appendColumns, appendFrame);
   * 1 for a server that speaks only JSON batches.
   */
  protocol?: 1 | 2;
}

/** An error the server answered, or the connection's loss. Callers branch on `code`. */
export class IngestError extends Error {
  override readonly name = 'IngestError';
  readonly code: ErrorCode | 'disconnected';
  readonly field: string | undefined;
  constructor(code: ErrorCode | 'disconnected', message: string, field?: string) {
    super(message);
    this.code = code;
    this.field = field;
  }
}

export interface CaptureArgs {
  sensor: string;
  t: number;
  step: number;
  mediaType: string;
  data: Uint8Array;
  name?: string;
  metadata?: JsonObject;
}

export interface AttachArgs {
  name: string;
  mediaType: string;
  data: Uint8Array;
  t?: number;
  metadata?: JsonObject;
}

interface Entry {
  seq: number;
  /** The message as it goes on the wire, encoded once: a resend after a reconnect sends the same bytes. */
  message: Buffer;
  bytes: number;
  sent: boolean;
  resolve(ack: AckMessage): void;
  reject(error: unknown): void;
}

interface Transport {
  /** Sends an encoded message (framing.ts: header length, header, body). */
  send(message: Buffer): void;
  /** Holds what is sent until `uncork`, to leave in one write (see pump). */
  cork(): void;
  uncork(): void;
  close(): void;
}

interface TransportEvents {
  message(message: ServerMessage): void;
  closed(): void;
}

export class IngestClient {
  private readonly options: IngestClientOptions;
  private transport: Transport | null = null;
  private welcome: WelcomeMessage | null = null;
  private welcomeWaiter: { resolve(w: WelcomeMessage): void; reject(e: unknown): void } | null = null;
  private readonly entries = new Map<number, Entry>();
  private nextSeq = 1;
  /** Every message before this sequence number has been sent (or answered): see pump. */
  private unsentFrom = 1;
  private inflight = 0;
  private inflightBytes = 0;
  private failure: IngestError | null = null;
  private closing = false;
  private reconnecting: Promise<void> | null = null;
  private lastHeard = Date.now();
  private watchdog: NodeJS.Timeout | null = null;
  private settledWaiters: (() => void)[] = [];
  /** Fields of the streams this client declared, by stream id: what binary batches' field ids refer to. */
  private readonly streamFields = new Map<string, readonly FieldDecl[]>();
  /** The actor ids of the last frame of each stream name, encoded once (binary-batches.ts). */
  private readonly frameActors = new Map<string, ActorBlockCache>();
  /** Where frame bodies are encoded before request() copies them into their message. */
  private readonly frameWriter = new ByteWriter(4096);
  /** Counts of reconnects, for tests and for the operator's curiosity. */
  reconnects = 0;

  private constructor(options: IngestClientOptions) {
    this.options = options;
  }

  /** Connects and says hello; resolves once the server has welcomed the session. */
  static async connect(options: IngestClientOptions): Promise<IngestClient> {
    const client = new IngestClient(options);
    await client.open();
    return client;
  }

  get session(): string {
    return this.welcome!.session;
  }

  /** The protocol version the server agreed to in its welcome. */
  get protocol(): number {
    return this.welcome!.protocol;
  }

  /** Messages sent and not yet answered: never more than the server's credit window. */
  get inFlight(): number {
    return this.inflight;
  }

  /** Messages not yet answered by the server, sent or waiting for the window. */
  get pending(): number {
    return this.entries.size;
  }

  async beginRun(
    init: { description?: string; metadata?: JsonObject; begin?: number } = {},
  ): Promise<number> {
    return (await this.request({ type: 'begin', ...init })).run!;
  }

  /** Records into a run another connection began (with different actors). */
  async joinRun(run: number): Promise<number> {
    return (await this.request({ type: 'join', run })).run!;
  }

  async declareActors(actors: ActorDecl[]): Promise<void> {
    await this.request({ type: 'actors', actors });
  }

  async declareStreams(streams: StreamDecl[]): Promise<void> {
    const declared = this.request({ type: 'streams', streams });
    for (const s of streams)
      if (Array.isArray(s?.fields))
        this.streamFields.set(s.actor ? `${s.actor}/${s.name}` : s.name, s.fields);
    await declared;
  }

  async declareSensors(sensors: SensorDecl[]): Promise<void> {
    await this.request({ type: 'sensors', sensors });
  }

  /**
   * Sends one batch (stream id -> samples); resolves once the server has it on disk. What JSON cannot
   * carry as it is (NaN, infinity, undefined in an array, a typed array) is refused here, naming stream,
   * time and field, as RunRecorder refuses it: JSON.stringify would send null or an object instead.
   */
  async append(samples: Record<string, Sample[]>): Promise<void> {
    for (const stream in samples) {
      const batch = samples[stream];
      if (!Array.isArray(batch)) continue; // the server names what is wrong with it
      for (const sample of batch) {
        if (typeof sample !== 'object' || sample === null) continue;
        // The place named only for a problem: put together for every field, it cost JSON ingest 15%.
        for (const key in sample)
          checkJsonValue(sample[key], () => `stream ${stream} sample at t=${String(sample.t)}: field ${key}`);
      }
    }
    await this.request({ type: 'samples', samples });
  }

  /**
   * Sends rows of several streams as binary columns (protocol 2): per stream its times, steps and one
   * array per declared field. All of it is kept or none; resolves once durable.
   */
  async appendColumns(batches: readonly StreamColumns[]): Promise<void> {
    this.needProtocol(2, 'appendColumns');
    const body = encodeColumnsBody(batches, (stream) => this.streamFields.get(stream));
    await this.request({ type: 'columns' }, body);
  }

  /**
   * Sends one step of many actors' streams named `name` as binary columns (protocol 2): each column
   * holds one value per actor, in the order of `frame.actors`. Resolves once durable.
   */
  async appendFrame(name: string, frame: FrameInput): Promise<void> {
    this.needProtocol(2, 'appendFrame');
    const first = frame.actors[0];
    const fields = first === undefined ? [] : this.streamFields.get(`${first}/${name}`);
    if (!fields)
      throw new RangeError(`appendFrame: stream ${JSON.stringify(`${first}/${name}`)} is not declared`);
    const body = encodeFrameBody(name, frame, fields, this.frameActors, this.frameWriter);
    await this.request({ type: 'frame' }, body);
  }

  private needProtocol(version: number, what: string): void {
    const agreed = this.welcome?.protocol ?? 0;
    if (agreed < version)
      throw new IngestError(
        'bad_message',
        `${what}: needs protocol ${version}; this session speaks protocol ${agreed}`,
      );
  }

  async capture(args: CaptureArgs): Promise<void> {
    const { data, ...header } = args;
    await this.request({ type: 'capture', ...header }, data);
  }

  async attach(args: AttachArgs): Promise<void> {
    const { data, ...header } = args;
    await this.request({ type: 'attach', ...header }, data);
  }

  /** Says that an actor has gone at t (microseconds); resolves once durable. */
  async leave(actor: string, t: number): Promise<void> {
    await this.request({ type: 'leave', actor, t });
  }

  /** Says that an actor is (back) in the scene from t, with or without a sample then. */
  async appear(actor: string, t: number): Promise<void> {
    await this.request({ type: 'appear', actor, t });
  }

  /** Ends the run; `closed` is false while other connections still record into it. */
  async endRun(reason: EndReason = 'user_request'): Promise<{ run: number; closed: boolean }> {
    const ack = await this.request({ type: 'end', reason });
    return { run: ack.run!, closed: ack.closed ?? true };
  }

  /** Resolves once every message sent so far has been answered. */
  async flush(): Promise<void> {
    while (this.entries.size > 0) await new Promise<void>((resolve) => this.settledWaiters.push(resolve));
    if (this.failure) throw this.failure;
  }

  /** Waits for every answer, then closes the connection. */
  async close(): Promise<void> {
    try {
      if (!this.failure) await this.flush();
    } finally {
      this.closing = true;
      this.stopWatchdog();
      this.transport?.close();
      this.transport = null;
    }
  }

  /** Drops the connection as a network failure would; the client reconnects and resends. */
  disconnect(): void {
    this.transport?.close();
  }

  /**
   * Queues a sequenced message. The returned promise settles with the server's answer; callers that do
   * not await it still learn of a failure from flush() or close().
   */
  private request(header: Record<string, unknown>, body?: Uint8Array): Promise<AckMessage> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new IngestError('disconnected', 'the client is closed'));
    const seq = this.nextSeq;
    const message = encodeMessage({ ...header, seq }, body);
    const bytes = message.length;
    const limit = this.welcome?.maxFrameBytes ?? Infinity;
    if (bytes > limit)
      return Promise.reject(
        new IngestError(
          'frame_too_large',
          `${String(header.type)}: ${bytes} bytes exceeds the server's limit of ${limit}`,
        ),
      );
    // What the server decodes at once (a server from before the limit announces none).
    const batchLimit = this.welcome?.maxBatchBytes ?? Infinity;
    const headerBytes = message.readUInt32BE(0);
    const decoded =
      header.type === 'columns' || header.type === 'frame'
        ? Math.max(headerBytes, body?.byteLength ?? 0)
        : headerBytes;
    if (decoded > batchLimit)
      return Promise.reject(
        new IngestError(
          'frame_too_large',
          `${String(header.type)}: ${decoded} bytes of ${decoded === headerBytes ? 'JSON header' : 'body'} exceeds the server's limit of ${batchLimit} (maxBatchBytes); send it in several messages`,
        ),
      );
    this.nextSeq++;
    const promise = new Promise<AckMessage>((resolve, reject) => {
      this.entries.set(seq, { seq, message, bytes, sent: false, resolve, reject });
    });
    this.pump();
    return promise;
  }

  /** Sends what the credit window allows, oldest first. */
  private pump(): void {
    const transport = this.transport;
    const welcome = this.welcome;
    if (!transport || !welcome || this.welcomeWaiter) return;
    let corked = false;
    // Messages before unsentFrom are all sent or answered: the scan starts there, not at the oldest
    // message in flight (scanning a full window's sent messages at every ack cost the client dearly).
    for (let seq = this.unsentFrom; seq < this.nextSeq; seq++) {
      const entry = this.entries.get(seq);
      if (entry === undefined || entry.sent) {
        if (seq === this.unsentFrom) this.unsentFrom = seq + 1;
        continue;
      }
      if (this.inflight >= welcome.window.messages) break;
      if (this.inflight > 0 && this.inflightBytes + entry.bytes > welcome.window.bytes) break;
      if (!corked) {
        // The messages an ack lets through leave in one write, not a system call each.
        corked = true;
        transport.cork();
      }
      entry.sent = true;
      if (seq === this.unsentFrom) this.unsentFrom = seq + 1;
      this.inflight++;
      this.inflightBytes += entry.bytes;
      transport.send(entry.message);
    }
    if (corked) transport.uncork();
  }

  private settle(seq: number, outcome: { ack: AckMessage } | { error: unknown }): void {
    const entry = this.entries.get(seq);
    if (!entry) return;
    this.entries.delete(seq);
    if (entry.sent) {
      this.inflight--;
      this.inflightBytes -= entry.bytes;
    }
    if ('ack' in outcome) entry.resolve(outcome.ack);
    else entry.reject(outcome.error);
    if (this.entries.size === 0) for (const wake of this.settledWaiters.splice(0)) wake();
    this.pump();
  }

  private failAll(error: IngestError): void {
    this.failure ??= error;
    for (const seq of [...this.entries.keys()]) this.settle(seq, { error: this.failure });
    for (const wake of this.settledWaiters.splice(0)) wake();
  }

  private onMessage(message: ServerMessage): void {
    this.lastHeard = Date.now();
    switch (message.type) {
      case 'welcome':
        this.welcome = message;
        this.welcomeWaiter?.resolve(message);
        this.welcomeWaiter = null;
        return;
      case 'ack':
        this.settle(message.seq, { ack: message });
        return;
      case 'error': {
        const error = new IngestError(message.code, message.message, message.field);
        if (this.welcomeWaiter) {
          this.welcomeWaiter.reject(error);
          this.welcomeWaiter = null;
          return;
        }
        const seq = message.ref?.seq;
        if (seq !== undefined) this.settle(seq, { error });
        // A fatal error ends the session on the server: nothing can be resumed.
        if (message.fatal) this.failAll(error);
        return;
      }
      case 'control':
        this.options.onControl?.(message);
        return;
      case 'ping':
        this.transport?.send(encodeMessage({ type: 'pong' }));
        return;
      case 'pong':
        return;
    }
  }

  private onClosed(transport: Transport): void {
    if (this.transport !== transport) return;
    this.transport = null;
    this.stopWatchdog();
    if (this.welcomeWaiter) {
      this.welcomeWaiter.reject(
        new IngestError('disconnected', `the connection to ${this.options.url} closed`),
      );
      this.welcomeWaiter = null;
    }
    if (this.closing || this.failure) return;
    // Nothing sent is known to have arrived: all of it is resent after the resume, except what the
    // server says it received.
    for (const entry of this.entries.values()) entry.sent = false;
    // The oldest unanswered message (entries keep the order of their sequence numbers).
    this.unsentFrom = this.entries.keys().next().value ?? this.nextSeq;
    this.inflight = 0;
    this.inflightBytes = 0;
    this.reconnecting ??= this.reconnect().finally(() => (this.reconnecting = null));
  }

  private async reconnect(): Promise<void> {
    const attempts = this.options.reconnect?.attempts ?? 10;
    const delayMs = this.options.reconnect?.delayMs ?? 500;
    let last: unknown = null;
    for (let attempt = 0; attempt < attempts && !this.closing; attempt++) {
      await new Promise((r) => setTimeout(r, delayMs));
      try {
        await this.open();
        this.reconnects++;
        return;
      } catch (error) {
        last = error;
        if (error instanceof IngestError && error.code !== 'disconnected') break;
      }
    }
    this.failAll(
      last instanceof IngestError && last.code !== 'disconnected'
        ? last
        : new IngestError('disconnected', `lost the connection to ${this.options.url} and could not resume`),
    );
  }

  private async open(): Promise<void> {
    const welcomed = new Promise<WelcomeMessage>((resolve, reject) => {
      this.welcomeWaiter = { resolve, reject };
    });
    let transport: Transport;
    try {
      transport = await openTransport(this.options.url, {
        message: (m) => this.onMessage(m),
        closed: () => this.onClosed(transport),
      });
    } catch (error) {
      this.welcomeWaiter = null;
      throw new IngestError(
        'disconnected',
        `cannot connect to ${this.options.url}: ${(error as Error).message}`,
      );
    }
    this.transport = transport;
    const hello: Record<string, unknown> = {
      type: 'hello',
      protocol: this.options.protocol ?? PROTOCOL_VERSION,
      simulator: this.options.simulator,
    };
    if (this.options.token !== undefined) hello.token = this.options.token;
    if (this.welcome) hello.resume = { session: this.welcome.session, pending: [...this.entries.keys()] };
    transport.send(encodeMessage(hello));
    const welcome = await welcomed;
    // What the server received is answered right after the welcome; only the rest is resent.
    for (const entry of this.entries.values())
      if (entry.seq <= welcome.received && !entry.sent) {
        entry.sent = true;
        this.inflight++;
        this.inflightBytes += entry.bytes;
      }
    this.lastHeard = Date.now();
    this.startWatchdog(welcome.keepaliveMs);
    this.pump();
  }

  /** A server silent for three keepalive periods is taken for gone: reconnect. */
  private startWatchdog(keepaliveMs: number): void {
    this.stopWatchdog();
    this.watchdog = setInterval(() => {
      if (Date.now() - this.lastHeard > keepaliveMs * 3) this.transport?.close();
    }, keepaliveMs);
    this.watchdog.unref();
  }

  private stopWatchdog(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }
}

async function openTransport(url: string, events: TransportEvents): Promise<Transport> {
  const parsed = new URL(url);
  if (parsed.protocol === 'tcp:') return openTcp(parsed.hostname, Number(parsed.port), events);
  if (parsed.protocol === 'ws:' || parsed.protocol === 'wss:') return openWebSocket(url, events);
  throw new Error(`unsupported URL ${url}: expected ws://, wss:// or tcp://`);
}

function openTcp(host: string, port: number, events: TransportEvents): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connectTcp({ host: host.replace(/^\[|\]$/g, ''), port });
    const decoder = new FrameDecoder(Number.MAX_SAFE_INTEGER);
    let open = false;
    socket.setNoDelay(true);
    socket.once('connect', () => {
      open = true;
      resolve({
        send: (message) => {
          if (!socket.writable) return;
          const length = Buffer.allocUnsafe(LENGTH_BYTES);
          length.writeUInt32BE(message.length, 0);
          socket.cork();
          socket.write(length);
          socket.write(message);
          socket.uncork();
        },
        cork: () => socket.cork(),
        uncork: () => socket.uncork(),
        close: () => socket.destroy(),
      });
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const bytes of decoder.push(chunk)) events.message(decodeMessage(bytes).header as ServerMessage);
      } catch {
        socket.destroy();
      }
    });
    socket.on('error', (error) => {
      if (!open) reject(error);
    });
    socket.on('close', () => {
      if (open) events.closed();
    });
  });
}

function openWebSocket(url: string, events: TransportEvents): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    let open = false;
    ws.once('open', () => {
      open = true;
      resolve({
        send: (message) => {
          if (ws.readyState === ws.OPEN) ws.send(message);
        },
        // Each message is a WebSocket message of its own.
        cork: () => {},
        uncork: () => {},
        close: () => ws.terminate(),
      });
    });
    ws.on('message', (data, isBinary) => {
      try {
        const bytes = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
        events.message(
          (isBinary ? decodeMessage(bytes).header : JSON.parse(bytes.toString('utf8'))) as ServerMessage,
        );
      } catch {
        ws.terminate();
      }
    });
    ws.on('error', (error) => {
      if (!open) reject(error);
    });
    ws.on('close', () => {
      if (open) events.closed();
    });
  });
}
