/**
 * LMDB environments as py-lmdb writes them for DI-drive: LMDB 0.9's on-disk format (data version 1),
 * 64-bit little-endian, one unnamed database, no duplicate keys, in a directory holding `data.mdb`.
 *
 * The npm `lmdb` package cannot do this job: it builds LMDB 1.0, whose files carry data version 2 and
 * which py-lmdb refuses (MDB_INVALID), and it crashes the process on a py-lmdb file. So the format is
 * read and written here; it is small (two meta pages, a B+tree of branch, leaf and overflow pages),
 * and the tests check it against py-lmdb and `mdb_dump` where those are installed.
 */
import {
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { invalid, SimrecError } from '../../model/errors.js';

export const LMDB_DATA_FILE = 'data.mdb';

const MAGIC = 0xbeefc0de;
const DATA_VERSION = 1;
const PAGE_HEADER = 16;
const NODE_HEADER = 8;
const META_OFFSET = PAGE_HEADER;
/** Offsets inside the meta struct (after the page header). */
const META = { magic: 0, version: 4, mapSize: 16, freeDb: 24, mainDb: 72, lastPage: 120, txnId: 128 };
/** Offsets inside an MDB_db record. */
const DB = { pad: 0, flags: 4, depth: 6, branch: 8, leaf: 16, overflow: 24, entries: 32, root: 40 };
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_OVERFLOW = 0x04;
const P_META = 0x08;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;
const F_DUPDATA = 0x04;
const MDB_DUPSORT = 0x04;
const NO_PAGE = 0xffffffffffffffffn;
/** LMDB's compile-time key limit. */
export const MAX_KEY_BYTES = 511;
/** What DI-drive passes as `map_size` (1e10): readers map this much address space, not disk. */
const DIDRIVE_MAP_SIZE = 10_000_000_000n;
const PAGE_SIZE = 4096;

const even = (n: number): number => (n + 1) & ~1;

// ---- reading ------------------------------------------------------------------------------------------

interface Meta {
  pageSize: number;
  txnId: bigint;
  mainFlags: number;
  root: bigint;
  entries: bigint;
}

/**
 * Every key and value of the environment in `dir`, in key order. Values are copies. Throws a
 * SimrecError naming the file for anything that is not an LMDB 0.9 file of one plain database.
 */
export function* readLmdb(dir: string): Generator<{ key: Buffer; value: Buffer }> {
  const file = join(dir, LMDB_DATA_FILE);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    throw new SimrecError(
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'not_found' : 'io',
      `${file}: cannot open the LMDB data file: ${(error as Error).message}`,
    );
  }
  try {
    const size = fstatSync(fd).size;
    const read = (offset: number, length: number, what: string): Buffer => {
      if (offset + length > size)
        throw invalid(
          `${file}: ${what} lies at bytes ${offset}..${offset + length}, past the end of the file (${size} bytes); the file is truncated`,
        );
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, offset);
      return buffer;
    };
    const meta = chooseMeta(file, read, size);
    if (meta.mainFlags & MDB_DUPSORT)
      throw new SimrecError(
        'unsupported',
        `${file}: the database keeps duplicate keys (flags ${meta.mainFlags}); DI-drive writes one value per key`,
      );
    if (meta.root === NO_PAGE) {
      if (meta.entries !== 0n)
        throw invalid(
          `${file}: the meta page counts ${meta.entries} entries in an empty tree; the file is corrupt`,
        );
      return;
    }
    const pageSize = meta.pageSize;
    const pages = Math.floor(size / pageSize);
    /**
     * Every page of a B+tree has one parent. A corrupt (or hostile) file whose branch pages point to
     * the same child twice is a DAG: walked as a tree it gives each key again and again, 2^depth
     * times (2^40 hung the import). So each page may be reached once.
     */
    const reached = new Uint8Array(Math.ceil(pages / 8));
    const reach = (pgno: number, what: string): void => {
      if (reached[pgno >> 3]! & (1 << (pgno & 7)))
        throw invalid(
          `${file}: ${what} leads to page ${pgno} a second time; the tree is not a tree (corrupt)`,
        );
      reached[pgno >> 3]! |= 1 << (pgno & 7);
    };
    const page = (pgno: bigint, what: string): Buffer => {
      if (pgno < 2n || pgno >= BigInt(pages))
        throw invalid(
          `${file}: ${what} names page ${pgno}, outside the file's data pages 2..${pages - 1}; the file is corrupt`,
        );
      const p = read(Number(pgno) * pageSize, pageSize, `${what} (page ${pgno})`);
      // LMDB writes each page's own number at its start.
      if (p.readBigUInt64LE(0) !== pgno)
        throw invalid(`${file}: page ${pgno} says it is page ${p.readBigUInt64LE(0)}; the file is corrupt`);
      return p;
    };
    let previousKey: Buffer | null = null;
    let entries = 0n;
    // Depth-first, left to right: keys come out in order. The depth bound stops a corrupt cycle.
    const walk = function* (pgno: bigint, depth: number): Generator<{ key: Buffer; value: Buffer }> {
      if (depth > 64) throw invalid(`${file}: the tree is deeper than 64 levels; the file is corrupt`);
      const p = page(pgno, 'a tree page');
      reach(Number(pgno), depth === 1 ? 'the meta page' : 'a branch page');
      const flags = p.readUInt16LE(10);
      const count = (p.readUInt16LE(12) - PAGE_HEADER) >> 1;
      if (count < 0 || PAGE_HEADER + 2 * count > pageSize)
        throw invalid(`${file}: page ${pgno} claims ${count} nodes; the file is corrupt`);
      for (let i = 0; i < count; i++) {
        const at = p.readUInt16LE(PAGE_HEADER + 2 * i);
        if (at + NODE_HEADER > pageSize)
          throw invalid(`${file}: page ${pgno} node ${i} lies outside the page; the file is corrupt`);
        const lo = p.readUInt16LE(at);
        const hi = p.readUInt16LE(at + 2);
        const nodeFlags = p.readUInt16LE(at + 4);
        const keySize = p.readUInt16LE(at + 6);
        if (flags & P_BRANCH) {
          yield* walk(BigInt(lo) | (BigInt(hi) << 16n) | (BigInt(nodeFlags) << 32n), depth + 1);
          continue;
        }
        if (!(flags & P_LEAF))
          throw invalid(`${file}: page ${pgno} is neither a branch nor a leaf (flags ${flags}); corrupt`);
        if (nodeFlags & (F_SUBDATA | F_DUPDATA))
          throw new SimrecError(
            'unsupported',
            `${file}: page ${pgno} holds a named or duplicate-key database; DI-drive writes one plain database`,
          );
        if (at + NODE_HEADER + keySize > pageSize)
          throw invalid(`${file}: page ${pgno} node ${i}'s key runs past its page; the file is corrupt`);
        const key = Buffer.from(p.subarray(at + NODE_HEADER, at + NODE_HEADER + keySize));
        // LMDB's order (memcmp, then length), strictly increasing: anything else is a damaged tree.
        if (previousKey !== null && Buffer.compare(previousKey, key) >= 0)
          throw invalid(
            `${file}: key ${JSON.stringify(key.toString('latin1'))} on page ${pgno} comes after ${JSON.stringify(previousKey.toString('latin1'))}; keys are out of order (corrupt)`,
          );
        previousKey = key;
        entries++;
        const dataSize = (lo | (hi << 16)) >>> 0;
        const dataAt = at + NODE_HEADER + keySize;
        if (nodeFlags & F_BIGDATA) {
          const first = p.readBigUInt64LE(dataAt);
          const where = `the value of key ${JSON.stringify(key.toString('latin1'))}`;
          const header = page(first, where);
          if (!(header.readUInt16LE(10) & P_OVERFLOW))
            throw invalid(`${file}: ${where} points to page ${first}, which is not an overflow page`);
          const span = header.readUInt32LE(12);
          if (Number(first) + span > pages)
            throw invalid(
              `${file}: ${where} claims ${span} overflow pages from page ${first}, past the file's ${pages} pages; the file is corrupt`,
            );
          if (PAGE_HEADER + dataSize > span * pageSize)
            throw invalid(
              `${file}: ${where} is ${dataSize} bytes, more than its ${span} overflow pages hold; the file is corrupt`,
            );
          for (let k = 0; k < span; k++) reach(Number(first) + k, where);
          yield { key, value: read(Number(first) * pageSize + PAGE_HEADER, dataSize, where) };
        } else {
          if (dataAt + dataSize > pageSize)
            throw invalid(`${file}: page ${pgno} node ${i} runs past its page; the file is corrupt`);
          yield { key, value: Buffer.from(p.subarray(dataAt, dataAt + dataSize)) };
        }
      }
    };
    yield* walk(meta.root, 1);
    if (entries !== meta.entries)
      throw invalid(
        `${file}: the meta page counts ${meta.entries} entries, the tree holds ${entries}; the file is corrupt`,
      );
  } finally {
    closeSync(fd);
  }
}

