import type { ColumnBatch, ColumnValues } from '../model/columns.js';
import type { FieldDecl, FieldType, Sample } from '../model/stream.js';
import { copyJsonValue, type JsonValue } from '../model/json.js';

const isNumericType = (type: FieldType): boolean => type !== 'string' && type !== 'json' && type !== 'vec';

/**
 * One stream's samples waiting for a commit, as growing columns: what RunRecorder hands the store.
 * Rows come as whole batches (appendColumns, and frames drained from a FrameBuffer) or sample objects
 * (appendMany); both end as the same columns. `take()` gives them away and starts afresh, because the
 * store may hold the arrays until the commit is durable.
 */
export class ColumnBuilder {
  private readonly declared: ReadonlyMap<string, FieldDecl>;
  private n = 0;
  private capacity = 0;
  private t = new Float64Array(0);
  private step = new Float64Array(0);
  /** Numeric and vec columns, `capacity * width` long; `filled` rows written (later ones are NaN). */
  private readonly numbers = new Map<string, { values: Float64Array; width: number }>();
  private readonly lists = new Map<string, unknown[]>();
  private types: Record<string, FieldType> | undefined;
  /** Rows the last commit held: the next one starts at that capacity instead of growing to it again. */
  private expected = 16;

  constructor(declared: readonly FieldDecl[]) {
    this.declared = new Map(declared.map((f) => [f.name, f] as const));
  }

  get length(): number {
    return this.n;
  }

  get lastT(): number | null {
    return this.n ? this.t[this.n - 1]! : null;
  }

  private grow(rows: number): void {
    if (this.n + rows <= this.capacity) return;
    const capacity = Math.max(this.expected, this.capacity * 2, this.n + rows);
    const t = new Float64Array(capacity);
    t.set(this.t.subarray(0, this.n));
    this.t = t;
    const step = new Float64Array(capacity);
    step.set(this.step.subarray(0, this.n));
    this.step = step;
    for (const column of this.numbers.values()) {
      const values = new Float64Array(capacity * column.width).fill(NaN);
      values.set(column.values.subarray(0, this.n * column.width));
      column.values = values;
    }
    this.capacity = capacity;
  }

  private numberColumn(name: string, width: number): Float64Array {
    let column = this.numbers.get(name);
    if (!column) {
      column = { values: new Float64Array(this.capacity * width).fill(NaN), width };
      this.numbers.set(name, column);
    }
    return column.values;
  }

  private listColumn(name: string): unknown[] {
    let list = this.lists.get(name);
    if (!list) this.lists.set(name, (list = []));
    // Rows before the column's first value are absent.
    while (list.length < this.n) list.push(undefined);
    return list;
  }

  private noteType(name: string, type: FieldType | undefined): void {
    if (type === undefined || this.declared.has(name)) return;
    (this.types ??= {})[name] = type;
  }

  /** Appends a validated batch (model/columns.ts normalizeColumns). */
  appendBatch(batch: ColumnBatch): void {
    const rows = batch.t.length;
    if (rows === 0) return;
    this.grow(rows);
    const at = this.n;
    this.t.set(batch.t, at);
    this.step.set(batch.step, at);
    for (const name in batch.columns) {
      const values = batch.columns[name]!;
      this.noteType(name, batch.types?.[name]);
      if (values instanceof Float64Array) {
        const width = values.length / rows;
        this.numberColumn(name, width).set(values, at * width);
      } else {
        const list = this.listColumn(name);
        for (let i = 0; i < rows; i++) list.push(values[i]);
      }
    }
    this.n += rows;
  }

  /** Appends a sample object already validated by validateSample; undeclared fields get `types`. */
  appendSample(sample: Sample, types: ReadonlyMap<string, FieldType>): void {
    this.grow(1);
    const at = this.n;
    this.t[at] = sample.t;
    this.step[at] = sample.step;
    for (const name in sample) {
      if (name === 't' || name === 'step') continue;
      const v = sample[name];
      if (v === undefined) continue;
      const field = this.declared.get(name);
      const type = field?.type ?? types.get(name) ?? 'json';
      this.noteType(name, field ? undefined : type);
      if (type === 'vec') {
        if (v === null) continue;
        const width = field!.length!;
        const target = this.numberColumn(name, width);
        for (let k = 0; k < width; k++) target[at * width + k] = (v as number[])[k]!;
      } else if (isNumericType(type)) {
        if (v === null) continue;
        this.numberColumn(name, 1)[at] =
          typeof v === 'boolean' ? (v ? 1 : 0) : type === 'f32' ? Math.fround(v as number) : (v as number);
      } else if (v !== null || type === 'json') {
        // A JSON value is copied (the caller may change its object once the append returns); a string
        // cannot change.
        const list = this.listColumn(name);
        list.push(type === 'json' ? copyJsonValue(v as JsonValue) : v);
      }
    }
    this.n++;
  }

  /** The columns so far, handed over; the builder starts empty. */
  take(): ColumnBatch {
    const n = this.n;
    const columns: Record<string, ColumnValues> = {};
    for (const [name, column] of this.numbers) columns[name] = column.values.subarray(0, n * column.width);
    for (const [name, list] of this.lists) {
      while (list.length < n) list.push(undefined);
      columns[name] = list;
    }
    const batch: ColumnBatch = { t: this.t.subarray(0, n), step: this.step.subarray(0, n), columns };
    if (this.types) batch.types = this.types;
    this.expected = Math.max(16, n);
    this.n = 0;
    this.capacity = 0;
    this.t = new Float64Array(0);
    this.step = new Float64Array(0);
    this.numbers.clear();
    this.lists.clear();
    this.types = undefined;
    return batch;
  }
}
