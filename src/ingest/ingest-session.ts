/**
 * One simulator's session: its sequence numbers, what it has been answered, and the run it records.
 * A session outlives its connection: a client that reconnects within the grace period resumes it
 * (resending what was not answered, which the sequence numbers dedupe); one that does not leaves its
 * run closed as `interrupted`, with everything acknowledged kept.
 */
import { clipText, describeValue, SimrecError } from '../model/errors.js';
import { validateAttachment, type Attachment } from '../model/attachment.js';
import type { JsonObject } from '../model/json.js';
import { CAPTURES_STREAM, LIVE_SENSOR_ATTRIBUTE, SENSOR_ACTOR_KIND } from '../model/perception.js';
import { readImageSize } from '../formats/common/labelled-images/image-files.js';
import type { ActorDecl, EndReason, SimulatorInfo } from '../model/run.js';
import type { StreamAppend } from '../model/store-port.js';
import type { FieldDecl } from '../model/stream.js';
import type { RunRecorder } from '../record/run-recorder.js';
import { decodeColumnsBody, decodeFrameBody, FrameScratch, type ActorBlockCache } from './binary-batches.js';
import {
  messageRef,
  parseClientMessage,
  ProtocolError,
  SINCE_VERSION,
  type AckMessage,
  type CaptureMessage,
  type ErrorCode,
  type ErrorMessage,
  type SensorDecl,
  type SequencedMessage,
  type ServerMessage,
} from './protocol.js';

/** One transport's connection (TCP socket, WebSocket), as the session sees it. */
export interface IngestConnection {
  send(message: ServerMessage): void;
  /** Closes after what was sent is flushed; `fatal` after a protocol violation. */
  close(options?: { fatal?: boolean }): void;
  /** Stops reading: the transport's own flow control then slows the client. */
  pause(): void;
  resume(): void;
}

/** A run recorded through this server, possibly by several connections. */
export interface SharedRun {
  readonly recorder: RunRecorder;
  readonly participants: Set<IngestSession>;
  /** `actor:<id>` and `stream:<id>` -> the session that declared it; only it may write there. */
  readonly owners: Map<string, IngestSession>;
  readonly sensors: Map<string, SensorDecl>;
  /** A participant vanished: the run's data is incomplete, whatever the others say at their end. */
  interrupted: boolean;
}

/** What a session needs from the server that holds it. */
export interface SessionHost {
  readonly window: { messages: number; bytes: number };
  readonly maxFrameBytes: number;
  /** The most bytes of a JSON header, or of a `columns` or `frame` body (protocol.ts DEFAULT_MAX_BATCH_BYTES). */
  readonly maxBatchBytes: number;
  readonly keepaliveMs: number;
  readonly resumeGraceMs: number;
  isRecording(): boolean;
  beginRun(
    session: IngestSession,
    init: { description?: string; metadata?: object; begin?: number },
  ): Promise<SharedRun>;
  findRun(id: number): SharedRun | undefined;
  /** Removes a participant; ends the run when it was the last. Resolves true if the run closed. */
  leaveRun(run: SharedRun, session: IngestSession, reason: EndReason): Promise<boolean>;
  forget(session: IngestSession): void;
}

const CAPTURE_FIELDS = [
  { name: 'name', type: 'string' },
  { name: 'mediaType', type: 'string' },
  { name: 'bytes', type: 'i64', unit: 'B' },
  // What the image's own header says (PNG, JPEG): the exports' size, whatever the sensor declared.
  { name: 'width', type: 'i32', unit: 'px', optional: true },
  { name: 'height', type: 'i32', unit: 'px', optional: true },
] as const;

const INT32_MAX = 0x7fffffff;

/** The size a PNG's or JPEG's header gives, when it is one an i32 column holds. */
function headerSize(data: Uint8Array): { width: number; height: number } | Record<string, never> {
  const size = readImageSize(data);
  const fits = (n: number): boolean => n > 0 && n <= INT32_MAX;
  return size && fits(size.width) && fits(size.height) ? size : {};
}

