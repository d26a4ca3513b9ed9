import type { ColumnBatch, ColumnValues } from '../model/columns.js';
import type { FieldType } from '../model/stream.js';

/**
 * Frames of many actors' streams of one kind (their `state`, say) waiting for a commit, kept row by row
 * in arrival order: a frame's column is copied in with one `set` of its typed array, whatever the number
 * of actors. At commit the rows are dealt out into one batch per stream. Writing each value straight into
 * its actor's column instead cost a lookup per value, most of the appending thread's time at 200 actors.
 *
 * Actors may come and go from one frame to the next (a vehicle departs, another arrives): each stream
 * has a slot, and a row remembers its slot. The buffer used to hold one fixed set of actors and was
 * emptied into the streams' builders whenever the set changed, which in the demo's traffic (a departure
 * or an arrival every few steps) was a transposition of a handful of frames each time: 40% of what
 * recording cost the simulation. While every frame has the same streams (a simulator's usual frames)
 * nothing is kept per row: row r is slot r % slots, and all streams share one array of times.
 */
export class FrameBuffer {
  /** The fields the frames' streams declare (their JSON): one schema per buffer. */
  readonly signature: string;
  /** The types of undeclared columns, the same for every frame of the buffer (see `accepts`). */
  readonly types: Record<string, FieldType> | undefined;
  private readonly typesKey: string;
  /** Stream ids by slot, and slots by stream id. */
  private readonly streamOfSlot: string[] = [];
  private readonly slotOfStream = new Map<string, number>();
  /** The last frame's streams and their slots: the next frame usually has the same. */
  private lastStreams: readonly string[] = [];
  private lastSlots = new Int32Array(0);

  /** Per frame: its time, step and first row. */
  private frames = 0;
  private frameCapacity = 0;
  private frameT = new Float64Array(0);
  private frameStep = new Float64Array(0);
  private frameRow = new Int32Array(0);
  /**
   * Whether every frame so far had the first frame's streams, in its order. Until it stops being so,
   * `slot` is not written (row r is slot r % slots).
   */
  private uniform = true;
  /** Per row: its stream's slot (once frames differ). */
  private rows = 0;
  private capacity = 0;
  private slot = new Int32Array(0);
  /** Numeric and vec columns, `capacity * width` long; rows without a value are NaN. */
  private readonly numbers = new Map<string, { values: Float64Array; width: number }>();
  /** Other columns; rows past a list's end have no value. */
  private readonly lists = new Map<string, unknown[]>();
  /** Rows and frames the last commit held: the next starts at that capacity instead of growing to it. */
  private expectedRows = 256;
  private expectedFrames = 16;

  constructor(signature: string, types?: Record<string, FieldType>) {
    this.signature = signature;
    this.types = types;
    this.typesKey = typesKey(types);
  }

  /** Frames waiting. */
  get length(): number {
    return this.frames;
  }

  /** The last frame's time, null when empty. */
  get lastT(): number | null {
    return this.frames ? this.frameT[this.frames - 1]! : null;
  }

  /** Whether rows of `stream` are waiting. */
  holds(stream: string): boolean {
    return this.slotOfStream.has(stream);
  }

  /** Whether frames whose undeclared columns have these types can join this buffer. */
  accepts(types: Record<string, FieldType> | undefined): boolean {
    return typesKey(types) === this.typesKey;
  }

  /** The slots of a frame's streams; the same array as the last frame's when its streams are the same. */
  private slotsOf(streams: readonly string[]): Int32Array {
    const last = this.lastStreams;
    if (streams === last) return this.lastSlots;
    if (last.length === streams.length) {
      let i = 0;
      while (i < streams.length && streams[i] === last[i]) i++;
      if (i === streams.length) return this.lastSlots;
    }
    const slots = new Int32Array(streams.length);
    for (let i = 0; i < streams.length; i++) {
      const id = streams[i]!;
      let slot = this.slotOfStream.get(id);
      if (slot === undefined) {
        slot = this.streamOfSlot.push(id) - 1;
        this.slotOfStream.set(id, slot);
      }
      slots[i] = slot;
    }
    this.lastStreams = streams;
    this.lastSlots = slots;
    return slots;
  }

