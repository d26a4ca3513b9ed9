/**
 * The viewer on a long run of dense traffic (#53), in Chromium: a page opened at a moment asks first for
 * the binary window holding it, never for the run's begin, and draws that moment's actors as the server's
 * scene has them; the page's windows stay bounded while it is sought across the whole run; panels of the
 * whole run (traffic lights, the evaluation) come as switches and as windows, not as the run's samples.
 * Its timings are the benchmark's (bench/viewer-big-run.ts), not this test's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { sceneAt } from '../src/replay/run-queries.js';
import { windowGrid, windowIndex, windowSpan } from '../src/server/state-window-wire.js';
import { viewerSession } from './helpers/viewer-session.js';

// These run inside the page (page.evaluate); the Node compilation has no DOM types, on purpose.
declare const window: any;
declare const document: any;

/** What the page keeps at most over its windows (web/src/playback-data.ts). */
const KEEP_SAMPLES = 600_000;

let run: number;
let begin: number;
let samples: number;
const viewer = viewerSession('viewer-big-run', async (store) => {
  // Half an hour of 60 vehicles and 16 pedestrians at 10 Hz: about 1.3 M samples, twice what a page keeps.
  run = (await recordDemoRun(store, { duration: 1800, vehicles: 60, seed: 53 })).run.id;
  await evaluateRun(store, run);
  const info = (await store.getRun(run))!;
  begin = info.begin;
  samples = (await store.listStreams(run))
    .filter((s) => s.name === 'state')
    .reduce((sum, s) => sum + s.samples, 0);
});

/** The API requests a page makes, as URLs. */
function requests(page: Page): URL[] {
  const seen: URL[] = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.pathname.includes('/api/')) seen.push(url);
  });
  return seen;
}

/** Waits until the page has drawn a frame at moment t (microseconds). */
async function drawnAt(page: Page, t: number): Promise<void> {
  await page.waitForFunction((target) => Math.abs((window.simrecView?.drawn?.t ?? NaN) - target) < 1, t, {
    polling: 'raf',
  });
}

/**
 * Opens the run at `seconds` from its begin and waits for that moment drawn and the run's panels in
 * (the page fits its map to them once more), so that what follows counts only what playing does.
 */
async function openSettledAt(page: Page, seconds: number): Promise<void> {
  await page.goto(new URL(`#/runs/${run}?t=${seconds}`, viewer.server.url).toString());
  await drawnAt(page, begin + seconds * 1e6);
  await page.locator('#app[data-ready="true"]').waitFor();
}

/**
 * Run in the page: from now on, every read of the map canvas's size (`clientWidth`, `clientHeight`,
 * each of which may lay the page out) counts in `window.sizeReads`.
 */
function countMapSizeReads(): void {
  window.sizeReads = 0;
  for (const name of ['clientWidth', 'clientHeight']) {
    const original: any = Object.getOwnPropertyDescriptor(window.Element.prototype, name);
    Object.defineProperty(window.HTMLCanvasElement.prototype, name, {
      configurable: true,
      get() {
        if (this.classList.contains('map')) window.sizeReads++;
        return original.get.call(this);
      },
    });
  }
}

const drawnIds = (page: Page): Promise<string[]> =>
  page.evaluate(() => [...window.simrecView.map.state.poses.keys()].sort());

