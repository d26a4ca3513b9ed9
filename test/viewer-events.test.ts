/**
 * The viewer on a run of many events (#53), in Chromium: a long run's evaluation finds tens of
 * thousands of them (every actor blocked at every queue), and the page keeps only the rows of the list
 * in view and one mark per kind and slider step, while every event stays reachable by scrolling, by
 * the keyboard and by the filters. A long run of camera images gets one tick per slider step too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { encodePng } from '../src/formats/common/labelled-images/image-files.js';
import { EVENT_FIELDS } from '../src/evaluate/evaluation-storage.js';
import { EVENTS_STREAM } from '../src/model/evaluation-scores.js';
import type { Sample } from '../src/model/stream.js';
import { writeDerivedStream } from '../src/record/derived-streams.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { closeClean, openWatchedPage, viewerSession, type WatchedPage } from './helpers/viewer-session.js';

// These run inside the page (page.evaluate); the Node compilation has no DOM types, on purpose.
declare const window: any;
declare const document: any;

const EVENTS = 20_000;
const KINDS = ['blocked', 'near_miss', 'speeding'];
/** The rows a list may keep in the page: what 130 px show, and 40 above and below (event-list.ts). */
const MOST_ROWS = 7 + 2 * 40;

const CAPTURES = 3_000;

let run: number;
let begin: number;
let events: Sample[];
let camera: number;
const viewer = viewerSession('viewer-events', async (store) => {
  run = (await recordDemoRun(store, { duration: 120, vehicles: 8, seed: 11 })).run.id;
  const info = (await store.getRun(run))!;
  begin = info.begin;
  const span = info.end! - info.begin;
  events = Array.from({ length: EVENTS }, (_, i) => ({
    t: begin + Math.floor((i * span) / EVENTS),
    step: i,
    kind: KINDS[i % KINDS.length]!,
    actors: [`veh${i % 8}`],
    x: i % 100,
    y: 0,
    duration: 1,
    detail: `event ${i}`,
  }));
  await writeDerivedStream(store, run, { name: EVENTS_STREAM, fields: EVENT_FIELDS }, events);
  // A camera's images at 30 Hz for 100 s: three a slider step.
  const rec = await RunRecorder.begin(store, { simulator: { name: 'camera' }, begin });
  await rec.declareActor({ id: 'cam', kind: 'sensor' });
  const png = encodePng(4, 4, 3, new Uint8Array(4 * 4 * 3).fill(120));
  for (let i = 0; i < CAPTURES; i++)
    await rec.attach({
      name: `frames/${i}.png`,
      mediaType: 'image/png',
      t: begin + Math.round((i * 1e6) / 30),
      data: png,
      metadata: { capture: String(i), sensor: 'cam' },
    });
  camera = (await rec.end('completed', { end: begin + 100_000_000 })).id;
});

async function openEvents(): Promise<WatchedPage> {
  const page = await openWatchedPage(viewer.browser, new URL(`#/runs/${run}`, viewer.server.url).toString(), {
    ready: true,
  });
  await page.getByTestId('event-filter').first().waitFor();
  return page;
}

const timeLabel = async (page: Page): Promise<number> =>
  Number((await page.getByTestId('time').textContent())!.split(' / ')[0]);

/** The details of the event rows the list shows whole, top to bottom. */
const rowsInView = (page: Page): Promise<string[]> =>
  page.evaluate(() => {
    const list = document.querySelector('[data-testid="events"]');
    const box = list.getBoundingClientRect();
    return [...list.querySelectorAll('[data-testid="event-row"]')]
      .filter((row: any) => {
        const r = row.getBoundingClientRect();
        return r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
      })
      .map((row: any) => row.querySelector('.detail').textContent);
  });

const scrollEventsTo = (page: Page, where: 'top' | 'bottom' | number): Promise<void> =>
  page.evaluate((to) => {
    const list = document.querySelector('[data-testid="events"]');
    list.scrollTop = to === 'top' ? 0 : to === 'bottom' ? list.scrollHeight : to;
    list.dispatchEvent(new window.Event('scroll'));
  }, where);

