/**
 * The tables folder (#49): every run's streams written once as a Hive-partitioned Parquet dataset
 * beside the store, kept in step with it, and `simrec sql` over it. What is checked: no stale answer
 * after `eval`, a new run, a deleted run, an import rolled back, a repaired store; a run still
 * recording is in the answer; only runs that changed are written again; plain DuckDB reads the
 * folder as one table each; the query cannot read or write anything else, and stops at its time
 * limit. The same tests run on MongoDB when SIMREC_MONGO_URL names a server.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SimrecError } from '../src/model/errors.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { withImportTarget } from '../src/record/import-run.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { openStore } from '../src/store/open-store.js';
import { FleetSql, queryFleet } from '../src/tables/fleet-sql.js';
import { keepTablesInStep } from '../src/tables/keep-tables.js';
import { TablesFolder, tablesFolderFor } from '../src/tables/tables-folder.js';
import { checkTables } from '../src/tables/tables-status.js';
import { loadDuckDB } from '../src/formats/parquet/duckdb-sql.js';
import { tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';
import { freshMongoDatabase, skipWithoutMongo } from './mongodb-test-url.js';

type Row = Record<string, unknown>;

/** Every row of a query, as objects by column name. */
async function ask(
  store: StoreBackend,
  folder: TablesFolder,
  sql: string,
  extra: Partial<Parameters<typeof queryFleet>[2]> = {},
): Promise<Row[]> {
  return queryFleet(store, folder, { sql, ...extra }, async (result) => {
    const rows: Row[] = [];
    for await (const chunk of result.chunks)
      for (const row of chunk) rows.push(Object.fromEntries(result.columns.map((c, i) => [c.name, row[i]])));
    return rows;
  });
}

/** A closed run of `n` samples of one car, x = i. */
async function carRun(store: StoreBackend, n: number, begin = 1_000_000): Promise<number> {
  const rec = await RunRecorder.begin(store, { begin, simulator: { name: 'test' } });
  await rec.declareActors([{ id: 'car', kind: 'vehicle' }]);
  await rec.declareStreams([stateStream('car')]);
  await rec.appendMany([
    {
      stream: 'car/state',
      samples: Array.from({ length: n }, (_, i) => ({ t: begin + i * 100_000, step: i, x: i, y: 0, yaw: 0 })),
    },
  ]);
  return (await rec.end('completed')).id;
}

const countsByRun = async (store: StoreBackend, folder: TablesFolder): Promise<Row[]> =>
  ask(store, folder, 'SELECT run, count(*) AS n FROM state GROUP BY run ORDER BY run');

