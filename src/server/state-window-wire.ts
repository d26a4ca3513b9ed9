/**
 * A window of every actor's poses as binary columns: what `GET /api/runs/:id/states?format=columns`
 * answers and the viewer plays from. JSON spent about 90 bytes a sample and the browser's parse of a
 * window was longer than the server's read of it; these are 32 bytes a sample, read by the page as
 * views over the bytes it received (no parse, no copy). The layout (little-endian, docs/viewer.md):
 *
 *   "SRSW"  u32 version (1)  u32 header length H  header (UTF-8 JSON, H bytes)  zero padding to 8
 *   t:      Float64Array(rows)   microseconds since the epoch
 *   x, y:   Float64Array(rows)   metres
 *   yaw:    Float32Array(rows)   radians
 *   speed:  Float32Array(rows)   m/s
 *
 * The header is `{ from, to, actors: [[id, rows], ...] }`: the actors' rows follow one another in
 * that order in every column, each actor's in time order. A value a sample lacks is NaN. Used by the
 * server (encode) and the viewer (decode), so the two cannot disagree; it runs in both, as do the
 * rules below of how a run is cut into windows: the server can answer the window holding a moment
 * before the page knows the run.
 */
import { usualSampleInterval } from '../model/presence.js';
import type { ActorInfo } from '../model/run.js';
import type { StreamInfo } from '../model/stream.js';

const MAGIC = 'SRSW';
export const STATE_WINDOW_VERSION = 1;
export const STATE_WINDOW_MEDIA_TYPE = 'application/vnd.simrec.state-window';
/**
 * Where the window begins in a live channel's frame: after the request's number (a u32) and four zero
 * bytes, so that its columns stay 8-aligned in the frame's buffer.
 */
export const WINDOW_FRAME_OFFSET = 8;

/**
 * One actor's poses in a window, row for row with `t`. The server reads yaw and speed as 64-bit numbers
 * (and answers JSON with them); the layout carries them as 32-bit, which is what a decoded window has.
 */
export interface StateWindowColumns {
  t: Float64Array;
  x: Float64Array;
  y: Float64Array;
  yaw: Float32Array | Float64Array;
  speed: Float32Array | Float64Array;
}

export interface BinaryStateWindow {
  from: number;
  to: number;
  actors: Map<string, StateWindowColumns>;
  /** Samples over every actor. */
  rows: number;
}

const align8 = (n: number): number => Math.ceil(n / 8) * 8;

/** What a window's header says: its bounds, and each actor's number of rows, in the order they follow. */
export interface StateWindowHeader {
  from: number;
  to: number;
  actors: [string, number][];
}

/**
 * A window's bytes, its columns written in place: `fill(k, columns)` writes actor k's rows into
 * `columns`, views of the bytes over that actor's rows. The server fills them straight from the
 * store's batches, without columns of its own in between.
 */
export function encodeStateWindow(
  header: StateWindowHeader,
  fill: (actor: number, columns: StateWindowColumns) => void,
): Uint8Array {
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const rows = header.actors.reduce((sum, [, n]) => sum + n, 0);
  const start = align8(12 + headerBytes.length);
  const bytes = new Uint8Array(start + rows * 32);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < 4; i++) bytes[i] = MAGIC.charCodeAt(i);
  view.setUint32(4, STATE_WINDOW_VERSION, true);
  view.setUint32(8, headerBytes.length, true);
  bytes.set(headerBytes, 12);
  const all = columnsOver(bytes.buffer, start, rows);
  let row = 0;
  header.actors.forEach(([, n], k) => {
    fill(k, rowsOf(all, row, n));
    row += n;
  });
  return bytes;
}

/** Rows [row, row + n) of every column, as views. */
function rowsOf(all: StateWindowColumns, row: number, n: number): StateWindowColumns {
  return {
    t: all.t.subarray(row, row + n),
    x: all.x.subarray(row, row + n),
    y: all.y.subarray(row, row + n),
    yaw: all.yaw.subarray(row, row + n),
    speed: all.speed.subarray(row, row + n),
  };
}

/** The columns of `rows` samples laid out from `start` of `buffer`. */
function columnsOver(buffer: ArrayBufferLike, start: number, rows: number): StateWindowColumns {
  return {
    t: new Float64Array(buffer, start, rows),
    x: new Float64Array(buffer, start + rows * 8, rows),
    y: new Float64Array(buffer, start + rows * 16, rows),
    yaw: new Float32Array(buffer, start + rows * 24, rows),
    speed: new Float32Array(buffer, start + rows * 28, rows),
  };
}

