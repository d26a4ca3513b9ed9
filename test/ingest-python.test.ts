import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { closedRun, readAll, startIngestFixture, type IngestFixture } from './helpers/ingest-helpers.js';
import { REPO_ROOT } from './helpers/paths.js';

const SCRIPT = join(REPO_ROOT, 'examples', 'python_client.py');

let fx: IngestFixture;
before(async () => {
  fx = await startIngestFixture();
});
after(async () => {
  await fx.close();
});

/** Runs the example as a process of its own, like a simulator would (sync would block the server). */
function runPython(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('examples/python_client.py over TCP', () => {
  it('is standard library only', () => {
    const modules = [...readFileSync(SCRIPT, 'utf8').matchAll(/^(?:import|from) (\w+)/gm)].map((m) => m[1]);
    assert.deepEqual(modules.sort(), ['argparse', 'json', 'socket', 'struct', 'sys', 'time']);
  });

  it('records a short run with two actors and camera captures', async () => {
    const result = await runPython(['127.0.0.1', String(fx.tcpPort), '--steps', '100']);
    assert.equal(result.code, 0, result.stderr);
    const run = Number(/^run (\d+)$/m.exec(result.stdout)?.[1]);
    const info = await fx.store.getRun(run);
    assert.equal(info?.endReason, 'user_request');
    assert.deepEqual(info?.simulator, { name: 'python-example', version: '1.0' });
    for (const stream of ['ego/state', 'lead/state']) {
      const samples = await readAll(fx.store, run, stream);
      assert.deepEqual(
        samples.map((s) => s.step),
        Array.from({ length: 100 }, (_, i) => i),
      );
    }
    const captures = await readAll(fx.store, run, 'front/captures');
    assert.equal(captures.length, 10);
    const image = await fx.store.getAttachment(run, 'front/00000090.ppm');
    assert.equal(image?.mediaType, 'image/x-portable-pixmap');
    assert.equal(Buffer.from(image!.data.subarray(0, 11)).toString(), 'P6 4 2 255\n');
  });

  it('leaves its run interrupted with every acknowledged batch when killed with SIGKILL', async () => {
    const child = spawn('python3', [SCRIPT, '127.0.0.1', String(fx.tcpPort), '--endless'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let run = 0;
    let acked = 0;
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`python exited early (${code})`)));
      createInterface({ input: child.stdout }).on('line', (line) => {
        const [word, n] = line.split(' ');
        if (word === 'run') run = Number(n);
        if (word === 'ack') acked = Math.max(acked, Number(n));
        if (acked >= 300) {
          child.removeAllListeners('exit');
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    assert.equal((await closedRun(fx.store, run)).endReason, 'interrupted');
    const steps = (await readAll(fx.store, run, 'ego/state')).map((s) => s.step);
    assert.ok(steps.length >= acked, `${steps.length} stored, ${acked} acknowledged`);
    assert.deepEqual(
      steps,
      Array.from({ length: steps.length }, (_, i) => i),
    );
  });

  it('is refused without the token the server asks for', async () => {
    const secured = await startIngestFixture({ token: 'abc' });
    try {
      const refused = await runPython(['127.0.0.1', String(secured.tcpPort), '--steps', '3']);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /unauthorized: hello.token/);
      const allowed = await runPython([
        '127.0.0.1',
        String(secured.tcpPort),
        '--steps',
        '3',
        '--token',
        'abc',
      ]);
      assert.equal(allowed.code, 0, allowed.stderr);
    } finally {
      await secured.close();
    }
  });
});
