/**
 * SQL across many runs (#49): a store of generated runs (100 runs of 1 M actor-states by default:
 * 100 actors x 10,000 steps, plus the ego's control and wheels), its tables folder built, then
 * questions asked three ways on the same files in the same run:
 * - simrec in process (queryFleet: the store's versions checked, the folder's views, DuckDB);
 * - DuckDB alone over the same files (read_parquet of the folder, Hive-partitioned), the peer;
 * - from the command line, process start included: `simrec sql` against a Node.js process that opens
 *   DuckDB over a Parquet export of the same runs (what a user of `simrec export ... parquet` runs).
 * Building the folder is weighed against `simrec export RUNS parquet DIR` of the same runs, and a
 * query after one new run against the later queries and one run's share of the build.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadDuckDB } from '../src/formats/parquet/duckdb-sql.js';
import { exportRecording } from '../src/replay/export-run.js';
import { openStore } from '../src/store/open-store.js';
import { FleetSql } from '../src/tables/fleet-sql.js';
import { TablesFolder } from '../src/tables/tables-folder.js';
import { keepTablesOnThreads, threadsToStart } from '../src/tables/tables-writer-threads.js';
import { TrafficGenerator, type BenchSize } from './generator.js';
import { simrecPeer } from './peers/simrec.js';
import { median } from './stats.js';

const run = promisify(execFile);

export interface FleetSize {
  runs: number;
  /** Actors of each run; each steps `steps` times. */
  actors: number;
  steps: number;
}

export const FLEET_FULL: FleetSize = { runs: 100, actors: 100, steps: 10_000 };
export const FLEET_QUICK: FleetSize = { runs: 4, actors: 10, steps: 300 };

export interface FleetQueryTimes {
  name: string;
  sql: string;
  /** simrec in process: the first query after the build, then the median of three. */
  firstMs: number;
  laterMs: number;
  /** DuckDB alone over the same files: the median of three. */
  duckdbMs: number;
  /** laterMs / duckdbMs. */
  ratio: number;
}

export interface FleetResults {
  size: FleetSize;
  actorStates: number;
  recordSeconds: number;
  buildSeconds: number;
  exportSeconds: number;
  /** buildSeconds / exportSeconds (target <= 1.2). */
  buildRatio: number;
  /** Threads the build may use (the machine's cores): the export is written on one. */
  buildThreads: number;
  tablesBytes: number;
  storeBytes: number;
  exportBytes: number;
  queries: FleetQueryTimes[];
  /** After one new run: the next query, the later queries' time, and one run's share of the build. */
  afterNewRun: {
    beforeMs: number;
    nextMs: number;
    laterMs: number;
    runShareMs: number;
    extraOverShare: number;
  };
  /** Process start included: `simrec sql` against a DuckDB process over the export (medians of three). */
  cli: { simrecMs: number; duckdbMs: number; ratio: number; differenceMs: number; sameAnswer: boolean };
}

const QUERIES = [
  {
    name: 'aggregate',
    sql: 'SELECT run, count(*) AS n, max(speed) AS top, avg(speed) AS mean FROM state GROUP BY run ORDER BY run',
  },
  {
    name: 'filter',
    sql: "SELECT run, actor, t, speed FROM state WHERE speed > 19.9 AND actor = 'ego' ORDER BY run, t LIMIT 1000",
  },
  {
    name: 'join on time',
    sql:
      'SELECT s.run, count(*) AS n, max(s.speed) AS top FROM state s JOIN control c ' +
      "ON c.run = s.run AND c.t = s.t WHERE s.actor = 'ego' AND c.brake > 0.2 GROUP BY s.run ORDER BY s.run",
  },
];

async function rows(fleet: FleetSql, sql: string): Promise<unknown[][]> {
  return fleet.query({ sql }, async (result) => {
    const all: unknown[][] = [];
    for await (const chunk of result.chunks) all.push(...chunk);
    return all;
  });
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { ms: performance.now() - start, value };
}

const folderBytes = (dir: string): number =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.parquet'))
    .reduce((sum, e) => sum + statSync(join(e.parentPath, e.name)).size, 0);

