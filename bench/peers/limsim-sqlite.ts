import { join } from 'node:path';
import Database from 'better-sqlite3';
import { actorId, actorTag, LANE_IDS, stepAtOrBefore, type Frame } from '../generator.js';
import type { Peer } from '../peer.js';

const DB_FILE = 'limsim.db';

/** One frameINFO row per actor, positional, as LimSim's `INSERT INTO frameINFO VALUES (?,...)`. */
export function insertFrameRows(insert: Database.Statement, f: Frame): void {
  for (let i = 0; i < f.x.length; i++)
    insert.run(
      f.step,
      actorId(i),
      actorTag(i),
      f.x[i],
      f.y[i],
      f.yaw[i],
      f.speed[i],
      f.accel[i],
      LANE_IDS[f.lane[i]!],
      f.lanePos[i],
      f.routeIdx[i],
    );
}

/**
 * LimSim master's DDL as its code writes it (simModel/egoTracking/model.py createDatabase): one row per
 * vehicle per frame, TEXT vid, PRIMARY KEY (frame, vid) and no other index.
 */
const LIMSIM_DDL = `
CREATE TABLE IF NOT EXISTS frameINFO(
  frame INT NOT NULL, vid TEXT NOT NULL, vtag TEXT NOT NULL, x REAL NOT NULL, y REAL NOT NULL,
  yaw REAL NOT NULL, speed REAL NOT NULL, accel REAL NOT NULL, laneID TEXT NOT NULL,
  lanePos REAL NOT NULL, routeIdx INT NOT NULL, PRIMARY KEY (frame, vid));
CREATE TABLE IF NOT EXISTS vehicleINFO(
  vid TEXT PRIMARY KEY, length REAL NOT NULL, width REAL NOT NULL, maxAccel REAL, maxDecel REAL,
  maxSpeed REAL, vTypeID TEXT NOT NULL, routes TEXT NOT NULL);
`;

/**
 * The best case of LimSim's design: its schema and positional INSERTs, but through better-sqlite3 with
 * prepared statements and one transaction per commit point, instead of its 1 s timer thread capped at
 * 1,000 rows a commit. Same journal (WAL) and synchronous=FULL as simrec, so only the layout differs.
 */
export const limsimPeer: Peer = {
  name: 'limsim-sqlite',
  description: 'LimSim frameINFO rows (PK frame, vid) via better-sqlite3, one transaction per commit point',
  async record({ dir, frames, commitEverySteps }) {
    const { actors, steps } = frames.size;
    const db = new Database(join(dir, DB_FILE));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec(LIMSIM_DDL);
    const ids = Array.from({ length: actors }, (_, i) => actorId(i));
    const vehicle = db.prepare('INSERT INTO vehicleINFO VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (const id of ids) vehicle.run(id, 4.6, 1.9, 2.6, 4.5, 16, 'passenger', 'E0 E3 E6');
    })();
    const insert = db.prepare('INSERT INTO frameINFO VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    const commit = db.transaction((count: number) => {
      for (let k = 0; k < count; k++) insertFrameRows(insert, frames.next());
    });
    for (let s = 0; s < steps; s += commitEverySteps) commit(Math.min(commitEverySteps, steps - s));
    db.close();
  },
  async open(dir, size) {
    const db = new Database(join(dir, DB_FILE), { readonly: true });
    const byFrame = db.prepare('SELECT * FROM frameINFO WHERE frame = ?');
    const byVehicle = db.prepare('SELECT * FROM frameINFO WHERE vid = ? ORDER BY frame');
    return {
      // LimSim replays by frame number; the frame holding t is the latest at or before it.
      scene: async (t) => byFrame.all(stepAtOrBefore(size, t)).length,
      trajectory: async (actor) => byVehicle.all(actor).length,
      close: async () => {
        db.close();
      },
    };
  },
  seekable: true,
};
