import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { normalizeColumns, samplesToColumns, type ColumnBatch } from '../src/model/columns.js';
import { ByteWriter } from '../src/model/bytes.js';
import { SimrecError } from '../src/model/errors.js';
import { STATE_FIELDS } from '../src/model/standard-streams.js';
import { normalizeStream, type FieldDecl, type Sample } from '../src/model/stream.js';
import {
  FloatPackingMemo,
  packFloat32,
  packFloat64,
  packIntegers,
  unpackFloat32,
  unpackFloat64,
  unpackIntegers,
} from '../src/store/common/bit-codec.js';
import type { ChunkColumn } from '../src/store/common/chunk-codes.js';
import { ParsedChunk } from '../src/store/common/chunk-decoder.js';
import { assembleChunk, ChunkBuffers, encodeBlock } from '../src/store/common/chunk-encoder.js';
import {
  openChunk,
  ownEntryAt,
  ownSampleAt,
  sliceBatch,
  type ChunkView,
} from '../src/store/common/chunk-reader.js';
import {
  DEFAULT_TAIL_OPTIONS,
  encodeChunks,
  StreamTail,
  type StoredTailChunk,
} from '../src/store/common/stream-tail.js';

/** Bit patterns, so -0 and 0 (and every NaN-free double) compare as what they are. */
const bits = (v: number): string => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return b.toString('hex');
};

/** Each block's rows, in order. */
const rowsOfBlocks = ({ blocks }: ChunkView): number[] =>
  Array.from({ length: blocks.length }, (_, i) => blocks.rows(i));

function assertSameFloats(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++)
    if (bits(actual[i]!) !== bits(expected[i]!))
      assert.fail(
        `${what}[${i}]: read ${actual[i]} (${bits(actual[i]!)}), wrote ${expected[i]} (${bits(expected[i]!)})`,
      );
}

/** Every double a simulator could send that is hard to keep: signs, extremes, subnormals, near-ties. */
const HARD_DOUBLES = [
  0,
  -0,
  5e-324,
  -5e-324,
  2.2250738585072014e-308,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_VALUE,
  1,
  1 + Number.EPSILON,
  -1,
  Math.PI,
  1e300,
  -1e-300,
  123456.789,
  0.1 + 0.2,
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
];

const FIELDS: FieldDecl[] = [
  { name: 'f64', type: 'f64', optional: true },
  { name: 'f32', type: 'f32', optional: true },
  { name: 'i32', type: 'i32', optional: true },
  { name: 'i64', type: 'i64', optional: true },
  { name: 'flag', type: 'bool', optional: true },
  { name: 'label', type: 'string', optional: true },
  { name: 'pos', type: 'vec', length: 3, optional: true },
  { name: 'doc', type: 'json', optional: true },
];
const SCHEMA = normalizeStream({ name: 'everything', actor: 'car', fields: FIELDS });
const COLUMNS: ChunkColumn[] = FIELDS.map((f) => ({
  name: f.name,
  type: f.type,
  ...(f.length ? { length: f.length } : {}),
}));
const INDEX = new Map(COLUMNS.map((c, i) => [c.name, i] as const));

/** Rows with every field type, some absent, the hard doubles among them. */
/** Strings a decoder could change: a leading byte-order mark (TextDecoder drops it unless told not to), none, non-ASCII. */
const HARD_STRINGS = ['\uFEFFlane-0', '', 'Straße-ü', '車線-1', 'E2 \u{1F697}', '\uFEFF'];

function hardRows(n: number): Sample[] {
  return Array.from({ length: n }, (_, i) => {
    const s: Sample = { t: 1_700_000_000_000_000 + i * 10_000 + (i % 3), step: i };
    if (i % 5 !== 4) s.f64 = HARD_DOUBLES[i % HARD_DOUBLES.length]!;
    if (i % 4 !== 1) s.f32 = Math.fround(i * 0.1 - 3.3);
    s.i32 = i % 2 ? -(2 ** 31) : 2 ** 31 - 1;
    s.i64 = Number.MAX_SAFE_INTEGER - i * 1_000_003;
    s.flag = i % 3 === 0;
    if (i % 7 !== 3)
      s.label = i % 11 === 0 ? HARD_STRINGS[(i / 11) % HARD_STRINGS.length]! : `lane-${i >> 3}`;
    if (i % 6 !== 5) s.pos = [HARD_DOUBLES[(i + 3) % HARD_DOUBLES.length]!, -i, i * 1e-310];
    if (i % 2 === 0)
      s.doc = {
        wheels: [
          { w: i * 0.5, slip: -0.01 * i },
          { w: -i, slip: 5e-324 },
        ],
        tag: 'x',
      };
    else if (i % 9 === 1) s.doc = [null, 'mixed', i];
    return s;
  });
}

function roundTrip(rows: Sample[], packing: 'packed' | 'raw'): ColumnBatch {
  const batch = samplesToColumns(rows, FIELDS);
  const chunk = assembleChunk(COLUMNS, [encodeBlock(batch, COLUMNS, INDEX, 0, rows.length, packing)]);
  return openChunk(chunk, 'test chunk').decodeAll();
}

function assertSameBatch(actual: ColumnBatch, expected: ColumnBatch, what: string): void {
  assertSameFloats(actual.t, expected.t, `${what} t`);
  assertSameFloats(actual.step, expected.step, `${what} step`);
  assert.deepEqual(
    Object.keys(actual.columns).sort(),
    Object.keys(expected.columns).sort(),
    `${what}: columns`,
  );
  for (const name of Object.keys(expected.columns)) {
    const a = actual.columns[name]!;
    const e = expected.columns[name]!;
    if (e instanceof Float64Array) assertSameFloats(a as Float64Array, e, `${what} ${name}`);
    // A json field is JSON: its -0 is 0, as JSON.stringify writes it.
    else if (name === 'doc')
      assert.deepStrictEqual(
        a,
        e.map((v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)))),
        `${what} ${name}`,
      );
    else assert.deepStrictEqual(a, e, `${what} ${name}`);
  }
}

