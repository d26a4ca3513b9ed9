import { isCannotWrite } from './sqlite-errors.js';
import type Database from 'better-sqlite3';

/**
 * Version history: 1 (simrec 0.1.0): chunks in the SRC1 layout. 2: chunks in the SRC2 layout
 * (blocks, checksums) and the chunks.sealed column. 3: actors.presence (JSON intervals). 4: a stream's
 * counters (samples, first and last time) in stream_counts instead of the streams row. 5: float columns
 * may be packed as differences of bit patterns (chunk codecs 18 to 23), which a simrec of schema 4
 * cannot decode; nothing else changed, so an upgrade only marks the file. 6: a sealed chunk's frame
 * (its header and block table) in chunks.frame and only its blocks in chunks.data, so that a read
 * fetches the one block it decodes instead of the whole chunk (SQLite loads a blob whole before
 * substr() cuts it); a chunk whose frame is NULL is whole in data, as before. A store of any
 * earlier version opens read-only and reads as it is (both chunk layouts are read, counters are read
 * where its version keeps them); the first writable open upgrades it in place, so that an older simrec
 * refuses it instead of misreading it.
 *
 * The SQLite store's layout. `application_id` marks the file as a simrec store; `user_version` is
 * the layout's version, so an older simrec refuses a newer file instead of misreading it.
 */
export const SIMREC_APPLICATION_ID = 0x53524543; // "SREC"
export const SCHEMA_VERSION = 6;

/** The chunks' time index, as a new store makes it and widenChunkTimeIndex remakes an older one's. */
const CHUNK_TIME_INDEX = 'CREATE INDEX chunks_by_time ON chunks(stream_key, begin_us, end_us)';

export const SCHEMA_DDL = `
CREATE TABLE runs (
  -- AUTOINCREMENT: the id of a deleted run is never given to a new one.
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  begin_us INTEGER NOT NULL,
  end_us INTEGER,
  end_reason TEXT,
  state TEXT NOT NULL CHECK (state IN ('recording', 'closed')),
  simulator TEXT NOT NULL,
  simulator_version TEXT,
  description TEXT NOT NULL,
  metadata TEXT NOT NULL,
  -- JSON WriterIdentity of the process recording the run; null once closed.
  writer TEXT
);
CREATE INDEX runs_recording ON runs(state) WHERE state = 'recording';

CREATE TABLE actors (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  ord INTEGER NOT NULL,
  kind TEXT NOT NULL,
  source_class TEXT,
  extents TEXT,
  attributes TEXT NOT NULL,
  options TEXT NOT NULL,
  record INTEGER NOT NULL,
  -- JSON [{from, to}] (model/run.ts PresenceInterval); NULL for actors of stores before schema 3.
  presence TEXT,
  PRIMARY KEY (run_id, id)
) WITHOUT ROWID;

CREATE TABLE streams (
  key INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  schema TEXT NOT NULL,
  extra_fields TEXT NOT NULL DEFAULT '[]',
  UNIQUE (run_id, id)
);

-- Changed at every commit, so apart from the streams rows: those hold a schema of a kilobyte or more,
-- and a commit of 200 streams rewrote some 70 pages of them (8% of recording time on the benchmark);
-- these rows are a few bytes, a page for hundreds of streams. No row: no sample yet.
CREATE TABLE stream_counts (
  stream_key INTEGER PRIMARY KEY REFERENCES streams(key) ON DELETE CASCADE,
  samples INTEGER NOT NULL,
  begin_us INTEGER,
  end_us INTEGER
);

-- Many samples per row (see chunk-codec.ts). AUTOINCREMENT keeps ids unique for the decoded-chunk
-- cache even after the small chunks at a stream's tail are merged and deleted.
CREATE TABLE chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  stream_key INTEGER NOT NULL REFERENCES streams(key) ON DELETE CASCADE,
  begin_us INTEGER NOT NULL,
  end_us INTEGER NOT NULL,
  count INTEGER NOT NULL,
  -- 0 for a tail chunk (one commit's samples, to be merged into a sealed chunk), 1 once sealed.
  sealed INTEGER NOT NULL DEFAULT 1,
  -- A sealed chunk's frame (its first bytes: header and block table), data then holds only its blocks;
  -- NULL: the chunk is whole in data (tail chunks, stores before schema 6). Before data, so that it is
  -- read from the row's page without SQLite walking the blob's overflow pages.
  frame BLOB,
  data BLOB NOT NULL
);
-- end_us too: the chunk index a reader loads (each stream's chunk time ranges) is read from the index
-- alone, without the table's pages, which hold the first kilobytes of each chunk's data.
${CHUNK_TIME_INDEX};

CREATE TABLE attachments (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  media_type TEXT NOT NULL,
  t_us INTEGER,
  metadata TEXT,
  data BLOB NOT NULL,
  PRIMARY KEY (run_id, name)
);

CREATE TABLE scenarios (
  id INTEGER PRIMARY KEY,
  timestamp_us INTEGER NOT NULL,
  description TEXT NOT NULL,
  bin BLOB NOT NULL
);

CREATE TABLE vehicles (
  name TEXT PRIMARY KEY,
  timestamp_us INTEGER NOT NULL,
  doc TEXT NOT NULL
);
`;

