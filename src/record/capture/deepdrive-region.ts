/**
 * deepdrive's shared-memory capture region (docs/formats/deepdrive.md, "The region"), read as
 * its plugin writes it on Linux x86-64: a plain file holding a small header (with a process-shared
 * pthread mutex) and one message slot, overwritten in place. Only a Capture message is a snapshot.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { invalid, SimrecError } from '../../model/errors.js';
import { unrealLocationToCanonical, unrealRotatorToCanonical, radToDeg } from '../../model/units.js';
import type { CameraFrame, CaptureSource, Snapshot } from '../../model/capture-port.js';

export const DEEPDRIVE_SHM_PATH = '/tmp/deepdrive_shared_memory';
/** USharedMemCaptureSinkComponent's MaxSharedMemSize. */
export const DEEPDRIVE_SHM_SIZE = 157_286_400;

/**
 * SharedMemoryData on Linux x86-64: u64 version_read, u64 version_written, u32 is_client_connected,
 * pthread_mutex_t (40 bytes, 8-aligned, at 24), u32 mutex_created_successfully (at 64), data (at 68).
 */
export const REGION_DATA_OFFSET = 68;
export const MESSAGE_TYPE_CAPTURE = 1;
export const HEADER_PADDING = 0xefbeadde;
export const CAMERA_HEADER_BYTES = 64;
export const CAMERA_DATA_OFFSET = 56;
export const CAMERA_TYPES = [
  'none',
  'front',
  'left',
  'right',
  'front_left',
  'front_right',
  'back_left',
  'back_right',
  'back',
] as const;

/** Offsets within DeepDriveCaptureMessage (from the start of its 16-byte header). */
export const CAPTURE_OFFSETS = {
  creationTimestamp: 16,
  sequenceNumber: 24,
  lastCollision: 32,
  position: 232,
  rotation: 256,
  velocity: 280,
  acceleration: 304,
  angularVelocity: 328,
  angularAcceleration: 352,
  forwardVector: 376,
  dimension: 448,
  distanceAlongRoute: 472,
  routeLength: 480,
  distanceToCenterOfLane: 488,
  distanceToNextAgent: 496,
  distanceToPrevAgent: 504,
  distanceToNextOpposingAgent: 512,
  isPassing: 520,
  lapNumber: 524,
  speed: 528,
  steering: 536,
  throttle: 544,
  brake: 552,
  handbrake: 560,
  isGameDriving: 564,
  isResetting: 568,
  scenarioFinished: 572,
  numCameras: 580,
  cameras: 584,
} as const;

export interface DeepDriveMessage {
  messageId: number;
  /** The capture's own clock (FPlatformTime::Seconds, process-relative). */
  creationTimestamp: number;
  sequenceNumber: number;
  snapshot: Omit<Snapshot, 't' | 'step'>;
}

/**
 * Reads the message in a region. Returns null when the slot holds no capture yet (message id 0, or
 * another message type); throws naming the offset when the region is malformed.
 */
