import type { ColumnBatchInput } from '../../model/columns.js';
import type { FieldDecl } from '../../model/stream.js';
import { wrapAngle } from '../../model/units.js';

/**
 * A CARLA import's samples of per-actor streams, as columns until they are appended (no object per
 * record): `state` rows in StateRows, the other streams read as values (control, lights, walker,
 * signal) in ValueRows.
 *
 * A `state` row is a Position, with the velocities of the Kinematics joined to it. Where the recording has no Kinematics for a pose, its
 * velocities come from the poses before and after it (central differences, one-sided at the ends), so
 * such a row waits for its actor's next pose; every other row is ready at once. Its speed is along
 * the heading.
 */

/** The fields a row holds, in this order (the pose, then the velocities, then the speed). */
const FIELDS = ['x', 'y', 'z', 'roll', 'pitch', 'yaw', 'vx', 'vy', 'vz', 'wx', 'wy', 'wz', 'speed'] as const;
const X = 0;
const Y = 1;
const Z = 2;
const PITCH = 4;
const YAW = 5;
const VX = 6;
const VY = 7;
const VZ = 8;
const WZ = 11;
const SPEED = 12;
/** Values a row takes from its Position and Kinematics (all but the speed). */
const RECORDED = 12;

/** A copy of `from` in an array twice its length. */
function doubled(from: Float64Array): Float64Array {
  const to = new Float64Array(from.length * 2);
  to.set(from);
  return to;
}

class ActorRows {
  /** Rows held. */
  length = 0;
  /** Rows [0, ready) have their velocities; a last row past them waits for the actor's next pose. */
  ready = 0;
  t: Float64Array;
  step: Float64Array;
  columns: Float64Array[];
  /** The pose before row 0, once the rows before it were taken: t, x, y, z, yaw. */
  before: Float64Array | null = null;

  constructor(capacity: number) {
    this.t = new Float64Array(capacity);
    this.step = new Float64Array(capacity);
    this.columns = FIELDS.map(() => new Float64Array(capacity));
  }

  add(t: number, step: number, values: Float64Array, at: number): void {
    if (this.length === this.t.length) this.grow();
    const row = this.length++;
    this.t[row] = t;
    this.step[row] = step;
    for (let k = 0; k < RECORDED; k++) this.columns[k]![row] = values[at + k]!;
    this.columns[SPEED]![row] = NaN;
    if (this.ready < row) this.finish(row - 1, row);
    if (!Number.isNaN(this.columns[VX]![row]!)) this.finish(row, -1);
  }

  /** Gives row `row` its velocities (from its neighbours when unrecorded) and speed; `next` -1 if none. */
  finish(row: number, next: number): void {
    const c = this.columns;
    if (Number.isNaN(c[VX]![row]!)) this.derive(row, next);
    if (!Number.isNaN(c[VX]![row]!)) c[SPEED]![row] = speedAlong(c, row);
    this.ready = row + 1;
  }

  /** t, x, y, z and yaw of row `row`; of the pose before row 0 for -1. */
  private pose(row: number): [number, number, number, number, number] {
    if (row < 0) {
      const b = this.before!;
      return [b[0]!, b[1]!, b[2]!, b[3]!, b[4]!];
    }
    const c = this.columns;
    return [this.t[row]!, c[X]![row]!, c[Y]![row]!, c[Z]![row]!, c[YAW]![row]!];
  }

  /** Central differences of the poses around `row`, one-sided where a neighbour is missing. */
  private derive(row: number, next: number): void {
    const hasPrevious = row > 0 || this.before !== null;
    if (!hasPrevious && next < 0) return;
    const a = this.pose(hasPrevious ? row - 1 : row);
    const b = this.pose(next >= 0 ? next : row);
    const dt = (b[0] - a[0]) / 1e6;
    if (!(dt > 0)) return;
    const c = this.columns;
    c[VX]![row] = (b[1] - a[1]) / dt;
    c[VY]![row] = (b[2] - a[2]) / dt;
    c[VZ]![row] = (b[3] - a[3]) / dt;
    c[WZ]![row] = wrapAngle(b[4] - a[4]) / dt;
  }

  private grow(): void {
    this.t = doubled(this.t);
    this.step = doubled(this.step);
    this.columns = this.columns.map(doubled);
  }

  /** The ready rows as a batch, valid until the next call on these rows. */
  readyBatch(): ColumnBatchInput {
    const n = this.ready;
    const columns: Record<string, Float64Array> = {};
    for (let k = 0; k < FIELDS.length; k++) {
      const values = this.columns[k]!.subarray(0, n);
      // A field no row has (velocities of a recording without Kinematics) is left out, as a sample leaves it.
      if (k < VX || values.some((v) => !Number.isNaN(v))) columns[FIELDS[k]!] = values;
    }
    return { t: this.t.subarray(0, n), step: this.step.subarray(0, n), columns };
  }

  /** Drops the ready rows (appended), keeping a row that waits and the pose before it. */
  dropReady(): void {
    const n = this.ready;
    if (n === 0) return;
    const last = n - 1;
    this.before = Float64Array.of(
      this.t[last]!,
      this.columns[X]![last]!,
      this.columns[Y]![last]!,
      this.columns[Z]![last]!,
      this.columns[YAW]![last]!,
    );
    this.t.copyWithin(0, n, this.length);
    this.step.copyWithin(0, n, this.length);
    for (const column of this.columns) column.copyWithin(0, n, this.length);
    this.length -= n;
    this.ready = 0;
  }
}

