import { usualSampleInterval } from '../../src/model/presence.js';
import type { PresenceInterval } from '../../src/model/run.js';
import { lastAtOrBefore } from '../../src/model/sorted-search.js';
import { api, type Sample, type StreamInfo } from './api.js';

/**
 * Samples a window of a stream holds, about: an hour of a 10 Hz stream is 36 windows. A page opened at
 * a moment wants one sample of it; each window is a page of JSON the server builds on the thread that
 * answers every page (an evaluation's sample is about 260 bytes of it).
 */
const WINDOW_SAMPLES = 1_000;
const MIN_WINDOW_MICROS = 10_000_000;
const MAX_WINDOW_MICROS = 600_000_000;
/** Windows kept: the cursor's, the ones beside it and a few the cursor left. */
const KEEP_WINDOWS = 6;

/**
 * One stream's samples around the cursor, a window at a time, for a panel that shows the stream's
 * value at the cursor (the evaluation's metrics): the page holds a few windows of the stream, not the
 * run's. The latest sample at or before t is looked for in the window holding t and the one before it:
 * a stream that samples at least once a window (its usual interval is a window's five-thousandth).
 */
export class StreamWindows {
  private readonly loaded = new Map<number, Sample[]>();
  private readonly fetching = new Set<number>();
  private readonly windowMicros: number;
  /** The window holding the cursor when last asked. */
  private cursor = 0;
  onLoaded: () => void = () => {};

  private readonly runId: number;
  private readonly stream: StreamInfo;
  private readonly begin: number;

  constructor(runId: number, stream: StreamInfo, begin: number, presence?: PresenceInterval[]) {
    this.runId = runId;
    this.stream = stream;
    this.begin = begin;
    const interval = usualSampleInterval(stream, presence);
    this.windowMicros =
      interval === null
        ? MAX_WINDOW_MICROS
        : Math.ceil(Math.min(MAX_WINDOW_MICROS, Math.max(MIN_WINDOW_MICROS, interval * WINDOW_SAMPLES)));
  }

  private windowIndex(t: number): number {
    return Math.max(0, Math.floor((t - this.begin) / this.windowMicros));
  }

  /**
   * The latest sample at or before t; `loaded` false while the windows that could hold it are on their
   * way. The window holding t is asked for first, alone; once it is in, the ones beside it. The one
   * before it is read only when t is before the window's first sample.
   */
  sampleAt(t: number): { sample: Sample | undefined; loaded: boolean } {
    const index = this.windowIndex(t);
    this.cursor = index;
    this.fetch(index);
    const current = this.loaded.get(index);
    if (!current) return { sample: undefined, loaded: false };
    this.fetch(index + 1);
    if (index > 0) this.fetch(index - 1);
    const k = lastAtOrBefore(current, t, (s) => s.t);
    if (k >= 0) return { sample: current[k], loaded: true };
    const previous = index > 0 ? this.loaded.get(index - 1) : [];
    if (!previous) return { sample: undefined, loaded: false };
    return { sample: previous.at(-1), loaded: true };
  }

  private fetch(i: number): void {
    if (this.loaded.has(i) || this.fetching.has(i)) return;
    this.fetching.add(i);
    const from = this.begin + i * this.windowMicros;
    api.samples(this.runId, this.stream.id, from, from + this.windowMicros - 1).then(
      (answer) => {
        this.fetching.delete(i);
        this.loaded.set(i, answer.samples);
        // The windows farthest from the cursor go first.
        const far = [...this.loaded.keys()].sort(
          (a, b) => Math.abs(b - this.cursor) - Math.abs(a - this.cursor),
        );
        while (this.loaded.size > KEEP_WINDOWS) this.loaded.delete(far.shift()!);
        this.onLoaded();
      },
      () => this.fetching.delete(i), // asked for again when next wanted
    );
  }
}
