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
  /**
   * Numeric and vec columns, `capacity * width` long; rows without a value are NaN. Kept from one
   * commit to the next (cleared, not made again: a commit of 200 actors x 100 steps is 160 KB a column),
   * `used` by the frames of this commit or not.
   */
  private readonly numbers = new Map<string, { values: Float64Array; width: number; used: boolean }>();
  /**
   * Other columns, `capacity` long like the numbers (holes have no value): pushed to one by one, a
   * list of 20,000 rows was copied as it grew and again by each young collection that found it alive.
   */
  private readonly lists = new Map<string, { values: unknown[]; used: boolean }>();
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
    for (const list of this.lists.values()) {
      const grown = new Array<unknown>(capacity);
      for (let r = 0; r < this.rows; r++) grown[r] = list.values[r];
      list.values = grown;
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
          column = { values: new Float64Array(this.capacity * width).fill(NaN), width, used: true };
          this.numbers.set(name, column);
        }
        column.used = true;
        column.values.set(values, at * column.width);
      } else {
        let list = this.lists.get(name);
        if (!list) this.lists.set(name, (list = { values: new Array<unknown>(this.capacity), used: true }));
        list.used = true;
        for (let i = 0; i < n; i++) list.values[at + i] = values[i];
      }
    }
    this.rows += n;
    this.frames++;
  }

  /**
   * One batch per stream with rows waiting, in slot order, and the buffer empty again. Each column is
   * gathered stream by stream into one array, and a stream's batch holds views of it: a typed array
   * per stream and column was, at 55 to 200 actors, the most of what a commit cost the appending thread
   * (allocations, and their garbage).
   */
  take(): { stream: string; batch: ColumnBatch }[] {
    const slots = this.streamOfSlot.length;
    const frames = this.frames;
    // Stream s's rows are rows[start[s]] .. rows[start[s + 1] - 1], in order. Frames alike: row r of the
    // buffer is frame r / slots, slot r % slots, so stream s's are s, s + slots, ...: read by stride,
    // without an array of row numbers (a third of the gathering time at 200 actors).
    const start = new Int32Array(slots + 1);
    let rows: Int32Array | null = null;
    if (this.uniform) for (let s = 0; s <= slots; s++) start[s] = s * frames;
    else rows = this.rowsBySlot(start);
    const t = this.gatherTimes(this.frameT, rows, slots);
    const step = this.gatherTimes(this.frameStep, rows, slots);
    const numbers = [...this.numbers]
      .filter(([, c]) => c.used)
      .map(([name, { values, width }]) => {
        const gathered = new Float64Array(this.rows * width);
        if (rows === null && width === 1)
          for (let s = 0, i = 0; s < slots; s++)
            for (let r = s; r < this.rows; r += slots) gathered[i++] = values[r]!;
        else
          for (let i = 0; i < this.rows; i++) {
            const r = rows === null ? (i % frames) * slots + Math.floor(i / frames) : rows[i]!;
            for (let k = 0; k < width; k++) gathered[i * width + k] = values[r * width + k]!;
          }
        return { name, gathered, width };
      });
    const lists = [...this.lists]
      .filter(([, c]) => c.used)
      .map(([name, { values }]) => {
        const gathered = new Array<unknown>(this.rows);
        if (rows === null)
          for (let s = 0, i = 0; s < slots; s++)
            for (let r = s; r < this.rows; r += slots) gathered[i++] = values[r];
        else for (let i = 0; i < this.rows; i++) gathered[i] = values[rows[i]!];
        return { name, gathered };
      });
    const out = this.streamOfSlot.map((stream, s) => {
      const from = start[s]!;
      const to = start[s + 1]!;
      const columns: Record<string, ColumnValues> = {};
      for (const { name, gathered, width } of numbers)
        columns[name] = gathered.subarray(from * width, to * width);
      for (const { name, gathered } of lists) columns[name] = gathered.slice(from, to);
      const batch: ColumnBatch = { t: t.subarray(from, to), step: step.subarray(from, to), columns };
      if (this.types) batch.types = this.types;
      return { stream, batch };
    });
    this.reset();
    return out;
  }

  /** Rows grouped by slot, each slot's in order; `start` gets where each slot's rows begin. */
  private rowsBySlot(start: Int32Array): Int32Array {
    const slots = this.streamOfSlot.length;
    const count = new Int32Array(slots);
    for (let r = 0; r < this.rows; r++) count[this.slot[r]!]!++;
    for (let s = 0; s < slots; s++) start[s + 1] = start[s]! + count[s]!;
    const next = start.slice(0, slots);
    const rows = new Int32Array(this.rows);
    for (let r = 0; r < this.rows; r++) rows[next[this.slot[r]!]!++] = r;
    return rows;
  }

  /** Each row's time (or step), from its frame's: `rows` as take() has them, null when frames are alike. */
  private gatherTimes(perFrame: Float64Array, rows: Int32Array | null, slots: number): Float64Array {
    const out = new Float64Array(this.rows);
    if (rows === null) {
      // Every stream has a row in every frame: each stream's times are the frames' times.
      const times = perFrame.subarray(0, this.frames);
      for (let s = 0; s < slots; s++) out.set(times, s * this.frames);
      return out;
    }
    const perRow = new Float64Array(this.rows);
    for (let f = 0; f < this.frames; f++)
      perRow.fill(perFrame[f]!, this.frameRow[f], f + 1 < this.frames ? this.frameRow[f + 1]! : this.rows);
    for (let i = 0; i < rows.length; i++) out[i] = perRow[rows[i]!]!;
    return out;
  }

  private reset(): void {
    this.expectedRows = Math.max(256, this.rows);
    this.expectedFrames = Math.max(16, this.frames);
    if (this.rows * 4 < this.capacity) {
      // A burst left it far larger than commits now are: let that memory go.
      this.frameCapacity = 0;
      this.frameT = new Float64Array(0);
      this.frameStep = new Float64Array(0);
      this.frameRow = new Int32Array(0);
      this.capacity = 0;
      this.slot = new Int32Array(0);
      this.numbers.clear();
      this.lists.clear();
    }
    // What this commit's rows wrote is absent again for the next (NaN, a hole).
    for (const column of this.numbers.values()) {
      if (column.used) column.values.fill(NaN, 0, this.rows * column.width);
      column.used = false;
    }
    for (const list of this.lists.values()) {
      if (list.used) list.values.fill(undefined, 0, this.rows);
      list.used = false;
    }
    this.frames = 0;
    this.uniform = true;
    this.rows = 0;
    // Slots start afresh with each commit: the actors of a long run come and go by the thousand.
    this.streamOfSlot.length = 0;
    this.slotOfStream.clear();
    this.lastStreams = [];
    this.lastSlots = new Int32Array(0);
  }
}

const typesKey = (types: Record<string, FieldType> | undefined): string =>
  types ? JSON.stringify(Object.entries(types).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : '';
