/**
 * Growable byte writer and bounds-checked reader for the chunk format: unsigned LEB128 varints (up to
 * 2^53, the integers a JavaScript number holds exactly), zig-zag for signed ones, little-endian floats.
 * The writer's fixed-width little-endian integers also write the ingest protocol's binary batches.
 */
export class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  private pos = 0;

  constructor(capacity = 256) {
    this.buf = new Uint8Array(Math.max(16, capacity));
    this.view = new DataView(this.buf.buffer);
  }

  get length(): number {
    return this.pos;
  }

  /** Empties it for reuse, keeping its buffer. */
  reset(): void {
    this.pos = 0;
  }

  private ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.pos + extra));
    bigger.set(this.buf.subarray(0, this.pos));
    this.buf = bigger;
    this.view = new DataView(bigger.buffer);
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  /** A non-negative integer up to 2^53. */
  varint(v: number): void {
    this.ensure(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }

  /** A signed integer within +-2^52. */
  zigzag(v: number): void {
    this.varint(v >= 0 ? 2 * v : -2 * v - 1);
  }

  u16(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.pos, v, true);
    this.pos += 2;
  }

  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v, true);
    this.pos += 4;
  }

  i32(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v, true);
    this.pos += 4;
  }

  /** An integer within +-2^53, as a two's-complement i64. */
  i64(v: number): void {
    this.ensure(8);
    this.view.setBigInt64(this.pos, BigInt(v), true);
    this.pos += 8;
  }

  f32(v: number): void {
    this.ensure(4);
    this.view.setFloat32(this.pos, v, true);
    this.pos += 4;
  }

  f64(v: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, v, true);
    this.pos += 8;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.varint(b.length);
    this.bytes(b);
  }

  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

/**
 * One decoder for the strings stored in chunks. A Buffer made around each string's bytes to call
 * toString() on (a dictionary's strings, one or two a block) took several times as long a string, and
 * made the dictionary decoder that inlined it slow for V8 to optimise, while a fresh process's first
 * reads ran without it.
 */
const utf8 = new TextDecoder('utf-8', {
  // Kept as a character like any other, as Buffer's toString kept it: a string may begin with U+FEFF.
  ignoreBOM: true,
});

/** UTF-8 bytes as a string (malformed sequences as U+FFFD). */
export const decodeUtf8 = (bytes: Uint8Array): string => utf8.decode(bytes);

export class ByteReader {
  private readonly buf: Uint8Array;
  offset = 0;

  constructor(buf: Uint8Array) {
    this.buf = buf;
  }

  get done(): boolean {
    return this.offset >= this.buf.length;
  }

  u8(): number {
    if (this.offset >= this.buf.length) throw new Error('record cut short');
    return this.buf[this.offset++]!;
  }

  /**
   * Bytes read in place, not through u8(): a fresh process parses the frames of a first scene's chunks
   * in V8's interpreter, where a call per byte (and a DataView per u32) made reading their block tables
   * take twice as long or more.
   */
  varint(): number {
    const buf = this.buf;
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.offset >= buf.length) throw new Error('record cut short');
      const b = buf[this.offset++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 0x80;
    }
    throw new Error('varint longer than 8 bytes');
  }

  /** A little-endian unsigned 32-bit integer. */
  u32(): number {
    const buf = this.buf;
    const at = this.offset;
    if (at + 4 > buf.length) throw new Error('record cut short');
    this.offset = at + 4;
    return (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24)) >>> 0;
  }

  zigzag(): number {
    const z = this.varint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  f64(): number {
    const bytes = this.take(8);
    return new DataView(bytes.buffer, bytes.byteOffset, 8).getFloat64(0, true);
  }

  take(length: number): Uint8Array {
    if (length < 0 || this.offset + length > this.buf.length)
      throw new Error(`field of ${length} bytes runs past the end (${this.buf.length - this.offset} left)`);
    const out = this.buf.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  string(): string {
    return decodeUtf8(this.take(this.varint()));
  }
}