export function parseDeepDriveRegion(
  region: Uint8Array,
  where = 'deepdrive region',
): DeepDriveMessage | null {
  const view = new DataView(region.buffer, region.byteOffset, region.byteLength);
  const base = REGION_DATA_OFFSET;
  if (region.byteLength < base + 16)
    throw invalid(`${where}: ${region.byteLength} bytes is too short for a message header`);
  const type = view.getUint32(base, true);
  const size = view.getUint32(base + 4, true);
  const messageId = view.getUint32(base + 8, true);
  if (messageId === 0 || type !== MESSAGE_TYPE_CAPTURE) return null;
  if (view.getUint32(base + 12, true) !== HEADER_PADDING)
    throw invalid(`${where}: header_padding at offset ${base + 12} is not 0xEFBEADDE`);
  if (size < CAPTURE_OFFSETS.cameras || base + size > region.byteLength)
    throw invalid(`${where}: message_size ${size} does not fit the region of ${region.byteLength} bytes`);
  const f64 = (o: number): number => view.getFloat64(base + o, true);
  const u32 = (o: number): number => view.getUint32(base + o, true);
  const v3 = (o: number): [number, number, number] => [f64(o), f64(o + 8), f64(o + 16)];

  const [px, py, pz] = v3(CAPTURE_OFFSETS.position);
  const position = unrealLocationToCanonical({ x: px, y: py, z: pz });
  // The plugin converts the rotator to radians, (roll, pitch, yaw) in the vector's x, y, z.
  const [roll, pitch, yaw] = v3(CAPTURE_OFFSETS.rotation);
  const rotation = unrealRotatorToCanonical({
    roll: radToDeg(roll),
    pitch: radToDeg(pitch),
    yaw: radToDeg(yaw),
  });
  const [vx, vy, vz] = v3(CAPTURE_OFFSETS.velocity);
  const velocity = unrealLocationToCanonical({ x: vx, y: vy, z: vz });
  const [dx, dy, dz] = v3(CAPTURE_OFFSETS.dimension);
  const agent: Snapshot['agent'] = {
    x: position.x,
    y: position.y,
    z: position.z,
    roll: rotation.roll,
    pitch: rotation.pitch,
    yaw: rotation.yaw,
    vx: velocity.x,
    vy: velocity.y,
    vz: velocity.z,
    // cm/s forward speed in the source.
    speed: f64(CAPTURE_OFFSETS.speed) / 100,
    steering: f64(CAPTURE_OFFSETS.steering),
    throttle: f64(CAPTURE_OFFSETS.throttle),
    brake: f64(CAPTURE_OFFSETS.brake),
    handbrake: u32(CAPTURE_OFFSETS.handbrake) !== 0,
    length: dx / 100,
    width: dy / 100,
    height: dz / 100,
    distance_along_route: f64(CAPTURE_OFFSETS.distanceAlongRoute) / 100,
    route_length: f64(CAPTURE_OFFSETS.routeLength) / 100,
    distance_to_center_of_lane: f64(CAPTURE_OFFSETS.distanceToCenterOfLane) / 100,
    lap_number: view.getInt32(base + CAPTURE_OFFSETS.lapNumber, true),
    is_game_driving: u32(CAPTURE_OFFSETS.isGameDriving) !== 0,
    is_resetting: u32(CAPTURE_OFFSETS.isResetting) !== 0,
    scenario_finished: u32(CAPTURE_OFFSETS.scenarioFinished) !== 0,
    source_timestamp: f64(CAPTURE_OFFSETS.creationTimestamp),
  };

  const frames: CameraFrame[] = [];
  const cameraCount = u32(CAPTURE_OFFSETS.numCameras);
  if (cameraCount > 64)
    throw invalid(
      `${where}: num_cameras ${cameraCount} at offset ${base + CAPTURE_OFFSETS.numCameras} is not plausible`,
    );
  let at = CAPTURE_OFFSETS.cameras;
  for (let i = 0; i < cameraCount; i++) {
    const cam = `${where} camera ${i} at offset ${base + at}`;
    if (at + CAMERA_HEADER_BYTES > size) throw invalid(`${cam}: its header runs past message_size ${size}`);
    const typeIndex = u32(at);
    const id = u32(at + 4);
    const next = u32(at + 8);
    const width = view.getInt32(base + at + 32, true);
    const height = view.getInt32(base + at + 36, true);
    const bytesPerPixel = u32(at + 40);
    const bytesPerDepth = u32(at + 44);
    const depthOffset = u32(at + 48);
    if (width <= 0 || height <= 0 || width > 8192 || height > 8192)
      throw invalid(`${cam}: capture size ${width}x${height} is not plausible`);
    if (bytesPerPixel !== 6 || bytesPerDepth !== 2 || depthOffset !== width * height * 6)
      throw invalid(
        `${cam}: expected half-float RGB (6 B) and depth (2 B) with depth at w*h*6, got ${bytesPerPixel}, ${bytesPerDepth}, ${depthOffset}`,
      );
    const start = at + CAMERA_DATA_OFFSET;
    const end = start + width * height * 8;
    if (end > size) throw invalid(`${cam}: ${width}x${height} pixels run past message_size ${size}`);
    const camera = `${id}`;
    const metadata = {
      type: CAMERA_TYPES[typeIndex] ?? `type_${typeIndex}`,
      horizontal_field_of_view: f64(at + 16),
      aspect_ratio: f64(at + 24),
    };
    frames.push(
      {
        camera,
        encoding: 'rgb16f',
        width,
        height,
        data: region.slice(base + start, base + start + depthOffset),
        metadata,
      },
      // deepdrive's depth is the source depth divided by 65535, as half floats.
      {
        camera: `${camera}_depth`,
        encoding: 'depth16f',
        width,
        height,
        data: region.slice(base + start + depthOffset, base + end),
        metadata,
      },
    );
    if (next === 0) break;
    at += next;
  }
  return {
    messageId,
    creationTimestamp: f64(CAPTURE_OFFSETS.creationTimestamp),
    sequenceNumber: u32(CAPTURE_OFFSETS.sequenceNumber),
    snapshot: { agent, frames },
  };
}

