import { sampleAt, type ColumnBatch } from './columns.js';
import { notFound } from './errors.js';
import type { RunSource } from './run-ports.js';
import { lastAtOrBefore } from './sorted-search.js';
import { fieldsOfStream, type FieldDecl, type Sample, type StreamInfo } from './stream.js';

/**
 * A stream's samples kept as columns, each made into a sample object only when asked for (anew each
 * time, as `readSamples` makes it): a writer that walks a whole run holds typed arrays, not an object
 * per sample. The MCAP export of the benchmark's run (2 M actor-states) held 1.4 GB of sample objects
 * and the store's caches before it wrote its first message.
 */
export class SampleSeries {
  private readonly batch: ColumnBatch;
  private readonly fields: readonly FieldDecl[];

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
    if (!(i >= 0 && i < this.length)) throw new RangeError(`sample ${i} of a series of ${this.length}`);
    return sampleAt(this.batch, this.fields, i);
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
 * stream of a long run through `samples()` also filled the store's cache with every chunk it decoded
 * (the LimSim export of the benchmark's run peaked at 1.0 GB that way, 0.74 GB this way).
 */
export async function readWholeStream(source: RunSource, stream: string | StreamInfo): Promise<SampleSeries> {
  const info = typeof stream === 'string' ? (await source.streams()).find((s) => s.id === stream) : stream;
  if (!info) throw notFound(`run ${source.run.id} has no stream ${JSON.stringify(stream)}`);
  return new SampleSeries(await source.columnsJoined(info.id), fieldsOfStream(info));
}

/** Every sample of a run's stream as objects, from the same read (for streams a writer needs whole). */
export const readStreamSamples = async (source: RunSource, stream: string | StreamInfo): Promise<Sample[]> =>
  (await readWholeStream(source, stream)).toArray();
