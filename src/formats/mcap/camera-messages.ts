/*
 * A camera's calibration and mount for Foxglove: with them its images stand in the 3D panel where the
 * camera looked from, and the image panel can draw the scene's markers over them.
 */

import {
  actorToSensor,
  multiplyQuaternions,
  type PerceptionSensor,
  type QuaternionTuple,
} from '../../model/perception.js';
import type { ActorInfo } from '../../model/run.js';
import { liveSensorOf } from '../common/labelled-images/live-captures.js';
import { foxgloveTime } from './mcap-layout.js';

/**
 * Foxglove's camera frame (x right in the image, y down, z along the view) in a sensor's own frame
 * (x along the view, y left, z up): the rotation ROS names the optical frame's.
 */
const OPTICAL_IN_SENSOR: QuaternionTuple = [-0.5, 0.5, -0.5, 0.5];

export interface Camera {
  id: string;
  /** Row-major pixel matrix, [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]. */
  K: number[][];
  width: number;
  height: number;
  /** The actor it is mounted on, and where: known for a camera declared live. */
  mount?: { actor: string; pose: NonNullable<PerceptionSensor['mount']> };
}

/** A sensor actor's camera, when its pixel matrix and image size are known. */
export function cameraOf(actor: ActorInfo): Camera | undefined {
  const imported = actorToSensor(actor);
  const sensor = imported ?? liveSensorOf(actor);
  const K = sensor?.intrinsics?.K;
  if (!sensor || !K || !sensor.imageSize) return undefined;
  const camera: Camera = { id: actor.id, K, ...sensor.imageSize };
  // An imported dataset's mount may be a world pose (SOLO) and its ego a Perception id, not an actor.
  if (!imported && sensor.ego !== null && sensor.mount)
    camera.mount = { actor: sensor.ego, pose: sensor.mount };
  return camera;
}

/** foxglove.CameraCalibration: a pinhole without distortion, in the camera's optical frame. */
export function cameraCalibration(camera: Camera, t: number): string {
  const [[fx, , cx], [, fy, cy]] = camera.K as [number[], number[]];
  return JSON.stringify({
    timestamp: foxgloveTime(t),
    frame_id: camera.id,
    width: camera.width,
    height: camera.height,
    distortion_model: 'plumb_bob',
    D: [0, 0, 0, 0, 0],
    K: camera.K.flat(),
    R: [1, 0, 0, 0, 1, 0, 0, 0, 1],
    P: [fx, 0, cx, 0, 0, fy, cy, 0, 0, 0, 1, 0],
  });
}

/** foxglove.FrameTransform: the camera's optical frame on the actor it is mounted on. */
export function cameraMount(camera: Camera, mount: NonNullable<Camera['mount']>, t: number): string {
  const { position, rotation } = mount.pose;
  const [x, y, z, w] = multiplyQuaternions(rotation, OPTICAL_IN_SENSOR);
  return JSON.stringify({
    timestamp: foxgloveTime(t),
    parent_frame_id: mount.actor,
    child_frame_id: camera.id,
    translation: { x: position[0], y: position[1], z: position[2] },
    rotation: { x, y, z, w },
  });
}
