/**
 * The command line as a careful user meets it (issue #28): piped into `head`, given the everyday
 * mistakes, asked questions with no answer, told to write where something already is, interrupted.
 * The rules tested here are docs/command-line.md's: exit codes, errors and outputs.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fixture, SIMREC_BIN, tempDir } from './helpers/paths.js';
import { cliJson, runCli } from './helpers/run-cli.js';

const dir = tempDir('simrec-careful-');
after(() => dir.cleanup());
const store = join(dir.path, 'careful.db');
const env = { SIMREC_STORE: store };

/** Runs simrec with stdout into a reader that closes after the first line, as `| head -1` does. */
async function firstLineThenClose(
  args: string[],
): Promise<{ line: string; code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [SIMREC_BIN, ...args], { env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const line = await new Promise<string>((resolve) => {
    let seen = '';
    child.stdout.on('data', (d: Buffer) => {
      seen += d.toString();
      const end = seen.indexOf('\n');
      if (end >= 0) {
        child.stdout.destroy();
        resolve(seen.slice(0, end));
      }
    });
  });
  return { line, code: await exited, stderr };
}

/** Asserts a refusal: the exit code, nothing on stdout, one line on stderr matching `pattern`. */
function assertRefused(args: string[], status: number, pattern: RegExp, extraEnv = env): void {
  const r = runCli(args, extraEnv);
  assert.equal(r.status, status, `simrec ${args.join(' ')}: ${r.stderr}`);
  assert.equal(r.stdout, '', `simrec ${args.join(' ')} printed nothing on stdout`);
  assert.match(r.stderr, pattern);
  assert.doesNotMatch(r.stderr, /\n\s+at /, `simrec ${args.join(' ')}: no stack trace`);
}

/** The runs of a store, as `simrec ls --json` lists them. */
const listed = (at: string): { id: number; begin: number; end: number; endReason: string }[] =>
  cliJson(['--store', at, 'ls', '--json']);

/** Waits until `ready()` holds, polling (a test's own timeout bounds it). */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise((r) => setTimeout(r, 25));
}

/**
 * simrec started as a child process with its output collected; with `pauseStdout` nothing reads its
 * stdout, so that a command writing much blocks on the pipe (as under a reader that waits).
 */
