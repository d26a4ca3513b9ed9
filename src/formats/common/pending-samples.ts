import type { RunSink } from '../../model/run-ports.js';
import type { StreamAppend } from '../../model/store-port.js';
import type { Sample } from '../../model/stream.js';

/** Samples an import gathers before it appends them, of all its streams together. */
export const IMPORT_BATCH = 20_000;

/**
 * Samples of several streams gathered across a file's messages and appended together once there are
 * `batch` of them. An append resolves when it is durable, so an import that appended each message's
 * samples as it read them waited for a commit a message, each writing the tail of every stream it
 * touched (a .osi trace of an hour of 300 vehicles: 36,000 commits).
 */
export class PendingSamples {
  private readonly sink: Pick<RunSink, 'appendMany'>;
  private readonly batch: number;
  private pending = new Map<string, Sample[]>();
  private count = 0;

  constructor(sink: Pick<RunSink, 'appendMany'>, batch = IMPORT_BATCH) {
    this.sink = sink;
    this.batch = batch;
  }

  /** Adds a sample of `stream`, appended at the next flush. */
  push(stream: string, sample: Sample): void {
    const list = this.pending.get(stream);
    if (list) list.push(sample);
    else this.pending.set(stream, [sample]);
    this.count++;
  }

  /** Whether `batch` samples are waiting: the caller flushes then (at a message's end, say). */
  get full(): boolean {
    return this.count >= this.batch;
  }

  /** Appends every sample waiting, all or none, in one call; resolves when durable. */
  async flush(): Promise<void> {
    if (this.count === 0) return;
    const appends: StreamAppend[] = [...this.pending].map(([stream, samples]) => ({ stream, samples }));
    this.pending = new Map();
    this.count = 0;
    await this.sink.appendMany(appends);
  }
}
