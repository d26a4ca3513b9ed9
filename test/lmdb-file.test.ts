/**
 * The LMDB reader behind `simrec import didrive` (src/formats/didrive/lmdb-file.ts), on files written
 * by py-lmdb (DI-drive's own library, LMDB 0.9) and on crafted damaged ones (issue #23): a tree whose
 * branch pages form a DAG or a loop, keys out of order, a meta page whose count is wrong.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SimrecError } from '../src/model/errors.js';
import { LMDB_DATA_FILE, LmdbWriter, readLmdb } from '../src/formats/didrive/lmdb-file.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-lmdb-');
after(() => dir.cleanup());

const PAGE = 4096;
/** The main database's record in meta page 1 (what LmdbWriter fills): entries, root. */
const META1_ENTRIES = PAGE + 16 + 72 + 32;
const META1_DEPTH = PAGE + 16 + 72 + 6;
const META1_ROOT = PAGE + 16 + 72 + 40;

/** A file written by simrec's writer, to be damaged by hand. */
function written(name: string, entries: [string, string][]): string {
  const path = join(dir.path, name);
  const writer = new LmdbWriter(path);
  for (const [k, v] of entries) writer.add(Buffer.from(k), Buffer.from(v));
  writer.finish();
  return path;
}

/** A branch page `pgno` whose nodes all lead to `children` (LMDB's layout: u16 lo, hi, flags=pgno>>32, ksize). */
function branchPage(pgno: number, children: number[]): Buffer {
  const p = Buffer.alloc(PAGE);
  p.writeBigUInt64LE(BigInt(pgno), 0);
  p.writeUInt16LE(0x01, 10);
  let upper = PAGE;
  children.forEach((child, i) => {
    const key = i === 0 ? Buffer.alloc(0) : Buffer.from(`k${i}`);
    upper -= (8 + key.length + 1) & ~1;
    p.writeUInt16LE(child & 0xffff, upper);
    p.writeUInt16LE(child >>> 16, upper + 2);
    p.writeUInt16LE(key.length, upper + 6);
    key.copy(p, upper + 8);
    p.writeUInt16LE(upper, 16 + 2 * i);
  });
  p.writeUInt16LE(16 + 2 * children.length, 12);
  p.writeUInt16LE(upper, 14);
  return p;
}

/**
 * A one-key file with `depth` branch pages above its leaf, each pointing twice to the next: a DAG
 * whose one key a tree walk reaches 2^depth times. `loop` makes the last branch point to itself.
 */
function dagFile(name: string, depth: number, loop = false): string {
  const path = written(name, [['only', 'value']]);
  const file = join(path, LMDB_DATA_FILE);
  const bytes = readFileSync(file); // pages 0, 1 (meta) and 2 (the leaf)
  const branches = Array.from({ length: depth }, (_, i) => {
    const pgno = 3 + i;
    const next = i === depth - 1 ? (loop ? pgno : 2) : pgno + 1;
    return branchPage(pgno, [next, next]);
  });
  const out = Buffer.concat([bytes, ...branches]);
  out.writeBigUInt64LE(3n, META1_ROOT);
  out.writeUInt16LE(depth + 1, META1_DEPTH);
  writeFileSync(file, out);
  return path;
}

const corrupt = (pattern: RegExp) => (error: unknown) =>
  error instanceof SimrecError && error.code === 'invalid' && pattern.test(error.message);

