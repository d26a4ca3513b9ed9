import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { invalid } from '../../model/errors.js';
import { FRAME_START_SIZE, MAGIC, PACKET, packetName } from './carla-layout.js';

/**
 * Reading and writing CARLA's recorder bytes: a file read a window at a time (recordings of an hour
 * are hundreds of megabytes; CARLA's own issue tracker has crashes near 2 GiB), and a little-endian
 * writer. Errors name the file and the byte offset.
 */

/** A malformed recording: the file and the offset are in the message. */
export const malformed = (file: string, offset: number, message: string): Error =>
  invalid(`${file}: at byte ${offset}: ${message}`);

/** A read cursor over a Buffer holding (part of) the file, with the file offset of its byte 0. */
export class Bytes {
  readonly buf: Buffer;
  pos: number;
  readonly end: number;
  /** File offset of buf[0]. */
  readonly base: number;
  private readonly file: string;
  private readonly what: string;

  constructor(buf: Buffer, file: string, base: number, what: string, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
    this.base = base;
    this.file = file;
    this.what = what;
  }

  /** File offset of the cursor. */
  get offset(): number {
    return this.base + this.pos;
  }
  get left(): number {
    return this.end - this.pos;
  }

  need(n: number, field: string): void {
    if (this.pos + n > this.end)
      throw malformed(
        this.file,
        this.offset,
        `${this.what}: ${field} needs ${n} bytes, ${this.left} left in the packet`,
      );
  }
  u8(field: string): number {
    this.need(1, field);
    return this.buf[this.pos++]!;
  }
  i8(field: string): number {
    this.need(1, field);
    return this.buf.readInt8(this.pos++);
  }
  u16(field: string): number {
    this.need(2, field);
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(field: string): number {
    this.need(4, field);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  i32(field: string): number {
    this.need(4, field);
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  /** u64/i64 within 2^53 (frame ids, std::time_t): a value beyond is refused rather than rounded. */
  u64(field: string): number {
    this.need(8, field);
    const v = this.buf.readBigUInt64LE(this.pos);
    if (v > BigInt(Number.MAX_SAFE_INTEGER))
      throw malformed(this.file, this.offset, `${this.what}: ${field} is ${v}, beyond 2^53`);
    this.pos += 8;
    return Number(v);
  }
  i64(field: string): number {
    this.need(8, field);
    const v = this.buf.readBigInt64LE(this.pos);
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER))
      throw malformed(this.file, this.offset, `${this.what}: ${field} is ${v}, beyond 2^53`);
    this.pos += 8;
    return Number(v);
  }
  f32(field: string): number {
    this.need(4, field);
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }
  f64(field: string): number {
    this.need(8, field);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  /** C++ bool: one byte. CARLA writes 0 or 1; any other byte reads true (and is kept as raw bytes). */
  bool(field: string): boolean {
    return this.u8(field) !== 0;
  }
  /** FString: u16 length, then UTF-8 (CarlaRecorderHelpers ReadFString). */
  fstring(field: string): string {
    const n = this.u16(`${field} length`);
    this.need(n, field);
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  bytes(n: number, field: string): Buffer {
    this.need(n, field);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
}

/** A little-endian byte writer that grows as needed. */
export class ByteWriter {
  private buf: Buffer;
  length = 0;

  constructor(capacity = 1 << 16) {
    this.buf = Buffer.allocUnsafe(capacity);
  }
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number): void {
    this.room(1);
    this.buf[this.length++] = v & 0xff;
  }
  i8(v: number): void {
    this.room(1);
    this.buf.writeInt8(v, this.length++);
  }
  u16(v: number): void {
    this.room(2);
    this.buf.writeUInt16LE(v, this.length);
    this.length += 2;
  }
  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v >>> 0, this.length);
    this.length += 4;
  }
  /** Patches a u32 written before (a packet's size, known once its records are written). */
  u32At(at: number, v: number): void {
    this.buf.writeUInt32LE(v >>> 0, at);
  }
  i32(v: number): void {
    this.room(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  u64(v: number): void {
    this.room(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  i64(v: number): void {
    this.room(8);
    this.buf.writeBigInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  f32(v: number): void {
    this.room(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  /** An FVector's three floats. */
  f32x3(v: readonly [number, number, number]): void {
    this.f32(v[0]);
    this.f32(v[1]);
    this.f32(v[2]);
  }
  f64(v: number): void {
    this.room(8);
    this.buf.writeDoubleLE(v, this.length);
    this.length += 8;
  }
  bool(v: boolean): void {
    this.u8(v ? 1 : 0);
  }
  /** FString as CARLA writes it: u16 UTF-8 length, the bytes. */
  fstring(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.u16(n);
    this.room(n);
    this.buf.write(s, this.length, 'utf8');
    this.length += n;
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  /** What was written (a view; valid until the next write). */
  view(): Buffer {
    return this.buf.subarray(0, this.length);
  }
  /** Whether what was written is the bytes [from, to) of `other` (compared in place, nothing copied). */
  equals(other: Buffer, from: number, to: number): boolean {
    if (this.length !== to - from) return false;
    // A record is a few dozen bytes: a loop costs less than Buffer.compare's checks of its offsets.
    const buf = this.buf;
    for (let i = 0; i < this.length; i++) if (buf[i] !== other[from + i]) return false;
    return true;
  }
  reset(): void {
    this.length = 0;
  }
}

/** The recording's header (CarlaRecorderInfo). */
export interface CarlaHeader {
  version: number;
  magic: string;
  /** Seconds since the Unix epoch (std::time_t). */
  date: number;
  map: string;
}

export function writeHeader(out: ByteWriter, h: CarlaHeader): void {
  out.u16(h.version);
  out.fstring(h.magic);
  out.i64(h.date);
  out.fstring(h.map);
}

/** One packet as read: its id, where it starts (its id byte), and its body. */
export interface RawPacket {
  id: number;
  offset: number;
  body: Bytes;
}

/** The most of a file read at once: packets are small; a window holds many frames. */
const WINDOW = 4 << 20;

/**
 * A recording read packet by packet. The header is read on open (and refused if it is not CARLA's);
 * `packets()` walks the rest, refusing a packet cut short by the end of the file. Each packet's body
 * is valid until the next is read.
 */
export class CarlaFile {
  readonly file: string;
  readonly size: number;
  readonly header: CarlaHeader;
  /** Offset of the first packet. */
  readonly start: number;
  private readonly fd: number;
  private window = Buffer.allocUnsafe(0);
  private windowStart = 0;
  private windowLength = 0;

  private constructor(file: string, fd: number) {
    this.file = file;
    this.fd = fd;
    this.size = fstatSync(fd).size;
    const head = new Bytes(this.read(0, Math.min(this.size, 1 << 16)), file, 0, 'the header');
    const version = head.u16('version');
    const magic = head.fstring('magic');
    if (magic !== MAGIC)
      throw malformed(
        file,
        2,
        `not a CARLA recording: expected the magic string ${JSON.stringify(MAGIC)}, got ${JSON.stringify(magic.slice(0, 40))}`,
      );
    const date = head.i64('date');
    const map = head.fstring('map name');
    this.header = { version, magic, date, map };
    this.start = head.pos;
  }

  static open(file: string): CarlaFile {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw invalid(
        `${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a folder, expected a CARLA recording (.log)' : `cannot be read (${code ?? String(error)})`}`,
      );
    }
    try {
      return new CarlaFile(file, fd);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Bytes [offset, offset + n) of the file (a view of the window, valid until the next read). */
  private read(offset: number, n: number): Buffer {
    if (offset >= this.windowStart && offset + n <= this.windowStart + this.windowLength)
      return this.window.subarray(offset - this.windowStart, offset - this.windowStart + n);
    const length = Math.min(Math.max(n, WINDOW), this.size - offset);
    if (this.window.length < length) this.window = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const r = readSync(this.fd, this.window, got, length - got, offset + got);
      if (r === 0) break;
      got += r;
    }
    this.windowStart = offset;
    this.windowLength = got;
    return this.window.subarray(0, Math.min(n, got));
  }

  *packets(): Generator<RawPacket> {
    let offset = this.start;
    while (offset < this.size) {
      if (this.size - offset < 5)
        throw malformed(
          this.file,
          offset,
          `the file ends inside a packet header (${this.size - offset} of its 5 bytes; the recording was cut)`,
        );
      const head = this.read(offset, 5);
      const id = head[0]!;
      const size = head.readUInt32LE(1);
      if (offset + 5 + size > this.size)
        throw malformed(
          this.file,
          offset,
          `${packetName(id)} (id ${id}) declares ${size} bytes, but the file has ${this.size - offset - 5} left: the packet is longer than the file (cut, or not a size)`,
        );
      const body = this.read(offset + 5, size);
      yield { id, offset, body: new Bytes(body, this.file, offset + 5, `${packetName(id)} (id ${id})`) };
      offset += 5 + size;
    }
  }
}

/** FrameStart's record. */
export interface FrameStart {
  id: number;
  durationThis: number;
  elapsed: number;
}

export function readFrameStart(p: RawPacket, file: string): FrameStart {
  if (p.body.left !== FRAME_START_SIZE)
    throw malformed(file, p.offset, `FrameStart has ${p.body.left} bytes, expected ${FRAME_START_SIZE}`);
  return {
    id: p.body.u64('frame id'),
    durationThis: p.body.f64('durationThis'),
    elapsed: p.body.f64('elapsed'),
  };
}

export function writeFrameStart(out: ByteWriter, f: FrameStart): void {
  out.u8(PACKET.FrameStart);
  out.u32(FRAME_START_SIZE);
  out.u64(f.id);
  out.f64(f.durationThis);
  out.f64(f.elapsed);
}

/**
 * A float32 kept in JSON exactly: a number where JSON holds it (finite and not -0), else the string
 * `f32:` and the eight hex digits of its bits (NaN payloads, infinities and -0 come back bit for bit).
 */
export type JsonF32 = number | string;

export function readJsonF32(b: Bytes, field: string): JsonF32 {
  b.need(4, field);
  const v = b.buf.readFloatLE(b.pos);
  const bits = b.buf.readUInt32LE(b.pos);
  b.pos += 4;
  return Number.isFinite(v) && !Object.is(v, -0) ? v : `f32:${bits.toString(16).padStart(8, '0')}`;
}

export function writeJsonF32(out: ByteWriter, v: unknown, where: string): void {
  if (typeof v === 'number') out.f32(v);
  else if (typeof v === 'string' && /^f32:[0-9a-f]{8}$/.test(v)) out.u32(parseInt(v.slice(4), 16));
  else
    throw invalid(
      `${where}: expected a float32 (a number, or "f32:" and the 8 hex digits of its bits), got ${JSON.stringify(v)}`,
    );
}