const EXTENSIONS: Record<string, string> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/bmp': '.bmp',
  'image/x-portable-pixmap': '.ppm',
  'application/octet-stream': '.bin',
};

/**
 * How far back answers are kept to replay what a client may have missed: it never has more than a
 * window open. Only answers other than a plain ack are kept (a plain ack is answered again from its
 * number), each an error of at most MAX_ERROR_CHARS: a session keeps at most a few MiB of them.
 */
const answersKept = (window: number): number => window * 2 + 16;

/**
 * The longest error message, and field path, the server sends: a safety net under the messages, which
 * quote at most a prefix of what they name (describeValue, clipText). An error carries one line.
 */
export const MAX_ERROR_CHARS = 1000;
export const MAX_ERROR_FIELD_CHARS = 200;

export class IngestSession {
  readonly id: string;
  readonly simulator: SimulatorInfo;
  /** The version agreed in the hello that began the session; a resume keeps it. */
  readonly protocol: number;
  private readonly host: SessionHost;
  private connection: IngestConnection | null = null;
  private paused = false;
  /** The highest sequence number received (and so applied, or refused). */
  private lastSeq = 0;
  /** Applies messages one at a time, in sequence order. */
  private work: Promise<void> = Promise.resolve();
  /** Sends acks in sequence order, each once its write is durable. */
  private answered: Promise<void> = Promise.resolve();
  private readonly answers = new Map<number, AckMessage | ErrorMessage>();
  /**
   * The actor ids of the last frame of each stream name, decoded once (binary-batches.ts): kept only
   * for a list whose every stream was found declared and this session's, in the run it records now.
   */
  private readonly frameActors = new Map<string, ActorBlockCache>();
  /** The arrays this session's frames are decoded into (appended at once, then free again). */
  private readonly frameScratch = new FrameScratch();
  private readonly sizes = new Map<number, number>();
  private inflightBytes = 0;
  private graceTimer: NodeJS.Timeout | null = null;
  private run: SharedRun | null = null;
  private terminated = false;
  lastHeard = Date.now();

  constructor(host: SessionHost, id: string, simulator: SimulatorInfo, protocol: number) {
    this.host = host;
    this.id = id;
    this.simulator = simulator;
    this.protocol = protocol;
  }

  get runId(): number | null {
    return this.run?.recorder.id ?? null;
  }

  /** Answers kept for a resume (errors, and the acks of begin, join and end). */
  get keptAnswers(): number {
    return this.answers.size;
  }

  get attached(): boolean {
    return this.connection !== null;
  }

  isConnection(connection: IngestConnection): boolean {
    return this.connection === connection;
  }

  /**
   * Takes a connection (a new one, or a reconnect): once everything received so far is answered, sends
   * the welcome and the answers to `pending` that the client may have missed.
   */
  async attach(connection: IngestConnection, pending: readonly number[], resumed: boolean): Promise<void> {
    const previous = this.connection;
    this.connection = null;
    if (previous) previous.close();
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    await this.drained();
    if (this.terminated) {
      connection.send(errorMessage('unknown_session', `session ${this.id} has ended`, {}, true));
      connection.close({ fatal: true });
      return;
    }
    this.connection = connection;
    this.paused = false;
    this.lastHeard = Date.now();
    connection.send({
      type: 'welcome',
      protocol: this.protocol,
      session: this.id,
      resumed,
      received: this.lastSeq,
      run: this.runId,
      window: this.host.window,
      maxFrameBytes: this.host.maxFrameBytes,
      maxBatchBytes: this.host.maxBatchBytes,
      keepaliveMs: this.host.keepaliveMs,
      recording: this.host.isRecording(),
    });
    for (const seq of pending)
      if (seq <= this.lastSeq) connection.send(this.answers.get(seq) ?? { type: 'ack', seq });
  }

  /** The connection is gone without an end: wait for a resume, then give up on the run. */
  detach(connection: IngestConnection): void {
    if (this.connection !== connection) return;
    this.connection = null;
    // terminate never rejects (ending the run is all it waits for, and no client is left to hear that fail).
    if (this.run === null && this.sizes.size === 0) {
      void this.terminate();
      return;
    }
    this.graceTimer = setTimeout(() => void this.terminate(), this.host.resumeGraceMs);
    this.graceTimer.unref();
  }

