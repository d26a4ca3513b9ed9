import type { CaptureSink, Snapshot } from '../../model/capture-port.js';

/**
 * Decides which snapshots and frames are captured, and hands them to the sinks. A capture interval is
 * kept per source (the agent, and each camera) as deepdrive's CaptureInterval: 0 every snapshot,
 * > 0 at most once per that many seconds, < 0 only when requested. Cameras can be switched off and
 * on while a run goes on.
 */
export class CapturePipeline {
  private readonly sinks: CaptureSink[];
  private readonly intervals = new Map<string, number>();
  private readonly lastCaptured = new Map<string, number>();
  private readonly inactive = new Set<string>();
  private readonly requested = new Set<string>();
  private defaultInterval: number;
  /** Snapshots offered and what was kept of them. */
  readonly counts = { offered: 0, captured: 0, frames: 0 };

  /** The agent's own state is the source named by this key. */
  static readonly AGENT = 'agent';

  constructor(options: { sinks: CaptureSink[]; interval?: number }) {
    this.sinks = options.sinks;
    this.defaultInterval = options.interval ?? 0;
  }

  /** Sets the interval (seconds) of one source, or of every source without its own. */
  setInterval(seconds: number, source?: string): void {
    if (!Number.isFinite(seconds))
      throw new Error(`capture interval: expected a number of seconds, got ${seconds}`);
    if (source === undefined) this.defaultInterval = seconds;
    else this.intervals.set(source, seconds);
  }

  activate(camera: string): void {
    this.inactive.delete(camera);
  }

  deactivate(camera: string): void {
    this.inactive.add(camera);
  }

  /** Captures the source at the next snapshot whatever its interval (a synchronous capture). */
  request(source: string = CapturePipeline.AGENT): void {
    this.requested.add(source);
  }

  /** Offers a snapshot; resolves once every sink has what was captured of it. */
  async offer(snapshot: Snapshot): Promise<boolean> {
    this.counts.offered++;
    const frames = snapshot.frames.filter(
      (f) => !this.inactive.has(f.camera) && this.due(f.camera, snapshot.t),
    );
    const agent = this.due(CapturePipeline.AGENT, snapshot.t);
    if (!agent && frames.length === 0) return false;
    const captured: Snapshot = { ...snapshot, frames };
    if (!agent) captured.agent = {};
    this.counts.captured++;
    this.counts.frames += frames.length;
    await Promise.all(this.sinks.map((sink) => sink.write(captured)));
    return true;
  }

  async close(): Promise<void> {
    await Promise.all(this.sinks.map((sink) => sink.close()));
  }

  private due(source: string, t: number): boolean {
    if (this.requested.delete(source)) {
      this.lastCaptured.set(source, t);
      return true;
    }
    const interval = this.intervals.get(source) ?? this.defaultInterval;
    if (interval < 0) return false;
    const last = this.lastCaptured.get(source);
    if (interval > 0 && last !== undefined && t - last < interval * 1_000_000) return false;
    this.lastCaptured.set(source, t);
    return true;
  }
}