function fleetSuite(name: string, freshLocation: () => string, local: boolean): void {
  describe(`tables kept in step with the store: ${name}`, () => {
    const dir = tempDir('simrec-fleet-');
    let store: StoreBackend;
    let folder: TablesFolder;
    let location: string;
    before(async () => {
      location = freshLocation();
      store = await openStore(location);
      folder = new TablesFolder(join(dir.path, 'tables'));
    });
    after(async () => {
      await store.close();
      dir.cleanup();
    });

    it('writes each closed run once, and again only when it changed', async () => {
      const a = await carRun(store, 50);
      const b = await carRun(store, 70);
      assert.deepEqual(await countsByRun(store, folder), [
        { run: a, n: 50 },
        { run: b, n: 70 },
      ]);
      const again = await keepTablesInStep(store, folder);
      assert.deepEqual(again.written, [], 'nothing changed: nothing written');
      assert.deepEqual(again.current, [a, b]);
      // A new run: only it is written, and it is in the next answer.
      const c = await carRun(store, 30);
      const step = await keepTablesInStep(store, folder);
      assert.deepEqual(step.written, [c]);
      assert.deepEqual(
        (await countsByRun(store, folder)).map((r) => r.run),
        [a, b, c],
      );
      // Laid out as a Hive-partitioned dataset, with a manifest per run.
      assert.ok(existsSync(join(folder.path, 'state', `run=${a}`, 'part-0.parquet')));
      assert.ok(existsSync(join(folder.path, '_simrec', 'runs', `${a}.json`)));
    });

    it('runs whose streams of one name declare other fields are read as one table, by column name', async () => {
      const rec = await RunRecorder.begin(store, { begin: 7_000_000 });
      await rec.declareActors([{ id: 'bike', kind: 'cyclist' }]);
      await rec.declareStreams([
        {
          name: 'state',
          actor: 'bike',
          fields: [
            { name: 'x', type: 'f64' },
            { name: 'gear', type: 'string' },
          ],
        },
      ]);
      await rec.appendMany([
        { stream: 'bike/state', samples: [{ t: 7_000_000, step: 0, x: 5, gear: 'low' }] },
      ]);
      const odd = (await rec.end('completed')).id;
      const rows = await ask(
        store,
        folder,
        `SELECT run, count(*) AS n, count(gear) AS geared, count(yaw) AS yawed FROM state GROUP BY run ORDER BY run`,
      );
      const mine = rows.find((r) => r.run === odd)!;
      assert.deepEqual(mine, { run: odd, n: 1, geared: 1, yawed: 0 });
      assert.ok(rows.filter((r) => r.run !== odd).every((r) => r.geared === 0 && (r.yawed as number) > 0));
      await store.deleteRun(odd);
    });

    it('a deleted run leaves the answer and the folder', async () => {
      const runs = (await countsByRun(store, folder)).map((r) => r.run as number);
      const gone = runs[0]!;
      await store.deleteRun(gone);
      const after = (await countsByRun(store, folder)).map((r) => r.run);
      assert.deepEqual(after, runs.slice(1));
      assert.ok(!existsSync(join(folder.path, 'state', `run=${gone}`)));
      assert.equal(folder.manifest(gone), undefined);
    });

    it('an import rolled back after a query read its run leaves no trace in the answer', async () => {
      let seen: Row[] = [];
      let imported = -1;
      await assert.rejects(
        withImportTarget(store, {}, async (into) => {
          const sink = await into.beginRun({ begin: 5_000_000, simulator: { name: 'import' } });
          imported = sink.run.id;
          await sink.declareActors([{ id: 'car', kind: 'vehicle' }]);
          await sink.declareStreams([stateStream('car')]);
          await sink.appendMany([
            { stream: 'car/state', samples: [{ t: 5_000_000, step: 0, x: 1, y: 2, yaw: 0 }] },
          ]);
          await sink.end('completed');
          // A query while the import is still going: the closed run is written to the folder...
          seen = await ask(store, folder, `SELECT count(*) AS n FROM state WHERE run = ${imported}`);
          // ...then the import fails and removes the run.
          throw new Error('the source file is cut short');
        }),
        /cut short/,
      );
      assert.deepEqual(seen, [{ n: 1 }]);
      const rows = await countsByRun(store, folder);
      assert.ok(!rows.some((r) => r.run === imported), JSON.stringify(rows));
      assert.ok(!existsSync(join(folder.path, 'state', `run=${imported}`)));
    });

    it('a derived stream written after the tables (simrec eval) is in the next answer', async () => {
      const demo = await recordDemoRun(store, { duration: 15, seed: 3, vehicles: 10 });
      const run = demo.run.id;
      const before = await ask(store, folder, `SELECT count(*) AS n FROM state WHERE run = ${run}`);
      assert.ok((before[0]!.n as number) > 0);
      await assert.rejects(
        ask(store, folder, `SELECT count(*) AS n FROM evaluation WHERE run = ${run}`),
        /evaluation/,
        'no evaluation yet: no such table',
      );
      await evaluateRun(store, run);
      const evaluated = await ask(store, folder, `SELECT count(*) AS n FROM evaluation WHERE run = ${run}`);
      const stream = (await store.listStreams(run)).find((s) => s.name === 'evaluation')!;
      assert.equal(evaluated[0]!.n, stream.samples);
      // Evaluated again with other settings: the same streams replaced, their contents changed.
      await evaluateRun(store, run, { hardBraking: 100 });
      const strictBefore = await ask(
        store,
        folder,
        `SELECT count(*) AS n FROM events WHERE run = ${run} AND kind = 'hard_braking'`,
      );
      await evaluateRun(store, run, { hardBraking: 0.05 });
      const events = (await store.listStreams(run)).find((s) => s.name === 'events')!;
      const all = await ask(store, folder, `SELECT count(*) AS n FROM events WHERE run = ${run}`);
      assert.equal(all[0]!.n, events.samples);
      const strictAfter = await ask(
        store,
        folder,
        `SELECT count(*) AS n FROM events WHERE run = ${run} AND kind = 'hard_braking'`,
      );
      assert.ok(
        (strictAfter[0]!.n as number) > (strictBefore[0]!.n as number),
        `a lower threshold finds more hard braking: ${JSON.stringify([strictBefore, strictAfter])}`,
      );
    });

    it('an evaluation writes its own tables again and keeps the files of the others', async () => {
      const run = (await recordDemoRun(store, { duration: 10, seed: 5, vehicles: 5 })).run.id;
      await keepTablesInStep(store, folder, [run]);
      // A file written again is a new one renamed into place: another inode.
      const file = (table: string): string => folder.partFile(table, run);
      const identity = (table: string): string => {
        const s = statSync(file(table), { bigint: true });
        return `${s.ino}:${s.mtimeNs}`;
      };
      const state = identity('state');
      const control = identity('control');
      await evaluateRun(store, run, { hardBraking: 100 });
      assert.deepEqual((await keepTablesInStep(store, folder, [run])).written, [run]);
      assert.equal(identity('state'), state, 'the states did not change: their file stays');
      const evaluation = identity('evaluation');
      const events = identity('events');
      const manifest = folder.manifest(run)!;
      for (const table of ['state', 'control', 'evaluation', 'events'])
        assert.equal(typeof manifest.sources![table], 'string', `the sources of ${table} kept`);
      assert.equal(identity('control'), control);

      // Evaluated again with other settings: the same streams, as many samples, other chunks.
      await evaluateRun(store, run, { hardBraking: 0.05 });
      await keepTablesInStep(store, folder, [run]);
      assert.equal(identity('state'), state);
      assert.notEqual(identity('evaluation'), evaluation, 'the evaluation is written again');
      assert.notEqual(identity('events'), events);
      const stream = (await store.listStreams(run)).find((s) => s.name === 'events')!;
      const rows = await ask(store, folder, `SELECT count(*) AS n FROM events WHERE run = ${run}`);
      assert.equal(rows[0]!.n, stream.samples);
      const actors = await ask(store, folder, `SELECT count(*) AS n FROM actors WHERE run = ${run}`);
      assert.equal(actors[0]!.n, (await store.listActors(run)).length, "the run's own tables are there");

      // A manifest from before sources were kept: the run is written whole.
      const { sources: _sources, ...older } = folder.manifest(run)!;
      writeFileSync(join(folder.path, '_simrec', 'runs', `${run}.json`), JSON.stringify(older));
      await evaluateRun(store, run, { hardBraking: 100 });
      await keepTablesInStep(store, folder, [run]);
      assert.notEqual(identity('state'), state, 'no sources to compare: every table written');
    });

    it('a session kept between questions (as the server keeps one) sees a run rewritten under it at once', async () => {
      const fleet = new FleetSql(store, folder);
      try {
        const run = await carRun(store, 40, 3_000_000);
        const ask = async (): Promise<unknown> =>
          fleet.query(
            { sql: `SELECT count(*) AS n, max(x) AS x FROM state WHERE run = ${run}` },
            async (r) => {
              for await (const rows of r.chunks) return rows[0];
              return null;
            },
          );
        assert.deepEqual(await ask(), [40, 39]);
        // Presence put after the end changes the run's version: its files are written again, under the
        // same names, within the second DuckDB read their footers; the next answer must not be stale.
        await store.putPresence(run, [{ actor: 'car', intervals: [{ from: 3_000_000, to: 4_000_000 }] }]);
        await store.putDerivedStream(
          run,
          {
            id: 'car/state',
            name: 'state',
            actor: 'car',
            fields: [{ name: 'x', type: 'f64' }],
            metadata: {},
          },
          Array.from({ length: 25 }, (_, i) => ({ t: 3_000_000 + i * 100_000, step: i, x: 100 + i })),
        );
        assert.deepEqual(await ask(), [25, 124]);
      } finally {
        await fleet.close();
      }
    });

    it('a run still recording is answered from the store, up to its last commit', async () => {
      const rec = await RunRecorder.begin(store, { begin: 9_000_000, simulator: { name: 'live' } });
      await rec.declareActors([{ id: 'car', kind: 'vehicle' }]);
      await rec.declareStreams([stateStream('car')]);
      const append = (from: number, n: number) =>
        rec.appendMany([
          {
            stream: 'car/state',
            samples: Array.from({ length: n }, (_, i) => ({
              t: 9_000_000 + (from + i) * 1000,
              step: from + i,
              x: from + i,
              y: 0,
              yaw: 0,
            })),
          },
        ]);
      await append(0, 10);
      const live = rec.run.id;
      const first = await ask(
        store,
        folder,
        `SELECT count(*) AS n, max(x) AS x FROM state WHERE run = ${live}`,
      );
      assert.deepEqual(first, [{ n: 10, x: 9 }]);
      await append(10, 5);
      const second = await ask(
        store,
        folder,
        `SELECT count(*) AS n, max(x) AS x FROM state WHERE run = ${live}`,
      );
      assert.deepEqual(second, [{ n: 15, x: 14 }]);
      // Not kept: a recording run changes at every commit.
      assert.equal(folder.manifest(live), undefined);
      assert.ok(!existsSync(join(folder.path, 'state', `run=${live}`)));
      assert.deepEqual(
        readdirSync(join(folder.path, '_simrec', 'live')),
        [],
        'its files removed after the query',
      );
      await rec.end('completed');
      const closed = await ask(store, folder, `SELECT count(*) AS n FROM state WHERE run = ${live}`);
      assert.deepEqual(closed, [{ n: 15 }]);
      assert.ok(folder.manifest(live));
    });

    it('--runs keeps to the runs named; a run that does not exist is an error', async () => {
      const runs = (await countsByRun(store, folder)).map((r) => r.run as number);
      const one = await ask(store, folder, 'SELECT DISTINCT run FROM state', { runs: [runs[0]!] });
      assert.deepEqual(one, [{ run: runs[0] }]);
      await assert.rejects(ask(store, folder, 'SELECT 1', { runs: [99_999] }), /run 99999 not found/);
    });

    if (local)
      it('a store repaired by check --repair: the run is written again without the chunk removed', async () => {
        const run = await carRun(store, 5000);
        const [before] = await ask(store, folder, `SELECT count(*) AS n FROM state WHERE run = ${run}`);
        assert.deepEqual(before, { n: 5000 });
        const db = new Database(location);
        const chunk = db
          .prepare(
            'SELECT c.id, c.count FROM chunks c JOIN streams s ON s.key = c.stream_key WHERE s.run_id = ? ORDER BY c.begin_us LIMIT 1',
          )
          .get(run) as { id: number; count: number };
        assert.ok(chunk.count < 5000, 'the run is kept in several chunks');
        db.prepare('UPDATE chunks SET data = ? WHERE id = ?').run(Buffer.from('garbage'), chunk.id);
        db.close();
        const report = await store.checkIntegrity({ repair: true });
        assert.ok(report.problems.some((p) => p.repaired));
        // check finds the tables written from the run as it was, and --repair writes them again.
        const found = await checkTables(store, folder);
        assert.ok(
          found.some((p) => /older version/.test(p.problem)),
          JSON.stringify(found),
        );
        const [after] = await ask(store, folder, `SELECT count(*) AS n FROM state WHERE run = ${run}`);
        assert.deepEqual(after, { n: 5000 - chunk.count });
        assert.deepEqual(await checkTables(store, folder), []);
      });
  });
}

