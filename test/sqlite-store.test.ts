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
    (await openStore(path)).close();
    const db = new Database(path);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    await expectUnsupported(
      path,
      new RegExp(`store schema version ${SCHEMA_VERSION + 1}, this simrec reads up to ${SCHEMA_VERSION}`),
    );
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
      [summary!.id, summary!.endReason, summary!.actors, summary!.samples],
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
