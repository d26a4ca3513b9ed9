/**
 * The viewer as a newcomer meets it (#55, 9, 10 and 11), in Debian's Chromium against a real server
 * over a real SQLite store: the demo's first page, the plot picker of a run opened by a link, the
 * evaluation of an actor that has left, the bird's-eye view beside the legend, the two greens, the
 * end reason in words and units wherever numbers are read. (The MongoDB badge is in
 * connection-settings.test.ts, with the panel it opens.)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { evaluateRun } from '../src/evaluate/evaluate-run.js';
import { VISUAL_COLOURS } from '../src/formats/didrive/birdview.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { ARTIFACTS } from './helpers/browser.js';
import { along } from './helpers/lane-run.js';
import { SIMREC_BIN } from './helpers/paths.js';
import { viewerSession } from './helpers/viewer-session.js';

// These run inside the page (page.evaluate); the Node compilation has no DOM types, on purpose.
declare const window: any;

const BEGIN = 1_760_000_000_000_000;
let demo: number;
let leaving: number;
const viewer = viewerSession(
  'viewer-newcomer',
  async (store) => {
    demo = (await recordDemoRun(store, { duration: 20, seed: 1 })).run.id;
    await evaluateRun(store, demo);
    leaving = await recordEgoThatLeaves(store);
    await evaluateRun(store, leaving);
  },
  () => ({ liveIntervalMs: 200 }),
);

/** An ego driving 2 s and leaving (as a SUMO vehicle that arrives), in a run of 5 s; a car stays. */
async function recordEgoThatLeaves(s: StoreBackend): Promise<number> {
  const rec = await RunRecorder.begin(s, { simulator: { name: 'ego-leaves' }, begin: BEGIN });
  for (const [id, kind] of [
    ['ego', 'ego'],
    ['car', 'vehicle'],
  ] as const) {
    await rec.declareActor({ id, kind, extents: { length: 4.5, width: 1.9, height: 1.5 } });
    await rec.declareStream(stateStream(id, { rateHz: 10 }));
  }
  for (let i = 0; i <= 50; i++) {
    const t = BEGIN + i * 100_000;
    if (i <= 20) await rec.append('ego/state', { t, step: i, x: i * 1.5, y: 0, yaw: 0, speed: 15 + i * 0.1 });
    await rec.append('car/state', { t, step: i, x: i, y: 20, yaw: 0, speed: 10 });
  }
  await rec.leave('ego', BEGIN + 2_000_000);
  return (await rec.end('completed', { end: BEGIN + 5_000_000 })).id;
}

async function openRun(hash: string): Promise<Page & { errors: string[] }> {
  const page = (await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } })) as Page & {
    errors: string[];
  };
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(new URL(hash, viewer.server.url).toString());
  await page.locator('#app[data-ready="true"]').waitFor();
  await page.waitForFunction(() => window.simrecView?.framesDrawn > 0);
  return page;
}

async function closeClean(page: Page & { errors: string[] }): Promise<void> {
  assert.deepEqual(page.errors, [], 'no errors in the page');
  await page.close();
}

async function seek(page: Page, seconds: number): Promise<void> {
  await page.evaluate((s) => {
    const view = window.simrecView;
    view.timeline.seek(view.timeline.begin + s * 1e6);
  }, seconds);
  await page.waitForFunction(
    (s) => Math.abs(window.simrecView.timeline.t - window.simrecView.timeline.begin - s * 1e6) < 1,
    seconds,
  );
}

