import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { insertFrameRows } from './limsim-sqlite.js';
import type { Peer } from '../peer.js';

/**
 * The raw limits, with no layout work at all: what the disk and SQLite can take for the same content.
 * Neither file can answer a query without a full scan, so they are write-only peers.
 */

/** The actor-states as fixed 56-byte records (6 float64, route and lane index), written in order. */
export const rawFilePeer: Peer = {
  name: 'raw-file',
  description: 'the actor-states as packed 56-byte records, one sequential write and fsync per commit point',
  async record({ dir, frames, commitEverySteps }) {
    const { actors, steps } = frames.size;
    const fd = openSync(join(dir, 'bench.raw'), 'w');
    const recordBytes = 56;
    const buffer = Buffer.alloc(actors * commitEverySteps * recordBytes);
    let offset = 0;
    for (let s = 0; s < steps; s++) {
      const f = frames.next();
      for (let i = 0; i < actors; i++) {
        buffer.writeDoubleLE(f.x[i]!, offset);
        buffer.writeDoubleLE(f.y[i]!, offset + 8);
        buffer.writeDoubleLE(f.yaw[i]!, offset + 16);
        buffer.writeDoubleLE(f.speed[i]!, offset + 24);
        buffer.writeDoubleLE(f.accel[i]!, offset + 32);
        buffer.writeDoubleLE(f.lanePos[i]!, offset + 40);
        buffer.writeInt32LE(f.routeIdx[i]!, offset + 48);
        buffer.writeInt32LE(f.lane[i]!, offset + 52);
        offset += recordBytes;
      }
      if ((s + 1) % commitEverySteps === 0 || s === steps - 1) {
        writeSync(fd, buffer, 0, offset);
        fsyncSync(fd);
        offset = 0;
      }
    }
    closeSync(fd);
  },
  readNote: 'no index, no framing: the write ceiling only',
};

/** LimSim's rows into a table without key or index, all in one transaction: SQLite's insert ceiling. */
export const rawSqlitePeer: Peer = {
  name: 'raw-sqlite-bulk',
  description: 'the LimSim rows into an SQLite table with no key or index, in one transaction',
  async record({ dir, frames }) {
    const db = new Database(join(dir, 'bulk.db'));
    const { steps } = frames.size;
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec(`CREATE TABLE rows(frame INT, vid TEXT, vtag TEXT, x REAL, y REAL, yaw REAL, speed REAL,
      accel REAL, laneID TEXT, lanePos REAL, routeIdx INT)`);
    const insert = db.prepare('INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (let s = 0; s < steps; s++) insertFrameRows(insert, frames.next());
    })();
    db.close();
  },
  readNote: 'no key or index: the insert ceiling only',
};
