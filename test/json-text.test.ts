import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toJson } from '../src/model/json.js';

describe('JSON text (toJson, what the server and --json print)', () => {
  it('writes int64 ids (SODA.Sim scenario ids) as numbers when exact, else as decimal strings, at any depth', () => {
    const value = {
      scenario: 7n,
      ids: [2n ** 53n - 1n, 2n ** 53n, -(2n ** 63n)],
      nested: { generation: { id: 42n, name: 'g' } },
    };
    assert.equal(
      toJson(value, 0),
      '{"scenario":7,"ids":[9007199254740991,"9007199254740992","-9223372036854775808"],"nested":{"generation":{"id":42,"name":"g"}}}',
    );
  });

  it('writes values without bigints as JSON.stringify does, indented or not', () => {
    const samples = Array.from({ length: 50 }, (_, i) => ({
      t: 1_750_000_000_000_000 + i * 100_000,
      step: i,
      state: 'GGrr',
      x: i / 3,
      missing: undefined,
      list: [1, null, 'a'],
    }));
    assert.equal(toJson({ samples }, 0), JSON.stringify({ samples }));
    assert.equal(toJson({ samples }), JSON.stringify({ samples }, null, 2));
  });

  it('still refuses a value that is not JSON (a cycle), bigints in it or not', () => {
    const cycle: Record<string, unknown> = { id: 1n };
    cycle.self = cycle;
    assert.throws(() => toJson(cycle), /circular/i);
  });
});
