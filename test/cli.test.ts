import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { REPO_ROOT, SIMREC_BIN, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-cli-');
after(() => dir.cleanup());
const store = join(dir.path, 'cli.db');
const env = { SIMREC_STORE: store };

interface RunRow {
  id: number;
  begin: number;
  end: number;
  endReason: string;
  actorCount: number;
  samples: number;
}

describe('simrec command line', () => {
  let run: RunRow;
  let demoLine = '';
  before(() => {
    const r = runCli(['demo', '--no-serve', '--duration', '20', '--rate', '10'], env);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /recorded run 1 into .*cli\.db: \d+ vehicles, 16 pedestrians, 6 traffic lights/);
    assert.equal(r.stderr, '', 'piped output shows no progress bar');
    demoLine = r.stdout;
    [run] = cliJson<RunRow[]>(['ls', '--json'], env) as [RunRow];
  });

  it('demo scores the run it records as simrec eval does, and says the score', () => {
    const info = cliJson<{ streams: { id: string; samples: number }[] }>(['info', '1', '--json'], env);
    const stream = (id: string) => info.streams.find((s) => s.id === id);
    assert.equal(stream('ego/evaluation')?.samples, 201, "the ego's evaluation, one frame per state");
    assert.ok(stream('events'), 'the events stream');
    const stored = runCli(['samples', '1', 'events', '--json'], env).stdout.trim().split('\n');
    // simrec eval computes the same again (and stores what was there already).
    const again = cliJson<{ score: number; events: unknown[] }>(['eval', '1', '--json'], env);
    assert.equal(stored.length, again.events.length);
    assert.ok(again.events.length > 0, 'a 20 s demo has events');
    assert.match(
      demoLine,
      new RegExp(
        `; scored ${again.score} / 100 with ${again.events.length} events \\(simrec eval 1 shows them\\); try: simrec info 1\\n$`,
      ),
    );
  });

  it("runs as the README's first command runs it (npx simrec from the project: the built file is executable)", () => {
    // A fresh clone's build must leave it executable: npx runs the project's own bin through the shell.
    // With npx's cache empty (a fresh machine, CI), npx first links the project and runs its `prepare`:
    // that must not build again what is built, rewriting dist/ under every simrec running from it.
    const cache = tempDir('simrec-npx-cache-');
    const built = statSync(SIMREC_BIN).mtimeMs;
    try {
      const r = spawnSync('npx', ['--no-install', 'simrec', '--version'], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        env: { ...process.env, npm_config_cache: cache.path, npm_config_update_notifier: 'false' },
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^\d+\.\d+\.\d+/);
      assert.equal(statSync(SIMREC_BIN).mtimeMs, built, 'dist/ was not built again');
    } finally {
      cache.cleanup();
    }
  });

  it('ls lists the run with id, begin, end, end reason and counts', () => {
    assert.equal(run.id, 1);
    assert.equal(run.endReason, 'scenario_stop_trigger');
    assert.equal(run.end - run.begin, 20_000_000, '20 simulated seconds');
    // The ego, at least 20 other vehicles, 16 pedestrians and the town's 6 traffic lights.
    assert.ok(run.actorCount >= 1 + 20 + 16 + 6, `${run.actorCount} actors`);
    // Lights, pedestrians, ego (state, control, wheels) at every one of 201 steps, and vehicles as they drive.
    assert.ok(run.samples > (6 + 16 + 3 + 20) * 201 * 0.9, `${run.samples} samples`);
    const table = runCli(['ls'], env);
    assert.match(table.stdout, /^ID\s+BEGIN\s+DURATION_S\s+END_REASON/);
    assert.match(
      table.stdout,
      new RegExp(
        `\\n1\\s+\\S+\\s+20\\.000\\s+scenario_stop_trigger\\s+simrec-demo 0\\.2\\.0\\s+${run.actorCount}\\s+${run.samples}`,
      ),
    );
  });

  it('info describes actors, streams with their schemas, and the road network kept with the run', () => {
    const info = cliJson<{
      actors: { id: string; kind: string; extents?: { length: number } }[];
      streams: {
        id: string;
        actor: string;
        fields: { name: string }[];
        samples: number;
        begin: number;
        end: number;
      }[];
    }>(['info', '1', '--json'], env);
    const kinds = info.actors.map((a) => a.kind);
    assert.deepEqual(kinds.slice(0, 23), [
      ...Array<string>(6).fill('traffic_light'),
      ...Array<string>(16).fill('pedestrian'),
      'ego',
    ]);
    assert.ok(kinds.slice(23).every((k) => k === 'vehicle'));
    assert.equal(info.actors[22]!.extents!.length, 5);
    assert.deepEqual(
      info.streams.filter((s) => s.actor === 'J0_0').map((s) => [s.id, s.samples]),
      [['J0_0/signal', 201]],
    );
    const wheels = info.streams.find((s) => s.id === 'ego/wheels')!;
    assert.deepEqual(
      [wheels.actor, wheels.samples, wheels.end - wheels.begin, wheels.fields.map((f) => f.name)],
      ['ego', 201, 20_000_000, ['wheels']],
    );
    const table = runCli(['info', '1'], env).stdout;
    assert.match(
      table,
      /\nroadnet\/network\.json\s+application\/vnd\.simrec\.roadnet\+json\s+\d+\s+-\s+\{"format":"sumo"/,
    );
  });

  it('scene --at gives each actor at that time, seconds from the start', () => {
    const scene = cliJson<{
      t: number;
      actors: { id: string; kind: string; x: number; y: number; yaw: number; speed: number; t: number }[];
    }>(['scene', '1', '--at', '12.34', '--json'], env);
    assert.equal(scene.t, run.begin + 12_340_000);
    // The lights have no state stream; every pedestrian and the vehicles on the road do.
    assert.deepEqual([...new Set(scene.actors.map((a) => a.kind))].sort(), ['ego', 'pedestrian', 'vehicle']);
    assert.equal(scene.actors.filter((a) => a.kind === 'pedestrian').length, 16);
    const ego = scene.actors.find((a) => a.id === 'ego')!;
    assert.equal(ego.kind, 'ego');
    assert.equal(ego.t, run.begin + 12_300_000, 'the latest sample at or before 12.34 s');
    assert.ok(ego.x > -120 && ego.x < 440 && ego.y > -120 && ego.y < 280, 'in the generated town');
    const interpolated = cliJson<{ actors: { id: string; t: number }[] }>(
      ['scene', '1', '--at', '12.34', '--interpolate', '--json'],
      env,
    );
    assert.equal(interpolated.actors[0]!.t, run.begin + 12_340_000);
  });

  it("a query loads what it needs: not the server, the recorders, the tables writer, the evaluator nor other commands' modules", () => {
    // Every module the command resolves, written down by a resolve hook (node:module register).
    const log = join(dir.path, 'modules.log');
    const hooks = `import { appendFileSync } from 'node:fs';
      export async function resolve(specifier, context, next) {
        const resolved = await next(specifier, context);
        appendFileSync(${JSON.stringify(log)}, resolved.url + '\\n');
        return resolved;
      }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(
      `data:text/javascript,${encodeURIComponent(hooks)}`,
    )});`;
    for (const query of [
      ['scene', '1', '--at', '3', '--json'],
      ['info', '1', '--json'],
      ['ls', '--json'],
    ]) {
      writeFileSync(log, '');
      const r = spawnSync(
        process.execPath,
        ['--import', `data:text/javascript,${encodeURIComponent(register)}`, SIMREC_BIN, ...query],
        { encoding: 'utf8', env: { ...process.env, ...env } },
      );
      assert.equal(r.status, 0, r.stderr);
      const loaded = readFileSync(log, 'utf8').split('\n');
      const has = (part: string): boolean => loaded.some((url) => url.includes(part));
      assert.ok(has('/store/sqlite/sqlite-backend.js'), `${query[0]}: the store was loaded (the log works)`);
      for (const heavy of [
        '/server/start-server.js',
        '/node_modules/hono/',
        '/node_modules/ws/',
        '/ingest/traci/sumo-recorder.js',
        '/tables/keep-tables.js',
        '/tables/fleet-sql.js',
        '/evaluate/evaluate-run.js',
        '/demo/demo-run.js',
        '/roadnet/read-roadnet.js',
        '/node_modules/fast-png/',
      ])
        assert.ok(!has(heavy), `simrec ${query[0]} loaded ${heavy}`);
      // Nor the other commands' modules: the program loads the one that defines the command named.
      const commands = new Set(
        loaded.filter((url) => url.includes('/cli/commands/')).map((url) => url.split('/').pop()),
      );
      assert.deepEqual(
        [...commands],
        ['query-commands.js'],
        `simrec ${query[0]}: the command modules loaded`,
      );
    }
  });

  it('info shows when each actor was present; scene leaves out those that left, --departed marks them', () => {
    const info = cliJson<{ actors: { id: string; presence?: { from: number; to: number | null }[] }[] }>(
      ['info', '1', '--json'],
      env,
    );
    assert.ok(
      info.actors.every((a) => a.presence && a.presence.length >= 1 && a.presence[0]!.from >= run.begin),
    );
    const gone = info.actors.find((a) => a.presence!.at(-1)!.to !== null);
    assert.ok(gone, 'some vehicle reached the end of its route in 20 s');
    const leftAt = (gone.presence!.at(-1)!.to! - run.begin) / 1e6;
    type SceneJson = { actors: { id: string; departed?: string }[] };
    const at = (seconds: number, ...more: string[]) =>
      cliJson<SceneJson>(['scene', '1', '--at', String(seconds), '--json', ...more], env).actors;
    assert.ok(at(leftAt - 0.1).some((a) => a.id === gone.id && a.departed === undefined));
    assert.ok(!at(leftAt).some((a) => a.id === gone.id));
    assert.deepEqual(
      at(leftAt, '--departed').filter((a) => a.id === gone.id),
      [{ ...at(leftAt - 0.1).find((a) => a.id === gone.id), departed: 'left' }],
    );
    const table = runCli(['info', '1'], env).stdout;
    assert.match(table, new RegExp(`\\n${gone.id}\\s+vehicle\\s.*\\s0\\.000-${leftAt.toFixed(3)}\\s`));
    const departedTable = runCli(['scene', '1', '--at', String(leftAt), '--departed'], env).stdout;
    assert.match(departedTable, /^ID\s+KIND\s+DEPARTED\s+T_S/);
    assert.match(departedTable, new RegExp(`\\n${gone.id}\\s+vehicle\\s+left\\s`));
  });

  it('traj gives the window inclusive', () => {
    const traj = cliJson<{ actor: string; samples: { t: number; x: number }[] }>(
      ['traj', '1', 'veh2', '--from', '1', '--to', '2', '--json'],
      env,
    );
    assert.equal(traj.actor, 'veh2');
    assert.deepEqual(
      traj.samples.map((s) => (s.t - run.begin) / 1e6),
      [1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2],
    );
    const table = runCli(['traj', '1', 'veh2', '--from', '1', '--to', '1.2'], env);
    assert.match(table.stdout, /^T_S\s+X\s+Y/);
    assert.equal(table.stdout.trim().split('\n').length, 4);
  });

  it('samples prints any stream as JSON lines', () => {
    const r = runCli(['samples', '1', 'J0_0/signal', '--to', '0.5', '--json'], env);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { state: string; step: number });
    assert.deepEqual(
      lines.map((l) => [l.step, l.state]),
      // J0_0 starts its program at once: east-west traffic and the crossings over the north-south arms go.
      [0, 1, 2, 3, 4, 5].map((step) => [step, 'gGgrrrgGgrrrrGrG']),
    );
  });

  it('scenarios: put, ls (or list), get, rm (or delete)', () => {
    const bin = join(dir.path, 'cut-in.bin');
    writeFileSync(bin, Buffer.from([0, 1, 2, 250]));
    const put = runCli(
      ['scenarios', 'put', bin, '--id', '9223372036854775807', '--description', 'cut-in'],
      env,
    );
    assert.equal(put.status, 0, put.stderr);
    assert.equal(
      put.stdout,
      `stored scenario 9223372036854775807 (4 bytes, "cut-in") from ${bin} in ${store}\n`,
      'put says what it stored',
    );
    const list = cliJson<{ id: string; description: string; size: number }[]>(
      ['scenarios', 'ls', '--json'],
      env,
    );
    assert.deepEqual(
      list.map((s) => [s.id, s.description, s.size]),
      [['9223372036854775807', 'cut-in', 4]],
    );
    // `list` as the help says it: the same as `ls`, as a table and as JSON.
    const listed = runCli(['scenarios', 'list'], env);
    assert.equal(listed.status, 0, listed.stderr);
    assert.equal(listed.stdout, runCli(['scenarios', 'ls'], env).stdout);
    assert.match(listed.stdout, /^ID\s+TIMESTAMP\s+BYTES\s+DESCRIPTION\n9223372036854775807\s/);
    assert.deepEqual(cliJson(['scenarios', 'list', '--json'], env), list);
    const out = join(dir.path, 'out.bin');
    assert.equal(runCli(['scenarios', 'get', '9223372036854775807', '--out', out], env).status, 0);
    assert.deepEqual([...readFileSync(out)], [0, 1, 2, 250]);
    assert.equal(runCli(['scenarios', 'rm', '9223372036854775807'], env).status, 0);
    const gone = runCli(['scenarios', 'get', '9223372036854775807'], env);
    assert.equal(gone.status, 2);
    assert.match(gone.stderr, /scenario 9223372036854775807 does not exist/);
    assert.equal(runCli(['scenarios', 'put', bin, '--id', '7'], env).status, 0);
    assert.equal(runCli(['scenarios', 'delete', '7'], env).status, 0);
    assert.deepEqual(cliJson(['scenarios', 'list', '--json'], env), []);
  });

  it('vehicles: put, ls (or list), get, rm (or delete)', () => {
    const file = join(dir.path, 'sedan.json');
    writeFileSync(file, JSON.stringify({ 'soda.sim': { mass: 1500 }, wheels: 4 }));
    const put = runCli(['vehicles', 'put', file], env);
    assert.equal(put.status, 0, put.stderr);
    assert.equal(
      put.stdout,
      `stored vehicle configuration "sedan" (keys soda.sim, wheels) from ${file} in ${store}\n`,
      'put says what it stored',
    );
    assert.deepEqual(
      cliJson<{ name: string }[]>(['vehicles', 'ls', '--json'], env).map((v) => v.name),
      ['sedan'],
    );
    const listed = runCli(['vehicles', 'list'], env);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /^NAME\s+TIMESTAMP\s+KEYS\nsedan\s+\S+\s+soda\.sim,wheels\n$/);
    assert.deepEqual(cliJson<{ doc: unknown }>(['vehicles', 'get', 'sedan'], env).doc, {
      'soda.sim': { mass: 1500 },
      wheels: 4,
    });
    assert.equal(runCli(['vehicles', 'delete', 'sedan'], env).status, 0);
    assert.deepEqual(cliJson(['vehicles', 'list', '--json'], env), []);
    writeFileSync(file, '{"broken": ');
    const bad = runCli(['vehicles', 'put', file], env);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /sedan\.json: not valid JSON/);
  });

  it('demo without --no-serve records, serves the viewer on the new run, and stops on Ctrl-C', async () => {
    const child = spawn(process.execPath, [SIMREC_BIN, 'demo', '--duration', '3', '--port', '0'], {
      env: { ...process.env, ...env },
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let url = '';
    for await (const line of createInterface({ input: child.stdout })) {
      const match = /^simrec viewer: (http:\/\/127\.0\.0\.1:\d+\/)#\/runs\/(\d+)/.exec(line);
      if (match) {
        url = match[1]!;
        const runs = (await (await fetch(new URL('api/runs', url))).json()) as { id: number }[];
        assert.equal(runs[0]!.id, Number(match[2]), 'the page opened is the run just recorded');
        assert.match(await (await fetch(url)).text(), /<title>simrec viewer<\/title>/);
        child.kill('SIGINT');
        break;
      }
    }
    assert.ok(url, 'the viewer address was printed');
    assert.equal(await exited, 130, 'Ctrl-C stops it as docs/command-line.md says: 130, interrupted');
  });

  it('errors name what was wrong, go to stderr, and exit non-zero', () => {
    const cases: [string[], RegExp][] = [
      [['info', '77'], /^simrec: run 77 does not exist in .*cli\.db\n$/],
      [
        ['info', 'abc'],
        /^simrec: RUN: expected a run id \(a positive integer, see simrec ls\), got "abc"\n$/,
      ],
      [['scene', '1', '--at', 'soon'], /--at: expected a number of seconds, got "soon"/],
      [['traj', '1', 'nobody'], /run 1 has no actor "nobody"/],
      [['samples', '1', 'ego/nothing'], /run 1 has no stream "ego\/nothing"/],
      [
        ['scenarios', 'put', join(dir.path, 'missing.bin'), '--id', '1'],
        /missing\.bin: no such file or folder\n$/,
      ],
      [
        ['scenarios', 'put', join(dir.path, 'cli.db'), '--id', '99999999999999999999'],
        /--id: 99999999999999999999 does not fit in 64 bits/,
      ],
    ];
    for (const [args, pattern] of cases) {
      const r = runCli(args, env);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, pattern);
    }
    const notAStore = join(dir.path, 'text.db');
    writeFileSync(notAStore, 'hello\n'.repeat(100));
    const r = runCli(['ls', '--store', notAStore]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /text\.db is not a simrec store/);
  });
});
