/**
 * How a message travels. A message is `u32 header length | header (UTF-8 JSON) | body (raw bytes)`;
 * on TCP each message is preceded by its own length as a u32, on WebSocket it is one binary message
 * (or a text message holding the header alone). Lengths are big-endian (network order), so that a
 * client in C, C# or Python writes them with one standard call (`struct.pack('>I', n)`).
 */
import { ProtocolError } from './protocol.js';

export const LENGTH_BYTES = 4;
/** Frames larger than this are refused unless the server is configured otherwise. */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

export interface DecodedMessage {
  header: unknown;
  /** Null when the message has no body. */
  body: Uint8Array | null;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** `u32 header length | header | body`, the payload of a TCP frame or a WebSocket binary message. */
export function encodeMessage(header: object, body?: Uint8Array): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const out = Buffer.allocUnsafe(LENGTH_BYTES + json.length + (body?.byteLength ?? 0));
  out.writeUInt32BE(json.length, 0);
  json.copy(out, LENGTH_BYTES);
  if (body) out.set(body, LENGTH_BYTES + json.length);
  return out;
}

/** A whole TCP frame: the message preceded by its length. */
export function encodeFrame(header: object, body?: Uint8Array): Buffer {
  const message = encodeMessage(header, body);
  const out = Buffer.allocUnsafe(LENGTH_BYTES + message.length);
  out.writeUInt32BE(message.length, 0);
  message.copy(out, LENGTH_BYTES);
  return out;
}

/** A JSON header longer than the server decodes at once is refused unread: it would block it. */
function checkHeaderBytes(length: number, maxHeaderBytes: number): void {
  if (length > maxHeaderBytes)
    throw new ProtocolError(
      'frame_too_large',
      `frame: a JSON header of ${length} bytes exceeds the limit of ${maxHeaderBytes} bytes (maxBatchBytes)`,
      { fatal: true },
    );
}

export function decodeMessage(bytes: Uint8Array, maxHeaderBytes = Infinity): DecodedMessage {
  if (bytes.byteLength < LENGTH_BYTES)
    throw new ProtocolError(
      'bad_frame',
      `frame: ${bytes.byteLength} bytes is shorter than its header length`,
      {
        fatal: true,
      },
    );
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(0);
  if (headerLength > bytes.byteLength - LENGTH_BYTES)
    throw new ProtocolError(
      'bad_frame',
      `frame: header length ${headerLength} exceeds the ${bytes.byteLength - LENGTH_BYTES} bytes that follow it`,
      { fatal: true },
    );
  checkHeaderBytes(headerLength, maxHeaderBytes);
  const headerBytes = bytes.subarray(LENGTH_BYTES, LENGTH_BYTES + headerLength);
  const bodyStart = LENGTH_BYTES + headerLength;
  const body = bodyStart < bytes.byteLength ? bytes.subarray(bodyStart) : null;
  return { header: parseHeader(headerBytes), body };
}

/** A header sent alone, as a WebSocket text message. */
export function decodeHeaderText(bytes: Buffer, maxHeaderBytes = Infinity): DecodedMessage {
  checkHeaderBytes(bytes.length, maxHeaderBytes);
  try {
    return { header: JSON.parse(bytes.toString('utf8')), body: null };
  } catch (error) {
    throw new ProtocolError('bad_frame', `frame: the header is not JSON (${(error as Error).message})`, {
      fatal: true,
    });
  }
}

function parseHeader(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch (error) {
    throw new ProtocolError(
      'bad_frame',
      `frame: the header is not UTF-8 JSON (${(error as Error).message})`,
      {
        fatal: true,
      },
    );
  }
}

/**
 * Cuts a TCP byte stream into messages. A length above the limit is refused as soon as its four
 * bytes arrive, before anything of the frame is buffered, so an oversized frame costs no memory.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private readonly maxFrameBytes: number;

  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.maxFrameBytes = maxFrameBytes;
  }

  /** Bytes of a frame still incomplete; non-zero when a connection ends mid-frame. */
  get pendingBytes(): number {
    return this.buffered;
  }

  /** Feeds bytes; returns the messages they complete. Throws on a frame above the limit. */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: Buffer[] = [];
    for (;;) {
      if (this.buffered < LENGTH_BYTES) break;
      const head = this.peek(LENGTH_BYTES);
      const length = head.readUInt32BE(0);
      if (length > this.maxFrameBytes)
        throw new ProtocolError(
          'frame_too_large',
          `frame: ${length} bytes exceeds the limit of ${this.maxFrameBytes} bytes`,
          { fatal: true },
        );
      if (this.buffered < LENGTH_BYTES + length) break;
      const frame = this.take(LENGTH_BYTES + length);
      messages.push(frame.subarray(LENGTH_BYTES));
    }
    return messages;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    const first = this.chunks[0]!;
    const out = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return out;
  }
}
