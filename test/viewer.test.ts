/**
 * The viewer in a real browser: Debian's Chromium driven by playwright-core, against a real server
 * over a real SQLite store. Screenshots go to test-artifacts/.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import { openStore } from '../src/store/open-store.js';
import { ARTIFACTS, launchBrowser } from './helpers/browser.js';
import { along, LANE_RUN_BEGIN, recordLaneRun } from './helpers/lane-run.js';
import { fixture, tempDir } from './helpers/paths.js';
import type { RoadNetwork } from '../src/model/roadnet.js';

// These run inside the page (page.evaluate); the Node compilation has no DOM types, on purpose.
declare const window: any;
declare const document: any;

const dir = tempDir('simrec-viewer-');
let store: StoreBackend;
let server: RunningServer;
let browser: Browser;
let laneRun: { runId: number; net: RoadNetwork; lanes: string[] };
let synthetic: number;

before(async () => {
  store = await openStore(join(dir.path, 'viewer.db'));
  synthetic = (await recordSyntheticRun(store, { duration: 30 })).id;
  await evaluateRun(store, synthetic);
  laneRun = await recordLaneRun(store, fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'));
  server = await startServer({ store, port: 0, liveIntervalMs: 200 });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.close();
  await store?.close();
  dir.cleanup();
});

/** What the server's Content-Security-Policy refused, on any page: the viewer must need nothing it forbids. */
const cspViolations: string[] = [];

async function openPage(hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(`${hash}: ${m.text()}`);
  });
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(new URL(hash, server.url).toString());
  return page;
}

/** The RGB of the map canvas at a world position, zoomed in there as a user would (10 px a metre). */
async function pixelAt(page: Page, x: number, y: number): Promise<[number, number, number]> {
  return page.evaluate(
    ([wx, wy]) => {
      const view = window.simrecView;
      view.map.scale = 10;
      view.map.center = { x: wx, y: wy };
      view.map.draw();
      const p = view.map.toScreen(wx!, wy!);
      const ratio = window.devicePixelRatio || 1;
      const data = view.map.canvas
        .getContext('2d')!
        .getImageData(Math.round(p.x * ratio), Math.round(p.y * ratio), 1, 1).data;
      return [data[0]!, data[1]!, data[2]!] as [number, number, number];
    },
    [x, y],
  );
}

const timeLabel = async (page: Page): Promise<number> =>
  Number((await page.getByTestId('time').textContent())!.split(' / ')[0]);

