/**
 * Whether an actor is in the scene at a time: the rules the store's scene queries and the viewer's
 * playback share (docs/recording.md, "When actors come and go"). Pure functions over what a run description
 * already holds (the actor's presence intervals, its state stream's counts), no I/O, so the browser
 * runs the very same rules as the server.
 */
import { presenceAt, type PresenceInterval } from './run.js';
import type { StreamInfo } from './stream.js';

/**
 * How much older than its stream's usual sample interval an actor's latest state may be before the
 * actor counts as gone, when nothing said it left.
 */
export const STALE_AFTER_INTERVALS = 1.5;

/** Why an actor is not in the scene: it left (said so), went stale, or has not come yet. */
export type Absence = 'left' | 'stale' | 'not yet';

/**
 * A stream's usual sample interval: the time its actor was present over its samples, each gap between
 * presence stretches left out (a vehicle that left the area for a minute has no samples then). Null
 * with fewer than two samples: then there is nothing to judge staleness by.
 */
export function usualSampleInterval(
  stream: Pick<StreamInfo, 'samples' | 'begin' | 'end'>,
  presence: readonly PresenceInterval[] | undefined,
): number | null {
  if (stream.samples < 2 || stream.begin === null || stream.end === null) return null;
  let span = stream.end - stream.begin;
  if (presence)
    for (let i = 1; i < presence.length; i++) {
      const gapFrom = Math.max(presence[i - 1]!.to!, stream.begin);
      const gapTo = Math.min(presence[i]!.from, stream.end);
      if (gapTo > gapFrom) span -= gapTo - gapFrom;
    }
  return span > 0 ? span / (stream.samples - 1) : null;
}

/** The samples taken while the actor was present (all of them when its presence was never kept). */
export function presentOnly<S extends { t: number }>(
  samples: S[],
  presence: readonly PresenceInterval[] | undefined,
): S[] {
  if (!presence?.length) return samples;
  return samples.filter((s) => presenceAt(presence, s.t) !== undefined);
}

/**
 * Whether an actor is in the scene at t, given its latest state at or before t (null when presence
 * says so). Presence the recorder kept decides first: outside its stretches the actor is gone; inside
 * a stretch that someone ended (a leave) it is present. Where nothing said it left (an open stretch,
 * or a store from before presence was kept), the actor is gone once its latest state is older than
 * 1.5 times its stream's usual sample interval: a source that simply stops sending an actor has let
 * it go. `usualInterval` is usualSampleInterval of the actor's state stream (callers that ask for
 * many times compute it once).
 */
export function absenceAt(
  presence: readonly PresenceInterval[] | undefined,
  usualInterval: number | null,
  latest: number,
  t: number,
): Absence | null {
  if (presence && presence.length) {
    const stretch = presenceAt(presence, t);
    if (!stretch) return presence[0]!.from > t ? 'not yet' : 'left';
    if (stretch.to !== null) return null;
  }
  return usualInterval !== null && t - latest > STALE_AFTER_INTERVALS * usualInterval ? 'stale' : null;
}