/**
 * A writable store whose chunk index lacks end_us (made by an earlier simrec) has it rebuilt with it:
 * the same schema version, since an older simrec reads the wider index as it read the narrower.
 * Loading the chunk index from the table read its pages, which hold the first kilobytes of every
 * chunk's data: a read growing with the store, and resident in every reader while reads went through
 * a memory map (performance-history.md); from the index alone it reads a few pages.
 */
export function widenChunkTimeIndex(db: Database.Database): void {
  const narrow = (): boolean =>
    !(db.pragma('index_info(chunks_by_time)') as { name: string }[]).some((c) => c.name === 'end_us');
  // Asked before the write lock is taken (most opens need nothing), and again once it is held: another
  // process may be widening it too.
  if (!narrow()) return;
  try {
    db.transaction(() => {
      if (!narrow()) return;
      db.exec('DROP INDEX IF EXISTS chunks_by_time');
      db.exec(CHUNK_TIME_INDEX);
    }).immediate();
  } catch (error) {
    // A file this process cannot write is read through the index it has.
    if (!isCannotWrite(error)) throw error;
  }
}

/** Brings a store of an older version to this one, in one transaction. */
export function upgradeSchema(db: Database.Database, from: number): void {
  db.transaction(() => {
    if (from < 2) db.exec('ALTER TABLE chunks ADD COLUMN sealed INTEGER NOT NULL DEFAULT 1');
    // Actors recorded before keep NULL: nothing said when they came and went.
    if (from < 3) db.exec('ALTER TABLE actors ADD COLUMN presence TEXT');
    // Chunks stored before keep NULL: whole in data.
    if (from < 6) db.exec('ALTER TABLE chunks ADD COLUMN frame BLOB');
    if (from < 4) {
      db.exec(`CREATE TABLE stream_counts (
        stream_key INTEGER PRIMARY KEY REFERENCES streams(key) ON DELETE CASCADE,
        samples INTEGER NOT NULL, begin_us INTEGER, end_us INTEGER)`);
      db.exec(`INSERT INTO stream_counts SELECT key, samples, begin_us, end_us FROM streams
        WHERE samples > 0 OR begin_us IS NOT NULL`);
      for (const column of ['samples', 'begin_us', 'end_us'])
        db.exec(`ALTER TABLE streams DROP COLUMN ${column}`);
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

/**
 * Where a store of the given version keeps each stream's counters, for queries over `streams s`: the
 * columns `samples`, `begin_us` and `end_us`, and the join that brings them (none before version 4).
 */
export function streamCounters(version: number): { join: string; columns: string } {
  return version >= 4
    ? {
        join: 'LEFT JOIN stream_counts k ON k.stream_key = s.key',
        columns: 'COALESCE(k.samples, 0) AS samples, k.begin_us AS begin_us, k.end_us AS end_us',
      }
    : { join: '', columns: 's.samples AS samples, s.begin_us AS begin_us, s.end_us AS end_us' };
}

/** Sets a stream's counters (version 4 on). */
export const SET_STREAM_COUNTS = `INSERT INTO stream_counts (stream_key, samples, begin_us, end_us) VALUES (?, ?, ?, ?)
  ON CONFLICT (stream_key) DO UPDATE SET samples = excluded.samples, begin_us = excluded.begin_us, end_us = excluded.end_us`;

/** Adds a commit's samples of a stream to its counters (version 4 on): begin stays, end moves. */
export const ADD_STREAM_COUNTS = `INSERT INTO stream_counts (stream_key, samples, begin_us, end_us) VALUES (?, ?, ?, ?)
  ON CONFLICT (stream_key) DO UPDATE SET samples = samples + excluded.samples, end_us = excluded.end_us`;
