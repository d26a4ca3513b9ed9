/**
 * The MongoDB backend runs the same conformance suite as SQLite, against a real server named by
 * SIMREC_MONGO_URL (e.g. mongodb://127.0.0.1:27017; see mongodb-test-url.ts). Without one the suite
 * is skipped, by name, saying why. It is never run against a fake.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimrecError } from '../src/model/errors.js';
import { openStore } from '../src/store/open-store.js';
import { runStoreConformance } from './store-conformance.js';
import { runCli } from './helpers/run-cli.js';
import { freshMongoDatabase, skipWithoutMongo } from './mongodb-test-url.js';

const skip = skipWithoutMongo('the MongoDB conformance suite');

if (!skip) {
  runStoreConformance({ name: 'mongodb', freshLocation: () => freshMongoDatabase('simrec_test') });
} else {
  describe('store conformance: mongodb', () => {
    it('runs every store conformance test against a real MongoDB server', { skip }, () => {});
  });
}

describe('mongodb store location', () => {
  // Port 9 (discard) on loopback has no MongoDB: a real connection attempt that fails, not a fake.
  const unreachable = 'mongodb://127.0.0.1:9/simrec?serverSelectionTimeoutMS=300';

  it('an unreachable server gives a clear error naming the location, credentials hidden', async () => {
    await assert.rejects(openStore(unreachable.replace('//', '//alice:secret@')), (e: unknown) => {
      assert.ok(e instanceof SimrecError);
      assert.equal(e.code, 'io');
      assert.match(
        e.message,
        /^mongodb:\/\/\*\*\*@127\.0\.0\.1:9\/simrec\?serverSelectionTimeoutMS=300: cannot connect to MongoDB/,
      );
      assert.doesNotMatch(e.message, /secret/);
      return true;
    });
  });

  it('the command line selects the mongodb backend for a mongodb:// store', () => {
    const r = runCli(['ls', '--store', unreachable]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /simrec: mongodb:\/\/127\.0\.0\.1:9\/simrec.*cannot connect to MongoDB/);
  });
});
