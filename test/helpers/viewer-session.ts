import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { StoreBackend } from '../../src/model/store-port.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/start-server.js';
import { openStore } from '../../src/store/open-store.js';
import { launchBrowser } from './browser.js';
import { tempDir } from './paths.js';

/** What a file of Chromium tests of the viewer works with: a store, a server over it, the browser. */
export interface ViewerSession {
  /** A folder of the file's own, removed after its tests. */
  readonly dir: string;
  store: StoreBackend;
  server: RunningServer;
  browser: Browser;
}

/**
 * A store in a folder of its own, filled by `prepare`, a server over it and Chromium: made before the
 * file's tests, closed after them (what every viewer test file did by hand).
 */
export function viewerSession(
  name: string,
  prepare: (store: StoreBackend, dir: string) => Promise<void>,
  serverOptions: (dir: string) => Omit<ServerOptions, 'store' | 'port'> = () => ({}),
): ViewerSession {
  const dir = tempDir(`simrec-${name}-`);
  const session = { dir: dir.path } as ViewerSession;
  before(async () => {
    session.store = await openStore(join(dir.path, `${name}.db`));
    await prepare(session.store, dir.path);
    session.server = await startServer({ store: session.store, port: 0, ...serverOptions(dir.path) });
    session.browser = await launchBrowser();
  });
  after(async () => {
    // Each may be missing: a `before` that failed half-way still leaves the rest to close.
    await session.browser?.close();
    await session.server?.close();
    await session.store?.close();
    dir.cleanup();
  });
  return session;
}

/** A page that keeps the errors thrown in it, for `closeClean` to check. */
export type WatchedPage = Page & { errors: string[] };

/**
 * A new page of `browser` at `url`, its errors kept; for a run's page (`ready`), once the run's view
 * says it is ready (its panels in).
 */
export async function openWatchedPage(
  browser: Browser,
  url: string,
  { ready = false, viewport = { width: 1280, height: 800 } } = {},
): Promise<WatchedPage> {
  const page = (await browser.newPage({ viewport })) as WatchedPage;
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(url);
  if (ready) await page.locator('#app[data-ready="true"]').waitFor();
  return page;
}

/** Closes a page, failing the test if anything was thrown in it. */
export async function closeClean(page: WatchedPage): Promise<void> {
  assert.deepEqual(page.errors, [], 'no errors in the page');
  await page.close();
}
