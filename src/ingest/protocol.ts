/**
 * The ingest protocol's messages (docs/protocol.md) and their validation. A message is a JSON header,
 * plus raw bytes for captures and attachments; framing.ts carries it over TCP and WebSocket alike.
 *
 * This file checks the shape a message must have to be routed (types, sequence numbers, required
 * fields); the model validates the content (samples, actors, stream schemas) when it is applied, so
 * each rule lives in one place.
 */
import { clipText, describeValue } from '../model/errors.js';
import type { JsonObject } from '../model/json.js';
import type { ActorDecl, EndReason, SimulatorInfo } from '../model/run.js';
import type { Sample, StreamDecl } from '../model/stream.js';

/** The newest version this side speaks; a hello asks for one, the welcome says which was agreed. */
export const PROTOCOL_VERSION = 2;
/** Versions a server accepts: 1 (JSON batches only) and 2 (binary `columns` and `frame` batches too). */
export const PROTOCOL_VERSIONS: readonly number[] = [1, 2];
/** Messages that exist from a version on. */
export const SINCE_VERSION: Record<string, number> = { columns: 2, frame: 2 };

/**
 * The longest actor id, stream name, field name, sensor id or attachment name a message may carry, in
 * UTF-8 bytes: a name is quoted in errors and kept per run, so one of any length cost the server
 * memory and time in proportion. A stream id (`actor/name`) may take two names and the slash.
 */
export const MAX_NAME_BYTES = 256;
export const MAX_STREAM_ID_BYTES = 2 * MAX_NAME_BYTES + 1;
/**
 * The most bytes a message's JSON header, or a `columns` or `frame` body, may take: what the server
 * decodes and validates on its main thread in one go, so one message cannot hold the server up for
 * long (a MiB of short strings or JSON values takes far longer than a MiB of numbers). A capture's or
 * attachment's body is only copied, and may take up to maxFrameBytes.
 */
export const DEFAULT_MAX_BATCH_BYTES = 1024 * 1024;

/** The codes an `error` message carries; clients branch on these, people read the text. */
export const ERROR_CODES = [
  /** A frame that cannot be read: bad lengths, a header that is not JSON. */
  'bad_frame',
  'frame_too_large',
  /** A message of the wrong shape: unknown type, a missing or mistyped field. */
  'bad_message',
  'unsupported_version',
  'unauthorized',
  /** A message that is not valid in the session's state: samples before begin, a second hello. */
  'out_of_order',
  'sequence_gap',
  /** The model refused the content (a NaN, an unknown stream, time going backwards...). */
  'invalid',
  'conflict',
  'not_found',
  /** The store failed to write; the run cannot go on. */
  'io',
  /** The server's "record every run" switch is off: runs are not being stored. */
  'recording_off',
  'unknown_session',
  'timeout',
  'server_closing',
  /** Too many connections have not said hello yet; try again shortly. */
  'busy',
  /** The client left the server's replies unread too long (it must read what it is sent). */
  'slow_reader',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A message or frame the server refuses. `fatal` ones close the connection. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly fatal: boolean;
  constructor(code: ErrorCode, message: string, options: { field?: string; fatal?: boolean } = {}) {
    super(message);
    this.code = code;
    this.field = options.field;
    this.fatal = options.fatal ?? false;
  }
}

// ---- client -> server -----------------------------------------------------------------------------

export interface HelloMessage {
  type: 'hello';
  protocol: number;
  simulator: SimulatorInfo;
  token?: string;
  /** Resumes a session after a reconnect; `pending` are the sequence numbers not yet answered. */
  resume?: { session: string; pending: number[] };
}

/** Every message that changes something carries a sequence number: 1, 2, 3... within its session. */
interface Sequenced {
  seq: number;
}

export interface BeginMessage extends Sequenced {
  type: 'begin';
  description?: string;
  metadata?: JsonObject;
  /** Microseconds since the Unix epoch; defaults to the server's now. */
  begin?: number;
}

/** Appends to a run another connection began (several processes recording one run). */
export interface JoinMessage extends Sequenced {
  type: 'join';
  run: number;
}

export interface ActorsMessage extends Sequenced {
  type: 'actors';
  actors: ActorDecl[];
}

