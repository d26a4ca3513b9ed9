import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimrecError } from '../src/model/errors.js';
import { STATE_FIELDS } from '../src/model/standard-streams.js';
import type { Sample } from '../src/model/stream.js';
import { decodeChunk, encodeChunk } from '../src/store/common/chunk-codec.js';

const states = (n: number, dt = 10_000): Sample[] =>
  Array.from({ length: n }, (_, i) => ({
    t: 5_000_000 + i * dt,
    step: i,
    x: 100 + i * 0.3,
    y: Math.sin(i / 50) * 20,
    yaw: i / 1000,
    speed: 12.5,
  }));

describe('chunk codec', () => {
  it('round-trips with and without deflate, regular and irregular time', () => {
    const regular = states(500);
    const irregular = regular.map((s, i) => ({ ...s, t: s.t + (i % 3) * 7, step: i * 2 + (i % 2) }));
    for (const samples of [regular, irregular])
      for (const deflateLevel of [0, 1, 6]) {
        const decoded = decodeChunk(encodeChunk(samples, STATE_FIELDS, { deflateLevel }), 'test');
        assert.deepEqual(decoded.samples(), samples);
        assert.equal(decoded.lastAtOrBefore(samples[10]!.t), 10);
        assert.equal(decoded.firstAtOrAfter(samples[10]!.t + 1), 11);
      }
  });

  it('a regular time base costs no bytes, and smooth floats shrink under deflate', () => {
    const samples = states(1000);
    const raw = encodeChunk(samples, STATE_FIELDS, { deflateLevel: 0 });
    const packed = encodeChunk(samples, STATE_FIELDS, { deflateLevel: 6 });
    // 4 float64 columns: 32 bytes a sample before compression, and no t or step bytes at all.
    assert.ok(raw.byteLength < 1000 * 32 + 1000, `raw ${raw.byteLength}`);
    assert.ok(packed.byteLength < raw.byteLength * 0.7, `deflated ${packed.byteLength} vs ${raw.byteLength}`);
  });

  it('refuses corrupt chunks with an error naming where', () => {
    const good = encodeChunk(states(10), STATE_FIELDS);
    const cases: [Uint8Array, RegExp][] = [
      [new Uint8Array([1, 2, 3]), /store.db chunk 7: corrupt chunk \(bad magic\)/],
      [good.subarray(0, 20), /header runs past the end|header is not JSON/],
      [good.subarray(0, good.length - 8), /column runs past the end of the body/],
    ];
    for (const [bytes, pattern] of cases)
      assert.throws(
        () => decodeChunk(bytes, 'store.db chunk 7'),
        (e: unknown) => e instanceof SimrecError && pattern.test(e.message),
      );
  });
});
