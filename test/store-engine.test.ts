/**
 * The SQLite store's recording engine beyond the conformance suite: the previous version's files,
 * stored damage, the columnar append paths, sealing on the writer thread and SIGKILL while it seals,
 * and what a scene decodes.
 */
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SimrecError } from '../src/model/errors.js';
import { ParsedChunk } from '../src/store/common/chunk-decoder.js';
import { LruCache } from '../src/store/common/lru-cache.js';
import type { ColumnBatch, FrameInput } from '../src/model/columns.js';
import { ArenaPool, packBatches, unpackBatches } from '../src/store/common/column-wire.js';
import type { ColumnAppend, StoreBackend } from '../src/model/store-port.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { FieldDecl, Sample } from '../src/model/stream.js';
import { Random } from '../src/demo/random.js';
import { FrameBuffer } from '../src/record/frame-buffer.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { sceneAt, streamSamples, trajectoryColumns } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { SqliteBackend } from '../src/store/sqlite/sqlite-backend.js';
import { SCHEMA_VERSION } from '../src/store/sqlite/sqlite-schema.js';
import { readColumnsJoinedViaBatches } from '../src/store/common/sample-reads.js';
import { crashSample } from './helpers/crash-sample.js';
import { storeV4Samples } from './helpers/store-v4-samples.js';
import { REPO_ROOT, tempDir } from './helpers/paths.js';
import { killWriterAfter } from './helpers/kill-writer.js';
import { runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-engine-');
after(() => dir.cleanup());
const V1 = join(REPO_ROOT, 'test', 'fixtures', 'store-v1', 'simrec-0.1.0.sqlite3');
const V1_EXPECTED = join(REPO_ROOT, 'test', 'fixtures', 'store-v1', 'simrec-0.1.0.expected.json');

async function collect(iterable: AsyncIterable<Sample[]>): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of iterable) out.push(...batch);
  return out;
}

/** What simrec 0.1.0 read from its file, with "-0" back as -0. */
function expectedV1(): { runs: { run: { id: number }; streams: Record<string, { samples: Sample[] }> }[] } {
  return JSON.parse(readFileSync(V1_EXPECTED, 'utf8'), (_k, v: unknown) => (v === '-0' ? -0 : v)) as never;
}

let files = 0;
const fresh = (): string => join(dir.path, `store-${++files}.db`);

/** A fresh store and a run recording `ids` as vehicles with a state stream each, begun at t=0. */
async function vehicleRun(ids: string[]): Promise<{ store: StoreBackend; rec: RunRecorder }> {
  const store = await openStore(fresh());
  const rec = await RunRecorder.begin(store, { begin: 0 });
  await rec.declareActors(ids.map((id) => ({ id, kind: 'vehicle' })));
  await rec.declareStreams(ids.map((id) => stateStream(id)));
  return { store, rec };
}

/** A run that begins at `begin`, with one car and its state stream declared. */
async function recordingOneCar(store: StoreBackend, begin: number): Promise<RunRecorder> {
  const rec = await RunRecorder.begin(store, { begin });
  await rec.declareActor({ id: 'car', kind: 'vehicle' });
  await rec.declareStream(stateStream('car'));
  return rec;
}

/** A completed run of one car, its samples crashSample(0 .. n - 1), a commit each. */
async function completedCarRun(store: StoreBackend, n: number): Promise<void> {
  const rec = await recordingOneCar(store, 0);
  for (let i = 0; i < n; i++) await rec.append('car/state', crashSample(i));
  await rec.end('completed');
}

/** Opens a copy of an older version's file to write, which upgrades it to this version's schema. */
async function upgradedCopy(fixture: string): Promise<{ path: string; store: StoreBackend }> {
  const path = fresh();
  copyFileSync(fixture, path);
  const store = await openStore(path);
  const db = new Database(path, { readonly: true });
  assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  db.close();
  return { path, store };
}

/** Reads a copy of an older version's file, opened read-only (and not writable), and checks it is left as it was. */
async function readOnlyCopy(fixture: string, read: (store: SqliteBackend) => Promise<void>): Promise<void> {
  const path = fresh();
  copyFileSync(fixture, path);
  chmodSync(path, 0o444);
  const before = readFileSync(path);
  const store = SqliteBackend.open(path, { readonly: true });
  await read(store);
  await store.close();
  assert.deepEqual(readFileSync(path), before);
}

describe('a store written by simrec 0.1.0', () => {
  it('opens read-only and reads every sample as 0.1.0 did, bit for bit, leaving the file as it was', () =>
    readOnlyCopy(V1, async (store) => {
      for (const expected of expectedV1().runs)
        for (const [stream, { samples }] of Object.entries(expected.streams)) {
          const got = await collect(store.readSamples({ run: expected.run.id, stream }));
          assert.deepStrictEqual(got, samples, `run ${expected.run.id} stream ${stream}`);
        }
    }));

  it('opened to write: upgraded in place, its old runs read the same, new runs are recorded beside them', async () => {
    const { path, store } = await upgradedCopy(V1);
    // The run 0.1.0 left recording (a writer on another host, not known dead) stays open.
    assert.deepEqual(
      (await store.listRuns({ newestFirst: false })).map((r) => r.state),
      ['closed', 'recording'],
    );
    const rec = await recordingOneCar(store, 5_000_000);
    await rec.appendBatch('car/state', [{ t: 5_000_000, step: 0, x: 1, y: 2, yaw: 3 }]);
    await rec.leave('car', 6_000_000);
    await rec.end('completed');
    // Schema 3: presence is kept for new runs; actors 0.1.0 recorded have none (scenes judge them by staleness).
    assert.deepEqual((await store.listActors(rec.id))[0]!.presence, [{ from: 5_000_000, to: 6_000_000 }]);
    for (const expected of expectedV1().runs)
      for (const actor of await store.listActors(expected.run.id)) assert.equal(actor.presence, undefined);
    for (const expected of expectedV1().runs)
      for (const [stream, { samples }] of Object.entries(expected.streams))
        assert.deepStrictEqual(await collect(store.readSamples({ run: expected.run.id, stream })), samples);
    const report = await store.checkIntegrity();
    assert.deepEqual(report.problems, []);
    await store.close();
    const check = runCli(['check', '--store', path]);
    assert.equal(check.status, 0, check.stderr);
  });
});

const V3 = join(REPO_ROOT, 'test', 'fixtures', 'store-v3', 'simrec-2026-11-23.sqlite3');

interface ExpectedV3 {
  runs: {
    id: number;
    samples: number;
    streams: Record<string, { samples: number; begin: number; end: number; data: Sample[] }>;
  }[];
}

/** Reads back what the schema-3 fixture's simrec read: every run's count, every stream's counters and samples. */
async function assertReadsAsV3(store: SqliteBackend): Promise<void> {
  const expected = JSON.parse(
    readFileSync(V3.replace('.sqlite3', '.expected.json'), 'utf8'),
    (_k, v: unknown) => (v === '-0' ? -0 : v),
  ) as ExpectedV3;
  const runs = await store.listRuns({ newestFirst: false });
  for (const run of expected.runs) {
    assert.equal(runs.find((r) => r.id === run.id)?.samples, run.samples, `run ${run.id}: samples`);
    const streams = await store.listStreams(run.id);
    for (const [id, want] of Object.entries(run.streams)) {
      const info = streams.find((s) => s.id === id)!;
      assert.deepEqual([info.samples, info.begin, info.end], [want.samples, want.begin, want.end], id);
      assert.deepStrictEqual(await collect(store.readSamples({ run: run.id, stream: id })), want.data, id);
    }
  }
}

describe('a store written before schema 4 (counters in the streams rows)', () => {
  it('opens read-only and reads the same counters and samples, leaving the file as it was', () =>
    readOnlyCopy(V3, assertReadsAsV3));

  it('opened to write: upgraded in place with the same counters, and new runs count their samples', async () => {
    const path = fresh();
    copyFileSync(V3, path);
    const store = SqliteBackend.open(path);
    const db = new Database(path, { readonly: true });
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    const columns = (db.pragma('table_info(streams)') as { name: string }[]).map((c) => c.name);
    assert.deepEqual(columns, ['key', 'run_id', 'id', 'schema', 'extra_fields']);
    db.close();
    await assertReadsAsV3(store);
    const rec = await recordingOneCar(store, 9_000_000);
    for (let i = 0; i < 3; i++)
      await rec.appendBatch('car/state', [{ t: 9_000_000 + i * 1000, step: i, x: i, y: 0, yaw: 0 }]);
    const [live] = await store.listStreams(rec.id);
    assert.deepEqual([live!.samples, live!.begin, live!.end], [3, 9_000_000, 9_002_000]);
    await rec.end('completed');
    assert.equal((await store.listRuns()).find((r) => r.id === rec.id)?.samples, 3);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });
});

const V4 = join(REPO_ROOT, 'test', 'fixtures', 'store-v4', 'simrec-2026-11-26.sqlite3');

/** The bytes of a run's chunks in a store file (of schema 6 or later: frames and blocks). */
function chunkBytes(path: string, run: number): number {
  const db = new Database(path, { readonly: true });
  try {
    return (
      db
        .prepare(
          `SELECT SUM(LENGTH(c.data) + COALESCE(LENGTH(c.frame), 0)) AS bytes FROM chunks c
           JOIN streams s ON s.key = c.stream_key WHERE s.run_id = ?`,
        )
        .get(run) as { bytes: number }
    ).bytes;
  } finally {
    db.close();
  }
}

describe('a store written before schema 5 (floats packed as XOR with their predictions)', () => {
  it('opens read-only and reads every value as written, bit for bit, leaving the file as it was', () =>
    readOnlyCopy(V4, async (store) =>
      assert.deepStrictEqual(
        await collect(store.readSamples({ run: 1, stream: 'car/state' })),
        storeV4Samples(),
      ),
    ));

  it('opened to write: marked schema 5, reads the same, and the same samples recorded again take fewer bytes', async () => {
    const { path, store } = await upgradedCopy(V4);
    assert.deepStrictEqual(
      await collect(store.readSamples({ run: 1, stream: 'car/state' })),
      storeV4Samples(),
    );
    const rec = await recordingOneCar(store, 1_000_000);
    const samples = storeV4Samples();
    for (let i = 0; i < samples.length; i += 100)
      await rec.appendBatch('car/state', samples.slice(i, i + 100));
    await rec.end('completed');
    assert.deepStrictEqual(await collect(store.readSamples({ run: rec.id, stream: 'car/state' })), samples);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
    // Packed as differences of bit patterns: the smooth columns take fewer bits than their XOR did.
    const [old, now] = [chunkBytes(path, 1), chunkBytes(path, rec.id)];
    assert.ok(now < old * 0.98, `the same samples: ${now} bytes now, ${old} in the schema-4 file`);
    const check = runCli(['check', '--store', path]);
    assert.equal(check.status, 0, check.stderr);
  });
});

const V5 = join(REPO_ROOT, 'test', 'fixtures', 'store-v5', 'simrec-2026-12-02.sqlite3');

/** The storeV4Samples recorded as one car's run, in commits of 100. */
async function recordV4Samples(store: StoreBackend, begin: number): Promise<number> {
  const rec = await recordingOneCar(store, begin);
  const samples = storeV4Samples();
  for (let i = 0; i < samples.length; i += 100) await rec.appendBatch('car/state', samples.slice(i, i + 100));
  await rec.end('completed');
  return rec.id;
}

/** A new store file holding the storeV4Samples as one run, closed. */
async function storeOfV4Samples(): Promise<{ path: string; run: number }> {
  const path = fresh();
  const store = await openStore(path);
  const run = await recordV4Samples(store, 1_000_000);
  await store.close();
  return { path, run };
}

