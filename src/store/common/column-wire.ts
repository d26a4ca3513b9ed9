import type { ColumnBatch, ColumnValues } from '../../model/columns.js';
import type { FieldType } from '../../model/stream.js';

/**
 * Column batches of many streams packed for another thread: every number of every stream in one
 * Float64Array (in memory both threads share when packed from an ArenaPool), strings as indexes into
 * one table, and each stream's place in it as a few numbers, its columns' names and kinds shared by
 * every stream with the same ones. A commit of 200 actors would otherwise post thousands of typed
 * arrays and objects and 20,000 strings, and structured cloning them cost more than encoding them.
 */
export interface WireBatches {
  arena: Float64Array;
  strings: string[];
  /** Column layouts: `name:kind` per column (kind nW = W numbers a row, s = strings, v = values). */
  layouts: string[][];
  /** Per stream: its id, its layout, and the types of its undeclared columns when it has any. */
  streams: { id: string; layout: number; types?: Record<string, FieldType> }[];
  /** Per stream: n, t offset, step offset, then per column an offset (numbers, strings) or a values index. */
  places: Float64Array;
  /** Plain arrays (JSON values), cloned as they are. */
  values: unknown[][];
}

const STRING_ABSENT = -1;

/**
 * Arenas for `packBatches` in memory both threads share, each used again once the thread it was posted
 * to has answered the request. A new arena per commit was zeroed and faulted in page by page by the
 * appending thread, then left to the receiving thread's collector, whose heap sees little else, so that
 * tens of them waited to be freed. Shared rather than transferred back and forth: detaching any
 * ArrayBuffer makes V8 drop, for the rest of the thread's life, optimised code that assumed none ever
 * would be, and the writer thread's encoders ran a second commit of the demo at half speed after the
 * first arena went back.
 */
export class ArenaPool {
  private readonly free: SharedArrayBuffer[] = [];
  private readonly keep: number;

  /** `keep`: buffers held at most (about as many as commits in flight). */
  constructor(keep = 4) {
    this.keep = keep;
  }

  /** An arena of `size` numbers: on the smallest kept buffer that holds them, else on a new one. */
  take(size: number): Float64Array {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const bytes = this.free[i]!.byteLength;
      if (bytes >= size * 8 && (best < 0 || bytes < this.free[best]!.byteLength)) best = i;
    }
    if (best >= 0) return new Float64Array(this.free.splice(best, 1)[0]!, 0, size);
    // A quarter more: the next commit is often a little larger than this one.
    return new Float64Array(new SharedArrayBuffer(Math.ceil(size * 1.25) * 8), 0, size);
  }

  /**
   * An arena whose reader is done with it (its request answered, whether it succeeded or not); when
   * the pool is full, the largest buffers are kept.
   */
  give(arena: Float64Array): void {
    const buffer = arena.buffer;
    if (!(buffer instanceof SharedArrayBuffer)) return;
    if (this.free.length < this.keep) {
      this.free.push(buffer);
      return;
    }
    let smallest = 0;
    for (let i = 1; i < this.free.length; i++)
      if (this.free[i]!.byteLength < this.free[smallest]!.byteLength) smallest = i;
    if (buffer.byteLength > this.free[smallest]!.byteLength) this.free[smallest] = buffer;
  }
}

/**
 * Packs column batches for another thread; the arena comes from `arenas` when given. Every one of its
 * `size` numbers is written here, so a reused arena needs no clearing.
 */
