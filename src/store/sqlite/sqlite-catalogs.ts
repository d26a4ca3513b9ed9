import type Database from 'better-sqlite3';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import type { JsonObject } from '../../model/json.js';
import type { CatalogPort } from '../../model/store-port.js';
import { json, parse, type Row } from './sqlite-store-file.js';

/** The scenario and vehicle catalogs' rows (catalogs.ts makes the port of each from these). */
export function scenarioRows(db: Database.Database): CatalogPort<Scenario, ScenarioSummary, bigint> {
  return {
    async put(s) {
      db.prepare(
        `INSERT INTO scenarios (id, timestamp_us, description, bin) VALUES (?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET timestamp_us = excluded.timestamp_us, description = excluded.description, bin = excluded.bin`,
      ).run(s.id, s.timestamp, s.description, s.bin);
    },
    async get(id) {
      const row = db.prepare('SELECT * FROM scenarios WHERE id = ?').safeIntegers(true).get(id) as
        Row | undefined;
      if (!row) return undefined;
      const bin = row.bin as Buffer;
      return {
        id: row.id as bigint,
        timestamp: Number(row.timestamp_us),
        description: row.description as string,
        bin: new Uint8Array(bin.buffer, bin.byteOffset, bin.byteLength),
      };
    },
    async list() {
      const rows = db
        .prepare('SELECT id, timestamp_us, description, length(bin) AS size FROM scenarios ORDER BY id')
        .safeIntegers(true)
        .all() as Row[];
      return rows.map((row) => ({
        id: row.id as bigint,
        timestamp: Number(row.timestamp_us),
        description: row.description as string,
        size: Number(row.size),
      }));
    },
    async delete(id) {
      return db.prepare('DELETE FROM scenarios WHERE id = ?').run(id).changes > 0;
    },
  };
}

export function vehicleRows(db: Database.Database): CatalogPort<VehicleConfig, VehicleConfig, string> {
  const fromRow = (row: Row): VehicleConfig => ({
    name: row.name as string,
    timestamp: row.timestamp_us as number,
    doc: parse<JsonObject>(row.doc),
  });
  return {
    async put(v) {
      db.prepare(
        `INSERT INTO vehicles (name, timestamp_us, doc) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET timestamp_us = excluded.timestamp_us, doc = excluded.doc`,
      ).run(v.name, v.timestamp, json(v.doc));
    },
    async get(name) {
      const row = db.prepare('SELECT * FROM vehicles WHERE name = ?').get(name) as Row | undefined;
      return row && fromRow(row);
    },
    async list() {
      return (db.prepare('SELECT * FROM vehicles ORDER BY name').all() as Row[]).map(fromRow);
    },
    async delete(name) {
      return db.prepare('DELETE FROM vehicles WHERE name = ?').run(name).changes > 0;
    },
  };
}