  private growFrames(): void {
    if (this.frames < this.frameCapacity) return;
    const capacity = Math.max(this.expectedFrames, this.frameCapacity * 2);
    const grown = <T extends Float64Array | Int32Array>(old: T, make: (n: number) => T): T => {
      const array = make(capacity);
      array.set(old.subarray(0, this.frames));
      return array;
    };
    this.frameT = grown(this.frameT, (n) => new Float64Array(n));
    this.frameStep = grown(this.frameStep, (n) => new Float64Array(n));
    this.frameRow = grown(this.frameRow, (n) => new Int32Array(n));
    this.frameCapacity = capacity;
  }

  private growRows(rows: number): void {
    if (this.rows + rows <= this.capacity) return;
    const capacity = Math.max(this.expectedRows, this.capacity * 2, this.rows + rows);
    if (!this.uniform) {
      const slot = new Int32Array(capacity);
      slot.set(this.slot.subarray(0, this.rows));
      this.slot = slot;
    }
    for (const column of this.numbers.values()) {
      const values = new Float64Array(capacity * column.width).fill(NaN);
      values.set(column.values.subarray(0, this.rows * column.width));
      column.values = values;
    }
    this.capacity = capacity;
  }

  /** Frames stop being alike: the rows so far get the slots they had implicitly (of `slots` streams). */
  private keepSlotsPerRow(slots: number): void {
    this.uniform = false;
    this.slot = new Int32Array(this.capacity);
    for (let r = 0; r < this.rows; r++) this.slot[r] = r % slots;
  }

  /**
   * Appends one validated frame (model/columns.ts: one value, or `width` numbers, per stream) of the
   * streams `streams`, in their order. The caller keeps `streams` unchanged afterwards.
   */
  append(t: number, step: number, streams: readonly string[], columns: Record<string, ColumnValues>): void {
    const n = streams.length;
    const previous = this.lastSlots;
    const known = this.streamOfSlot.length;
    const slots = this.slotsOf(streams);
    // Alike: the first frame's streams took slots 0, 1, 2... (none came twice), and every frame since
    // had the same streams.
    const alike = this.frames === 0 ? known === 0 && this.streamOfSlot.length === n : slots === previous;
    if (this.uniform && !alike) this.keepSlotsPerRow(known);
    this.growFrames();
    this.growRows(n);
    const at = this.rows;
    const f = this.frames;
    this.frameT[f] = t;
    this.frameStep[f] = step;
    this.frameRow[f] = at;
    if (!this.uniform) this.slot.set(slots, at);
    for (const name in columns) {
      const values = columns[name]!;
      if (values instanceof Float64Array) {
        let column = this.numbers.get(name);
        if (!column) {
          const width = values.length / n;
          column = { values: new Float64Array(this.capacity * width).fill(NaN), width };
          this.numbers.set(name, column);
        }
        column.values.set(values, at * column.width);
      } else {
        let list = this.lists.get(name);
        if (!list) this.lists.set(name, (list = []));
        while (list.length < at) list.push(undefined);
        for (let i = 0; i < n; i++) list.push(values[i]);
      }
    }
    this.rows += n;
    this.frames++;
  }

  /** One batch per stream with rows waiting, in slot order, and the buffer empty again. */
  take(): { stream: string; batch: ColumnBatch }[] {
    const out = this.uniform ? this.takeUniform() : this.takeRows();
    this.expectedRows = Math.max(256, this.rows);
    this.expectedFrames = Math.max(16, this.frames);
    this.frames = 0;
    this.frameCapacity = 0;
    this.frameT = new Float64Array(0);
    this.frameStep = new Float64Array(0);
    this.frameRow = new Int32Array(0);
    this.uniform = true;
    this.rows = 0;
    this.capacity = 0;
    this.slot = new Int32Array(0);
    this.numbers.clear();
    this.lists.clear();
    // Slots start afresh with each commit: the actors of a long run come and go by the thousand.
    this.streamOfSlot.length = 0;
    this.slotOfStream.clear();
    this.lastStreams = [];
    this.lastSlots = new Int32Array(0);
    return out;
  }