describe('the viewer as a newcomer meets it (#55)', () => {
  it("simrec demo's first page has the run's score and its events", async () => {
    const child = spawn(process.execPath, [
      SIMREC_BIN,
      '--store',
      join(viewer.dir, 'demo-cli.db'),
      'demo',
      '--duration',
      '20',
      '--port',
      '0',
    ]);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let link = '';
    for await (const line of createInterface({ input: child.stdout })) {
      link = /^simrec viewer: (\S+)/.exec(line)?.[1] ?? '';
      if (link) break;
    }
    assert.match(link, /#\/runs\/1$/, 'the viewer opens on the new run');
    const page = (await viewer.browser.newPage({ viewport: { width: 1280, height: 800 } })) as Page & {
      errors: string[];
    };
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(e.message));
    try {
      await page.goto(link);
      await page.locator('#app[data-ready="true"]').waitFor();
      assert.match((await page.getByTestId('run-score').textContent())!, /^[\d.]+ \/ 100 higher is better/);
      assert.doesNotMatch((await page.getByTestId('evaluation').textContent())!, /No evaluation/);
      assert.ok((await page.getByTestId('event-row').count()) > 0, 'its events are listed');
      await page.waitForFunction(() => window.simrecView?.framesDrawn > 0);
      await page.screenshot({ path: join(ARTIFACTS, 'demo-first-page.png') });
      await closeClean(page);
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 130);
  });

  it("a link with actor=ego lists the ego's fields first in the plot picker, and Enter plots the ego's", async () => {
    const firstSpeed = async (hash: string): Promise<{ first: string; plotted: string }> => {
      const page = await openRun(hash);
      await page.getByTestId('plot-search').fill('speed');
      const first = (await page.getByTestId('plot-option').first().getAttribute('data-key'))!;
      await page.getByTestId('plot-search').press('Enter');
      await page.waitForFunction(() => window.simrecView.plots.series.length === 1);
      const plotted = await page.evaluate(() => window.simrecView.plots.series[0].key);
      await closeClean(page);
      return { first, plotted };
    };
    // The demo's streams begin with the lights' and the pedestrians': the ego's must come first.
    assert.deepEqual(await firstSpeed(`#/runs/${demo}?t=1.00&actor=ego`), {
      first: 'ego/state:speed',
      plotted: 'ego/state:speed',
    });
    assert.deepEqual(await firstSpeed(`#/runs/${demo}?actor=veh1`), {
      first: 'veh1/state:speed',
      plotted: 'veh1/state:speed',
    });
    // No actor selected: the ego's, the actor the run is about.
    assert.equal((await firstSpeed(`#/runs/${demo}`)).first, 'ego/state:speed');
  });

  it('shows no value now for a scored actor that has left, and says when it left', async () => {
    const page = await openRun(`#/runs/${leaving}`);
    const value = (metric: string): Promise<string | null> =>
      page.locator(`[data-testid="kpis"] tr[data-metric="${metric}"] td.value`).textContent();
    await seek(page, 1);
    assert.match((await value('consumption'))!, /^[\d.]+ m²\/s³$/, 'present: its value now');
    assert.equal(await page.getByTestId('evaluation-absent').isVisible(), false);
    await seek(page, 4);
    for (const metric of ['discomfort', 'collision', 'consumption']) assert.equal(await value(metric), '–');
    assert.equal(
      await page.getByTestId('evaluation-absent').textContent(),
      'ego is not in the scene now (it left at 2.00 s): no value now.',
    );
    await closeClean(page);
  });

  it("gives the bird's-eye view a legend of its own, in its colours, and leaves the map's legend in sight", async () => {
    const page = await openRun(`#/runs/${demo}`);
    await page.getByTestId('birdview-toggle').check();
    await page.getByTestId('birdview-box').waitFor();
    const legend = (await page.getByTestId('legend').boundingBox())!;
    const box = (await page.getByTestId('birdview-box').boundingBox())!;
    assert.ok(await page.getByTestId('legend').isVisible());
    const apart =
      legend.x + legend.width <= box.x ||
      box.x + box.width <= legend.x ||
      legend.y + legend.height <= box.y ||
      box.y + box.height <= legend.y;
    assert.ok(
      apart,
      `the map's legend ${JSON.stringify(legend)} is not under the birdview ${JSON.stringify(box)}`,
    );
    const entries = await page
      .getByTestId('birdview-legend')
      .locator('[data-channel]')
      .evaluateAll((spans: any[]) =>
        spans.map((s) => ({
          channel: s.dataset.channel,
          text: s.textContent.trim(),
          colour: window.getComputedStyle(s.querySelector('.swatch')).backgroundColor,
        })),
      );
    assert.deepEqual(
      entries.map((e) => e.colour),
      VISUAL_COLOURS.map(([r, g, b]) => `rgb(${r}, ${g}, ${b})`),
      "visualize_birdview's colours, channel by channel",
    );
    assert.deepEqual(
      entries.map((e) => e.text),
      [
        'road',
        'lane lines',
        'red light',
        'yellow light',
        'green light',
        'vehicles',
        'pedestrians',
        'ego (hero)',
        'route',
      ],
    );
    await page.waitForFunction(() => {
      const img = window.document.querySelector('[data-testid="birdview"]');
      return img?.complete && img.naturalWidth > 0;
    });
    await page.screenshot({ path: join(ARTIFACTS, 'birdview-legend.png') });
    await closeClean(page);
  });

  it('tells a green that must yield from a green with priority: dashed on the map and in the legend', async () => {
    const net = (await loadRoadNetwork(viewer.store, demo))!;
    const lanes = new Map(net.lanes.map((l) => [l.id, l]));
    const link = net.connections.find((c) => c.trafficLight !== undefined && c.via && lanes.has(c.via))!;
    const line = lanes.get(link.via!)!.centerLine;
    const page = await openRun(`#/runs/${demo}`);
    // One stub alone on the road (the others from its lane would cover its gaps), in each state.
    const coloursAlong = (state: string): Promise<string[]> =>
      page.evaluate(
        ([light, index, character, points]) => {
          const map = window.simrecView.map;
          map.road.signalled = map.road.signalled.filter((s: any) => s.light === light && s.index === index);
          map.state = {
            ...map.state,
            poses: new Map(),
            trails: new Map(),
            futures: new Map(),
            highlighted: new Set(),
            lightStates: new Map([[light, character.padStart(index + 1, 'r')]]),
          };
          map.scale = 10;
          return points.map(([x, y]: number[]) => {
            map.center = { x, y };
            map.draw();
            const p = map.toScreen(x, y);
            const ratio = window.devicePixelRatio || 1;
            const d = map.canvas
              .getContext('2d')
              .getImageData(Math.round(p.x * ratio), Math.round(p.y * ratio), 1, 1).data;
            return '#' + [d[0], d[1], d[2]].map((n: number) => n.toString(16).padStart(2, '0')).join('');
          });
        },
        [
          link.trafficLight!,
          link.linkIndex!,
          state,
          [0.6, 1.6, 2.6].map((s) => along(line, s)).map((p) => [p.x, p.y]),
        ] as [string, number, string, number[][]],
      );
    // 0.6 and 2.6 m in the stub's dashes, 1.6 m in its first gap.
    assert.deepEqual(await coloursAlong('G'), ['#27ae60', '#27ae60', '#27ae60'], 'priority: solid');
    const [dash, gap, again] = await coloursAlong('g');
    assert.deepEqual([dash, again], ['#2ecc71', '#2ecc71'], 'yield: its dashes');
    // The road under the gap: a lane's grey, or the lighter grey of a crossing drawn there.
    assert.ok(['#4a5055', '#6b7378'].includes(gap!), `yield: a gap at 1.6 m, where ${gap} was drawn`);
    await closeClean(page);

    const fresh = await openRun(`#/runs/${demo}`);
    const swatch = (ch: string): Promise<{ image: string; text: string }> =>
      fresh.locator(`[data-testid="legend"] [data-light="${ch}"]`).evaluate((s: any) => ({
        image: window.getComputedStyle(s.querySelector('.swatch')).backgroundImage,
        text: s.textContent.trim(),
      }));
    assert.deepEqual(await swatch('G'), { image: 'none', text: 'green (priority)' });
    const yieldSwatch = await swatch('g');
    assert.match(yieldSwatch.image, /repeating-linear-gradient/, 'the yield swatch is dashed');
    assert.equal(yieldSwatch.text, 'green (yield), dashed');
    await closeClean(fresh);
  });

  it('says how the run ended in words, in the run and in the run list', async () => {
    const page = await openRun(`#/runs/${demo}`);
    const reason = page.getByTestId('end-reason');
    assert.equal(await reason.textContent(), "ended by the scenario's stop trigger");
    assert.equal(await reason.getAttribute('title'), 'end reason: scenario_stop_trigger');
    await closeClean(page);
    const list = (await viewer.browser.newPage()) as Page & { errors: string[] };
    list.errors = [];
    await list.goto(new URL('#/', viewer.server.url).toString());
    const row = list.locator(`tr[data-run="${demo}"]`);
    await row.waitFor();
    assert.ok(await row.getByText("ended by the scenario's stop trigger").isVisible());
    assert.ok(await list.locator(`tr[data-run="${leaving}"]`).getByText('completed').isVisible());
    await closeClean(list);
  });

  it("gives units: the inspector's type attributes, and each evaluation metric's (orientation unitless)", async () => {
    const page = await openRun(`#/runs/${demo}?actor=ego`);
    const attributes = page.getByTestId('inspector-attributes');
    await attributes.waitFor();
    const attribute = async (name: string): Promise<string> =>
      (await attributes.locator(`tr[data-field="${name}"] td`).textContent())!;
    assert.match(await attribute('maxSpeed'), /^[\d.]+ m\/s \([\d.]+ km\/h\)$/);
    assert.match(await attribute('accel'), /^[\d.]+ m\/s²$/);
    assert.match(await attribute('decel'), /^[\d.]+ m\/s²$/);
    assert.match(await attribute('minGap'), /^[\d.]+ m$/);
    assert.equal(await attribute('mass'), '1500 kg');
    assert.equal(await attribute('wheelRadius'), '0.33 m');
    assert.equal(await attribute('wheels'), '4', 'a count has no unit');
    const unit = async (metric: string): Promise<string> =>
      (await page.locator(`[data-testid="kpis"] tr[data-metric="${metric}"] td.unit`).textContent())!;
    assert.equal(await unit('orientation'), 'unitless');
    assert.equal(await unit('discomfort'), 'm²/s⁶');
    assert.equal(await unit('consumption'), 'm²/s³');
    assert.equal(await unit('collision'), 's');
    assert.equal(await unit('offset'), 'm²');
    await closeClean(page);
  });
});