describe('chunk format: every bit back', () => {
  for (const packing of ['packed', 'raw'] as const)
    it(`${packing} blocks: every field type, absent values, -0, subnormals, extremes, int64 near 2^53`, () => {
      for (const n of [1, 2, 3, 5, 64, 257]) {
        const rows = hardRows(n);
        assertSameBatch(roundTrip(rows, packing), samplesToColumns(rows, FIELDS), `${packing} n=${n}`);
      }
    });

  it('a chunk of several blocks decodes whole into one batch, blocks without a column included, all fields or some', () => {
    const rows = hardRows(300);
    // Rows 100..179 have none of these fields: the block holding them has no record of them.
    for (let i = 100; i < 180; i++)
      for (const name of ['label', 'pos', 'doc', 'flag', 'f32']) delete rows[i]![name];
    const batch = samplesToColumns(rows, FIELDS);
    for (const packing of ['packed', 'raw'] as const) {
      const ranges = [
        [0, 1],
        [1, 100],
        [100, 180],
        [180, 300],
      ] as const;
      const chunk = assembleChunk(
        COLUMNS,
        ranges.map(([from, to]) => encodeBlock(batch, COLUMNS, INDEX, from, to, packing)),
      );
      const view = openChunk(chunk, 'test chunk');
      assert.equal(view.blocks.length, 4);
      assertSameBatch(view.decodeAll(), batch, `${packing} whole`);
      // The same as each block decoded on its own, one after another.
      for (let b = 0; b < 4; b++) {
        const [from, to] = ranges[b]!;
        const block = view.decodeBlock(b);
        assertSameFloats(block.t, batch.t.subarray(from, to), `${packing} block ${b} t`);
      }
      const some = view.decodeAll(new Set(['label', 'pos', 'f64']));
      assert.deepEqual(Object.keys(some.columns).sort(), ['f64', 'label', 'pos']);
      assertSameFloats(some.columns.pos as Float64Array, batch.columns.pos as Float64Array, `${packing} pos`);
      assert.deepStrictEqual(some.columns.label, batch.columns.label);
    }
  });

  it('a block decoded on its own holds its own columns, their numbers in one buffer of just their bytes; a slice copies', () => {
    const rows = hardRows(300);
    for (let i = 100; i < 180; i++)
      for (const name of ['label', 'pos', 'doc', 'flag', 'f32']) delete rows[i]![name];
    const batch = samplesToColumns(rows, FIELDS);
    const ranges = [
      [0, 100],
      [100, 180],
      [180, 300],
    ] as const;
    const view = openChunk(
      assembleChunk(
        COLUMNS,
        ranges.map(([from, to]) => encodeBlock(batch, COLUMNS, INDEX, from, to)),
      ),
      'test chunk',
    );
    const whole = view.decodeAll();
    const numbersIn = (b: ColumnBatch): Float64Array[] => [
      b.t,
      b.step,
      ...Object.values(b.columns).filter((v): v is Float64Array => v instanceof Float64Array),
    ];
    for (let b = 0; b < ranges.length; b++) {
      const [from, to] = ranges[b]!;
      const block = view.decodeBlock(b);
      // In the chunk's order, numbers and strings as they come (what a read prints its fields in).
      assert.deepEqual(
        Object.keys(block.columns),
        b === 1 ? ['f64', 'i32', 'i64'] : Object.keys(whole.columns),
        `block ${b}: the columns it has records of`,
      );
      assertSameFloats(block.t, whole.t.subarray(from, to), `block ${b} t`);
      for (const [name, values] of Object.entries(block.columns)) {
        const width = name === 'pos' ? 3 : 1;
        const all = whole.columns[name]!;
        if (values instanceof Float64Array)
          assertSameFloats(
            values,
            (all as Float64Array).subarray(from * width, to * width),
            `block ${b} ${name}`,
          );
        else assert.deepStrictEqual(values, (all as unknown[]).slice(from, to), `block ${b} ${name}`);
      }
      // What the block cache counts a block by (batchBytes) is what it holds: no room for columns the
      // block lacks, no array of its own per column.
      const numbers = numbersIn(block);
      assert.ok(
        numbers.every((v) => v.buffer === block.t.buffer),
        `block ${b}: one buffer`,
      );
      assert.equal(
        block.t.buffer.byteLength,
        numbers.reduce((sum, v) => sum + v.byteLength, 0),
        `block ${b}: the buffer's bytes`,
      );
      // A slice is the caller's own: changed, the block the cache keeps is not.
      const slice = sliceBatch(block, view.columns, 10, 30);
      assert.deepEqual(
        Object.keys(slice.columns),
        Object.keys(block.columns),
        `block ${b}: the slice's columns`,
      );
      assertSameFloats(slice.t, block.t.subarray(10, 30), `block ${b} slice t`);
      assertSameFloats(
        slice.columns.i64 as Float64Array,
        (block.columns.i64 as Float64Array).subarray(10, 30),
        `block ${b} slice i64`,
      );
      assert.ok(
        numbersIn(slice).every((v) => v.buffer !== block.t.buffer),
        `block ${b}: the slice copies`,
      );
      assert.equal(
        slice.t.buffer.byteLength,
        numbersIn(slice).reduce((sum, v) => sum + v.byteLength, 0),
        `block ${b}: the slice's buffer`,
      );
      const before = block.t[10];
      slice.t[0] = -1;
      assert.equal(block.t[10], before);
    }
  });

  it('JSON values of one shape are packed as the shape and float columns; one that differs late is kept as text, every value back', () => {
    const wheel = (i: number, k: number): Record<string, unknown> => ({
      w: i * 0.5 + k,
      slip: -0.01 * i,
      hot: false,
    });
    const doc = (i: number): Record<string, unknown> => ({ wheels: [wheel(i, 0), wheel(i, 1)], tag: 'x' });
    const rowsWith = (last: (i: number) => unknown): Sample[] =>
      Array.from({ length: 64 }, (_, i) => ({ t: i * 1000, step: i, doc: i === 63 ? last(i) : doc(i) }));
    const size = (rows: Sample[]): number =>
      encodeBlock(samplesToColumns(rows, FIELDS), COLUMNS, INDEX, 0, rows.length).bytes.length;
    const alike = rowsWith(doc);
    // The same values with their shapes told apart by the text: a last value with a key more.
    const text = rowsWith((i) => ({ ...doc(i), extra: 1 }));
    assert.ok(size(alike) < size(text) * 0.6, `one shape ${size(alike)} B, text ${size(text)} B`);
    const late: ((i: number) => unknown)[] = [
      (i) => ({ ...doc(i), extra: 1 }), // a key more
      (i) => ({ tag: 'x', wheels: doc(i).wheels }), // the same keys, another order
      (i) => ({ wheels: doc(i).wheels, label: 'x' }), // a key of another name
      (i) => ({ ...doc(i), tag: 'y' }), // another string
      (i) => ({ ...doc(i), wheels: [wheel(i, 0)] }), // a shorter array
      (i) => ({ ...doc(i), wheels: [wheel(i, 0), { ...wheel(i, 1), hot: 1 }] }), // a number for a boolean
      (i) => ({ ...doc(i), wheels: [wheel(i, 0), { ...wheel(i, 1), slip: 'n/a' }] }), // a string for a number
      (i) => ({ ...doc(i), tag: undefined }), // a key left out
      (i) => [doc(i)], // an array for an object
      (i) => ({ ...doc(i), wheels: [wheel(i, 0), { ...wheel(i, 1), grip: undefined }] }), // undefined: the same shape
    ];
    for (const [k, last] of late.entries()) {
      const rows = rowsWith(last);
      const back = roundTrip(rows, 'packed');
      assertSameBatch(back, samplesToColumns(rows, FIELDS), `variant ${k}`);
      // Key for key in order too (deepStrictEqual does not look at the order of keys).
      assert.deepEqual(
        (back.columns.doc as unknown[]).map((v) => JSON.stringify(v)),
        rows.map((r) => JSON.stringify(r.doc)),
        `variant ${k}: the keys in their order`,
      );
    }
  });

  it('constant columns, one-sample chunks, irregular and repeated times', () => {
    const constant = Array.from({ length: 100 }, (_, i) => ({
      t: 1000 + i,
      step: 7,
      f64: -0,
      i64: 2 ** 53 - 1,
    }));
    const repeated = Array.from({ length: 50 }, (_, i) => ({
      t: 1000 + (i >> 2) * 13 + (i % 5 === 0 ? 1 : 0),
      step: i,
      f64: i,
    }));
    repeated.sort((a, b) => a.t - b.t);
    // Zeros of both signs are two values: a column of them is not constant, one of either sign is.
    const zeros = (sign: (i: number) => number): Sample[] =>
      Array.from({ length: 40 }, (_, i) => ({ t: 1000 + i, step: i, f64: sign(i), f32: sign(i) }));
    const mixedZeros = zeros((i) => (i === 17 ? -0 : 0));
    const negativeZeros = zeros(() => -0);
    const positiveZeros = zeros(() => 0);
    for (const rows of [constant, constant.slice(0, 1), repeated, mixedZeros, negativeZeros, positiveZeros])
      assertSameBatch(roundTrip(rows, 'packed'), samplesToColumns(rows, FIELDS), `${rows.length} rows`);
  });

  it("one row decoded alone (a scene's first look at a chunk) is the sample, or the entry, its decoded block gives, key for key in order, for every codec", () => {
    const shaped = (i: number): Record<string, unknown> => ({
      wheels: [{ w: i * 0.5, hot: i % 2 === 0 }],
      tag: 'x',
    });
    const rows = hardRows(300);
    // Rows 100..179 have none of these fields: the block holding them has no record of them.
    for (let i = 100; i < 180; i++)
      for (const name of ['label', 'pos', 'doc', 'flag', 'f32']) delete rows[i]![name];
    // A block of constant numbers, and JSON values of one shape (packed as the shape and its numbers).
    for (let i = 180; i < 240; i++) Object.assign(rows[i]!, { f64: 7.25, i32: 3, doc: shaped(i) });
    const batch = samplesToColumns(rows, FIELDS);
    const cuts = [0, 1, 100, 180, 240, 300];
    for (const packing of ['packed', 'raw'] as const) {
      const blocks = cuts.slice(1).map((to, k) => encodeBlock(batch, COLUMNS, INDEX, cuts[k]!, to, packing));
      const view = openChunk(assembleChunk(COLUMNS, blocks), 'test chunk') as ParsedChunk;
      for (let b = 0; b < blocks.length; b++) {
        const decoded = view.decodeBlock(b);
        const first = view.blocks.begin(b);
        assert.equal(view.sampleAtOrBefore(b, first - 1), undefined, `${packing} block ${b}: before it`);
        for (let row = 0; row < decoded.t.length; row++) {
          const expected = ownSampleAt(decoded, view.columns, row);
          const what = `${packing} block ${b} row ${row}`;
          // At the row's time, and between it and the next (the row at or before t).
          // As a scene's entry: id and kind first, then the sample's time and fields, no step.
          const head = { id: 'car', kind: 'vehicle' };
          const { t: time, step: _step, ...fields } = expected;
          const entry = { id: 'car', kind: 'vehicle', t: time, ...fields };
          const fromBlock = ownEntryAt(decoded, view.columns, row, head);
          assert.deepStrictEqual(fromBlock, entry, `${what} entry`);
          assert.deepEqual(Object.keys(fromBlock), Object.keys(entry), `${what} entry: keys in order`);
          for (const t of [decoded.t[row]!, decoded.t[row]! + 1]) {
            const alone = view.sampleAtOrBefore(b, t);
            assert.deepStrictEqual(alone, expected, what);
            assert.deepEqual(Object.keys(alone), Object.keys(expected), `${what}: keys in order`);
            const aloneEntry = view.sampleAtOrBefore(b, t, head);
            assert.deepStrictEqual(aloneEntry, entry, `${what} entry alone`);
            assert.deepEqual(
              Object.keys(aloneEntry),
              Object.keys(entry),
              `${what} entry alone: keys in order`,
            );
          }
        }
      }
    }
  });

  it('blocks cut from anywhere in a batch (a commit cut at chunk boundaries) read back as the rows they were cut from', () => {
    const rows = hardRows(300);
    const batch = samplesToColumns(rows, FIELDS);
    const cuts = [0, 1, 2, 77, 128, 129, 256, 299, 300];
    const blocks = cuts.slice(1).map((to, k) => encodeBlock(batch, COLUMNS, INDEX, cuts[k]!, to, 'packed'));
    const back = openChunk(assembleChunk(COLUMNS, blocks), 'cut chunk').decodeAll();
    assertSameBatch(back, batch, 'blocks of 1, 1, 75, 51, 1, 127, 43, 1 rows');
  });

  it('float packing is exact on random bit patterns (no prediction can lose a bit)', () => {
    let seed = 12345;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const words = new Uint32Array(2 * 4096);
    for (let i = 0; i < words.length; i++) words[i] = next() * 2 + (next() & 1);
    const values = new Float64Array(words.buffer).map((v) => (Number.isFinite(v) ? v : 1.5));
    const { packing, bytes } = packFloat64(values);
    assertSameFloats(unpackFloat64(bytes, values.length, packing), values, 'random doubles');
    const ints = Float64Array.from(
      { length: 1000 },
      (_, i) => 1_750_000_000_000_000 + i * 10_000 + (i % 7) * 3,
    );
    assertSameFloats(unpackIntegers(packIntegers(ints, 2)!, ints.length, 2), ints, 'times');
    assert.equal(
      packIntegers(Float64Array.of(0, 2 ** 40), 1),
      null,
      'a delta past 32 bits falls back to floats',
    );
  });

  it('noise about zero is packed with residuals rotated (the sign bit at the bottom), bit for bit, in fewer bytes', () => {
    let seed = 777;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const noise = Float64Array.from({ length: 256 }, () => (next() - 0.5) * 3);
    const packed = packFloat64(noise);
    assert.equal(packed.packing.residual, 'xor-rotated', 'an acceleration-like column is rotated');
    assertSameFloats(unpackFloat64(packed.bytes, noise.length, packed.packing), noise, 'noise');
    // The same values packed straight: every residual whose sign differs costs 64 bits.
    const straight = packFloat64(Float64Array.from(noise, (v) => Math.abs(v) + 10));
    assert.equal(straight.packing.residual, 'difference', 'a column of one sign is packed as differences');
    assert.ok(
      packed.bytes.byteLength < 7.4 * noise.length,
      `${packed.bytes.byteLength} bytes for 256 values`,
    );
    // The hard doubles through every packing.
    const edges = HARD_DOUBLES;
    const values = Float64Array.from([...noise.subarray(0, 10), ...edges, ...[...edges].reverse(), ...noise]);
    for (const predictor of ['linear', 'previous'] as const)
      for (const residual of ['difference', 'xor', 'xor-rotated'] as const) {
        const packing = { predictor, residual };
        const { bytes } = packFloat64(values, packing);
        assertSameFloats(unpackFloat64(bytes, values.length, packing), values, `${predictor} ${residual}`);
      }
  });

  it('smooth values are packed as differences of bit patterns, in fewer bytes than their XOR', () => {
    // A position moving at a steady speed with noise in its low bits, like the benchmark's.
    let seed = 99;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const x = Float64Array.from({ length: 256 }, (_, i) => 1000 + 0.13 * i + next() * 1e-4);
    const packed = packFloat64(x);
    assert.equal(packed.packing.residual, 'difference');
    assertSameFloats(unpackFloat64(packed.bytes, x.length, packed.packing), x, 'positions');
    const xor = packFloat64(x, { predictor: packed.packing.predictor, residual: 'xor' });
    assert.ok(
      packed.bytes.byteLength < 0.97 * xor.bytes.byteLength,
      `${packed.bytes.byteLength} bytes as differences, ${xor.bytes.byteLength} as XOR`,
    );
  });

  it('group widths that change by every step of their prefix code (0, 1 to 3 either way, more) read back exact; a cut stream is refused', () => {
    // Values whose steps, in units of the last place, have the given bit lengths group by group: the
    // widths the previous-value predictor sees change by 0, +-1, +-2, +-3 and by more.
    const lengths = [10, 10, 11, 9, 12, 9, 13, 30, 2, 2, 5, 1, 0, 40, 36, 33, 34, 31];
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, 1000.5);
    let word = view.getBigUint64(0);
    const values: number[] = [view.getFloat64(0)];
    lengths.forEach((length, g) => {
      for (let k = 0; k < 4; k++) {
        const step = length === 0 ? 0n : (1n << BigInt(length - 1)) + BigInt(k);
        word = g % 2 === 0 ? word + step : word - step;
        view.setBigUint64(0, word);
        values.push(view.getFloat64(0));
      }
    });
    const column = Float64Array.from(values);
    for (const predictor of ['previous', 'linear'] as const) {
      const packing = { predictor, residual: 'difference' } as const;
      const { bytes } = packFloat64(column, packing);
      const kept = bytes.slice();
      assertSameFloats(unpackFloat64(kept, column.length, packing), column, `${predictor} differences`);
      for (let words = 0; words < kept.length / 4; words++)
        assert.throws(
          () => unpackFloat64(kept.slice(0, words * 4), column.length, packing),
          /bit stream ends early|group width/,
          `${predictor}: cut to ${words} words of ${kept.length / 4}`,
        );
    }
  });

  it('a packing kept from block to block is chosen again when the column turns noisy, and every block reads back exact', () => {
    let seed = 4321;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const smooth = (b: number): Float64Array =>
      Float64Array.from({ length: 100 }, (_, i) => 50 + 0.2 * (b * 100 + i) + next() * 1e-6);
    const noise = (): Float64Array => Float64Array.from({ length: 100 }, () => (next() - 0.5) * 3);
    const memo = new FloatPackingMemo();
    const residuals: string[] = [];
    for (let b = 0; b < 12; b++) {
      const values = b < 3 ? smooth(b) : noise();
      const packed = memo.pack(2, values);
      residuals.push(packed.packing.residual);
      assertSameFloats(
        unpackFloat64(packed.bytes.slice(), values.length, packed.packing),
        values,
        `block ${b}`,
      );
    }
    assert.deepEqual(residuals.slice(0, 3), ['difference', 'difference', 'difference']);
    // The first noisy block still has the kept packing and packs worse than the block it was chosen
    // on; the next is chosen again, well before the 8th.
    assert.equal(residuals[3], 'difference');
    assert.equal(residuals[4], 'xor-rotated');
    assert.deepEqual(new Set(residuals.slice(4)), new Set(['xor-rotated']));
  });

  /** How f32 columns were packed before store schema 5 (codec float32). */
  const OLD_F32 = { predictor: 'linear', residual: 'xor' } as const;

  it('float32 packings (differences or rotated XOR, either predictor, and the linear XOR of older stores) are exact', () => {
    let seed = 2468;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const smooth = Float64Array.from({ length: 200 }, (_, i) => Math.fround(100 + 0.37 * i + next() * 1e-3));
    const noise = Float64Array.from({ length: 200 }, () => Math.fround((next() - 0.5) * 3));
    const edges = Float64Array.from(
      [
        0, -0, 1.401298464324817e-45, -1.401298464324817e-45, 3.4028234663852886e38, -3.4028234663852886e38,
        1.1754943508222875e-38, 1, -1,
      ],
      (v) => Math.fround(v),
    );
    const hard = Float64Array.from([
      ...smooth.subarray(0, 10),
      ...edges,
      ...[...edges].reverse(),
      ...noise.subarray(0, 20),
    ]);
    for (const values of [smooth, noise, hard]) {
      for (const predictor of ['linear', 'previous'] as const)
        for (const residual of ['difference', 'xor-rotated'] as const) {
          const packing = { predictor, residual };
          const { bytes } = packFloat32(values, packing);
          assertSameFloats(
            unpackFloat32(bytes.slice(), values.length, packing),
            values,
            `${predictor} ${residual}`,
          );
        }
      assertSameFloats(
        unpackFloat32(packFloat32(values, OLD_F32).bytes.slice(), values.length, OLD_F32),
        values,
        'the linear XOR of older stores',
      );
    }
    // Bytes written by simrec before store schema 5 (its f32 packer, since folded into packFloat32 as
    // this packing), read as they were written.
    const old = Buffer.from(
      '00004841070100100000000000cccc1c00989959054f66662ab8ffffef4f666656080000',
      'hex',
    );
    const oldValues = Float64Array.from(
      [12.5, 12.75, 13, 13.2, -0, 1.401298464324817e-45, 3.4028234663852886e38, 0.1],
      (v) => Math.fround(v),
    );
    assertSameFloats(unpackFloat32(new Uint8Array(old), 8, OLD_F32), oldValues, 'bytes of an older store');
    assert.deepEqual(Buffer.from(packFloat32(oldValues, OLD_F32).bytes), old, 'written the same');
    const chosen = [smooth, noise].map((v) => packFloat32(v));
    assert.equal(chosen[0]!.packing.residual, 'difference');
    assert.equal(chosen[1]!.packing.residual, 'xor-rotated');
    const asOld = packFloat32(smooth, OLD_F32).bytes.byteLength;
    assert.ok(
      chosen[0]!.bytes.byteLength < 0.95 * asOld,
      `${chosen[0]!.bytes.byteLength} bytes as differences, ${asOld} as the linear XOR`,
    );
  });

  it('f32 fields keep float32 values exactly, in under half the bytes of f64', () => {
    const fields: FieldDecl[] = STATE_FIELDS.map((f) => (f.type === 'f64' ? { ...f, type: 'f32' } : f));
    const rows = Array.from({ length: 2000 }, (_, i) => ({
      t: i * 10_000,
      step: i,
      x: 1000 + i * 0.1234567 + Math.sin(i) * 1e-3,
      y: Math.cos(i / 100) * 50,
      yaw: i * 1e-3,
      speed: 10 + Math.sin(i / 7),
    }));
    const f32 = encodeChunks(fields, samplesToColumns(rows, fields), DEFAULT_TAIL_OPTIONS).chunks[0]!;
    const f64 = encodeChunks(STATE_FIELDS, samplesToColumns(rows, STATE_FIELDS), DEFAULT_TAIL_OPTIONS)
      .chunks[0]!;
    const back = openChunk(f32.data, 'f32').decodeAll();
    assertSameFloats(
      back.columns.x as Float64Array,
      Float64Array.from(rows, (r) => Math.fround(r.x)),
      'x as f32',
    );
    assert.ok(
      f32.data.length < f64.data.length / 2,
      `f32 ${f32.data.length} bytes vs f64 ${f64.data.length}`,
    );
  });

  it('NaN, Infinity, a wrong type and time going backwards are refused naming stream, field, time and value', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ f64: [1, NaN] }, /stream car\/everything sample at t=2: field f64 is required \(f64\) but absent/],
      [{ f64: [1, Infinity] }, /field f64: expected a finite number, got Infinity/],
      [{ i32: [1, 2 ** 31] }, /field i32: expected a 32-bit integer, got 2147483648/],
      [{ label: ['a', 3] }, /field label: expected a string, got 3/],
    ];
    const strict = normalizeStream({
      name: 'everything',
      actor: 'car',
      fields: [{ name: 'f64', type: 'f64' }, ...FIELDS.slice(1)],
    });
    for (const [columns, pattern] of cases)
      assert.throws(
        () => normalizeColumns(strict, { t: [1, 2], step: [0, 1], columns: columns as never }, null),
        (e: unknown) => e instanceof SimrecError && e.code === 'invalid' && pattern.test(e.message),
        String(pattern),
      );
    assert.throws(
      () => normalizeColumns(SCHEMA, { t: [5, 4], step: [0, 1], columns: {} }, null),
      /sample at t=4: time goes backwards \(previous sample at t=5\)/,
    );
    assert.throws(
      () => normalizeColumns(SCHEMA, { t: [5], step: [0], columns: {} }, 9),
      /time goes backwards/,
    );
    // Time may stand still.
    assert.equal(normalizeColumns(SCHEMA, { t: [5, 5], step: [0, 1], columns: {} }, 5).t.length, 2);
  });
});

