/**
 * What a capture file is, by its bytes rather than its name, and how large an image is: COCO needs
 * the size and the legacy captures never recorded it (Unity issue #152). No image codec is loaded; the
 * headers are enough.
 */
import { deflateSync } from 'node:zlib';
import type { ImageSize } from '../../../model/perception.js';

const startsWith = (data: Uint8Array, bytes: number[], offset = 0): boolean =>
  data.length >= offset + bytes.length && bytes.every((b, i) => data[offset + i] === b);

const ascii = (data: Uint8Array, from: number, to: number): string =>
  String.fromCharCode(...data.subarray(from, Math.min(to, data.length)));

export const IMAGE_MEDIA_TYPES = [
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/bmp',
  'image/tiff',
  'image/webp',
  'image/x-exr',
] as const;

/** The media type the bytes announce, or undefined if they announce nothing known. */
export function sniffMediaType(data: Uint8Array): string | undefined {
  if (startsWith(data, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(data, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (ascii(data, 0, 4) === 'GIF8') return 'image/gif';
  if (ascii(data, 0, 2) === 'BM') return 'image/bmp';
  if (startsWith(data, [0x49, 0x49, 0x2a, 0x00]) || startsWith(data, [0x4d, 0x4d, 0x00, 0x2a]))
    return 'image/tiff';
  if (ascii(data, 0, 4) === 'RIFF' && ascii(data, 8, 12) === 'WEBP') return 'image/webp';
  if (startsWith(data, [0x76, 0x2f, 0x31, 0x01])) return 'image/x-exr';
  const head = ascii(data, 0, 64);
  if (/^(#\s*\.PCD|VERSION\s)/.test(head)) return 'application/vnd.pcd';
  return undefined;
}

/** Image formats as Perception names them (`format: "PNG"`, SOLO `imageFormat: "Png"`). */
const IMAGE_FORMATS = new Set(['PNG', 'JPG', 'JPEG', 'EXR', 'TGA', 'BMP', 'TIFF', 'GIF', 'WEBP']);
export const isImageFormat = (format: string | undefined): boolean =>
  format !== undefined && IMAGE_FORMATS.has(format.toUpperCase());

const EXTENSION_MEDIA_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  exr: 'image/x-exr',
  pcd: 'application/vnd.pcd',
  json: 'application/json',
};

export function mediaTypeFromName(name: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? '';
  return EXTENSION_MEDIA_TYPES[ext] ?? 'application/octet-stream';
}

const u32be = (d: Uint8Array, o: number): number =>
  ((d[o]! << 24) | (d[o + 1]! << 16) | (d[o + 2]! << 8) | d[o + 3]!) >>> 0;
const u16be = (d: Uint8Array, o: number): number => (d[o]! << 8) | d[o + 1]!;

/** Width and height from a PNG or JPEG header, undefined for other formats or a truncated header. */
export function readImageSize(data: Uint8Array): ImageSize | undefined {
  const type = sniffMediaType(data);
  if (type === 'image/png' && data.length >= 24 && ascii(data, 12, 16) === 'IHDR')
    return { width: u32be(data, 16), height: u32be(data, 20) };
  if (type === 'image/jpeg') {
    let o = 2;
    while (o + 9 < data.length) {
      if (data[o] !== 0xff) return undefined;
      const marker = data[o + 1]!;
      // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
        return { height: u16be(data, o + 5), width: u16be(data, o + 7) };
      o += 2 + u16be(data, o + 2);
    }
  }
  return undefined;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, body: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + body.length);
  out.writeUInt32BE(body.length, 0);
  out.write(type, 4, 'ascii');
  out.set(body, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + body.length)), 8 + body.length);
  return out;
}

/** An 8-bit PNG: 1 channel (grey) or 3 (RGB), pixels row by row. */
export function encodePng(width: number, height: number, channels: 1 | 3, pixels: Uint8Array): Buffer {
  if (pixels.length !== width * height * channels)
    throw new Error(`encodePng: ${pixels.length} bytes for ${width}x${height}x${channels}`);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = channels === 1 ? 0 : 2;
  const stride = width * channels;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++)
    raw.set(pixels.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', new Uint8Array(0)),
  ]);
}