describe('the viewer on a long run', () => {
  it('opens at a moment: its window asked for first, by the moment, as binary columns, the run’s begin never, its actors drawn as the scene has them', async () => {
    assert.ok(samples > 2 * KEEP_SAMPLES, `the run has ${samples} samples`);
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } });
    const seen = requests(page);
    // The evaluation's windows, in the order they were asked for and answered.
    const evaluationOrder: string[] = [];
    const evaluationWindow = (r: { url(): string }): string | null => {
      const url = new URL(r.url());
      return url.searchParams.get('stream') === 'ego/evaluation' ? `${url.searchParams.get('from')}` : null;
    };
    page.on('request', (r) => {
      const from = evaluationWindow(r);
      if (from !== null) evaluationOrder.push(`asked ${from}`);
    });
    page.on('requestfinished', (r) => {
      const from = evaluationWindow(r);
      if (from !== null) evaluationOrder.push(`answered ${from}`);
    });
    try {
      const at = 1234.5;
      const t = begin + at * 1e6;
      await page.goto(new URL(`#/runs/${run}?t=${at.toFixed(2)}`, viewer.server.url).toString());
      await drawnAt(page, t);
      const scene = await sceneAt(viewer.store, run, { t });
      assert.ok(scene.actors.length > 30, `${scene.actors.length} actors at ${at} s`);
      assert.deepEqual(await drawnIds(page), scene.actors.map((a) => a.id).sort());
      const windows = seen.filter((u) => u.pathname.endsWith(`/runs/${run}/states`));
      assert.ok(windows.length > 0);
      for (const w of windows) assert.equal(w.searchParams.get('format'), 'columns', w.search);
      // The moment's window asked for first, by the moment (beside the run's detail, before the page
      // knows how the run is cut), and not asked for again by its bounds.
      assert.equal(windows[0]!.searchParams.get('moment'), String(at));
      const grid = windowGrid(await viewer.store.listActors(run), await viewer.store.listStreams(run));
      const holding = windowSpan(grid, windowIndex(grid, t));
      for (const w of windows.slice(1)) {
        const from = Number(w.searchParams.get('from'));
        assert.ok(from > begin, `nothing asked for at the run's begin: ${w.search}`);
        assert.notEqual(from, holding.from, `the moment's window asked for again: ${w.search}`);
      }
      // Once the panels are in: lights as their switches, the evaluation a window at a time.
      await page.locator('#app[data-ready="true"]').waitFor();
      const lights = seen.filter((u) => /^J\d+_\d+\/signal$/.test(u.searchParams.get('stream') ?? ''));
      assert.ok(lights.length > 0, 'the traffic lights are asked for');
      // Their state only: the demo's lights count down to their next switch, which changes at every
      // sample, so a light's changes of every field were its whole hour.
      for (const u of lights) {
        assert.equal(u.searchParams.get('changes'), '1', u.search);
        assert.equal(u.searchParams.get('fields'), 'state', u.search);
      }
      await page.waitForFunction(() => document.querySelector('[data-testid="radar"]') !== null);
      const evaluation = seen.filter((u) => u.searchParams.get('stream') === 'ego/evaluation');
      assert.ok(evaluation.length > 0, 'the evaluation is asked for');
      for (const u of evaluation) {
        const span = Number(u.searchParams.get('to')) - Number(u.searchParams.get('from'));
        assert.ok(span > 0 && span < 1800e6 / 2, `a window of the evaluation, not the run: ${u.search}`);
      }
      // The window holding the moment first and alone: its neighbours only once it is in (each is a
      // page of JSON the server builds on the thread that answers the first frames of every page).
      const first = evaluation[0]!;
      assert.ok(
        Number(first.searchParams.get('from')) <= t && t <= Number(first.searchParams.get('to')),
        `the first evaluation window holds the moment: ${first.search}`,
      );
      const from = first.searchParams.get('from');
      // The radar is drawn before the window's answer has come: what follows the first ask is awaited.
      for (let waited = 0; evaluationOrder.length < 2 && waited < 20_000; waited += 50)
        await page.waitForTimeout(50);
      assert.deepEqual(evaluationOrder.slice(0, 2), [`asked ${from}`, `answered ${from}`]);
    } finally {
      await page.close();
    }
  });

  it('keeps a bounded set of windows while sought across the whole run, drawing each moment’s actors, its windows coming over the live channel', async () => {
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } });
    const seen = requests(page);
    let framesOverSocket = 0;
    page.on('websocket', (socket) =>
      socket.on('framereceived', (frame) => {
        if (typeof frame.payload !== 'string') framesOverSocket++;
      }),
    );
    try {
      await page.goto(new URL(`#/runs/${run}`, viewer.server.url).toString());
      await page.locator('#app[data-ready="true"]').waitFor();
      let mostKept = 0;
      for (const fraction of [0.05, 0.9, 0.3, 0.7, 0.15, 0.55, 0.95, 0.4, 0.8, 0.2, 0.65, 0.02]) {
        const t = await page.evaluate((f) => {
          const timeline = window.simrecView.timeline;
          timeline.seek(Math.round(timeline.begin + f * (timeline.end - timeline.begin)));
          return timeline.t;
        }, fraction);
        await drawnAt(page, t);
        // Past the windows after it too, which playing would have asked for.
        await page.waitForTimeout(150);
        mostKept = Math.max(mostKept, await page.evaluate(() => window.simrecView.data.keptSamples));
        const scene = await sceneAt(viewer.store, run, { t: Math.round(t) });
        assert.deepEqual(await drawnIds(page), scene.actors.map((a) => a.id).sort(), `at ${fraction}`);
      }
      assert.ok(mostKept > 0 && mostKept <= KEEP_SAMPLES, `kept at most ${mostKept} samples`);
      // Once the live channel is open, windows are asked for on it, not over HTTP.
      const overHttp = seen.filter((u) => u.pathname.endsWith(`/runs/${run}/states`)).length;
      assert.ok(framesOverSocket >= 12, `${framesOverSocket} windows over the live channel`);
      assert.ok(overHttp <= 3, `${overHttp} windows over HTTP`);
    } finally {
      await page.close();
    }
  });

  it('plays without laying the page out from its frames: the map never reads its canvas’s size while drawing', async () => {
    // A frame changes the page's text (the time, the inspector) before the map draws; a read of the
    // canvas's size then laid the whole page out again, three times a frame, which starved pages
    // playing side by side (performance-history.md).
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      // Once the run's panels are in: the page fits the map to them, once, by reading its size.
      await openSettledAt(page, 600);
      // Every read of the canvas's size counted from here on.
      await page.evaluate(countMapSizeReads);
      const before = await page.evaluate(() => window.simrecView.framesDrawn);
      await page.getByTestId('speed').selectOption('10');
      await page.getByTestId('play').click();
      await page.waitForTimeout(1500);
      await page.getByTestId('play').click();
      const played = await page.evaluate(
        (first) => ({ frames: window.simrecView.framesDrawn - first, reads: window.sizeReads }),
        before,
      );
      assert.ok(played.frames >= 10, `${played.frames} frames drawn while playing`);
      assert.equal(
        played.reads,
        0,
        `the canvas's size read ${played.reads} times over ${played.frames} frames`,
      );
    } finally {
      await page.close();
    }
  });

  it('opens with its first frame drawn at the map’s laid-out size, nothing laid out or drawn before for it', async () => {
    // Before, the map fitted itself and drew three frames while the page was still being built: its
    // size read laid the page out, and each frame went into the canvas's default 300 x 150, drawn again
    // at its size at the first layout before anything was shown.
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      // From the page's first script on.
      await page.addInitScript(countMapSizeReads);
      await page.goto(new URL(`#/runs/${run}?t=900`, viewer.server.url).toString());
      const first = await page.evaluate(
        () =>
          new Promise<{ width: number; reads: number }>((done) => {
            const watch = (): void => {
              const view = window.simrecView;
              if (view?.framesDrawn > 0) done({ width: view.map.canvas.width, reads: window.sizeReads });
              else window.requestAnimationFrame(watch);
            };
            watch();
          }),
      );
      assert.equal(first.reads, 0, `the map's size read ${first.reads} times before its first frame`);
      const laidOut = await page.evaluate(() => {
        const canvas = window.simrecView.map.canvas;
        return Math.round(canvas.getBoundingClientRect().width * window.devicePixelRatio);
      });
      assert.ok(laidOut > 300, `the map is ${laidOut} px wide`);
      // Within a few pixels: the panels that arrive after the first frame may narrow the map a little.
      assert.ok(
        Math.abs(first.width - laidOut) <= laidOut * 0.05,
        `the first frame drawn ${first.width} px wide on a map of ${laidOut}`,
      );
      await drawnAt(page, begin + 900 * 1e6);
    } finally {
      await page.close();
    }
  });

  it('shows each sample of the evaluation once while playing at 1x, not at every frame drawn', async () => {
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      await openSettledAt(page, 900);
      await page.waitForFunction(() => document.querySelector('[data-testid="radar"]') !== null);
      // Every drawing of the radar and every change of the panel's text counted from here on.
      await page.evaluate(() => {
        window.radarDraws = 0;
        window.textChanges = 0;
        const radar = document.querySelector('[data-testid="radar"]');
        const context = radar.getContext('2d');
        const clear = context.clearRect.bind(context);
        context.clearRect = (...args: number[]) => {
          window.radarDraws++;
          clear(...args);
        };
        new window.MutationObserver((records: unknown[]) => (window.textChanges += records.length)).observe(
          document.querySelector('[data-testid="evaluation"]'),
          { subtree: true, childList: true, characterData: true },
        );
      });
      const before = await page.evaluate(() => ({
        frames: window.simrecView.framesDrawn,
        t: window.simrecView.drawn.t,
      }));
      await page.getByTestId('play').click();
      await page.waitForTimeout(1500);
      await page.getByTestId('play').click();
      const played = await page.evaluate(
        (first) => ({
          frames: window.simrecView.framesDrawn - first.frames,
          seconds: (window.simrecView.drawn.t - first.t) / 1e6,
          radarDraws: window.radarDraws,
          textChanges: window.textChanges,
        }),
        before,
      );
      // The demo's evaluation has a sample every 0.1 s: one drawing each, and a frame of slack at each end.
      const samplesCrossed = Math.ceil(played.seconds * 10) + 2;
      assert.ok(played.frames > samplesCrossed, `${played.frames} frames over ${played.seconds} s`);
      assert.ok(
        played.radarDraws > 0 && played.radarDraws <= samplesCrossed,
        `the radar drawn ${played.radarDraws} times over ${played.frames} frames and ${played.seconds} s`,
      );
      assert.ok(played.textChanges > 0, 'the panel shows the samples it crosses');
    } finally {
      await page.close();
    }
  });

  it('keeps the run’s events out of each frame’s layout and paint: the track of marks and the list laid out apart, the marks still there to click', async () => {
    // A long run has a thousand events or more, a mark on the track and a row in the list each; the
    // slider and the text a frame changes sit beside them, and each frame repainted them all: 10x
    // playback on an hour of traffic spent two thirds of its thread painting (performance-history.md).
    const page = await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      await page.goto(new URL(`#/runs/${run}?t=300`, viewer.server.url).toString());
      await drawnAt(page, begin + 300_000_000);
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=event-row]').length > 0);
      const seen = await page.evaluate(() => {
        const track = document.querySelector('.timeline .track');
        const list = document.querySelector('ol.events');
        const marks = [...document.querySelectorAll('[data-testid=event-mark]')];
        const box = marks[0].getBoundingClientRect();
        const hit = document.elementFromPoint(box.left + box.width / 2, box.top + 2);
        return {
          marks: marks.length,
          marked: marks.reduce((sum: number, m: any) => sum + Number(m.dataset.count), 0),
          rows: list.querySelectorAll('[data-testid=event-row]').length,
          listed: [...document.querySelectorAll('[data-testid=event-filter]')].reduce(
            (sum: number, box: any) =>
              sum + Number(/\((\d+)\)/.exec(box.parentElement.textContent)?.[1] ?? NaN),
            0,
          ),
          track: window.getComputedStyle(track).contain,
          list: window.getComputedStyle(list).contain,
          // Above the track's box (marks stand out of it): not clipped by a containment of paint.
          markAboveTrack: box.top < track.getBoundingClientRect().top,
          markHit: hit?.dataset.testid === 'event-mark',
        };
      });
      // Every event is marked, the list keeps the rows in view and 40 above and below (event-list.ts).
      assert.ok(
        seen.marks >= 20 && seen.marked === seen.listed,
        `${seen.marks} marks for ${seen.marked} events`,
      );
      assert.ok(seen.rows > 0 && seen.rows <= 87, `${seen.rows} rows of ${seen.listed} events`);
      assert.match(seen.track, /layout/, 'the track is laid out apart from the page');
      assert.doesNotMatch(seen.track, /paint|strict|content/, 'the track does not clip its marks');
      assert.match(seen.list, /content|strict/, 'the list is laid out and painted apart');
      assert.ok(
        seen.markAboveTrack && seen.markHit,
        `a mark above the track can be clicked: ${JSON.stringify(seen)}`,
      );
    } finally {
      await page.close();
    }
  });
});
