import type Database from 'better-sqlite3';

/**
 * Version history: 1 (simrec 0.1.0): chunks in the SRC1 layout. 2: chunks in the SRC2 layout
 * (blocks, checksums) and the chunks.sealed column. 3: actors.presence (JSON intervals). A version 1 store opens and reads as it is (both
 * layouts are read); the first writable open adds the column and marks it version 2, so that a simrec
 * that reads only SRC1 refuses it instead of misreading it.
 *
 * The SQLite store's layout. `application_id` marks the file as a simrec store; `user_version` is
 * the layout's version, so an older simrec refuses a newer file instead of misreading it.
 */
export const SIMREC_APPLICATION_ID = 0x53524543; // "SREC"
export const SCHEMA_VERSION = 3;

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
  samples INTEGER NOT NULL DEFAULT 0,
  begin_us INTEGER,
  end_us INTEGER,
  UNIQUE (run_id, id)
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
  data BLOB NOT NULL
);
CREATE INDEX chunks_by_time ON chunks(stream_key, begin_us);

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

/** Brings a store of an older version to this one, in one transaction. */
export function upgradeSchema(db: Database.Database, from: number): void {
  db.transaction(() => {
    if (from < 2) db.exec('ALTER TABLE chunks ADD COLUMN sealed INTEGER NOT NULL DEFAULT 1');
    // Actors recorded before keep NULL: nothing said when they came and went.
    if (from < 3) db.exec('ALTER TABLE actors ADD COLUMN presence TEXT');
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}