describe('the LMDB reader refuses a damaged tree', () => {
  it('a DAG of branch pages (each key reached 1,024 times) is refused, not read as 1,024 copies', () => {
    assert.throws(
      () => [...readLmdb(dagFile('dag10', 10))],
      corrupt(/data\.mdb: a branch page leads to page 2 a second time; the tree is not a tree/),
    );
  });

  it('a DAG 40 deep (2^40 paths) is refused at once, and a loop too', () => {
    assert.throws(() => [...readLmdb(dagFile('dag40', 40))], corrupt(/a second time/));
    assert.throws(() => [...readLmdb(dagFile('loop', 3, true))], corrupt(/leads to page 5 a second time/));
  });

  it('keys out of order are refused', () => {
    const path = written('order', [
      ['a', '1'],
      ['b', '2'],
    ]);
    const file = join(path, LMDB_DATA_FILE);
    const bytes = readFileSync(file);
    // Swap the leaf's two node pointers: b comes before a.
    const leaf = 2 * PAGE;
    const [first, second] = [bytes.readUInt16LE(leaf + 16), bytes.readUInt16LE(leaf + 18)];
    bytes.writeUInt16LE(second, leaf + 16);
    bytes.writeUInt16LE(first, leaf + 18);
    writeFileSync(file, bytes);
    assert.throws(
      () => [...readLmdb(path)],
      corrupt(/key "a" on page 2 comes after "b"; keys are out of order/),
    );
  });

  it("the meta page's entry count must match the tree", () => {
    const path = written('count', [
      ['a', '1'],
      ['b', '2'],
    ]);
    const file = join(path, LMDB_DATA_FILE);
    const bytes = readFileSync(file);
    bytes.writeBigUInt64LE(3n, META1_ENTRIES);
    writeFileSync(file, bytes);
    assert.throws(() => [...readLmdb(path)], corrupt(/the meta page counts 3 entries, the tree holds 2/));
  });

  it('a page that names another number, or a root outside the file, is refused', () => {
    const path = written('pgno', [['a', '1']]);
    const file = join(path, LMDB_DATA_FILE);
    const bytes = readFileSync(file);
    bytes.writeBigUInt64LE(7n, 2 * PAGE);
    writeFileSync(file, bytes);
    assert.throws(() => [...readLmdb(path)], corrupt(/page 2 says it is page 7/));
    bytes.writeBigUInt64LE(99n, META1_ROOT);
    writeFileSync(file, bytes);
    assert.throws(() => [...readLmdb(path)], corrupt(/names page 99, outside the file's data pages 2\.\.2/));
  });
});

/** Debian's python3-lmdb installs for the system python, which may not be the first python3 on PATH. */
const python = ['/usr/bin/python3', 'python3'].find(
  (p) => spawnSync(p, ['-c', 'import lmdb'], { encoding: 'utf8' }).status === 0,
);

/**
 * Writes LMDB environments with py-lmdb as DI-drive does (`lmdb.open(path, map_size=1e10)`, one
 * transaction per episode, or many with overwrites and deletes), and prints each one's entries as
 * py-lmdb's cursor gives them: key (hex), value length and SHA-256.
 */
const PY_WRITER = String.raw`
import hashlib, json, os, sys, lmdb
root = sys.argv[1]
def dump(env):
    with env.begin() as txn:
        return [[k.hex(), len(v), hashlib.sha256(v).hexdigest()] for k, v in txn.cursor()]
out = {}
def make(name, fill, **kw):
    env = lmdb.open(os.path.join(root, name), map_size=int(1e10), **kw)
    fill(env)
    out[name] = dump(env)
    env.close()
def didrive(env):
    # DI-drive's saver: len, then per frame a 20-float vector and a 320x320x7 uint8 birdview.
    with env.begin(write=True) as txn:
        txn.put(b'len', b'40')
        for i in range(40):
            txn.put(('measurements_%05d' % i).encode(), bytes((i + j) % 256 for j in range(80)))
            txn.put(('birdview_%05d' % i).encode(), bytes([i % 256]) * (320 * 320 * 7))
def many(env):
    with env.begin(write=True) as txn:
        for i in range(20000):
            txn.put(('key%07d' % (i * 7919 % 20000)).encode(), os.urandom(i % 300))
def rewritten(env):
    for round in range(5):
        with env.begin(write=True) as txn:
            for i in range(3000):
                if (i + round) % 3 == 0: txn.delete(('k%05d' % i).encode())
                else: txn.put(('k%05d' % i).encode(), os.urandom((i * round) % 5000))
def edges(env):
    with env.begin(write=True) as txn:
        txn.put(b'\x00', b'')
        txn.put(b'\xff' * 511, b'max key')
        txn.put(b'a', b'x' * 2030)
        txn.put(b'b', b'x' * 2040)
        txn.put(b'c', b'x' * 4096 * 3)
def empty(env):
    pass
make('didrive', didrive)
make('many', many)
make('rewritten', rewritten)
make('edges', edges)
make('empty', empty)
env = lmdb.open(os.path.join(root, 'named'), map_size=int(1e10), max_dbs=2)
db = env.open_db(b'episodes')
with env.begin(write=True) as txn: txn.put(b'a', b'1', db=db)
env.close()
print(json.dumps(out))
`;

describe('files written by py-lmdb (DI-drive’s own library)', () => {
  it('reads every key and value as py-lmdb does: DI-drive’s layout, deep trees, rewrites, overflow and edge sizes', (t) => {
    if (!python) {
      t.skip('py-lmdb is not installed here (apt-get install python3-lmdb): no py-lmdb files to read');
      return;
    }
    const root = join(dir.path, 'py');
    mkdirSync(root);
    const r = spawnSync(python, ['-c', PY_WRITER, root], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    assert.equal(r.status, 0, r.stderr);
    const expected = JSON.parse(r.stdout) as Record<string, [string, number, string][]>;
    assert.deepEqual(Object.keys(expected), ['didrive', 'many', 'rewritten', 'edges', 'empty']);
    for (const [name, entries] of Object.entries(expected)) {
      const ours = [...readLmdb(join(root, name))].map(({ key, value }) => [
        key.toString('hex'),
        value.length,
        createHash('sha256').update(value).digest('hex'),
      ]);
      assert.deepEqual(ours, entries, name);
    }
    assert.equal(expected.many!.length, 20000);
    assert.equal(expected.didrive!.length, 81);
    assert.throws(
      () => [...readLmdb(join(root, 'named'))],
      (e: unknown) => e instanceof SimrecError && /holds a named or duplicate-key database/.test(e.message),
    );
  });
});
