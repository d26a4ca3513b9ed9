/**
 * MCAP files built to eat memory (issue #56): chunks whose zstd data of a few KB decompress to hundreds
 * of MB. The zstd frames are written by hand (run-length blocks of 128 KiB, four bytes each), the
 * records with @mcap/core's McapRecordBuilder, so that no test ever holds what the file unpacks to.
 */
import { McapRecordBuilder, type ChunkIndex } from '@mcap/core';

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];
const BLOCK = 128 * 1024;

/** A zstd frame of `head` followed by `fill` zero bytes, announcing its whole size. */
export function zstdFrame(head: Uint8Array, fill: number): Buffer {
  const parts: Buffer[] = [];
  const frameHeader = Buffer.alloc(4 + 1 + 1 + 8);
  frameHeader.set(ZSTD_MAGIC, 0);
  frameHeader[4] = 0xc0; // an 8-byte content size, a window descriptor, no checksum
  frameHeader[5] = 0x38; // a window of 128 KiB
  frameHeader.writeBigUInt64LE(BigInt(head.byteLength + fill), 6);
  parts.push(frameHeader);
  const blockHeader = (last: boolean, type: number, size: number): Buffer => {
    const b = Buffer.alloc(3);
    b.writeUIntLE((last ? 1 : 0) | (type << 1) | (size << 3), 0, 3);
    return b;
  };
  const blocks = Math.ceil(fill / BLOCK);
  parts.push(blockHeader(blocks === 0, 0, head.byteLength), Buffer.from(head));
  for (let k = 0; k < blocks; k++) {
    const size = Math.min(BLOCK, fill - k * BLOCK);
    parts.push(blockHeader(k === blocks - 1, 1, size), Buffer.from([0]));
  }
  return Buffer.concat(parts);
}

/** A message record on channel 1 at `t` whose data are `data` bytes (the zeros that follow it). */
function messageHead(t: bigint, data: number): Uint8Array {
  const head = Buffer.alloc(1 + 8 + 2 + 4 + 8 + 8);
  head[0] = 0x05;
  head.writeBigUInt64LE(BigInt(2 + 4 + 8 + 8 + data), 1);
  head.writeUInt16LE(1, 9);
  head.writeUInt32LE(0, 11);
  head.writeBigUInt64LE(t, 15);
  head.writeBigUInt64LE(t, 23);
  return head;
}

export interface BombChunk {
  /** The time of its one message: chunks of the same time overlap. */
  t: bigint;
  /** The bytes of that message's data, all zeros. */
  data: number;
  /** What the chunk record says it unpacks to (the truth when absent). */
  declared?: bigint;
  /** What the chunk index says (the record's when absent). */
  indexed?: bigint;
}

/**
 * An indexed MCAP file of simrec's export profile (a `simrec.run` metadata record, so every message is
 * read) whose chunks each hold one message of zeros on a channel no stream reads.
 */
export function mcapBomb(chunks: readonly BombChunk[]): Uint8Array {
  const b = new McapRecordBuilder();
  b.writeMagic();
  b.writeHeader({ profile: '', library: 'bomb' });
  const channel = { id: 1, schemaId: 0, topic: '/padding', messageEncoding: 'raw', metadata: new Map() };
  b.writeChannel(channel);
  const metadataOffset = BigInt(b.length);
  const metadataLength = b.writeMetadata({
    name: 'simrec.run',
    metadata: new Map([
      ['run', JSON.stringify({ simulator: { name: 'bomb' }, description: 'a bomb', metadata: {}, begin: 0 })],
      ['actors', '[]'],
      ['streams', '[]'],
      ['attachments', '[]'],
    ]),
  });
  const indexes: ChunkIndex[] = [];
  for (const chunk of chunks) {
    const records = zstdFrame(messageHead(chunk.t, chunk.data), chunk.data);
    const size = BigInt(31 + chunk.data);
    const chunkStartOffset = BigInt(b.length);
    const chunkLength = b.writeChunk({
      messageStartTime: chunk.t,
      messageEndTime: chunk.t,
      uncompressedSize: chunk.declared ?? size,
      uncompressedCrc: 0,
      compression: 'zstd',
      records,
    });
    const indexOffset = BigInt(b.length);
    const messageIndexLength = b.writeMessageIndex({ channelId: 1, records: [[chunk.t, 0n]] });
    indexes.push({
      messageStartTime: chunk.t,
      messageEndTime: chunk.t,
      chunkStartOffset,
      chunkLength,
      messageIndexOffsets: new Map([[1, indexOffset]]),
      messageIndexLength,
      compression: 'zstd',
      compressedSize: BigInt(records.byteLength),
      uncompressedSize: chunk.indexed ?? chunk.declared ?? size,
    });
  }
  b.writeDataEnd({ dataSectionCrc: 0 });
  const summaryStart = BigInt(b.length);
  b.writeChannel(channel);
  const times = chunks.map((c) => c.t);
  b.writeStatistics({
    messageCount: BigInt(chunks.length),
    schemaCount: 0,
    channelCount: 1,
    attachmentCount: 0,
    metadataCount: 1,
    chunkCount: chunks.length,
    messageStartTime: times.reduce((a, t) => (t < a ? t : a)),
    messageEndTime: times.reduce((a, t) => (t > a ? t : a)),
    channelMessageCounts: new Map([[1, BigInt(chunks.length)]]),
  });
  b.writeMetadataIndex({ offset: metadataOffset, length: metadataLength, name: 'simrec.run' });
  for (const index of indexes) b.writeChunkIndex(index);
  b.writeFooter({ summaryStart, summaryOffsetStart: 0n, summaryCrc: 0 });
  b.writeMagic();
  return b.buffer.slice();
}