export interface StreamsMessage extends Sequenced {
  type: 'streams';
  streams: StreamDecl[];
}

/** A camera, depth or other sensor; it becomes an actor of kind `sensor` with a `captures` stream. */
export interface SensorDecl {
  id: string;
  /** The actor it is mounted on. */
  actor?: string;
  /** `camera`, `depth`, `lidar`... */
  modality: string;
  width?: number;
  height?: number;
  /** Horizontal field of view, radians. */
  fov?: number;
  /** Relative to its actor: position (m) and rotation quaternion (x, y, z, w). */
  mount?: { position: [number, number, number]; rotation: [number, number, number, number] };
  /** Seconds: 0 every step, > 0 periodic, < 0 only on request (deepdrive's CaptureInterval). */
  captureInterval?: number;
  attributes?: JsonObject;
}

export interface SensorsMessage extends Sequenced {
  type: 'sensors';
  sensors: SensorDecl[];
}

export interface SamplesMessage extends Sequenced {
  type: 'samples';
  /** Stream id -> samples in time order; the whole message is kept or none of it. */
  samples: Record<string, Sample[]>;
}

/**
 * Protocol 2: samples as binary columns (binary-batches.ts); the body is decoded against the streams'
 * declarations when the message is applied. All of it is kept or none.
 */
export interface ColumnsMessage extends Sequenced {
  type: 'columns' | 'frame';
  body: Uint8Array;
}

/** One frame of a sensor; the bytes travel as the message's body. */
export interface CaptureMessage extends Sequenced {
  type: 'capture';
  sensor: string;
  t: number;
  step: number;
  mediaType: string;
  /** The attachment's name; defaults to `<sensor>/<step>` plus an extension for the media type. */
  name?: string;
  metadata?: JsonObject;
  data: Uint8Array;
}

/** Any other blob kept with the run (the scenario file, a map). */
export interface AttachMessage extends Sequenced {
  type: 'attach';
  name: string;
  mediaType: string;
  t?: number;
  metadata?: JsonObject;
  data: Uint8Array;
}

/** An actor leaves the scene at t (a vehicle that arrived, left the area...), or comes back. */
export interface PresenceMessage extends Sequenced {
  type: 'leave' | 'appear';
  actor: string;
  /** Microseconds since the epoch. */
  t: number;
}

export interface EndMessage extends Sequenced {
  type: 'end';
  reason: EndReason;
}

export interface PingMessage {
  type: 'ping' | 'pong';
}

export type SequencedMessage =
  | BeginMessage
  | JoinMessage
  | ActorsMessage
  | StreamsMessage
  | SensorsMessage
  | SamplesMessage
  | ColumnsMessage
  | CaptureMessage
  | AttachMessage
  | PresenceMessage
  | EndMessage;

export type ClientMessage = HelloMessage | SequencedMessage | PingMessage;

// ---- server -> client -----------------------------------------------------------------------------

export interface WelcomeMessage {
  type: 'welcome';
  protocol: number;
  session: string;
  resumed: boolean;
  /** The highest sequence number the server has received; resend only what comes after it. */
  received: number;
  /** The run the session is recording, if any (after a resume). */
  run: number | null;
  /** At most this many sequenced messages, and this many bytes of them, may await their answer. */
  window: { messages: number; bytes: number };
  maxFrameBytes: number;
  /** The most bytes of a message's JSON header, and of a `columns` or `frame` body. */
  maxBatchBytes: number;
  keepaliveMs: number;
  /** False while the server's "record every run" switch is off. */
  recording: boolean;
}

/** The message `seq` is durable (or done, for declarations). */
export interface AckMessage {
  type: 'ack';
  seq: number;
  /** For begin, join and end: the run. */
  run?: number;
  /** For end: whether the run is closed (false while other connections still record into it). */
  closed?: boolean;
}

export interface ErrorMessage {
  type: 'error';
  code: ErrorCode;
  message: string;
  /** The message it answers: its type and sequence number, when known. */
  ref?: { type?: string; seq?: number };
  /** The offending field of that message, when known. */
  field?: string;
  /** The server closes the connection after a fatal error. */
  fatal: boolean;
}