describe('chunk format: damage is found, never read as data', () => {
  it('every single bit flipped anywhere in a stored chunk is detected', () => {
    const rows = hardRows(40);
    const chunk = encodeChunks(FIELDS, samplesToColumns(rows, FIELDS), DEFAULT_TAIL_OPTIONS).chunks[0]!.data;
    let detected = 0;
    for (let bit = 0; bit < chunk.length * 8; bit++) {
      const damaged = Buffer.from(chunk);
      damaged[bit >> 3]! ^= 1 << (bit & 7);
      try {
        openChunk(damaged, 'run 3 stream car/everything chunk 12').decodeAll();
      } catch (error) {
        assert.ok(error instanceof SimrecError && error.code === 'io', String(error));
        assert.match(error.message, /^run 3 stream car\/everything chunk 12: corrupt chunk/);
        detected++;
        continue;
      }
      assert.fail(`bit ${bit} of ${chunk.length * 8} flipped and the chunk still read`);
    }
    assert.equal(detected, chunk.length * 8);
  });

  it('a checksum mismatch says so, with both values', () => {
    const chunk = Buffer.from(
      encodeChunks(FIELDS, samplesToColumns(hardRows(5), FIELDS), DEFAULT_TAIL_OPTIONS).chunks[0]!.data,
    );
    const frame = Buffer.from(chunk);
    frame[20]! ^= 0x10;
    assert.throws(
      () => openChunk(frame, 'c'),
      /c: corrupt chunk \(checksum mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}/,
    );
    // A block is checked when it is read, not before: a scene reads one block of a chunk.
    chunk[chunk.length - 3]! ^= 0x10;
    const opened = openChunk(chunk, 'c');
    assert.throws(() => opened.decodeAll(), /c: corrupt chunk \(block \d+: checksum mismatch/);
  });

  it('a block table claiming more blocks than its bytes can hold is refused before room is made for them', () => {
    const chunk = Buffer.from(
      encodeChunks(FIELDS, samplesToColumns(hardRows(300), FIELDS), DEFAULT_TAIL_OPTIONS).chunks[0]!.data,
    );
    const headerEnd = 16 + chunk.readUInt32LE(4);
    const frameEnd = headerEnd + chunk.readUInt32LE(8);
    // The table's first varint is its count of blocks (one byte here): made 50 million, the frame's
    // lengths and checksum put right, so that only the count is wrong.
    assert.ok(chunk[headerEnd]! < 0x80);
    const claimed = 50_000_000;
    const writer = new ByteWriter();
    writer.varint(claimed);
    const count = writer.finish();
    const crafted = Buffer.concat([chunk.subarray(0, headerEnd), count, chunk.subarray(headerEnd + 1)]);
    const tableBytes = frameEnd - headerEnd - 1 + count.length;
    crafted.writeUInt32LE(tableBytes, 8);
    crafted.writeUInt32LE(
      crc32(crafted.subarray(16, headerEnd + tableBytes), crc32(crafted.subarray(0, 12))),
      12,
    );
    const before = process.memoryUsage().arrayBuffers;
    assert.throws(
      () => openChunk(crafted, 'c'),
      new RegExp(
        `^SimrecError: c: corrupt chunk \\(block table claims ${claimed} blocks in ${tableBytes} bytes\\)$`,
      ),
    );
    assert.ok(process.memoryUsage().arrayBuffers - before < 2 ** 20, 'no room made for the claimed blocks');
  });
});

describe('stream tails', () => {
  const rowsOf = (n: number): Sample[] =>
    Array.from({ length: n }, (_, i) => ({
      t: i * 10_000,
      step: i,
      x: i * 0.3,
      y: Math.sin(i / 9),
      yaw: 0.1,
      lane: `l${i >> 8}`,
    }));
  /** A store of tail chunks by id, as a backend keeps them. */
  const tailStore = (): { put(data: Uint8Array): number; open(id: number): StoredTailChunk } => {
    const stored = new Map<number, Uint8Array>();
    return {
      put: (data) => (stored.set(stored.size + 1, data), stored.size),
      open: (id) => ({ data: stored.get(id)!, where: `tail ${id}` }),
    };
  };

  it('commits become packed tail chunks; sealing assembles their blocks, as they are, into chunks at every chunkSamples-th sample', () => {
    const options = { chunkSamples: 300, maxBlockRows: 128 };
    const tail = new StreamTail<number>(STATE_FIELDS, [], options);
    const rows = rowsOf(1000);
    const store = tailStore();
    const blockBytes = new Set<string>();
    for (let i = 0; i < rows.length; i += 50) {
      const { chunk } = tail.append(samplesToColumns(rows.slice(i, i + 50), STATE_FIELDS));
      const view = openChunk(chunk.data, 'tail') as ParsedChunk;
      for (let b = 0; b < view.blocks.length; b++)
        blockBytes.add(Buffer.from(view.encodedBlock(b).bytes).toString('hex'));
      tail.appended(store.put(chunk.data), chunk.count);
    }
    assert.ok(tail.dueForSeal);
    const sealed = tail.seal((id) => store.open(id))!;
    assert.equal(sealed.replaces.length, 20);
    // Chunks at every 300th sample of the stream; the 100 past the last boundary stay a tail.
    assert.deepEqual(
      sealed.chunks.map((c) => c.count),
      [300, 300, 300],
    );
    assert.equal(sealed.rest?.count, 100);
    // Commits of 50 are blocks of 50 (none crosses a chunk boundary), assembled without packing again.
    for (const c of sealed.chunks) {
      const view = openChunk(c.data, 'sealed') as ParsedChunk;
      assert.deepEqual(rowsOfBlocks(view), [50, 50, 50, 50, 50, 50]);
      for (let b = 0; b < view.blocks.length; b++)
        assert.ok(blockBytes.has(Buffer.from(view.encodedBlock(b).bytes).toString('hex')));
    }
    tail.sealed(store.put(sealed.rest.data));
    assert.equal(tail.rows, 100);
    const final = tail.seal((id) => store.open(id), { final: true })!;
    assert.deepEqual(
      final.chunks.map((c) => c.count),
      [100],
    );
    assert.equal(final.rest, null);
    const back = [...sealed.chunks, ...final.chunks].map((c) => openChunk(c.data, 'sealed').decodeAll());
    assertSameFloats(
      back.flatMap((b) => Array.from(b.columns.x as Float64Array)),
      rows.map((r) => r.x as number),
      'x',
    );
    assert.deepEqual(
      back.flatMap((b) => b.columns.lane as string[]),
      rows.map((r) => r.lane),
    );
  });

  it('chunks assembled into ChunkBuffers are the bytes assembled alone; those taken before reuse() never share memory, and reuse() hands it out again', () => {
    const options = { chunkSamples: 300, maxBlockRows: 128 };
    const rows = rowsOf(1000);
    const alone = new StreamTail<number>(STATE_FIELDS, [], options);
    const pooled = new StreamTail<number>(STATE_FIELDS, [], options);
    const buffers = new ChunkBuffers();
    const [storeAlone, storePooled] = [tailStore(), tailStore()];
    let first: ArrayBufferLike | undefined;
    for (let i = 0; i < rows.length; i += 50) {
      const batch = samplesToColumns(rows.slice(i, i + 50), STATE_FIELDS);
      const a = alone.append(batch).chunk;
      const p = pooled.append(batch, buffers).chunk;
      assert.deepEqual(Buffer.from(p.data), Buffer.from(a.data), `commit at ${i}`);
      if (first) assert.equal(p.data.buffer, first, 'a commit reuses the memory of the one before');
      first ??= p.data.buffer;
      alone.appended(storeAlone.put(a.data), a.count);
      // As a writer that copies each chunk into its store before reusing the memory.
      pooled.appended(storePooled.put(Buffer.from(p.data)), p.count);
      buffers.reuse();
    }
    const a = alone.seal((id) => storeAlone.open(id))!;
    const p = pooled.seal((id) => storePooled.open(id), { buffers })!;
    const pooledChunks = [...p.chunks, p.rest!];
    assert.deepEqual(
      pooledChunks.map((c) => Buffer.from(c.data)),
      [...a.chunks, a.rest!].map((c) => Buffer.from(c.data)),
    );
    // Three chunks and a rest taken at once: four buffers, none shared.
    assert.equal(new Set(pooledChunks.map((c) => c.data.buffer)).size, 4);
    buffers.reuse();
    const again = buffers.take(pooledChunks[0]!.data.length);
    assert.ok(
      pooledChunks.some((c) => c.data.buffer === again.buffer),
      'memory handed out again',
    );
  });

  it('a commit is split at chunk boundaries and at maxBlockRows; commits of a few samples are packed again as one block', () => {
    const options = { chunkSamples: 300, maxBlockRows: 128 };
    const rows = rowsOf(700);
    // One commit of 290 samples, then 410 commits of one sample.
    const tail = new StreamTail<number>(STATE_FIELDS, [], options);
    const store = tailStore();
    const first = tail.append(samplesToColumns(rows.slice(0, 290), STATE_FIELDS)).chunk;
    assert.deepEqual(rowsOfBlocks(openChunk(first.data, 'tail')), [128, 128, 34]);
    tail.appended(store.put(first.data), first.count);
    for (let i = 290; i < rows.length; i++) {
      const { chunk } = tail.append(samplesToColumns([rows[i]!], STATE_FIELDS));
      tail.appended(store.put(chunk.data), chunk.count);
    }
    const sealed = tail.seal((id) => store.open(id))!;
    const blockRows = sealed.chunks.map((c) => rowsOfBlocks(openChunk(c.data, 'sealed')));
    // The ten single samples that end the first chunk become one block of ten (the block of 34 before
    // them is kept as it is); the second chunk is 300 single samples, packed again in blocks of 128.
    assert.deepEqual(blockRows, [
      [128, 128, 34, 10],
      [128, 128, 44],
    ]);
    assert.equal(sealed.rest!.count, 100, 'the rest stays as it was committed, until the next seal');
    tail.sealed(store.put(sealed.rest!.data));
    const final = tail.seal((id) => store.open(id), { final: true })!;
    assert.deepEqual(
      final.chunks.map((c) => rowsOfBlocks(openChunk(c.data, 'sealed'))),
      [[100]],
    );
    const back = [...sealed.chunks, ...final.chunks].flatMap((c) =>
      Array.from(openChunk(c.data, 'sealed').decodeAll().columns.y as Float64Array),
    );
    assertSameFloats(
      back,
      rows.map((r) => r.y as number),
      'y',
    );
  });

  it('a block damaged in the store after its commit is sealed with its checksum and found at its first read, never read as other samples', () => {
    const options = { chunkSamples: 300, maxBlockRows: 128 };
    const rows = rowsOf(300);
    const tail = new StreamTail<number>(STATE_FIELDS, [], options);
    const stored = new Map<number, Uint8Array>();
    for (let i = 0; i < rows.length; i += 100) {
      const { chunk } = tail.append(samplesToColumns(rows.slice(i, i + 100), STATE_FIELDS));
      stored.set(stored.size + 1, Buffer.from(chunk.data));
      tail.appended(stored.size, chunk.count);
    }
    // A bit of the second commit's block flipped on disk: the seal does not read its blocks.
    const damaged = stored.get(2)!;
    damaged[damaged.length - 5]! ^= 0x04;
    const sealed = tail.seal((id) => ({ data: stored.get(id)!, where: `tail ${id}` }))!;
    assert.equal(sealed.chunks.length, 1);
    const view = openChunk(sealed.chunks[0]!.data, 'sealed chunk 9');
    assert.deepEqual(
      view.decodeBlock(0).step,
      Float64Array.from({ length: 100 }, (_, i) => i),
    );
    assert.throws(() => view.decodeBlock(1), /sealed chunk 9: corrupt chunk \(block 1: checksum mismatch/);
    assert.throws(() => view.decodeAll(), /checksum mismatch/);
  });

  it('a tail chunk of this writer found changed in size is decoded and packed again, not cut where its blocks were', () => {
    const options = { chunkSamples: 200, maxBlockRows: 128 };
    const rows = rowsOf(200);
    const tail = new StreamTail<number>(STATE_FIELDS, [], options);
    const store = tailStore();
    const columns: ChunkColumn[] = STATE_FIELDS.map((f) => ({ name: f.name, type: f.type }));
    const indexOf = new Map(columns.map((c, i) => [c.name, i] as const));
    for (const [from, to] of [
      [0, 100],
      [100, 200],
    ] as const) {
      const batch = samplesToColumns(rows.slice(from, to), STATE_FIELDS);
      const { chunk } = tail.append(batch);
      // As stored, the first commit is the same samples written raw (another size than was packed).
      const data =
        from === 0
          ? assembleChunk(columns, [encodeBlock(batch, columns, indexOf, 0, 100, 'raw')])
          : chunk.data;
      tail.appended(store.put(data), chunk.count);
    }
    const sealed = tail.seal((id) => store.open(id))!;
    const back = openChunk(sealed.chunks[0]!.data, 'sealed').decodeAll();
    assertSameFloats(
      back.columns.x as Float64Array,
      rows.map((r) => r.x as number),
      'x',
    );
    assert.deepEqual(
      back.columns.lane,
      rows.map((r) => r.lane),
    );
  });

  it('tail chunks found in the store (raw, as simrec wrote them before; or of a writer that died) are packed again when sealed', () => {
    const options = { chunkSamples: 300, maxBlockRows: 128 };
    const rows = rowsOf(450);
    const columns: ChunkColumn[] = STATE_FIELDS.map((f) => ({ name: f.name, type: f.type }));
    const indexOf = new Map(columns.map((c, i) => [c.name, i] as const));
    const store = tailStore();
    const tail = new StreamTail<number>(STATE_FIELDS, [], options);
    // Two raw tail chunks of 200 and 150 samples (the first boundary, 300, falls inside the second).
    for (const [from, to] of [
      [0, 200],
      [200, 350],
    ] as const) {
      const batch = samplesToColumns(rows.slice(from, to), STATE_FIELDS);
      const data = assembleChunk(columns, [encodeBlock(batch, columns, indexOf, 0, to - from, 'raw')]);
      tail.adopt(store.put(data), to - from);
    }
    // Then this writer appends on.
    const { chunk } = tail.append(samplesToColumns(rows.slice(350), STATE_FIELDS));
    tail.appended(store.put(chunk.data), chunk.count);
    const sealed = tail.seal((id) => store.open(id))!;
    assert.deepEqual(
      sealed.chunks.map((c) => rowsOfBlocks(openChunk(c.data, 'sealed'))),
      [[128, 128, 44]],
    );
    assert.ok(sealed.chunks[0]!.data.length < 300 * 40, 'packed, not raw');
    assert.equal(sealed.rest!.count, 150);
    tail.sealed(store.put(sealed.rest!.data));
    const final = tail.seal((id) => store.open(id), { final: true })!;
    const back = [...sealed.chunks, ...final.chunks].flatMap((c) =>
      Array.from(openChunk(c.data, 'sealed').decodeAll().columns.x as Float64Array),
    );
    assertSameFloats(
      back,
      rows.map((r) => r.x as number),
      'x',
    );
  });
});