/**
 * A window from its bytes, from `offset` of `buffer` on (a multiple of 8: 0 for a fetched answer, 8 in
 * a live channel's frame): each actor's columns are views over `buffer`. Bytes that are not such a
 * window are refused with what was found and what was expected.
 */
export function decodeStateWindow(buffer: ArrayBuffer, offset = 0): BinaryStateWindow {
  const bytes = new Uint8Array(buffer, offset);
  const magic = String.fromCharCode(...bytes.subarray(0, 4));
  if (bytes.length < 12 || magic !== MAGIC)
    throw new Error(`state window: expected bytes starting "${MAGIC}", got ${JSON.stringify(magic)}`);
  const view = new DataView(buffer, offset);
  const version = view.getUint32(4, true);
  if (version !== STATE_WINDOW_VERSION)
    throw new Error(`state window: version ${version}; this viewer reads version ${STATE_WINDOW_VERSION}`);
  const headerLength = view.getUint32(8, true);
  const header = JSON.parse(
    new TextDecoder().decode(bytes.subarray(12, 12 + headerLength)),
  ) as StateWindowHeader;
  const rows = header.actors.reduce((sum, [, n]) => sum + n, 0);
  const start = align8(12 + headerLength);
  if (bytes.length !== start + rows * 32)
    throw new Error(`state window: ${bytes.length} bytes for ${rows} samples; expected ${start + rows * 32}`);
  const all = columnsOver(buffer, offset + start, rows);
  const actors = new Map<string, StateWindowColumns>();
  let row = 0;
  for (const [id, n] of header.actors) {
    actors.set(id, rowsOf(all, row, n));
    row += n;
  }
  return { from: header.from, to: header.to, actors, rows };
}

/** The longest window: a run whose actors sample slowly is fetched a minute at a time. */
const WINDOW_MICROS = 60_000_000;
/**
 * Samples a window holds at most, about 1 MB of binary columns: the window holding a moment is the
 * first answer a page or a seek waits for, and its time grows with its samples (the server reads and
 * the browser receives them). Ten seconds of 300 actors at 10 Hz, a second of 300 at 100 Hz; never
 * shorter than a second nor than twice the slowest stream's usual interval (an actor's last sample
 * must be in the window before).
 */
const WINDOW_SAMPLES = 30_000;
const MIN_WINDOW_MICROS = 1_000_000;

/**
 * How a run is cut into windows: from its first sample (`begin`, the viewer's timeline's start), each
 * `micros` long, shorter when its actors sample fast, from the usual intervals of their state streams.
 */
export interface WindowGrid {
  begin: number;
  micros: number;
}

export function windowGrid(actors: readonly ActorInfo[], streams: readonly StreamInfo[]): WindowGrid {
  let begin = Number.POSITIVE_INFINITY;
  for (const s of streams) if (s.begin !== null && s.begin < begin) begin = s.begin;
  const presence = new Map(actors.map((a) => [a.id, a.presence]));
  let samplesPerMicro = 0;
  let slowest = 0;
  for (const s of streams) {
    if (s.name !== 'state' || s.actor === null || !presence.has(s.actor)) continue;
    const interval = usualSampleInterval(s, presence.get(s.actor));
    if (interval === null) continue;
    samplesPerMicro += 1 / interval;
    slowest = Math.max(slowest, interval);
  }
  const length =
    samplesPerMicro === 0
      ? WINDOW_MICROS
      : Math.min(WINDOW_MICROS, Math.max(MIN_WINDOW_MICROS, WINDOW_SAMPLES / samplesPerMicro));
  return {
    begin: Number.isFinite(begin) ? begin : 0,
    micros: Math.ceil(Math.max(length, Math.min(WINDOW_MICROS, 2 * slowest))),
  };
}

/** The index of the window holding t (0 before the first sample). */
export const windowIndex = (grid: WindowGrid, t: number): number =>
  Math.max(0, Math.floor((t - grid.begin) / grid.micros));

/** Window i's first and last microsecond. */
export function windowSpan(grid: WindowGrid, i: number): { from: number; to: number } {
  const from = grid.begin + i * grid.micros;
  return { from, to: from + grid.micros - 1 };
}