describe('viewer: a run of many events (#53)', () => {
  it('keeps a hundred rows and a mark per kind and slider step in the page, of twenty thousand events', async () => {
    const page = await openEvents();
    const filters = await page
      .getByTestId('event-filter')
      .evaluateAll((boxes: any[]) => boxes.map((b) => b.parentElement.textContent.trim()));
    assert.deepEqual(
      filters,
      KINDS.map((kind) => `${kind} (${events.filter((e) => e.kind === kind).length})`),
    );
    const rows = await page.getByTestId('event-row').count();
    assert.ok(rows > 0 && rows <= MOST_ROWS, `${rows} rows in the page`);
    assert.deepEqual((await rowsInView(page)).slice(0, 3), [
      'event 0 (1 s)',
      'event 1 (1 s)',
      'event 2 (1 s)',
    ]);
    // The list scrolls over every event: its height is theirs.
    const heights = await page.evaluate(() => {
      const list = document.querySelector('[data-testid="events"]');
      const row = list.querySelector('[data-testid="event-row"]');
      return { scroll: list.scrollHeight, row: row.getBoundingClientRect().height };
    });
    assert.equal(heights.scroll, EVENTS * heights.row);
    // Marks: one per kind and slider step, standing for every event.
    const marks = await page
      .getByTestId('event-mark')
      .evaluateAll((all: any[]) =>
        all.map((m) => ({ kind: m.dataset.kind, count: Number(m.dataset.count) })),
      );
    assert.ok(marks.length <= KINDS.length * 1001, `${marks.length} marks`);
    for (const kind of KINDS)
      assert.equal(
        marks.filter((m) => m.kind === kind).reduce((sum, m) => sum + m.count, 0),
        events.filter((e) => e.kind === kind).length,
        `${kind}: the marks count every event`,
      );
    await closeClean(page);
  });

  it('shows the last event at the bottom of the list and a click there picks it', async () => {
    const page = await openEvents();
    await scrollEventsTo(page, 'bottom');
    await page.waitForFunction(
      (detail) =>
        [...document.querySelectorAll('[data-testid="event-row"] .detail')].some(
          (d: any) => d.textContent === detail,
        ),
      `event ${EVENTS - 1} (1 s)`,
    );
    const shown = await rowsInView(page);
    assert.equal(shown.at(-1), `event ${EVENTS - 1} (1 s)`);
    assert.ok((await page.getByTestId('event-row').count()) <= MOST_ROWS);
    const last = events.at(-1)!;
    await page.locator(`[data-testid="event-row"][data-index="${EVENTS - 1}"]`).click();
    assert.equal(await timeLabel(page), Number(((last.t - begin) / 1e6).toFixed(2)));
    // A row in the middle, scrolled to: the rows there are drawn, in order.
    await scrollEventsTo(page, 10_000 * 20);
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[data-testid="event-row"] .detail')].some(
        (d: any) => d.textContent === 'event 10000 (1 s)',
      ),
    );
    assert.equal((await rowsInView(page))[0], 'event 10000 (1 s)');
    await closeClean(page);
  });

  it('moves between rows with the arrow keys past the rows drawn, and Enter picks', async () => {
    const page = await openEvents();
    await page.locator('[data-testid="event-row"][data-index="0"]').focus();
    for (let i = 0; i < 60; i++) await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset?.index), '60');
    assert.ok((await rowsInView(page)).includes('event 60 (1 s)'), 'the focused row is in view');
    await page.keyboard.press('Enter');
    assert.equal(await timeLabel(page), Number(((events[60]!.t - begin) / 1e6).toFixed(2)));
    for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowUp');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset?.index), '55');
    await closeClean(page);
  });

  it('filters a kind out of a long list: the rest scroll whole, the last of them at the bottom', async () => {
    const page = await openEvents();
    await page.locator('[data-testid="event-filter"][data-kind="near_miss"]').uncheck();
    const rest = events.filter((e) => e.kind !== 'near_miss');
    const height = await page.evaluate(() => document.querySelector('[data-testid="events"]').scrollHeight);
    assert.equal(height, rest.length * 20);
    assert.deepEqual(
      new Set(
        await page.getByTestId('event-row').evaluateAll((all: any[]) => all.map((r) => r.dataset.kind)),
      ),
      new Set(['blocked', 'speeding']),
    );
    await scrollEventsTo(page, 'bottom');
    await page.waitForFunction(
      (detail) =>
        [...document.querySelectorAll('[data-testid="event-row"] .detail')].some(
          (d: any) => d.textContent === detail,
        ),
      `${rest.at(-1)!.detail} (1 s)`,
    );
    assert.equal((await rowsInView(page)).at(-1), `${rest.at(-1)!.detail} (1 s)`);
    assert.equal(
      await page.locator('[data-testid="event-mark"][data-kind="near_miss"]').count(),
      0,
      'its marks go too',
    );
    await closeClean(page);
  });

  it('puts a tick under the track for each slider step that holds captures, not one per image', async () => {
    const page = await openWatchedPage(
      viewer.browser,
      new URL(`#/runs/${camera}`, viewer.server.url).toString(),
      { ready: true },
    );
    await page.locator('.capture-strip .capture-tick').first().waitFor();
    const ticks = await page
      .locator('.capture-strip .capture-tick')
      .evaluateAll((all: any[]) => all.map((tick) => parseFloat(tick.style.left)));
    // 3,000 images over 1,000 steps, the first at 0 % and the last at 99.97 %: a tick a step, at its
    // first image.
    assert.ok(ticks.length >= 990 && ticks.length <= 1001, `${ticks.length} ticks`);
    assert.equal(Math.min(...ticks), 0);
    assert.ok(Math.max(...ticks) >= 99.89, `the last part of the run has its tick: ${Math.max(...ticks)} %`);
    await closeClean(page);
  });

  it("shows the image at the cursor from windows of the run's images, which the detail does not list", async () => {
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } });
    const asked: string[] = [];
    const details: string[] = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname + new URL(r.url()).search));
    page.on('response', async (r) => {
      if (/\/api\/runs\/\d+\?/.test(r.url())) details.push(await r.text());
    });
    try {
      await page.goto(new URL(`#/runs/${camera}?t=50`, viewer.server.url).toString());
      const caption = page.locator('.capture-caption');
      await page.waitForFunction(() =>
        /frames\/1500\.png$/.test(document.querySelector('.capture-caption')?.textContent ?? ''),
      );
      assert.match((await caption.textContent())!, /· 50\.00 s · frames\/1500\.png$/);
      assert.ok(
        details.length > 0 && details.every((d) => !d.includes('frames/')),
        'the detail lists no image',
      );
      assert.ok(
        asked.some((p) => p.startsWith(`/api/runs/${camera}/captures?`)),
        'a window of images asked',
      );
      // Within the window: no new request; before it: the next window.
      const windows = (): number => asked.filter((p) => p.includes('/captures?')).length;
      const before = windows();
      const seek = (s: number) =>
        page.evaluate(
          (sec) => window.simrecView.timeline.seek(window.simrecView.timeline.begin + sec * 1e6),
          s,
        );
      await seek(90);
      await page.waitForFunction(() =>
        /frames\/2700\.png$/.test(document.querySelector('.capture-caption')?.textContent ?? ''),
      );
      assert.equal(windows(), before, 'the image at 90 s was in the window kept');
      await seek(10.02);
      await page.waitForFunction(() =>
        /frames\/300\.png$/.test(document.querySelector('.capture-caption')?.textContent ?? ''),
      );
      assert.equal(windows(), before + 1);
    } finally {
      await page.close();
    }
  });
});
