/**
 * Parquet export and `simrec sql` (#26), checked with DuckDB itself, the tool users read the files
 * with: column types, row counts (each stream's sample count), values, units, presence intervals,
 * row groups; and cross-run questions through `simrec sql` against `simrec traj` and `samples`.
 * Three real demo runs, scored by `simrec eval` (which stores ego/evaluation and events), and a run
 * made here with every field type, fields that differ between actors, and names that collide.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { writeParquetTables } from '../src/formats/parquet/write-parquet.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { FieldType, Sample, StreamInfo } from '../src/model/stream.js';
import { stateStream } from '../src/model/standard-streams.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { exportRecording } from '../src/replay/export-run.js';
import { storeRunSource } from '../src/replay/run-source.js';
import { openStore } from '../src/store/open-store.js';
import { SIMREC_BIN, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

/** What DuckDB calls each simrec field type once written. */
const DUCKDB_TYPE: Record<FieldType, string> = {
  f64: 'DOUBLE',
  f32: 'FLOAT',
  i32: 'INTEGER',
  i64: 'BIGINT',
  bool: 'BOOLEAN',
  string: 'VARCHAR',
  json: 'JSON',
  vec: 'DOUBLE[]',
};

const T0 = 1_700_000_000_000_000;

/** A run with every field type, undeclared fields, fields typed differently by two actors, odd names. */
async function recordTypedRun(store: StoreBackend): Promise<number> {
  const rec = await RunRecorder.begin(store, { begin: T0, simulator: { name: 'test' } });
  await rec.declareActors([
    { id: 'a', kind: 'vehicle', extents: { length: 4, width: 2, height: 1.5 }, attributes: { mass: 1200 } },
    { id: 'b', kind: 'pedestrian' },
  ]);
  await rec.declareStreams([
    {
      name: 'probe',
      actor: 'a',
      fields: [
        { name: 'pos', type: 'vec', length: 3, unit: 'm' },
        { name: 'temp', type: 'f32', unit: 'K', optional: true },
        { name: 'counter', type: 'i64' },
        { name: 'flag', type: 'bool', optional: true },
        { name: 'info', type: 'json', optional: true },
        { name: 'mode', type: 'string', optional: true },
        { name: 'level', type: 'i32', optional: true },
        { name: 'actor', type: 'string', optional: true },
      ],
    },
    {
      name: 'probe',
      actor: 'b',
      fields: [
        { name: 'pos', type: 'vec', length: 3, unit: 'm' },
        { name: 'counter', type: 'i64' },
        { name: 'mode', type: 'i32', optional: true },
        { name: 'level', type: 'f64', optional: true },
      ],
    },
    { name: 'runs', fields: [{ name: 'note', type: 'string' }] },
    stateStream('a'),
  ]);
  for (let i = 0; i < 2500; i++) {
    const t = T0 + i * 10_000;
    await rec.appendMany([
      {
        stream: 'a/probe',
        samples: [
          {
            t,
            step: i,
            pos: [i, -i / 3, 0.5],
            counter: 2 ** 40 + i,
            ...(i % 7 === 0 ? {} : { temp: 273.15 + i / 10, flag: i % 2 === 0 }),
            info: i % 5 === 0 ? { lap: i, tags: ['x'] } : null,
            mode: i % 3 === 0 ? 'auto' : 'manual',
            level: i % 4,
            actor: 'driver-1',
            ...(i % 100 === 0 ? { extra: i * 1.5 } : {}),
          },
        ],
      },
      {
        stream: 'b/probe',
        samples: [{ t, step: i, pos: [0, 0, i], counter: 5 - i, mode: i % 3, level: i / 8 }],
      },
      { stream: 'a/state', samples: [{ t, step: i, x: i, y: 0, yaw: 0, speed: 10 + (i % 50) / 10 }] },
    ]);
  }
  await rec.append('runs', { t: T0, step: 0, note: 'a stream named like the runs table' });
  await rec.setPresence('b', [
    { from: T0, to: T0 + 5_000_000 },
    { from: T0 + 10_000_000, to: null },
  ]);
  return (await rec.end('completed', { end: T0 + 25_000_000 })).id;
}

