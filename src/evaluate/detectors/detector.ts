import type { Sample } from '../../model/stream.js';
import type { LanePosition } from '../../roadnet/spatial-index.js';
import type { ActorTrack } from '../actor-tracks.js';
import type { EvaluationEvent } from '../evaluation-types.js';
import type { MovingBox } from '../time-to-collision.js';

/** An actor present at a frame's time, with the index of its sample then. */
export interface Present {
  track: ActorTrack;
  k: number;
}

/** One frame of the scored actor (one of its state samples), as every detector sees it. */
export interface Frame {
  /** The scored actor and the index of this frame's sample in its track. */
  ego: ActorTrack;
  i: number;
  t: number;
  x: number;
  y: number;
  yaw: number;
  speed: number;
  /** The scored actor's acceleration, as the evaluation's mode measures it (Kinematics). */
  accel: number;
  /** The other actors present at t. */
  others: Present[];
  /** Every actor present at t, the scored one first. */
  present: Present[];
  /** Where the scored actor is on the road; undefined off the road (or when the run has no road network). */
  position: LanePosition | undefined;
  /** The frame's metrics, which each detector adds its own to. */
  sample: Sample;
}

/**
 * One metric, or one kind of event, over the frames of an evaluation: each frame in time order, then
 * the end. A detector keeps what it needs of the frames before (a lane left, an episode under way).
 */
export interface Detector {
  /** One frame: its metrics added to the frame's sample, its conditions to the detector's episodes. */
  frame(frame: Frame): void;
  /** The last frame was at `end`: the events found, those still under way closed there. */
  finish(end: number): EvaluationEvent[];
}

/** Below this speed (m/s) an actor is not moving. */
export const STOPPED = 0.1;

/** An actor's footprint at its sample k, moving as it was then. */
export const movingBox = (track: ActorTrack, k: number): MovingBox & { id: string } => ({
  id: track.actor.id,
  x: track.x[k]!,
  y: track.y[k]!,
  yaw: track.yaw[k]!,
  speed: track.speed[k]!,
  length: track.length,
  width: track.width,
});
