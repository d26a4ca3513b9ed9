import { open, type FileHandle } from 'node:fs/promises';
import type { IReadable, IWritable } from '@mcap/core';

/** @mcap/core writes through an IWritable; this is one over a file (what @mcap/nodejs has, without it). */
export class FileWritable implements IWritable {
  private offset = 0n;
  private readonly handle: FileHandle;
  private constructor(handle: FileHandle) {
    this.handle = handle;
  }

  static async create(path: string): Promise<FileWritable> {
    return new FileWritable(await open(path, 'wx'));
  }
  async write(buffer: Uint8Array): Promise<void> {
    let written = 0;
    while (written < buffer.byteLength)
      written += (await this.handle.write(buffer, written, buffer.byteLength - written)).bytesWritten;
    this.offset += BigInt(buffer.byteLength);
  }
  position(): bigint {
    return this.offset;
  }
  /** Flushes to the disk and closes: an export is durable when it has taken its name. */
  async close(): Promise<void> {
    await this.handle.sync();
    await this.handle.close();
  }
  async abandon(): Promise<void> {
    await this.handle.close().catch(() => {}); // abandoned after a failure, which is the one to report
  }
}

/** @mcap/core's indexed reader reads ranges through an IReadable. */
export class FileReadable implements IReadable {
  private readonly handle: FileHandle;
  private readonly bytes: bigint;
  /**
   * Where the last read began: @mcap/core reads a chunk and decompresses it with no read between, so
   * a decompression handler knows by it which chunk's data it was given (read-mcap.ts, boundedChunks).
   */
  lastReadOffset = -1n;
  private constructor(handle: FileHandle, bytes: bigint) {
    this.handle = handle;
    this.bytes = bytes;
  }

  static async open(path: string): Promise<FileReadable> {
    const handle = await open(path, 'r');
    return new FileReadable(handle, BigInt((await handle.stat()).size));
  }
  async size(): Promise<bigint> {
    return this.bytes;
  }
  get byteLength(): bigint {
    return this.bytes;
  }
  async read(offset: bigint, size: bigint): Promise<Uint8Array> {
    this.lastReadOffset = offset;
    if (offset + size > this.bytes)
      throw new Error(
        `read of ${size} bytes at ${offset} runs past the end of the file (${this.bytes} bytes)`,
      );
    const buffer = new Uint8Array(Number(size));
    let done = 0;
    while (done < buffer.byteLength) {
      const { bytesRead } = await this.handle.read(
        buffer,
        done,
        buffer.byteLength - done,
        Number(offset) + done,
      );
      if (bytesRead === 0) throw new Error(`the file ended at ${Number(offset) + done} bytes`);
      done += bytesRead;
    }
    return buffer;
  }
  async close(): Promise<void> {
    await this.handle.close();
  }
}
