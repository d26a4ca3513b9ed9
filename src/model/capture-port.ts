/**
 * The capture pipeline's data (deepdrive's architecture, docs/formats/deepdrive.md): a snapshot is the
 * agent's state at one moment plus any number of camera frames, handed to sinks that keep or forward it.
 *
 * The capture source and sink are ports: the model names them, src/record/capture implements them.
 */
import type { JsonValue } from './json.js';

/** How a frame's pixels are laid out: 8-bit RGB, half-float RGB (HDR), depth as half or full float. */
export const FRAME_ENCODINGS = ['rgb8', 'rgb16f', 'depth16f', 'depth32f'] as const;
export type FrameEncoding = (typeof FRAME_ENCODINGS)[number];

export const BYTES_PER_PIXEL: Record<FrameEncoding, number> = {
  rgb8: 3,
  rgb16f: 6,
  depth16f: 2,
  depth32f: 4,
};

export interface CameraFrame {
  /** The camera's id within its simulator (deepdrive's camera id, as text). */
  camera: string;
  encoding: FrameEncoding;
  width: number;
  height: number;
  /** Row-major, top row first, little-endian samples. */
  data: Uint8Array;
  metadata?: Record<string, JsonValue>;
}

export interface Snapshot {
  /** Microseconds on the run's clock. */
  t: number;
  step: number;
  /** The agent's state: canonical units (SI, right-handed, z up) and any source fields kept as given. */
  agent: Record<string, number | boolean | string>;
  frames: CameraFrame[];
}

export interface CaptureSink {
  write(snapshot: Snapshot): Promise<void>;
  close(): Promise<void>;
}

export interface CaptureSource {
  /** The next new snapshot, or null when the source has ended. */
  next(signal?: AbortSignal): Promise<Snapshot | null>;
}