/** Each chunk row of a run: whether its frame is apart, and its first bytes (frame, else data). */
function chunkRows(path: string, run: number): { apart: boolean; magic: string; sealed: number }[] {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT c.frame, c.data, c.sealed FROM chunks c JOIN streams s ON s.key = c.stream_key
         WHERE s.run_id = ? ORDER BY c.begin_us`,
      )
      .all(run) as { frame: Buffer | null; data: Buffer; sealed: number }[];
    return rows.map((r) => ({
      apart: r.frame !== null,
      magic: (r.frame ?? r.data).subarray(0, 4).toString('latin1'),
      sealed: r.sealed,
    }));
  } finally {
    db.close();
  }
}

/** The SQL a store's connection runs during `work` (the statements it prepared, each time it ran one). */
async function statementsDuring(store: StoreBackend, work: () => Promise<void>): Promise<string[]> {
  const file = (store as unknown as { file: { stmt: (sql: string) => unknown } }).file;
  const seen: string[] = [];
  const stmt = file.stmt.bind(file);
  file.stmt = (sql: string) => {
    seen.push(sql);
    return stmt(sql);
  };
  try {
    await work();
  } finally {
    file.stmt = stmt;
  }
  return seen;
}

/** Whether `sql` is a run's first look-up of a stream's chunks at a moment (SqliteSamples.chunksAt). */
const isChunkLookUp = (sql: string): boolean => sql.includes('begin_us <= @t');

/** Whether `sql` reads a stream's whole chunk list (SqliteSamples.chunkIndex). */
const isChunkListRead = (sql: string): boolean =>
  /FROM chunks WHERE stream_key = .* ORDER BY begin_us, id$/s.test(sql);

describe("a store's reads and the process's memory", () => {
  it(
    "reads go through SQLite's page cache: no part of the store file is mapped into the process",
    {
      skip:
        process.platform !== 'linux' && 'the mappings are read from /proc/self/maps, which only Linux has',
    },
    async () => {
      const { path, run } = await storeOfV4Samples();
      // A page read through a memory map stays resident: a server's memory grew with every part of the
      // store its viewers visited. Mapped or not, a store's mapping shows in the process's list.
      const mapped = (): string[] =>
        readFileSync('/proc/self/maps', 'utf8')
          .split('\n')
          .filter((line) => line.endsWith(path));
      for (const readonly of [false, true]) {
        const reader = readonly ? SqliteBackend.open(path, { readonly }) : await openStore(path);
        await sceneAt(reader, run, { t: 1_000_000 + 1234 * 10_000 });
        assert.equal(
          (await trajectoryColumns(reader, run, { actor: 'car' })).t.length,
          storeV4Samples().length,
        );
        assert.deepEqual(mapped(), [], `read${readonly ? ' read-only' : ''}: the store is mapped`);
        await reader.close();
      }
    },
  );
});

describe('sealed chunks stored as a frame and blocks (schema 6)', () => {
  it('a sealed chunk keeps its frame apart; a scene fetches the blocks it decodes, not whole chunks', async () => {
    const { path, run } = await storeOfV4Samples();
    assert.deepEqual(chunkRows(path, run), [
      { apart: true, magic: 'SRC2', sealed: 1 },
      { apart: true, magic: 'SRC2', sealed: 1 },
    ]);
    const reader = await openStore(path);
    const sql = await statementsDuring(reader, async () => {
      const scene = await sceneAt(reader, run, { t: 1_000_000 + 1234 * 10_000 });
      assert.deepEqual(scene.actors[0], {
        id: 'car',
        kind: 'vehicle',
        ...Object.fromEntries(Object.entries(storeV4Samples()[1234]!).filter(([k]) => k !== 'step')),
      });
    });
    assert.ok(
      sql.some((q) => q.includes('substr(data')),
      `a block fetched alone: ${sql.join('; ')}`,
    );
    assert.ok(!sql.some((q) => /SELECT data FROM chunks/.test(q)), `no whole chunk: ${sql.join('; ')}`);
    assert.deepEqual(await collect(reader.readSamples({ run, stream: 'car/state' })), storeV4Samples());
    assert.deepEqual(
      (await trajectoryColumns(reader, run, { actor: 'car' })).columns.x,
      Float64Array.from(storeV4Samples(), (s) => s.x as number),
    );
    assert.deepEqual((await reader.checkIntegrity()).problems, []);
    await reader.close();
  });

  it('a window over several blocks of a chunk fetches the blocks once, not once a block', async () => {
    const { path, run } = await storeOfV4Samples();
    const reader = await openStore(path);
    const samples = storeV4Samples();
    let read: Sample[] = [];
    const sql = await statementsDuring(reader, async () => {
      read = await collect(
        reader.readSamples({ run, stream: 'car/state', from: samples[150]!.t, to: samples[640]!.t }),
      );
    });
    assert.deepEqual(read, samples.slice(150, 641));
    const fetches = sql.filter((q) => /substr\(data|SELECT data FROM chunks/.test(q));
    assert.ok(fetches.length <= 2, `one block alone, then the chunk's blocks at once: ${fetches.join('; ')}`);
    await reader.close();
  });

  it('a small sealed chunk comes whole with its frame, in one query, for a scene and for a window', async () => {
    // Smooth motion packs 2,300 samples in a few KB: a block fetched alone would cost a query more.
    const samples = storeV4Samples().map((s, i) => ({
      ...s,
      x: 100 + 0.125 * i,
      y: -50,
      yaw: 0.25,
      speed: 12.5,
      accel: 0,
    }));
    const path = fresh();
    const writer = await openStore(path);
    const rec = await recordingOneCar(writer, 1_000_000);
    for (let i = 0; i < samples.length; i += 100)
      await rec.appendBatch('car/state', samples.slice(i, i + 100));
    await rec.end('completed');
    await writer.close();
    const db = new Database(path, { readonly: true });
    const sizes = db.prepare('SELECT length(data) AS bytes FROM chunks WHERE frame IS NOT NULL').all() as {
      bytes: number;
    }[];
    db.close();
    assert.ok(sizes.length > 0, 'sealed chunks with their frames apart');
    assert.ok(
      sizes.every((s) => s.bytes <= 16 * 1024),
      `small chunks: ${sizes.map((s) => s.bytes).join(', ')}`,
    );
    const reader = await openStore(path);
    const chunkFetches = (sql: string[]): string[] => sql.filter((q) => /FROM chunks WHERE id/.test(q));
    const sceneSql = await statementsDuring(reader, async () => {
      const scene = await sceneAt(reader, rec.id, { t: samples[1234]!.t });
      assert.equal(scene.actors[0]!.x, samples[1234]!.x);
    });
    assert.equal(chunkFetches(sceneSql).length, 1, `one query for the chunk: ${sceneSql.join('; ')}`);
    const windowSql = await statementsDuring(reader, async () => {
      const read = await collect(
        reader.readSamples({ run: rec.id, stream: 'car/state', from: samples[150]!.t, to: samples[2200]!.t }),
      );
      assert.deepEqual(read, samples.slice(150, 2201));
    });
    assert.ok(
      !windowSql.some((q) => /substr\(data|SELECT data FROM chunks/.test(q)),
      `no block fetched apart: ${windowSql.join('; ')}`,
    );
    await reader.close();
  });

  it("a flipped bit in a chunk's frame is an error naming the chunk, and simrec check finds it", async () => {
    const { path, run } = await storeOfV4Samples();
    const db = new Database(path);
    const row = db.prepare('SELECT id, frame FROM chunks WHERE frame IS NOT NULL LIMIT 1').get() as {
      id: number;
      frame: Buffer;
    };
    row.frame[row.frame.length - 3]! ^= 0x10;
    db.prepare('UPDATE chunks SET frame = ? WHERE id = ?').run(row.frame, row.id);
    db.close();
    const reopened = await openStore(path);
    await assert.rejects(
      collect(streamSamples(reopened, run, 'car/state')),
      (e: unknown) =>
        e instanceof SimrecError &&
        e.code === 'io' &&
        new RegExp(`chunk ${row.id}: corrupt chunk \\(checksum mismatch`).test(e.message),
    );
    await reopened.close();
    const check = runCli(['check', '--store', path, '--json']);
    assert.equal(check.status, 1);
    assert.match(check.stdout, /checksum mismatch/);
  });

  it('a store of schema 5 (whole chunks) reads as it is, read-only and upgraded beside new chunks', async () => {
    await readOnlyCopy(V5, async (store) =>
      assert.deepEqual(await collect(store.readSamples({ run: 1, stream: 'car/state' })), storeV4Samples()),
    );
    const { path, store } = await upgradedCopy(V5);
    const run = await recordV4Samples(store, 1_000_000);
    await store.close();
    assert.deepEqual(
      chunkRows(path, 1).map((c) => c.apart),
      [false, false],
      'chunks stored before are left as they were',
    );
    assert.deepEqual(
      chunkRows(path, run).map((c) => c.apart),
      [true, true],
    );
    const reader = await openStore(path);
    for (const r of [1, run]) {
      assert.deepEqual(await collect(reader.readSamples({ run: r, stream: 'car/state' })), storeV4Samples());
      const scene = await sceneAt(reader, r, { t: 1_000_000 + 2299 * 10_000 });
      assert.equal(scene.actors[0]!.x, storeV4Samples()[2299]!.x);
    }
    assert.deepEqual((await reader.checkIntegrity()).problems, []);
    await reader.close();
    assert.equal(chunkBytes(path, run), chunkBytes(path, 1), 'the same chunks, their frames apart');
  });
});

describe('stored damage', () => {
  it('a flipped bit in a stored chunk is an error naming run, stream and chunk, and simrec check finds it', async () => {
    const path = fresh();
    const store = await openStore(path);
    const rec = await recordingOneCar(store, 1_000_000);
    await rec.appendBatch(
      'car/state',
      Array.from({ length: 500 }, (_, i) => ({ t: 1_000_000 + i * 1000, step: i, x: i * 0.1, y: 0, yaw: 0 })),
    );
    await rec.end('completed');
    await store.close();
    const db = new Database(path);
    const row = db.prepare('SELECT id, data FROM chunks').get() as { id: number; data: Buffer };
    row.data[Math.floor(row.data.length / 2)]! ^= 0x04;
    db.prepare('UPDATE chunks SET data = ? WHERE id = ?').run(row.data, row.id);
    db.close();
    const reopened = await openStore(path);
    await assert.rejects(
      collect(streamSamples(reopened, 1, 'car/state')),
      (e: unknown) =>
        e instanceof SimrecError &&
        e.code === 'io' &&
        new RegExp(
          `run 1 stream car/state chunk ${row.id}: corrupt chunk \\((block \\d+: )?checksum mismatch`,
        ).test(e.message),
    );
    await reopened.close();
    const check = runCli(['check', '--store', path, '--json']);
    assert.equal(check.status, 1);
    assert.match(check.stdout, /checksum mismatch/);
  });

  it('simrec check --repair keeps the readable blocks of a damaged chunk', async () => {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 1000, blockSamples: 100 });
    const rec = await recordingOneCar(store, 0);
    await rec.appendBatch(
      'car/state',
      Array.from({ length: 1000 }, (_, i) => crashSample(i)),
    );
    await rec.end('completed');
    await store.close();
    const db = new Database(path);
    const row = db.prepare('SELECT id, data FROM chunks').get() as { id: number; data: Buffer };
    // The last byte of the chunk is in its last block.
    row.data[row.data.length - 1]! ^= 0x01;
    db.prepare('UPDATE chunks SET data = ? WHERE id = ?').run(row.data, row.id);
    db.close();
    const repaired = runCli(['check', '--store', path, '--repair', '--json']);
    assert.equal(repaired.status, 0, repaired.stdout + repaired.stderr);
    assert.match(repaired.stdout, /its readable blocks kept \(900 of 1000 samples\)/);
    const after = await openStore(path);
    const samples = await collect(streamSamples(after, 1, 'car/state'));
    assert.deepEqual(
      samples,
      Array.from({ length: 900 }, (_, i) => crashSample(i)),
    );
    assert.deepEqual((await after.checkIntegrity()).problems, []);
    await after.close();
  });
});

