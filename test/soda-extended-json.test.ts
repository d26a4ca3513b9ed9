/**
 * A SODA.Sim recording's lines are read with simrec's own reader of canonical Extended JSON, made for
 * speed: it must give what the mongodb driver's `BSON.EJSON.parse(line, { relaxed: false })` gives
 * (what `mongoimport` would store), value for value and type for type, and refuse what it refuses.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { BSON } from 'mongodb';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { parseCanonicalExtendedJson } from '../src/formats/soda/extended-json.js';
import { parseExtendedJsonLine } from '../src/formats/soda/soda-files.js';
import { SimrecError } from '../src/model/errors.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { openStore } from '../src/store/open-store.js';
import { exportSoda, SodaFolder } from './helpers/formats.js';

const library = (text: string): unknown => BSON.EJSON.parse(text, { relaxed: false });

function assertReadAlike(text: string): void {
  const expected = library(text);
  const actual = parseCanonicalExtendedJson(text);
  assert.ok(isDeepStrictEqual(actual, expected), `${text}\n read as ${BSON.EJSON.stringify(actual)}`);
}

/** Lines of every kind canonical Extended JSON has, and of the forms the fast path must leave alone. */
const LINES = [
  // The three wrappers a recording is made of, at their edges.
  '{"a":{"$numberDouble":"1.5"},"b":{"$numberDouble":"-0.0"},"c":{"$numberDouble":"Infinity"}}',
  '{"a":{"$numberDouble":"-Infinity"},"b":{"$numberDouble":"NaN"},"c":{"$numberDouble":"1e308"}}',
  '{"a":{"$numberDouble":"24.299999999999997"},"b":{"$numberDouble":"3"},"c":{"$numberDouble":"5e-324"}}',
  '{"a":{"$numberInt":"0"},"b":{"$numberInt":"-2147483648"},"c":{"$numberInt":"2147483647"}}',
  '{"a":{"$numberLong":"0"},"b":{"$numberLong":"1796442798687000"},"c":{"$numberLong":"-42"}}',
  '{"a":{"$numberLong":"9223372036854775807"},"b":{"$numberLong":"-9223372036854775808"}}',
  '{"a":{"$numberLong":"+5"},"b":{"$numberLong":"123456789012345678"}}',
  // Wrappers of other kinds, and wrappers beside other keys: the library reads them.
  '{"_id":{"$oid":"5f1d7c3e8a4b2c1d0e9f8a7b"},"at":{"$date":{"$numberLong":"1700000000000"}}}',
  '{"bin":{"$binary":{"base64":"AAEC","subType":"00"}},"dec":{"$numberDecimal":"1.10"}}',
  '{"ref":{"$ref":"vehicles","$id":{"$oid":"5f1d7c3e8a4b2c1d0e9f8a7b"}},"u":{"$undefined":true}}',
  '{"odd":{"$numberDouble":"2.5","extra":{"$numberInt":"1"}},"notString":{"$numberInt":5}}',
  '{"two":{"$numberInt":"1","$numberDouble":"2.5"},"twoLongs":{"$numberLong":"7","$numberDouble":"1"}}',
  '{"nothing":{"$numberLong":null},"ts":{"$timestamp":{"t":1,"i":2}},"max":{"$maxKey":1}}',
  // Bare numbers, which canonical mode types by their value.
  '{"i":1,"z":-0,"f":2.5,"big":1099511627776,"huge":1.2e21,"neg":-2147483649,"max32":2147483647,"min32":-2147483648}',
  // Nesting: arrays of documents of wrappers, empty ones, strings that look like wrappers.
  '{"batch":[{"ts":{"$numberLong":"1"},"v":[{"$numberDouble":"0.1"},[{"$numberInt":"7"}]]},{},[]],"s":"$numberInt"}',
  '{"__proto__":{"$numberInt":"3"},"t":true,"n":null,"e":""}',
];

/** Lines the library refuses: refused here too. */
const REFUSED = [
  '{"a":{"$numberLong":"01"}}',
  '{"a":{"$numberLong":"12345678901234567890123"}}',
  '{"a":{"$numberLong":"-12345678901234567890"}}',
  '{"a\\u0000b":{"$numberInt":"1"}}',
  '{"$x\\u0000":1}',
  '{"a":{"$date":true}}',
  '{"a":',
];

describe('canonical Extended JSON, read as the mongodb driver reads it', () => {
  it('gives the same values and BSON types for every kind of value', () => {
    for (const line of LINES) assertReadAlike(line);
  });

  it('refuses what the library refuses, and a line names its file and line', () => {
    for (const line of REFUSED) {
      assert.throws(() => library(line), `the library accepts ${line}`);
      assert.throws(() => parseCanonicalExtendedJson(line), `accepted ${line}`);
      assert.throws(
        () => parseExtendedJsonLine(line, 'dataset3.json line 7'),
        (error: unknown) =>
          error instanceof SimrecError && /^dataset3\.json line 7: not Extended JSON: /.test(error.message),
      );
    }
  });

  describe('on a recording simrec wrote', () => {
    let dir: string;
    let store: StoreBackend;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'simrec-soda-ejson-'));
      store = await openStore(join(dir, 'store.db'));
      const run = await recordDemoRun(store, { duration: 3, vehicles: 4, pedestrians: 1 });
      await exportSoda(store, run.run.id, await SodaFolder.openForWrite(join(dir, 'soda')), {
        warn: () => {},
      });
    });
    after(async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('reads every line of every collection as the library does', async () => {
      const files = (await readdir(join(dir, 'soda'))).filter((f) => f.endsWith('.json'));
      assert.ok(files.length >= 2, `collections written: ${files.join(', ')}`);
      let read = 0;
      for (const file of files) {
        const text = await readFile(join(dir, 'soda', file), 'utf8');
        for (const line of text.split('\n').filter(Boolean)) {
          assertReadAlike(line);
          read++;
        }
      }
      assert.ok(read > 10, `${read} lines`);
    });
  });
});