function parseMeta(file: string, page: Buffer, which: number): Meta {
  const m = META_OFFSET;
  const magic = page.readUInt32LE(m + META.magic);
  if (magic !== MAGIC)
    throw invalid(
      `${file}: meta page ${which} has magic 0x${magic.toString(16)}, expected 0x${MAGIC.toString(16)}: not an LMDB file (or not 64-bit little-endian)`,
    );
  const version = page.readUInt32LE(m + META.version);
  if (version !== DATA_VERSION)
    throw new SimrecError(
      'unsupported',
      `${file}: LMDB data version ${version}, expected ${DATA_VERSION} (LMDB 0.9, what py-lmdb and so DI-drive write; version 2 comes from LMDB 1.0, e.g. the npm lmdb package)`,
    );
  const main = m + META.mainDb;
  return {
    pageSize: page.readUInt32LE(m + META.freeDb + DB.pad),
    txnId: page.readBigUInt64LE(m + META.txnId),
    mainFlags: page.readUInt16LE(main + DB.flags),
    root: page.readBigUInt64LE(main + DB.root),
    entries: page.readBigUInt64LE(main + DB.entries),
  };
}

/** LMDB keeps two meta pages and trusts the one with the later transaction. */
function chooseMeta(
  file: string,
  read: (offset: number, length: number, what: string) => Buffer,
  size: number,
): Meta {
  const metaBytes = META_OFFSET + META.txnId + 8;
  if (size < metaBytes) throw invalid(`${file}: ${size} bytes is too short for an LMDB file`);
  const first = parseMeta(file, read(0, metaBytes, 'meta page 0'), 0);
  const pageSize = first.pageSize;
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0)
    throw invalid(`${file}: page size ${pageSize} in meta page 0 is not a power of two in 512..65536`);
  const second = parseMeta(file, read(pageSize, metaBytes, 'meta page 1'), 1);
  return second.txnId > first.txnId ? second : first;
}