describe('columnar recording', () => {
  it('appendFrame, appendColumns and appendMany on the same streams keep every row, in time order', async () => {
    const ids = ['a', 'b', 'c'];
    const { store, rec } = await vehicleRun(ids);
    await rec.setRecording('c', false);
    // Not awaited, as a simulator appends: end reports a failure.
    for (let step = 0; step < 10; step++) {
      const t = step * 100_000;
      void rec.appendFrame('state', {
        t,
        step,
        actors: ids,
        columns: {
          x: Float64Array.of(step, step + 10, step + 20),
          y: Float64Array.of(-0, 1, 2),
          yaw: [0.1, 0.2, 0.3],
          lane: ['l1', undefined, 'l3'],
          speed: Float32Array.of(1, NaN, 3),
        },
      });
      if (step === 4)
        void rec.appendMany([
          { stream: 'a/state', samples: [{ t: t + 1, step: 100, x: -1, y: -1, yaw: -1 }] },
        ]);
      if (step === 6)
        void rec.appendColumns('b/state', {
          t: [t + 5, t + 6],
          step: [200, 201],
          columns: { x: [7, 8], y: [0, 0], yaw: [0, 0] },
        });
    }
    await rec.end('completed');
    const a = await collect(streamSamples(store, rec.id, 'a/state'));
    assert.deepEqual(
      a.map((s) => s.step),
      [0, 1, 2, 3, 4, 100, 5, 6, 7, 8, 9],
    );
    assert.ok(Object.is(a[0]!.y, -0));
    assert.equal(a[0]!.lane, 'l1');
    const b = await collect(streamSamples(store, rec.id, 'b/state'));
    assert.deepEqual(
      b.map((s) => s.step),
      [0, 1, 2, 3, 4, 5, 6, 200, 201, 7, 8, 9],
    );
    assert.equal(b[0]!.lane, undefined);
    assert.equal(b[0]!.speed, undefined);
    assert.equal(
      (await store.listStreams(rec.id)).find((s) => s.id === 'c/state')!.samples,
      0,
      'recording off',
    );
    const traj = await trajectoryColumns(store, rec.id, { actor: 'a', fields: ['x'] });
    assert.deepEqual(Object.keys(traj.columns), ['x']);
    assert.deepEqual(Array.from(traj.columns.x as Float64Array), [0, 1, 2, 3, 4, -1, 5, 6, 7, 8, 9]);
    const scene = await sceneAt(store, rec.id, { t: 450_000 });
    assert.deepEqual(
      scene.actors.map((s) => [s.id, s.x]),
      [
        ['a', -1],
        ['b', 14],
      ],
    );
    await store.close();
  });

  it('a trajectory over chunks that lack a column has no value in their rows (NaN, undefined), strings and numbers alike', async () => {
    const store = SqliteBackend.open(fresh(), { chunkSamples: 100 });
    const rec = await recordingOneCar(store, 0);
    const samples = Array.from({ length: 250 }, (_, i) => {
      const sample: Sample = { t: i * 1000, step: i, x: i, y: 0, yaw: 0 };
      if (i < 100 || i >= 200) sample.lane = i < 100 ? 'A' : 'B';
      if (i >= 100) sample.speed = i;
      return sample;
    });
    for (let i = 0; i < samples.length; i += 50) await rec.appendBatch('car/state', samples.slice(i, i + 50));
    await rec.end('completed');
    const traj = await trajectoryColumns(store, rec.id, { actor: 'car' });
    assert.deepEqual(
      traj.columns.lane,
      samples.map((s) => s.lane),
    );
    assert.deepEqual(
      Array.from(traj.columns.speed as Float64Array),
      samples.map((s) => s.speed ?? NaN),
    );
    assert.deepEqual(
      Array.from(traj.t),
      samples.map((s) => s.t),
    );
    await store.close();
  });

  it('an undeclared field that turns from numbers to strings keeps every value when the tail blocks are sealed as they are', async () => {
    const store = SqliteBackend.open(fresh(), { chunkSamples: 200, blockSamples: 64 });
    const rec = await recordingOneCar(store, 0);
    const sent: Sample[] = [];
    for (let commit = 0; commit < 6; commit++) {
      const batch: Sample[] = [];
      for (let i = 0; i < 70; i++) {
        const k = commit * 70 + i;
        const s: Sample = { t: k * 1000, step: k, x: k, y: 0, yaw: 0 };
        // Numbers in the first three commits (packed as floats), strings after (the field becomes json).
        if (k % 3 === 0) s.v = commit < 3 ? k * 0.5 : `s${k}`;
        batch.push(s);
      }
      sent.push(...batch);
      await rec.appendBatch('car/state', batch);
    }
    await rec.end('completed');
    assert.deepEqual(await collect(streamSamples(store, rec.id, 'car/state')), sent);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });

  it('a frame goes to the streams of the actors it names, in their order, even in an array the caller reuses', async () => {
    const { store, rec } = await vehicleRun(['a', 'b', 'c']);
    const actors = ['a', 'b'];
    const frame = (step: number): FrameInput => ({
      t: step * 1000,
      step,
      actors,
      columns: { x: [step, step + 0.5], y: [0, 0], yaw: [0, 0] },
    });
    // Not awaited, as a simulator appends: end reports a failure.
    void rec.appendFrame('state', frame(0));
    void rec.appendFrame('state', frame(1));
    // The same array, now naming other actors (and in another order).
    actors[0] = 'c';
    actors[1] = 'a';
    void rec.appendFrame('state', frame(2));
    actors[0] = 'zz';
    assert.throws(() => rec.appendFrame('state', frame(3)), /no declared stream "zz\/state"/);
    actors[0] = 'c';
    void rec.appendFrame('state', frame(3));
    await rec.end('completed');
    const xs = async (stream: string): Promise<unknown[]> =>
      (await collect(streamSamples(store, rec.id, stream))).map((s) => [s.step, s.x]);
    assert.deepEqual(await xs('a/state'), [
      [0, 0],
      [1, 1],
      [2, 2.5],
      [3, 3.5],
    ]);
    assert.deepEqual(await xs('b/state'), [
      [0, 0.5],
      [1, 1.5],
    ]);
    assert.deepEqual(await xs('c/state'), [
      [2, 2],
      [3, 3],
    ]);
    await store.close();
  });

  it("a frame's columns are copied as it is appended: the caller fills the same arrays for the next", async () => {
    const { store, rec } = await vehicleRun(['a', 'b']);
    // As the ingest server does with the frames it decodes: one set of arrays, refilled every step.
    const x = new Float64Array(2);
    const y = new Float64Array(2);
    const yaw = [0, 0];
    const appended: Promise<void>[] = [];
    for (let step = 0; step < 5; step++) {
      x.set([step, 10 + step]);
      y.set([-step, -10 - step]);
      appended.push(
        rec.appendFrame('state', { t: step * 1000, step, actors: ['a', 'b'], columns: { x, y, yaw } }),
      );
    }
    x.fill(NaN);
    await Promise.all(appended);
    await rec.end('completed');
    const rows = async (id: string): Promise<unknown[]> =>
      (await collect(streamSamples(store, rec.id, `${id}/state`))).map((s) => [s.x, s.y]);
    assert.deepEqual(
      await rows('a'),
      [0, 1, 2, 3, 4].map((k) => [k, -k]),
    );
    assert.deepEqual(
      await rows('b'),
      [0, 1, 2, 3, 4].map((k) => [10 + k, -10 - k]),
    );
    await store.close();
  });

  it('a JSON value is copied as it is appended, by every append path: the caller may change its object for the next step', async () => {
    const store = await openStore(fresh());
    const rec = await RunRecorder.begin(store, { begin: 0 });
    const ids = ['many', 'frame', 'columns'];
    await rec.declareActors(ids.map((id) => ({ id, kind: 'vehicle' })));
    // A declared json field, and an undeclared field (its type inferred) holding an object too.
    await rec.declareStreams(
      ids.map((actor) => ({ name: 'wheels', actor, fields: [{ name: 'doc', type: 'json' as const }] })),
    );
    // One object, filled again every step, as a simulator keeps its wheels' state; a key "__proto__"
    // (JSON.parse makes such keys) stays a key of the copy.
    const doc = JSON.parse('{"wheels":[{"w":0}],"__proto__":{"k":0}}') as {
      wheels: { w: number }[];
      ['__proto__']: { k: number };
    };
    const extra = { slip: [0] };
    const appended: Promise<void>[] = [];
    for (let step = 0; step < 4; step++) {
      doc.wheels[0]!.w = step;
      Object.getOwnPropertyDescriptor(doc, '__proto__')!.value.k = step;
      extra.slip[0] = 10 + step;
      const t = step * 1000;
      appended.push(rec.appendMany([{ stream: 'many/wheels', samples: [{ t, step, doc, extra }] }]));
      appended.push(
        rec.appendFrame('wheels', { t, step, actors: ['frame'], columns: { doc: [doc], extra: [extra] } }),
      );
      appended.push(
        rec.appendColumns('columns/wheels', {
          t: [t],
          step: [step],
          columns: { doc: [doc], extra: [extra] },
        }),
      );
    }
    doc.wheels[0]!.w = 99;
    extra.slip[0] = 99;
    await Promise.all(appended);
    await rec.end('completed');
    for (const id of ids) {
      const samples = await collect(streamSamples(store, rec.id, `${id}/wheels`));
      assert.deepEqual(
        samples.map((s) => [s.step, JSON.stringify(s.doc), s.extra]),
        [0, 1, 2, 3].map((k) => [k, `{"wheels":[{"w":${k}}],"__proto__":{"k":${k}}}`, { slip: [10 + k] }]),
        `${id}: each sample as it was appended`,
      );
      for (const s of samples)
        assert.equal(Object.getPrototypeOf(s.doc), Object.prototype, `${id}: a plain object`);
    }
    await store.close();
  });

  it("an actor's attributes and a stream's metadata are kept as declared, though written after the commit in flight", async () => {
    const { store, rec } = await vehicleRun(['a']);
    // A commit in flight: declarations made now are written after it.
    const committing = rec.appendFrame('state', {
      t: 0,
      step: 0,
      actors: ['a'],
      columns: { x: [1], y: [2], yaw: [0] },
    });
    await rec.flush();
    // Not awaited: the flush that follows waits for it.
    void rec.appendFrame('state', { t: 10, step: 1, actors: ['a'], columns: { x: [1], y: [2], yaw: [0] } });
    const flushed = rec.flush();
    // One object reused for every declaration, as a loop over a simulator's vehicles might.
    const attributes = { route: ['e1', 'e2'], vType: 'car' };
    const metadata = { source: { sensor: 'lidar-0' } };
    const declared = [
      rec.declareActors([{ id: 'b', kind: 'vehicle', attributes }]),
      rec.declareStreams([{ name: 'scan', actor: 'b', fields: [{ name: 'n', type: 'i32' }], metadata }]),
    ];
    attributes.route.push('e3');
    attributes.vType = 'bus';
    metadata.source.sensor = 'lidar-9';
    await Promise.all([committing, flushed, ...declared]);
    await rec.end('completed');
    const b = (await store.listActors(rec.id)).find((a) => a.id === 'b')!;
    assert.deepEqual(b.attributes, { route: ['e1', 'e2'], vType: 'car' });
    const scan = (await store.listStreams(rec.id)).find((s) => s.id === 'b/scan')!;
    assert.deepEqual(scan.metadata, { source: { sensor: 'lidar-0' } });
    await store.close();
  });

  it('frames whose actors come and go within one commit keep each actor its rows, with rows of other kinds in order', async () => {
    const store = await openStore(fresh());
    const rec = await RunRecorder.begin(store, { begin: 0 });
    const ids = ['a', 'b', 'c', 'd'];
    await rec.declareActors(ids.map((id) => ({ id, kind: 'vehicle' })));
    await rec.declareStreams(
      ids.map((actor) => ({
        name: 'pose',
        actor,
        fields: [
          { name: 'p', type: 'vec', length: 2 },
          { name: 'tag', type: 'string', optional: true },
        ],
      })),
    );
    const frame = (step: number, actors: string[]): FrameInput => ({
      t: step * 1000,
      step,
      actors,
      columns: {
        p: Float64Array.from(actors.flatMap((id) => [step, id.charCodeAt(0)])),
        tag: actors.map((id) => (id === 'b' ? undefined : `${id}${step}`)),
      },
    });
    // No await between them: one commit. b departs, c and d arrive, a leaves and comes back.
    const appended = [
      rec.appendFrame('pose', frame(0, ['a', 'b'])),
      rec.appendFrame('pose', frame(1, ['a', 'b'])),
      rec.appendFrame('pose', frame(2, ['b', 'c'])),
      rec.appendFrame('pose', frame(3, ['c', 'a', 'd'])),
      // A row of another kind for a stream with frames waiting: after them, before the next frame.
      rec.appendMany([{ stream: 'd/pose', samples: [{ t: 3500, step: 35, p: [-1, -1] }] }]),
      rec.appendFrame('pose', frame(4, ['a', 'b', 'c', 'd'])),
      // A row of another kind first, then frames of the same stream.
      rec.appendMany([{ stream: 'c/pose', samples: [{ t: 4500, step: 45, p: [-2, -2] }] }]),
      rec.appendFrame('pose', frame(5, ['d', 'c'])),
    ];
    await Promise.all(appended);
    await rec.end('completed');
    const rows = async (actor: string): Promise<unknown[]> =>
      (await collect(streamSamples(store, rec.id, `${actor}/pose`))).map((s) => [s.step, s.p, s.tag]);
    const code = (id: string): number => id.charCodeAt(0);
    const row = (id: string, step: number): unknown[] => [
      step,
      [step, code(id)],
      id === 'b' ? undefined : `${id}${step}`,
    ];
    assert.deepEqual(await rows('a'), [row('a', 0), row('a', 1), row('a', 3), row('a', 4)]);
    assert.deepEqual(await rows('b'), [row('b', 0), row('b', 1), row('b', 2), row('b', 4)]);
    assert.deepEqual(await rows('c'), [
      row('c', 2),
      row('c', 3),
      row('c', 4),
      [45, [-2, -2], undefined],
      row('c', 5),
    ]);
    assert.deepEqual(await rows('d'), [row('d', 3), [35, [-1, -1], undefined], row('d', 4), row('d', 5)]);
    await store.close();
  });

  it('frames of two names sent in turn keep each stream its rows, with rows of other kinds in order', async () => {
    const store = await openStore(fresh());
    const rec = await RunRecorder.begin(store, { begin: 0 });
    await rec.declareActors([
      { id: 'a', kind: 'vehicle' },
      { id: 'b', kind: 'vehicle' },
      { id: 'L', kind: 'traffic_light' },
    ]);
    await rec.declareStreams([
      stateStream('a'),
      stateStream('b'),
      { name: 'signal', actor: 'L', fields: [{ name: 'state', type: 'string' }] },
    ]);
    // Each name has its frames waiting apart (one buffer each): a simulator's state and signal frames
    // in turn used to empty the one buffer into the streams at every frame.
    const appended: Promise<void>[] = [];
    for (let step = 0; step < 4; step++) {
      const t = step * 1000;
      appended.push(
        rec.appendFrame('state', {
          t,
          step,
          actors: ['a', 'b'],
          columns: { x: [step, 10 + step], y: [0, 0], yaw: [0, 0] },
        }),
        rec.appendFrame('signal', { t, step, actors: ['L'], columns: { state: [step % 2 ? 'r' : 'G'] } }),
      );
      if (step === 1)
        appended.push(rec.appendMany([{ stream: 'L/signal', samples: [{ t: 1500, step: 15, state: 'y' }] }]));
    }
    await Promise.all(appended);
    await rec.end('completed');
    const rows = async (stream: string, field: string): Promise<unknown[]> =>
      (await collect(streamSamples(store, rec.id, stream))).map((s) => [s.step, s[field]]);
    assert.deepEqual(await rows('L/signal', 'state'), [
      [0, 'G'],
      [1, 'r'],
      [15, 'y'],
      [2, 'G'],
      [3, 'r'],
    ]);
    assert.deepEqual(
      await rows('a/state', 'x'),
      [0, 1, 2, 3].map((k) => [k, k]),
    );
    assert.deepEqual(
      await rows('b/state', 'x'),
      [0, 1, 2, 3].map((k) => [k, 10 + k]),
    );
    await store.close();
  });

  it('a bad frame names the actor and field, and nothing of it is kept', async () => {
    const { store, rec } = await vehicleRun(['a', 'b']);
    /** Appending a frame of both actors at t=0 with these columns. */
    const frameOf = (columns: FrameInput['columns']) => (): unknown =>
      rec.appendFrame('state', { t: 0, step: 0, actors: ['a', 'b'], columns });
    assert.throws(
      frameOf({ x: [1, NaN], y: [0, 0], yaw: [0, 0] }),
      /stream b\/state sample at t=0: field x is required \(f64\) but absent/,
    );
    // The same in the engine's own form (a Float64Array, which optional fields take as it is).
    assert.throws(
      frameOf({ x: Float64Array.of(1, NaN), y: Float64Array.of(0, Infinity), yaw: [0, 0] }),
      /stream b\/state sample at t=0: field x is required \(f64\) but absent/,
    );
    assert.throws(
      frameOf({ x: Float64Array.of(1, 2), y: [0, 0], yaw: [0, 0], speed: Float64Array.of(NaN, -Infinity) }),
      /stream b\/state sample at t=0: field speed: expected a finite number \(m\/s\), got -Infinity/,
    );
    assert.throws(
      () => rec.appendFrame('state', { t: 0, step: 0, actors: ['a', 'zz'], columns: {} }),
      /no declared stream "zz\/state"/,
    );
    // The same actor twice, after a frame of other actors (the list is looked at again when it changes).
    assert.throws(
      () => rec.appendFrame('state', { t: 0, step: 0, actors: ['a', 'b', 'a'], columns: {} }),
      /frame of state: actor "a" is listed twice \(places 0 and 2\); a frame holds one row per actor/,
    );
    // Not objects where objects are expected: errors that say so, not a TypeError from inside.
    const wrong = (v: unknown): never => v as never;
    assert.throws(
      () => rec.appendFrame('state', wrong(null)),
      /frame of "state": expected an object \{t, step, actors, columns\}, got null/,
    );
    assert.throws(
      () => rec.appendMany(wrong(null)),
      /appendMany: expected an array of \{stream, samples\}, got null/,
    );
    assert.throws(() => rec.appendMany([wrong(null)]), /appendMany: expected \{stream, samples\}, got null/);
    await assert.rejects(
      rec.declareActors(wrong(null)),
      /declareActors: expected an array of actors, got null/,
    );
    await assert.rejects(
      rec.declareStreams(wrong('x')),
      /declareStreams: expected an array of streams, got "x"/,
    );
    await rec.end('completed');
    assert.deepEqual(
      (await store.listStreams(rec.id)).map((s) => s.samples),
      [0, 0],
    );
    await store.close();
  });
  it('frames of the same actors notice a leave, a return and a record switch between them', async () => {
    const { store, rec } = await vehicleRun(['a', 'b']);
    // The recorder keeps what it knows of the last frame's actors: each change below must reach it.
    const frame = (step: number): FrameInput => ({
      t: step * 1000,
      step,
      actors: ['a', 'b'],
      columns: { x: [step, step], y: [0, 0], yaw: [0, 0] },
    });
    const appended = [rec.appendFrame('state', frame(0)), rec.appendFrame('state', frame(1))];
    appended.push(rec.leave('a', 1500), rec.appendFrame('state', frame(2)));
    appended.push(rec.leave('b', 2500));
    await rec.declareActors([{ id: 'b', kind: 'vehicle', record: false }]);
    appended.push(rec.appendFrame('state', frame(3)), rec.appendFrame('state', frame(4)));
    assert.throws(
      () => rec.appendFrame('state', { ...frame(5), t: 1.5 }),
      /frame of state: t: expected an integer number of microseconds, got 1\.5/,
    );
    assert.throws(
      () => rec.appendFrame('state', { ...frame(5), step: 'five' as unknown as number }),
      /frame of state at t=5000: step: expected an integer, got "five"/,
    );
    assert.throws(() => rec.appendFrame('state', frame(3)), /a\/state sample at t=3000: time goes backwards/);
    await Promise.all(appended);
    await rec.end('completed');
    const steps = async (actor: string): Promise<number[]> =>
      (await collect(streamSamples(store, rec.id, `${actor}/state`))).map((s) => s.step);
    assert.deepEqual(await steps('a'), [0, 1, 2, 3, 4]);
    assert.deepEqual(await steps('b'), [0, 1, 2]);
    const presence = new Map((await store.listActors(rec.id)).map((a) => [a.id, a.presence]));
    // a left and came back with the next frame; b left and, no longer recorded, stayed gone.
    assert.deepEqual(presence.get('a')?.[0], { from: 0, to: 1500 });
    assert.equal(presence.get('a')?.[1]?.from, 2000);
    assert.equal(presence.get('a')?.length, 2);
    assert.deepEqual(presence.get('b'), [{ from: 0, to: 2500 }]);
    await store.close();
  });
});

