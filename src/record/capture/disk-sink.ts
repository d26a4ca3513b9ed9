/**
 * Keeps snapshots in a folder, readable without simrec:
 *
 *   agent.jsonl                 one line per captured snapshot: { t, step, ...agent state }
 *   <camera>/frames.jsonl       one line per frame: { t, step, file, encoding, width, height, metadata }
 *   <camera>/<step>.png         8-bit RGB frames
 *   <camera>/<step>.<encoding>  half-float RGB (rgb16f), depth (depth16f, depth32f): the samples as they
 *                               came, row-major, top row first, little-endian, no header
 *
 * Unlike deepdrive's disk sink (one folder per snapshot, the agent state in a separate dump), each camera
 * is a folder of its own and the agent state sits beside it, so one camera's frames can be taken away
 * alone and a snapshot's state is found by its step. Frame files are written before the index line that
 * names them: a crash leaves at most a file no index names, never an index line without its file.
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encode as encodePng } from 'fast-png';
import { invalid } from '../../model/errors.js';
import {
  BYTES_PER_PIXEL,
  type CameraFrame,
  type CaptureSink,
  type Snapshot,
} from '../../model/capture-port.js';

export const AGENT_FILE = 'agent.jsonl';
export const FRAMES_INDEX = 'frames.jsonl';

/** A camera id becomes a folder name; anything that could leave the sink's folder is refused. */
function cameraFolder(camera: string): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(camera) || camera === '.' || camera === '..')
    throw invalid(
      `disk sink: camera id ${JSON.stringify(camera)} is not a safe folder name (letters, digits, _ . -)`,
    );
  return camera;
}

/** The frame's folder name, once its size matches its encoding. */
function checkFrame(snapshot: Snapshot, frame: CameraFrame): string {
  const folder = cameraFolder(frame.camera);
  const expected = frame.width * frame.height * BYTES_PER_PIXEL[frame.encoding];
  if (frame.data.byteLength !== expected)
    throw invalid(
      `disk sink: camera ${frame.camera} step ${snapshot.step}: ${frame.data.byteLength} bytes for ${frame.width}x${frame.height} ${frame.encoding}, expected ${expected}`,
    );
  return folder;
}

export function frameFileName(step: number, encoding: CameraFrame['encoding']): string {
  const stem = String(step).padStart(8, '0');
  return encoding === 'rgb8' ? `${stem}.png` : `${stem}.${encoding}`;
}

export class DiskSink implements CaptureSink {
  private readonly dir: string;
  private readonly cameras = new Set<string>();
  private ready: Promise<void> | null = null;
  /** Frames and agent lines written. */
  readonly counts = { snapshots: 0, frames: 0 };

  constructor(dir: string) {
    this.dir = dir;
  }

  async write(snapshot: Snapshot): Promise<void> {
    this.ready ??= mkdir(this.dir, { recursive: true }).then(() => undefined);
    await this.ready;
    // Every frame is checked before any is written: a bad one leaves nothing of its snapshot behind.
    const folders = snapshot.frames.map((frame) => checkFrame(snapshot, frame));
    // Frames first, in parallel; the agent line last, so a line in agent.jsonl means its frames are there.
    await Promise.all(snapshot.frames.map((frame, i) => this.writeFrame(snapshot, frame, folders[i]!)));
    if (Object.keys(snapshot.agent).length > 0) {
      const line = JSON.stringify({ t: snapshot.t, step: snapshot.step, ...snapshot.agent });
      await appendFile(join(this.dir, AGENT_FILE), line + '\n');
      this.counts.snapshots++;
    }
  }

  async close(): Promise<void> {
    await this.ready;
  }

  private async writeFrame(snapshot: Snapshot, frame: CameraFrame, name: string): Promise<void> {
    const folder = join(this.dir, name);
    if (!this.cameras.has(frame.camera)) {
      await mkdir(folder, { recursive: true });
      this.cameras.add(frame.camera);
    }
    const file = frameFileName(snapshot.step, frame.encoding);
    const bytes =
      frame.encoding === 'rgb8'
        ? encodePng({ width: frame.width, height: frame.height, data: frame.data, channels: 3, depth: 8 })
        : frame.data;
    await writeFile(join(folder, file), bytes);
    const entry = {
      t: snapshot.t,
      step: snapshot.step,
      file,
      encoding: frame.encoding,
      width: frame.width,
      height: frame.height,
      ...(frame.metadata ? { metadata: frame.metadata } : {}),
    };
    await appendFile(join(folder, FRAMES_INDEX), JSON.stringify(entry) + '\n');
    this.counts.frames++;
  }
}