export async function measureFleet(
  scratch: string,
  size: FleetSize,
  simrecBin: string,
  repoRoot: string,
): Promise<FleetResults> {
  const dir = join(scratch, 'fleet');
  mkdirSync(dir, { recursive: true });
  const storeFile = join(dir, 'bench.simrec.db');
  const bench: BenchSize = { actors: size.actors, steps: size.steps, hz: 100 };
  const recordStart = performance.now();
  for (let i = 0; i < size.runs; i++)
    await simrecPeer.record({ dir, frames: new TrafficGenerator(bench, 1000 + i), commitEverySteps: 100 });
  const recordSeconds = (performance.now() - recordStart) / 1000;

  const store = await openStore(storeFile);
  const folder = new TablesFolder(join(dir, 'bench.simrec.tables'));
  const exportDir = join(dir, 'export');
  try {
    const ids = (await store.listRuns({ newestFirst: false })).map((r) => r.id);
    // The peer of the build: the same runs exported to Parquet by `simrec export`, in one folder.
    const exported = await timed(() => exportRecording(store, 'parquet', ids, exportDir));
    // Written as `simrec sql` and `simrec tables build` write them: side by side, a thread a core.
    const keep = keepTablesOnThreads({ oneHere: true });
    const buildThreads = Math.min(threadsToStart(), size.runs);
    const built = await timed(() => keep(store, folder));
    if (built.value.written.length !== size.runs) throw new Error('bench fleet: not every run was written');

    const duckdb = await loadDuckDB();
    const instance = await duckdb.DuckDBInstance.create(':memory:');
    const direct = await instance.connect();
    for (const table of ['state', 'control'])
      await direct.run(
        `CREATE VIEW ${table} AS SELECT * FROM read_parquet('${folder.path}/${table}/*/*.parquet', hive_partitioning = true)`,
      );
    const queries: FleetQueryTimes[] = [];
    // One FleetSql for every question, as the server keeps one: DuckDB and its views stay between them.
    const fleet = new FleetSql(store, folder, keep);
    for (const q of QUERIES) {
      const first = await timed(() => rows(fleet, q.sql));
      const later: number[] = [];
      const alone: number[] = [];
      for (let rep = 0; rep < 3; rep++) {
        later.push((await timed(() => rows(fleet, q.sql))).ms);
        alone.push((await timed(async () => (await direct.runAndReadAll(q.sql)).getRows())).ms);
      }
      const laterMs = median(later);
      const duckdbMs = median(alone);
      queries.push({
        name: q.name,
        sql: q.sql,
        firstMs: round(first.ms),
        laterMs: round(laterMs),
        duckdbMs: round(duckdbMs),
        ratio: round(laterMs / duckdbMs, 2),
      });
    }
    direct.closeSync();
    instance.closeSync();

    // One new run, recorded by another connection (as a simulator records beside a server): the next
    // question of the same session writes that run's tables, not the fleet's.
    const aggregate = QUERIES[0]!.sql;
    const before = median(await repeat(3, () => timed(() => rows(fleet, aggregate)).then((t) => t.ms)));
    await simrecPeer.record({ dir, frames: new TrafficGenerator(bench, 999), commitEverySteps: 100 });
    const newRun = Math.max(...ids) + 1;
    const next = await timed(() => rows(fleet, aggregate));
    if (folder.manifest(newRun) === undefined) throw new Error('bench fleet: the new run was not written');
    const written = (await keep(store, folder)).written;
    if (written.length) throw new Error(`bench fleet: runs ${written.join(', ')} were still stale`);
    const laterAfter = median(await repeat(3, () => timed(() => rows(fleet, aggregate)).then((t) => t.ms)));
    await fleet.close();
    // Of the build's thread time (its threads side by side): what one run cost, as the one new run
    // is written on one thread.
    const runShareMs = (built.ms * buildThreads) / size.runs;

    // From the command line, process start included.
    // Evaluated with the repository as its folder, where @duckdb/node-api resolves.
    const duckdbProcess =
      `import { DuckDBInstance } from '@duckdb/node-api';\n` +
      `const c = await (await DuckDBInstance.create(':memory:')).connect();\n` +
      `await c.run("CREATE VIEW state AS SELECT * FROM read_parquet('${join(exportDir, 'state.parquet')}')");\n` +
      `const r = await c.runAndReadAll(process.argv[1]);\n` +
      `process.stdout.write(JSON.stringify(r.getRowsJson()));\n`;
    const cliQuery = QUERIES[0]!.sql;
    const simrecTimes: number[] = [];
    const duckdbTimes: number[] = [];
    let simrecAnswer = '';
    let duckdbAnswer = '';
    for (let rep = 0; rep < 3; rep++) {
      const a = await timed(() =>
        run(process.execPath, [simrecBin, '--store', storeFile, 'sql', cliQuery, '--json'], {
          maxBuffer: 1 << 28,
        }),
      );
      simrecTimes.push(a.ms);
      simrecAnswer = a.value.stdout;
      const b = await timed(() =>
        run(process.execPath, ['--input-type=module', '-e', duckdbProcess, cliQuery], {
          cwd: repoRoot,
          maxBuffer: 1 << 28,
        }),
      );
      duckdbTimes.push(b.ms);
      duckdbAnswer = b.value.stdout;
    }
    const ours = (JSON.parse(simrecAnswer) as Record<string, unknown>[]).map((r) =>
      Object.values(r).map(Number),
    );
    const theirs = (JSON.parse(duckdbAnswer) as unknown[][]).map((r) => r.map(Number));
    // Only the runs exported before the new one are in the export: compare those.
    // Equal but for the last bits of the mean: DuckDB sums in parallel, in no fixed order.
    const near = (x: number, y: number): boolean => Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x));
    const sameAnswer =
      theirs.length === size.runs &&
      theirs.every((row, i) => row.length === ours[i]?.length && row.every((v, j) => near(v, ours[i]![j]!)));
    const simrecMs = median(simrecTimes);
    const duckdbMs = median(duckdbTimes);

    const actorStates = size.runs * size.actors * size.steps;
    return {
      size,
      actorStates,
      recordSeconds: round(recordSeconds, 1),
      buildSeconds: round(built.ms / 1000, 2),
      exportSeconds: round(exported.ms / 1000, 2),
      buildRatio: round(built.ms / exported.ms, 2),
      buildThreads,
      tablesBytes: folder.bytes(),
      storeBytes: statSync(storeFile).size,
      exportBytes: folderBytes(exportDir),
      queries,
      afterNewRun: {
        beforeMs: round(before),
        nextMs: round(next.ms),
        laterMs: round(laterAfter),
        runShareMs: round(runShareMs),
        // What the new run cost the next question, in shares of the build: 1 is one run's.
        extraOverShare: round((next.ms - laterAfter) / runShareMs, 2),
      },
      cli: {
        simrecMs: round(simrecMs),
        duckdbMs: round(duckdbMs),
        ratio: round(simrecMs / duckdbMs, 2),
        differenceMs: round(simrecMs - duckdbMs),
        sameAnswer,
      },
    };
  } finally {
    await store.close().catch(() => undefined); // the figures are taken: a failed close must not hide them
  }
}

