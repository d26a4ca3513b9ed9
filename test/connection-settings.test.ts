/**
 * SODA.Sim's connection and recording switches in simrec: the settings and their file, the HTTP API,
 * the status pushed to viewers, auto-connect at start, and the viewer's panel in Chromium. The failure
 * path runs for real (a MongoDB URL on a loopback port nobody listens on); the connected path needs a
 * real server (SIMREC_MONGO_URL) and is skipped by name without one.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { WebSocket } from 'ws';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { SimrecError } from '../src/model/errors.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { loadSettingsFile } from '../src/server/settings-file.js';
import type { ConnectionStatus } from '../src/record/soda-connection.js';
import { SodaConnectionSettings } from '../src/record/soda-connection-settings.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import { openStore } from '../src/store/open-store.js';
import { ARTIFACTS, launchBrowser } from './helpers/browser.js';
import { SIMREC_BIN, tempDir } from './helpers/paths.js';
import { freshMongoDatabase, MONGO_URL, skipWithoutMongo } from './mongodb-test-url.js';

// These run inside the page (page.waitForFunction); the Node compilation has no DOM types, on purpose.
declare const document: any;
declare const window: any;

const dir = tempDir('simrec-connection-');
let store: StoreBackend;

/** A loopback port that was free a moment ago: connecting to it is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves with the first status the connection reports that `accept` takes. */
function nextStatus(
  server: RunningServer,
  accept: (s: ConnectionStatus) => boolean,
): Promise<ConnectionStatus> {
  return new Promise((resolve) => {
    const current = server.mongodb.connection.status();
    if (accept(current)) return resolve(current);
    const stop = server.mongodb.connection.onChange((s) => {
      if (!accept(s)) return;
      stop();
      resolve(s);
    });
  });
}

