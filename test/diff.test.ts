/**
 * `simrec diff` (#50): two runs compared on real data. LimSim's sample database imported twice is the
 * same; a copy with one vehicle moved from a known frame on differs first at that vehicle, frame time
 * and field, by that amount; a live SUMO run recorded twice is the same and another seed differs; an
 * event in one run only, an actor that leaves earlier, NaN in a JSON field on both sides; thresholds
 * that pass and fail as written, and a JUnit report read by junitparser, as CI systems read it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { diffRuns } from '../src/compare/run-diff.js';
import type { RunDiff } from '../src/compare/diff-types.js';
import { recordSumo } from '../src/ingest/traci/sumo-recorder.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { importRecording } from '../src/record/import-run.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { openStore } from '../src/store/open-store.js';
import { LIMSIM_FIXTURE } from './helpers/limsim-files.js';
import { fixture, tempDir } from './helpers/paths.js';
import { runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-diff-');
const storePath = join(dir.path, 'diff.db');
let store: StoreBackend;
before(async () => {
  store = await openStore(storePath);
});
after(async () => {
  await store.close();
  dir.cleanup();
});

const importLimSim = async (file: string): Promise<number> =>
  (await importRecording(store, 'limsim', file)).runs[0]!.id;

/** `simrec diff` as a user runs it, on the test's store (closed first: one writer at a time). */
function cliDiff(...args: string[]): {
  status: number | null;
  json: RunDiff & { gate?: unknown };
  stderr: string;
} {
  const r = runCli(['--store', storePath, 'diff', ...args, '--json']);
  return {
    status: r.status,
    json: r.stdout ? (JSON.parse(r.stdout) as RunDiff) : ({} as RunDiff),
    stderr: r.stderr,
  };
}

