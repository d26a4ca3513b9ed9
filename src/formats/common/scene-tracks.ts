import { absenceAt, usualSampleInterval } from '../../model/presence.js';
import type { RoadNetwork } from '../../model/roadnet.js';
import type { ActorInfo } from '../../model/run.js';
import type { SeriesView } from '../../model/sample-series.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import type { Sample, StreamInfo } from '../../model/stream.js';
import { signalHeads, type SignalHead } from '../../roadnet/signal-heads.js';

/*
 * A run's actors walked frame by frame, as the MCAP writers draw them (Foxglove's scene, OSI's
 * ground truth): each track is read forward with a cursor, so a frame costs what changed in it.
 */

/** An actor's samples of one stream, and a cursor into them. */
export interface Track {
  actor: ActorInfo;
  samples: SeriesView;
  /** The stream's usual interval between samples (presence: a gap longer than it is an absence). */
  usual: number | null;
  next: number;
}

/** A traffic light's recorded states (its `signal` stream) and where its heads stand. */
export interface LightTrack extends Track {
  heads: SignalHead[];
}

/** Every time at which some actor's state was recorded: the scene's frames. */
export function frameTimes(tracks: readonly Track[]): number[] {
  const times = new Set<number>();
  for (const t of tracks) for (const time of t.samples.times) times.add(time);
  return [...times].sort((a, b) => a - b);
}

/** The index of the track's latest sample at or before t, -1 before the first (tracks are walked forward). */
export function latestIndex(track: Track, t: number): number {
  const times = track.samples.times;
  while (track.next < times.length && times[track.next]! <= t) track.next++;
  return track.next - 1;
}

/** The track's latest sample at or before t (tracks are walked forward, frame after frame). */
export function latest(track: Track, t: number): Sample | undefined {
  const i = latestIndex(track, t);
  return i >= 0 ? track.samples.at(i) : undefined;
}

/**
 * The index of the actor's latest sample at or before t if the actor is present at t (not yet gone,
 * not absent), else -1.
 */
export function presentIndex(track: Track, t: number): number {
  const i = latestIndex(track, t);
  return i >= 0 && absenceAt(track.actor.presence, track.usual, track.samples.times[i]!, t) === null ? i : -1;
}

/** The actor's latest sample at or before t, if the actor is present at t (not yet gone, not absent). */
export function presentSample(track: Track, t: number): Sample | undefined {
  const i = presentIndex(track, t);
  return i >= 0 ? track.samples.at(i) : undefined;
}

/** Another cursor over the same samples, for a second writer walking the frames. */
export const rewound = <T extends Track>(track: T): T => ({ ...track, next: 0 });

/** Default boxes for actors declared without extents (metres). */
const DEFAULT_EXTENTS: Record<string, { length: number; width: number; height: number }> = {
  pedestrian: { length: 0.6, width: 0.6, height: 1.8 },
  cyclist: { length: 1.8, width: 0.8, height: 1.7 },
};
const CAR_EXTENTS = { length: 4.5, width: 1.8, height: 1.5 };

export function extentsOf(actor: ActorInfo): { length: number; width: number; height: number } {
  const fallback = DEFAULT_EXTENTS[actor.kind] ?? CAR_EXTENTS;
  return {
    length: actor.extents?.length || fallback.length,
    width: actor.extents?.width || fallback.width,
    height: actor.extents?.height || fallback.height,
  };
}

export const num = (v: unknown, fallback = 0): number => (typeof v === 'number' ? v : fallback);

/** The run's actors that have a `state` stream, each a track over its samples. */
export function stateTracks(
  actors: readonly ActorInfo[],
  byId: ReadonlyMap<string, StreamInfo>,
  samplesOf: ReadonlyMap<string, SeriesView>,
): Track[] {
  return actors
    .filter((a) => byId.has(`${a.id}/${STATE_STREAM}`))
    .map((actor) => {
      const stream = byId.get(`${actor.id}/${STATE_STREAM}`)!;
      return {
        actor,
        samples: samplesOf.get(stream.id)!,
        usual: usualSampleInterval(stream, actor.presence),
        next: 0,
      };
    });
}

/** The run's traffic lights that have a `signal` stream and heads in the network. */
export function lightTracks(
  actors: readonly ActorInfo[],
  byId: ReadonlyMap<string, StreamInfo>,
  samplesOf: ReadonlyMap<string, SeriesView>,
  network: RoadNetwork | undefined,
): LightTrack[] {
  if (!network) return [];
  const heads = signalHeads(network);
  return actors
    .filter((a) => a.kind === 'traffic_light' && byId.has(`${a.id}/signal`))
    .map((actor) => ({
      actor,
      samples: samplesOf.get(`${actor.id}/signal`)!,
      usual: null,
      next: 0,
      heads: heads.filter((h) => h.light === actor.id),
    }))
    .filter((l) => l.heads.length > 0);
}