describe('frames against sample objects', () => {
  it('a random run of frames records what the same appends as sample objects record (5 seeds)', async () => {
    // The frame path keeps a lot between frames (the last frame's actors and what is known of them, a
    // buffer per name kept from commit to commit): the same random run, once as frames and once as
    // sample objects (which keep nothing of the kind), must store the same rows and presence.
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const fields: FieldDecl[] = [
      { name: 'x', type: 'f64' },
      { name: 'tag', type: 'string', optional: true },
      { name: 'v', type: 'vec', length: 2, optional: true },
    ];
    for (const seed of [1, 2, 3, 4, 5]) {
      const random = new Random(seed);
      const stores = [await openStore(fresh()), await openStore(fresh())];
      const recorders = await Promise.all(stores.map((store) => RunRecorder.begin(store, { begin: 0 })));
      for (const rec of recorders) {
        await rec.declareActors(ids.map((id) => ({ id, kind: 'vehicle' })));
        await rec.declareStreams([
          ...ids.map((actor) => ({ name: 'state', actor, fields })),
          ...ids.map((actor) => ({ name: 'pose', actor, fields: [{ name: 'x', type: 'f64' as const }] })),
        ]);
      }
      const framed = recorders[0]!;
      const pending: Promise<void>[] = [];
      const both = (apply: (rec: RunRecorder, asFrames: boolean) => Promise<void> | undefined): void => {
        for (const rec of recorders) {
          const done = apply(rec, rec === framed);
          if (done) pending.push(done);
        }
      };
      let actors = ['a', 'b', 'c'];
      for (let step = 0; step < 240; step++) {
        const t = step * 1000;
        // The actor list changes now and then: one more, one fewer, another order (or stays the same
        // array, as a simulator's usually does).
        if (random.next() < 0.15) {
          const next = ids.filter(() => random.next() < 0.6);
          if (random.next() < 0.5) next.reverse();
          if (next.length) actors = next;
        }
        const x = actors.map(() => Math.round(random.uniform(-1e3, 1e3) * 1e3) / 1e3);
        const tag = actors.map((id) => (random.next() < 0.3 ? undefined : `${id}${step % 3}`));
        const v = actors.flatMap(() => (random.next() < 0.4 ? [NaN, NaN] : [random.int(9), -random.int(9)]));
        both((rec, asFrames) => {
          if (asFrames)
            return rec.appendFrame('state', {
              t,
              step,
              actors,
              columns: { x: Float64Array.from(x), tag, v: Float64Array.from(v) },
            });
          return rec.appendMany(
            actors.map((id, i) => {
              const sample: Sample = { t, step, x: x[i]! };
              if (tag[i] !== undefined) sample.tag = tag[i];
              if (!Number.isNaN(v[2 * i])) sample.v = [v[2 * i]!, v[2 * i + 1]!];
              return { stream: `${id}/state`, samples: [sample] };
            }),
          );
        });
        // A second kind of frame in turn, for a few actors.
        if (step % 2 === 0) {
          const some = actors.slice(0, 2);
          both((rec, asFrames) =>
            asFrames
              ? rec.appendFrame('pose', { t, step, actors: some, columns: { x: some.map(() => step) } })
              : rec.appendMany(some.map((id) => ({ stream: `${id}/pose`, samples: [{ t, step, x: step }] }))),
          );
        }
        // Between frames: a row of another kind, an actor leaving, a record switch, an actor appearing
        // without a sample, a commit.
        const r = random.next();
        const who = ids[random.int(ids.length)]!;
        if (r < 0.1)
          both((rec) => rec.appendMany([{ stream: `${who}/state`, samples: [{ t: t + 500, step, x: -1 }] }]));
        else if (r < 0.2) both((rec) => rec.leave(who, t + 600));
        else if (r < 0.25) {
          const record = random.next() < 0.5;
          for (const rec of recorders) await rec.declareActors([{ id: who, kind: 'vehicle', record }]);
        } else if (r < 0.3) both((rec) => rec.appear(who, t + 700));
        else if (r < 0.4) await Promise.all(recorders.map((rec) => rec.flush()));
      }
      await Promise.all(pending);
      await Promise.all(recorders.map((rec) => rec.end('completed')));
      for (const id of ids)
        for (const name of ['state', 'pose']) {
          const rows = await Promise.all(
            stores.map(async (store, k) => collect(streamSamples(store, recorders[k]!.id, `${id}/${name}`))),
          );
          assert.deepEqual(rows[0], rows[1], `seed ${seed}: ${id}/${name}`);
        }
      const presence = await Promise.all(
        stores.map(async (store, k) =>
          (await store.listActors(recorders[k]!.id)).map((a) => [a.id, a.presence]),
        ),
      );
      assert.deepEqual(presence[0], presence[1], `seed ${seed}: presence`);
      assert.ok((await collect(streamSamples(stores[0]!, framed.id, 'a/state'))).length > 0);
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});

describe('the frame buffer', () => {
  it('kept from one commit to the next, gives each commit only its own rows and columns', () => {
    const buffer = new FrameBuffer('fields');
    const ids = ['a/s', 'b/s'];
    /** Per stream: its times, x and tag of the frames at `frames` (indexes in the commit). */
    const rows = (taken: ReturnType<FrameBuffer['take']>, frames: number[]): unknown[] =>
      taken.map(({ stream, batch }) => [
        stream,
        batch.t.length,
        frames.map((f) => [
          batch.t[f],
          (batch.columns.x as Float64Array | undefined)?.[f],
          batch.columns.tag?.[f],
        ]),
        Object.keys(batch.columns),
      ]);
    // Commits of 40 frames (80 rows): large enough for the buffer to keep its arrays for the next.
    for (let f = 0; f < 40; f++)
      buffer.append(f, f, ids, { x: Float64Array.of(f, -f), tag: [`a${f}`, f % 2 ? undefined : `b${f}`] });
    assert.deepEqual(rows(buffer.take(), [0, 39]), [
      [
        'a/s',
        40,
        [
          [0, 0, 'a0'],
          [39, 39, 'a39'],
        ],
        ['x', 'tag'],
      ],
      [
        'b/s',
        40,
        [
          [0, -0, 'b0'],
          [39, -39, undefined],
        ],
        ['x', 'tag'],
      ],
    ]);
    // The next: x and tag in its last frame only. Nothing of the commit before shows.
    for (let f = 40; f < 80; f++)
      buffer.append(f, f, ids, f === 79 ? { x: Float64Array.of(7, 8), tag: ['z', undefined] } : {});
    const [a, b] = rows(buffer.take(), [0, 38, 39]);
    assert.deepEqual(a, [
      'a/s',
      40,
      [
        [40, NaN, undefined],
        [78, NaN, undefined],
        [79, 7, 'z'],
      ],
      ['x', 'tag'],
    ]);
    assert.deepEqual(b, [
      'b/s',
      40,
      [
        [40, NaN, undefined],
        [78, NaN, undefined],
        [79, 8, undefined],
      ],
      ['x', 'tag'],
    ]);
    // Two numbers a row (a vec), frames alike: each stream's pairs in frame order.
    for (let f = 0; f < 3; f++)
      buffer.append(200 + f, 200 + f, ids, { p: Float64Array.of(f, -f, 10 + f, -10 - f) });
    assert.deepEqual(
      buffer
        .take()
        .map(({ stream, batch }) => [stream, [...batch.t], [...(batch.columns.p as Float64Array)]]),
      [
        ['a/s', [200, 201, 202], [0, -0, 1, -1, 2, -2]],
        ['b/s', [200, 201, 202], [10, -10, 11, -11, 12, -12]],
      ],
    );
    // A burst, then a commit far smaller (the buffer lets the burst's memory go).
    for (let f = 0; f < 300; f++) buffer.append(100 + f, 100 + f, ids, { tag: [`a${f}`, `b${f}`] });
    assert.deepEqual(buffer.take()[1]!.batch.columns.tag!.slice(298), ['b298', 'b299']);
    buffer.append(1000, 1000, ['b/s'], { x: Float64Array.of(7) });
    assert.deepEqual(rows(buffer.take(), [0]), [['b/s', 1, [[1000, 7, undefined]], ['x']]]);
  });
});

describe('arenas between the threads', () => {
  it('an arena is packed into again once its request is answered, and carries nothing of the batches before', () => {
    const pool = new ArenaPool(2);
    const batch = (n: number, base: number, lane: string): ColumnBatch => ({
      t: Float64Array.from({ length: n }, (_, i) => base + i),
      step: Float64Array.from({ length: n }, (_, i) => i),
      columns: {
        x: Float64Array.from({ length: n }, (_, i) => base * 2 + i),
        lane: Array.from({ length: n }, (_, i) => (i % 3 === 0 ? undefined : `${lane}${i % 2}`)),
      },
    });
    const big = [
      { stream: 'a/state', batch: batch(50, 1000, 'L') },
      { stream: 'b/state', batch: batch(40, 5000, 'M') },
    ];
    const first = packBatches(big, pool);
    // Shared with the writer thread, not transferred: nothing is ever detached (see ArenaPool).
    assert.ok(first.arena.buffer instanceof SharedArrayBuffer);
    assert.deepEqual([...unpackBatches(first)], big);
    // Its request answered, the next commit, smaller, is packed into it.
    pool.give(first.arena);
    const small = [{ stream: 'c/state', batch: batch(7, 9000, 'N') }];
    const second = packBatches(small, pool);
    assert.equal(second.arena.buffer, first.arena.buffer);
    assert.deepEqual([...unpackBatches(second)], small);
    // Nothing given back: a new arena. Given back beyond the pool's size: the largest are kept.
    const third = packBatches(small, pool);
    assert.notEqual(third.arena.buffer, first.arena.buffer);
    pool.give(third.arena);
    pool.give(new Float64Array(new SharedArrayBuffer(8)));
    pool.give(first.arena);
    assert.equal(packBatches(big, pool).arena.buffer, first.arena.buffer);
  });
});

describe('declarations', () => {
  it('are known to the recorder at once and stored in order: streams and samples may follow without waiting', async () => {
    const store = await openStore(fresh());
    const rec = await RunRecorder.begin(store, { begin: 0 });
    // Nothing awaited between them: the stream names an actor whose declaration is not stored yet.
    const declared = Promise.all([
      rec.declareActors([{ id: 'car', kind: 'vehicle' }]),
      rec.declareStreams([stateStream('car')]),
    ]);
    const appended = rec.append('car/state', { t: 0, step: 0, x: 1, y: 2, yaw: 0 });
    await Promise.all([declared, appended]);
    assert.deepEqual(
      (await store.listActors(rec.id)).map((a) => a.id),
      ['car'],
    );
    assert.deepEqual(
      (await store.listStreams(rec.id)).map((s) => [s.id, s.samples]),
      [['car/state', 1]],
    );
    await assert.rejects(rec.declareStreams([stateStream('car')]), /already declared/);
    await assert.rejects(
      rec.declareStreams([stateStream('bus')]),
      /actor "bus" is not declared/,
      'a stream of an undeclared actor is still refused',
    );
    await rec.end('completed');
    await store.close();
  });

  it('made while the writer thread starts and after it: one order of actors, both refused for a missing run', async () => {
    const store = SqliteBackend.open(fresh());
    const writer = (store as unknown as { file: { writer: { ready: boolean } } }).file.writer;
    const rec = await RunRecorder.begin(store, { begin: 0 });
    // Right after begin the thread is still loading: these are written on the caller's connection.
    assert.equal(writer.ready, false, 'the thread is not ready yet');
    await rec.declareActors([
      { id: 'first', kind: 'vehicle' },
      { id: 'second', kind: 'vehicle' },
    ]);
    await rec.declareStreams([stateStream('first')]);
    await rec.append('first/state', { t: 0, step: 0, x: 1, y: 2, yaw: 0 });
    assert.equal(writer.ready, true, 'the thread answered a commit');
    // Now on the thread's connection: new actors come after the earlier ones, one redeclared keeps its place.
    await rec.declareActors([{ id: 'third', kind: 'vehicle' }]);
    await store.putActors(rec.id, [{ id: 'first', kind: 'ego', record: true, attributes: {}, options: {} }]);
    await rec.declareStreams([stateStream('third')]);
    await rec.append('third/state', { t: 10, step: 1, x: 1, y: 2, yaw: 0 });
    assert.deepEqual(
      (await store.listActors(rec.id)).map((a) => [a.id, a.kind]),
      [
        ['first', 'ego'],
        ['second', 'vehicle'],
        ['third', 'vehicle'],
      ],
    );
    assert.deepEqual(
      (await store.listStreams(rec.id)).map((s) => [s.id, s.samples]),
      [
        ['first/state', 1],
        ['third/state', 1],
      ],
    );
    await rec.end('completed');
    await assert.rejects(
      store.putActors(999, [{ id: 'x', kind: 'vehicle', record: true, attributes: {}, options: {} }]),
      /run 999 does not exist/,
    );
    const early = SqliteBackend.open(fresh());
    await assert.rejects(
      early.putStreams(999, [{ ...stateStream('x'), id: 'x/state', actor: 'x' } as never]),
      /run 999 does not exist/,
    );
    await early.close();
    await store.close();
  });

  it('one that cannot be stored fails the recording, as a failed commit does', async () => {
    const store = await openStore(fresh());
    const rec = await recordingOneCar(store, 0);
    await rec.append('car/state', { t: 0, step: 0, x: 1, y: 2, yaw: 0 });
    assert.equal(await store.deleteRun(rec.id), true);
    const declared = rec.declareActors([{ id: 'bus', kind: 'vehicle' }]);
    const appended = rec.append('car/state', { t: 10, step: 1, x: 1, y: 2, yaw: 0 });
    await assert.rejects(declared, /run \d+ does not exist/);
    await assert.rejects(appended, /run \d+ does not exist/);
    await store.close();
  });
});

describe('lists of actors and streams', () => {
  it("shared: the store's own, frozen, the same at every call; otherwise copies whose changes reach no later answer", async () => {
    const store = SqliteBackend.open(fresh());
    const rec = await recordingOneCar(store, 0);
    await rec.append('car/state', crashSample(0));
    await store.putPresence(rec.id, [{ actor: 'car', intervals: [{ from: 0, to: null }] }]);
    const actors = await store.listActors(rec.id, { shared: true });
    const streams = await store.listStreams(rec.id, { shared: true });
    assert.equal(await store.listActors(rec.id, { shared: true }), actors);
    assert.equal(await store.listStreams(rec.id, { shared: true }), streams);
    assert.throws(() => actors.push({ id: 'x', kind: 'vehicle' } as never), TypeError);
    assert.throws(() => (actors[0]!.kind = 'ghost'), TypeError);
    assert.throws(() => (actors[0]!.presence![0]!.to = 5), TypeError);
    assert.throws(() => (streams[0]!.samples = 99), TypeError);
    // A copy is the caller's to change.
    const [copy] = await store.listActors(rec.id);
    copy!.kind = 'ghost';
    copy!.presence![0]!.to = 5;
    const [stream] = await store.listStreams(rec.id);
    stream!.samples = 99;
    assert.deepEqual(await store.listActors(rec.id, { shared: true }), [
      {
        id: 'car',
        kind: 'vehicle',
        record: true,
        attributes: {},
        options: {},
        presence: [{ from: 0, to: null }],
      },
    ]);
    assert.equal((await store.listStreams(rec.id))[0]!.samples, 1);
    // What a later write changes is in the next shared list, not in the one handed out before.
    await rec.append('car/state', crashSample(1));
    assert.equal((await store.listStreams(rec.id, { shared: true }))[0]!.samples, 2);
    assert.equal(streams[0]!.samples, 1);
    await rec.end('completed');
    await store.close();
  });
});

describe('presence with samples', () => {
  it('is written in the same transaction as the samples it came with: both kept, or neither', async () => {
    const store = SqliteBackend.open(fresh());
    const rec = await recordingOneCar(store, 0);
    const batch = (t: number): ColumnAppend['batch'] => ({
      t: new Float64Array([t]),
      step: new Float64Array([t / 10]),
      columns: { x: new Float64Array([1]), y: new Float64Array([2]), yaw: new Float64Array([0]) },
    });
    await store.appendColumns(
      rec.id,
      [{ stream: 'car/state', batch: batch(0) }],
      [{ actor: 'car', intervals: [{ from: 0, to: 10 }] }],
    );
    const [car] = await store.listActors(rec.id);
    assert.deepEqual(car!.presence, [{ from: 0, to: 10 }]);
    // Presence of an actor the run does not have: the transaction fails whole, its samples with it.
    await assert.rejects(
      store.appendColumns(
        rec.id,
        [{ stream: 'car/state', batch: batch(20) }],
        [{ actor: 'ghost', intervals: [{ from: 0, to: null }] }],
      ),
      /run \d+ has no actor "ghost"/,
    );
    const [state] = await store.listStreams(rec.id);
    assert.equal(state!.samples, 1, 'the samples of the failed transaction are not kept');
    await rec.end('completed');
    await store.close();
  });
});

describe('group commit', () => {
  it('appends that arrive while a commit is being made durable share the next commit, and each resolves once durable', async () => {
    const store = SqliteBackend.open(fresh());
    const rec = await recordingOneCar(store, 0);
    // The store's first commit is held until the test lets it go: a commit as slow as a busy disk's.
    const commits: number[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const appendColumns = store.appendColumns.bind(store);
    store.appendColumns = async (run, appends, presence) => {
      commits.push(appends.reduce((n, a) => n + a.batch.t.length, 0));
      if (commits.length === 1) await held;
      return appendColumns(run, appends, presence);
    };
    const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    const durable: boolean[] = [];
    const appended: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      const index = i;
      appended.push(rec.append('car/state', crashSample(i)).then(() => void (durable[index] = true)));
      await turn(); // each append in a turn of its own, as batches read off a socket come
    }
    assert.deepEqual(
      commits,
      [1],
      'the nine later appends wait for the first commit, none is committed alone',
    );
    assert.deepEqual(durable, [], 'nothing resolves before its commit is durable');
    release();
    await Promise.all(appended);
    assert.deepEqual(commits, [1, 9], 'the nine that waited are one commit');
    await rec.end('completed');
    assert.deepEqual(
      await collect(streamSamples(store, rec.id, 'car/state')),
      Array.from({ length: 10 }, (_, i) => crashSample(i)),
    );
    await store.close();
  });
});

describe('transient reads', () => {
  it("give what cached reads give, and keep nothing in the store's caches (a writer going through a run)", async () => {
    const path = fresh();
    const writer = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    await completedCarRun(writer, 1000);
    await writer.close();
    // What the store keeps: opened chunks and chunks decoded whole (white-box: the cache is private).
    const kept = (store: SqliteBackend): number => {
      const cache = (
        store as unknown as {
          file: { cache: { chunks: LruCache<number, unknown>; wholes: LruCache<string, unknown> } };
        }
      ).file.cache;
      return cache.chunks.size + cache.wholes.size;
    };
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const read = async (transient: boolean): Promise<{ all: ColumnBatch[]; windows: ColumnBatch[] }> => {
      const all: ColumnBatch[] = [];
      for await (const batch of store.readColumns({ run: 1, stream: 'car/state', transient }))
        all.push(batch);
      // Windows that cut chunks (of about 200 samples, at 10 ms a sample), and one past the end.
      const windows: ColumnBatch[] = [];
      for (const [from, to] of [
        [0, 1_234_567],
        [1_234_567, 5_555_555],
        [3_000_000, 99_000_000],
      ] as const)
        windows.push(await store.readColumnsJoined({ run: 1, stream: 'car/state', from, to, transient }));
      return { all, windows };
    };
    const transient = await read(true);
    assert.equal(kept(store), 0, 'nothing kept');
    const cached = await read(false);
    assert.ok(kept(store) > 0, 'a cached read keeps its chunks');
    assert.deepEqual(transient, cached);
    assert.equal(
      transient.all.reduce((n, b) => n + b.t.length, 0),
      1000,
    );
    // With the cache full, a transient read uses it and still adds nothing.
    const before = kept(store);
    assert.deepEqual(await read(true), cached);
    assert.equal(kept(store), before);
    await store.close();
  });
});

describe('windows of chunks of many blocks', () => {
  it('read the blocks a window touches, not whole chunks, and give what the whole chunks give', async () => {
    const path = fresh();
    const writer = SqliteBackend.open(path, { chunkSamples: 1000, blockSamples: 64 });
    const rec = await recordingOneCar(writer, 0);
    // Time stands still in threes, so blocks (of 64 samples) begin and end at times the block before
    // or after has too; appended in one batch, so the chunks are sealed blocks of 64.
    const samples: Sample[] = Array.from({ length: 3000 }, (_, i) => ({
      ...crashSample(i),
      t: 1_000_000 + Math.floor(i / 3) * 10_000,
    }));
    await rec.appendBatch('car/state', samples);
    await rec.end('completed');
    await writer.close();
    const cacheOf = (store: SqliteBackend) =>
      (
        store as unknown as {
          file: { cache: { blocks: LruCache<unknown, unknown>; wholes: LruCache<unknown, unknown> } };
        }
      ).file.cache;
    const fields = ['x', 'speed'];
    const read = async (store: SqliteBackend, from: number, to: number) => {
      const rows: [number, number, number][] = [];
      for await (const batch of store.readColumns({ run: 1, stream: 'car/state', from, to, fields })) {
        const x = batch.columns.x as Float64Array;
        const speed = batch.columns.speed as Float64Array;
        for (let i = 0; i < batch.t.length; i++) rows.push([batch.t[i]!, x[i]!, speed[i]!]);
      }
      return rows;
    };
    const expected = (from: number, to: number) =>
      samples.filter((s) => s.t >= from && s.t <= to).map((s) => [s.t, s.x as number, s.speed as number]);
    const random = new Random(53);
    const windows: [number, number][] = [
      // One block's times, across a block boundary (sample 64's time is sample 63's), across a chunk's.
      [1_010_000, 1_050_000],
      [1_000_000 + 21 * 10_000, 1_000_000 + 22 * 10_000],
      [1_000_000 + 330 * 10_000, 1_000_000 + 336 * 10_000],
      ...Array.from({ length: 40 }, (): [number, number] => {
        const from = 1_000_000 + random.int(1000) * 10_000 - random.int(2) * 5_000;
        return [from, from + random.int(300) * 10_000];
      }),
    ];
    const blockWise = SqliteBackend.open(path, { readonly: true });
    for (const [from, to] of windows)
      assert.deepEqual(await read(blockWise, from, to), expected(from, to), `${from}..${to}`);
    // A short window decodes only its blocks: one or two, and no chunk whole.
    const fresh1 = SqliteBackend.open(path, { readonly: true });
    await read(fresh1, 1_000_000 + 100 * 10_000, 1_000_000 + 105 * 10_000);
    assert.equal(cacheOf(fresh1).wholes.size, 0, 'no chunk decoded whole');
    assert.ok(cacheOf(fresh1).blocks.size >= 1 && cacheOf(fresh1).blocks.size <= 2);
    // Chunks decoded whole first (a window over all of them), the same windows read from them.
    const whole = SqliteBackend.open(path, { readonly: true });
    await read(whole, 0, Number.MAX_SAFE_INTEGER);
    assert.ok(cacheOf(whole).wholes.size > 0);
    for (const [from, to] of windows)
      assert.deepEqual(await read(whole, from, to), expected(from, to), `${from}..${to}, whole chunks`);
    for (const store of [blockWise, fresh1, whole]) await store.close();
  });
});

/** A stream's chunks as stored, in time order: their samples and whether each is sealed. */
function streamChunks(
  db: Database.Database,
  run: number,
  stream: string,
): { count: number; sealed: number }[] {
  return db
    .prepare(
      'SELECT c.count, c.sealed FROM chunks c JOIN streams s ON s.key = c.stream_key WHERE s.run_id = ? AND s.id = ? ORDER BY c.begin_us',
    )
    .all(run, stream) as never;
}

describe('sealing', () => {
  it('small commits end as sealed chunks of about chunkSamples, and a crashed run is sealed when closed', async () => {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    await completedCarRun(store, 1000);
    const dead = await RunRecorder.begin(
      store,
      { begin: 0 },
      { writer: { host: 'h', pid: 1, processStart: 'x' } },
    );
    await dead.declareActor({ id: 'car', kind: 'vehicle' });
    await dead.declareStream(stateStream('car'));
    for (let i = 0; i < 150; i++) await dead.append('car/state', crashSample(i));
    await store.close();
    const db = new Database(path, { readonly: true });
    const chunks = (run: number): { count: number; sealed: number }[] =>
      db
        .prepare(
          'SELECT c.count, c.sealed FROM chunks c JOIN streams s ON s.key = c.stream_key WHERE s.run_id = ? ORDER BY c.begin_us',
        )
        .all(run) as never;
    assert.ok(chunks(1).every((c) => c.sealed === 1));
    // The writer thread seals between commits: a chunk may take in a commit that came meanwhile.
    const counts = chunks(1).map((c) => c.count);
    assert.equal(
      counts.reduce((x, y) => x + y, 0),
      1000,
    );
    assert.ok(
      counts.every((c) => c >= 150 && c <= 300),
      `chunks of about 200 samples: ${counts.join(', ')}`,
    );
    assert.equal(chunks(2).length, 150, 'one tail chunk per commit while the run records');
    db.close();
    const reopened = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    assert.deepEqual(await reopened.closeAbandonedRuns(() => false), [2]);
    await reopened.close();
    const after = new Database(path, { readonly: true });
    const sealed = after
      .prepare('SELECT count, sealed FROM chunks c JOIN streams s ON s.key = c.stream_key WHERE s.run_id = 2')
      .all() as { count: number; sealed: number }[];
    after.close();
    assert.deepEqual(sealed, [{ count: 150, sealed: 1 }], 'recovery seals like a normal end');
    const store2 = await openStore(path);
    const samples = await collect(streamSamples(store2, 2, 'car/state'));
    assert.deepEqual(
      samples,
      Array.from({ length: 150 }, (_, i) => crashSample(i)),
    );
    await store2.close();
  });

  it("an actor's streams are sealed once it leaves, while the run records, and it may come back", async () => {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const rec = await RunRecorder.begin(store, { begin: 0 });
    await rec.declareActors([
      { id: 'a', kind: 'vehicle' },
      { id: 'b', kind: 'vehicle' },
    ]);
    await rec.declareStreams([stateStream('a'), stateStream('b')]);
    const sample = (i: number): Sample => ({ t: i * 100_000, step: i, x: i, y: 0, yaw: 0 });
    for (let i = 0; i < 50; i++) {
      await rec.append('a/state', sample(i));
      await rec.append('b/state', sample(i));
    }
    await rec.leave('a', 5_000_000);
    const db = new Database(path, { readonly: true });
    const chunks = (stream: string): { count: number; sealed: number }[] => streamChunks(db, rec.id, stream);
    // b goes on; between its commits the writer thread seals what a left, far short of a chunk's 200.
    let i = 50;
    const deadline = Date.now() + 20_000;
    while (chunks('a/state').some((c) => c.sealed === 0) && Date.now() < deadline)
      await rec.append('b/state', sample(i++));
    assert.deepEqual(chunks('a/state'), [{ count: 50, sealed: 1 }], 'a sealed once it left');
    assert.ok(
      chunks('b/state').some((c) => c.sealed === 0),
      'b, still there and short of a chunk, still in its tail',
    );
    // a comes back: a tail again, sealed with the rest at the run's end.
    for (let k = i; k < i + 10; k++) await rec.append('a/state', sample(k));
    await rec.end('completed');
    const steps = (await collect(streamSamples(store, rec.id, 'a/state'))).map((x) => x.step);
    assert.deepEqual(steps, [
      ...Array.from({ length: 50 }, (_, k) => k),
      ...Array.from({ length: 10 }, (_, k) => i + k),
    ]);
    assert.ok(chunks('a/state').every((c) => c.sealed === 1));
    assert.equal((await store.listActors(rec.id)).find((x) => x.id === 'a')?.presence?.length, 2);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    db.close();
    await store.close();
  });

  it('an actor whose presence is given ahead (as importers do) is sealed once the samples reach its end', async () => {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const rec = await RunRecorder.begin(store, { begin: 0 });
    await rec.declareActors([
      { id: 'a', kind: 'vehicle' },
      { id: 'b', kind: 'vehicle' },
    ]);
    await rec.declareStreams([stateStream('a'), stateStream('b')]);
    // a is known to leave at 5 s; the importer says so before any sample.
    await rec.setPresence('a', [{ from: 0, to: 5_000_000 }]);
    const sample = (i: number): Sample => ({ t: i * 100_000, step: i, x: i, y: 0, yaw: 0 });
    const db = new Database(path, { readonly: true });
    const chunks = (stream: string): { count: number; sealed: number }[] => streamChunks(db, rec.id, stream);
    for (let i = 0; i < 40; i++) {
      await rec.append('a/state', sample(i));
      await rec.append('b/state', sample(i));
    }
    // The samples up to 3.9 s: a, leaving at 5 s, still records (a seal now would cut it short).
    assert.ok(
      chunks('a/state').every((c) => c.sealed === 0),
      `not sealed before the samples reach its end: ${JSON.stringify(chunks('a/state'))}`,
    );
    let i = 40;
    const deadline = Date.now() + 20_000;
    while (chunks('a/state').some((c) => c.sealed === 0) && Date.now() < deadline)
      await rec.append('b/state', sample(i++));
    assert.deepEqual(chunks('a/state'), [{ count: 40, sealed: 1 }], 'sealed whole, in one chunk');
    await rec.end('completed');
    assert.equal((await collect(streamSamples(store, rec.id, 'a/state'))).length, 40);
    db.close();
    await store.close();
  });

  it('SIGKILL while the writer thread seals loses no acknowledged sample (15 seeded kills)', async (t) => {
    let seed = 20261123;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let sawSealed = 0;
    for (let round = 0; round < 15; round++) {
      const location = fresh();
      const killAfterAcks = 5 + Math.floor(random() * 60);
      const batch = 1 + Math.floor(random() * 30);
      const { runId, acked, acks } = await killWriterAfter(location, {
        batch,
        killAfterAcks,
        chunkSamples: 48,
      });
      const db = new Database(location, { readonly: true });
      sawSealed += (db.prepare('SELECT COUNT(*) AS n FROM chunks WHERE sealed = 1').get() as { n: number }).n;
      db.close();
      const store = await openStore(location);
      try {
        assert.equal((await store.getRun(runId))?.endReason, 'interrupted');
        const samples = await collect(streamSamples(store, runId, 'car/state'));
        assert.ok(samples.length >= acked, `round ${round}: ${samples.length} stored, ${acked} acknowledged`);
        for (let i = 0; i < samples.length; i++)
          assert.deepEqual(samples[i], crashSample(i), `round ${round} sample ${i}`);
        assert.deepEqual((await store.checkIntegrity()).problems, []);
      } finally {
        await store.close();
      }
      t.diagnostic(`round ${round}: killed after ${acks} acks of ${batch} (${acked} samples)`);
    }
    assert.ok(sawSealed > 0, 'the writer thread was sealing chunks when the writers were killed');
  });

  it('reading works when closing abandoned runs cannot write (a read-only store)', async () => {
    const path = fresh();
    const store = SqliteBackend.open(path);
    const rec = await RunRecorder.begin(
      store,
      { begin: 0 },
      { writer: { host: 'h', pid: 1, processStart: 'x' } },
    );
    await rec.declareActor({ id: 'car', kind: 'vehicle' });
    await rec.declareStream(stateStream('car'));
    await rec.appendBatch('car/state', [crashSample(0), crashSample(1)]);
    await store.close();
    const readonly = SqliteBackend.open(path, { readonly: true });
    assert.deepEqual(await readonly.closeAbandonedRuns(() => false), []);
    assert.equal((await collect(streamSamples(readonly, rec.id, 'car/state'))).length, 2);
    await readonly.close();
  });
});

describe('reading scenes', () => {
  /** Two actors, 1,000 steps at 100 Hz, committed every 50 steps (blocks of 50) into chunks of about 200. */
  async function recordTwoActors(): Promise<string> {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const rec = await RunRecorder.begin(store, { begin: 0 });
    await rec.declareActors(['a', 'b'].map((id) => ({ id, kind: 'vehicle' })));
    await rec.declareStreams(['a', 'b'].map((id) => stateStream(id)));
    // Not awaited, as a simulator appends: end reports a failure.
    for (let step = 0; step < 1000; step++) {
      void rec.appendFrame('state', {
        t: step * 10_000,
        step,
        actors: ['a', 'b'],
        // Not a line in time, so that a wrong row after a block end cannot interpolate to the right x.
        columns: { x: [step * step, -step], y: [0.5, 1.5], yaw: [0, 0] },
      });
      if ((step + 1) % 50 === 0) await rec.flush();
    }
    await rec.end('completed');
    await store.close();
    return path;
  }

  /**
   * Every block the real decoder decodes while `work` runs, by chunk, and as `row of B` each row of
   * block B decoded alone (a chunk's first look).
   */
  async function decodesDuring(work: () => Promise<void>): Promise<Map<ParsedChunk, (number | string)[]>> {
    const seen = new Map<ParsedChunk, (number | string)[]>();
    const note = (chunk: ParsedChunk, what: number | string): void => {
      let blocks = seen.get(chunk);
      if (!blocks) seen.set(chunk, (blocks = []));
      blocks.push(what);
    };
    // eslint-disable-next-line @typescript-eslint/unbound-method -- the real decoder, called below with its chunk as this
    const decode = ParsedChunk.prototype.decodeBlock;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- as decode
    const look = ParsedChunk.prototype.sampleAtOrBefore;
    ParsedChunk.prototype.decodeBlock = function (this: ParsedChunk, ...args) {
      note(this, args[0]);
      return decode.apply(this, args);
    };
    ParsedChunk.prototype.sampleAtOrBefore = function (this: ParsedChunk, ...args) {
      note(this, `row of ${args[0]}`);
      return look.apply(this, args);
    };
    try {
      await work();
    } finally {
      ParsedChunk.prototype.decodeBlock = decode;
      ParsedChunk.prototype.sampleAtOrBefore = look;
    }
    return seen;
  }

  it('a scene without interpolation in a fresh store decodes one row of the block holding t, even its last row, and no block', async () => {
    const path = await recordTwoActors();
    const probe = await openStore(path);
    // The last row of a block: the row after t is in the next block.
    const decoded = await decodesDuring(async () => void (await sceneAt(probe, 1, { t: 0 })));
    const [chunk] = [...decoded.keys()];
    const lastRowOfFirstBlock = chunk!.blocks.end(0);
    await probe.close();

    const store = await openStore(path);
    let scene: Awaited<ReturnType<typeof sceneAt>> | undefined;
    const plain = await decodesDuring(async () => {
      scene = await sceneAt(store, 1, { t: lastRowOfFirstBlock });
    });
    assert.deepEqual(
      [...plain.values()],
      [['row of 0'], ['row of 0']],
      'one row of each actor, no block decoded, nor the next one',
    );
    const step = lastRowOfFirstBlock / 10_000;
    assert.deepEqual(scene!.actors, [
      { id: 'a', kind: 'vehicle', t: lastRowOfFirstBlock, x: step * step, y: 0.5, yaw: 0 },
      { id: 'b', kind: 'vehicle', t: lastRowOfFirstBlock, x: -step, y: 1.5, yaw: 0 },
    ]);
    // Plain objects to every reader, whatever builds them.
    assert.ok(scene!.actors.every((a) => Object.getPrototypeOf(a) === Object.prototype));
    // Interpolating needs the row after, the next block's first: its second block read, the chunk is
    // decoded whole, and the row after is found in it.
    let between: Awaited<ReturnType<typeof sceneAt>> | undefined;
    const interpolated = await decodesDuring(async () => {
      between = await sceneAt(store, 1, { t: lastRowOfFirstBlock + 5_000, interpolate: true });
    });
    assert.ok([...interpolated.values()].every((blocks) => blocks.length >= 1));
    assert.deepEqual(
      between!.actors.map((a) => a.x),
      [(step * step + (step + 1) * (step + 1)) / 2, -step - 0.5],
    );
    await store.close();
  });

  it("a run's first scene finds each actor's chunk in SQLite's index, not the run's chunk index, and reads what the index gives, at any moment", async () => {
    const path = await recordTwoActors();
    const db = new Database(path, { readonly: true });
    const begins = db
      .prepare('SELECT DISTINCT begin_us FROM chunks ORDER BY begin_us')
      .pluck()
      .all() as number[];
    db.close();
    assert.ok(begins.length >= 5, `chunks of several begins: ${begins.join(', ')}`);
    // Before the run, at each chunk's begin and either side of it (the row before in one chunk, the row
    // after in the next), inside a chunk, at the last row and after the run.
    const moments = [
      -1,
      ...begins.flatMap((b) => [b - 1, b, b + 1, b + 5_000]),
      9_990_000,
      9_995_000,
      20_000_000,
    ];
    // A store this small reads its runs' chunk indexes when it opens.
    const indexed = await openStore(path);
    for (const interpolate of [false, true])
      for (const t of moments) {
        const store = SqliteBackend.open(path, { preloadIndexChunks: 0 });
        let scene: Awaited<ReturnType<typeof sceneAt>> | undefined;
        const first = await statementsDuring(store, async () => {
          scene = await sceneAt(store, 1, { t, interpolate });
        });
        const at = `t=${t}${interpolate ? ', interpolated' : ''}`;
        assert.ok(first.some(isChunkLookUp) && !first.some(isChunkListRead), `${at}: ${first.join('; ')}`);
        assert.deepEqual(scene, await sceneAt(indexed, 1, { t, interpolate }), at);
        // The run's next read reads its actors' chunk lists; the reads after it look nothing up.
        const second = await statementsDuring(store, async () => void (await sceneAt(store, 1, { t })));
        assert.equal(second.filter(isChunkListRead).length, 2, `${at}: ${second.join('; ')}`);
        assert.ok(!second.some(isChunkLookUp), `${at}: ${second.join('; ')}`);
        const third = await statementsDuring(
          store,
          async () => void (await sceneAt(store, 1, { t: t + 10_000 })),
        );
        assert.ok(!third.some(isChunkListRead) && !third.some(isChunkLookUp), `${at}: ${third.join('; ')}`);
        await store.close();
      }
    await indexed.close();
    // A trajectory reads the chunk list of its actor alone.
    const store = SqliteBackend.open(path, { preloadIndexChunks: 0 });
    const sql = await statementsDuring(
      store,
      async () => void (await trajectoryColumns(store, 1, { actor: 'b' })),
    );
    assert.equal(sql.filter(isChunkListRead).length, 1, sql.join('; '));
    assert.ok(!sql.some((q) => q.includes('JOIN streams')), sql.join('; '));
    await store.close();
  });

  it("a run's first scene at a time that several chunks begin at (one time's samples filling chunks) reads the chunk the chunk list gives", async () => {
    const path = fresh();
    const writer = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const rec = await RunRecorder.begin(writer, { begin: 0 });
    await rec.declareActors([{ id: 'a', kind: 'vehicle' }]);
    await rec.declareStreams([stateStream('a')]);
    // 100 samples 10 ms apart, 500 at 1 s (x counts the samples), then 99 more.
    const times = [
      ...Array.from({ length: 100 }, (_, i) => i * 10_000),
      ...Array.from({ length: 500 }, () => 1_000_000),
      ...Array.from({ length: 99 }, (_, i) => 1_010_000 + i * 10_000),
    ];
    for (const [step, t] of times.entries()) {
      void rec.appendFrame('state', { t, step, actors: ['a'], columns: { x: [step], y: [0], yaw: [0] } });
      if ((step + 1) % 50 === 0) await rec.flush();
    }
    await rec.end('completed');
    await writer.close();
    const db = new Database(path, { readonly: true });
    const sharing = db
      .prepare('SELECT COUNT(*) FROM chunks WHERE begin_us = 1000000')
      .pluck()
      .get() as number;
    db.close();
    assert.ok(sharing >= 2, `chunks that begin at 1 s: ${sharing}`);
    const indexed = await openStore(path);
    for (const t of [1_000_000, 1_000_001, 1_009_999, 1_010_000]) {
      const store = SqliteBackend.open(path, { preloadIndexChunks: 0 });
      let scene: Awaited<ReturnType<typeof sceneAt>> | undefined;
      const sql = await statementsDuring(store, async () => {
        scene = await sceneAt(store, 1, { t, includeDeparted: true });
      });
      assert.ok(sql.some(isChunkLookUp), `t=${t}: looked up (${sql.join('; ')})`);
      // The last sample at or before t: at 1 s, the last of the 500.
      assert.equal(scene!.actors[0]?.x, t < 1_010_000 ? 599 : 600, `t=${t}`);
      assert.deepEqual(scene, await sceneAt(indexed, 1, { t, includeDeparted: true }), `t=${t}`);
      await store.close();
    }
    await indexed.close();
  });

  it('a chunk read at a second block is decoded whole, with the chunks of its stream touched once and their neighbours, and later chunks whole at their first touch', async () => {
    const path = await recordTwoActors();
    const store = await openStore(path);
    const sorted = (blocks: (number | string)[]): number[] => blocks.map(Number).sort((x, y) => x - y);
    // First touches of two chunk windows: one row of each actor each time (a first look), no block.
    const first = await decodesDuring(async () => void (await sceneAt(store, 1, { t: 15_000 })));
    assert.deepEqual([...first.values()], [['row of 0'], ['row of 0']]);
    const far = await decodesDuring(async () => void (await sceneAt(store, 1, { t: 8_000_000 })));
    assert.deepEqual(
      [...far.values()].map((blocks) => blocks.map((b) => typeof b)),
      [['string'], ['string']],
    );
    // The same place again: the block holding it is decoded now (and kept), as a first touch was before.
    const again1 = await decodesDuring(async () => void (await sceneAt(store, 1, { t: 8_000_000 + 10_000 })));
    assert.deepEqual(
      [...again1.values()].map((blocks) => blocks.map((b) => typeof b)),
      [['number'], ['number']],
    );
    const [chunkA] = [...first.keys()];
    assert.ok(chunkA!.blocks.length > 2, `chunks of several blocks (${chunkA!.blocks.length})`);
    // A second block of the first chunks: they are decoded whole, once, and so are the far ones, read
    // once so far, and the chunks next to either (each actor's five chunks of 2 s: the first and the
    // last touched, the second and the fourth beside them), in the same burst.
    const lastBlock = chunkA!.blocks.length - 1;
    const second = await decodesDuring(
      async () => void (await sceneAt(store, 1, { t: chunkA!.blocks.begin(lastBlock) })),
    );
    assert.equal(second.size, 8, 'both actors: the first chunks, the far ones, and their neighbours');
    for (const [chunk, blocks] of second)
      assert.deepEqual(
        sorted(blocks),
        Array.from({ length: chunk.blocks.length }, (_, i) => i),
      );
    const again = await decodesDuring(async () => {
      await sceneAt(store, 1, { t: chunkA!.blocks.begin(1) + 10_000 });
      await sceneAt(store, 1, { t: 8_000_000 + 300_000 });
    });
    assert.equal(again.size, 0, 'the chunks are cached whole');
    const beside = await decodesDuring(async () => void (await sceneAt(store, 1, { t: 2_500_000 })));
    assert.equal(beside.size, 0, 'the chunks next to those touched were read ahead');
    // Both streams are being browsed: a chunk never touched (the middle one) is decoded whole at its
    // first touch.
    const later = await decodesDuring(async () => void (await sceneAt(store, 1, { t: 5_000_000 })));
    assert.equal(later.size, 2);
    for (const [chunk, blocks] of later)
      assert.deepEqual(
        sorted(blocks),
        Array.from({ length: chunk.blocks.length }, (_, i) => i),
      );
    await store.close();

    // A store that has only looked at one row of a stream looks at one row at a first touch elsewhere.
    const other = await openStore(path);
    await sceneAt(other, 1, { t: 15_000 });
    const alone = await decodesDuring(async () => void (await sceneAt(other, 1, { t: 8_000_000 })));
    assert.deepEqual(
      [...alone.values()].map((blocks) => blocks.map((b) => typeof b)),
      [['string'], ['string']],
    );
    await other.close();
  });

  it('a scene read without read-ahead (as the server answers one) decodes only the blocks holding its moment, whatever came before', async () => {
    const path = await recordTwoActors();
    const store = await openStore(path);
    const blocksOf = (decoded: Map<ParsedChunk, (number | string)[]>): (number | string)[][] => [
      ...decoded.values(),
    ];
    const point = (t: number, interpolate = false) =>
      decodesDuring(async () => void (await sceneAt(store, 1, { t, interpolate, readAhead: false })));
    // Its first touch decodes the block (kept for the next question), not a row alone.
    const first = await point(15_000);
    assert.deepEqual(blocksOf(first), [[0], [0]]);
    const [chunkA] = [...first.keys()];
    const lastBlock = chunkA!.blocks.length - 1;
    // A second and a third block of the same chunks, interpolated too: each block alone, no chunk whole.
    const second = await point(chunkA!.blocks.begin(lastBlock));
    assert.deepEqual(blocksOf(second), [[lastBlock], [lastBlock]]);
    const third = await point(chunkA!.blocks.begin(1) + 5_000, true);
    assert.deepEqual(
      blocksOf(third).map((blocks) => [...new Set(blocks)].sort()),
      [[1], [1]],
    );
    // Asked again: nothing decoded, the blocks were kept.
    assert.equal((await point(15_000 + 10_000)).size, 0);
    // They were no touch for a reader with read-ahead (the default): its first look at another block
    // is a row alone, as at any chunk it had not touched.
    const look = await decodesDuring(
      async () => void (await sceneAt(store, 1, { t: chunkA!.blocks.begin(2) + 5_000 })),
    );
    assert.deepEqual(blocksOf(look), [['row of 2'], ['row of 2']]);
    // The scenes are the same either way.
    for (const t of [15_000, chunkA!.blocks.begin(lastBlock), 8_000_000])
      assert.deepEqual(
        await sceneAt(store, 1, { t, interpolate: true, readAhead: false }),
        await sceneAt(store, 1, { t, interpolate: true }),
      );
    await store.close();
  });
});

describe('caches of decoded data', () => {
  it('are bounded by the bytes they hold: entries weighed, the least recently used out first', () => {
    const cache = new LruCache<string, number[]>(25, (v) => v.length);
    cache.set('a', new Array(10).fill(0));
    cache.set('b', new Array(10).fill(0));
    assert.equal(cache.weight, 20);
    cache.get('a'); // used: b goes first
    cache.set('c', new Array(10).fill(0));
    assert.deepEqual(
      [cache.get('a') !== undefined, cache.get('b') !== undefined, cache.get('c') !== undefined],
      [true, false, true],
    );
    assert.equal(cache.weight, 20);
    cache.set('a', new Array(3).fill(0)); // replaced: its new weight counts
    assert.equal(cache.weight, 13);
    cache.delete('c');
    assert.equal(cache.weight, 3);
    cache.set('huge', new Array(40).fill(0)); // heavier than the whole capacity: kept, alone
    assert.equal(cache.size, 1);
    assert.equal(cache.weight, 40);
  });

  it('a chunk kept decoded whole keeps no copy of its stored bytes; its blocks are fetched again when read', async () => {
    const path = fresh();
    const writer = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    await completedCarRun(writer, 1000);
    await writer.close();
    const store = SqliteBackend.open(path, { readonly: true });
    // White-box: the cache's opened chunks and what each holds of its stored bytes.
    const cache = (store as unknown as { file: { cache: { chunks: LruCache<number, ParsedChunk> } } }).file
      .cache;
    const held = (view: ParsedChunk): unknown[] => {
      const inside = view as unknown as { whole: unknown; source: { blocks: unknown } };
      return [inside.whole, inside.source.blocks];
    };
    // Scenes that come back to a chunk: it is decoded whole, with its neighbours (ChunkCache.block).
    for (const t of [15_000, 25_000, 1_500_000, 2_500_000]) await sceneAt(store, 1, { t });
    const cached = cache as unknown as {
      chunks: { map: Map<number, { value: ParsedChunk }> };
      cachedWhole(id: number): unknown;
    };
    const views = [...cached.chunks.map.entries()].filter(([id]) => cached.cachedWhole(id) !== undefined);
    assert.ok(views.length >= 2, `${views.length} chunks decoded whole`);
    for (const [, { value }] of views) assert.deepEqual(held(value), [null, null]);
    // A block read from one of them (as a fields-only read does) fetches its bytes again.
    const view = views[0]![1].value;
    assert.equal(view.decodeBlock(1).t.length, view.blocks.rows(1));
    await store.close();
  });

  it('a store whose cache holds less than a chunk reads every scene and trajectory right', async () => {
    const path = fresh();
    const writing = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const rec = await recordingOneCar(writing, 0);
    // Not awaited, as a simulator appends: end reports a failure.
    for (let step = 0; step < 1000; step++) {
      void rec.appendFrame('state', {
        t: step * 10_000,
        step,
        actors: ['car'],
        columns: { x: [step * step], y: [1], yaw: [0] },
      });
      if ((step + 1) % 50 === 0) await rec.flush();
    }
    await rec.end('completed');
    await writing.close();
    const store = SqliteBackend.open(path, { cacheBytes: 4096, readonly: true });
    for (const step of [10, 990, 500, 11, 49, 50, 51, 700, 10, 199, 200, 201, 999, 0]) {
      const scene = await sceneAt(store, 1, { t: step * 10_000 + 5_000, interpolate: true });
      const expected = step === 999 ? step * step : (step * step + (step + 1) * (step + 1)) / 2;
      assert.equal(scene.actors[0]!.x, expected, `x between steps ${step} and ${step + 1}`);
    }
    const trajectory = await trajectoryColumns(store, 1, { actor: 'car' });
    assert.deepEqual(
      Array.from(trajectory.columns.x as Float64Array),
      Array.from({ length: 1000 }, (_, step) => step * step),
    );
    await store.close();
  });
});

describe('runs that would not fit decoded (an hour of a town)', () => {
  /** What the store's cache holds (white-box: it is private). */
  interface CacheInside {
    chunks: LruCache<number, ParsedChunk>;
    blocks: LruCache<unknown, ColumnBatch>;
    wholes: LruCache<unknown, ColumnBatch>;
  }
  const cacheOf = (store: SqliteBackend): CacheInside =>
    (store as unknown as { file: { cache: CacheInside } }).file.cache;

  /** A store of `runs` runs of crashSample's car at 100 Hz, `chunks` sealed chunks of 4 blocks each. */
  async function carRuns(runs: number, chunks: number): Promise<string> {
    const path = fresh();
    const writer = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 50 });
    for (let r = 0; r < runs; r++) {
      const rec = await recordingOneCar(writer, 0);
      for (let from = 0; from < chunks * 200; from += 1000)
        await rec.appendBatch(
          'car/state',
          Array.from({ length: 1000 }, (_, i) => crashSample(from + i)),
        );
      await rec.end('completed');
    }
    await writer.close();
    return path;
  }

  /** Scenes of a run at moments drawn in its first `within` samples, some asked twice, as a reader going about it does. */
  async function scenesAcross(store: SqliteBackend, run: number, within: number, seed: number) {
    const random = new Random(seed);
    const moments = Array.from({ length: 120 }, () => 1_000_000 + random.int(within) * 10_000 + 5_000);
    const out: unknown[] = [];
    for (const t of [...moments, ...moments.slice(0, 30)]) out.push(await sceneAt(store, run, { t }));
    return out;
  }

  /** A chunk's weight decoded whole, from a store that fits the run. */
  async function chunkWeightOf(path: string): Promise<number> {
    const roomy = SqliteBackend.open(path, { readonly: true });
    await scenesAcross(roomy, 1, 2000, 1);
    const { wholes } = cacheOf(roomy);
    assert.ok(wholes.size >= 5, `a store that fits the run reads chunks on (${wholes.size})`);
    await roomy.close();
    return wholes.weight / wholes.size;
  }

  it('scenes at moments across a run that would not fit read rows and blocks, never whole chunks, and give what a store that fits gives', async () => {
    const path = await carRuns(1, 100);
    const roomy = SqliteBackend.open(path, { readonly: true });
    const expected = await scenesAcross(roomy, 1, 16_000, 7);
    await roomy.close();
    const chunkWeight = await chunkWeightOf(path);

    // Room for twenty chunks decoded whole: a fifth of the run.
    const tight = SqliteBackend.open(path, { readonly: true, cacheBytes: 20 * chunkWeight });
    assert.deepEqual(await scenesAcross(tight, 1, 16_000, 7), expected);
    const cache = cacheOf(tight);
    assert.equal(cache.wholes.size, 0, 'no chunk read on: it would only fill the room in one burst');
    // A moment in a chunk no scene read: its row decoded alone, nothing kept; asked again, its block
    // is decoded and kept.
    const t = 1_000_000 + 19_500 * 10_000 + 5_000;
    const kept = () => [cache.wholes.size, cache.blocks.size];
    const before = kept();
    const first = await sceneAt(tight, 1, { t });
    assert.deepEqual(kept(), before, 'the first look keeps nothing');
    assert.deepEqual(await sceneAt(tight, 1, { t }), first);
    assert.deepEqual(kept(), [before[0], before[1]! + 1], 'the second keeps the block');
    assert.equal(first.actors[0]!.x, crashSample(19_500).x);
    // Opened chunks are weighed by their stored bytes (a count held as many 64 KB chunks as the
    // few-kilobyte chunks of smooth traffic) and by their block tables (a long run's many small
    // chunks hold as much again in them).
    const views = [
      ...(cache.chunks as unknown as { map: Map<number, { value: ParsedChunk }> }).map.values(),
    ].map(({ value }) => value);
    const stored = views.reduce((sum, view) => sum + view.size, 0);
    const tables = views.reduce((sum, view) => sum + view.blocks.memoryBytes, 0);
    assert.equal(cache.chunks.weight, stored + tables);
    assert.ok(stored > cache.chunks.size * 100, `${stored} bytes in ${cache.chunks.size} chunks`);
    const blocks = views.reduce((sum, view) => sum + view.blocks.length, 0);
    assert.ok(tables >= blocks * 32, `${tables} bytes of tables for ${blocks} blocks`);
    await tight.close();
  });

  it('runs that fit one by one but not together: reads on stop when the room is three quarters full', async () => {
    // Three runs of ten chunks; room for twenty chunks decoded whole.
    const path = await carRuns(3, 10);
    const roomy = SqliteBackend.open(path, { readonly: true });
    const expected = [];
    for (const run of [1, 2, 3]) expected.push(await scenesAcross(roomy, run, 2000, run));
    await roomy.close();
    const chunkWeight = await chunkWeightOf(path);
    const tight = SqliteBackend.open(path, { readonly: true, cacheBytes: 20 * chunkWeight });
    const cache = cacheOf(tight);
    for (const run of [1, 2, 3]) {
      assert.deepEqual(await scenesAcross(tight, run, 2000, run), expected[run - 1]);
      // Chunks read on past three quarters of the room (one may cross it) would push out those read
      // on before, at every scene.
      assert.ok(
        cache.wholes.weight <= 0.75 * cache.wholes.bound + chunkWeight,
        `after run ${run}: ${(cache.wholes.weight / chunkWeight).toFixed(1)} chunks' worth decoded whole, room for 20`,
      );
    }
    assert.ok(cache.wholes.size >= 10, `the runs that fitted were read on (${cache.wholes.size} chunks)`);
    await tight.close();
  });
});

describe('time that stands still', () => {
  /**
   * Seeded runs of one stream whose time often stands still (across block and chunk boundaries, as
   * small chunks make common), written in batches of random sizes, some left open (tails) and some
   * closed (sealed): every read gives back exactly what was written. Found samples lost at chunk
   * boundaries (store-conformance.ts has the cases it found).
   */
  for (const seed of [1, 2, 3]) {
    it(`reads agree with what was written (seed ${seed})`, async () => {
      const random = new Random(seed);
      const store = SqliteBackend.open(fresh(), { chunkSamples: 200, blockSamples: 64 });
      try {
        for (let trial = 0; trial < 4; trial++) {
          const rec = await RunRecorder.begin(store, { begin: 0 });
          await rec.declareActors([{ id: 'a', kind: 'vehicle' }]);
          await rec.declareStreams([stateStream('a')]);
          const written: Sample[] = [];
          let time = 0;
          for (let i = 0, n = 1 + random.int(3000); i < n; i++) {
            if (random.next() < 0.3) time += 1 + random.int(3);
            written.push({ t: time * 1000, step: i, x: i, y: 0, yaw: 0 });
          }
          for (let i = 0; i < written.length;) {
            const size = 1 + random.int(random.next() < 0.8 ? 30 : 700);
            await rec.appendBatch('a/state', written.slice(i, i + size));
            i += size;
          }
          const closed = random.next() < 0.5;
          if (closed) await rec.end('scenario_stop_trigger');
          else await rec.flush();
          const steps = (samples: Sample[]): number[] => samples.map((s) => s.step);
          const where = `seed ${seed}, run ${trial + 1} (${written.length} samples, ${closed ? 'closed' : 'open'})`;
          assert.deepEqual(
            steps(await collect(streamSamples(store, rec.id, 'a/state'))),
            steps(written),
            where,
          );
          const columns = await trajectoryColumns(store, rec.id, { actor: 'a' });
          assert.deepEqual([...columns.step], steps(written), where);
          for (let w = 0; w < 25; w++) {
            const from = random.int(time + 2) * 1000 - (random.next() < 0.1 ? 1 : 0);
            const to = from + random.int(60) * 1000;
            assert.deepEqual(
              steps(await collect(streamSamples(store, rec.id, 'a/state', { from, to }))),
              steps(written.filter((s) => s.t >= from && s.t <= to)),
              `${where}, window ${from}..${to}`,
            );
            const at = random.int(time + 2) * 1000;
            const scene = await sceneAt(store, rec.id, { t: at, includeDeparted: true });
            assert.equal(
              scene.actors.find((a) => a.id === 'a')?.x,
              written.filter((s) => s.t <= at).at(-1)?.x,
              `${where}, scene at ${at}`,
            );
            // The samples either side of t, as interpolation takes them: the last at or before, the first after.
            const [bracket] = await store.bracketMany(rec.id, { streams: ['a/state'], t: at });
            assert.deepEqual(
              [bracket!.before?.step, bracket!.after?.step],
              [written.filter((s) => s.t <= at).at(-1)?.step, written.find((s) => s.t > at)?.step],
              `${where}, samples either side of ${at}`,
            );
          }
          if (!closed) await rec.end('scenario_stop_trigger');
        }
      } finally {
        await store.close();
      }
    });
  }
});

describe('joined reads (readColumnsJoined, under trajectoryColumns)', () => {
  /**
   * Chunks of 200 samples whose columns differ: a vec column only in the first 300 samples, an
   * undeclared one from sample 500 on, strings and JSON now and then. A joined read decodes chunks
   * wholly inside its window straight into its columns (or copies them from the cache) and copies the
   * rows a window cuts; its answer is readColumns' batches joined, value for value.
   */
  async function recordVaryingColumns(): Promise<{ store: SqliteBackend; run: number }> {
    const store = SqliteBackend.open(fresh(), { chunkSamples: 200, blockSamples: 64 });
    const rec = await RunRecorder.begin(store, { begin: 0 });
    await rec.declareActors([{ id: 'a', kind: 'vehicle' }]);
    await rec.declareStreams([
      {
        name: 'data',
        actor: 'a',
        fields: [
          { name: 'x', type: 'f64' },
          { name: 'pos', type: 'vec', length: 3, optional: true },
          { name: 'label', type: 'string', optional: true },
          { name: 'info', type: 'json', optional: true },
        ],
      },
    ]);
    const samples: Sample[] = [];
    for (let i = 0; i < 1000; i++) {
      const s: Sample = { t: i * 1000, step: i, x: i * 0.5 };
      if (i < 300) s.pos = [i, -i, i / 7];
      if (i % 3 === 0) s.label = `lane ${i % 5}`;
      if (i % 7 === 0) s.info = { i, list: [i, null] };
      if (i >= 500) s.late = i * 2;
      samples.push(s);
    }
    for (let i = 0; i < samples.length; i += 90) await rec.appendBatch('a/data', samples.slice(i, i + 90));
    await rec.end('scenario_stop_trigger');
    return { store, run: rec.id };
  }

  const sameBatch = (actual: ColumnBatch, expected: ColumnBatch, where: string): void => {
    assert.deepEqual([...actual.t], [...expected.t], `${where}: t`);
    assert.deepEqual([...actual.step], [...expected.step], `${where}: step`);
    assert.deepEqual(Object.keys(actual.columns), Object.keys(expected.columns), `${where}: columns`);
    for (const name in expected.columns) {
      const a = actual.columns[name]!;
      const e = expected.columns[name]!;
      // Float64Arrays as plain arrays: deepEqual takes NaN as equal to NaN, as a row without a value.
      assert.deepEqual(
        Array.from(a as ArrayLike<unknown>),
        Array.from(e as ArrayLike<unknown>),
        `${where}: ${name}`,
      );
    }
  };

  it('gives readColumns’ batches joined, whole and in windows, decoded or from the cache', async () => {
    const { store, run } = await recordVaryingColumns();
    try {
      const windows: { from?: number; to?: number }[] = [
        {},
        { from: 150_000, to: 850_000 },
        { from: 200_000, to: 399_000 },
        { from: 250_000, to: 260_000 },
        { from: 1_500_000 },
      ];
      for (const cache of ['cold', 'warm'])
        for (const window of windows) {
          const args = { run, stream: 'a/data', ...window };
          const where = `${cache} cache, window ${JSON.stringify(window)}`;
          // The reference first when warm: its reads leave the chunks decoded whole in the cache.
          const expected = cache === 'warm' ? await readColumnsJoinedViaBatches(store, args) : undefined;
          const actual = await store.readColumnsJoined(args);
          sameBatch(actual, expected ?? (await readColumnsJoinedViaBatches(store, args)), where);
          for (const fields of [['x'], ['pos', 'late']])
            sameBatch(
              await store.readColumnsJoined({ ...args, fields }),
              await readColumnsJoinedViaBatches(store, { ...args, fields }),
              `${where}, fields ${fields.join(',')}`,
            );
        }
      const whole = await store.readColumnsJoined({ run, stream: 'a/data' });
      assert.equal(whole.t.length, 1000);
      assert.deepEqual(Array.from((whole.columns.pos as Float64Array).subarray(299 * 3, 301 * 3)), [
        299,
        -299,
        299 / 7,
        NaN,
        NaN,
        NaN,
      ]);
      // The caller's: changing it changes no later read.
      (whole.columns.x as Float64Array)[5] = -1;
      (whole.columns.info as { i: number }[])[7]!.i = -1;
      const again = await store.readColumnsJoined({ run, stream: 'a/data' });
      assert.equal((again.columns.x as Float64Array)[5], 2.5);
      assert.deepEqual((again.columns.info as unknown[])[7], { i: 7, list: [7, null] });
    } finally {
      await store.close();
    }
  });
});

describe('joined reads while a run is recorded', () => {
  it('read from another connection between commits that seal tails, each is a whole prefix of what was written', async () => {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    const reader = SqliteBackend.open(path, { readonly: true });
    try {
      const rec = await RunRecorder.begin(store, { begin: 0 });
      await rec.declareActors([{ id: 'a', kind: 'vehicle' }]);
      await rec.declareStreams([stateStream('a')]);
      let written = 0;
      let longest = 0;
      for (let commit = 0; commit < 60; commit++) {
        const batch: Sample[] = [];
        for (let i = 0; i < 37; i++, written++)
          batch.push({ t: written * 1000, step: written, x: written, y: 0, yaw: 0 });
        await rec.appendBatch('a/state', batch);
        // Between commits the writer thread merges tails into sealed chunks under the reader's index.
        const joined = await reader.readColumnsJoined({ run: rec.id, stream: 'a/state' });
        const steps = [...joined.step];
        assert.deepEqual(
          steps,
          Array.from({ length: steps.length }, (_, i) => i),
          `after commit ${commit}`,
        );
        assert.ok(steps.length >= longest, `after commit ${commit}: ${steps.length} rows, ${longest} before`);
        longest = steps.length;
      }
      await rec.end('completed');
      const whole = await reader.readColumnsJoined({ run: rec.id, stream: 'a/state' });
      assert.equal(whole.t.length, written);
    } finally {
      await reader.close();
      await store.close();
    }
  });

  it("scenes from another connection between commits that seal tails: a commit's first scene looks its chunks up, the next reads lists, both as a fresh index reads", async () => {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64 });
    // Opened before the run, without the index: each commit drops what it had read of the run, so the
    // scene after it is the run's first read at a moment again (SqliteSamples.chunksAt).
    const reader = SqliteBackend.open(path, { readonly: true, preloadIndexChunks: 0 });
    const lookedUp = (sql: string[]): boolean => sql.some(isChunkLookUp);
    try {
      const rec = await RunRecorder.begin(store, { begin: 0 });
      await rec.declareActors([
        { id: 'a', kind: 'vehicle' },
        { id: 'b', kind: 'vehicle' },
      ]);
      await rec.declareStreams([stateStream('a'), stateStream('b')]);
      const random = new Random(53);
      let written = 0;
      for (let commit = 0; commit < 40; commit++) {
        const batch = (actor: number): Sample[] =>
          Array.from({ length: 23 }, (_, i) => {
            const step = written + i;
            return { t: step * 1000, step, x: step + actor * 0.5, y: actor, yaw: 0 };
          });
        await rec.appendBatch('a/state', batch(0));
        await rec.appendBatch('b/state', batch(1));
        written += 23;
        // A moment anywhere in what is written (between two rows, on a row, the last one), then another.
        const moments = [random.int(written * 1000), (written - 1) * 1000, random.int(written * 1000)];
        // The index read afresh, as a store opened now reads it (this store is small: at open).
        const indexed = SqliteBackend.open(path, { readonly: true });
        try {
          for (const [k, t] of moments.entries()) {
            let scene: Awaited<ReturnType<typeof sceneAt>> | undefined;
            const sql = await statementsDuring(reader, async () => {
              scene = await sceneAt(reader, rec.id, { t });
            });
            const at = `commit ${commit}, t=${t}`;
            assert.equal(lookedUp(sql), k === 0, `${at}: looked up at the commit's first scene only`);
            assert.deepEqual(scene, await sceneAt(indexed, rec.id, { t }), at);
            const step = Math.floor(t / 1000);
            assert.deepEqual(
              scene.actors.map((e) => [e.id, e.t, e.x]),
              [
                ['a', step * 1000, step],
                ['b', step * 1000, step + 0.5],
              ],
              at,
            );
          }
        } finally {
          await indexed.close();
        }
      }
      await rec.end('completed');
    } finally {
      await reader.close();
      await store.close();
    }
  });

  /**
   * What the reader's private steps are, to make a merge land where it can only land by chance: after
   * the reader looked for other connections' writes and before it reads a chunk its index names.
   */
  interface ReaderInternals {
    file: { syncWithOtherConnections(): void };
    samples: { openChunk(run: number, stream: string, id: number): unknown };
  }

  /** A run of 150 samples in tail chunks (chunks of 200), whose index `reader` has read. */
  async function tailsReadOnce(): Promise<{
    store: SqliteBackend;
    reader: SqliteBackend;
    rec: RunRecorder;
    written: number;
  }> {
    const path = fresh();
    const store = SqliteBackend.open(path, { chunkSamples: 200, blockSamples: 64, writerThread: false });
    const reader = SqliteBackend.open(path, { readonly: true });
    const rec = await RunRecorder.begin(store, { begin: 0 });
    await rec.declareActors([{ id: 'a', kind: 'vehicle' }]);
    await rec.declareStreams([stateStream('a')]);
    let written = 0;
    for (let commit = 0; commit < 5; commit++) {
      const batch: Sample[] = [];
      for (let i = 0; i < 30; i++, written++)
        batch.push({ t: written * 1000, step: written, x: written, y: 0, yaw: 0 });
      await rec.appendBatch('a/state', batch);
    }
    // A window after the last sample: the index is read, no chunk is opened (nor cached).
    const none = await reader.readColumnsJoined({ run: rec.id, stream: 'a/state', from: 1e9 });
    assert.equal(none.t.length, 0);
    return { store, reader, rec, written };
  }

  const appendSteps = async (rec: RunRecorder, from: number, count: number): Promise<void> => {
    const batch: Sample[] = [];
    for (let i = from; i < from + count; i++) batch.push({ t: i * 1000, step: i, x: i, y: 0, yaw: 0 });
    await rec.appendBatch('a/state', batch);
  };

  it('a tail merged after the reader looked for writes and before it read the chunk: read again on a fresh index', async () => {
    const { store, reader, rec, written } = await tailsReadOnce();
    try {
      // 100 more samples: the tails reach 200 and are merged into a sealed chunk (the tail chunks deleted).
      await appendSteps(rec, written, 100);
      const internals = reader as unknown as ReaderInternals;
      const sync = internals.file.syncWithOtherConnections.bind(internals.file);
      const open = internals.samples.openChunk.bind(internals.samples);
      let vanished = 0;
      // Until a chunk is found gone, the reader's looks for writes see none, as when the merge commits
      // just after it looked.
      internals.file.syncWithOtherConnections = () => {
        if (vanished > 0) sync();
      };
      internals.samples.openChunk = (run, stream, id) => {
        const view = open(run, stream, id);
        if (view === undefined) vanished++;
        return view;
      };
      const joined = await reader.readColumnsJoined({ run: rec.id, stream: 'a/state' });
      assert.equal(vanished, 1, 'the stale index named a tail chunk that was gone');
      assert.deepEqual(
        [...joined.step],
        Array.from({ length: written + 100 }, (_, i) => i),
        'every sample, read from the sealed chunk',
      );
    } finally {
      await reader.close();
      await store.close();
    }
  });

  it('chunks that vanish under every attempt: the read is joined from readColumns’ batches, whole', async () => {
    const { store, reader, rec, written } = await tailsReadOnce();
    try {
      await appendSteps(rec, written, 20);
      const internals = reader as unknown as ReaderInternals;
      const open = internals.samples.openChunk.bind(internals.samples);
      // Three joined attempts each find their first chunk gone, as under a writer merging without pause.
      let vanished = 0;
      internals.samples.openChunk = (run, stream, id) =>
        vanished < 3 ? (vanished++, undefined) : open(run, stream, id);
      const joined = await reader.readColumnsJoined({ run: rec.id, stream: 'a/state' });
      assert.equal(vanished, 3);
      assert.deepEqual(
        [...joined.step],
        Array.from({ length: written + 20 }, (_, i) => i),
      );
      assert.deepEqual(
        [...joined.columns.x!],
        Array.from({ length: written + 20 }, (_, i) => i),
      );
    } finally {
      await reader.close();
      await store.close();
    }
  });
});

