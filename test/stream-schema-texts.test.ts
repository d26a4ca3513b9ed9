/** The SQLite store's parse of stored stream schemas, shared between streams of the same schema. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stateStream } from '../src/model/standard-streams.js';
import type { StreamSchema } from '../src/model/stream.js';
import { StreamSchemaTexts } from '../src/store/sqlite/stream-schema-texts.js';

/** A schema as the store writes it. */
const stored = (schema: StreamSchema): string => JSON.stringify(schema);

describe('stream schemas parsed from their stored text', () => {
  it('reads each schema as JSON.parse does, the fields of streams alike one frozen array', () => {
    const texts = new StreamSchemaTexts();
    const a = { ...stateStream('v001'), id: 'v001/state' } as StreamSchema;
    const b = { ...stateStream('v002'), id: 'v002/state' } as StreamSchema;
    const [pa, pb] = [texts.parse(stored(a)), texts.parse(stored(b))];
    assert.deepStrictEqual(pa, JSON.parse(stored(a)));
    assert.deepStrictEqual(pb, JSON.parse(stored(b)));
    assert.deepEqual(Object.keys(pa), Object.keys(JSON.parse(stored(a)) as object), 'keys in their order');
    assert.equal(pa.fields, pb.fields, 'one fields array');
    assert.ok(Object.isFrozen(pa.fields) && Object.isFrozen(pa.fields[0]));
    pa.id = 'changed';
    assert.equal(texts.parse(stored(a)).id, 'v001/state', 'the stream object is the caller’s own');
  });

  it('ids with quotes and backslashes, a null actor, and nested keys named id or actor', () => {
    const texts = new StreamSchemaTexts();
    const odd = {
      id: 'a "b"\\c/state',
      name: 'state',
      actor: 'a "b"\\c',
      fields: [{ name: 'x', type: 'f64' }],
    };
    const none = { id: 'clock', name: 'clock', actor: null, fields: [{ name: 'x', type: 'f64' }] };
    const nested = {
      id: 'v1/state',
      name: 'state',
      actor: 'v1',
      fields: [{ name: 'x', type: 'f64' }],
      metadata: { source: { id: 'v1/state', actor: 'v1' } },
    };
    for (const schema of [odd, none, nested, { ...odd, id: 'z/state', actor: 'z' }])
      assert.deepStrictEqual(texts.parse(JSON.stringify(schema)), schema);
  });
});
