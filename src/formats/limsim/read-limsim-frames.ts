import type { PresenceInterval } from '../../model/run.js';
import type { RunSink } from '../../model/run-ports.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import type { LimSimDatabase } from './limsim-database.js';
import { yawFromLimSim } from './limsim-streams.js';

/** frameINFO's columns as the import reads them, in this order. */
const COLUMNS = ['frame', 'vid', 'vtag', 'x', 'y', 'yaw', 'speed', 'accel', 'laneID', 'lanePos', 'routeIdx'];
const [FRAME, VID, VTAG, X, Y, YAW, SPEED, ACCEL, LANE, LANE_POS, ROUTE_IDX] = COLUMNS.map((_, i) => i) as [
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
];

/** Rows handed over before the import waits for them to be durable. */
const DURABLE_ROWS = 20_000;

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

  for (const values of db.rowValues('frameINFO', { columns: COLUMNS, orderBy: 'frame, vid' })) {
    const f = values[FRAME] as number;
    const vid = String(values[VID]);
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
  if (repeats > 0)
    warn(
      `frameINFO: ${repeats} row${repeats > 1 ? 's repeat' : ' repeats'} a (frame, vid) read before (the first: ${firstRepeat}); the first row of each was kept`,
    );
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
    this.x.push(values[X] as number);
    this.y.push(values[Y] as number);
    const { yaw, turns } = yawFromLimSim(values[YAW] as number);
    this.yaw.push(yaw);
    // Whole turns are kept only where LimSim's yaw has them: absent (NaN) elsewhere.
    this.yawTurns.push(turns === 0 ? NaN : turns);
    if (turns !== 0) this.turned = true;
    this.speed.push(values[SPEED] as number);
    this.accel.push(values[ACCEL] as number);
    this.lane.push(String(values[LANE]));
    this.lanePos.push(values[LANE_POS] as number);
    this.routeIdx.push(values[ROUTE_IDX] as number);
    this.vtag.push(String(values[VTAG]));
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