describe('viewer in Chromium', () => {
  it('lists runs, filters them, and opens one', async () => {
    const page = await openPage('#/');
    await page.getByTestId('run-table').locator(`tr[data-run="${synthetic}"]`).waitFor();
    assert.equal(await page.locator('tbody tr[data-run]').count(), 2);
    await page.getByTestId('run-search').fill('ring road');
    assert.equal(await page.locator('tbody tr[data-run]').count(), 1);
    await page.getByTestId('filter-simulator').selectOption('lane-run');
    assert.match((await page.locator('tbody').textContent())!, /No run matches the filters/);
    await page.getByTestId('run-search').fill('');
    await page.screenshot({ path: join(ARTIFACTS, 'run-list.png') });
    await page.locator(`tr[data-run="${laneRun.runId}"] a`).click();
    await page.locator('#app[data-ready="true"]').waitFor();
    // The address soon keeps the moment too (`?t=0.00`, written 200 ms after the last change).
    assert.match(page.url(), new RegExp(`#/runs/${laneRun.runId}(\\?t=0\\.00)?$`));
    await expectConnected(page);
    await page.close();
  });

  it('draws the road and the actors where they are, the ego in orange', async () => {
    const page = await openPage(`#/runs/${laneRun.runId}`);
    await page.locator('#app[data-ready="true"]').waitFor();
    await page.getByTestId('follow').uncheck();
    await page.getByTestId('trails').uncheck();
    const lane = laneRun.net.lanes.find((l) => l.id === laneRun.lanes[0])!;
    const ego = along(lane.centerLine, 5);
    const [r, g, b] = await pixelAt(page, ego.x, ego.y);
    assert.ok(r > 180 && g > 60 && g < 110 && b < 40, `ego pixel is orange, got ${[r, g, b]}`);
    // The ego's lane 10 m ahead of it, clear of every actor: road grey.
    const p = along(lane.centerLine, 15);
    const road = await pixelAt(page, p.x, p.y);
    assert.ok(
      Math.abs(road[0] - 0x4a) < 12 && Math.abs(road[1] - 0x50) < 12 && Math.abs(road[2] - 0x55) < 12,
      `road pixel, got ${road}`,
    );
    // Far outside the network: background.
    const bg = await pixelAt(page, laneRun.net.boundary.max[0] + 50, laneRun.net.boundary.max[1] + 50);
    assert.deepEqual(bg, [0x1e, 0x23, 0x26]);
    await page.evaluate(
      ([x, y]) => {
        window.simrecView.map.scale = 4;
        window.simrecView.map.center = { x, y };
        window.simrecView.map.draw();
      },
      [ego.x, ego.y],
    );
    await page.screenshot({ path: join(ARTIFACTS, 'run-view.png') });
    assert.deepEqual((page as Page & { errors: string[] }).errors, []);
    await page.close();
  });

  it('plays, pauses, steps and scrubs', async () => {
    const page = await openPage(`#/runs/${synthetic}`);
    await page.locator('#app[data-ready="true"]').waitFor();
    await page.getByTestId('speed').selectOption('5');
    // The page's own clock from before play to after pause: on a loaded machine the clicks themselves
    // can take a second, which a bound on the run's time alone took for playing too fast.
    const before = await page.evaluate(() => performance.now());
    await page.getByTestId('play').click();
    await page.waitForTimeout(1000);
    await page.getByTestId('play').click();
    const elapsed = ((await page.evaluate(() => performance.now())) - before) / 1000;
    const played = await timeLabel(page);
    assert.ok(
      played > 2 && played <= 5 * elapsed + 0.5,
      `5x for ${elapsed.toFixed(2)} s of the page's time moves 2 to ${(5 * elapsed + 0.5).toFixed(1)} s, got ${played}`,
    );
    await page.getByTestId('step-forward').click();
    assert.ok(Math.abs((await timeLabel(page)) - played - 0.1) < 0.011, 'one step is one 10 Hz sample');
    await page.getByTestId('scrub').fill('500');
    assert.ok(Math.abs((await timeLabel(page)) - 15) < 0.05, 'the middle of a 30 s run');
    const frames = await page.evaluate(
      () => (window.simrecView as unknown as { framesDrawn: number }).framesDrawn,
    );
    assert.ok(frames > 20, `playback drew ${frames} frames`);
    await page.close();
  });

  it('selects an actor and shows every field of its state at the cursor', async () => {
    const page = await openPage(`#/runs/${laneRun.runId}`);
    await page.locator('#app[data-ready="true"]').waitFor();
    await page.getByTestId('follow').uncheck();
    await page.getByTestId('scrub').fill('500');
    const lane = laneRun.net.lanes.find((l) => l.id === laneRun.lanes[1])!;
    const car = along(lane.centerLine, 5 + 50 * 0.2);
    const screen = await page.evaluate(
      ([x, y]) =>
        (
          window.simrecView as unknown as {
            map: { toScreen(x: number, y: number): { x: number; y: number } };
          }
        ).map.toScreen(x!, y!),
      [car.x, car.y],
    );
    await page.getByTestId('map').click({ position: { x: screen.x, y: screen.y } });
    const inspector = page.getByTestId('inspector');
    await inspector.getByText('car1').waitFor();
    await inspector.getByText('speed').waitFor();
    assert.match((await inspector.textContent())!, /x-?\d+(\.\d+)? my-?\d+(\.\d+)? myaw/);
    await page.close();
  });

  it('plots a stream field, and says what a run lacks', async () => {
    const page = await openPage(`#/runs/${synthetic}`);
    await page.locator('#app[data-ready="true"]').waitFor();
    await page.getByTestId('plot-search').fill('ego state speed');
    await page.locator('[data-testid="plot-option"][data-key="ego/state:speed"]').click();
    await page.locator('[data-testid="plot"] canvas').waitFor();
    const notes = (await page.getByTestId('notes').textContent())!;
    assert.match(notes, /no road network/);
    assert.match((await page.getByTestId('captures').textContent())!, /No captures in this run/);
    // The evaluation: LimSim's radar, and its events marked on the timeline.
    await page.getByTestId('radar').waitFor();
    assert.ok((await page.getByTestId('event-mark').count()) > 0, 'events are marked on the timeline');
    assert.match(
      (await page.getByTestId('event-mark').first().getAttribute('title'))!,
      /(collision|near_miss) ego/,
    );
    await page.screenshot({ path: join(ARTIFACTS, 'plot.png') });
    await page.close();
  });

  it('shows a 404 page with a way back for an unknown run', async () => {
    const page = await openPage('#/runs/987654');
    await page.getByTestId('not-found').waitFor();
    assert.match(
      (await page.getByTestId('not-found').textContent())!,
      /Run 987654 not found.*back to the runs/s,
    );
    await page.close();
  });

  it('shows a run being recorded as it grows, and when it ends', async () => {
    const page = await openPage('#/');
    await page.locator('tbody tr[data-run]').first().waitFor();
    const rec = await RunRecorder.begin(store, {
      simulator: { name: 'live-sim' },
      description: 'live',
      begin: LANE_RUN_BEGIN,
    });
    await rec.declareActor({ id: 'a', kind: 'vehicle' });
    await rec.declareStream(stateStream('a'));
    const row = page.locator(`tr[data-run="${rec.id}"]`);
    await row.locator('.live-badge').waitFor();
    for (let i = 0; i < 30; i++)
      await rec.append('a/state', { t: LANE_RUN_BEGIN + i * 100_000, step: i, x: i, y: 0, yaw: 0 });
    await page.waitForFunction(
      (id) => document.querySelector(`tr[data-run="${id}"]`)?.textContent?.includes('30'),
      rec.id,
    );
    await rec.end('user_request');
    await row.getByText('stopped by the user').waitFor();
    await page.close();
  });

  it('the record-every-run switch reaches the server, and other viewers', async () => {
    const page = await openPage('#/');
    const other = await openPage('#/');
    await expectConnected(page);
    await expectConnected(other);
    const box = page.getByTestId('record-every-run');
    await page.waitForFunction(() => document.getElementById('record-every-run').checked === true);
    await box.uncheck();
    await other.waitForFunction(() => document.getElementById('record-every-run').checked === false);
    assert.equal(server.settings.get().recordEveryRun, false);
    await box.check();
    await other.waitForFunction(() => document.getElementById('record-every-run').checked === true);
    await page.close();
    await other.close();
  });

  it('works with a token-guarded server when opened from the address it prints', async () => {
    const guarded = await startServer({ store, port: 0, apiToken: 'viewer-token' });
    try {
      const page = await browser.newPage();
      await page.goto(new URL('?token=viewer-token#/', guarded.url).toString());
      await page.locator('tbody tr[data-run]').first().waitFor();
      await expectConnected(page);
      await page.close();
    } finally {
      await guarded.close();
    }
  });

  it('says when the server goes away, and reconnects when it is back', async () => {
    const page = await openPage('#/');
    await expectConnected(page);
    const port = new URL(server.url).port;
    await server.close();
    await page.waitForFunction(
      () => document.getElementById('store-status')?.dataset.state === 'disconnected',
    );
    server = await startServer({ store, port: Number(port), liveIntervalMs: 200 });
    await expectConnected(page);
    await page.close();
  });

  it("needs nothing its server's Content-Security-Policy forbids (no inline scripts or style attributes)", () => {
    assert.deepEqual(cspViolations, []);
  });
});

async function expectConnected(page: Page): Promise<void> {
  await page.waitForFunction(
    () => document.getElementById('store-status')?.dataset.state === 'connected',
    undefined,
    { timeout: 10_000 },
  );
}
