import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { validateRoadNetwork } from '../src/model/roadnet.js';
import {
  limSimTablesFromRoadNetwork,
  roadNetworkFromLimSimTables,
  type LimSimNetworkTables,
} from '../src/formats/limsim/limsim-network-rows.js';
import { readSumoNet } from '../src/roadnet/sumo/sumo-net-reader.js';
import { fixture } from './helpers/paths.js';

const TABLES = [
  'edgeINFO',
  'laneINFO',
  'junctionLaneINFO',
  'junctionINFO',
  'tlLogicINFO',
  'connectionINFO',
] as const;

function readTables(): LimSimNetworkTables {
  const db = new Database(fixture('limsim-db', 'egoTrackingTest.db'), { readonly: true });
  try {
    return Object.fromEntries(
      TABLES.map((t) => [t, db.prepare(`SELECT * FROM ${t}`).all()]),
    ) as unknown as LimSimNetworkTables;
  } finally {
    db.close();
  }
}

const points = (raw: string): number[][] => raw.split(' ').map((p) => p.split(',').map(Number));
const byKey = <T>(rows: T[], key: (r: T) => string): T[] =>
  [...rows].sort((a, b) => key(a).localeCompare(key(b)));

describe("LimSim's road-network tables (egoTrackingTest.db, CARLA Town05)", () => {
  const tables = readTables();

  it('become a valid network with the counts the tables hold', () => {
    const { network, warnings } = roadNetworkFromLimSimTables(tables);
    validateRoadNetwork(network);
    assert.equal(network.edges.filter((e) => e.function === 'normal').length, tables.edgeINFO.length);
    assert.equal(network.lanes.filter((l) => l.function === 'normal').length, tables.laneINFO.length);
    assert.equal(network.junctions.length, tables.junctionINFO.length);
    assert.equal(network.trafficLights.length, tables.tlLogicINFO.length);
    assert.equal(network.connections.length, tables.connectionINFO.length);
    const internal = network.lanes.filter((l) => l.function === 'internal');
    const through = new Set(tables.connectionINFO.map((c) => c.via));
    assert.equal(internal.length, tables.junctionLaneINFO.filter((r) => through.has(r.id)).length);
    assert.ok(warnings.some((w) => /drawn as chords/.test(w)));
    const lights = network.connections.filter((c) => c.trafficLight !== undefined);
    assert.equal(
      lights.length,
      tables.junctionLaneINFO.filter((r) => r.tlLogicID !== null && through.has(r.id)).length,
    );
  });

  it('and back: the rows LimSim wrote, for every table', () => {
    const { network } = roadNetworkFromLimSimTables(tables);
    const again = limSimTablesFromRoadNetwork(network);
    assert.deepEqual(
      byKey(again.edgeINFO, (r) => r.id),
      byKey(tables.edgeINFO, (r) => r.id),
    );
    assert.deepEqual(
      byKey(again.laneINFO, (r) => r.id).map((r) => ({ ...r, rawShape: points(r.rawShape) })),
      byKey(tables.laneINFO, (r) => r.id).map((r) => ({ ...r, rawShape: points(r.rawShape) })),
    );
    assert.deepEqual(
      byKey(again.junctionINFO, (r) => r.id).map((r) => points(r.rawShape)),
      byKey(tables.junctionINFO, (r) => r.id).map((r) => points(r.rawShape)),
    );
    assert.deepEqual(
      byKey(again.tlLogicINFO, (r) => r.id),
      byKey(tables.tlLogicINFO, (r) => r.id),
    );
    const key = (r: { fromLane: string; toLane: string }): string => `${r.fromLane} ${r.toLane}`;
    assert.deepEqual(byKey(again.connectionINFO, key), byKey(tables.connectionINFO, key));
    const through = new Set(tables.connectionINFO.map((c) => c.via));
    assert.deepEqual(
      byKey(again.junctionLaneINFO, (r) => r.id),
      byKey(
        tables.junctionLaneINFO.filter((r) => through.has(r.id)),
        (r) => r.id,
      ),
    );
  });

  it('a SUMO net gives the rows LimSim would build from it (section 2.2)', () => {
    const text = readFileSync(fixture('limsim-networks', 'corridor', 'corridor.net.xml'), 'utf8');
    const rows = limSimTablesFromRoadNetwork(readSumoNet(text).network);
    const normalLanes = [...text.matchAll(/<lane id="([^":][^"]*)"/g)].length;
    assert.equal(rows.laneINFO.length, normalLanes);
    assert.equal(rows.junctionLaneINFO.length, [...text.matchAll(/<lane id=":/g)].length);
    assert.equal(rows.edgeINFO.length, [...text.matchAll(/<edge id="[^":]/g)].length);
    assert.equal(rows.junctionINFO.length, [...text.matchAll(/<junction id="[^":]/g)].length);
    // LimSim keeps only links between normal lanes.
    assert.equal(rows.connectionINFO.length, [...text.matchAll(/<connection from="[^":]/g)].length);
    const first = /<lane id="([^":][^"]*)"[^>]*shape="([^"]*)"/.exec(text)!;
    assert.deepEqual(points(rows.laneINFO.find((r) => r.id === first[1])!.rawShape), points(first[2]!));
  });
});
