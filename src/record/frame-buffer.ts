import type { ColumnBatch, ColumnValues } from '../model/columns.js';
import type { FieldType } from '../model/stream.js';

/**
 * Frames of one set of actors' streams (their `state`, say) waiting for a commit, kept frame-major: a
 * frame's column is copied in with one `set` of its typed array, whatever the number of actors. At
 * commit the frames are transposed into one batch per actor's stream. Writing each value straight into
 * its actor's column instead cost a lookup per value, most of the appending thread's time at 200 actors.
 */
export class FrameBuffer {
  /** The streams, one per actor, in the frames' order. */
  readonly streams: readonly string[];
  private frames = 0;
  private capacity = 0;
  private t = new Float64Array(0);
  private step = new Float64Array(0);
  private readonly numbers = new Map<string, { values: Float64Array; width: number }>();
  private readonly lists = new Map<string, unknown[][]>();
  private readonly types: Record<string, FieldType> | undefined;
  private expected = 16;

  constructor(streams: readonly string[], types?: Record<string, FieldType>) {
    this.streams = streams;
    this.types = types;
  }

  get length(): number {
    return this.frames;
  }

  get lastT(): number | null {
    return this.frames ? this.t[this.frames - 1]! : null;
  }

  /** Whether a frame of these streams (same actors, same order) can join this buffer. */
  matches(streams: readonly string[]): boolean {
    if (streams.length !== this.streams.length) return false;
    for (let i = 0; i < streams.length; i++) if (streams[i] !== this.streams[i]) return false;
    return true;
  }

  private grow(): void {
    if (this.frames < this.capacity) return;
    const capacity = Math.max(this.expected, this.capacity * 2);
    const a = this.streams.length;
    const t = new Float64Array(capacity);
    t.set(this.t.subarray(0, this.frames));
    this.t = t;
    const step = new Float64Array(capacity);
    step.set(this.step.subarray(0, this.frames));
    this.step = step;
    for (const column of this.numbers.values()) {
      const values = new Float64Array(capacity * a * column.width).fill(NaN);
      values.set(column.values.subarray(0, this.frames * a * column.width));
      column.values = values;
    }
    this.capacity = capacity;
  }

  /** Appends one validated frame (model/columns.ts: one value, or `width` numbers, per actor). */
  append(t: number, step: number, columns: Record<string, ColumnValues>): void {
    this.grow();
    const f = this.frames;
    const a = this.streams.length;
    this.t[f] = t;
    this.step[f] = step;
    for (const name in columns) {
      const values = columns[name]!;
      if (values instanceof Float64Array) {
        let column = this.numbers.get(name);
        if (!column) {
          column = {
            values: new Float64Array(this.capacity * values.length).fill(NaN),
            width: values.length / a,
          };
          this.numbers.set(name, column);
        }
        column.values.set(values, f * a * column.width);
      } else {
        let list = this.lists.get(name);
        if (!list) this.lists.set(name, (list = []));
        while (list.length < f) list.push(new Array<unknown>(a));
        list.push(values as unknown[]);
      }
    }
    this.frames++;
  }

  /** One batch per stream (transposed), and the buffer empty again. */
  take(): { stream: string; batch: ColumnBatch }[] {
    const frames = this.frames;
    const a = this.streams.length;
    const out: { stream: string; batch: ColumnBatch }[] = [];
    const t = this.t.slice(0, frames);
    const step = this.step.slice(0, frames);
    for (let i = 0; i < a; i++) {
      const columns: Record<string, ColumnValues> = {};
      for (const [name, { values, width }] of this.numbers) {
        const column = new Float64Array(frames * width);
        if (width === 1) for (let f = 0; f < frames; f++) column[f] = values[f * a + i]!;
        else
          for (let f = 0; f < frames; f++)
            for (let k = 0; k < width; k++) column[f * width + k] = values[(f * a + i) * width + k]!;
        columns[name] = column;
      }
      for (const [name, list] of this.lists) {
        const column = new Array<unknown>(frames);
        for (let f = 0; f < frames; f++) column[f] = list[f]?.[i];
        columns[name] = column;
      }
      const batch: ColumnBatch = { t, step, columns };
      if (this.types) batch.types = this.types;
      out.push({ stream: this.streams[i]!, batch });
    }
    this.expected = Math.max(16, frames);
    this.frames = 0;
    this.capacity = 0;
    this.t = new Float64Array(0);
    this.step = new Float64Array(0);
    this.numbers.clear();
    this.lists.clear();
    return out;
  }
}
