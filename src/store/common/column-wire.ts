import type { ColumnBatch, ColumnValues } from '../../model/columns.js';
import type { FieldType } from '../../model/stream.js';

/**
 * Column batches of many streams packed for another thread: every number of every stream in one
 * Float64Array (transferred, not copied), strings as indexes into one table. A commit of 200 actors
 * would otherwise post 2,000 typed arrays and 20,000 strings, and structured cloning them cost more than
 * encoding them.
 */
export interface WireBatches {
  arena: Float64Array;
  strings: string[];
  streams: WireStream[];
}

interface WireStream {
  stream: string;
  n: number;
  /** Offsets into the arena of t and step. */
  t: number;
  step: number;
  columns: WireColumn[];
  types?: Record<string, FieldType>;
}

type WireColumn =
  | { name: string; kind: 'numbers'; offset: number; length: number }
  | { name: string; kind: 'strings'; offset: number }
  | { name: string; kind: 'values'; values: unknown[] };

const STRING_ABSENT = -1;

export function packBatches(appends: readonly { stream: string; batch: ColumnBatch }[]): WireBatches {
  let size = 0;
  for (const { batch } of appends) {
    size += 2 * batch.t.length;
    for (const name in batch.columns) {
      const v = batch.columns[name]!;
      size += v instanceof Float64Array ? v.length : isStrings(v) ? v.length : 0;
    }
  }
  const arena = new Float64Array(size);
  const strings: string[] = [];
  const stringIndex = new Map<string, number>();
  let offset = 0;
  const put = (values: Float64Array): number => {
    arena.set(values, offset);
    const at = offset;
    offset += values.length;
    return at;
  };
  const streams = appends.map(({ stream, batch }): WireStream => {
    const columns: WireColumn[] = [];
    for (const name in batch.columns) {
      const v = batch.columns[name]!;
      if (v instanceof Float64Array)
        columns.push({ name, kind: 'numbers', offset: put(v), length: v.length });
      else if (isStrings(v)) {
        const at = offset;
        for (let i = 0; i < v.length; i++) {
          const s = v[i] as string | undefined;
          if (s === undefined) arena[offset++] = STRING_ABSENT;
          else {
            let k = stringIndex.get(s);
            if (k === undefined) {
              k = strings.length;
              strings.push(s);
              stringIndex.set(s, k);
            }
            arena[offset++] = k;
          }
        }
        columns.push({ name, kind: 'strings', offset: at });
      } else columns.push({ name, kind: 'values', values: v });
    }
    const wire: WireStream = { stream, n: batch.t.length, t: put(batch.t), step: put(batch.step), columns };
    if (batch.types) wire.types = batch.types;
    return wire;
  });
  return { arena, strings, streams };
}

export function unpackBatches(wire: WireBatches): { stream: string; batch: ColumnBatch }[] {
  const { arena, strings } = wire;
  return wire.streams.map((s) => {
    const columns: Record<string, ColumnValues> = {};
    for (const c of s.columns) {
      if (c.kind === 'numbers') columns[c.name] = arena.subarray(c.offset, c.offset + c.length);
      else if (c.kind === 'strings') {
        const out = new Array<unknown>(s.n);
        for (let i = 0; i < s.n; i++) {
          const k = arena[c.offset + i]!;
          out[i] = k === STRING_ABSENT ? undefined : strings[k];
        }
        columns[c.name] = out;
      } else columns[c.name] = c.values;
    }
    const batch: ColumnBatch = {
      t: arena.subarray(s.t, s.t + s.n),
      step: arena.subarray(s.step, s.step + s.n),
      columns,
    };
    if (s.types) batch.types = s.types;
    return { stream: s.stream, batch };
  });
}

/** A column of strings (absent rows undefined): anything else in a plain array is cloned as it is. */
function isStrings(values: ColumnValues): boolean {
  if (values instanceof Float64Array) return false;
  let seen = false;
  for (const v of values) {
    if (v === undefined) continue;
    if (typeof v !== 'string') return false;
    seen = true;
  }
  return seen;
}