describe("LimSim's sample database", () => {
  let first: number;
  let again: number;
  let moved: number;
  const FRAME = 710;
  const VEHICLE = '41';
  const SHIFT = 1.5;

  before(async () => {
    first = await importLimSim(LIMSIM_FIXTURE);
    again = await importLimSim(LIMSIM_FIXTURE);
    // A copy with one vehicle moved 1.5 m along x from a known frame on, edited as a user would.
    const copy = join(dir.path, 'moved.db');
    copyFileSync(LIMSIM_FIXTURE, copy);
    const db = new Database(copy);
    const changed = db
      .prepare('UPDATE frameINFO SET x = x + ? WHERE vid = ? AND frame >= ?')
      .run(SHIFT, VEHICLE, FRAME);
    db.close();
    assert.ok(changed.changes > 5, `${changed.changes} rows moved`);
    moved = await importLimSim(copy);
  });

  it('imported twice is the same, and the command says so with exit 0', async () => {
    const diff = await diffRuns(store, first, again);
    assert.equal(diff.same, true, JSON.stringify(diff.firstDivergence));
    assert.equal(diff.firstDivergence, null);
    assert.ok(diff.streams.compared > 5);
    const cli = cliDiff(String(first), String(again));
    assert.equal(cli.status, 0, cli.stderr);
    assert.equal(cli.json.same, true);
  });

  it('a vehicle moved from a frame on differs first there: vehicle, frame time, field and amount', async () => {
    const run = (await store.getRun(first))!;
    const cli = cliDiff(String(first), String(moved));
    assert.equal(cli.status, 1, cli.stderr);
    const d = cli.json.firstDivergence!;
    assert.equal(d.actor, VEHICLE);
    assert.equal(d.stream, `${VEHICLE}/state`);
    assert.equal(d.field, 'x');
    // LimSim's frame f is at the run's begin + f x 0.1 s.
    assert.equal(d.t, run.begin + FRAME * 100_000);
    assert.ok(Math.abs((d.b as number) - (d.a as number) - SHIFT) < 1e-9, `${String(d.a)} -> ${String(d.b)}`);
    assert.ok(Math.abs(d.difference! - SHIFT) < 1e-9);
    assert.deepEqual(Object.keys(cli.json.firstByActor), [VEHICLE], 'no other vehicle differs');
    const largest = cli.json.largest.find((l) => l.stream === 'state' && l.field === 'x')!;
    assert.ok(Math.abs(largest.difference - SHIFT) < 1e-9);
    assert.equal(
      cli.json.viewerPath,
      `#/diff/${first}/${moved}?at=${run.begin + FRAME * 100_000}&actor=${VEHICLE}`,
    );
    // Within a tolerance above the shift, the same.
    assert.equal((await diffRuns(store, first, moved, { tolerances: { x: 1.6 } })).same, true);
    // Only another actor, or a window before the frame: the same.
    assert.equal((await diffRuns(store, first, moved, { actors: ['67'] })).same, true);
    assert.equal((await diffRuns(store, first, moved, { to: FRAME * 0.1 - 0.05 })).same, true);
  });

  it('thresholds pass and fail as written, and the JUnit report reads in junitparser', () => {
    const pass = join(dir.path, 'pass.json');
    const fail = join(dir.path, 'fail.json');
    writeFileSync(pass, JSON.stringify({ tolerance: { 'state.x': 1.6 }, presence: true }));
    writeFileSync(fail, JSON.stringify({ tolerance: { 'state.x': 1.4 } }));
    const passed = runCli(['--store', storePath, 'diff', String(first), String(moved), '--thresholds', pass]);
    assert.equal(passed.status, 0, passed.stdout + passed.stderr);
    assert.match(passed.stdout, /thresholds: PASS/);
    const junit = join(dir.path, 'report.xml');
    const failed = runCli([
      '--store',
      storePath,
      'diff',
      String(first),
      String(moved),
      '--thresholds',
      fail,
      '--junit',
      junit,
    ]);
    assert.equal(failed.status, 1, failed.stderr);
    assert.match(failed.stdout, /thresholds: FAIL/);
    assert.match(failed.stdout, /fields state\.x: \d+ samples differ; first at 71\.000 s, 41: /);
    const parsed = JSON.parse(
      execFileSync(
        '/usr/bin/python3',
        [
          '-c',
          `import json, sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
cases = [{"suite": s.name, "name": c.name, "classname": c.classname,
          "failures": [r.message for r in c.result if isinstance(r, Failure)]} for s in xml for c in s]
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "cases": cases}))`,
          junit,
        ],
        { encoding: 'utf8' },
      ),
    ) as {
      tests: number;
      failures: number;
      cases: { name: string; classname: string; failures: string[] }[];
    };
    assert.equal(parsed.failures, 1);
    const x = parsed.cases.find((c) => c.name === 'state.x')!;
    assert.equal(x.classname, `simrec diff ${first} ${moved}.fields`);
    assert.match(x.failures[0]!, /samples differ; first at 71\.000 s/);
    assert.ok(parsed.cases.filter((c) => c.failures.length === 0).some((c) => c.name === 'state.y'));
    assert.ok(parsed.tests > 5);
  });

  it('refuses a bad thresholds file or a missing run with exit 2, naming what was wrong', () => {
    const bad = join(dir.path, 'bad.json');
    writeFileSync(bad, JSON.stringify({ metrics: { score: 'two' } }));
    const r = runCli(['--store', storePath, 'diff', String(first), String(moved), '--thresholds', bad]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^simrec: .*bad\.json: metrics\.score: expected a number 0 or more, got "two"\n$/);
    const missing = runCli(['--store', storePath, 'diff', String(first), '99999']);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /run 99999 not found/);
  });
});