async function repeat<T>(n: number, work: () => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(await work());
  return out;
}

const round = (v: number, digits = 1): number => Math.round(v * 10 ** digits) / 10 ** digits;

export function formatFleet(f: FleetResults): string {
  const lines = [
    `fleet: ${f.size.runs} runs x ${f.size.actors} actors x ${f.size.steps} steps (${(f.actorStates / 1e6).toFixed(1)} M actor-states)`,
    `  tables built in ${f.buildSeconds} s on ${f.buildThreads} threads = ${f.buildRatio}x simrec export to Parquet (${f.exportSeconds} s, one thread); ` +
      `tables ${(f.tablesBytes / 2 ** 20).toFixed(0)} MiB = ${(f.tablesBytes / f.storeBytes).toFixed(2)}x the store (${(f.storeBytes / 2 ** 20).toFixed(0)} MiB)`,
    ...f.queries.map(
      (q) =>
        `  ${q.name}: first ${q.firstMs} ms, later ${q.laterMs} ms = ${q.ratio}x DuckDB alone over the same files (${q.duckdbMs} ms)`,
    ),
    `  after one new run: next query ${f.afterNewRun.nextMs} ms (before it ${f.afterNewRun.beforeMs} ms, after ${f.afterNewRun.laterMs} ms; one run's share of the build's thread time ${f.afterNewRun.runShareMs} ms; the new run cost ${f.afterNewRun.extraOverShare}x that share)`,
    `  command line, process start included: simrec sql ${f.cli.simrecMs} ms = ${f.cli.ratio}x (+${f.cli.differenceMs} ms) a DuckDB process over the export (${f.cli.duckdbMs} ms); answers ${f.cli.sameAnswer ? 'equal' : 'DIFFER'}`,
  ];
  return lines.join('\n');
}
