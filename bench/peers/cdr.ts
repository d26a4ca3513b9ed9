/**
 * Just enough little-endian CDR (XCDR1, as ROS 2 messages travel in MCAP files) for the benchmark's
 * messages: alignment is relative to the byte after the 4-byte encapsulation header.
 */

const HEADER = 4;

export class CdrWriter {
  private buffer: Buffer;
  private view: DataView;
  private offset = HEADER;
  constructor(capacity = 256) {
    this.buffer = Buffer.alloc(capacity);
    this.view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.byteLength);
  }

  reset(): this {
    this.buffer.writeUInt32BE(0x00010000, 0); // CDR_LE, no options
    this.offset = HEADER;
    return this;
  }

  float64(v: number): this {
    this.align(8, 8);
    this.view.setFloat64(this.offset, v, true);
    this.offset += 8;
    return this;
  }

  int32(v: number): this {
    this.align(4, 4);
    this.view.setInt32(this.offset, v, true);
    this.offset += 4;
    return this;
  }

  uint32(v: number): this {
    this.align(4, 4);
    this.view.setUint32(this.offset, v, true);
    this.offset += 4;
    return this;
  }

  /** A CDR string: its byte length with the terminating NUL, the bytes, the NUL. */
  string(s: string): this {
    const length = Buffer.byteLength(s);
    this.uint32(length + 1);
    this.ensure(length + 1);
    this.buffer.write(s, this.offset, 'utf8');
    this.buffer[this.offset + length] = 0;
    this.offset += length + 1;
    return this;
  }

  /** A copy of the bytes written since reset(). */
  bytes(): Uint8Array {
    return Uint8Array.prototype.slice.call(this.buffer, 0, this.offset);
  }

  private align(size: number, then: number): void {
    const pad = (size - ((this.offset - HEADER) % size)) % size;
    this.ensure(pad + then);
    this.buffer.fill(0, this.offset, this.offset + pad);
    this.offset += pad;
  }

  private ensure(bytes: number): void {
    if (this.offset + bytes <= this.buffer.length) return;
    const grown = Buffer.alloc(Math.max(this.buffer.length * 2, this.offset + bytes));
    this.buffer.copy(grown, 0, 0, this.offset);
    this.buffer = grown;
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
  }
}

export class CdrReader {
  private readonly view: DataView;
  private readonly data: Uint8Array;
  private offset = HEADER;
  constructor(data: Uint8Array) {
    this.data = data;
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }

  float64(): number {
    this.align(8);
    const v = this.view.getFloat64(this.offset, true);
    this.offset += 8;
    return v;
  }

  int32(): number {
    this.align(4);
    const v = this.view.getInt32(this.offset, true);
    this.offset += 4;
    return v;
  }

  uint32(): number {
    this.align(4);
    const v = this.view.getUint32(this.offset, true);
    this.offset += 4;
    return v;
  }

  string(): string {
    const length = this.uint32();
    const s = Buffer.from(this.data.buffer, this.data.byteOffset + this.offset, length - 1).toString('utf8');
    this.offset += length;
    return s;
  }

  /** Steps over the rest of an ActorState after its id: 6 float64, an int32, a string. */
  skipState(): void {
    this.align(8);
    this.offset += 6 * 8 + 4;
    const length = this.uint32();
    this.offset += length;
  }

  private align(size: number): void {
    this.offset += (size - ((this.offset - HEADER) % size)) % size;
  }
}
