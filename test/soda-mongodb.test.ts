/**
 * SODA.Sim's layout in a live MongoDB, through the same document code as the files. These machines
 * have no MongoDB server, so the live tests run only when SIMREC_MONGO_URL names one and are
 * otherwise skipped by name, saying why; they never run against a fake.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MongoClient } from 'mongodb';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { exportSoda, importSoda, openSodaSink, openSodaSource } from './helpers/formats.js';
import { SimrecError } from '../src/model/errors.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { openStore } from '../src/store/open-store.js';
import { freshMongoDatabase, skipWithoutMongo } from './mongodb-test-url.js';

const SKIP = skipWithoutMongo('the live SODA.Sim layout tests');

let dir: string;
let store: StoreBackend;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'simrec-soda-live-'));
  store = await openStore(join(dir, 'store.db'));
});
after(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const freshDatabase = (): string => freshMongoDatabase('soda_test');

describe('soda live layout', { skip: SKIP }, () => {
  it('export -> import through a live database gives the run back', async () => {
    const location = freshDatabase();
    const run = await recordSyntheticRun(store, { duration: 3, rateHz: 10, vehicles: 2 });
    const sink = await openSodaSink(location);
    try {
      const exported = await exportSoda(store, run.id, sink);
      assert.equal(exported.collection, 'dataset0');
    } finally {
      await sink.close();
    }
    const source = await openSodaSource(location);
    try {
      const result = await importSoda(store, source);
      const { id: _a, ...got } = result.runs[0]!.run;
      const { id: _b, ...want } = run;
      assert.deepEqual(got, want);
    } finally {
      await source.close();
    }
  });

  it('two exports at once get two dataset ids', async () => {
    const location = freshDatabase();
    const run = await recordSyntheticRun(store, { duration: 1, rateHz: 10, vehicles: 1 });
    const sinks = await Promise.all([openSodaSink(location), openSodaSink(location)]);
    try {
      const ids = await Promise.all(sinks.map((s) => exportSoda(store, run.id, s)));
      assert.deepEqual(ids.map((r) => r.dataset).sort(), [0, 1]);
    } finally {
      await Promise.all(sinks.map((s) => s.close()));
    }
  });

  it('a collection outside the layout is refused, naming it', async () => {
    const location = freshDatabase();
    const client = await MongoClient.connect(location);
    await client.db().collection('notes').insertOne({ a: 1 });
    await client.close();
    const source = await openSodaSource(location);
    try {
      await assert.rejects(importSoda(store, source), /collection "notes" is not in SODA\.Sim's layout/);
    } finally {
      await source.close();
    }
  });
});

describe('soda live layout: connection', () => {
  it('an unreachable server gives a clear error naming it, the password hidden', async () => {
    // Port 9 (discard) on loopback has no MongoDB: a real connection attempt that fails.
    await assert.rejects(
      openSodaSource('mongodb://alice:secret@127.0.0.1:9/sodasim?serverSelectionTimeoutMS=300'),
      (e: unknown) => {
        assert.ok(e instanceof SimrecError);
        assert.equal(e.code, 'io');
        assert.match(
          e.message,
          /^mongodb:\/\/\*\*\*@127\.0\.0\.1:9\/sodasim\?serverSelectionTimeoutMS=300: cannot connect/,
        );
        assert.doesNotMatch(e.message, /secret/);
        return true;
      },
    );
  });
});