/** Speed along the heading (simrec's pitch is positive nose down). */
function speedAlong(c: Float64Array[], row: number): number {
  const yaw = c[YAW]![row]!;
  const pitch = c[PITCH]![row]!;
  const vx = c[VX]![row]!;
  const vy = c[VY]![row]!;
  const vz = c[VZ]![row]!;
  return Math.cos(pitch) * (vx * Math.cos(yaw) + vy * Math.sin(yaw)) - Math.sin(pitch) * vz;
}

export class StateRows {
  private readonly byActor = new Map<string, ActorRows>();
  private readonly capacity: number;

  /** `capacity`: rows an actor is expected to gather between two takes (they grow past it). */
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /**
   * A pose of `actor` at `t`: `values` from `at` holds x, y, z, roll, pitch, yaw, then vx, vy, vz, wx,
   * wy, wz (NaN where the recording has no Kinematics for it).
   */
  add(actor: string, t: number, step: number, values: Float64Array, at: number): void {
    let rows = this.byActor.get(actor);
    if (!rows) this.byActor.set(actor, (rows = new ActorRows(this.capacity)));
    rows.add(t, step, values, at);
  }

  /** The last row of every actor is given its velocities from the poses it has: no pose follows. */
  finishAll(): void {
    for (const rows of this.byActor.values()) if (rows.ready < rows.length) rows.finish(rows.length - 1, -1);
  }

  /**
   * Hands each actor's ready rows to `append` (which must copy them before it returns), then drops
   * them.
   */
  take<T>(append: (actor: string, batch: ColumnBatchInput) => T): T[] {
    const results: T[] = [];
    for (const [actor, rows] of this.byActor) {
      if (rows.ready === 0) continue;
      results.push(append(actor, rows.readyBatch()));
      rows.dropReady();
    }
    return results;
  }
}

const NUMERIC_TYPES: ReadonlySet<string> = new Set(['f64', 'f32', 'i32', 'i64', 'bool']);

/** One stream's rows: numbers (bools as 0 and 1) in typed arrays, text in arrays. */
class StreamRows {
  readonly stream: string;
  private readonly names: readonly string[];
  private readonly numeric: readonly boolean[];
  length = 0;
  private t: Float64Array;
  private step: Float64Array;
  private columns: (Float64Array | unknown[])[];

  constructor(stream: string, fields: readonly FieldDecl[], capacity: number) {
    this.stream = stream;
    this.names = fields.map((f) => f.name);
    this.numeric = fields.map((f) => NUMERIC_TYPES.has(f.type));
    this.t = new Float64Array(capacity);
    this.step = new Float64Array(capacity);
    this.columns = this.numeric.map((numeric) => (numeric ? new Float64Array(capacity) : []));
  }

  add(t: number, step: number, values: readonly unknown[], at: number): void {
    if (this.length === this.t.length) this.grow();
    const row = this.length++;
    this.t[row] = t;
    this.step[row] = step;
    for (let k = 0; k < this.names.length; k++) {
      const v = values[at + k];
      const column = this.columns[k]!;
      if (this.numeric[k]) (column as Float64Array)[row] = typeof v === 'boolean' ? Number(v) : (v as number);
      else (column as unknown[]).push(v);
    }
  }

  private grow(): void {
    this.t = doubled(this.t);
    this.step = doubled(this.step);
    this.columns = this.columns.map((c) => (c instanceof Float64Array ? doubled(c) : c));
  }

  /** The rows as a batch, valid until clear(). */
  batch(): ColumnBatchInput {
    const n = this.length;
    const columns: Record<string, Float64Array | unknown[]> = {};
    this.names.forEach((name, k) => {
      const column = this.columns[k]!;
      columns[name] = column instanceof Float64Array ? column.subarray(0, n) : column;
    });
    return { t: this.t.subarray(0, n), step: this.step.subarray(0, n), columns };
  }

  clear(): void {
    this.length = 0;
    for (const column of this.columns) if (!(column instanceof Float64Array)) column.length = 0;
  }
}

/** Rows of streams whose samples are records read as values (carla-frames.ts, ValueRecords). */
export class ValueRows {
  private readonly byKey = new Map<number, StreamRows>();
  private readonly capacity: number;
  private readonly streamOf: (packet: number, actor: number) => { stream: string; fields: FieldDecl[] };

  /**
   * `streamOf`: the stream the records of a packet and an actor go to, and the fields of their values
   * in the order the values are held.
   */
  constructor(
    capacity: number,
    streamOf: (packet: number, actor: number) => { stream: string; fields: FieldDecl[] },
  ) {
    this.capacity = capacity;
    this.streamOf = streamOf;
  }

  /** A record of packet `packet` (below 256) of CARLA actor `actor`: its values in `values` from `at`. */
  add(packet: number, actor: number, t: number, step: number, values: readonly unknown[], at: number): void {
    const key = actor * 256 + packet;
    let rows = this.byKey.get(key);
    if (!rows) {
      const { stream, fields } = this.streamOf(packet, actor);
      this.byKey.set(key, (rows = new StreamRows(stream, fields, this.capacity)));
    }
    rows.add(t, step, values, at);
  }

  /** Hands each stream's rows to `append` (which must copy them before it returns), then drops them. */
  take<T>(append: (stream: string, batch: ColumnBatchInput) => T): T[] {
    const results: T[] = [];
    for (const rows of this.byKey.values()) {
      if (rows.length === 0) continue;
      results.push(append(rows.stream, rows.batch()));
      rows.clear();
    }
    return results;
  }
}
