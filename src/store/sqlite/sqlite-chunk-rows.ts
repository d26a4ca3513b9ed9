import { SimrecError } from '../../model/errors.js';
import { openChunk, type ChunkView } from '../common/chunk-reader.js';
import { ParsedChunk, plainBytes, type ChunkBytes } from '../common/chunk-decoder.js';
import type { Row, SqliteStoreFile } from './sqlite-store-file.js';

/**
 * Reading a chunk's row. A sealed chunk of schema 6 keeps its frame (header and block table) in
 * `frame` and its blocks in `data`: a read fetches the frame, then only the blocks it decodes, each
 * with substr(). SQLite still loads the whole `data` value before substr() cuts it, but only the block
 * is copied into JavaScript: a fresh process's first scene copied every actor's whole chunk for one
 * block of each (recording-engine.md). A chunk whose frame is NULL (a tail chunk, a store before
 * schema 6) is read whole.
 */

/**
 * A chunk whose blocks take at most this many bytes (a few pages) comes whole with its frame, in the
 * one query: SQLite loads its few pages either way, and a block fetched alone costs a query of its own,
 * which for a window over many small chunks (smooth traffic packs a stream's chunk in a page or two) was
 * most of the read (recording-engine.md).
 */
const SMALL_CHUNK_BYTES = 16 * 1024;

/**
 * The chunk `id`, or undefined when its row is gone (another connection replaced it: the caller reads
 * the index again). `where` names it in errors.
 */
export function loadStoredChunk(file: SqliteStoreFile, id: number, where: string): ChunkView | undefined {
  if (!file.framesApart) {
    const row = file.stmt('SELECT data FROM chunks WHERE id = ?').get(id) as Row | undefined;
    return row ? openChunk(row.data as Buffer, where) : undefined;
  }
  // length() of a blob is read from the row's header, without its pages; data only for a whole chunk
  // or a small one.
  const row = file
    .stmt(
      `SELECT frame, length(data) AS bytes, CASE WHEN frame IS NULL OR length(data) <= ${SMALL_CHUNK_BYTES}
       THEN data END AS data FROM chunks WHERE id = ?`,
    )
    .get(id) as Row | undefined;
  if (!row) return undefined;
  if (row.frame === null) return openChunk(row.data as Buffer, where);
  const blocks = row.data as Buffer | null;
  return ParsedChunk.open(
    new StoredBlocks(file, id, row.frame as Buffer, row.bytes as number, where, blocks),
    where,
  );
}

/** A chunk's bytes as one array, from a row of `frame` and `data` (NULL frame: data is the chunk). */
export function wholeChunkBytes(row: Row): Buffer {
  const data = row.data as Buffer;
  return row.frame === null || row.frame === undefined ? data : Buffer.concat([row.frame as Buffer, data]);
}

/** A chunk stored as its frame and its blocks: the frame in memory, blocks fetched when read. */
class StoredBlocks implements ChunkBytes {
  readonly size: number;
  private readonly file: SqliteStoreFile;
  private readonly id: number;
  private readonly where: string;
  private readonly frame: Uint8Array;
  /** Every block at once, once a read wanted more than one (a chunk decoded whole, or read again). */
  private blocks: Uint8Array | null = null;
  /** Blocks fetched alone so far: the second fetches them all (each substr() loads the whole blob). */
  private fetched = 0;

  /** `blocks`: every block, when they came with the frame (a small chunk). */
  constructor(
    file: SqliteStoreFile,
    id: number,
    frame: Buffer,
    blockBytes: number,
    where: string,
    blocks: Buffer | null,
  ) {
    this.file = file;
    this.id = id;
    this.where = where;
    this.frame = plainBytes(frame);
    this.size = frame.length + blockBytes;
    if (blocks) this.blocks = plainBytes(blocks);
  }

  read(offset: number, length: number): Uint8Array {
    const framed = this.frame.length;
    if (offset + length <= framed) return this.frame.subarray(offset, offset + length);
    const rest = offset === framed && framed + length === this.size;
    if (offset >= framed && this.blocks === null && !rest && this.fetched++ === 0) {
      const row = this.file
        .stmt('SELECT substr(data, ?, ?) AS bytes FROM chunks WHERE id = ?')
        .get(offset - framed + 1, length, this.id) as Row | undefined;
      return plainBytes(this.present(row).bytes as Buffer);
    }
    if (this.blocks === null) {
      const row = this.file.stmt('SELECT data FROM chunks WHERE id = ?').get(this.id) as Row | undefined;
      this.blocks = plainBytes(this.present(row).data as Buffer);
    }
    if (offset >= framed) return this.blocks.subarray(offset - framed, offset - framed + length);
    // Frame and blocks together (the whole chunk, read at once to be decoded whole).
    const out = new Uint8Array(length);
    out.set(this.frame.subarray(offset));
    out.set(this.blocks.subarray(0, length - (framed - offset)), framed - offset);
    return out;
  }

  release(): void {
    this.blocks = null;
  }

  /** The row, or a conflict: another connection replaced the chunk since its frame was read. */
  private present(row: Row | undefined): Row {
    if (!row) throw new SimrecError('conflict', `${this.where}: replaced while it was being read`);
    return row;
  }
}
