/** The codec conformance suite (test/codec-conformance.ts) for every codec in the registry. */
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FORMATS, loadCodec } from '../src/formats/registry.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { runCodecConformance, type RunPrint } from './codec-conformance.js';
import { fixture, REPO_ROOT } from './helpers/paths.js';

const codec = async (name: string) => loadCodec(name);
const LIMSIM_DB = fixture('limsim-db', 'egoTrackingTest.db');
const PERCEPTION_MOCK = fixture('perception-simrun', 'Dataset');
const SOLO = join(REPO_ROOT, 'test', 'fixtures', 'pysolotools', 'solo');
const CARLA_LOG = join(REPO_ROOT, 'test', 'fixtures', 'scenario_runner', 'DistanceToLaneCenter.log');
const CARLA_LOG_2020 = join(
  REPO_ROOT,
  'test',
  'fixtures',
  'scenario_runner',
  '2020',
  'DistanceToLaneCenter.log',
);

/** A file cut short: what a copy interrupted mid-way leaves. */
function truncated(dir: string, file: string, name: string): string {
  const out = join(dir, name);
  const bytes = readFileSync(file);
  writeFileSync(out, bytes.subarray(0, Math.floor(bytes.length / 3)));
  return out;
}

/** A dataset folder with one of its JSON files damaged. */
function damaged(dir: string, from: string, name: string, file: string): string {
  const out = join(dir, name);
  cpSync(from, out, { recursive: true });
  writeFileSync(join(out, file), '{"captures": [ {"id": ');
  return out;
}

/** A recording made by simrec's own writer from a synthetic run, for formats without a real sample here. */
async function writtenBySimrec(
  store: StoreBackend,
  dir: string,
  format: string,
  name: string,
): Promise<string> {
  const run = await recordSyntheticRun(store, { duration: 2, rateHz: 10, vehicles: 2 });
  const out = join(dir, name);
  await exportRecording(store, format, [run.id], out, { overwrite: true });
  return out;
}

const perceptionRun = async (store: StoreBackend): Promise<number> =>
  (await importRecording(store, 'perception', PERCEPTION_MOCK)).runs[0]!.id;

describe('every codec is in the conformance suite', () => {
  it('lists each registered format below', () => {
    assert.deepEqual(Object.keys(FORMATS).sort(), [
      'carla',
      'coco',
      'didrive',
      'fcd',
      'limsim',
      'mcap',
      'osi',
      'parquet',
      'perception',
      'soda',
      'solo',
      'yolo',
    ]);
  });
});

runCodecConformance({
  codec: await codec('limsim'),
  fixtures: [{ name: "LimSim's egoTrackingTest.db", location: () => LIMSIM_DB }],
  broken: (dir) => truncated(dir, LIMSIM_DB, 'cut.db'),
});

runCodecConformance({
  codec: await codec('perception'),
  fixtures: [
    { name: "Perception's mock dataset", location: () => PERCEPTION_MOCK },
    {
      name: "datasetinsights' copy",
      location: () => fixture('perception-simrun', 'datasetinsights', 'Dataset'),
    },
  ],
  broken: (dir) => damaged(dir, PERCEPTION_MOCK, 'broken-perception', 'captures_000.json'),
  sourceRun: perceptionRun,
});

runCodecConformance({
  codec: await codec('solo'),
  fixtures: [{ name: "pysolotools' SOLO sample", location: () => SOLO }],
  broken: (dir) => damaged(dir, SOLO, 'broken-solo', 'metadata.json'),
  sourceRun: perceptionRun,
});

runCodecConformance({
  codec: await codec('soda'),
  // Velocities go through Unreal's frame (centimetres, left-handed) and back: the last bit may change.
  precision: 12,
  fixtures: [
    {
      name: 'a run written by simrec',
      location: (dir, store) => writtenBySimrec(store, dir, 'soda', 'soda-made'),
    },
  ],
  broken: (dir) => {
    const out = join(dir, 'broken-soda');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'datasets.json'), '{"_id": {"$numberLong": ');
    return out;
  },
});

runCodecConformance({
  codec: await codec('didrive'),
  fixtures: [
    {
      name: 'a run written by simrec',
      location: (dir, store) => writtenBySimrec(store, dir, 'didrive', 'didrive-made'),
    },
  ],
  broken: (dir) => {
    const out = join(dir, 'broken-didrive', 'episode_00000', 'measurements.lmdb');
    mkdirSync(out, { recursive: true });
    copyFileSync(LIMSIM_DB, join(out, 'data.mdb'));
    return join(dir, 'broken-didrive');
  },
});

