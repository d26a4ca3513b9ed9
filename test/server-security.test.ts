/**
 * The server under attack from a web page the user visits (issue #23): another site's page, a DNS
 * rebinding, stored HTML in an attachment. Every request here goes to a real server on loopback, with
 * the headers a browser would send (node:http, which lets a test set Host as a browser's would be).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { RequestGuard } from '../src/server/request-guard.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import { openStore } from '../src/store/open-store.js';
import { SIMREC_BIN, tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-security-');
let store: StoreBackend;
let server: RunningServer;
let port: number;
let run: number;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request with exactly these headers (Host included), as a browser on some page sends it. */
function send(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
  to = port,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: to, method, path, headers: { host: `127.0.0.1:${to}`, ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Opens a WebSocket with these headers; resolves 'open' or the HTTP status it was refused with. */
function upgrade(path: string, headers: Record<string, string> = {}, to = port): Promise<string> {
  return new Promise((resolve) => {
    const { origin, ...rest } = headers;
    const ws = new WebSocket(`ws://127.0.0.1:${to}${path}`, {
      headers: rest,
      ...(origin ? { origin } : {}),
    });
    ws.on('open', () => (ws.terminate(), resolve('open')));
    ws.on('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
    ws.on('error', (e) => resolve(`error: ${e.message}`));
  });
}

before(async () => {
  store = await openStore(join(dir.path, 'security.db'));
  const rec = await RunRecorder.begin(store, {});
  const page = '<script>fetch("/api/mongodb",{method:"PUT",body:"{}"})</script>';
  await rec.attach({ name: 'evil/page.html', mediaType: 'text/html', data: Buffer.from(page) });
  await rec.attach({ name: 'evil/logo.svg', mediaType: 'image/svg+xml', data: Buffer.from('<svg/>') });
  await rec.attach({ name: 'cam/0001.png', mediaType: 'image/png', data: Buffer.from('png') });
  await rec.end();
  run = rec.id;
  server = await startServer({
    store,
    port: 0,
    allowHosts: ['recorder.lab'],
    allowOrigins: ['https://dash.example'],
    settingsFile: join(dir.path, 'settings.json'),
  });
  port = Number(new URL(server.url).port);
});
after(async () => {
  await server.close();
  await store.close();
  dir.cleanup();
});

describe('the server refuses other sites', () => {
  it("refuses WebSockets opened by another site's page, on /api/live and /ingest", async () => {
    for (const path of ['/api/live', '/ingest']) {
      assert.equal(await upgrade(path, { origin: 'http://evil.example' }), '403', path);
      assert.equal(await upgrade(path, { origin: 'null' }), '403', `${path}: a sandboxed page`);
      assert.equal(
        await upgrade(path, { origin: `http://127.0.0.1:${port}` }),
        'open',
        `${path}: its own page`,
      );
      assert.equal(
        await upgrade(path, { origin: 'https://dash.example' }),
        'open',
        `${path}: --allow-origin`,
      );
      assert.equal(await upgrade(path), 'open', `${path}: a simulator, which sends no Origin`);
    }
  });

  it('refuses a request whose Host is not a name of this server (DNS rebinding), PUT /api/mongodb included', async () => {
    const before = server.mongodb.settings.get();
    const rebound = await send(
      'PUT',
      '/api/mongodb',
      { host: `evil.example:${port}`, 'content-type': 'application/json' },
      JSON.stringify({ url: 'mongodb://evil.example:27017', autoConnect: true }),
    );
    assert.equal(rebound.status, 403);
    assert.match(JSON.parse(rebound.body).error, /Host "evil\.example:\d+": not a name of this server/);
    assert.deepEqual(server.mongodb.settings.get(), before, 'the settings did not change');
    assert.equal((await send('GET', '/api/runs', { host: `evil.example:${port}` })).status, 403);
    assert.equal((await send('GET', '/', { host: 'evil.example' })).status, 403, 'the page too');
    assert.equal(await upgrade('/api/live', { host: `evil.example:${port}` }), '403');
    assert.equal(await upgrade('/ingest', { host: `evil.example:${port}` }), '403');
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'recorder.lab:80',
      'LOCALHOST',
    ])
      assert.equal((await send('GET', '/api/runs', { host })).status, 200, host);
    for (const host of ['evil.example', '127.0.0.1.evil.example', 'localhost@evil', '10.0.0.1'])
      // Node's own parser refuses some outright (400); none is served.
      assert.ok([400, 403].includes((await send('GET', '/api/runs', { host })).status), host);
  });

  it('refuses a cross-origin POST sent as text/plain, and any changing request not sent as JSON', async () => {
    const json = JSON.stringify({ url: 'mongodb://evil.example:27017' });
    const before = server.mongodb.settings.get();
    const crossSite = await send(
      'PUT',
      '/api/mongodb',
      { origin: 'http://evil.example', 'content-type': 'text/plain' },
      json,
    );
    assert.equal(crossSite.status, 403);
    assert.match(
      JSON.parse(crossSite.body).error,
      /Origin "http:\/\/evil\.example": pages from another site/,
    );
    const post = await send('POST', '/api/mongodb/connect', { origin: 'http://evil.example' });
    assert.equal(post.status, 403, 'a bodiless cross-site POST too');
    const plain = await send(
      'PUT',
      '/api/settings',
      { 'content-type': 'text/plain' },
      '{"recordEveryRun":false}',
    );
    assert.equal(plain.status, 415);
    assert.match(JSON.parse(plain.body).error, /Content-Type "text\/plain": expected application\/json/);
    const form = await send(
      'PUT',
      '/api/mongodb',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'url=x',
    );
    assert.equal(form.status, 415);
    assert.deepEqual(server.mongodb.settings.get(), before, 'the settings did not change');
    assert.equal(server.settings.get().recordEveryRun, true);
    const own = await send(
      'PUT',
      '/api/settings',
      { origin: `http://127.0.0.1:${port}`, 'content-type': 'application/json; charset=utf-8' },
      '{"recordEveryRun":true}',
    );
    assert.equal(own.status, 200, 'the viewer itself still may');
  });

  it('sends the security headers on every answer', async () => {
    const answers = await Promise.all([
      send('GET', '/'),
      send('GET', '/api/runs'),
      send('GET', '/api/nothing'),
      send('GET', '/api/runs/abc'),
      send('GET', '/api/runs', { host: 'evil.example' }),
      send('GET', `/api/runs/${run}/attachment?name=cam%2F0001.png`),
    ]);
    for (const [i, a] of answers.entries()) {
      const csp = String(a.headers['content-security-policy']);
      assert.match(csp, /frame-ancestors 'none'/, `answer ${i}`);
      assert.equal(a.headers['x-content-type-options'], 'nosniff', `answer ${i}`);
      assert.equal(a.headers['referrer-policy'], 'no-referrer', `answer ${i}`);
    }
    assert.match(String(answers[0].headers['content-security-policy']), /default-src 'self'/);
    assert.ok(!String(answers[0].headers['content-security-policy']).includes('unsafe'), 'no unsafe sources');
  });

  it('serves an attachment never as a page of its origin: HTML and SVG download, sandboxed; images inline', async () => {
    for (const name of ['evil/page.html', 'evil/logo.svg']) {
      const a = await send('GET', `/api/runs/${run}/attachment?name=${encodeURIComponent(name)}`);
      assert.equal(a.status, 200);
      const file = name.split('/')[1]!;
      assert.equal(
        a.headers['content-disposition'],
        `attachment; filename="${file}"; filename*=UTF-8''${file}`,
      );
      assert.equal(a.headers['x-content-type-options'], 'nosniff');
      assert.match(String(a.headers['content-security-policy']), /^sandbox; default-src 'none'/);
    }
    const png = await send('GET', `/api/runs/${run}/attachment?name=cam%2F0001.png`);
    assert.equal(png.headers['content-type'], 'image/png');
    assert.match(String(png.headers['content-disposition']), /^inline; filename="0001\.png"/);
    assert.match(String(png.headers['content-security-policy']), /^sandbox;/);
  });

  it('knows its names: loopback, --host, --allow-host, and any IP address when listening on every address', () => {
    const check = (guard: RequestGuard, host: string) =>
      guard.check({ method: 'GET', host, origin: undefined })?.code ?? 'ok';
    const loopback = new RequestGuard({ host: '127.0.0.1' });
    assert.equal(check(loopback, '192.168.1.5:8470'), 'bad_host');
    assert.equal(check(loopback, 'sim.localhost:8470'), 'ok', 'RFC 6761: .localhost is loopback');
    const named = new RequestGuard({ host: 'recorder.lab', allowHosts: ['other.lab'] });
    assert.equal(check(named, 'recorder.lab:8470'), 'ok');
    assert.equal(check(named, 'other.lab'), 'ok');
    assert.equal(check(named, '10.1.1.1'), 'bad_host');
    const everywhere = new RequestGuard({ host: '0.0.0.0' });
    assert.equal(check(everywhere, '192.168.1.5:8470'), 'ok');
    assert.equal(check(everywhere, '[fe80::1]:8470'), 'ok');
    assert.equal(check(everywhere, 'evil.example:8470'), 'bad_host', 'a name still has to be allowed');
    assert.throws(
      () => new RequestGuard({ host: '::', allowOrigins: ['dash'] }),
      /--allow-origin: expected an origin/,
    );
  });
});

describe('the live channel under a crafted message', () => {
  it('cuts a client whose compressed message inflates past the limit, and serves the others', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/live`);
    await new Promise((resolve) => ws.once('open', resolve));
    assert.match(ws.extensions, /^permessage-deflate/);
    const closed = new Promise<number>((resolve) => ws.on('close', (code: number) => resolve(code)));
    // 16 MiB of one byte: a few kilobytes on the wire, 256 times the 64 KiB a message may hold.
    ws.send(' '.repeat(16 * 1024 * 1024));
    assert.equal(await closed, 1009, 'closed as too big');
    const wire = (ws as unknown as { _socket: { bytesWritten: number } })._socket.bytesWritten;
    assert.ok(wire < 64 * 1024, `${wire} bytes sent: the message went compressed`);
    const health = await send('GET', '/api/health');
    assert.equal(health.status, 200, 'the server answers others');
  });
});

describe('simrec demo serves as simrec serve does', () => {
  it('honours --token, --ingest-port and --settings', async () => {
    const settings = join(dir.path, 'demo-settings.json');
    writeFileSync(settings, JSON.stringify({ recording: { recordEveryRun: false } }));
    const args = ['demo', '--duration', '1', '--vehicles', '1', '--port', '0', '--ingest-port', '0'];
    const child = spawn(
      process.execPath,
      [
        SIMREC_BIN,
        ...args,
        '--token',
        'demo-secret',
        '--settings',
        settings,
        '--store',
        join(dir.path, 'demo.db'),
      ],
      { env: { ...process.env, SIMREC_TOKEN: '', SIMREC_INGEST_TOKEN: '' } },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let viewer = '';
    let ingestLine = '';
    for await (const line of createInterface({ input: child.stdout })) {
      viewer ||= /^simrec viewer: (http:\/\/127\.0\.0\.1:\d+\/)\?token=demo-secret#/.exec(line)?.[1] ?? '';
      if (line.startsWith('simrec ingest:')) {
        ingestLine = line;
        break;
      }
    }
    try {
      assert.ok(viewer, 'the viewer address carries the token');
      assert.match(
        ingestLine,
        /and tcp:\/\/127\.0\.0\.1:\d+ \(token required\)$/,
        'TCP ingest, behind the token',
      );
      const to = Number(new URL(viewer).port);
      assert.equal((await send('GET', '/api/runs', {}, undefined, to)).status, 401);
      const settingsAnswer = await send(
        'GET',
        '/api/settings',
        { authorization: 'Bearer demo-secret' },
        undefined,
        to,
      );
      assert.deepEqual(
        JSON.parse(settingsAnswer.body),
        { recordEveryRun: false },
        'the settings file is read',
      );
      assert.equal(await upgrade('/api/live', {}, to), '401');
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 130, 'stopped by Ctrl-C');
  });
});
