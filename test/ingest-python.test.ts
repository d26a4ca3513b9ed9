import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import {
  closedRun,
  documentedBytes,
  readAll,
  startIngestFixture,
  type IngestFixture,
} from './helpers/ingest-helpers.js';
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

  it("writes protocol 2's binary frame and columns byte for byte as the document shows", () => {
    const [frame, columns, bitmap] = documentedBytes();
    const python = `
import sys
sys.path.insert(0, ${JSON.stringify(join(REPO_ROOT, 'examples'))})
import python_client as c
fields = [{"name": "x", "type": "f64"}, {"name": "speed", "type": "f32", "optional": True}]
body = c._str16("state") + c.struct.pack("<qqI", 1000000, 0, 2) + c._str16("ego") + c._str16("lead")
body += c._columns(fields, {"x": [0.5, 20], "speed": [10, 9]}, 2)
print(body.hex())
client = c.SimrecClient.__new__(c.SimrecClient)
client.fields = {"ego/state": fields}
sent = []
client._request = lambda header, body: sent.append(body)
client.columns({"ego/state": {"t": [1050000, 1100000], "step": [1, 2], "x": [1, 1.5]}})
print(sent[0].hex())
client.fields = {"%s/drive" % a: [{"name": "gear", "type": "i32", "optional": True}] for a in "abc"}
client.frame("drive", 2000000, 3, ["a", "b", "c"], {"gear": [None, 2, None]})
print(sent[1].hex())
`;
    const result = spawnSync('python3', ['-c', python], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    const [frameBody, columnsBody, bitmapBody] = result.stdout.trim().split('\n');
    assert.equal(
      frameBody,
      frame!.subarray(32).toString('hex'),
      'the frame body (after its 32 bytes of framing and header)',
    );
    assert.equal(columnsBody, columns!.toString('hex'));
    assert.equal(bitmapBody, bitmap!.toString('hex'), 'absent integers: a presence bitmap');
  });

  it('records the same run with --binary (protocol 2 frames) as with JSON samples', async () => {
    const json = await runPython(['127.0.0.1', String(fx.tcpPort), '--steps', '50']);
    const binary = await runPython(['127.0.0.1', String(fx.tcpPort), '--steps', '50', '--binary']);
    assert.equal(binary.code, 0, binary.stderr);
    const [a, b] = [json, binary].map((r) => Number(/^run (\d+)$/m.exec(r.stdout)?.[1]));
    for (const stream of ['ego/state', 'lead/state']) {
      const expected = await readAll(fx.store, a!, stream);
      assert.equal(expected.length, 50);
      assert.deepStrictEqual(await readAll(fx.store, b!, stream), expected, stream);
    }
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
    assert.equal(Buffer.from(image.data.subarray(0, 11)).toString(), 'P6 4 2 255\n');
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