  /** Drops the connection as if it had vanished (a keepalive timeout): the client may resume. */
  dropConnection(): void {
    const connection = this.connection;
    if (!connection) return;
    this.detach(connection);
    connection.close();
  }

  send(message: ServerMessage): void {
    this.connection?.send(message);
  }

  /** A decoded message from the attached connection (after hello). */
  receive(header: unknown, body: Uint8Array | null, size: number): void {
    if (this.terminated) return;
    this.lastHeard = Date.now();
    const ref = messageRef(header);
    let message;
    try {
      message = parseClientMessage(header, body);
      const since = SINCE_VERSION[message.type];
      if (since !== undefined && this.protocol < since)
        throw new ProtocolError(
          'bad_message',
          `${message.type}: a message of protocol ${since}; this session speaks protocol ${this.protocol} (say it in hello)`,
          { field: 'type' },
        );
      if (
        (message.type === 'columns' || message.type === 'frame') &&
        message.body.byteLength > this.host.maxBatchBytes
      )
        throw new ProtocolError(
          'bad_message',
          `${message.type}: ${message.body.byteLength} bytes of body, expected at most ${this.host.maxBatchBytes} (maxBatchBytes; send the rows in several messages)`,
          { field: 'body' },
        );
    } catch (error) {
      // A refused message still uses up its sequence number, so that the client's numbering goes on.
      if (ref.seq === this.lastSeq + 1) {
        this.lastSeq = ref.seq;
        this.sizes.set(ref.seq, size);
        this.inflightBytes += size;
      }
      this.fail(error, ref);
      return;
    }
    switch (message.type) {
      case 'ping':
        this.send({ type: 'pong' });
        return;
      case 'pong':
        return;
      case 'hello':
        this.fail(new ProtocolError('out_of_order', 'hello: the session has already begun'), ref);
        return;
    }
    const seq = message.seq;
    if (seq <= this.lastSeq) {
      // A resend of something already applied: answer it again, apply nothing.
      const answer = this.answers.get(seq);
      if (answer) this.send(answer);
      else if (!this.sizes.has(seq)) this.send({ type: 'ack', seq });
      return;
    }
    if (seq !== this.lastSeq + 1) {
      this.fail(
        new ProtocolError('sequence_gap', `${message.type}.seq: expected ${this.lastSeq + 1}, got ${seq}`, {
          field: 'seq',
          fatal: true,
        }),
        ref,
      );
      return;
    }
    this.lastSeq = seq;
    this.sizes.set(seq, size);
    this.inflightBytes += size;
    if (!this.paused && this.overWindow()) {
      this.paused = true;
      this.connection?.pause();
    }
    this.work = this.work.then(() => this.apply(message));
  }

  /** Answers `error` for a message, closing the connection and the session when it is fatal. */
  fail(error: unknown, ref: { type?: string; seq?: number }): void {
    const message = toErrorMessage(error, ref);
    this.answer(message);
    if (message.fatal) {
      const connection = this.connection;
      this.connection = null;
      connection?.send(message);
      connection?.close({ fatal: true });
      void this.terminate(); // never rejects: see detach
    }
  }

  /** Ends the session for good: its run loses a participant, as `interrupted`. */
  async terminate(): Promise<void> {
    if (this.terminated) return;
    this.terminated = true;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    const connection = this.connection;
    this.connection = null;
    connection?.close();
    await this.drained();
    const run = this.run;
    this.run = null;
    if (run) {
      run.interrupted = true;
      // The client is gone: no one is left to hear that ending the run failed, and the run keeps what was stored.
      await this.host.leaveRun(run, this, 'interrupted').catch(() => {});
    }
    this.host.forget(this);
  }

  private async drained(): Promise<void> {
    // Messages applied while waiting queue more work; wait until none is left.
    for (;;) {
      const work = this.work;
      const answered = this.answered;
      await work;
      await answered;
      if (work === this.work && answered === this.answered) return;
    }
  }

