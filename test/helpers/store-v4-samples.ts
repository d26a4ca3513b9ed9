import type { Sample } from '../../src/model/stream.js';

/**
 * The samples of `test/fixtures/store-v4/`, as the simrec of 2026-11-26 recorded them: one car, 2,300
 * steps at 100 Hz, smooth floats with noise in their low bits, an acceleration of noise about zero
 * (and a -0), and a lane that changes once. Deterministic, so the fixture needs no file of expected
 * samples: these are what any simrec must read from it, bit for bit.
 */
export function storeV4Samples(): Sample[] {
  let seed = 20261126;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: 2300 }, (_, i) => ({
    t: 1_000_000 + i * 10_000,
    step: i,
    x: 100 + 0.125 * i + next() * 1e-3,
    y: -50 + 20 * Math.sin(i / 100),
    yaw: Math.cos(i / 100) / 3,
    speed: 12.5 + (next() - 0.5) * 0.2,
    accel: i === 7 ? -0 : (next() - 0.5) * 3,
    lane: i < 1000 ? 'E1_0' : 'E2_1',
  }));
}
