import type { PresenceInterval } from '../../model/run.js';
import type { RunSink } from '../../model/run-ports.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import type { LimSimDatabase } from './limsim-database.js';
import { yawFromLimSim } from './limsim-streams.js';

/** frameINFO's columns as the import reads them, in this order. */
const COLUMNS = [
  'frame',
  'vid',
  'vtag',
  'x',
  'y',
  'yaw',
  'speed',
  'accel',
  'laneID',
  'lanePos',
  'routeIdx',
] as const;
/** Where each column's value is in a row read. */
const AT = Object.fromEntries(COLUMNS.map((name, i) => [name, i])) as Record<
  (typeof COLUMNS)[number],
  number
>;

/** Rows handed over before the import waits for them to be durable. */
export const DURABLE_ROWS = 20_000;

/** The warning for rows of a table that repeat the key of the row before them (the first was kept). */
export const repeatsWarning = (table: string, key: string, repeats: number, first: string): string =>
  `${table}: ${repeats} row${repeats > 1 ? 's repeat' : ' repeats'} a (${key}) read before (the first: ${first}); the first row of each was kept`;

export interface LimSimFrames {
  /** The last frame's time, or null when frameINFO has no row. */
  last: number | null;
  /** Each vehicle's presence (see presenceOf). */
  presence: Map<string, PresenceInterval[]>;
}

/**
 * frameINFO's rows as the vehicles' `state` streams. LimSim writes a row per vehicle and frame; read in
 * (frame, vid) order, each frame goes to the run as one frame of columns (RunSink.appendFrame), with no
 * object per row: an hour of a town is ten million rows. A row that repeats the (frame, vid) of the row
 * before is warned of and skipped. Presence is gathered in the same pass: LimSim writes a row for every
 * vehicle in the area of interest at every frame, so a vehicle without a row at a recorded frame was
 * not there (it left the area, or the network), and one that comes back has a new interval; an
 * interval ends at the first recorded frame without the vehicle, and one still open at the last frame
 * stays open (present to the run's end).
 */
export async function appendLimSimFrames(
  db: LimSimDatabase,
  rec: RunSink,
  at: (frame: number) => number,
  progress: (rows: number) => void,
  warn: (message: string) => void,
): Promise<LimSimFrames> {
  const presence = new Map<string, PresenceInterval[]>();
  /** Per vehicle in the frame before, the interval it is in. */
  let open = new Map<string, PresenceInterval>();
  let frame: Frame | null = null;
  let last: number | null = null;
  let pending: Promise<void>[] = [];
  let unwaited = 0;
  let repeats = 0;
  let firstRepeat = '';

  const handOver = async (f: Frame): Promise<void> => {
    const t = at(f.frame);
    last = t;
    // Who was in the frame before and is not in this one left at this one.
    const present = new Map<string, PresenceInterval>();
    for (const vid of f.actors) {
      let interval = open.get(vid);
      if (!interval) {
        interval = { from: t, to: null };
        let list = presence.get(vid);
        if (!list) presence.set(vid, (list = []));
        list.push(interval);
      }
      present.set(vid, interval);
    }
    for (const [vid, interval] of open) if (!present.has(vid)) interval.to = t;
    open = present;
    pending.push(rec.appendFrame(STATE_STREAM, { t, step: f.frame, actors: f.actors, columns: f.columns() }));
    unwaited += f.rows;
    if (unwaited >= DURABLE_ROWS) {
      const waited = pending;
      pending = [];
      await Promise.all(waited);
      progress(unwaited);
      unwaited = 0;
    }
  };

  for (const values of db.rowValues('frameINFO', { columns: [...COLUMNS], orderBy: 'frame, vid' })) {
    const f = values[AT.frame] as number;
    const vid = String(values[AT.vid]);
    if (frame === null || f !== frame.frame) {
      if (frame !== null) await handOver(frame);
      frame = new Frame(f);
    } else if (frame.actors.at(-1) === vid) {
      // Rows come in (frame, vid) order: a repeat follows the row it repeats.
      if (repeats++ === 0) firstRepeat = `frame ${String(f)}, vid ${JSON.stringify(vid)}`;
      frame.rows++; // read, for the progress
      continue;
    }
    frame.add(vid, values);
  }
  if (frame !== null) await handOver(frame);
  await Promise.all(pending);
  progress(unwaited);
  if (repeats > 0) warn(repeatsWarning('frameINFO', 'frame, vid', repeats, firstRepeat));
  return { last, presence };
}

/** One frame's rows as simrec's state fields, a column each. */
class Frame {
  readonly frame: number;
  readonly actors: string[] = [];
  /** Rows read for it, repeats included. */
  rows = 0;
  private readonly x: number[] = [];
  private readonly y: number[] = [];
  private readonly yaw: number[] = [];
  private readonly yawTurns: number[] = [];
  private turned = false;
  private readonly speed: number[] = [];
  private readonly accel: number[] = [];
  private readonly lane: string[] = [];
  private readonly lanePos: number[] = [];
  private readonly routeIdx: number[] = [];
  private readonly vtag: string[] = [];

  constructor(frame: number) {
    this.frame = frame;
  }

  add(vid: string, values: readonly unknown[]): void {
    this.rows++;
    this.actors.push(vid);
    this.x.push(values[AT.x] as number);
    this.y.push(values[AT.y] as number);
    const { yaw, turns } = yawFromLimSim(values[AT.yaw] as number);
    this.yaw.push(yaw);
    // Whole turns are kept only where LimSim's yaw has them: absent (NaN) elsewhere.
    this.yawTurns.push(turns === 0 ? NaN : turns);
    if (turns !== 0) this.turned = true;
    this.speed.push(values[AT.speed] as number);
    this.accel.push(values[AT.accel] as number);
    this.lane.push(String(values[AT.laneID]));
    this.lanePos.push(values[AT.lanePos] as number);
    this.routeIdx.push(values[AT.routeIdx] as number);
    this.vtag.push(String(values[AT.vtag]));
  }

  columns(): Record<string, number[] | string[]> {
    return {
      x: this.x,
      y: this.y,
      yaw: this.yaw,
      speed: this.speed,
      accel: this.accel,
      lane: this.lane,
      lanePos: this.lanePos,
      routeIdx: this.routeIdx,
      vtag: this.vtag,
      ...(this.turned ? { yawTurns: this.yawTurns } : {}),
    };
  }
}