  private overWindow(): boolean {
    const { messages, bytes } = this.host.window;
    return this.sizes.size > messages || (this.inflightBytes > bytes && this.sizes.size > 1);
  }

  private answer(message: AckMessage | ErrorMessage): void {
    const seq = message.type === 'ack' ? message.seq : message.ref?.seq;
    if (seq !== undefined && this.sizes.has(seq)) {
      this.inflightBytes -= this.sizes.get(seq)!;
      this.sizes.delete(seq);
      if (message.type === 'error' || message.run !== undefined || message.closed !== undefined)
        this.answers.set(seq, message);
      const oldest = seq - answersKept(this.host.window.messages);
      for (const kept of this.answers.keys()) {
        if (kept > oldest) break;
        this.answers.delete(kept);
      }
    }
    if (message.type === 'ack' || !message.fatal) this.send(message);
    if (this.paused && !this.overWindow()) {
      this.paused = false;
      this.connection?.resume();
    }
  }

  /** Acks `seq` once `durable` resolves, after every earlier ack. */
  private ackWhen(
    seq: number,
    durable: Promise<unknown>,
    extra: Omit<AckMessage, 'type' | 'seq'> = {},
  ): void {
    const ref = { seq };
    this.answered = this.answered.then(() =>
      durable.then(
        () => this.answer({ type: 'ack', seq, ...extra }),
        (error: unknown) => this.fail(error, ref),
      ),
    );
  }

  private async apply(message: SequencedMessage): Promise<void> {
    const ref = { type: message.type, seq: message.seq };
    try {
      await this.applyOrThrow(message);
    } catch (error) {
      this.fail(error, ref);
    }
  }

