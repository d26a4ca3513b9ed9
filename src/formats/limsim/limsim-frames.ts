import type { Sample } from '../../model/stream.js';
import { lerpAngle } from '../../model/units.js';
import { FRAME_MICROS } from './limsim-streams.js';

/** A sample placed on LimSim's frame grid. */
export interface FrameSample {
  frame: number;
  sample: Sample;
}

/** Samples this close to a frame's time are that frame's, as they are (a live simulator's clock jitters). */
const SNAP_MICROS = 5_000;
/** Fields that hold a count or an id and are never interpolated. */
const DISCRETE = new Set(['routeIdx', 'yawTurns', 'lane', 'lanePos', 'vtag', 'phase', 'program']);

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

/**
 * A stream's samples on LimSim's 0.1 s grid, frame 0 at `begin`, every frame filled. A stream already on
 * the grid (every sample within 5 ms of a frame, usually one per frame) is taken as it is; any other
 * (off the grid, or on it at 5 Hz or 1 Hz) is resampled: each frame
 * between its first and last sample gets the two samples either side interpolated (angles in `angles`
 * along the shorter arc; lanes, tags and other discrete fields from the nearer one), except across a
 * gap longer than 1.5 of the stream's usual interval, which stays a gap, as an actor out of view does.
 */
export function onFrameGrid(
  samples: readonly Sample[],
  begin: number,
  angles: ReadonlySet<string>,
): { frames: FrameSample[]; resampled: boolean } {
  const frames = samples.map((s) => Math.round((s.t - begin) / FRAME_MICROS));
  // On the grid, and one sample per frame: a 5 Hz or 1 Hz stream also lands on frames, but every
  // second or tenth one, and LimSim's replay ends at the first frame with no rows.
  const snapped =
    samples.every(
      (s, i) =>
        Math.abs(s.t - begin - frames[i]! * FRAME_MICROS) <= SNAP_MICROS &&
        (i === 0 || frames[i]! > frames[i - 1]!),
    ) && median(frames.slice(1).map((f, i) => f - frames[i]!)) <= 1;
  if (snapped)
    return { frames: samples.map((sample, i) => ({ frame: frames[i]!, sample })), resampled: false };

  const intervals = samples
    .slice(1)
    .map((s, i) => s.t - samples[i]!.t)
    .filter((d) => d > 0);
  const maxGap = 1.5 * median(intervals);
  const out: FrameSample[] = [];
  const first = Math.ceil((samples[0]!.t - begin) / FRAME_MICROS);
  const last = Math.floor((samples[samples.length - 1]!.t - begin) / FRAME_MICROS);
  let i = 0;
  for (let frame = first; frame <= last; frame++) {
    const t = begin + frame * FRAME_MICROS;
    while (i + 1 < samples.length && samples[i + 1]!.t <= t) i++;
    const a = samples[i]!;
    if (a.t === t) {
      out.push({ frame, sample: { ...a, t, step: frame } });
      continue;
    }
    const b = samples[i + 1];
    if (!b || b.t - a.t > maxGap) continue;
    out.push({ frame, sample: interpolate(a, b, t, frame, angles) });
  }
  return { frames: out, resampled: true };
}

function interpolate(a: Sample, b: Sample, t: number, frame: number, angles: ReadonlySet<string>): Sample {
  const u = (t - a.t) / (b.t - a.t);
  const nearer = u < 0.5 ? a : b;
  const sample: Sample = { t, step: frame };
  for (const key of Object.keys(nearer)) {
    if (key === 't' || key === 'step') continue;
    const x = a[key];
    const y = b[key];
    if (
      typeof x === 'number' &&
      typeof y === 'number' &&
      !DISCRETE.has(key) &&
      !(key === 'lanePos' && a.lane !== b.lane)
    )
      sample[key] = angles.has(key) ? lerpAngle(x, y, u) : x + (y - x) * u;
    else sample[key] = nearer[key];
  }
  return sample;
}
