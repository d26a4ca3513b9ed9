import type { Sample } from '../../src/model/stream.js';

/** The i-th sample the crash writer records; the parent recomputes it to check what survived. */
export const crashSample = (i: number): Sample => ({
  t: 1_000_000 + i * 10_000,
  step: i,
  x: i * 0.25,
  y: Math.sin(i / 10),
  yaw: (i % 628) / 100,
  speed: 10 + (i % 7),
  tag: `s${i}`,
});
