/** Writes deepdrive's shared-memory capture region as its plugin lays it out, for the capture tests. */
import {
  CAMERA_DATA_OFFSET,
  CAMERA_HEADER_BYTES,
  CAPTURE_OFFSETS,
  HEADER_PADDING,
  MESSAGE_TYPE_CAPTURE,
  REGION_DATA_OFFSET,
} from '../../src/record/capture/deepdrive-region.js';

export interface RegionCamera {
  id: number;
  type: number;
  width: number;
  height: number;
  /** Half floats, w*h*3 then w*h. */
  rgb: Uint16Array;
  depth: Uint16Array;
}

/** A camera with recognisable pixels: half floats counting up from 1.0 (RGB) and from 2^-7 (depth). */
export const regionCamera = (id: number, width = 3, height = 2): RegionCamera => ({
  id,
  type: 1,
  width,
  height,
  rgb: Uint16Array.from({ length: width * height * 3 }, (_, i) => 0x3c00 + i),
  depth: Uint16Array.from({ length: width * height }, (_, i) => 0x2000 + i),
});

export interface RegionCapture {
  messageId: number;
  sequence: number;
  timestamp: number;
  /** Unreal: cm, left-handed; rotation in radians (roll, pitch, yaw); speed cm/s. */
  position: [number, number, number];
  rotation: [number, number, number];
  speed: number;
  cameras: RegionCamera[];
}

export function writeRegion(c: RegionCapture): Buffer {
  const cameraBytes = c.cameras.reduce((n, cam) => n + CAMERA_HEADER_BYTES + cam.width * cam.height * 8, 0);
  const size = CAPTURE_OFFSETS.cameras + cameraBytes;
  const out = Buffer.alloc(REGION_DATA_OFFSET + size);
  const b = REGION_DATA_OFFSET;
  out.writeUInt32LE(MESSAGE_TYPE_CAPTURE, b);
  out.writeUInt32LE(size, b + 4);
  out.writeUInt32LE(c.messageId, b + 8);
  out.writeUInt32LE(HEADER_PADDING, b + 12);
  out.writeDoubleLE(c.timestamp, b + CAPTURE_OFFSETS.creationTimestamp);
  out.writeUInt32LE(c.sequence, b + CAPTURE_OFFSETS.sequenceNumber);
  c.position.forEach((v, i) => out.writeDoubleLE(v, b + CAPTURE_OFFSETS.position + i * 8));
  c.rotation.forEach((v, i) => out.writeDoubleLE(v, b + CAPTURE_OFFSETS.rotation + i * 8));
  [450, 180, 150].forEach((v, i) => out.writeDoubleLE(v, b + CAPTURE_OFFSETS.dimension + i * 8));
  out.writeDoubleLE(c.speed, b + CAPTURE_OFFSETS.speed);
  out.writeDoubleLE(0.25, b + CAPTURE_OFFSETS.throttle);
  out.writeUInt32LE(c.cameras.length, b + CAPTURE_OFFSETS.numCameras);
  let at = b + CAPTURE_OFFSETS.cameras;
  c.cameras.forEach((cam, i) => {
    const pixels = cam.width * cam.height;
    out.writeUInt32LE(cam.type, at);
    out.writeUInt32LE(cam.id, at + 4);
    out.writeUInt32LE(i === c.cameras.length - 1 ? 0 : CAMERA_HEADER_BYTES + pixels * 8, at + 8);
    out.writeDoubleLE(1.7654, at + 16);
    out.writeDoubleLE(1.0, at + 24);
    out.writeInt32LE(cam.width, at + 32);
    out.writeInt32LE(cam.height, at + 36);
    out.writeUInt32LE(6, at + 40);
    out.writeUInt32LE(2, at + 44);
    out.writeUInt32LE(pixels * 6, at + 48);
    Buffer.from(cam.rgb.buffer, cam.rgb.byteOffset, pixels * 6).copy(out, at + CAMERA_DATA_OFFSET);
    Buffer.from(cam.depth.buffer, cam.depth.byteOffset, pixels * 2).copy(
      out,
      at + CAMERA_DATA_OFFSET + pixels * 6,
    );
    at += CAMERA_HEADER_BYTES + pixels * 8;
  });
  return out;
}