runCodecConformance({
  codec: await codec('mcap'),
  fixtures: [
    {
      name: 'a run written by simrec',
      location: (dir, store) => writtenBySimrec(store, dir, 'mcap', 'made.mcap'),
    },
    {
      name: "asam-osi-converter's disappearingVehicle.mcap (an OSI SensorView trace by osi3test)",
      location: () => join(REPO_ROOT, 'test', 'fixtures', 'asam-osi-converter', 'disappearingVehicle.mcap'),
    },
    {
      name: "a Perception run's captures",
      location: async (dir, store) => {
        const out = join(dir, 'perception.mcap');
        await exportRecording(store, 'mcap', [await perceptionRun(store)], out, { overwrite: true });
        return out;
      },
    },
  ],
  broken: (dir) => truncated(dir, LIMSIM_DB, 'not.mcap'),
  sourceRun: perceptionRun,
});

runCodecConformance({
  codec: await codec('carla'),
  fixtures: [
    { name: "ScenarioRunner's DistanceToLaneCenter.log (CARLA 0.9.13)", location: () => CARLA_LOG },
    { name: 'its recording of 2020 (0.9.10 packets)', location: () => CARLA_LOG_2020 },
    {
      name: 'a run written by simrec',
      location: (dir, store) => writtenBySimrec(store, dir, 'carla', 'made.log'),
    },
  ],
  broken: (dir) => truncated(dir, CARLA_LOG, 'cut.log'),
  sourceRun: async (store) => (await recordSyntheticRun(store, { duration: 2, rateHz: 10, vehicles: 2 })).id,
});

/** SUMO's own FCD output of its grid6 game (2 minutes at 0.5 s steps), made once by the installed sumo. */
function sumoFcd(dir: string): string {
  const out = join(dir, 'grid6.fcd.xml');
  if (!existsSync(out)) {
    const game = '/usr/share/sumo/tools/game/grid6';
    execFileSync(
      'sumo',
      [
        ...['-n', `${game}/grid6.net.xml`, '-r', `${game}/grid6.rou.xml`, '--end', '120'],
        ...['--step-length', '0.5', '--fcd-output', out, '--no-step-log', 'true', '--no-warnings', 'true'],
      ],
      { env: { ...process.env, SUMO_HOME: '/usr/share/sumo' }, stdio: 'pipe' },
    );
  }
  return out;
}

runCodecConformance({
  codec: await codec('fcd'),
  fixtures: [
    { name: "SUMO's FCD output of its grid6 game", location: (dir) => sumoFcd(dir) },
    {
      name: 'the same, gzip-compressed',
      location: (dir) => {
        const out = `${sumoFcd(dir)}.gz`;
        writeFileSync(out, gzipSync(readFileSync(sumoFcd(dir))));
        return out;
      },
    },
    {
      name: 'a run written by simrec',
      location: (dir, store) => writtenBySimrec(store, dir, 'fcd', 'made.fcd.xml'),
    },
  ],
  broken: (dir) => {
    const packed = gzipSync(readFileSync(sumoFcd(dir)));
    const out = join(dir, 'cut.fcd.xml.gz');
    writeFileSync(out, packed.subarray(0, packed.length >> 1));
    return out;
  },
  sourceRun: async (store) => (await recordSyntheticRun(store, { duration: 2, rateHz: 10, vehicles: 2 })).id,
});

runCodecConformance({
  codec: await codec('osi'),
  fixtures: [
    {
      name: "a run's OSI ground truth written by simrec",
      location: (dir, store) => writtenBySimrec(store, dir, 'osi', 'made.osi'),
    },
  ],
  broken: (dir) => truncated(dir, LIMSIM_DB, 'not.osi'),
  sourceRun: async (store) => (await recordSyntheticRun(store, { duration: 2, rateHz: 10, vehicles: 2 })).id,
});

for (const name of ['coco', 'yolo'])
  runCodecConformance({ codec: await codec(name), fixtures: [], sourceRun: perceptionRun });

// Parquet is written only (simrec does not import it): the write tests run on a synthetic run here,
// and test/parquet.test.ts reads what it writes with DuckDB.
runCodecConformance({
  codec: await codec('parquet'),
  fixtures: [],
  sourceRun: async (store) => (await recordSyntheticRun(store, { duration: 2, rateHz: 10, vehicles: 2 })).id,
});

export type { RunPrint };
