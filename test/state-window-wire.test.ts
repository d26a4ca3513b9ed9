/**
 * The binary state window (src/server/state-window-wire.ts): what the server encodes the viewer decodes,
 * value for value, and bytes that are not such a window are refused by what is wrong with them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeStateWindow,
  encodeStateWindow,
  STATE_WINDOW_VERSION,
  type BinaryStateWindow,
  type StateWindowColumns,
} from '../src/server/state-window-wire.js';

function columns(t: number[], x: number[], y: number[], yaw: number[], speed: number[]): StateWindowColumns {
  return {
    t: Float64Array.from(t),
    x: Float64Array.from(x),
    y: Float64Array.from(y),
    yaw: Float64Array.from(yaw),
    speed: Float64Array.from(speed),
  };
}

/** A window's bytes, its actors' columns copied in. */
function encode(window: BinaryStateWindow): Uint8Array {
  const columns = [...window.actors.values()];
  return encodeStateWindow(
    { from: window.from, to: window.to, actors: [...window.actors].map(([id, c]) => [id, c.t.length]) },
    (k, out) => {
      for (const name of ['t', 'x', 'y', 'yaw', 'speed'] as const) out[name].set(columns[k]![name]);
    },
  );
}

/** The bytes as a fetch gives them: an ArrayBuffer of their own. */
const received = (bytes: Uint8Array): ArrayBuffer =>
  bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

describe('binary state windows', () => {
  it('decode to what was encoded: times and positions exact, heading and speed as 32-bit, NaN kept, actors in order', () => {
    const begin = 1_750_000_000_123_456;
    // Ids of every length, so the header's length is not a multiple of 8 for some of them.
    for (const ids of [['a'], ['car_1', 'ped-ü'], ['x'.repeat(13), 'y', 'zz']]) {
      const actors = new Map<string, StateWindowColumns>();
      ids.forEach((id, k) =>
        actors.set(
          id,
          columns(
            [begin + k, begin + 100_000 + k, begin + 200_000 + k],
            [512_345.678_901_234_5, -0.1, NaN],
            [5_412_345.000_000_1, 1e-300, 3],
            [Math.PI, NaN, -1.5],
            [13.37, 0, NaN],
          ),
        ),
      );
      actors.set('empty', columns([], [], [], [], []));
      const window: BinaryStateWindow = { from: begin, to: begin + 999_999, actors, rows: ids.length * 3 };
      const bytes = encode(window);
      assert.equal(bytes.length % 8, 0);
      const decoded = decodeStateWindow(received(bytes));
      assert.equal(decoded.from, window.from);
      assert.equal(decoded.to, window.to);
      assert.equal(decoded.rows, window.rows);
      assert.deepEqual([...decoded.actors.keys()], [...actors.keys()]);
      for (const [id, c] of actors) {
        const d = decoded.actors.get(id)!;
        assert.deepEqual(Array.from(d.t), Array.from(c.t), id);
        assert.deepEqual(Array.from(d.x), Array.from(c.x), id);
        assert.deepEqual(Array.from(d.y), Array.from(c.y), id);
        assert.deepEqual(Array.from(d.yaw), Array.from(c.yaw, Math.fround), id);
        assert.deepEqual(Array.from(d.speed), Array.from(c.speed, Math.fround), id);
        assert.ok(d.yaw instanceof Float32Array && d.x instanceof Float64Array);
      }
    }
  });

  it('refuse bytes that are not a window of this version, saying what was found and expected', () => {
    const bytes = encode({
      from: 0,
      to: 1,
      actors: new Map([['a', columns([0, 1], [1, 2], [3, 4], [0, 0], [1, 1])]]),
      rows: 2,
    });
    const json = new TextEncoder().encode('{"error":"nope"}');
    assert.throws(() => decodeStateWindow(received(json)), {
      message: 'state window: expected bytes starting "SRSW", got "{\\"er"',
    });
    const newer = bytes.slice();
    new DataView(newer.buffer).setUint32(4, STATE_WINDOW_VERSION + 1, true);
    assert.throws(() => decodeStateWindow(received(newer)), {
      message: `state window: version ${STATE_WINDOW_VERSION + 1}; this viewer reads version ${STATE_WINDOW_VERSION}`,
    });
    assert.throws(() => decodeStateWindow(received(bytes.subarray(0, bytes.length - 8))), {
      message: `state window: ${bytes.length - 8} bytes for 2 samples; expected ${bytes.length}`,
    });
  });
});