describe("the chunk index a reader loads, from chunks_by_time alone (the table's pages hold chunk data)", () => {
  const indexColumns = (path: string): string[] => {
    const db = new Database(path, { readonly: true });
    try {
      return (db.pragma('index_info(chunks_by_time)') as { name: string }[]).map((c) => c.name);
    } finally {
      db.close();
    }
  };

  it("each stream's chunk ranges are read through a covering index, for a run's first scene and for its index", async () => {
    const { path, run } = await storeOfV4Samples();
    assert.deepEqual(indexColumns(path), ['stream_key', 'begin_us', 'end_us']);
    const reader = await openStore(path);
    const sql = await statementsDuring(reader, async () => {
      // Every run's index was read at open: forgotten, the first scene looks its chunks up, the second
      // reads the chunk list of its actor.
      const internals = reader as unknown as {
        file: { forgetRun(run: number): void };
        samples: { preloadIndexes(upToChunks: number): void };
      };
      internals.file.forgetRun(run);
      await sceneAt(reader, run, { t: 1_000_000 });
      await sceneAt(reader, run, { t: 2_000_000 });
      // And every run's index in one query, as a small store's open reads it.
      internals.samples.preloadIndexes(Number.MAX_SAFE_INTEGER);
    });
    await reader.close();
    const lookUp = sql.find(isChunkLookUp);
    const list = sql.find(isChunkListRead);
    const all = sql.find((q) => /FROM chunks c JOIN streams s/.test(q));
    assert.ok(lookUp && list && all, `looked up, a list read, every index read: ${sql.join('; ')}`);
    const db = new Database(path, { readonly: true });
    const planOf = (query: string, ...params: unknown[]): string =>
      (db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(...params) as { detail: string }[])
        .map((p) => p.detail)
        .join('; ');
    const plans = [
      planOf(lookUp, { run, stream: 'car/state', t: 1_000_000 }),
      planOf(list, { run, stream: 'car/state' }),
      planOf(all),
    ];
    db.close();
    for (const plan of plans) assert.match(plan, /COVERING INDEX chunks_by_time/);
    for (const plan of plans.slice(0, 2)) assert.doesNotMatch(plan, /SCAN chunks/, 'searched, not scanned');
    // The look-up sorts nothing: ordered by (begin, id), it sorted every chunk of the stream on each side
    // of t, the index being in (begin, end) order.
    assert.doesNotMatch(plans[0]!, /TEMP B-TREE/, plans[0]);
  });

  it("an older store's narrower index is widened when opened to write, and left as it is read-only", async () => {
    await readOnlyCopy(V5, async (store) =>
      assert.deepEqual(await collect(store.readSamples({ run: 1, stream: 'car/state' })), storeV4Samples()),
    );
    const path = fresh();
    copyFileSync(V5, path);
    assert.deepEqual(indexColumns(path), ['stream_key', 'begin_us']);
    const store = await openStore(path);
    assert.deepEqual(await collect(store.readSamples({ run: 1, stream: 'car/state' })), storeV4Samples());
    await store.close();
    assert.deepEqual(indexColumns(path), ['stream_key', 'begin_us', 'end_us']);
  });
});
