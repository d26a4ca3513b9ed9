/**
 * The viewer's comparison of two runs (#50) in Debian's Chromium: opened from the `viewerPath` that
 * `simrec diff` gives, both runs named, the first divergence marked on the timeline, run B's actors
 * drawn over run A's, a field of the selected actor plotted for both, and a click on a listed
 * divergence moving the time and selecting its actor. Runs: LimSim's sample database, and a copy with
 * one vehicle moved from a frame on.
 */
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { diffRuns } from '../src/compare/run-diff.js';
import type { RunDiff } from '../src/compare/diff-types.js';
import { importRecording } from '../src/record/import-run.js';
import { ARTIFACTS } from './helpers/browser.js';
import { LIMSIM_FIXTURE } from './helpers/limsim-files.js';
import { viewerSession } from './helpers/viewer-session.js';

declare const window: any;
declare const document: any;

let diff: RunDiff;
let a: number;
let b: number;
const viewer = viewerSession(
  'viewer-diff',
  async (store, dir) => {
    a = (await importRecording(store, 'limsim', LIMSIM_FIXTURE)).runs[0]!.id;
    const copy = join(dir, 'moved.db');
    copyFileSync(LIMSIM_FIXTURE, copy);
    const db = new Database(copy);
    db.prepare("UPDATE frameINFO SET x = x + 3, speed = speed + 1 WHERE vid = '41' AND frame >= 710").run();
    db.close();
    b = (await importRecording(store, 'limsim', copy)).runs[0]!.id;
    diff = await diffRuns(store, a, b);
  },
  (dir) => ({ settingsFile: join(dir, 'settings.json') }),
);

describe('the viewer compares two runs', () => {
  it('opens at the first divergence from viewerPath, names both runs, marks it, and lists the divergences', async () => {
    const first = diff.firstDivergence!;
    assert.equal(first.actor, '41');
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(new URL(diff.viewerPath, viewer.server.url).toString());
    await page.waitForFunction(() => document.getElementById('app')?.dataset.ready === 'true');
    await page.waitForSelector('[data-testid="divergence"]');
    assert.equal(await page.textContent('.run-title h1'), `Run ${a} compared with run ${b}`);
    assert.match(
      (await page.textContent('[data-testid="compare"] h3')) ?? '',
      new RegExp(`Compared with run ${b}`),
    );
    assert.match(
      (await page.textContent('[data-testid="compare-summary"]')) ?? '',
      new RegExp(`Runs ${a} and ${b} differ: first at 71\\.00 s, 41 41/state`),
    );
    // Opened at the first divergence, its actor selected.
    assert.equal(await page.evaluate(() => window.simrecView.timeline.t), first.t);
    assert.equal(await page.evaluate(() => window.simrecView.selected), '41');
    // The first divergence marked on the timeline, where its time falls.
    const mark = await page.$eval('[data-testid="divergence-mark"]', (m: any) => ({
      left: m.style.left,
      title: m.title,
    }));
    const { begin, end } = await page.evaluate(() => ({
      begin: window.simrecView.timeline.begin,
      end: window.simrecView.timeline.end,
    }));
    assert.ok(Math.abs(parseFloat(mark.left) - ((first.t - begin) / (end - begin)) * 100) < 0.01, mark.left);
    assert.match(mark.title, /first divergence: 41 41\/state/);
    // Run B's actors drawn over A's: the moved vehicle 3 m off its A position.
    await page.waitForFunction(() => (window.simrecView.map.state?.ghosts?.size ?? 0) > 0);
    const ghost = await page.evaluate(() => {
      const s = window.simrecView.map.state;
      return { a: s.poses.get('41'), b: s.ghosts.get('41') };
    });
    assert.ok(Math.abs(ghost.b.x - ghost.a.x - 3) < 0.01, JSON.stringify(ghost));
    // The selected actor's differing field plotted for both runs.
    await page.waitForFunction(() => window.simrecView.compare.plotted !== null);
    const plotted = await page.evaluate(() => window.simrecView.compare.plotted);
    assert.equal(plotted.actor, '41');
    assert.ok(plotted.a > 10 && plotted.b > 10, JSON.stringify(plotted));
    const fields = await page.$$eval('[data-testid="compare-field"] option', (os: any[]) =>
      os.map((o) => o.value),
    );
    assert.ok(fields.includes('speed') && fields.includes('x'), fields.join());
    await page.screenshot({ path: join(ARTIFACTS, 'viewer-diff.png') });

    // A click on a listed divergence moves the time and selects its actor.
    await page.evaluate(() => window.simrecView.timeline.seek(window.simrecView.timeline.begin));
    const rows = page.locator('[data-testid="divergence"]');
    const count = await rows.count();
    assert.equal(count, diff.divergences.length);
    const target = diff.divergences[count - 1]!;
    await rows.nth(count - 1).click();
    await page.waitForFunction((t) => window.simrecView.timeline.t === t, target.t);
    assert.equal(await page.evaluate(() => window.simrecView.selected), target.actor);
    assert.match(page.url(), new RegExp(`#/diff/${a}/${b}\\?`), 'the address stays the comparison');
    assert.deepEqual(errors, []);
    await page.close();
  });
});