export function packBatches(
  appends: readonly { stream: string; batch: ColumnBatch }[],
  arenas?: ArenaPool,
): WireBatches {
  let size = 0;
  let placeCount = 0;
  const kinds: string[][] = appends.map(({ batch }) => {
    size += 2 * batch.t.length;
    const k: string[] = [];
    for (const name in batch.columns) {
      const v = batch.columns[name]!;
      const kind =
        v instanceof Float64Array
          ? `n${batch.t.length ? v.length / batch.t.length : 1}`
          : isStrings(v)
            ? 's'
            : 'v';
      if (kind !== 'v') size += v.length;
      k.push(kind);
    }
    placeCount += 3 + k.length;
    return k;
  });
  const arena = arenas ? arenas.take(size) : new Float64Array(size);
  const places = new Float64Array(placeCount);
  const strings: string[] = [];
  const stringIndex = new Map<string, number>();
  const layouts: string[][] = [];
  const layoutIndex = new Map<string, number>();
  const values: unknown[][] = [];
  const streams: WireStreams = [];
  let offset = 0;
  let p = 0;
  const put = (v: Float64Array): number => {
    arena.set(v, offset);
    offset += v.length;
    return offset - v.length;
  };
  appends.forEach(({ stream, batch }, s) => {
    const names = Object.keys(batch.columns);
    const layout = names.map((name, c) => `${name}:${kinds[s]![c]}`);
    const key = layout.join('\n');
    let index = layoutIndex.get(key);
    if (index === undefined) {
      index = layouts.length;
      layouts.push(layout);
      layoutIndex.set(key, index);
    }
    streams.push(
      batch.types ? { id: stream, layout: index, types: batch.types } : { id: stream, layout: index },
    );
    places[p++] = batch.t.length;
    places[p++] = put(batch.t);
    places[p++] = put(batch.step);
    names.forEach((name, c) => {
      const v = batch.columns[name]!;
      const kind = kinds[s]![c]!;
      if (kind[0] === 'n') places[p++] = put(v as Float64Array);
      else if (kind === 'v') {
        places[p++] = values.length;
        values.push(v as unknown[]);
      } else {
        places[p++] = offset;
        const list = v as (string | undefined)[];
        // Indexed: a commit's 20,000 strings made as many iterator results in code not yet optimised.
        for (let i = 0; i < list.length; i++) {
          const x = list[i];
          if (x === undefined) arena[offset++] = STRING_ABSENT;
          else {
            let k = stringIndex.get(x);
            if (k === undefined) {
              k = strings.length;
              strings.push(x);
              stringIndex.set(x, k);
            }
            arena[offset++] = k;
          }
        }
      }
    });
  });
  return { arena, strings, layouts, streams, places, values };
}

type WireStreams = WireBatches['streams'];

/**
 * The batches, one at a time as they are asked for: a writer that packs each before it asks for the next
 * lets each batch's views and strings die young. Made all at once, a commit's batches lived through the
 * collections that packing them caused and were most of what the writer thread promoted to its old
 * generation.
 */
export function* unpackBatches(wire: WireBatches): Generator<{ stream: string; batch: ColumnBatch }> {
  const { arena, strings, places } = wire;
  const layouts = wire.layouts.map((l) =>
    l.map((c) => {
      const at = c.lastIndexOf(':');
      return { name: c.slice(0, at), kind: c.slice(at + 1) };
    }),
  );
  let p = 0;
  for (const s of wire.streams) {
    const n = places[p++]!;
    const t = arena.subarray(places[p], places[p++]! + n);
    const step = arena.subarray(places[p], places[p++]! + n);
    const columns: Record<string, ColumnValues> = {};
    for (const { name, kind } of layouts[s.layout]!) {
      const at = places[p++]!;
      if (kind === 'v') columns[name] = wire.values[at]!;
      else if (kind === 's') {
        const out = new Array<unknown>(n);
        for (let i = 0; i < n; i++) {
          const k = arena[at + i]!;
          out[i] = k === STRING_ABSENT ? undefined : strings[k];
        }
        columns[name] = out;
      } else columns[name] = arena.subarray(at, at + n * Number(kind.slice(1)));
    }
    const batch: ColumnBatch = { t, step, columns };
    if (s.types) batch.types = s.types;
    yield { stream: s.id, batch };
  }
}

/** A column of strings (absent rows undefined): anything else in a plain array is cloned as it is. */
function isStrings(values: ColumnValues): boolean {
  if (values instanceof Float64Array) return false;
  let seen = false;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === undefined) continue;
    if (typeof v !== 'string') return false;
    seen = true;
  }
  return seen;
}