const rows = async (db: DuckDBConnection, sql: string): Promise<Record<string, unknown>[]> =>
  (await db.runAndReadAll(sql)).getRowObjectsJS();

/** The tables' name a stream goes to (the folder's own tables keep their names). */
const tableOf = (s: StreamInfo): string =>
  s.name === 'runs' || s.name === 'actors' ? `stream_${s.name}` : s.name;

describe('parquet export, read by DuckDB', () => {
  const tmp = tempDir('simrec-parquet-');
  const storePath = join(tmp.path, 'runs.db');
  const out = join(tmp.path, 'tables');
  let store: StoreBackend;
  let db: DuckDBConnection;
  const demoRuns: number[] = [];
  let typedRun = 0;
  const warnings: string[] = [];
  const file = (name: string): string => `'${join(out, `${name}.parquet`)}'`;

  before(async () => {
    // The demo as a user makes it: three seeds, each scored (ego/evaluation, events).
    for (const seed of [1, 2, 3]) {
      const { run } = cliJson<{ run: { id: number } }>([
        '--store',
        storePath,
        'demo',
        '--no-serve',
        '--duration',
        '20',
        '--seed',
        String(seed),
        '--json',
      ]);
      demoRuns.push(run.id);
      const scored = runCli(['--store', storePath, 'eval', String(run.id), '--json']);
      assert.equal(scored.status, 0, scored.stderr);
    }
    store = await openStore(storePath);
    typedRun = await recordTypedRun(store);
    const details = await exportRecording(store, 'parquet', [...demoRuns, typedRun], out, {
      warn: (where, message) => warnings.push(`${where}: ${message}`),
    });
    assert.ok(details.bytes);
    db = await (await DuckDBInstance.create(':memory:')).connect();
  });

  after(async () => {
    db?.closeSync();
    await store?.close();
    tmp.cleanup();
  });

  const allStreams = async (): Promise<{ run: number; stream: StreamInfo }[]> => {
    const list = [];
    for (const run of [...demoRuns, typedRun])
      for (const stream of await store.listStreams(run)) list.push({ run, stream });
    return list;
  };

  it('every column has the type of its field, and t is a UTC microsecond timestamp', async () => {
    const checked = new Set<string>();
    for (const { stream } of await allStreams()) {
      const types = new Map(
        (await rows(db, `DESCRIBE SELECT * FROM ${file(tableOf(stream))}`)).map((r) => [
          r.column_name as string,
          r.column_type as string,
        ]),
      );
      assert.equal(types.get('run'), 'BIGINT');
      assert.equal(types.get('actor'), 'VARCHAR');
      assert.equal(types.get('t'), 'TIMESTAMP WITH TIME ZONE');
      assert.equal(types.get('step'), 'BIGINT');
      if (stream.name === 'probe') continue; // its fields differ between actors: the next test
      for (const f of stream.fields) {
        assert.equal(types.get(f.name), DUCKDB_TYPE[f.type], `${stream.id}.${f.name}`);
        checked.add(f.type);
      }
    }
    for (const type of ['f64', 'i32', 'bool', 'string', 'json']) assert.ok(checked.has(type), type);
    const probe = new Map(
      (await rows(db, `DESCRIBE SELECT * FROM ${file('probe')}`)).map((r) => [r.column_name, r.column_type]),
    );
    assert.deepEqual(Object.fromEntries(probe), {
      run: 'BIGINT',
      actor: 'VARCHAR',
      t: 'TIMESTAMP WITH TIME ZONE',
      step: 'BIGINT',
      pos: 'DOUBLE[]',
      temp: 'FLOAT',
      counter: 'BIGINT',
      flag: 'BOOLEAN',
      info: 'JSON',
      mode: 'JSON', // a string for actor a, an integer for actor b
      level: 'DOUBLE', // i32 and f64 widen to f64
      actor_field: 'VARCHAR', // the field `actor` beside the key column `actor`
      extra: 'DOUBLE', // undeclared, inferred
    });
    assert.ok(
      warnings.some((w) => w.startsWith('table probe: field mode:')),
      warnings.join('\n'),
    );
    assert.ok(warnings.some((w) => w.startsWith('stream runs: written as table stream_runs')));
  });

  it("each stream's rows, by run and actor, are as many as its samples", async () => {
    const counts = new Map<string, number>();
    for (const table of new Set((await allStreams()).map((s) => tableOf(s.stream))))
      for (const r of await rows(
        db,
        `SELECT run, actor, count(*) AS n FROM ${file(table)} GROUP BY run, actor`,
      ))
        counts.set(`${table} ${r.run} ${r.actor}`, Number(r.n));
    let streams = 0;
    for (const { run, stream } of await allStreams()) {
      if (stream.samples === 0) continue;
      assert.equal(
        counts.get(`${tableOf(stream)} ${run} ${stream.actor}`),
        stream.samples,
        `${run} ${stream.id}`,
      );
      streams++;
    }
    assert.equal(counts.size, streams, 'no rows of a stream that is not there');
    assert.ok(streams > 100);
  });

  it("gives back every sample's values exactly (absent values as NULL)", async () => {
    const check = async (run: number, stream: string, table: string, actor: string, fields: string[]) => {
      const stored: Sample[] = [];
      for await (const batch of store.readSamples({ run, stream })) stored.push(...batch);
      const read = await rows(
        db,
        `SELECT epoch_us(t) AS t, step, ${fields.map((f) => `"${f}"`).join(', ')} FROM ${file(table)}
         WHERE run = ${run} AND actor = '${actor}' ORDER BY t`,
      );
      assert.equal(read.length, stored.length);
      read.forEach((r, i) => {
        const s = stored[i]!;
        assert.equal(Number(r.t), s.t);
        assert.equal(Number(r.step), s.step);
        for (const f of fields) {
          let expected = s[f === 'actor_field' ? 'actor' : f] ?? null;
          let got = r[f];
          if (typeof got === 'bigint') got = Number(got);
          if (f === 'info' || (f === 'mode' && got !== null)) got = JSON.parse(got as string);
          if (f === 'temp' && expected !== null) expected = Math.fround(expected as number);
          assert.deepEqual(got, expected, `${stream} t=${s.t} ${f}`);
        }
      });
    };
    await check(demoRuns[0]!, 'ego/state', 'state', 'ego', ['x', 'y', 'yaw', 'speed', 'lane', 'lanePos']);
    await check(demoRuns[1]!, 'ego/control', 'control', 'ego', [
      'throttle',
      'brake',
      'steer',
      'gear',
      'handbrake',
    ]);
    const probe = ['pos', 'temp', 'counter', 'flag', 'info', 'mode', 'level', 'actor_field', 'extra'];
    await check(typedRun, 'a/probe', 'probe', 'a', probe);
    await check(typedRun, 'b/probe', 'probe', 'b', ['pos', 'counter', 'mode', 'level']);
  });

  it("keeps each field's unit and type in the file's key-value metadata", async () => {
    const kv = async (table: string) =>
      new Map(
        (
          await rows(
            db,
            `SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${file(table)})`,
          )
        ).map((r) => [r.k as string, r.v as string]),
      );
    const state = await kv('state');
    const ego = (await store.listStreams(demoRuns[0]!)).find((s) => s.id === 'ego/state')!;
    for (const f of ego.fields) assert.equal(state.get(`simrec.unit.${f.name}`), f.unit, f.name);
    assert.equal(state.get('simrec.unit.speed'), 'm/s');
    const columns = JSON.parse(state.get('simrec.columns')!) as {
      name: string;
      type: string;
      unit?: string;
    }[];
    assert.deepEqual(
      columns.find((c) => c.name === 'speed'),
      { name: 'speed', type: 'f64', unit: 'm/s' },
    );
    assert.deepEqual(
      columns.find((c) => c.name === 't'),
      {
        name: 't',
        type: 'timestamp',
        description: 'sample time, microseconds since the Unix epoch',
      },
    );
  });

  it('actors.parquet holds kinds, extents, attributes and presence intervals', async () => {
    for (const run of [...demoRuns, typedRun]) {
      const read = await rows(
        db,
        `SELECT actor, kind, length, attributes,
                [{'from': epoch_us(p."from"), 'to': epoch_us(p."to")} FOR p IN presence] AS presence
         FROM ${file('actors')} WHERE run = ${run} ORDER BY actor`,
      );
      const stored = (await store.listActors(run)).sort((a, b) => (a.id < b.id ? -1 : 1));
      assert.equal(read.length, stored.length);
      read.forEach((r, i) => {
        const a = stored[i]!;
        assert.equal(r.actor, a.id);
        assert.equal(r.kind, a.kind);
        assert.equal(r.length, a.extents?.length ?? null);
        assert.deepEqual(JSON.parse(r.attributes as string), a.attributes);
        const presence = (r.presence as { from: bigint; to: bigint | null }[] | null)?.map((p) => ({
          from: Number(p.from),
          to: p.to === null ? null : Number(p.to),
        }));
        assert.deepEqual(presence ?? undefined, a.presence, `run ${run} actor ${a.id}`);
      });
    }
    const [b] = await rows(
      db,
      `SELECT len(presence) AS n, epoch_us(presence[1]."to") - epoch_us(presence[1]."from") AS first
       FROM ${file('actors')} WHERE run = ${typedRun} AND actor = 'b'`,
    );
    assert.deepEqual([Number(b!.n), Number(b!.first)], [2, 5_000_000]);
  });

  it('runs.parquet and runs.json describe the runs', async () => {
    const read = await rows(
      db,
      `SELECT run, epoch_us("begin") AS b, duration, sample_count, state FROM ${file('runs')} ORDER BY run`,
    );
    assert.deepEqual(
      read.map((r) => Number(r.run)),
      [...demoRuns, typedRun],
    );
    const typed = read.at(-1)!;
    assert.deepEqual([Number(typed.b), typed.duration, typed.state], [T0, 25, 'closed']);
    const streams = await store.listStreams(typedRun);
    assert.equal(
      Number(typed.sample_count),
      streams.reduce((n, s) => n + s.samples, 0),
    );
    const description = JSON.parse(readFileSync(join(out, 'runs.json'), 'utf8'));
    assert.deepEqual(
      description.runs.map((r: { id: number }) => r.id),
      [...demoRuns, typedRun],
    );
    assert.equal(
      description.tables.state.rows,
      Number((await rows(db, `SELECT count(*) AS n FROM ${file('state')}`))[0]!.n),
    );
  });

  it('writes row groups of the size asked, Snappy-compressed, crossing them without losing a row', async () => {
    const folder = join(tmp.path, 'small-groups');
    const source = await storeRunSource(store, typedRun);
    const result = await writeParquetTables([source], folder, {
      warn: () => {},
      onProgress: () => {},
      signal: new AbortController().signal,
      rowGroupRows: 1000,
      tables: new Set(['probe']),
    });
    assert.deepEqual(Object.keys(result.tables).sort(), ['actors', 'probe', 'runs']);
    const path = `'${join(folder, 'probe.parquet')}'`;
    const meta = await rows(
      db,
      `SELECT count(DISTINCT row_group_id) AS groups, max(row_group_num_rows) AS largest,
              list(DISTINCT compression) AS codecs FROM parquet_metadata(${path})`,
    );
    assert.deepEqual([Number(meta[0]!.groups), Number(meta[0]!.largest)], [5, 1000]); // 5000 rows
    assert.deepEqual(meta[0]!.codecs, ['SNAPPY']);
    const same = await rows(
      db,
      `SELECT count(*) AS n FROM (SELECT * FROM ${path} EXCEPT ALL SELECT * FROM ${file('probe')} WHERE run = ${typedRun})`,
    );
    assert.equal(Number(same[0]!.n), 0);
    // The export's own row groups are DuckDB's size: the demo's tables fit in one.
    const groups = await rows(db, `SELECT DISTINCT row_group_id FROM parquet_metadata(${file('state')})`);
    assert.equal(groups.length, 1);
  });

  it("keeps each sample's time and step as differences from the row before: under a byte a row", async () => {
    const columns = await rows(
      db,
      `SELECT path_in_schema AS name, encodings, sum(total_compressed_size) AS bytes, sum(num_values) AS n
       FROM parquet_metadata(${file('state')}) WHERE path_in_schema IN ('t', 'step', 'x')
       GROUP BY ALL ORDER BY name`,
    );
    assert.deepEqual(
      columns.map((c) => [c.name, String(c.encodings).includes('DELTA_BINARY_PACKED')]),
      [
        ['step', true],
        ['t', true],
        ['x', false],
      ],
    );
    for (const c of columns.filter((c) => c.name !== 'x'))
      assert.ok(
        Number(c.bytes) < Number(c.n),
        `${String(c.name)}: ${Number(c.bytes)} bytes for ${Number(c.n)} rows`,
      );
  });
});

