import { numbersOf, sampleAt, type ColumnBatch } from './columns.js';
import { conflict, notFound } from './errors.js';
import type { RunSource } from './run-ports.js';
import { lastAtOrBefore } from './sorted-search.js';
import { fieldsOfStream, type FieldDecl, type Sample, type StreamInfo } from './stream.js';

/** What a writer reads of a stream: every sample's time, and a sample by its index. */
export interface SeriesView {
  /** Every sample's time, in order. */
  readonly times: Float64Array;
  readonly length: number;
  /** Sample `i` (0 <= i < length). */
  at(i: number): Sample;
  /** The latest sample at or before t, undefined before the first. */
  latestAt(t: number): Sample | undefined;
  /**
   * Fields `names` as numbers (NaN where a sample has none, no sample object made) over the samples
   * held with sample `i`: a writer that reads the same fields frame after frame looks them up once a
   * window, not once a sample.
   */
  numbersAround(i: number, names: readonly string[]): NumbersWindow;
}

/**
 * Numbers of some fields over samples `first` to `end` (exclusive): `values[k][j - first]` is field k
 * of sample j. Valid until the series reads another window (a walk that advances past `end`).
 */
export interface NumbersWindow {
  first: number;
  end: number;
  values: Float64Array[];
}

/**
 * A stream's samples kept as columns, each made into a sample object only when asked for (anew each
 * time, as `readSamples` makes it): a writer that walks a whole run holds typed arrays, not an object
 * per sample, which a long run's export could not hold beside the store's caches.
 */
export class SampleSeries implements SeriesView {
  private readonly batch: ColumnBatch;
  private readonly fields: readonly FieldDecl[];
  /** Numeric fields asked for by numbersAround, a number a sample each. */
  private readonly numbers = new Map<string, Float64Array>();

  /** `fields`: the stream's declared fields, then its undeclared ones with their type. */
  constructor(batch: ColumnBatch, fields: readonly FieldDecl[]) {
    this.batch = batch;
    this.fields = fields;
  }

  /** Every sample's time, in order. */
  get times(): Float64Array {
    return this.batch.t;
  }

  get length(): number {
    return this.batch.t.length;
  }

  /** Sample `i` (0 <= i < length). */
  at(i: number): Sample {
    this.check(i);
    return sampleAt(this.batch, this.fields, i);
  }

  numbersAround(i: number, names: readonly string[]): NumbersWindow {
    this.check(i);
    const values = names.map((name) => {
      let numbers = this.numbers.get(name);
      if (!numbers) this.numbers.set(name, (numbers = numbersOf(this.batch, this.fields, name)));
      return numbers;
    });
    return { first: 0, end: this.length, values };
  }

  private check(i: number): void {
    if (!(i >= 0 && i < this.length)) throw new RangeError(`sample ${i} of a series of ${this.length}`);
  }

  /** The latest sample at or before t, undefined before the first. */
  latestAt(t: number): Sample | undefined {
    const i = lastAtOrBefore(this.batch.t, t);
    return i >= 0 ? this.at(i) : undefined;
  }

  /** Every sample as an object: for the short streams a writer needs whole (an ego's path, captures). */
  toArray(): Sample[] {
    return Array.from({ length: this.length }, (_, i) => this.at(i));
  }
}

/**
 * Every sample of a run's stream, in time order, from one joined read: a writer that reads stream after
 * stream of a long run through `samples()` also filled the store's cache with every chunk it decoded.
 * The read is transient: a stream read whole is read once, so the chunks it opened are not kept in the
 * store's cache either.
 */
export async function readWholeStream(source: RunSource, stream: string | StreamInfo): Promise<SampleSeries> {
  const info = typeof stream === 'string' ? (await source.streams()).find((s) => s.id === stream) : stream;
  if (!info) throw notFound(`run ${source.run.id} has no stream ${JSON.stringify(stream)}`);
  return new SampleSeries(await source.columnsJoined(info.id, { transient: true }), fieldsOfStream(info));
}

/** Every sample of a run's stream as objects, from the same read (for streams a writer needs whole). */
export const readStreamSamples = async (source: RunSource, stream: string | StreamInfo): Promise<Sample[]> =>
  (await readWholeStream(source, stream)).toArray();

/**
 * A stream walked forward in time a window at a time (see StreamWalk): every sample's time is kept (8
 * bytes a sample), its other fields only for the window the walk is at, so that a writer's memory does
 * not grow with every stream's columns at once.
 */