fleetSuite('sqlite', () => join(tempDir('simrec-fleet-store-').path, 'runs.db'), true);
const mongoSkip = skipWithoutMongo('the tables-in-step tests on MongoDB');
if (!mongoSkip) fleetSuite('mongodb', () => freshMongoDatabase('simrec_fleet'), false);
else
  describe('tables kept in step with the store: mongodb', () => {
    it('runs every tables-in-step test against a real MongoDB server', { skip: mongoSkip }, () => {});
  });

describe('the tables folder as users read it', () => {
  const dir = tempDir('simrec-fleet-cli-');
  const storePath = join(dir.path, 'suite.db');
  const simrec = (...args: string[]) => runCli(['--store', storePath, ...args]);
  const runs: number[] = [];
  before(() => {
    for (const seed of [11, 12])
      runs.push(
        cliJson<{ run: { id: number } }>([
          '--store',
          storePath,
          'demo',
          '--no-serve',
          '--duration',
          '10',
          '--seed',
          String(seed),
          '--json',
        ]).run.id,
      );
  });
  after(() => dir.cleanup());

  it('lies beside the store, named after it; a server store gets a folder of the cache', () => {
    assert.equal(tablesFolderFor('/data/suite.db'), '/data/suite.tables');
    assert.match(
      tablesFolderFor('mongodb://user:pw@db.example:27017/fleet'),
      /simrec\/tables\/db\.example-27017-fleet$/,
    );
    assert.equal(tablesFolderFor('/data/suite.db', '/elsewhere/t'), '/elsewhere/t');
  });

  it('is written when a run ends, and plain DuckDB reads each table as one with run from the folder', async () => {
    const folder = join(dir.path, 'suite.tables');
    for (const run of runs) assert.ok(existsSync(join(folder, 'state', `run=${run}`, 'part-0.parquet')));
    const duckdb = await loadDuckDB();
    const instance = await duckdb.DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const read = await connection.runAndReadAll(
      `SELECT run, count(*) AS n FROM read_parquet('${folder}/state/*/*.parquet', hive_partitioning = true) GROUP BY run ORDER BY run`,
    );
    const direct = read.getRowObjectsJson();
    connection.closeSync();
    instance.closeSync();
    const ours = cliJson<{ run: number; n: number }[]>([
      '--store',
      storePath,
      'sql',
      'SELECT run, count(*) AS n FROM state GROUP BY run ORDER BY run',
      '--json',
    ]);
    assert.deepEqual(
      direct.map((r) => ({ run: Number(r.run), n: Number(r.n) })),
      ours,
    );
  });

  it('simrec tables says where the folder is, its size and each run; build and rebuild', () => {
    const status = cliJson<{
      folder: string;
      bytes: number;
      storeBytes: number;
      runs: { run: number; state: string }[];
    }>(['--store', storePath, 'tables', '--json']);
    assert.equal(status.folder, join(dir.path, 'suite.tables'));
    assert.ok(status.bytes > 0 && status.storeBytes > 0);
    assert.deepEqual(
      status.runs.map((r) => [r.run, r.state]),
      runs.map((r) => [r, 'current']),
    );
    const rebuilt = cliJson<{ written: number[] }>(['--store', storePath, 'tables', 'rebuild', '--json']);
    assert.deepEqual(rebuilt.written, runs);
    const built = cliJson<{ written: number[]; current: number[] }>([
      '--store',
      storePath,
      'tables',
      'build',
      '--json',
    ]);
    assert.deepEqual(built, { ...built, written: [], current: runs });
    const text = simrec('tables');
    assert.equal(text.status, 0, text.stderr);
    assert.match(
      text.stdout,
      /suite\.tables\n[\d.]+ MiB of tables \(\d+% of the store's\); the store: [\d.]+ MiB\n/,
    );
  });

  it('simrec check reports files of a run the store lacks and a file cut short; --repair mends', () => {
    const folder = join(dir.path, 'suite.tables');
    writeFileSync(join(folder, 'state', `run=${runs[0]}`, 'part-0.parquet'), 'cut');
    const found = simrec('check', '--json');
    assert.equal(found.status, 1);
    const report = JSON.parse(found.stdout) as { problems: { where: string; problem: string }[] };
    assert.ok(
      report.problems.some(
        (p) => p.where.endsWith(`state/run=${runs[0]}/part-0.parquet`) && /3 bytes, expected/.test(p.problem),
      ),
      found.stdout,
    );
    const repaired = simrec('check', '--repair');
    assert.equal(repaired.status, 0, repaired.stdout + repaired.stderr);
    assert.equal(simrec('check').status, 0);
    assert.equal(
      cliJson<{ n: number }[]>([
        '--store',
        storePath,
        'sql',
        `SELECT count(*) AS n FROM state WHERE run = ${runs[0]}`,
        '--json',
      ])[0]!.n > 0,
      true,
    );
  });

  it("simrec rm deletes a run and its tables, and gives the run's room back", () => {
    const bytes = (): number => statSync(storePath).size;
    const before = bytes();
    const run = cliJson<{ run: { id: number } }>([
      '--store',
      storePath,
      'demo',
      '--no-serve',
      '--duration',
      '5',
      '--json',
    ]).run.id;
    assert.ok(existsSync(join(dir.path, 'suite.tables', 'state', `run=${run}`)));
    const withRun = bytes();
    assert.ok(withRun > before + 16 * 4096, `the run took room: ${before} -> ${withRun} bytes`);
    assert.equal(simrec('rm', String(run)).status, 0);
    assert.ok(!existsSync(join(dir.path, 'suite.tables', 'state', `run=${run}`)));
    // The file as small as before the run, a few pages aside (the run's id kept, pages of indexes).
    assert.ok(bytes() <= before + 4 * 4096, `${before} -> ${withRun} -> ${bytes()} bytes`);
    assert.equal(simrec('info', String(run)).status, 2);
    const typo = simrec('rm', `${runs[0]},99999`);
    assert.equal(typo.status, 2);
    assert.match(typo.stderr, /run 99999 not found/);
    assert.equal(simrec('info', String(runs[0])).status, 0, 'a typo in the list deletes nothing');
  });
});

describe('SQL over the tables is read-only and bounded', () => {
  const dir = tempDir('simrec-fleet-sec-');
  let store: StoreBackend;
  let folder: TablesFolder;
  before(async () => {
    store = await openStore(join(dir.path, 'runs.db'));
    folder = new TablesFolder(join(dir.path, 'runs.tables'));
    await carRun(store, 10);
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  const refused: [string, RegExp][] = [
    ["SELECT * FROM read_csv('/etc/passwd')", /Cannot access file "\/etc\/passwd"/],
    ["SELECT * FROM read_text('../../../../etc/passwd')", /Cannot access file/],
    ["SELECT * FROM glob('/*')", /Cannot access file/],
    ["COPY (SELECT 1) TO 'TABLES/state/out.csv'", /a COPY statement: expected a query that reads/],
    ['CREATE TABLE t AS SELECT 1', /a CREATE statement/],
    ['INSTALL httpfs', /INSTALL|LOAD/],
    ['LOAD httpfs', /LOAD/],
    ["ATTACH 'TABLES/x.db'", /an? ATTACH statement/],
    ['SET enable_external_access = true', /SET|VARIABLE_SET/],
    ['SELECT 1; SELECT 2', /expected one statement, got 2/],
    ["SELECT * FROM state; COPY (SELECT 1) TO 'TABLES/x.csv'", /expected one statement, got 2/],
  ];
  for (const [sql, message] of refused)
    it(`refuses ${sql.split('(')[0]!.slice(0, 40)}`, async () => {
      const text = sql.replaceAll('TABLES', folder.path);
      await assert.rejects(ask(store, folder, text), (e: unknown) => {
        assert.ok(e instanceof SimrecError, String(e));
        assert.equal(e.code, 'invalid');
        assert.match(e.message, message);
        return true;
      });
      assert.ok(!existsSync(join(folder.path, 'state', 'out.csv')));
      assert.ok(!existsSync(join(folder.path, 'x.db')));
      assert.ok(!existsSync(join(folder.path, 'x.csv')));
      // The query after it still answers.
      assert.deepEqual(await ask(store, folder, 'SELECT count(*) AS n FROM state'), [{ n: 10 }]);
    });

  it('stops a query past its time limit, saying so', async () => {
    const started = Date.now();
    await assert.rejects(
      ask(store, folder, 'SELECT sum(a.range * b.range) FROM range(200000) a, range(200000) b', {
        timeoutMs: 300,
      }),
      /stopped after 300 ms, the time limit/,
    );
    assert.ok(Date.now() - started < 10_000, 'interrupted, not run to its end');
  });
});

describe('staging folders of writers that died', () => {
  it('are swept, and one gone between the listing and its look is passed by', () => {
    const dir = tempDir('simrec-fleet-sweep-');
    try {
      const folder = new TablesFolder(join(dir.path, 'sweep.tables'));
      const staging = join(folder.path, '_simrec', 'staging');
      mkdirSync(staging, { recursive: true });
      // A writer of a process that is no more (pid 0 is never one), and one gone while the folder is
      // looked through: a name listed whose look finds nothing, as a dangling link does.
      mkdirSync(join(staging, '0-dead'));
      symlinkSync(join(dir.path, 'nothing-there'), join(staging, `${process.pid}-gone`));
      const mine = folder.staging();
      folder.sweepStaging();
      assert.deepEqual(readdirSync(staging).sort(), [`${process.pid}-gone`, basename(mine)].sort());
    } finally {
      dir.cleanup();
    }
  });
});

describe("the tables folder's manifests, read once while the folder stands still", () => {
  const dir = tempDir('simrec-fleet-manifests-');
  let store: StoreBackend;
  before(async () => {
    store = await openStore(join(dir.path, 'm.db'));
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  it('are read again whenever another writer (another process) changed the folder', async () => {
    const path = join(dir.path, 'm.tables');
    const server = new TablesFolder(path);
    const cli = new TablesFolder(path); // what a `simrec` command beside a server holds
    const a = await carRun(store, 10);
    const c = await carRun(store, 30);
    await keepTablesInStep(store, cli);
    // Changed a moment ago: not trusted yet (the clock may not have ticked since), read at each look.
    assert.notEqual(server.manifests(), server.manifests());
    // Settled: one reading serves every later look.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const settled = server.manifests();
    assert.equal(server.manifests(), settled, 'the same reading, no file read again');
    assert.deepEqual([...settled.keys()], [a, c]);
    const before = settled.get(a)!.version;

    // Another writer adds a run, rewrites one, removes one: all seen at the next look.
    const b = await carRun(store, 20);
    await evaluateRun(store, a, { actor: 'car' });
    await store.deleteRun(c);
    await keepTablesInStep(store, cli);
    assert.deepEqual(server.runs(), [a, b]);
    assert.notEqual(server.manifest(a)!.version, before, 'the run rewritten after eval');
    assert.deepEqual(await countsByRun(store, server), [
      { run: a, n: 10 },
      { run: b, n: 20 },
    ]);
  });
});