function started(args: string[], options: { pauseStdout?: boolean } = {}) {
  const child = spawn(process.execPath, [SIMREC_BIN, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  let paused = false;
  if (options.pauseStdout) {
    // One chunk read, then none: the pipe fills and the writer waits.
    child.stdout.once('data', () => {
      child.stdout.pause();
      paused = true;
    });
  } else child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    process: child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    stdoutPaused: () => paused,
  };
}

describe('simrec as a careful user meets it', () => {
  before(() => {
    // 60 s: enough output (over 100 KB) that a reader closing early must cut the writer off.
    const r = runCli(['demo', '--no-serve', '--duration', '60', '--rate', '10'], env);
    assert.equal(r.status, 0, r.stderr);
  });

  it('piped into a reader that stops after one line, ends quietly with 0', async () => {
    for (const args of [
      ['samples', '1', 'ego/state', '--json'],
      ['info', '1'],
      ['info', '1', '--json'],
      ['traj', '1', 'ego', '--json'],
    ]) {
      const r = await firstLineThenClose(args);
      assert.ok(r.line.length > 0, `${args.join(' ')} printed a first line`);
      assert.equal(r.stderr, '', `${args.join(' ')}: nothing on stderr`);
      assert.equal(r.code, 0, `${args.join(' ')} exit code`);
    }
  });

  it('argument-parser mistakes exit 2 with the parser message after simrec: and no help page', () => {
    for (const [args, pattern] of [
      [['info'], /^simrec: missing required argument 'run'\n/],
      [['ls', '--bogus'], /^simrec: unknown option '--bogus'\n/],
      [['scene', '1'], /^simrec: required option '--at <seconds>' not specified\n/],
      [
        ['eval', '1', '--mode', 'x'],
        /^simrec: .*argument 'x' is invalid\. Allowed choices are simrec, limsim/,
      ],
      [['frobnicate'], /^simrec: unknown command 'frobnicate'\n/],
      // A subcommand's parser says it the same way.
      [['vehicles', 'ls', 'extra'], /^simrec: too many arguments for 'ls'/],
      [
        ['record', 'sumo', 'x.sumocfg', '--nice', '20'],
        /--nice: expected a whole number from 0 to 19, got "20"/,
      ],
    ] as const) {
      assertRefused([...args], 2, pattern);
      assert.doesNotMatch(runCli([...args], env).stderr, /Commands:|Options:/);
    }
    assert.equal(runCli(['--help'], env).status, 0);
    assert.equal(runCli(['--version'], env).status, 0);
  });

  it("0.1's per-format nouns give the same redirect and exit code with --help, -h or simrec help as without", () => {
    for (const format of ['perception', 'solo', 'coco', 'yolo', 'soda']) {
      const plain = runCli([format, 'import'], env);
      assert.equal(plain.status, 2, `simrec ${format} import`);
      assert.match(plain.stderr, new RegExp(`use \`simrec import ${format} LOCATION\``));
      for (const help of [
        [format, 'import', '--help'],
        [format, '--help'],
        [format, 'export', '1', '-h'],
        ['help', format],
      ]) {
        const r = runCli(help, env);
        assert.equal(r.status, plain.status, `simrec ${help.join(' ')}`);
        assert.equal(r.stderr, plain.stderr, `simrec ${help.join(' ')}`);
        assert.equal(r.stdout, '', `simrec ${help.join(' ')} prints no usage`);
      }
    }
  });

  it('file mistakes name the path and what was expected, exit 2; --debug adds the stack', () => {
    const file = join(dir.path, 'plain.txt');
    writeFileSync(file, 'x');
    assertRefused(
      ['import', 'limsim', dir.path],
      2,
      new RegExp(`^simrec: ${dir.path}: is a folder, expected a file\n$`),
    );
    assertRefused(
      ['roadnet', dir.path],
      2,
      new RegExp(`^simrec: ${dir.path}: is a folder, expected a file\n$`),
    );
    assertRefused(
      ['roadnet', join(file, 'net.xml')],
      2,
      /^simrec: .*plain\.txt\/net\.xml: part of this path is a file, expected a folder\n$/,
    );
    assertRefused(
      ['export', '1', 'limsim', join(dir.path, 'nowhere', 'out.db')],
      2,
      /^simrec: .*\/nowhere: no such folder \(to write .*out\.db in\)\n$/,
    );
    assertRefused(
      ['import', 'limsim', join(dir.path, 'missing.db')],
      2,
      /^simrec: .*missing\.db: no such file\n$/,
    );
    const debug = runCli(['import', 'limsim', dir.path, '--debug'], env);
    assert.equal(debug.status, 2);
    assert.match(debug.stderr, /is a folder, expected a file\n.*EISDIR[^]*\n\s+at /);
  });

  it('a port in use exits 1, an address not on this machine exits 2, each in one line', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      assertRefused(
        ['serve', '--port', String(port)],
        1,
        new RegExp(
          `^simrec: 127\\.0\\.0\\.1:${port}: the port is already in use \\(choose another with --port, or 0 for a free one\\)\n$`,
        ),
      );
    } finally {
      holder.close();
    }
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of a real machine.
    assertRefused(
      ['serve', '--host', '192.0.2.7', '--port', '0'],
      2,
      /^simrec: 192\.0\.2\.7: not an address of this machine/,
    );
  });

  it('a question with no answer is refused, not answered with an empty table', () => {
    assertRefused(
      ['scene', '1', '--at', '-5'],
      2,
      /^simrec: --at: -5 s is outside run 1; expected 0 to 60 s/,
    );
    assertRefused(
      ['scene', '1', '--at', '999'],
      2,
      /^simrec: --at: 999 s is outside run 1; expected 0 to 60 s/,
    );
    assertRefused(['traj', '1', 'ego', '--from', '20', '--to', '10'], 2, /--from 20 is after --to 10/);
    assertRefused(['samples', '1', 'ego/state', '--to', '61'], 2, /--to: 61 s is outside run 1/);
    assert.equal(
      runCli(['scene', '1', '--at', '60', '--json'], env).status,
      0,
      'the last instant is in the run',
    );
    const typo = join(dir.path, 'typo.db');
    assertRefused(['ls', '--store', typo], 2, /typo\.db: no such store/);
    assert.ok(!existsSync(typo), 'a read command created no store');
    assertRefused(
      ['demo', '--no-serve', '--routes', 'a.rou.xml'],
      2,
      /--routes: .* give that network with --net/,
    );
  });

  it('samples --fields prints only those fields, and refuses a field the stream does not have', () => {
    const r = runCli(['samples', '1', 'J0_0/signal', '--fields', 'state,phase', '--json'], env);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 601, 'a minute at 10 Hz');
    for (const line of lines)
      assert.deepEqual(Object.keys(JSON.parse(line)), ['t', 'step', 'state', 'phase']);
    assertRefused(
      ['samples', '1', 'J0_0/signal', '--fields', 'state,colour'],
      2,
      /^simrec: fields: stream J0_0\/signal of run 1 has no field "colour" \(it has t, step, state, phase, program, timeToSwitch\)/,
    );
    assertRefused(
      ['samples', '1', 'J0_0/signal', '--fields', 'state,'],
      2,
      /--fields: expected field names separated by commas, got "state,"/,
    );
  });

  it('every output refuses to replace without --force, and replaces whole with it', () => {
    const limsim = join(dir.path, 'out.db');
    assert.equal(runCli(['export', '1', 'limsim', limsim], env).status, 0);
    assertRefused(['export', '1', 'limsim', limsim], 2, /out\.db: already exists; --force replaces it/);
    assert.equal(runCli(['export', '1', 'limsim', limsim, '--force'], env).status, 0);

    const perception = cliJson<{ run: { id: number } }>(
      ['import', 'perception', fixture('perception-simrun', 'datasetinsights'), '--json'],
      env,
    );
    const run = String(perception.run.id);
    for (const format of ['perception', 'coco', 'yolo']) {
      const out = join(dir.path, `${format}-out`);
      mkdirSync(out);
      writeFileSync(join(out, 'old.txt'), 'an older dataset');
      assertRefused(
        ['export', run, format, out],
        2,
        new RegExp(`${format}-out: already exists; --force replaces it`),
      );
      assert.equal(readFileSync(join(out, 'old.txt'), 'utf8'), 'an older dataset', 'refused: left alone');
      const forced = runCli(['export', run, format, out, '--force'], env);
      assert.equal(forced.status, 0, forced.stderr);
      assert.ok(!existsSync(join(out, 'old.txt')), `${format} --force replaced the folder`);
      assert.ok(readdirSync(out).length > 0, `${format} wrote its dataset`);
      assert.equal(runCli(['export', run, format, out, '--force'], env).status, 0, 'again, over itself');
      assert.deepEqual(
        readdirSync(dir.path).filter((n) => n.includes('.partial')),
        [],
        'no temporary folder is left',
      );
    }

    const bin = join(dir.path, 'scenario.bin');
    writeFileSync(bin, Buffer.from([1, 2, 3]));
    assert.equal(runCli(['scenarios', 'put', bin, '--id', '5'], env).status, 0);
    const out = join(dir.path, 'got.bin');
    writeFileSync(out, 'keep me');
    assertRefused(
      ['scenarios', 'get', '5', '--out', out],
      2,
      /got\.bin: already exists; --force replaces it/,
    );
    assert.equal(readFileSync(out, 'utf8'), 'keep me');
    assert.equal(runCli(['scenarios', 'get', '5', '--out', out, '--force'], env).status, 0);
    assert.deepEqual([...readFileSync(out)], [1, 2, 3]);
  });

  it('Ctrl-C during an export leaves no temporary file or journal, and exits 130', async () => {
    const bigStore = join(dir.path, 'big.db');
    const made = runCli(['demo', '--no-serve', '--duration', '300', '--rate', '10', '--vehicles', '40'], {
      SIMREC_STORE: bigStore,
    });
    assert.equal(made.status, 0, made.stderr);
    const outDir = join(dir.path, 'interrupted');
    mkdirSync(outDir);
    const target = join(outDir, 'run.db');
    const child = spawn(process.execPath, [SIMREC_BIN, '--store', bigStore, 'export', '1', 'limsim', target]);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // Interrupt as soon as the export has begun writing.
    await new Promise<void>((resolve) => {
      const watcher = watch(outDir, (_event, name) => {
        if (name?.includes('.partial')) {
          watcher.close();
          child.kill('SIGINT');
          resolve();
        }
      });
    });
    assert.equal(await exited, 130, stderr);
    assert.match(stderr, /interrupted; .*run\.db was not written/);
    assert.deepEqual(readdirSync(outDir), [], 'neither the file, nor its .partial, nor a journal');
  });

  it('Ctrl-C during an import removes the run it had begun, and exits 130', async () => {
    const bigStore = join(dir.path, 'big.db');
    const file = join(dir.path, 'big.mcap');
    assert.equal(runCli(['--store', bigStore, 'export', '1', 'mcap', file]).status, 0);
    const runs = (): number[] =>
      cliJson<{ id: number }[]>(['--store', bigStore, 'ls', '--json']).map((r) => r.id);
    const before = runs();
    const child = spawn(process.execPath, [SIMREC_BIN, '--store', bigStore, 'import', 'mcap', file]);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // Interrupt as soon as the import's run is in the store.
    for (let seen = false; !seen;) {
      await new Promise((r) => setTimeout(r, 20));
      seen = runs().length > before.length;
    }
    child.kill('SIGINT');
    assert.equal(await exited, 130, stderr);
    assert.match(stderr, /interrupted; .*big\.mcap: nothing was imported/);
    assert.deepEqual(runs(), before, 'the run it had begun is gone');
  });

  it('eval --compare reports the 95th percentile of jerk as p95Jerk, and the extreme as maxAbsJerk', () => {
    const [row] = cliJson<{ p95Jerk: number; maxAbsJerk: number }[]>(
      ['eval', '--compare', '1', '--json'],
      env,
    );
    const { jerk } = cliJson<{ metrics: { jerk: { min: number; p95: number; max: number } } }>(
      ['eval', '1', '--json'],
      env,
    ).metrics;
    assert.equal(row!.p95Jerk, jerk.p95);
    assert.equal(row!.maxAbsJerk, Math.max(-jerk.min, jerk.max));
    assert.ok(row!.p95Jerk < row!.maxAbsJerk / 2, `${row!.p95Jerk} is a percentile, not the extreme`);
  });

  it('warnings are summarised: the first of each kind with a count; --verbose lists all; stats warns too', () => {
    const perceptionStore = { SIMREC_STORE: join(dir.path, 'perception.db') };
    const mock = fixture('perception-simrun', 'Dataset');
    const summary = runCli(['import', 'perception', mock], perceptionStore);
    const verbose = runCli(['import', 'perception', mock, '--verbose'], perceptionStore);
    assert.equal(summary.status, 0, summary.stderr);
    const lines = (text: string): string[] => text.trim().split('\n');
    // Six files the captures name are absent: one line says so, with the count of the others.
    assert.match(
      summary.stderr,
      /camera_000\.png does not exist.* \(and 5 more like it; --verbose lists all\)\n/,
    );
    assert.equal(
      lines(verbose.stderr).filter((l) => /does not exist; the reference is kept/.test(l)).length,
      6,
    );
    assert.doesNotMatch(verbose.stderr, /more like it/);
    assert.ok(lines(summary.stderr).length < lines(verbose.stderr).length - 5);
    // The images were absent, so stats counts no boxes: it says why instead of a bare 0.
    const stats = runCli(['stats', '1'], perceptionStore);
    assert.equal(stats.status, 0, stats.stderr);
    assert.match(stats.stdout, /\nboxes\s+0\n/);
    assert.match(stats.stderr, /camera_001\.png was not imported .*its 3 labels .* are left out/);
    // So do COCO and YOLO exports of it, which write no image: they say why instead of an empty dataset.
    for (const format of ['coco', 'yolo']) {
      const out = runCli(['export', '1', format, join(dir.path, `mock-${format}`)], perceptionStore);
      assert.equal(out.status, 0, out.stderr);
      assert.match(
        out.stderr,
        /simrec: warning: .*camera_00\d\.png was not imported .*labels .* are left out/,
      );
    }
  });

  it('info shortens long attributes in its table and says so; --json has them whole', () => {
    const table = runCli(['info', '1'], env).stdout;
    const actorRows = table.split('\n').filter((l) => /^(ego|veh\d+)\s/.test(l));
    assert.ok(actorRows.length > 20);
    for (const row of actorRows) assert.ok(row.length < 200, `${row.length} characters: ${row}`);
    assert.match(table, /\n\(\d+ values shortened to 80 characters; --json has them whole\)\n/);
    const info = cliJson<{ actors: { id: string; attributes: { route?: string[] } }[] }>(
      ['info', '1', '--json'],
      env,
    );
    assert.ok(
      info.actors.find((a) => a.id === 'ego')!.attributes.route!.length > 3,
      'the ego route is whole',
    );
  });

  it('Ctrl-C while the demo records keeps the run up to there, says so in one line, and exits 130', async () => {
    const demoStore = join(dir.path, 'interrupted-demo.db');
    const child = started(['--store', demoStore, 'demo', '--no-serve', '--duration', '5000']);
    // Interrupt once the run is in the store and being recorded.
    await until(() => existsSync(demoStore) && listed(demoStore).length > 0);
    child.process.kill('SIGINT');
    assert.equal(await child.exited, 130, child.stderr());
    const [run] = listed(demoStore);
    assert.equal(run!.endReason, 'user_request', 'ended as stopped by the user, not left interrupted');
    const seconds = (run!.end - run!.begin) / 1e6;
    assert.ok(seconds > 0 && seconds < 5000, `${seconds} s recorded`);
    assert.equal(
      child.stderr(),
      `simrec: interrupted; run 1 is kept in ${demoStore} with the ${seconds} s recorded of 5000 (ended user_request; not scored: simrec eval 1 scores it)\n`,
    );
    assert.equal(child.stdout(), '', 'no line of a finished demo');
  });

  it('Ctrl-C stops simrec serve and simrec demo with 130 and a line saying what the store keeps', async () => {
    const serveStore = join(dir.path, 'served.db');
    for (const args of [
      ['--store', serveStore, 'serve', '--port', '0'],
      ['--store', serveStore, 'demo', '--duration', '2', '--port', '0'],
    ]) {
      const child = started(args);
      await until(() => child.stdout().includes('simrec ingest: '));
      child.process.kill('SIGINT');
      assert.equal(await child.exited, 130, `${args.join(' ')}: ${child.stderr()}`);
      assert.equal(
        child.stderr(),
        `simrec: interrupted; the server stopped; ${serveStore} keeps every run\n`,
        args.join(' '),
      );
    }
    assert.deepEqual(
      listed(serveStore).map((r) => r.endReason),
      ['scenario_stop_trigger'],
      "the demo's run, whole",
    );
  });

  it('a command interrupted with nothing to finish says what it kept and exits 130', async () => {
    // Megabytes of samples to a reader that waits: the command is still writing when interrupted.
    const long = join(dir.path, 'long.db');
    const made = runCli(['--store', long, 'demo', '--no-serve', '--duration', '300', '--vehicles', '5']);
    assert.equal(made.status, 0, made.stderr);
    const child = started(['--store', long, 'samples', '1', 'ego/wheels', '--json'], { pauseStdout: true });
    await until(() => child.stdoutPaused());
    child.process.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 200));
    child.process.stdout.resume();
    assert.equal(await child.exited, 130);
    assert.equal(child.stderr(), 'simrec: interrupted; nothing was changed\n');
  });

  it('demo binds its port before recording: a port in use is refused at once, with no run recorded', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const portStore = join(dir.path, 'port-taken.db');
    try {
      assertRefused(
        ['--store', portStore, 'demo', '--port', String(port), '--duration', '600'],
        1,
        new RegExp(`^simrec: 127\\.0\\.0\\.1:${port}: the port is already in use .*\n$`),
      );
    } finally {
      holder.close();
    }
    assert.deepEqual(listed(portStore), [], 'nothing was recorded before the port was found taken');
  });
});