export const CONTROL_ACTIONS = [
  'start_recording',
  'stop_recording',
  'set_capture_interval',
  'activate_camera',
  'deactivate_camera',
] as const;
export type ControlAction = (typeof CONTROL_ACTIONS)[number];

/** Sent to simulators; they act on it (the server cannot make a simulator render a camera). */
export interface ControlMessage {
  type: 'control';
  action: ControlAction;
  /** For camera and capture-interval actions. */
  sensor?: string;
  /** Seconds, for set_capture_interval (0 every step, > 0 periodic, < 0 only on request). */
  interval?: number;
  run?: number;
}

export type ServerMessage = WelcomeMessage | AckMessage | ErrorMessage | ControlMessage | PingMessage;

// ---- validation -----------------------------------------------------------------------------------

const SEQUENCED_TYPES = new Set([
  'begin',
  'join',
  'actors',
  'streams',
  'sensors',
  'samples',
  'columns',
  'frame',
  'capture',
  'attach',
  'leave',
  'appear',
  'end',
]);

export const isSequenced = (m: ClientMessage): m is SequencedMessage => SEQUENCED_TYPES.has(m.type);

type Fields = Record<string, unknown>;

function bad(type: string, field: string, expected: string, value: unknown): ProtocolError {
  return new ProtocolError(
    'bad_message',
    `${type}.${field}: expected ${expected}, got ${describeValue(value)}`,
    {
      field,
    },
  );
}

