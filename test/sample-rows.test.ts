/**
 * model/columns.ts sampleAt: rows of a batch as sample objects, built as one object literal when every
 * column of the row is present. The literal's keys are the columns' names written into generated code,
 * so every name a field may have must come back as it went in, and `__proto__` (which a literal or an
 * assignment takes as the prototype) may not be a field's name at all.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeColumns, sampleAt, type ColumnBatch } from '../src/model/columns.js';
import { normalizeStream, validateSample, type FieldDecl, type Sample } from '../src/model/stream.js';

const FIELDS: FieldDecl[] = [
  { name: 'x', type: 'f64' },
  { name: 'on', type: 'bool' },
  { name: 'lane', type: 'string', optional: true },
  { name: 'wheel', type: 'vec', length: 2, optional: true },
];

function batch(columns: ColumnBatch['columns']): ColumnBatch {
  return { t: Float64Array.of(10, 20, 30), step: Float64Array.of(1, 2, 3), columns };
}

describe('sampleAt', () => {
  it('builds every row with its fields, bools as booleans, absent fields left out', () => {
    const b = batch({
      x: Float64Array.of(1.5, -0, NaN),
      on: Float64Array.of(1, 0, 1),
      lane: ['a', undefined, 'c'],
    });
    assert.deepStrictEqual(
      [0, 1, 2].map((i) => sampleAt(b, FIELDS, i)),
      [
        { t: 10, step: 1, x: 1.5, on: true, lane: 'a' },
        { t: 20, step: 2, x: -0, on: false },
        { t: 30, step: 3, on: true, lane: 'c' },
      ],
    );
    // The same batch read again (its row builder is kept): the same objects.
    assert.deepStrictEqual(sampleAt(b, FIELDS, 0), { t: 10, step: 1, x: 1.5, on: true, lane: 'a' });
  });

  it('keeps every name a field may have, those of Object.prototype included, as own fields', () => {
    const names = ['speed.x', 'ns:key', 'a-b', '_x', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
    const columns: ColumnBatch['columns'] = {};
    names.forEach((n, k) => (columns[n] = Float64Array.of(k, k, k)));
    const row = sampleAt(batch(columns), [], 1);
    assert.deepStrictEqual(Object.keys(row), ['t', 'step', ...names]);
    names.forEach((n, k) => assert.ok(Object.hasOwn(row, n) && row[n] === k, n));
  });

  it('__proto__ is refused as a field name, declared, as a column or as a sample key', () => {
    assert.throws(
      () => normalizeStream({ name: 'state', fields: [{ name: '__proto__', type: 'f64' }] }),
      /fields\[0\]\.name: expected a field name .* other than t, step and __proto__, got "__proto__"/,
    );
    const schema = normalizeStream({ name: 'state', fields: [{ name: 'x', type: 'f64' }] });
    assert.throws(
      () => normalizeColumns(schema, { t: [1], step: [0], columns: { x: [1], ['__proto__']: [2] } }, null),
      /field name "__proto__" is not a valid name/,
    );
    const sample = JSON.parse('{"t": 1, "step": 0, "x": 1, "__proto__": 2}') as Sample;
    assert.throws(() => validateSample(schema, sample, null), /field name "__proto__" is not a valid name/);
  });

  it('gives each batch rows of its own columns: same names of other kinds, fewer, or in another order', () => {
    // Rows are built by code made per shape of batch (names, kinds, order), found by walking a tree of
    // the shapes met, and kept on each batch at its first row.
    const declared = batch({ x: Float64Array.of(1, 2, 3), on: Float64Array.of(1, 0, 1) });
    const undeclared = batch({ x: Float64Array.of(4, 5, 6), on: Float64Array.of(1, 0, 1) });
    const fewer = batch({ x: Float64Array.of(7, 8, 9) });
    const reordered = batch({ on: Float64Array.of(0, 1, 0), x: Float64Array.of(1, 2, 3) });
    const asString = batch({ x: Float64Array.of(1, 2, 3), on: ['yes', 'no', 'yes'] });
    for (let pass = 0; pass < 2; pass++) {
      assert.deepStrictEqual(sampleAt(declared, FIELDS, 1), { t: 20, step: 2, x: 2, on: false });
      assert.deepStrictEqual(sampleAt(undeclared, [], 1), { t: 20, step: 2, x: 5, on: 0 });
      assert.deepStrictEqual(sampleAt(fewer, FIELDS, 2), { t: 30, step: 3, x: 9 });
      const row = sampleAt(reordered, FIELDS, 1);
      assert.deepStrictEqual(row, { t: 20, step: 2, on: true, x: 2 });
      assert.deepStrictEqual(Object.keys(row), ['t', 'step', 'on', 'x']);
      assert.deepStrictEqual(sampleAt(asString, [], 0), { t: 10, step: 1, x: 1, on: 'yes' });
    }
  });

  it('reads a batch of more columns than a builder is made for, field by field', () => {
    const columns: ColumnBatch['columns'] = {};
    for (let k = 0; k < 70; k++) columns[`f${k}`] = Float64Array.of(k, -k, NaN);
    const b = batch(columns);
    for (let pass = 0; pass < 2; pass++) {
      const row = sampleAt(b, [], 1);
      assert.equal(Object.keys(row).length, 72);
      assert.equal(row.f69, -69);
      assert.deepStrictEqual(sampleAt(b, [], 2), { t: 30, step: 3 });
    }
  });

  it('reads a frozen batch, and a copy of a batch read before reads its own columns', () => {
    const frozen = Object.freeze(batch(Object.freeze({ x: Float64Array.of(1, 2, 3) })));
    assert.deepStrictEqual(sampleAt(frozen, FIELDS, 0), { t: 10, step: 1, x: 1 });
    assert.deepStrictEqual(sampleAt(frozen, FIELDS, 2), { t: 30, step: 3, x: 3 });
    const original = batch({ x: Float64Array.of(1, 2, 3) });
    assert.deepStrictEqual(sampleAt(original, FIELDS, 0), { t: 10, step: 1, x: 1 });
    // What the first row kept on the batch is not copied with it.
    const copy: ColumnBatch = { ...original, columns: { x: Float64Array.of(-1, -2, -3) } };
    assert.deepStrictEqual(sampleAt(copy, FIELDS, 0), { t: 10, step: 1, x: -1 });
    assert.deepStrictEqual(sampleAt(original, FIELDS, 0), { t: 10, step: 1, x: 1 });
  });

  it('reads vec fields as arrays, absent when their first component is NaN', () => {
    const b = batch({ x: Float64Array.of(1, 2, 3), wheel: Float64Array.of(1, 2, NaN, NaN, 5, 6) });
    assert.deepStrictEqual(sampleAt(b, FIELDS, 0), { t: 10, step: 1, x: 1, wheel: [1, 2] });
    assert.deepStrictEqual(sampleAt(b, FIELDS, 1), { t: 20, step: 2, x: 2 });
  });
});