export class WindowedSeries implements SeriesView {
  readonly times: Float64Array;
  private readonly source: RunSource;
  private readonly info: StreamInfo;
  private readonly windowSamples: number;
  private window: SampleSeries | undefined;
  /** The index of the window's first sample. */
  private first = 0;

  constructor(source: RunSource, info: StreamInfo, times: Float64Array, windowSamples: number) {
    this.source = source;
    this.info = info;
    this.times = times;
    this.windowSamples = windowSamples;
  }

  get length(): number {
    return this.times.length;
  }

  at(i: number): Sample {
    return this.windowOf(i).at(i - this.first);
  }

  numbersAround(i: number, names: readonly string[]): NumbersWindow {
    const { values, end } = this.windowOf(i).numbersAround(i - this.first, names);
    return { first: this.first, end: this.first + end, values };
  }

  private windowOf(i: number): SampleSeries {
    const w = this.window;
    if (w && i >= this.first && i < this.first + w.length) return w;
    throw new RangeError(
      `sample ${i} of ${this.info.id} is outside the window read (${this.first} to ` +
        `${this.first + (w?.length ?? 0)}): a walk reads forward, at the time it has advanced to`,
    );
  }

  latestAt(t: number): Sample | undefined {
    const i = lastAtOrBefore(this.times, t);
    return i >= 0 ? this.at(i) : undefined;
  }

  /**
   * The time from which the walk must read another window: the first sample's, then that of the sample
   * past the window.
   */
  get nextReadAt(): number {
    const end = this.window ? this.first + this.window.length : 0;
    return end < this.length ? this.times[end]! : Infinity;
  }

  /**
   * Reads the window that begins with the latest sample at or before t. It begins and ends where time
   * changes (a window cut between samples of one time would read the others as well, a time window
   * holding every sample at its ends), so it may be longer than `windowSamples`.
   */
  async readAround(t: number): Promise<void> {
    const times = this.times;
    let start = Math.max(0, lastAtOrBefore(times, t));
    while (start > 0 && times[start - 1] === times[start]) start--;
    let end = Math.min(times.length, start + this.windowSamples);
    while (end < times.length && times[end] === times[end - 1]) end++;
    const batch = await this.source.columnsJoined(this.info.id, {
      from: times[start]!,
      to: times[end - 1]!,
      transient: true,
    });
    if (batch.t.length !== end - start)
      throw conflict(
        `run ${this.source.run.id}, stream ${this.info.id}: ${batch.t.length} samples between ` +
          `${times[start]} and ${times[end - 1]} us, ${end - start} when the walk began: the stream changed`,
      );
    this.window = new SampleSeries(batch, fieldsOfStream(this.info));
    this.first = start;
  }
}

/**
 * Streams walked forward in time together, each a window at a time: before a writer reads the samples
 * at or before t, `advanceTo(t)` reads the windows that hold them. The windows share a budget of samples
 * (`windowSamples` in all, at least 16 a stream), so memory is bounded whatever the run's length or
 * width: the times of every sample, and a window of each stream.
 */
export class StreamWalk {
  private readonly series: WindowedSeries[];
  /** Below this time no series needs another window. */
  private until = -Infinity;

  private constructor(series: WindowedSeries[]) {
    this.series = series;
  }

  /** The walk of `streams`, their times read now (every sample's, a stream at a time). */
  static async over(
    source: RunSource,
    streams: readonly StreamInfo[],
    windowSamples = DEFAULT_WALK_SAMPLES,
  ): Promise<{ walk: StreamWalk; series: Map<string, WindowedSeries> }> {
    const perStream = Math.max(16, Math.floor(windowSamples / Math.max(1, streams.length)));
    const series = new Map<string, WindowedSeries>();
    for (const info of streams) {
      const { t } = await source.columnsJoined(info.id, { fields: [], transient: true });
      series.set(info.id, new WindowedSeries(source, info, t, perStream));
    }
    return { walk: new StreamWalk([...series.values()]), series };
  }

  /** Reads what the samples at or before t need (times only ever advance). */
  async advanceTo(t: number): Promise<void> {
    if (t < this.until) return;
    let until = Infinity;
    for (const s of this.series) {
      if (s.nextReadAt <= t) await s.readAround(t);
      const next = s.nextReadAt;
      if (next < until) until = next;
    }
    this.until = until;
  }
}

/** Samples a walk holds of all its streams at once: a bound on its memory, whatever the run's length. */
const DEFAULT_WALK_SAMPLES = 500_000;