function isObject(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function need<T>(m: Fields, field: string, check: (v: unknown) => boolean, expected: string): T {
  const v = m[field];
  if (!check(v)) throw bad(String(m.type), field, expected, v);
  return v as T;
}

function optional<T>(
  m: Fields,
  field: string,
  check: (v: unknown) => boolean,
  expected: string,
): T | undefined {
  return m[field] === undefined ? undefined : need<T>(m, field, check, expected);
}

/**
 * Refuses a name or id over `max` bytes of UTF-8 (MAX_NAME_BYTES). Its length in characters is counted
 * first: a string longer in characters is longer in bytes, and is not encoded to find out.
 */
function checkName(type: string, field: string, value: unknown, max = MAX_NAME_BYTES, what = 'a name'): void {
  if (typeof value !== 'string') return;
  if (value.length <= max / 3) return; // at most 3 bytes of UTF-8 per UTF-16 unit
  const size = value.length > max ? value.length : Buffer.byteLength(value, 'utf8');
  if (size > max)
    throw new ProtocolError(
      'bad_message',
      `${type === field ? type : `${type}.${field}`}: expected ${what} of at most ${max} bytes of UTF-8, got ${value.length > max ? `${value.length} characters` : `${size} bytes`} (${describeValue(value)})`,
      { field },
    );
}

/** The names a declaration carries (actors' ids; streams' names, actors and fields' names), bounded. */
function checkDeclaredNames(type: 'actors' | 'streams', list: unknown[]): void {
  list.forEach((item, i) => {
    if (!isObject(item)) return; // the model names what is wrong with it
    if (type === 'actors') return checkName(type, `actors[${i}].id`, item.id);
    checkName(type, `streams[${i}].name`, item.name);
    checkName(type, `streams[${i}].actor`, item.actor);
    if (Array.isArray(item.fields))
      item.fields.forEach((f: unknown, k) => {
        if (isObject(f)) checkName(type, `streams[${i}].fields[${k}].name`, f.name);
      });
  });
}

const isString = (v: unknown): boolean => typeof v === 'string';
const isNonEmpty = (v: unknown): boolean => typeof v === 'string' && v !== '';
const isInteger = (v: unknown): boolean => Number.isSafeInteger(v);
const isSeq = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 1;
const isArray = (v: unknown): boolean => Array.isArray(v);

/** The sequence number and type of a header, as far as they can be read, for naming it in an error. */
export function messageRef(header: unknown): { type?: string; seq?: number } {
  if (!isObject(header)) return {};
  const ref: { type?: string; seq?: number } = {};
  if (typeof header.type === 'string') ref.type = header.type.slice(0, 40);
  if (Number.isSafeInteger(header.seq)) ref.seq = header.seq as number;
  return ref;
}

/**
 * Checks a decoded header (and its body) and returns the typed message. Throws a ProtocolError that
 * names the message type and field.
 */
export function parseClientMessage(header: unknown, body: Uint8Array | null): ClientMessage {
  if (!isObject(header))
    throw new ProtocolError('bad_message', `message: expected a JSON object, got ${describeValue(header)}`);
  const type = header.type;
  if (typeof type !== 'string') throw bad('message', 'type', 'a message type', type);
  const m = header;
  if (SEQUENCED_TYPES.has(type)) need(m, 'seq', isSeq, 'an integer sequence number >= 1');
  const needsBody = type === 'capture' || type === 'attach' || type === 'columns' || type === 'frame';
  if (body !== null && body.byteLength > 0 && !needsBody)
    throw new ProtocolError(
      'bad_message',
      `${type}: carries ${body.byteLength} bytes of body but takes none`,
    );
  switch (type) {
    case 'hello': {
      const simulator = need<Fields>(m, 'simulator', isObject, 'an object {name, version?}');
      if (!isNonEmpty(simulator.name))
        throw bad('hello', 'simulator.name', 'a non-empty string', simulator.name);
      checkName('hello', 'simulator.name', simulator.name);
      checkName('hello', 'simulator.version', simulator.version);
      if (simulator.version !== undefined && !isString(simulator.version))
        throw bad('hello', 'simulator.version', 'a string', simulator.version);
      const hello: HelloMessage = {
        type,
        protocol: need(m, 'protocol', isInteger, 'the protocol version, an integer'),
        simulator:
          simulator.version === undefined
            ? { name: simulator.name as string }
            : { name: simulator.name as string, version: simulator.version as string },
      };
      const token = optional<string>(m, 'token', isString, 'a string');
      if (token !== undefined) hello.token = token;
      const resume = optional<Fields>(m, 'resume', isObject, 'an object {session, pending}');
      if (resume !== undefined) {
        if (!isNonEmpty(resume.session)) throw bad('hello', 'resume.session', 'a session id', resume.session);
        const pending = resume.pending ?? [];
        if (!Array.isArray(pending) || pending.length > 100_000 || !pending.every(isSeq))
          throw bad('hello', 'resume.pending', 'an array of sequence numbers', pending);
        hello.resume = { session: resume.session as string, pending: pending as number[] };
      }
      return hello;
    }
    case 'begin':
      return {
        type,
        seq: m.seq as number,
        ...definedOnly({
          description: optional<string>(m, 'description', isString, 'a string'),
          metadata: optional<JsonObject>(m, 'metadata', isObject, 'a JSON object'),
          begin: optional<number>(m, 'begin', isInteger, 'integer microseconds since the Unix epoch'),
        }),
      };
    case 'join':
      return { type, seq: m.seq as number, run: need(m, 'run', isSeq, 'a run id') };
    case 'actors': {
      const actors = need<ActorDecl[]>(m, 'actors', isArray, 'an array of actors');
      checkDeclaredNames(type, actors);
      return { type, seq: m.seq as number, actors };
    }
    case 'streams': {
      const streams = need<StreamDecl[]>(m, 'streams', isArray, 'an array of streams');
      checkDeclaredNames(type, streams);
      return { type, seq: m.seq as number, streams };
    }
    case 'sensors': {
      const sensors = need<unknown[]>(m, 'sensors', isArray, 'an array of sensors');
      return { type, seq: m.seq as number, sensors: sensors.map((s, i) => parseSensor(s, `sensors[${i}]`)) };
    }
    case 'samples': {
      const samples = need<Fields>(m, 'samples', isObject, 'an object of stream id -> array of samples');
      for (const [stream, list] of Object.entries(samples)) {
        checkName(type, 'samples', stream, MAX_STREAM_ID_BYTES, 'stream ids');
        if (!Array.isArray(list)) throw bad(type, `samples.${clipText(stream)}`, 'an array of samples', list);
      }
      return { type, seq: m.seq as number, samples: samples as Record<string, Sample[]> };
    }
    case 'columns':
    case 'frame':
      if (body === null || body.byteLength === 0)
        throw new ProtocolError('bad_message', `${type}: expected a body of binary batches, got none`, {
          field: 'body',
        });
      return { type, seq: m.seq as number, body };
    case 'capture':
      checkName(type, 'sensor', m.sensor);
      checkName(type, 'name', m.name);
      return {
        type,
        seq: m.seq as number,
        sensor: need(m, 'sensor', isNonEmpty, 'a declared sensor id'),
        t: need(m, 't', isInteger, 'integer microseconds'),
        step: need(m, 'step', isInteger, 'an integer step'),
        ...definedOnly({ name: optional<string>(m, 'name', isNonEmpty, 'an attachment name') }),
        ...blobFields(m, body),
      };
    case 'attach':
      checkName(type, 'name', m.name);
      return {
        type,
        seq: m.seq as number,
        name: need(m, 'name', isNonEmpty, 'an attachment name'),
        ...definedOnly({ t: optional<number>(m, 't', isInteger, 'integer microseconds') }),
        ...blobFields(m, body),
      };
    case 'leave':
    case 'appear':
      checkName(type, 'actor', m.actor);
      return {
        type,
        seq: m.seq as number,
        actor: need(m, 'actor', isNonEmpty, 'a declared actor id'),
        t: need(m, 't', isInteger, 'integer microseconds'),
      };
    case 'end':
      return {
        type,
        seq: m.seq as number,
        reason: need(
          m,
          'reason',
          (v) => typeof v === 'string' && /^[a-z][a-z0-9_]*$/.test(v),
          'an end reason like user_request',
        ),
      };
    case 'ping':
    case 'pong':
      return { type };
    default:
      throw new ProtocolError('bad_message', `message.type: unknown message type ${describeValue(type)}`, {
        field: 'type',
      });
  }
}

/** What captures and attachments share: the media type, free metadata and the body's bytes. */
function blobFields(
  m: Fields,
  body: Uint8Array | null,
): { mediaType: string; metadata?: JsonObject; data: Uint8Array } {
  return {
    mediaType: need(m, 'mediaType', isNonEmpty, 'a media type like image/png'),
    ...definedOnly({ metadata: optional<JsonObject>(m, 'metadata', isObject, 'a JSON object') }),
    data: body ?? new Uint8Array(0),
  };
}

function parseSensor(value: unknown, where: string): SensorDecl {
  if (!isObject(value)) throw bad('sensors', where, 'an object {id, modality, ...}', value);
  const field = (name: string): string => `${where}.${name}`;
  checkName('sensors', field('id'), value.id);
  checkName('sensors', field('actor'), value.actor);
  if (!isNonEmpty(value.id)) throw bad('sensors', field('id'), 'a sensor id', value.id);
  if (!isNonEmpty(value.modality))
    throw bad('sensors', field('modality'), 'a modality like camera', value.modality);
  const sensor: SensorDecl = { id: value.id as string, modality: value.modality as string };
  if (value.actor !== undefined) {
    if (!isNonEmpty(value.actor)) throw bad('sensors', field('actor'), 'an actor id', value.actor);
    sensor.actor = value.actor as string;
  }
  for (const dim of ['width', 'height'] as const) {
    const v = value[dim];
    if (v === undefined) continue;
    if (!(Number.isInteger(v) && (v as number) > 0))
      throw bad('sensors', field(dim), 'a positive integer', v);
    sensor[dim] = v as number;
  }
  for (const name of ['fov', 'captureInterval'] as const) {
    const v = value[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad('sensors', field(name), 'a finite number', v);
    sensor[name] = v;
  }
  if (value.mount !== undefined) {
    const mount = value.mount as Fields;
    const finite = (a: unknown, n: number): boolean =>
      Array.isArray(a) && a.length === n && a.every((x) => typeof x === 'number' && Number.isFinite(x));
    if (!isObject(mount) || !finite(mount.position, 3) || !finite(mount.rotation, 4))
      throw bad('sensors', field('mount'), '{position: [x, y, z], rotation: [x, y, z, w]}', mount);
    sensor.mount = mount as unknown as NonNullable<SensorDecl['mount']>;
  }
  if (value.attributes !== undefined) {
    if (!isObject(value.attributes))
      throw bad('sensors', field('attributes'), 'a JSON object', value.attributes);
    sensor.attributes = value.attributes as JsonObject;
  }
  return sensor;
}

/** Drops undefined properties, so that parsed messages compare equal to what was sent. */
function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
