import type { FieldDecl } from '../../model/stream.js';
import type { RunRecorder } from '../run-recorder.js';
import type { CameraFrame, CaptureSink, Snapshot } from '../../model/capture-port.js';

/** Raw frames are kept as they came; the encoding and size travel in the attachment's metadata. */
export const RAW_FRAME_MEDIA_TYPE = 'application/vnd.simrec.frame';

/**
 * Keeps snapshots with a run: the agent's state as the stream `<agent>/snapshot` (declared from the
 * first snapshot's fields; later fields are kept undeclared), each camera as an actor of kind
 * `sensor` with a `captures` stream, and every frame as an attachment `<camera>/<step>.<encoding>`.
 */
export class StoreSink implements CaptureSink {
  private readonly recorder: RunRecorder;
  private readonly agent: string;
  private agentDeclared = false;
  private readonly cameras = new Set<string>();

  constructor(recorder: RunRecorder, options: { agent?: string } = {}) {
    this.recorder = recorder;
    this.agent = options.agent ?? 'ego';
  }

  async write(snapshot: Snapshot): Promise<void> {
    const writes: Promise<unknown>[] = [];
    if (Object.keys(snapshot.agent).length > 0) {
      if (!this.agentDeclared) await this.declareAgent(snapshot);
      writes.push(
        this.recorder.append(`${this.agent}/snapshot`, {
          ...snapshot.agent,
          t: snapshot.t,
          step: snapshot.step,
        }),
      );
    }
    for (const frame of snapshot.frames) {
      const actor = cameraActor(frame.camera);
      if (!this.cameras.has(frame.camera)) await this.declareCamera(frame);
      const name = `${actor}/${String(snapshot.step).padStart(8, '0')}.${frame.encoding}`;
      writes.push(
        this.recorder.attach({
          name,
          mediaType: RAW_FRAME_MEDIA_TYPE,
          t: snapshot.t,
          data: frame.data,
          metadata: {
            ...frame.metadata,
            encoding: frame.encoding,
            width: frame.width,
            height: frame.height,
            step: snapshot.step,
          },
        }),
        this.recorder.append(`${actor}/captures`, {
          t: snapshot.t,
          step: snapshot.step,
          name,
          encoding: frame.encoding,
          width: frame.width,
          height: frame.height,
        }),
      );
    }
    await Promise.all(writes);
  }

  async close(): Promise<void> {
    await this.recorder.flush();
  }

  private async declareAgent(snapshot: Snapshot): Promise<void> {
    this.agentDeclared = true;
    await this.recorder.declareActor({ id: this.agent, kind: 'ego' });
    const fields: FieldDecl[] = Object.entries(snapshot.agent).map(([name, value]) => ({
      name,
      type: typeof value === 'number' ? 'f64' : typeof value === 'boolean' ? 'bool' : 'string',
      optional: true,
    }));
    await this.recorder.declareStream({ name: 'snapshot', actor: this.agent, fields });
  }

  private async declareCamera(frame: CameraFrame): Promise<void> {
    this.cameras.add(frame.camera);
    const id = cameraActor(frame.camera);
    await this.recorder.declareActor({
      id,
      kind: 'sensor',
      sourceClass: 'camera',
      attributes: { camera: frame.camera, ...(frame.metadata ?? {}) },
    });
    await this.recorder.declareStream({
      name: 'captures',
      actor: id,
      fields: [
        { name: 'name', type: 'string' },
        { name: 'encoding', type: 'string' },
        { name: 'width', type: 'i32' },
        { name: 'height', type: 'i32' },
      ],
    });
  }
}

export const cameraActor = (camera: string): string => `camera_${camera}`;
