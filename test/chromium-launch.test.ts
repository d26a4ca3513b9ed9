/**
 * Chromium as the browser tests and the benchmark launch it (bench/chromium.ts): the features it is told
 * to disable reach it whole, and a new context's window builds none of the browser's own pages.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchBrowser } from './helpers/browser.js';

interface ChromiumProcess {
  pid: number;
  parent: number;
  args: string[];
}

/** Every process of this machine with its parent and arguments (Linux's /proc). */
function processes(): ChromiumProcess[] {
  const found: ChromiumProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      // The parent is the second field after the command's closing parenthesis.
      const parent = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      found.push({ pid: Number(entry), parent, args });
    } catch {
      // The process ended while being read.
    }
  }
  return found;
}

/** The browser process this test launched and every process below it. */
function ourChromium(): { browser: ChromiumProcess; tree: ChromiumProcess[] } {
  const all = processes();
  const browser = all.find(
    (p) => p.parent === process.pid && p.args.some((a) => a === '--remote-debugging-pipe'),
  );
  assert.ok(browser, 'no Chromium started by this process');
  const tree: ChromiumProcess[] = [];
  const below = new Set([browser.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all)
      if (below.has(p.parent) && !below.has(p.pid)) {
        below.add(p.pid);
        tree.push(p);
        grew = true;
      }
  }
  return { browser, tree };
}

describe('Chromium as the tests and the benchmark run it', () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser.close();
  });

  it('is given one --disable-features that holds every feature playwright-core disables', () => {
    // Chromium keeps the last of a repeated switch: names only in an earlier one are not disabled.
    const lists = ourChromium()
      .browser.args.filter((a) => a.startsWith('--disable-features='))
      .map((a) => a.slice('--disable-features='.length).split(','));
    assert.ok(lists.length >= 1, 'no --disable-features');
    const kept = new Set(lists.at(-1));
    const dropped = lists.flat().filter((name) => !kept.has(name));
    assert.deepEqual(dropped, [], 'features named in an earlier --disable-features, which Chromium drops');
    assert.ok(kept.has('PaintHolding') && kept.has('WebUIOmniboxPopup'), [...kept].join(','));
  });

  it("opens a new context's page without a renderer for the browser's own pages", async () => {
    for (let k = 0; k < 2; k++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto('data:text/html,<p>a page</p>');
      // The address bar's popup was built in its own renderer a few hundred ms after the window opened.
      await page.waitForTimeout(1500);
      // A zygote's children rewrite their command line as one string: matched as text.
      const browserPages = ourChromium().tree.filter((p) => {
        const line = p.args.join(' ');
        return line.includes('--type=renderer') && line.includes('top-chrome');
      });
      assert.deepEqual(
        browserPages.map((p) => p.args.join(' ')),
        [],
        "renderers of the browser's own pages (top-chrome)",
      );
      await context.close();
    }
  });
});