async function call(
  server: RunningServer,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: any }> {
  const response = await fetch(new URL(path, server.url), {
    method,
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

before(async () => {
  store = await openStore(join(dir.path, 'store.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

describe('connection settings', () => {
  it("start from SODA.Sim's defaults and refuse wrong keys, types, URLs and database names", () => {
    const settings = new SodaConnectionSettings();
    assert.deepEqual(settings.get(), {
      url: 'mongodb://localhost:27017',
      database: 'sodasim',
      autoConnect: false,
    });
    const refused = (patch: unknown, pattern: RegExp): void =>
      assert.throws(
        () => settings.update(patch),
        (e: unknown) => e instanceof SimrecError && e.code === 'invalid' && pattern.test(e.message),
      );
    refused({ autoConnect: 'yes' }, /settings\.mongodb\.autoConnect: expected a boolean, got "yes"/);
    refused(
      { url: 'http://db:27017' },
      /settings\.mongodb\.url: expected mongodb:\/\/.*got "http:\/\/db:27017"/,
    );
    refused({ database: 'a.b' }, /settings\.mongodb\.database: .*got "a\.b": it contains "\."/);
    refused({ database: '' }, /it is empty/);
    refused({ port: 1 }, /settings\.mongodb\.port: unknown setting \(known: url, database, autoConnect\)/);
    refused([], /expected an object/);
    assert.equal(settings.get().url, 'mongodb://localhost:27017', 'a refused update changes nothing');
    // A replica set's URL lists several hosts.
    settings.update({ url: 'mongodb://a:27017,b:27017/?replicaSet=rs0' });
    assert.equal(settings.get().url, 'mongodb://a:27017,b:27017/?replicaSet=rs0');
  });

  it('show the URL without its password, and keep the password when the shown URL comes back', () => {
    const settings = new SodaConnectionSettings({ url: 'mongodb://alice:secret@db:27017' });
    assert.equal(settings.view().url, 'mongodb://***@db:27017');
    settings.update({ url: 'mongodb://***@db:27017', autoConnect: true });
    assert.equal(settings.get().url, 'mongodb://alice:secret@db:27017');
    settings.update({ url: 'mongodb://bob:other@db:27017' });
    assert.equal(settings.get().url, 'mongodb://bob:other@db:27017');
  });

  it('are kept in a file readable by its owner only, and read back', () => {
    const file = join(dir.path, 'kept', 'settings.json');
    const first = loadSettingsFile(file);
    assert.equal(first.recording.get().recordEveryRun, true);
    first.mongodb.update({ url: 'mongodb://alice:secret@db:27017', database: 'team', autoConnect: true });
    first.recording.update({ recordEveryRun: false });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), {
      recording: { recordEveryRun: false },
      mongodb: { url: 'mongodb://alice:secret@db:27017', database: 'team', autoConnect: true },
    });
    const second = loadSettingsFile(file);
    assert.deepEqual(second.mongodb.get(), first.mongodb.get());
    assert.equal(second.recording.get().recordEveryRun, false);
  });

  it('a malformed settings file is refused, naming the file and the field', () => {
    const file = join(dir.path, 'bad-settings.json');
    const refused = (text: string, pattern: RegExp): void => {
      writeFileSync(file, text);
      assert.throws(
        () => loadSettingsFile(file),
        (e: unknown) => e instanceof SimrecError && e.message.startsWith(file) && pattern.test(e.message),
      );
    };
    refused('{"mongodb": {"autoConnect": 1}}', /: mongodb\.autoConnect: expected a boolean, got 1/);
    refused('{"mongodb": {"url": "localhost"}}', /: mongodb\.url: expected mongodb:\/\//);
    refused('{"recording": {"recordEveryRun": "no"}}', /settings\.recordEveryRun: expected a boolean/);
    refused('{"viewer": {}}', /viewer: unknown section/);
    refused('{"mongodb":', /the settings are not JSON/);
  });
});

describe('connection API', () => {
  let server: RunningServer;
  let refused: string;
  const settingsFile = join(dir.path, 'api-settings.json');
  before(async () => {
    refused = `mongodb://alice:secret@127.0.0.1:${await closedPort()}`;
    server = await startServer({
      store,
      port: 0,
      settingsFile,
      mongodb: { serverSelectionTimeoutMS: 300 },
    });
  });
  after(async () => server.close());

  it('reads and updates the settings; a bad value is a 400 naming the field', async () => {
    const got = await call(server, 'GET', '/api/mongodb');
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.settings, {
      url: 'mongodb://localhost:27017',
      database: 'sodasim',
      autoConnect: false,
    });
    assert.equal(got.body.status.state, 'disconnected');
    const put = await call(server, 'PUT', '/api/mongodb', { url: refused, database: 'team' });
    assert.equal(put.status, 200);
    assert.equal(put.body.settings.url, refused.replace('alice:secret', '***'));
    assert.doesNotMatch(JSON.stringify(put.body), /secret/);
    assert.equal(JSON.parse(readFileSync(settingsFile, 'utf8')).mongodb.url, refused);
    const bad = await call(server, 'PUT', '/api/mongodb', { database: 'a/b' });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /settings\.mongodb\.database/);
    const notJson = await call(server, 'PUT', '/api/mongodb', '{"url":');
    assert.equal(notJson.status, 400);
    assert.match(notJson.body.error, /settings\.mongodb: the request body is not JSON/);
  });

  it('a refused connection ends in status "error" with the reason, password hidden, and viewers hear each step', async () => {
    const live = new WebSocket(new URL('/api/live', server.url.replace('http', 'ws')));
    const heard: string[] = [];
    live.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; status?: ConnectionStatus };
      if (message.type === 'mongodb') heard.push(message.status!.state);
    });
    await new Promise((resolve) => live.once('open', resolve));
    const answer = await call(server, 'POST', '/api/mongodb/connect');
    assert.equal(answer.status, 200);
    const status: ConnectionStatus = answer.body.status;
    assert.equal(status.state, 'error');
    assert.equal(status.database, 'team');
    assert.match(
      status.message!,
      /^mongodb:\/\/\*\*\*@127\.0\.0\.1:\d+: cannot connect to MongoDB: no server answered \(.*ECONNREFUSED.*\); is mongod running there/,
    );
    assert.doesNotMatch(JSON.stringify(answer.body), /secret/);
    while (heard.length < 2) await new Promise((resolve) => live.once('message', resolve));
    assert.deepEqual(heard.slice(0, 2), ['connecting', 'error']);
    live.close();
    const datasets = await call(server, 'GET', '/api/mongodb/datasets');
    assert.equal(datasets.status, 409);
    assert.match(
      datasets.body.error,
      /MongoDB: not connected \(the connection is error: .*\); connect first/,
    );
    const disconnected = await call(server, 'POST', '/api/mongodb/disconnect');
    assert.equal(disconnected.body.status.state, 'disconnected');
    assert.equal(disconnected.body.status.message, null);
    const badId = await call(server, 'POST', '/api/mongodb/datasets/x/import');
    assert.equal(badId.status, 400);
  });

  it('is behind the API token like the rest of the API', async () => {
    const guarded = await startServer({ store, port: 0, apiToken: 'tok' });
    try {
      assert.equal((await call(guarded, 'GET', '/api/mongodb')).status, 401);
      assert.equal((await call(guarded, 'POST', '/api/mongodb/connect')).status, 401);
      assert.equal(guarded.mongodb.connection.status().state, 'disconnected');
      assert.equal((await call(guarded, 'GET', '/api/mongodb', undefined, 'tok')).status, 200);
    } finally {
      await guarded.close();
    }
  });
});

describe('auto-connect at start', () => {
  it('a server whose settings say autoConnect connects as it starts', async () => {
    const file = join(dir.path, 'auto.json');
    writeFileSync(
      file,
      JSON.stringify({ mongodb: { url: `mongodb://127.0.0.1:${await closedPort()}`, autoConnect: true } }),
    );
    const server = await startServer({
      store,
      port: 0,
      settingsFile: file,
      mongodb: { serverSelectionTimeoutMS: 300 },
    });
    try {
      assert.notEqual(server.mongodb.connection.status().state, 'disconnected');
      const status = await nextStatus(server, (s) => s.state === 'error');
      assert.match(status.message!, /cannot connect to MongoDB/);
    } finally {
      await server.close();
    }
  });

  it('simrec serve --settings FILE says so on stderr', async () => {
    const file = join(dir.path, 'serve.json');
    writeFileSync(
      file,
      JSON.stringify({
        mongodb: {
          url: `mongodb://127.0.0.1:${await closedPort()}/?serverSelectionTimeoutMS=300`,
          autoConnect: true,
        },
      }),
    );
    const child = spawn(
      process.execPath,
      [SIMREC_BIN, '--store', join(dir.path, 'serve.db'), 'serve', '--port', '0', '--settings', file],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      while (!/simrec mongodb: error: /.test(stderr))
        await Promise.race([new Promise((resolve) => child.stderr.once('data', resolve)), exited]);
      assert.match(
        stderr,
        /simrec mongodb: connecting \(mongodb:\/\/127\.0\.0\.1:\d+\/\?serverSelectionTimeoutMS=300 database sodasim\)/,
      );
      assert.match(stderr, /simrec mongodb: error: .*cannot connect to MongoDB/);
    } finally {
      child.kill('SIGINT');
      await exited;
    }
  });
});

describe('connection panel in Chromium', () => {
  let server: RunningServer;
  let browser: Browser;
  let refused: string;
  const settingsFile = join(dir.path, 'viewer-settings.json');
  before(async () => {
    refused = `mongodb://127.0.0.1:${await closedPort()}`;
    server = await startServer({
      store,
      port: 0,
      settingsFile,
      liveIntervalMs: 200,
      mongodb: { serverSelectionTimeoutMS: 300 },
    });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function openPage(): Promise<Page & { errors: string[] }> {
    const page = (await browser.newPage({ viewport: { width: 1280, height: 800 } })) as Page & {
      errors: string[];
    };
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(e.message));
    await page.goto(new URL('#/', server.url).toString());
    await page.waitForFunction(() => document.getElementById('store-status')?.dataset.state === 'connected');
    return page;
  }
  const badgeState = (page: Page): Promise<string | null> =>
    page.getByTestId('mongodb-status').getAttribute('data-state');

  it('shows no MongoDB status to whoever never asked for MongoDB, only a quiet way to set it up', async () => {
    const page = await openPage();
    await page.locator('[data-testid="mongodb-status"][data-configured="false"]').waitFor();
    assert.equal(await badgeState(page), null, 'no status');
    assert.equal(await page.getByTestId('mongodb-status').textContent(), 'MongoDB…');
    const colour = await page
      .getByTestId('mongodb-status')
      .evaluate((b: any) => window.getComputedStyle(b).color);
    assert.equal(colour, 'rgb(153, 153, 170)', 'grey, not the amber of a connection that is down');
    assert.equal(existsSync(settingsFile), false, 'nothing configured, nothing saved');
    await page.close();
  });

  it('saves the settings, connects, shows the error, and other viewers follow live', async () => {
    const page = await openPage();
    const other = await openPage();
    await page.locator('[data-testid="mongodb-status"][data-configured="false"]').waitFor();
    assert.equal(await badgeState(page), null, 'nothing configured yet: no status');
    await page.getByTestId('mongodb-status').click();
    await page.getByTestId('mongodb-panel').waitFor();
    assert.equal(await page.getByTestId('mongodb-url').inputValue(), 'mongodb://localhost:27017');
    await page.getByTestId('mongodb-url').fill(refused);
    await page.getByTestId('mongodb-database').fill('team');
    await page.getByTestId('mongodb-auto-connect').check();
    await page.getByTestId('mongodb-save').click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="mongodb-message"]')?.textContent === 'disconnected',
    );
    // Configured now: the status shows, here and in the other viewer.
    assert.equal(await page.getByTestId('mongodb-status').textContent(), 'MongoDB: disconnected');
    await other.locator('[data-testid="mongodb-status"][data-state="disconnected"]').waitFor();
    assert.deepEqual(JSON.parse(readFileSync(settingsFile, 'utf8')).mongodb, {
      url: refused,
      database: 'team',
      autoConnect: true,
    });
    await page.getByTestId('mongodb-connect').click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="mongodb-status"]')?.dataset.state === 'error',
    );
    assert.match((await page.getByTestId('mongodb-message').textContent())!, /cannot connect to MongoDB/);
    assert.equal(await page.getByTestId('mongodb-status').textContent(), 'MongoDB: error');
    await other.waitForFunction(
      () => document.querySelector('[data-testid="mongodb-status"]')?.dataset.state === 'error',
    );
    // The other viewer's form follows the saved settings too.
    assert.equal(await other.getByTestId('mongodb-database').inputValue(), 'team');
    await page.screenshot({ path: join(ARTIFACTS, 'mongodb-panel.png') });
    await page.getByTestId('mongodb-disconnect').click();
    await other.waitForFunction(
      () => document.querySelector('[data-testid="mongodb-status"]')?.dataset.state === 'disconnected',
    );
    await page.getByTestId('mongodb-list').click();
    await page
      .getByTestId('mongodb-datasets')
      .getByText(/not connected/)
      .waitFor();
    assert.deepEqual(page.errors, []);
    assert.deepEqual(other.errors, []);
    await page.close();
    await other.close();
  });
});