describe('simrec sql', () => {
  const tmp = tempDir('simrec-sql-');
  const storePath = join(tmp.path, 'runs.db');
  const runs: number[] = [];
  const simrec = (...args: string[]) => runCli(['--store', storePath, ...args]);
  const sqlJson = <T>(query: string, ...args: string[]): T[] =>
    cliJson<T[]>(['--store', storePath, 'sql', query, '--json', ...args]);

  before(() => {
    for (const seed of [4, 5, 6]) {
      runs.push(
        cliJson<{ run: { id: number } }>([
          '--store',
          storePath,
          'demo',
          '--no-serve',
          '--duration',
          '30',
          '--seed',
          String(seed),
          '--json',
        ]).run.id,
      );
      assert.equal(simrec('eval', String(runs.at(-1))).status, 0);
    }
  });
  after(() => tmp.cleanup());

  const samplesOf = (run: number, stream: string): Sample[] =>
    simrec('samples', String(run), stream, '--json')
      .stdout.split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Sample);

  it("answers the ego's maximum speed per run as simrec traj does", () => {
    const answer = sqlJson<{ run: number; top: number }>(
      "SELECT run, max(speed) AS top FROM state WHERE actor = 'ego' GROUP BY run ORDER BY run",
    );
    const expected = runs.map((run) => ({
      run,
      top: Math.max(
        ...cliJson<{ samples: Sample[] }>([
          '--store',
          storePath,
          'traj',
          String(run),
          'ego',
          '--json',
        ]).samples.map((s) => s.speed as number),
      ),
    }));
    assert.deepEqual(answer, expected);
  });

  it('lists the events of a kind across runs as simrec samples does', () => {
    const answer = sqlJson<{ run: number; t: number; detail: string }>(
      "SELECT run, epoch_us(t) AS t, detail FROM events WHERE kind = 'blocked' ORDER BY run, t",
    );
    const expected = runs.flatMap((run) =>
      samplesOf(run, 'events')
        .filter((s) => s.kind === 'blocked')
        .map((s) => ({ run, t: s.t, detail: s.detail })),
    );
    assert.ok(expected.length > 0, 'the demo runs have blocked vehicles');
    assert.deepEqual(answer, expected);
  });

  it('finds the moments of time to collision below 1.5 s, per run, as the evaluation stream has them', () => {
    const answer = sqlJson<{ run: number; n: number; least: number }>(
      'SELECT run, count(*) AS n, min(collision) AS least FROM evaluation WHERE collision < 1.5 GROUP BY run ORDER BY run',
    );
    const expected = runs
      .map((run) => {
        const low = samplesOf(run, 'ego/evaluation').filter((s) => (s.collision as number) < 1.5);
        return { run, n: low.length, least: Math.min(...low.map((s) => s.collision as number)) };
      })
      .filter((r) => r.n > 0);
    assert.ok(expected.length > 0, 'some demo run comes close');
    assert.deepEqual(answer, expected);
  });

  it('joins two streams on time: the ego speed when it brakes hard', () => {
    const answer = sqlJson<{ run: number; n: number; top: number | null }>(
      `SELECT s.run, count(*) AS n, max(s.speed) AS top
       FROM state s JOIN control c ON c.run = s.run AND c.actor = s.actor AND c.t = s.t
       WHERE s.actor = 'ego' AND c.brake > 0.3 GROUP BY s.run ORDER BY s.run`,
    );
    const expected = runs
      .map((run) => {
        const brake = new Map(samplesOf(run, 'ego/control').map((s) => [s.t, s.brake as number]));
        const hard = samplesOf(run, 'ego/state').filter((s) => (brake.get(s.t) ?? 0) > 0.3);
        return { run, n: hard.length, top: Math.max(...hard.map((s) => s.speed as number)) };
      })
      .filter((r) => r.n > 0);
    assert.ok(expected.length > 0);
    assert.deepEqual(answer, expected);
  });

  it('prints CSV and a table, and --runs keeps to the runs named', () => {
    const csv = simrec(
      'sql',
      "SELECT run, count(*) AS n FROM state WHERE actor = 'ego' GROUP BY run ORDER BY run",
      '--csv',
      '--runs',
      `${runs[0]},${runs[2]}`,
    );
    assert.equal(csv.status, 0, csv.stderr);
    assert.equal(csv.stdout, `run,n\n${runs[0]},301\n${runs[2]},301\n`);
    const quoted = simrec('sql', `SELECT 'a,"b"' AS text, NULL AS nothing, [1, 2] AS list`, '--csv');
    assert.equal(quoted.stdout, 'text,nothing,list\n"a,""b""",,"[1,2]"\n');
    const table = simrec('sql', "SELECT run, kind FROM actors WHERE actor = 'ego' ORDER BY run");
    assert.equal(table.status, 0, table.stderr);
    assert.deepEqual(
      table.stdout.split('\n').map((l) => l.trimEnd()),
      ['run  kind', ...runs.map((r) => `${r}    ego`), '(3 rows)', ''],
    );
  });

  it('streams a large result: every row, in order, as JSON', () => {
    const all = sqlJson<{ step: number }>('SELECT step FROM state ORDER BY run, actor, t');
    const n = sqlJson<{ n: number }>('SELECT count(*) AS n FROM state')[0]!.n;
    assert.equal(all.length, n);
    assert.ok(n > 2048 * 3, 'more rows than one of DuckDB vectors');
  });

  it('refuses a bad query with exit 2, naming the tables there are', () => {
    const r = simrec('sql', 'SELECT * FROM no_such_stream');
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /^simrec: SQL: .*no_such_stream.*\(tables: actors, control, evaluation, events, runs, signal, state, wheels\)\n$/,
    );
    const both = simrec('sql', 'SELECT 1', '--csv', '--json');
    assert.equal(both.status, 2);
    assert.match(both.stderr, /--json and --csv/);
    assert.equal(simrec('sql', 'SELECT 1', '--runs', '999').status, 2);
  });

  it("says what to install when DuckDB's Node client is missing", () => {
    // A resolve hook that finds no @duckdb/node-api, as on a machine where the optional dependency
    // did not install; everything else resolves as usual.
    const hooks = join(tmp.path, 'no-duckdb-hooks.mjs');
    writeFileSync(
      hooks,
      `export async function resolve(specifier, context, next) {
        if (specifier === '@duckdb/node-api') {
          const error = new Error("Cannot find package '@duckdb/node-api'");
          error.code = 'ERR_MODULE_NOT_FOUND';
          throw error;
        }
        return next(specifier, context);
      }\n`,
    );
    const register = join(tmp.path, 'no-duckdb.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(`file://${hooks}`)});\n`,
    );
    const r = spawnSync(
      process.execPath,
      ['--import', register, SIMREC_BIN, '--store', storePath, 'sql', 'SELECT 1'],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /simrec sql needs DuckDB's Node client, @duckdb\/node-api, which is not installed.*npm install @duckdb\/node-api/,
    );
    assert.equal(r.stdout, '');
    // Nothing else needs it: the other commands run.
    const ls = spawnSync(
      process.execPath,
      ['--import', register, SIMREC_BIN, '--store', storePath, 'ls', '--json'],
      { encoding: 'utf8' },
    );
    assert.equal(ls.status, 0, ls.stderr);
    assert.ok(existsSync(storePath));
  });
});
