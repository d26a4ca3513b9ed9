import { sampleAt, type ColumnBatch, type ColumnValues, type SampleEntry } from '../../model/columns.js';
import { notFound } from '../../model/errors.js';
import type {
  LatestEntriesArgs,
  ReadColumnsArgs,
  ReadSamplesArgs,
  SampleBracket,
  StoreBackend,
} from '../../model/store-port.js';
import { fieldsOfStream, type FieldDecl, type Sample } from '../../model/stream.js';

/**
 * The sample-object reads every backend offers, on top of its columnar ones: one implementation, so
 * that a backend implements reading once (readColumns, bracketMany) and objects are built the same way.
 */
export async function* readSamplesViaColumns(
  store: StoreBackend,
  args: ReadSamplesArgs,
): AsyncIterable<Sample[]> {
  const fields = await fieldsOf(store, args.run, args.stream);
  for await (const batch of store.readColumns(args)) {
    const out = new Array<Sample>(batch.t.length);
    for (let i = 0; i < batch.t.length; i++) out[i] = sampleAt(batch, fields, i);
    yield out;
  }
}

/**
 * latestEntries for a backend whose samples part has none (MongoDB): each stream's latest sample made
 * into an entry, head first, without its step.
 */
export async function latestEntriesViaBrackets(
  store: StoreBackend,
  run: number,
  args: LatestEntriesArgs,
): Promise<(SampleEntry | undefined)[]> {
  const brackets = await store.bracketMany(run, {
    streams: args.streams,
    t: args.t,
    after: false,
    ...(args.readAhead !== undefined ? { readAhead: args.readAhead } : {}),
  });
  return brackets.map(({ before }, i) => {
    if (!before) return undefined;
    const { id, kind } = args.heads[i]!;
    const entry: SampleEntry = { id, kind, t: before.t };
    for (const key in before) if (key !== 't' && key !== 'step') entry[key] = before[key];
    return entry;
  });
}

export async function sampleBracketViaMany(
  store: StoreBackend,
  run: number,
  stream: string,
  t: number,
): Promise<SampleBracket> {
  return (await store.bracketMany(run, { streams: [stream], t }))[0]!;
}

/** A stream's declared fields, then its undeclared ones with the type seen. */
export async function fieldsOf(store: StoreBackend, run: number, stream: string): Promise<FieldDecl[]> {
  const info = (await store.listStreams(run)).find((s) => s.id === stream);
  if (!info) {
    if (!(await store.getRun(run))) throw notFound(`run ${run} does not exist in ${store.location}`);
    throw notFound(`run ${run} has no stream ${JSON.stringify(stream)}`);
  }
  return fieldsOfStream(info);
}

/**
 * readColumnsJoined for a backend without a way of its own: readColumns' batches joined (MongoDB's;
 * SQLite decodes its chunks straight into the joined columns).
 */
export async function readColumnsJoinedViaBatches(
  store: StoreBackend,
  args: ReadColumnsArgs,
): Promise<ColumnBatch> {
  const batches: ColumnBatch[] = [];
  const columns = new Map<string, ChunkColumnLike>();
  for await (const batch of store.readColumns(args)) {
    batches.push(batch);
    for (const name in batch.columns) {
      const v = batch.columns[name]!;
      if (!columns.has(name))
        columns.set(name, {
          name,
          width: v instanceof Float64Array ? v.length / Math.max(1, batch.t.length) : 0,
        });
    }
  }
  return concatColumns(batches, [...columns.values()]);
}

interface ChunkColumnLike {
  name: string;
  /** Numbers per row for numeric columns, 0 for plain arrays. */
  width: number;
}

function concatColumns(batches: ColumnBatch[], columns: ChunkColumnLike[]): ColumnBatch {
  if (batches.length === 1) return batches[0]!;
  const n = batches.reduce((sum, b) => sum + b.t.length, 0);
  const t = new Float64Array(n);
  const step = new Float64Array(n);
  const out: Record<string, ColumnValues> = {};
  // Made in the batches' column order (declared fields first), plain arrays filled in below.
  for (const c of columns) out[c.name] = c.width ? new Float64Array(n * c.width) : [];
  let row = 0;
  for (const b of batches) {
    const rows = b.t.length;
    t.set(b.t, row);
    step.set(b.step, row);
    for (const c of columns) {
      if (!c.width) continue;
      const part = b.columns[c.name];
      const whole = out[c.name] as Float64Array;
      // A batch without the column: its rows have no value (NaN in a numeric column).
      if (part === undefined) whole.fill(NaN, row * c.width, (row + rows) * c.width);
      else whole.set(part as Float64Array, row * c.width);
    }
    row += rows;
  }
  // Plain arrays (strings, JSON) joined by Array#concat: copied value by value in a loop, a lane column
  // was a large share of a trajectory read in a fresh process, run by code not yet optimised.
  for (const c of columns)
    if (!c.width)
      out[c.name] = ([] as unknown[]).concat(
        ...batches.map(
          (b) =>
            (b.columns[c.name] as unknown[] | undefined) ?? new Array<unknown>(b.t.length).fill(undefined),
        ),
      );
  return { t, step, columns: out };
}