  private async applyOrThrow(m: SequencedMessage): Promise<void> {
    if (m.type === 'begin') {
      if (this.run)
        throw new ProtocolError(
          'out_of_order',
          `begin: the session is recording run ${this.run.recorder.id}; end it first`,
        );
      if (!this.host.isRecording())
        throw new ProtocolError(
          'recording_off',
          'begin: the server is not recording runs (record every run is off)',
        );
      const init: { description?: string; metadata?: object; begin?: number } = {};
      if (m.description !== undefined) init.description = m.description;
      if (m.metadata !== undefined) init.metadata = m.metadata;
      if (m.begin !== undefined) init.begin = m.begin;
      this.run = await this.host.beginRun(this, init);
      this.frameActors.clear();
      this.ackWhen(m.seq, Promise.resolve(), { run: this.run.recorder.id });
      return;
    }
    if (m.type === 'join') {
      if (this.run)
        throw new ProtocolError(
          'out_of_order',
          `join: the session is recording run ${this.run.recorder.id}; end it first`,
        );
      const run = this.host.findRun(m.run);
      if (!run)
        throw new ProtocolError('not_found', `join.run: run ${m.run} is not being recorded by this server`, {
          field: 'run',
        });
      run.participants.add(this);
      this.run = run;
      this.frameActors.clear();
      this.ackWhen(m.seq, Promise.resolve(), { run: m.run });
      return;
    }
    const run = this.run;
    if (!run)
      throw new ProtocolError(
        'out_of_order',
        `${m.type}: no run has begun in this session (send begin or join first)`,
      );
    const recorder = run.recorder;
    switch (m.type) {
      case 'actors': {
        for (const [i, actor] of m.actors.entries()) this.claim(run, 'actor', actor?.id, `actors[${i}].id`);
        await recorder.declareActors(m.actors);
        for (const actor of m.actors) run.owners.set(`actor:${actor.id}`, this);
        this.ackWhen(m.seq, Promise.resolve());
        return;
      }
      case 'streams': {
        for (const [i, stream] of m.streams.entries()) {
          const actor = stream?.actor;
          if (typeof actor === 'string') this.checkOwner(run, `actor:${actor}`, `streams[${i}].actor`);
        }
        const ids = await recorder.declareStreams(m.streams);
        for (const id of ids) run.owners.set(`stream:${id}`, this);
        this.ackWhen(m.seq, Promise.resolve());
        return;
      }
      case 'sensors': {
        for (const [i, sensor] of m.sensors.entries()) {
          this.claim(run, 'actor', sensor.id, `sensors[${i}].id`);
          if (sensor.actor !== undefined && !run.owners.has(`actor:${sensor.actor}`))
            throw new ProtocolError(
              'invalid',
              `sensors[${i}].actor: actor ${describeValue(sensor.actor)} is not declared`,
              {
                field: `sensors[${i}].actor`,
              },
            );
        }
        await recorder.declareActors(m.sensors.map(sensorActor));
        const ids = await recorder.declareStreams(
          m.sensors.map((s) => ({
            name: CAPTURES_STREAM,
            actor: s.id,
            fields: CAPTURE_FIELDS.map((f) => ({ ...f })),
          })),
        );
        for (const sensor of m.sensors) {
          run.owners.set(`actor:${sensor.id}`, this);
          run.sensors.set(sensor.id, sensor);
        }
        for (const id of ids) run.owners.set(`stream:${id}`, this);
        this.ackWhen(m.seq, Promise.resolve());
        return;
      }
      case 'samples': {
        const appends: StreamAppend[] = [];
        for (const [stream, samples] of Object.entries(m.samples)) {
          const field = `samples.${clipText(stream)}`;
          if (!run.owners.has(`stream:${stream}`))
            throw new ProtocolError(
              'invalid',
              `${field}: run ${recorder.id} has no declared stream ${describeValue(stream)}`,
              { field },
            );
          this.checkOwner(run, `stream:${stream}`, field);
          appends.push({ stream, samples });
        }
        this.ackWhen(m.seq, recorder.appendMany(appends));
        return;
      }
      case 'columns': {
        const batches = decodeColumnsBody(m.body, (stream) =>
          this.writable(run, stream, `columns.${clipText(stream)}`),
        );
        this.ackWhen(m.seq, recorder.appendColumnsMany(batches));
        return;
      }
      case 'frame': {
        // Each actor's stream is found declared and this session's as its id is decoded; a stream's
        // owner is set when it is declared and kept for the run, so a list kept in frameActors (of
        // this run: it is emptied when the run changes) need not be looked up again.
        const { name, frame } = decodeFrameBody(
          m.body,
          {
            fieldsOf: (stream, where) => this.writable(run, stream, `frame.${where}`),
            countNamed: (streamName) => run.recorder.actorStreamsNamed(streamName),
          },
          this.frameActors,
          this.frameScratch,
        );
        this.ackWhen(m.seq, recorder.appendFrame(name, frame));
        return;
      }
      case 'capture': {
        this.ackWhen(m.seq, this.capture(run, m));
        return;
      }
      case 'attach': {
        const attachment: Attachment = { name: m.name, mediaType: m.mediaType, data: m.data };
        if (m.t !== undefined) attachment.t = m.t;
        if (m.metadata !== undefined) attachment.metadata = m.metadata;
        validateAttachment(attachment);
        this.ackWhen(m.seq, recorder.attach(attachment));
        return;
      }
      case 'leave':
      case 'appear': {
        if (!run.owners.has(`actor:${m.actor}`))
          throw new ProtocolError(
            'invalid',
            `${m.type}.actor: actor ${describeValue(m.actor)} is not declared`,
            {
              field: 'actor',
            },
          );
        this.checkOwner(run, `actor:${m.actor}`, 'actor');
        this.ackWhen(
          m.seq,
          m.type === 'leave' ? recorder.leave(m.actor, m.t) : recorder.appear(m.actor, m.t),
        );
        return;
      }
      case 'end': {
        // Every earlier message must be durable (and acked) before the run can close.
        await this.drainAnswers();
        this.run = null;
        const closed = await this.host.leaveRun(run, this, m.reason);
        this.ackWhen(m.seq, Promise.resolve(), { run: recorder.id, closed });
        return;
      }
    }
  }

  private async drainAnswers(): Promise<void> {
    for (;;) {
      const answered = this.answered;
      await answered;
      if (answered === this.answered) return;
    }
  }

