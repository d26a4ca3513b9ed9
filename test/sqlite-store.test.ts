import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SimrecError } from '../src/model/errors.js';
import { stateStream } from '../src/model/standard-streams.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { openStore } from '../src/store/open-store.js';
import { SCHEMA_VERSION } from '../src/store/sqlite/sqlite-schema.js';
import { fixture, tempDir } from './helpers/paths.js';
import { runStoreConformance } from './store-conformance.js';
import { runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-sqlite-');
after(() => dir.cleanup());
let counter = 0;

runStoreConformance({ name: 'sqlite', freshLocation: () => join(dir.path, `store-${++counter}.db`) });

async function expectUnsupported(path: string, pattern: RegExp): Promise<void> {
  const before = readFileSync(path);
  await assert.rejects(openStore(path), (error: unknown) => {
    assert.ok(error instanceof SimrecError);
    assert.equal(error.code, 'unsupported');
    assert.match(error.message, pattern);
    return true;
  });
  assert.deepEqual(readFileSync(path), before, 'the refused file is left untouched');
}

describe('sqlite store files', () => {
  it("refuses another tool's SQLite database (LimSim's) and leaves it untouched", async () => {
    const path = join(dir.path, 'limsim.db');
    copyFileSync(fixture('limsim-db', 'egoTrackingTest.db'), path);
    await expectUnsupported(
      path,
      /limsim\.db is not a simrec store: its SQLite application_id is 0, expected 1397900611/,
    );
  });

  it('refuses a file that is not SQLite at all', async () => {
    const path = join(dir.path, 'notes.db');
    writeFileSync(path, 'these are my notes, not a database\n'.repeat(200));
    await expectUnsupported(path, /notes\.db is not a simrec store: file is not a database/);
  });

  it('refuses a store from a newer simrec', async () => {
    const path = join(dir.path, 'newer.db');
    await (await openStore(path)).close();
    const db = new Database(path);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    await expectUnsupported(
      path,
      new RegExp(`store schema version ${SCHEMA_VERSION + 1}, this simrec reads up to ${SCHEMA_VERSION}`),
    );
  });

  it('simrec check finds a damaged chunk and wrong counters; --repair mends them and keeps the rest', async () => {
    const path = join(dir.path, 'damaged.db');
    const store = await openStore(path);
    const rec = await RunRecorder.begin(store, { begin: 1_000_000 });
    await rec.declareActors([
      { id: 'a', kind: 'vehicle' },
      { id: 'b', kind: 'vehicle' },
    ]);
    await rec.declareStreams([stateStream('a'), stateStream('b')]);
    const samples = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ t: 1_000_000 + i * 1000, step: i, x: i, y: 0, yaw: 0 }));
    await rec.appendMany([
      { stream: 'a/state', samples: samples(5000) },
      { stream: 'b/state', samples: samples(10) },
    ]);
    await rec.end('completed');
    await store.close();
    const clean = runCli(['check', '--store', path]);
    assert.equal(clean.status, 0, clean.stderr);
    assert.match(clean.stdout, /1 runs, 2 streams, \d+ chunks, 5010 samples: ok/);
    // Damage it as a disk or a careless hand would: one chunk's bytes, one stream's counters.
    const db = new Database(path);
    const chunk = db
      .prepare(
        "SELECT c.id, c.count FROM chunks c JOIN streams s ON s.key = c.stream_key WHERE s.id = 'a/state' ORDER BY c.begin_us LIMIT 1",
      )
      .get() as { id: number; count: number };
    assert.ok(chunk.count < 5000, `a/state is kept in several chunks (the first holds ${chunk.count})`);
    db.prepare('UPDATE chunks SET data = ? WHERE id = ?').run(Buffer.from('garbage'), chunk.id);
    db.prepare(
      "UPDATE stream_counts SET samples = samples + 5 WHERE stream_key = (SELECT key FROM streams WHERE id = 'b/state')",
    ).run();
    db.close();
    const found = runCli(['check', '--store', path, '--json']);
    assert.equal(found.status, 1);
    const report = JSON.parse(found.stdout) as {
      ok: boolean;
      problems: { where: string; problem: string; repaired: boolean }[];
    };
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.problems.map((p) => [p.where.replace(/chunk \d+/, 'chunk N'), p.repaired]),
      [
        ['run 1 stream a/state chunk N', false],
        ['run 1 stream a/state', false],
        ['run 1 stream b/state', false],
      ],
    );
    // Garbage in place of a sealed chunk's blocks (its frame, kept apart since schema 6, is intact).
    assert.match(
      report.problems[0]!.problem,
      /unreadable: .*corrupt chunk \(blocks end at byte \d+, the chunk has \d+\)/,
    );
    assert.match(
      report.problems[2]!.problem,
      /counters say 15 samples over \[1000000, 1009000\], its chunks hold 10/,
    );
    const repaired = runCli(['check', '--store', path, '--repair']);
    assert.equal(repaired.status, 0, repaired.stdout);
    const after = await openStore(path);
    const [a, b] = await after.listStreams(1);
    assert.equal(b!.samples, 10);
    assert.equal(a!.samples, 5000 - chunk.count, 'only the damaged chunk is gone');
    assert.deepEqual((await after.checkIntegrity()).problems, []);
    await after.close();
  });

  it('keeps everything across close and reopen, in one file', async () => {
    const path = join(dir.path, 'persist.db');
    const store = await openStore(path);
    const rec = await RunRecorder.begin(store, { begin: 1_000_000 });
    await rec.declareActor({ id: 'a', kind: 'vehicle' });
    await rec.declareStream(stateStream('a'));
    await rec.appendBatch(
      'a/state',
      Array.from({ length: 3000 }, (_, i) => ({ t: 1_000_000 + i, step: i, x: i, y: 0, yaw: 0 })),
    );
    await rec.end('completed');
    await store.close();
    const again = await openStore(path);
    const [summary] = await again.listRuns();
    assert.deepEqual(
      [summary!.id, summary!.endReason, summary!.actorCount, summary!.samples],
      [rec.id, 'completed', 1, 3000],
    );
    await again.close();
    const db = new Database(path, { readonly: true });
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    const chunks = db.prepare('SELECT COUNT(*) AS n FROM chunks').get() as { n: number };
    assert.ok(chunks.n <= 3, `3000 samples are kept in a few chunks, not ${chunks.n} rows`);
    db.close();
  });
});