/**
 * Polls a deepdrive region and yields each new capture once: a message id it has not seen (as
 * deepdrive's own reader decides) whose sequence number is not the last one taken. Like deepdrive's
 * reader it sees only the latest snapshot: captures written faster than it polls are missed.
 *
 * It reads the 16-byte message header first and the message only when the id is new: the plugin's file
 * is 150 MiB whatever the message holds. Node cannot take the plugin's pthread mutex, so a message
 * overwritten while it was read is told by its id having changed afterwards; such a read is dropped,
 * and a message that does not parse is read once more before it is called malformed.
 */
export class DeepDriveRegionSource implements CaptureSource {
  private readonly path: string;
  private readonly pollMs: number;
  private readonly size: number;
  private file: FileHandle | null = null;
  private lastId = 0;
  private lastSequence: number | null = null;
  private lastTimestamp: number | null = null;
  private firstT: number | null = null;

  constructor(options: { path?: string; pollMs?: number; size?: number } = {}) {
    this.path = options.path ?? DEEPDRIVE_SHM_PATH;
    this.pollMs = options.pollMs ?? 5;
    this.size = options.size ?? DEEPDRIVE_SHM_SIZE;
  }

  /**
   * The first snapshot's time on the run's clock (µs); later ones follow deepdrive's own clock from it.
   * Unset, it is the moment the first snapshot is taken.
   */
  begin: number | undefined;

  async next(signal?: AbortSignal): Promise<Snapshot | null> {
    this.file ??= await this.openRegion();
    /** A message id that failed to parse once: failing again, it is malformed, not torn. */
    let suspect: number | null = null;
    while (!signal?.aborted) {
      const header = await this.read(0, REGION_DATA_OFFSET + 16);
      const id = header.byteLength >= REGION_DATA_OFFSET + 12 ? readU32(header, REGION_DATA_OFFSET + 8) : 0;
      // An empty file is a region the plugin has created but not yet sized: no snapshot yet.
      if (header.byteLength > 0 && (id !== this.lastId || header.byteLength < REGION_DATA_OFFSET + 16)) {
        const size =
          header.byteLength >= REGION_DATA_OFFSET + 8 ? readU32(header, REGION_DATA_OFFSET + 4) : 0;
        const { size: fileSize } = await this.file.stat();
        const region = await this.read(0, Math.min(REGION_DATA_OFFSET + size, fileSize, this.size));
        let message: DeepDriveMessage | null = null;
        try {
          message = parseDeepDriveRegion(region, this.path);
          // No capture in the slot (id 0, or another message type): not worth reading again until it changes.
          if (!message) this.lastId = id;
        } catch (error) {
          if ((await this.currentId()) === id && suspect === id) throw error;
          suspect = id;
        }
        if (message && (await this.currentId()) === message.messageId) {
          this.lastId = message.messageId;
          // The same capture published again under a new message id is not a new snapshot.
          if (message.sequenceNumber !== this.lastSequence) return this.take(message);
        }
      }
      await new Promise((r) => setTimeout(r, this.pollMs));
    }
    return null;
  }

  async close(): Promise<void> {
    await this.file?.close();
    this.file = null;
  }

  private take(message: DeepDriveMessage): Snapshot {
    const timestamp = message.creationTimestamp;
    if (this.lastTimestamp !== null && !(timestamp >= this.lastTimestamp))
      throw invalid(
        `${this.path}: creation_timestamp at offset ${REGION_DATA_OFFSET + CAPTURE_OFFSETS.creationTimestamp} went back from ${this.lastTimestamp} to ${timestamp} s (message ${message.messageId}); a restarted deepdrive is a new run`,
      );
    this.lastTimestamp = timestamp;
    this.lastSequence = message.sequenceNumber;
    this.firstT ??= timestamp;
    const begin = (this.begin ??= Date.now() * 1000);
    return {
      t: begin + Math.round((timestamp - this.firstT) * 1_000_000),
      step: message.sequenceNumber,
      ...message.snapshot,
    };
  }

  private async openRegion(): Promise<FileHandle> {
    try {
      return await open(this.path, 'r');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT')
        throw new SimrecError(
          'not_found',
          `no deepdrive region at ${this.path}: start deepdrive with its shared-memory capture sink, or name the region's file`,
        );
      throw new SimrecError(
        'io',
        `cannot open the deepdrive region ${this.path}: ${(error as Error).message}`,
      );
    }
  }

  private async read(position: number, length: number): Promise<Uint8Array> {
    const buffer = new Uint8Array(Math.max(0, length));
    const { bytesRead } = await this.file!.read(buffer, 0, buffer.length, position);
    return buffer.subarray(0, bytesRead);
  }

  private async currentId(): Promise<number> {
    const bytes = await this.read(REGION_DATA_OFFSET + 8, 4);
    return bytes.byteLength === 4 ? readU32(bytes, 0) : 0;
  }
}

const readU32 = (bytes: Uint8Array, at: number): number =>
  new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(at, true);
