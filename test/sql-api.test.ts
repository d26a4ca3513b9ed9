/**
 * GET /api/sql (#49): SQL across the store's runs from the server, as `simrec sql` answers it, for the
 * viewer's Find panel. Read-only (no file read or written but the tables, no extension, no ATTACH),
 * the API's token rule, a row limit, and a time limit past which the query is cancelled while the
 * server goes on answering.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import type { SqlAnswer } from '../src/server/wire-types.js';
import { openStore } from '../src/store/open-store.js';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { SimrecError } from '../src/model/errors.js';
import { keepTablesInStep } from '../src/tables/keep-tables.js';
import { TablesFolder } from '../src/tables/tables-folder.js';
import {
  cutRuns,
  keepTablesOnThreads,
  shareRuns,
  writerThreads,
} from '../src/tables/tables-writer-threads.js';
import { queryFleet } from '../src/tables/fleet-sql.js';
import { checkTables } from '../src/tables/tables-status.js';
import { loadDuckDB } from '../src/formats/parquet/duckdb-sql.js';
import { tempDir } from './helpers/paths.js';

const TOKEN = 'sql-token-123';

describe('GET /api/sql', () => {
  const dir = tempDir('simrec-sql-api-');
  let store: StoreBackend;
  let server: RunningServer;
  const runs: number[] = [];

  before(async () => {
    store = await openStore(join(dir.path, 'runs.db'));
    for (const n of [3000, 5000]) {
      const rec = await RunRecorder.begin(store, { begin: 1_000_000 });
      await rec.declareActors([{ id: 'car', kind: 'vehicle' }]);
      await rec.declareStreams([stateStream('car')]);
      await rec.appendMany([
        {
          stream: 'car/state',
          samples: Array.from({ length: n }, (_, i) => ({
            t: 1_000_000 + i * 10_000,
            step: i,
            x: i,
            y: 0,
            yaw: 0,
            speed: i / 100,
          })),
        },
      ]);
      runs.push((await rec.end('completed')).id);
    }
    server = await startServer({
      store,
      port: 0,
      apiToken: TOKEN,
      settingsFile: join(dir.path, 'settings.json'),
      tablesFolder: join(dir.path, 'tables'),
      sqlLimits: { timeoutMs: 400 },
    });
  });
  after(async () => {
    await server.close();
    await store.close();
    dir.cleanup();
  });

  const get = async (
    query: Record<string, string>,
    token: string | null = TOKEN,
  ): Promise<{ status: number; body: SqlAnswer & { error?: string } }> => {
    const url = new URL('api/sql', server.url);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const response = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    return { status: response.status, body: (await response.json()) as SqlAnswer & { error?: string } };
  };

  it('answers a query across runs, with column names and types', async () => {
    const { status, body } = await get({
      q: 'SELECT run, count(*) AS n, max(speed) AS top FROM state GROUP BY run ORDER BY run',
    });
    assert.equal(status, 200, JSON.stringify(body));
    assert.deepEqual(
      body.columns.map((c) => c.name),
      ['run', 'n', 'top'],
    );
    assert.deepEqual(body.rows, [
      [runs[0], 3000, 29.99],
      [runs[1], 5000, 49.99],
    ]);
    assert.equal(body.truncated, false);
    assert.ok(existsSync(join(dir.path, 'tables', 'state', `run=${runs[0]}`, 'part-0.parquet')));
  });

  it('needs the token', async () => {
    assert.equal((await get({ q: 'SELECT 1' }, null)).status, 401);
    assert.equal((await get({ q: 'SELECT 1' }, 'wrong')).status, 401);
  });

  it('stops at the row limit and says so', async () => {
    const { body } = await get({ q: 'SELECT x FROM state ORDER BY run, x', limit: '2500' });
    assert.equal(body.rows.length, 2500);
    assert.equal(body.truncated, true);
    assert.equal(body.limit, 2500);
    const exact = await get({ q: `SELECT x FROM state WHERE run = ${runs[0]}`, limit: '3000' });
    assert.equal(exact.body.rows.length, 3000);
    assert.equal(exact.body.truncated, false);
    const tooMany = await get({ q: 'SELECT 1', limit: '1000000' });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.body.error!, /limit: "1000000", expected 1 to 10000 rows/);
  });

  it('refuses reads and writes of other files, extensions and ATTACH', async () => {
    for (const [q, message] of [
      ["SELECT * FROM read_csv('/etc/passwd')", /Cannot access file "\/etc\/passwd"/],
      ["SELECT * FROM read_text('/proc/self/environ')", /Cannot access file/],
      [`COPY (SELECT 1) TO '${join(dir.path, 'tables', 'x.csv')}'`, /a COPY statement/],
      ['INSTALL httpfs', /INSTALL|LOAD/],
      ['LOAD httpfs', /LOAD/],
      [`ATTACH '${join(dir.path, 'tables', 'x.db')}'`, /ATTACH/],
      ['SELECT 1; SELECT 2', /expected one statement/],
    ] as const) {
      const { status, body } = await get({ q });
      assert.equal(status, 400, q);
      assert.match(body.error!, message, q);
    }
    assert.ok(!existsSync(join(dir.path, 'tables', 'x.csv')));
    assert.ok(!existsSync(join(dir.path, 'tables', 'x.db')));
  });

  it('cancels a query past the time limit, and the server answers throughout', async () => {
    const started = Date.now();
    const slow = get({ q: 'SELECT sum(a.range * b.range) FROM range(300000) a, range(300000) b' });
    // The health check answers while DuckDB works (its threads, not the server's).
    const health = await fetch(new URL('api/health', server.url), {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(health.status, 200);
    const { status, body } = await slow;
    assert.equal(status, 400);
    assert.match(body.error!, /stopped after 400 ms, the time limit/);
    assert.ok(Date.now() - started < 10_000);
    // The next query runs.
    assert.equal((await get({ q: 'SELECT 1 AS one' })).body.rows[0]![0], 1);
  });

  it('refuses an empty or a huge query by name', async () => {
    const empty = await get({ q: '' });
    assert.equal(empty.status, 400);
    assert.match(empty.body.error!, /query parameter q: expected SQL/);
    const huge = await get({ q: `SELECT 1${' '.repeat(11_000)}` });
    assert.equal(huge.status, 400);
    assert.match(huge.body.error!, /11008 characters, at most 10000/);
  });
});

describe("the server writes a run's tables when it ends, never while a run records", () => {
  const dir = tempDir('simrec-sql-keeper-');
  let store: StoreBackend;
  let server: RunningServer;
  const tables = join(dir.path, 'tables');
  const manifest = (run: number): string => join(tables, '_simrec', 'runs', `${run}.json`);
  const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  before(async () => {
    store = await openStore(join(dir.path, 'runs.db'));
    server = await startServer({
      store,
      port: 0,
      settingsFile: join(dir.path, 'settings.json'),
      tablesFolder: tables,
      liveIntervalMs: 50,
    });
  });
  after(async () => {
    await server.close();
    await store.close();
    dir.cleanup();
  });

  async function recording(): Promise<RunRecorder> {
    const rec = await RunRecorder.begin(store, { begin: 1_000_000 });
    await rec.declareActors([{ id: 'car', kind: 'vehicle' }]);
    await rec.declareStreams([stateStream('car')]);
    await rec.appendMany([
      { stream: 'car/state', samples: [{ t: 1_000_000, step: 0, x: 1, y: 0, yaw: 0, speed: 2 }] },
    ]);
    return rec;
  }

  it('waits for the last recording to end, then writes every run that ended, with no question asked', async () => {
    const first = await recording();
    const second = await recording();
    await wait(300); // the server has seen both recording
    const a = (await first.end('completed')).id;
    await wait(500);
    assert.ok(!existsSync(manifest(a)), 'not written while another run records');
    const b = (await second.end('completed')).id;
    const deadline = Date.now() + 20_000;
    while (!(existsSync(manifest(a)) && existsSync(manifest(b))) && Date.now() < deadline) await wait(50);
    assert.ok(existsSync(manifest(a)) && existsSync(manifest(b)), 'both written once nothing records');
    assert.ok(existsSync(join(tables, 'state', `run=${b}`, 'part-0.parquet')));
  });
});

describe('the tables written on threads of their own', () => {
  const dir = tempDir('simrec-tables-thread-');
  let store: StoreBackend;
  let runs: number[];
  before(async () => {
    store = await openStore(join(dir.path, 'runs.db'));
    runs = [];
    // Long enough that each run's writing is told of while its files are staged.
    for (const seed of [1, 2, 3])
      runs.push((await recordDemoRun(store, { duration: 60, seed, vehicles: 10 })).run.id);
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  it('write what keepTablesInStep writes, with its warnings and progress told back', async () => {
    const here = new TablesFolder(join(dir.path, 'here'));
    const there = new TablesFolder(join(dir.path, 'there'));
    const mine = await keepTablesInStep(store, here, runs);
    const progress: number[] = [];
    // Each thread stages its runs' files in folders named with its own tag (`<pid>-w<tag>-...`).
    const staging = join(there.path, '_simrec', 'staging');
    const threadsSeen = new Set<string>();
    const theirs = await keepTablesOnThreads({ threads: 2 })(store, there, runs, {
      onProgress: (done) => {
        progress.push(done);
        for (const name of existsSync(staging) ? readdirSync(staging) : [])
          threadsSeen.add(name.split('-')[1]!);
      },
    });
    assert.deepEqual(theirs, mine);
    assert.equal(threadsSeen.size, 2, `two threads wrote: ${[...threadsSeen].join(', ')}`);
    assert.ok(progress.length > 0, 'progress told back');
    const samples = (await store.listRuns()).reduce((sum, r) => sum + r.samples, 0);
    assert.ok(
      progress.every((done, i) => i === 0 || done >= progress[i - 1]!),
      'progress only goes on',
    );
    assert.ok(progress.at(-1)! > 0 && progress.at(-1)! <= samples, `${progress.at(-1)} of ${samples}`);
    for (const run of runs) {
      const { written: _a, ...a } = here.manifest(run)!;
      const { written: _b, ...b } = there.manifest(run)!;
      assert.deepEqual(b, a, `run ${run}: the same files`);
      assert.ok(existsSync(there.partFile('state', run)));
    }
    // Done already: nothing written again.
    assert.deepEqual((await keepTablesOnThreads()(store, there, runs)).current, runs);
  });

  it('stop when their signal aborts, leaving nothing staged, and the next writing writes it all', async () => {
    const folder = new TablesFolder(join(dir.path, 'aborted'));
    for (const when of ['at once', 'while writing']) {
      const controller = new AbortController();
      const cancel = (): void => controller.abort(new Error(`the question was cancelled ${when}`));
      const writing = keepTablesOnThreads()(store, folder, runs, {
        signal: controller.signal,
        // Its first progress: a run's files are being written in staging.
        onProgress: when === 'at once' ? () => {} : cancel,
      });
      if (when === 'at once') cancel();
      await assert.rejects(writing, new RegExp(`cancelled ${when}`));
      const staging = join(folder.path, '_simrec', 'staging');
      assert.deepEqual(existsSync(staging) ? readdirSync(staging) : [], [], `${when}: nothing left staged`);
    }
    // What the stopped writings did not finish is written now (a run may have been renamed into place
    // before the thread stopped).
    const next = await keepTablesOnThreads()(store, folder, runs);
    assert.deepEqual([...next.written, ...next.current].sort(), [...runs].sort());
    for (const run of runs) assert.ok(existsSync(folder.partFile('state', run)));
  });

  it("cut a run larger than a thread's share into parts written side by side, read as one table", async () => {
    const run = runs[0]!;
    const whole = new TablesFolder(join(dir.path, 'whole'));
    const cut = new TablesFolder(join(dir.path, 'cut'));
    await keepTablesInStep(store, whole, [run]);
    const staging = join(cut.path, '_simrec', 'staging');
    const threadsSeen = new Set<string>();
    const kept = await keepTablesOnThreads({ threads: 2, partSamples: 1000 })(store, cut, [run], {
      onProgress: () => {
        for (const name of existsSync(staging) ? readdirSync(staging) : [])
          threadsSeen.add(name.split('-')[1]!);
      },
    });
    assert.deepEqual(kept.written, [run]);
    assert.equal(threadsSeen.size, 2, `two threads wrote the run: ${[...threadsSeen].join(', ')}`);
    const state = cut.manifest(run)!.tables.state!;
    const wholeState = whole.manifest(run)!.tables.state!;
    assert.equal(state.parts?.length, 2, JSON.stringify(state));
    assert.deepEqual(readdirSync(cut.partition('state', run)).sort(), ['part-0.parquet', 'part-1.parquet']);
    assert.equal(state.rows, wholeState.rows);
    assert.equal(
      state.parts.reduce((sum, p) => sum + p.rows, 0),
      state.rows,
    );
    assert.deepEqual(state.columns, wholeState.columns, "each part has the whole table's columns");
    // The run's own tables are whole, as they were.
    for (const table of ['actors', 'runs']) {
      assert.equal(cut.manifest(run)!.tables[table]!.parts, undefined, table);
      assert.equal(cut.manifest(run)!.tables[table]!.rows, whole.manifest(run)!.tables[table]!.rows, table);
    }
    // The same answers from simrec's question and from DuckDB reading the folder as its users do.
    // Every row by its hash, in any order (a sum of doubles depends on the order it is taken in).
    const question =
      'SELECT count(*) AS n, count(DISTINCT actor) AS actors, bit_xor(hash(actor, t, x, y, speed)) AS rows, min(t) AS first, max(t) AS last FROM state';
    const answer = async (folder: TablesFolder): Promise<unknown[][]> =>
      queryFleet(store, folder, { sql: question, runs: [run] }, async (result) => {
        const rows: unknown[][] = [];
        for await (const chunk of result.chunks) rows.push(...chunk);
        return rows;
      });
    assert.deepEqual(await answer(cut), await answer(whole));
    const duckdb = await loadDuckDB();
    const instance = await duckdb.DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const direct = async (folder: TablesFolder): Promise<unknown> =>
      (
        await connection.runAndReadAll(
          `SELECT run, count(*) AS n, count(DISTINCT actor) AS actors, bit_xor(hash(actor, t, x, y, speed)) AS rows FROM read_parquet('${folder.path}/state/*/*.parquet', hive_partitioning = true) GROUP BY run ORDER BY run`,
        )
      ).getRowObjectsJson();
    assert.deepEqual(await direct(cut), await direct(whole));
    // A stream is never cut: each actor's rows are in one part.
    const split = (
      await connection.runAndReadAll(
        `SELECT count(*) AS n FROM (SELECT actor FROM read_parquet('${cut.path}/state/*/*.parquet', filename = true) GROUP BY actor HAVING count(DISTINCT filename) > 1)`,
      )
    ).getRowObjectsJson();
    connection.closeSync();
    instance.closeSync();
    assert.deepEqual(split, [{ n: '0' }]);
    assert.deepEqual(await checkTables(store, cut), []);
    // Kept as they are while the run's state does not change; written whole again, its second part
    // goes (a reader of the folder would read its rows twice).
    assert.deepEqual(
      (await keepTablesOnThreads({ threads: 2, partSamples: 1000 })(store, cut, [run])).current,
      [run],
    );
    rmSync(join(cut.path, '_simrec', 'runs', `${run}.json`));
    assert.deepEqual((await keepTablesInStep(store, cut, [run])).written, [run]);
    assert.deepEqual(readdirSync(cut.partition('state', run)), ['part-0.parquet']);
    assert.equal(cut.manifest(run)!.tables.state!.parts, undefined);
    assert.deepEqual(await answer(cut), await answer(whole));
    // A file the manifest does not list is found by check; --repair writes the run again without it.
    copyFileSync(cut.partFile('state', run), cut.partFile('state', run, 1));
    const found = await checkTables(store, cut);
    assert.ok(
      found.some((p) => p.where === cut.partFile('state', run, 1) && /does not list/.test(p.problem)),
      JSON.stringify(found),
    );
    await checkTables(store, cut, { repair: true });
    assert.deepEqual(readdirSync(cut.partition('state', run)), ['part-0.parquet']);
    assert.deepEqual(await checkTables(store, cut), []);
  });

  it("cut only runs larger than a thread's share, as far as their largest table holds parts of the fewest samples", () => {
    const M = 1_000_000;
    /** A run of `samples` to write, its largest table `largest` of them. */
    const run = (
      id: number,
      samples: number,
      largest = samples,
    ): { id: number; samples: number; largest: number } => ({
      id,
      samples,
      largest,
    });
    const parts = (pieces: { run: number; part: { count: number } }[]): [number, number][] =>
      pieces.map((p) => [p.run, p.part.count]);
    // One run alone: a part a thread.
    assert.deepEqual(parts(cutRuns([run(1, 10 * M)], 4, M)), [
      [1, 4],
      [1, 4],
      [1, 4],
      [1, 4],
    ]);
    // Not below the fewest samples of a part of its largest table.
    assert.deepEqual(parts(cutRuns([run(1, 2.5 * M)], 4, M)), [
      [1, 2],
      [1, 2],
    ]);
    // A run of many tables none of which holds two parts' worth is not cut (a thread would wait idle);
    // one whose largest table does is, though the run is no larger.
    assert.deepEqual(parts(cutRuns([run(1, 3.4 * M, 0.9 * M)], 2, M)), [[1, 1]]);
    assert.deepEqual(parts(cutRuns([run(1, 3.4 * M, 1.7 * M)], 2, M / 2)), [
      [1, 2],
      [1, 2],
    ]);
    // Two runs as large as each other on two threads: a thread each, uncut.
    assert.deepEqual(parts(cutRuns([run(1, 5 * M), run(2, 5 * M)], 2, M)), [
      [1, 1],
      [2, 1],
    ]);
    // A big run among small ones is cut; the small ones are not.
    const pieces = cutRuns([run(1, 9 * M), run(2, M / 2), run(3, M / 2)], 2, M);
    assert.deepEqual(parts(pieces), [
      [1, 2],
      [1, 2],
      [2, 1],
      [3, 1],
    ]);
    assert.deepEqual(
      pieces.map((p) => p.part.index),
      [0, 1, 0, 0],
    );
    assert.deepEqual(
      shareRuns(pieces, 2).map((share) => share.map((p) => p.samples)),
      [
        [4.5 * M, M / 2],
        [4.5 * M, M / 2],
      ],
    );
    assert.deepEqual(parts(cutRuns([run(1, 10 * M)], 1, M)), [[1, 1]]);
    // Runs of no samples to write (their actors and runs tables only): one part each.
    assert.deepEqual(parts(cutRuns([run(1, 0), run(2, 0)], 2, M)), [
      [1, 1],
      [2, 1],
    ]);
  });

  it('share the runs out by their samples, each share in the order given', () => {
    const runs = [10, 100, 40, 90, 50].map((samples, id) => ({ id, samples }));
    const ids = (shares: { id: number }[][]): number[][] => shares.map((share) => share.map((r) => r.id));
    // 100 + 40 + 10 against 90 + 50.
    assert.deepEqual(ids(shareRuns(runs, 2)), [
      [0, 1, 2],
      [3, 4],
    ]);
    // More threads than runs: a run a thread, the largest first.
    assert.deepEqual(ids(shareRuns(runs, 8)), [[1], [3], [4], [2], [0]]);
    assert.deepEqual(ids(shareRuns(runs, 1)), [[0, 1, 2, 3, 4]]);
    assert.deepEqual(ids(shareRuns(runs, 0)), [[0, 1, 2, 3, 4]]);
    assert.deepEqual(shareRuns([], 4), []);
  });

  it('start no more threads than the free memory holds', () => {
    const mib = 2 ** 20;
    assert.equal(writerThreads(8, 64 * 1024 * mib), 8);
    assert.equal(writerThreads(8, 1536 * mib), 3, 'half a GiB a thread');
    assert.equal(writerThreads(8, 100 * mib), 1, 'one at least');
    assert.equal(writerThreads(0, 64 * 1024 * mib), 1);
  });

  it('fail by name when the store cannot be opened there', async () => {
    // The same store, its location elsewhere: what the thread opens.
    const nowhere = join(dir.path, 'nowhere', 'runs.db');
    const gone = new Proxy(store, {
      get: (target, name) => {
        if (name === 'location') return nowhere;
        const value = Reflect.get(target, name) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await assert.rejects(
      keepTablesOnThreads()(gone, new TablesFolder(join(dir.path, 'none')), runs),
      (error: SimrecError) => error.code === 'io' && error.message.includes('nowhere'),
    );
  });
});