  /** Every frame had the same streams: stream s's rows are s, s + slots, s + 2 slots... */
  private takeUniform(): { stream: string; batch: ColumnBatch }[] {
    const frames = this.frames;
    const a = this.streamOfSlot.length;
    // One array of times and one of steps, shared by every stream's batch (they are only read).
    const t = this.frameT.slice(0, frames);
    const step = this.frameStep.slice(0, frames);
    const out: { stream: string; batch: ColumnBatch }[] = new Array(a);
    for (let s = 0; s < a; s++) {
      const columns: Record<string, ColumnValues> = {};
      for (const [name, { values, width }] of this.numbers) {
        const column = new Float64Array(frames * width);
        if (width === 1) for (let f = 0; f < frames; f++) column[f] = values[f * a + s]!;
        else
          for (let f = 0; f < frames; f++)
            for (let k = 0; k < width; k++) column[f * width + k] = values[(f * a + s) * width + k]!;
        columns[name] = column;
      }
      for (const [name, list] of this.lists) {
        const column = new Array<unknown>(frames);
        for (let f = 0; f < frames; f++) column[f] = list[f * a + s];
        columns[name] = column;
      }
      const batch: ColumnBatch = { t, step, columns };
      if (this.types) batch.types = this.types;
      out[s] = { stream: this.streamOfSlot[s]!, batch };
    }
    return out;
  }

  /** Frames of changing streams: each row goes to its slot's batch. */
  private takeRows(): { stream: string; batch: ColumnBatch }[] {
    const rows = this.rows;
    const slotOf = this.slot;
    // Where each row goes: its slot's batch, at the count of that slot's rows before it. Every slot
    // has rows (slots are given to streams as their rows come, afresh with each commit).
    const counts = new Int32Array(this.streamOfSlot.length);
    const position = new Int32Array(rows);
    for (let r = 0; r < rows; r++) position[r] = counts[slotOf[r]!]!++;
    const deal = (values: Float64Array, width: number): Float64Array[] => {
      const targets = Array.from(counts, (n) => new Float64Array(n * width));
      for (let r = 0; r < rows; r++) {
        const target = targets[slotOf[r]!]!;
        if (width === 1) target[position[r]!] = values[r]!;
        else for (let k = 0; k < width; k++) target[position[r]! * width + k] = values[r * width + k]!;
      }
      return targets;
    };
    const dealList = (values: unknown[]): unknown[][] => {
      const targets = Array.from(counts, (n) => new Array<unknown>(n));
      for (let r = 0; r < rows; r++) targets[slotOf[r]!]![position[r]!] = values[r];
      return targets;
    };
    // Each row's time and step, from its frame's.
    const rowT = new Float64Array(rows);
    const rowStep = new Float64Array(rows);
    for (let f = 0; f < this.frames; f++) {
      const end = f + 1 < this.frames ? this.frameRow[f + 1]! : rows;
      rowT.fill(this.frameT[f]!, this.frameRow[f]!, end);
      rowStep.fill(this.frameStep[f]!, this.frameRow[f]!, end);
    }
    const t = deal(rowT, 1);
    const step = deal(rowStep, 1);
    const numbers = [...this.numbers].map(
      ([name, { values, width }]) => [name, deal(values, width)] as const,
    );
    const lists = [...this.lists].map(([name, values]) => [name, dealList(values)] as const);
    return this.streamOfSlot.map((stream, s) => {
      const columns: Record<string, ColumnValues> = {};
      for (const [name, dealt] of numbers) columns[name] = dealt[s]!;
      for (const [name, dealt] of lists) columns[name] = dealt[s]!;
      const batch: ColumnBatch = { t: t[s]!, step: step[s]!, columns };
      if (this.types) batch.types = this.types;
      return { stream, batch };
    });
  }
}

const typesKey = (types: Record<string, FieldType> | undefined): string =>
  types ? JSON.stringify(Object.entries(types).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : '';