// ---- writing ------------------------------------------------------------------------------------------

interface PageRef {
  pgno: number;
  firstKey: Buffer;
}

/**
 * Writes a new environment into `dir` (created if needed) as one transaction would: keys must come in
 * strictly increasing byte order. Pages are filled as LMDB's own append mode fills them; values over
 * LMDB's node limit go to overflow pages, as LMDB puts them. `data.mdb` appears only on `finish`.
 */
export class LmdbWriter {
  private readonly fd: number;
  private readonly temp: string;
  private nextPage = 2;
  private leaf = Buffer.alloc(PAGE_SIZE);
  private leafNodes = 0;
  private leafUpper = PAGE_SIZE;
  private leafFirstKey: Buffer | null = null;
  private lastKey: Buffer | null = null;
  private readonly leaves: PageRef[] = [];
  private overflowPages = 0;
  private entries = 0;
  /** LMDB's largest node on a page: half a page less the header, so a page holds two. */
  private static readonly NODE_MAX = (((PAGE_SIZE - PAGE_HEADER) / 2) & -2) - 2;

  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
    this.temp = join(dir, `${LMDB_DATA_FILE}.partial`);
    this.fd = openSync(this.temp, 'w');
  }

  add(key: Uint8Array, value: Uint8Array): void {
    const k = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
    if (k.length === 0 || k.length > MAX_KEY_BYTES)
      throw invalid(`LMDB key ${JSON.stringify(k.toString('latin1'))}: expected 1..${MAX_KEY_BYTES} bytes`);
    if (this.lastKey && Buffer.compare(this.lastKey, k) >= 0)
      throw invalid(
        `LMDB key ${JSON.stringify(k.toString('latin1'))}: keys must be added in increasing order (after ${JSON.stringify(this.lastKey.toString('latin1'))})`,
      );
    if (value.byteLength > 0xffffffff) throw invalid(`LMDB value of ${k.toString('latin1')}: over 4 GiB`);
    this.lastKey = k;
    const big = NODE_HEADER + k.length + value.byteLength > LmdbWriter.NODE_MAX;
    const nodeSize = even(NODE_HEADER + k.length + (big ? 8 : value.byteLength));
    if (this.leafNodes > 0 && PAGE_HEADER + 2 * (this.leafNodes + 1) > this.leafUpper - nodeSize)
      this.closeLeaf();
    const at = this.leafUpper - nodeSize;
    const p = this.leaf;
    p.writeUInt16LE(value.byteLength & 0xffff, at);
    p.writeUInt16LE(value.byteLength >>> 16, at + 2);
    p.writeUInt16LE(big ? F_BIGDATA : 0, at + 4);
    p.writeUInt16LE(k.length, at + 6);
    k.copy(p, at + NODE_HEADER);
    if (big) p.writeBigUInt64LE(BigInt(this.writeOverflow(value)), at + NODE_HEADER + k.length);
    else p.set(value, at + NODE_HEADER + k.length);
    p.writeUInt16LE(at, PAGE_HEADER + 2 * this.leafNodes);
    this.leafNodes++;
    this.leafUpper = at;
    this.leafFirstKey ??= k;
    this.entries++;
  }

  /** Writes the tree's upper levels and the meta pages, syncs, and puts `data.mdb` in place. */
  finish(): void {
    try {
      if (this.leafNodes > 0) this.closeLeaf();
      let level = this.leaves;
      let depth = level.length ? 1 : 0;
      let branchPages = 0;
      while (level.length > 1) {
        level = this.writeBranchLevel(level);
        branchPages += level.length;
        depth++;
      }
      const root = level[0] ? BigInt(level[0].pgno) : NO_PAGE;
      const lastPage = this.nextPage - 1;
      this.writeMeta(0, 0n, { root: NO_PAGE, depth: 0, branch: 0, leaf: 0, overflow: 0, entries: 0 }, 1);
      this.writeMeta(
        1,
        1n,
        {
          root,
          depth,
          branch: branchPages,
          leaf: this.leaves.length,
          overflow: this.overflowPages,
          entries: this.entries,
        },
        lastPage,
      );
      fsyncSync(this.fd);
    } finally {
      closeSync(this.fd);
    }
    renameSync(this.temp, join(this.dir, LMDB_DATA_FILE));
  }

  /** Closes the file without putting anything in place (the caller removes the folder). */
  abandon(): void {
    closeSync(this.fd);
  }

  private writePages(pgno: number, bytes: Buffer): void {
    writeSync(this.fd, bytes, 0, bytes.length, pgno * PAGE_SIZE);
  }

  private writeOverflow(value: Uint8Array): number {
    const pages = Math.floor((PAGE_HEADER - 1 + value.byteLength) / PAGE_SIZE) + 1;
    const pgno = this.nextPage;
    this.nextPage += pages;
    this.overflowPages += pages;
    const bytes = Buffer.alloc(pages * PAGE_SIZE);
    bytes.writeBigUInt64LE(BigInt(pgno), 0);
    bytes.writeUInt16LE(P_OVERFLOW, 10);
    bytes.writeUInt32LE(pages, 12);
    bytes.set(value, PAGE_HEADER);
    this.writePages(pgno, bytes);
    return pgno;
  }

  private closeLeaf(): void {
    const pgno = this.nextPage++;
    const p = this.leaf;
    p.writeBigUInt64LE(BigInt(pgno), 0);
    p.writeUInt16LE(P_LEAF, 10);
    p.writeUInt16LE(PAGE_HEADER + 2 * this.leafNodes, 12);
    p.writeUInt16LE(this.leafUpper, 14);
    this.writePages(pgno, p);
    this.leaves.push({ pgno, firstKey: this.leafFirstKey! });
    this.leaf = Buffer.alloc(PAGE_SIZE);
    this.leafNodes = 0;
    this.leafUpper = PAGE_SIZE;
    this.leafFirstKey = null;
  }

  /** One level of branch pages over `children`; a branch page's first key is left empty, as LMDB does. */
  private writeBranchLevel(children: PageRef[]): PageRef[] {
    const parents: PageRef[] = [];
    let i = 0;
    while (i < children.length) {
      const p = Buffer.alloc(PAGE_SIZE);
      let nodes = 0;
      let upper = PAGE_SIZE;
      const firstKey = children[i]!.firstKey;
      while (i < children.length) {
        const key = nodes === 0 ? Buffer.alloc(0) : children[i]!.firstKey;
        const size = even(NODE_HEADER + key.length);
        if (nodes >= 2 && PAGE_HEADER + 2 * (nodes + 1) > upper - size) break;
        const at = upper - size;
        const child = children[i]!.pgno;
        p.writeUInt16LE(child & 0xffff, at);
        p.writeUInt16LE((child >>> 16) & 0xffff, at + 2);
        p.writeUInt16LE(Math.floor(child / 2 ** 32) & 0xffff, at + 4);
        p.writeUInt16LE(key.length, at + 6);
        key.copy(p, at + NODE_HEADER);
        p.writeUInt16LE(at, PAGE_HEADER + 2 * nodes);
        nodes++;
        upper = at;
        i++;
      }
      const pgno = this.nextPage++;
      p.writeBigUInt64LE(BigInt(pgno), 0);
      p.writeUInt16LE(P_BRANCH, 10);
      p.writeUInt16LE(PAGE_HEADER + 2 * nodes, 12);
      p.writeUInt16LE(upper, 14);
      this.writePages(pgno, p);
      parents.push({ pgno, firstKey });
    }
    return parents;
  }

  private writeMeta(
    pgno: number,
    txnId: bigint,
    main: { root: bigint; depth: number; branch: number; leaf: number; overflow: number; entries: number },
    lastPage: number,
  ): void {
    const p = Buffer.alloc(PAGE_SIZE);
    p.writeBigUInt64LE(BigInt(pgno), 0);
    p.writeUInt16LE(P_META, 10);
    const m = META_OFFSET;
    p.writeUInt32LE(MAGIC, m + META.magic);
    p.writeUInt32LE(DATA_VERSION, m + META.version);
    p.writeBigUInt64LE(DIDRIVE_MAP_SIZE, m + META.mapSize);
    const free = m + META.freeDb;
    p.writeUInt32LE(PAGE_SIZE, free + DB.pad);
    p.writeBigUInt64LE(NO_PAGE, free + DB.root);
    const db = m + META.mainDb;
    p.writeUInt16LE(main.depth, db + DB.depth);
    p.writeBigUInt64LE(BigInt(main.branch), db + DB.branch);
    p.writeBigUInt64LE(BigInt(main.leaf), db + DB.leaf);
    p.writeBigUInt64LE(BigInt(main.overflow), db + DB.overflow);
    p.writeBigUInt64LE(BigInt(main.entries), db + DB.entries);
    p.writeBigUInt64LE(main.root, db + DB.root);
    p.writeBigUInt64LE(BigInt(lastPage), m + META.lastPage);
    p.writeBigUInt64LE(txnId, m + META.txnId);
    this.writePages(pgno, p);
  }
}
