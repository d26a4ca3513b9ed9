/**
 * The viewer's Find panel (#49) in Debian's Chromium: a ready-made query over three evaluated demo runs
 * answers what the runs' events streams hold, and a click on a row opens that run at that moment with
 * the actor selected. Free SQL runs too, and a refused query says why.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { ARTIFACTS } from './helpers/browser.js';
import { closeClean, openWatchedPage, viewerSession, type WatchedPage } from './helpers/viewer-session.js';

declare const window: any;
declare const document: any;

const runs: number[] = [];
/** Every near miss of the three runs, as the store's events streams hold them: run, time, first actor. */
const nearMisses: { run: number; t: number; actor: string }[] = [];
const viewer = viewerSession(
  'viewer-find',
  async (store) => {
    for (const seed of [4, 5, 6]) {
      const { run } = await recordDemoRun(store, { duration: 30, seed });
      await evaluateRun(store, run.id);
      runs.push(run.id);
      for await (const batch of store.readSamples({ run: run.id, stream: 'events' }))
        for (const s of batch)
          if (s.kind === 'near_miss')
            nearMisses.push({ run: run.id, t: s.t, actor: (s.actors as string[])[0]! });
    }
  },
  (dir) => ({ settingsFile: join(dir, 'settings.json'), tablesFolder: join(dir, 'find.tables') }),
);

const openPage = (hash: string): Promise<WatchedPage> =>
  openWatchedPage(viewer.browser, new URL(hash, viewer.server.url).toString());

describe('the Find panel', () => {
  it('lists the near misses of three runs and opens one at its moment with its actor selected', async () => {
    assert.ok(nearMisses.length >= 2, `the demo runs have near misses (${nearMisses.length})`);
    assert.ok(new Set(nearMisses.map((n) => n.run)).size >= 2, 'in more than one run');
    const page = await openPage('/');
    await page.click('[data-testid="nav-find"]');
    await page.click('[data-testid="find-preset-near_misses"]');
    await page.waitForSelector('[data-testid="find-status"][data-state="done"]');
    const rows = await page.$$eval('[data-testid="find-row"]', (trs) =>
      trs.map((tr) => ({
        href: (tr as unknown as { dataset: { href?: string } }).dataset.href ?? '',
        cells: tr.children.length,
      })),
    );
    assert.equal(rows.length, nearMisses.length);
    const expected = [...nearMisses].sort((a, b) => a.run - b.run || a.t - b.t);
    assert.deepEqual(
      rows.map((r) => r.href),
      expected.map((n) => `#/runs/${n.run}?at=${n.t}&actor=${encodeURIComponent(n.actor)}`),
    );
    await page.screenshot({ path: join(ARTIFACTS, 'find-near-misses.png') });
    // The question is in the address: a reload asks it again.
    assert.match(page.url(), /#\/find\?q=SELECT/);

    const pick = expected[expected.length - 1]!;
    await page
      .locator('[data-testid="find-row"]')
      .nth(rows.length - 1)
      .click();
    await page.waitForFunction(
      () => document.getElementById('app')?.dataset.ready === 'true' && window.simrecView,
    );
    await page.waitForFunction((t) => window.simrecView?.timeline?.t === t, pick.t);
    assert.equal(await page.evaluate(() => window.simrecView.selected), pick.actor);
    assert.match(page.url(), new RegExp(`#/runs/${pick.run}\\?`));
    await page.screenshot({ path: join(ARTIFACTS, 'find-opened.png') });
    await closeClean(page);
  });

  it('runs free SQL, and a refused query says why', async () => {
    const page = await openPage('/#/find');
    await page.fill(
      '[data-testid="find-sql"]',
      'SELECT run, count(*) AS n FROM state GROUP BY run ORDER BY run',
    );
    await page.click('[data-testid="find-run"]');
    await page.waitForSelector('[data-testid="find-status"][data-state="done"]');
    const cells = await page.$$eval('[data-testid="find-row"] td:first-child', (tds) =>
      tds.map((td) => Number(td.textContent)),
    );
    assert.deepEqual(cells, runs);
    await page.fill('[data-testid="find-sql"]', "SELECT * FROM read_csv('/etc/passwd')");
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('[data-testid="find-status"][data-state="error"]');
    assert.match(
      (await page.textContent('[data-testid="find-status"]')) ?? '',
      /Cannot access file "\/etc\/passwd"/,
    );
    assert.equal(await page.locator('[data-testid="find-row"]').count(), 0);
    await page.close();
  });
});