  private capture(run: SharedRun, m: CaptureMessage): Promise<unknown> {
    const sensor = run.sensors.get(m.sensor);
    if (!sensor)
      throw new ProtocolError(
        'invalid',
        `capture.sensor: sensor ${describeValue(m.sensor)} is not declared`,
        { field: 'sensor' },
      );
    this.checkOwner(run, `actor:${m.sensor}`, 'sensor');
    const name = m.name ?? `${m.sensor}/${String(m.step).padStart(8, '0')}${EXTENSIONS[m.mediaType] ?? ''}`;
    const attachment = validateAttachment({
      name,
      mediaType: m.mediaType,
      t: m.t,
      data: m.data,
      metadata: { ...m.metadata, sensor: m.sensor, step: m.step },
    });
    const row = run.recorder.append(`${m.sensor}/${CAPTURES_STREAM}`, {
      t: m.t,
      step: m.step,
      name,
      mediaType: m.mediaType,
      bytes: m.data.byteLength,
      ...headerSize(m.data),
    });
    return Promise.all([row, run.recorder.attach(attachment)]);
  }

  /** A stream's declared fields, once this session may write to it; undefined if it is not declared. */
  private writable(run: SharedRun, stream: string, field: string): readonly FieldDecl[] | undefined {
    const fields = run.recorder.streamFields(stream);
    if (fields) this.checkOwner(run, `stream:${stream}`, field);
    return fields;
  }

  /** Refuses a declaration of something another connection of the run declared. */
  private claim(run: SharedRun, kind: 'actor', id: unknown, field: string): void {
    if (typeof id === 'string') this.checkOwner(run, `${kind}:${id}`, field);
  }

  private checkOwner(run: SharedRun, key: string, field: string): void {
    const owner = run.owners.get(key);
    if (owner !== undefined && owner !== this)
      throw new ProtocolError(
        'conflict',
        `${field}: ${key.slice(0, key.indexOf(':'))} ${describeValue(key.slice(key.indexOf(':') + 1))} belongs to another connection of run ${run.recorder.id} (session ${owner.id})`,
        { field },
      );
  }
}

function sensorActor(sensor: SensorDecl): ActorDecl {
  const { attributes, ...rest } = sensor;
  return {
    id: sensor.id,
    kind: SENSOR_ACTOR_KIND,
    sourceClass: sensor.modality,
    attributes: { ...attributes, [LIVE_SENSOR_ATTRIBUTE]: JSON.parse(JSON.stringify(rest)) as JsonObject },
  };
}

const MODEL_CODES: Record<string, ErrorCode> = {
  invalid: 'invalid',
  not_found: 'not_found',
  conflict: 'conflict',
  unsupported: 'invalid',
  io: 'io',
};

function errorMessage(
  code: ErrorCode,
  message: string,
  ref: { type?: string; seq?: number },
  fatal: boolean,
  field?: string,
): ErrorMessage {
  const oneLine = (text: string, max: number): string => clipText(text.replace(/\s*\n\s*/g, ' '), max);
  const out: ErrorMessage = { type: 'error', code, message: oneLine(message, MAX_ERROR_CHARS), fatal };
  if (ref.type !== undefined || ref.seq !== undefined) out.ref = ref;
  if (field !== undefined) out.field = oneLine(field, MAX_ERROR_FIELD_CHARS);
  return out;
}

export function toErrorMessage(error: unknown, ref: { type?: string; seq?: number }): ErrorMessage {
  if (error instanceof ProtocolError)
    return errorMessage(error.code, error.message, ref, error.fatal, error.field);
  if (error instanceof SimrecError) {
    const code = MODEL_CODES[error.code] ?? 'invalid';
    // A failed write leaves the recorder unusable; the session cannot go on.
    return errorMessage(code, error.message, ref, code === 'io', fieldOf(error.message));
  }
  return errorMessage('io', `internal error: ${(error as Error)?.message ?? String(error)}`, ref, true);
}

/** The model's messages begin with where the problem is (`stream ego/state sample at t=5: ...`). */
function fieldOf(message: string): string | undefined {
  const colon = message.indexOf(': ');
  return colon > 0 && colon < 120 ? message.slice(0, colon) : undefined;
}