describe('connected to a real MongoDB', { skip: skipWithoutMongo('the connected-path tests') }, () => {
  it('exports each run that finishes while connected, lists it, and imports it back', async () => {
    const location = freshMongoDatabase('simrec_connection');
    const before = await recordSyntheticRun(store, { duration: 1, rateHz: 10, vehicles: 1 });
    const server = await startServer({ store, port: 0, mongodb: { pollMs: 100 } });
    try {
      server.mongodb.settings.update({ url: MONGO_URL!, database: new URL(location).pathname.slice(1) });
      const connected = await server.mongodb.connection.connect();
      assert.equal(connected.state, 'connected', connected.message ?? '');
      const run = await recordSyntheticRun(store, { duration: 2, rateHz: 10, vehicles: 1 });
      const status = await nextStatus(server, (s) => s.exports.length > 0);
      assert.deepEqual(
        status.exports.map((e) => [e.run, e.dataset, e.collection, e.error]),
        [[run.id, 0, 'dataset0', undefined]],
        'only the run begun after the connection is exported',
      );
      assert.notEqual(status.exports[0]!.run, before.id);
      const listed = await call(server, 'GET', '/api/mongodb/datasets');
      assert.deepEqual(
        listed.body.map((d: { id: number; endReason: string }) => [d.id, d.endReason]),
        [[0, run.endReason]],
      );
      const imported = await call(server, 'POST', '/api/mongodb/datasets/0/import');
      assert.equal(imported.status, 200);
      const { id: _a, ...got } = imported.body.run;
      const { id: _b, ...want } = run;
      assert.deepEqual(got, want);
      // The imported run is not exported back.
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(server.mongodb.connection.status().exports.length, 1);
      server.settings.update({ recordEveryRun: false });
      await recordSyntheticRun(store, { duration: 1, rateHz: 10, vehicles: 1 });
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(server.mongodb.connection.status().exports.length, 1, 'record-every-run off: no export');
    } finally {
      await server.close();
    }
  });

  it('a wrong password is an authentication error, not a hang', async () => {
    const u = new URL(MONGO_URL!);
    u.username = 'simrec-no-such-user';
    u.password = 'wrong';
    const server = await startServer({ store, port: 0 });
    try {
      server.mongodb.settings.update({ url: u.toString() });
      const status = await server.mongodb.connection.connect();
      assert.equal(status.state, 'error');
      assert.match(status.message!, /authentication failed/);
      assert.doesNotMatch(status.message!, /wrong/);
    } finally {
      await server.close();
    }
  });
});