describe('constructed differences', () => {
  /** A run of two cars from its own begin: `a` always there, `b` leaving at `leave` s. */
  async function twoCars(
    begin: number,
    leave: number,
    extra: (rec: RunRecorder) => Promise<void> = async () => {},
  ): Promise<number> {
    const rec = await RunRecorder.begin(store, { begin });
    await rec.declareActors([
      { id: 'a', kind: 'vehicle' },
      { id: 'b', kind: 'vehicle' },
    ]);
    await rec.declareStreams([
      stateStream('a'),
      stateStream('b'),
      {
        name: 'info',
        actor: 'a',
        fields: [
          { name: 'blob', type: 'json' },
          { name: 'gap', type: 'f64', optional: true },
        ],
      },
    ]);
    for (let i = 0; i < 50; i++) {
      const t = begin + i * 100_000;
      const appends = [
        { stream: 'a/state', samples: [{ t, step: i, x: i, y: 0, yaw: 0 }] },
        {
          stream: 'a/info',
          samples: [{ t, step: i, blob: { i, list: [i, null] }, ...(i % 5 === 0 ? {} : { gap: i }) }],
        },
      ];
      if (i * 0.1 < leave - 1e-9)
        appends.push({ stream: 'b/state', samples: [{ t, step: i, x: 100 - i, y: 3, yaw: 0 }] });
      await rec.appendMany(appends);
      if (Math.abs(i * 0.1 - leave) < 1e-9) await rec.leave('b', t);
    }
    await extra(rec);
    return (await rec.end('completed', { end: begin + 5_000_000 })).id;
  }

  const events = (list: { t: number; kind: string; actors: string[] }[]) => (rec: RunRecorder) =>
    store.putDerivedStream(
      rec.id,
      {
        id: 'events',
        name: 'events',
        actor: null,
        metadata: {},
        fields: [
          { name: 'kind', type: 'string' },
          { name: 'actors', type: 'json' },
          { name: 'detail', type: 'string' },
        ],
      },
      list.map((e, step) => ({ ...e, step, detail: e.kind })),
    );

  it('values absent on both sides (NaN in their columns) are no difference; runs begun at other times are matched from their starts', async () => {
    const x = await twoCars(10_000_000, 3);
    const y = await twoCars(99_000_000, 3);
    const diff = await diffRuns(store, x, y);
    assert.equal(diff.same, true, JSON.stringify(diff.firstDivergence));
  });

  it('a number column is compared as sameNumber says: -0 against 0, absent against absent, within a tolerance', async () => {
    const begin = 10_000_000;
    const record = async (values: (number | undefined)[]): Promise<number> => {
      const rec = await RunRecorder.begin(store, { begin });
      await rec.declareActors([{ id: 'a', kind: 'vehicle' }]);
      await rec.declareStreams([
        {
          name: 'probe',
          actor: 'a',
          fields: [
            { name: 'v', type: 'f64', optional: true },
            { name: 'never', type: 'f64', optional: true },
          ],
        },
      ]);
      for (const [i, v] of values.entries())
        await rec.appendMany([
          {
            stream: 'a/probe',
            samples: [{ t: begin + i * 100_000, step: i, ...(v === undefined ? {} : { v }) }],
          },
        ]);
      return (await rec.end('completed', { end: begin + values.length * 100_000 })).id;
    };
    const x = await record([1, 0, undefined, 5, 7]);
    const y = await record([1, -0, undefined, 5.25, 7]);
    const exact = await diffRuns(store, x, y);
    assert.deepEqual(
      exact.divergences.map((d) => [d.field, d.offset, d.a, d.b, d.count]),
      [['v', 0.1, 0, -0, 2]],
      'bit for bit: -0 is not 0; absent on both sides is no difference',
    );
    assert.deepEqual(exact.streams.fields, [
      { name: 'probe.never', differing: 0 },
      { name: 'probe.v', differing: 2 },
    ]);
    assert.deepEqual(
      exact.largest.map((l) => [l.field, l.difference, l.offset]),
      [['v', 0.25, 0.3]],
    );
    const within = await diffRuns(store, x, y, { tolerances: { v: 0.25 } });
    assert.equal(within.same, true, JSON.stringify(within.firstDivergence));
  });

  it('an actor that leaves earlier in one run: its presence and the samples it no longer has', async () => {
    const x = await twoCars(10_000_000, 3);
    const y = await twoCars(10_000_000, 2);
    const diff = await diffRuns(store, x, y);
    assert.equal(diff.same, false);
    assert.deepEqual(diff.actors.presence, [
      { actor: 'b', a: [{ from: 0, to: 3_000_000 }], b: [{ from: 0, to: 2_000_000 }] },
    ]);
    assert.deepEqual(diff.streams.samples, [{ stream: 'b/state', matched: 20, onlyA: 10, onlyB: 0 }]);
    assert.equal(diff.firstDivergence!.actor, 'b');
    assert.equal(diff.firstDivergence!.field, 't');
    assert.equal(diff.firstDivergence!.offset, 2);
  });

  it('an event in one run only, by kind, actors and time within a tolerance', async () => {
    const begin = 10_000_000;
    const x = await twoCars(
      begin,
      3,
      events([{ t: begin + 1_000_000, kind: 'near_miss', actors: ['a', 'b'] }]),
    );
    const y = await twoCars(
      begin,
      3,
      events([
        { t: begin + 1_200_000, kind: 'near_miss', actors: ['a', 'b'] },
        { t: begin + 2_500_000, kind: 'collision', actors: ['a', 'b'] },
      ]),
    );
    const diff = await diffRuns(store, x, y);
    assert.equal(diff.events.matched, 1, 'the near miss 0.2 s apart is the same event');
    assert.deepEqual(diff.events.onlyA, []);
    assert.deepEqual(
      diff.events.onlyB.map((e) => [e.kind, e.offset, e.actors]),
      [['collision', 2.5, ['a', 'b']]],
    );
    assert.equal(diff.same, false);
    const strict = await diffRuns(store, x, y, { eventSeconds: 0.1 });
    assert.equal(strict.events.matched, 0, 'beyond 0.1 s apart, not the same');
  });

  it('NaN in a JSON value on both sides is no difference; -0 and 0 differ bit for bit and are equal within any tolerance', async () => {
    const { sameNumber, sameValue } = await import('../src/compare/value-compare.js');
    assert.equal(sameNumber(-0, 0, undefined), false);
    assert.equal(sameNumber(-0, 0, 0), true);
    assert.equal(sameNumber(Number.NaN, Number.NaN, undefined), true);
    assert.equal(sameNumber(Number.NaN, 0, 1), false);
    assert.equal(sameNumber(0.1 + 0.2, 0.3, undefined), false);
    assert.equal(sameNumber(0.1 + 0.2, 0.3, 1e-12), true);
    assert.equal(
      sameValue({ a: [Number.NaN, { b: Number.NaN }] }, { a: [Number.NaN, { b: Number.NaN }] }, undefined),
      true,
    );
    assert.equal(sameValue({ a: 1, b: 2 }, { b: 2, a: 1 }, undefined), true);
    assert.equal(sameValue({ a: 1 }, { a: 1, b: undefined }, undefined), false);
  });
});

describe('a live SUMO run recorded twice', () => {
  const record = async (seed?: number): Promise<number> =>
    (
      await recordSumo(store, {
        net: fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'),
        routes: [fixture('limsim-networks', 'bigInter', 'bigInter.rou.xml')],
        stepLength: 0.1,
        duration: 30,
        ...(seed === undefined ? {} : { sumoArgs: ['--seed', String(seed)] }),
      })
    ).run.id;

  it('is the same for one seed (SUMO is deterministic), and differs with another --seed', async () => {
    const a = await record();
    const b = await record();
    const c = await record(7);
    const same = await diffRuns(store, a, b);
    assert.equal(same.same, true, JSON.stringify(same.firstDivergence));
    assert.ok(same.streams.compared > 10);
    const other = await diffRuns(store, a, c);
    assert.equal(other.same, false);
    const first = other.firstDivergence!;
    assert.equal(first.stream.endsWith('/state'), true, JSON.stringify(first));
    assert.ok(first.offset > 0);
  });
});
