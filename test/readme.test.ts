/**
 * The README's "Using it" block, run as a newcomer runs it (#55, 2 and 4): every line, top to bottom,
 * in an empty folder holding what a clone has (`examples/`, the ignore files), read from README.md
 * itself so that the test follows the README. Then what the lines wrote there is ignored by git and by
 * Prettier's check, as `npm test` runs it in the repository's folder.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { REPO_ROOT, SIMREC_BIN, tempDir } from './helpers/paths.js';

/** The command lines of the first `sh` block after the heading. */
function readmeBlock(heading: string): string[] {
  const text = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const from = text.indexOf(`\n${heading}\n`);
  assert.ok(from >= 0, `README.md has ${heading}`);
  const block = /```sh\n([^]*?)```/.exec(text.slice(from));
  assert.ok(block, `a sh block under ${heading}`);
  return block[1]!.split('\n').filter((line) => line.trim() !== '');
}

/** A line's words as a POSIX shell splits them (quotes, no expansions), its comment left out. */
function words(line: string): string[] {
  const out: string[] = [];
  let word: string | null = null;
  let quote: string | null = null;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      word ??= '';
    } else if (ch === '#' && word === null) break;
    else if (/\s/.test(ch)) {
      if (word !== null) out.push(word);
      word = null;
    } else word = (word ?? '') + ch;
  }
  assert.equal(quote, null, `unbalanced quotes in: ${line}`);
  if (word !== null) out.push(word);
  return out;
}

const dir = tempDir('simrec-readme-');
after(() => dir.cleanup());
const folder = dir.path;
// A newcomer's shell: no store, tables folder or settings named, so the defaults (./simrec.db) apply;
// the server's settings file is the folder's own, not this machine's user's.
const env: NodeJS.ProcessEnv = { ...process.env, SIMREC_SETTINGS: join(folder, 'settings.json') };
for (const name of ['SIMREC_STORE', 'SIMREC_TABLES', 'SIMREC_TOKEN', 'SIMREC_INGEST_TOKEN']) delete env[name];

const run = (args: string[]) =>
  spawnSync(process.execPath, [SIMREC_BIN, ...args], {
    cwd: folder,
    env,
    encoding: 'utf8',
    timeout: 300_000,
  });

const sumoInstalled = spawnSync('sumo', ['--version'], { encoding: 'utf8' }).status === 0;

/**
 * `serve` runs until Ctrl-C: it is started, asked for the runs, and interrupted. It gets `--port 0`:
 * this machine is shared, and the default port (8470) may be another server's.
 */
async function serveBriefly(args: string[]): Promise<void> {
  const child = spawn(process.execPath, [SIMREC_BIN, ...args, '--port', '0'], { cwd: folder, env });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let url = '';
  for await (const line of createInterface({ input: child.stdout })) {
    url = /^simrec viewer: (http:\/\/\S+\/)/.exec(line)?.[1] ?? '';
    if (url) break;
  }
  assert.ok(url, `the viewer's address: ${stderr}`);
  const runs = (await (await fetch(new URL('api/runs', url))).json()) as { id: number }[];
  assert.deepEqual(runs.map((r) => r.id).sort(), [1, 2, 3], 'the three demo runs, served');
  child.kill('SIGINT');
  assert.equal(await exited, 130, stderr);
}

describe("the README's Using it, line by line in an empty folder", () => {
  const lines = readmeBlock('## Using it');

  it('is a block of simrec commands', () => {
    assert.ok(lines.length >= 20, `${lines.length} lines`);
    for (const line of lines) assert.deepEqual(words(line).slice(0, 2), ['npx', 'simrec'], line);
  });

  it('runs every line, each succeeding', async (t) => {
    // What a clone has: the example inputs and the ignore and format files.
    cpSync(join(REPO_ROOT, 'examples'), join(folder, 'examples'), { recursive: true });
    for (const file of ['.gitignore', '.prettierignore', '.prettierrc.json'])
      cpSync(join(REPO_ROOT, file), join(folder, file));
    for (const line of lines) {
      // npx runs the package's own bin; here the built one is run directly (npx outside the project
      // would look for simrec on the registry).
      const args = words(line).slice(2);
      if (args[0] === 'serve') {
        await serveBriefly(args);
        continue;
      }
      if (args[0] === 'record' && args[1] === 'sumo' && !sumoInstalled) {
        t.diagnostic(`skipped, SUMO is not installed: ${line}`);
        continue;
      }
      const r = run(args);
      // diff(1)'s codes: runs 1 and 2 are other traffic, so the line succeeds by saying they differ.
      if (args[0] === 'diff') {
        assert.equal(r.status, 1, `${line}\n${r.stderr}`);
        assert.match(r.stdout, /^runs 1 and 2 differ/, line);
      } else assert.equal(r.status, 0, `${line}\n${r.stderr}`);
      // Warnings may be said; no error.
      const errors = r.stderr
        .split('\n')
        .filter((l) => l.startsWith('simrec: ') && !l.startsWith('simrec: warning: '));
      assert.deepEqual(errors, [], line);
      if (args[0] === 'scenarios') {
        const bytes = statSync(join(folder, 'examples', 'scenario.bin')).size;
        assert.match(r.stdout, new RegExp(`^stored scenario 42 \\(${bytes} bytes, "cut-in"\\)`), line);
      }
      if (args[0] === 'vehicles') assert.match(r.stdout, /^stored vehicle configuration "sedan"/, line);
      if (args[0] === 'import') assert.match(r.stdout, /egoTrackingTest\.db -> run 4\n$/, line);
      if (args[0] === 'record')
        assert.match(r.stdout, /^recorded run 5 \(completed\): 10000 steps, 2 vehicles/, line);
    }
    const runs = JSON.parse(run(['ls', '--json']).stdout) as { id: number }[];
    assert.deepEqual(
      runs.map((r) => r.id).sort((a, b) => a - b),
      sumoInstalled ? [1, 2, 4, 5] : [1, 2, 4],
      'run 3 deleted by the README',
    );
  });

  it('leaves nothing git or the formatting check would see: what it wrote is ignored', () => {
    assert.equal(spawnSync('git', ['init', '-q'], { cwd: folder }).status, 0);
    const untracked = spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], {
      cwd: folder,
      encoding: 'utf8',
    })
      .stdout.split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3));
    const written = untracked.filter((f) => !f.startsWith('examples/') && !f.startsWith('.'));
    assert.deepEqual(written, [], 'every file the README wrote is ignored');
    assert.ok(untracked.includes('examples/limsim/egoTrackingTest.db'), "the example's database is not");
    // npm test's check, as it runs in the repository's folder.
    const prettier = spawnSync(join(REPO_ROOT, 'node_modules', '.bin', 'prettier'), ['--check', '.'], {
      cwd: folder,
      encoding: 'utf8',
    });
    assert.equal(prettier.status, 0, prettier.stdout + prettier.stderr);
  });
});
