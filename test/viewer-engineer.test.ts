/**
 * The viewer as a simulation engineer meets it (#27), and its actors' lifetimes (#20): Debian's
 * Chromium against a real server over a real SQLite store, on the demo, LimSim's own recording
 * (imported from test/fixtures) and Unity Perception datasets. Screenshots go to test-artifacts/.
 */
import assert from 'node:assert/strict';
import { decode as decodePng } from 'fast-png';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { evaluateRun, type EvaluationSummary } from '../src/evaluate/evaluate-run.js';
import {
  LIMSIM_METRICS,
  limsimScore,
  overallScore,
  type LimsimMetric,
} from '../src/model/evaluation-scores.js';
import { encodePng } from '../src/formats/common/labelled-images/image-files.js';
import { stateStream } from '../src/model/standard-streams.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { describeRun, sceneAt } from '../src/replay/run-queries.js';
import { loadRoadNetwork } from '../src/roadnet/roadnet-attachment.js';
import { IngestClient } from '../src/ingest/ingest-client.js';
import { startServer, type RunningServer } from '../src/server/start-server.js';
import { openStore } from '../src/store/open-store.js';
import { ARTIFACTS, launchBrowser } from './helpers/browser.js';
import { importLimSim, importPerception, importSolo } from './helpers/formats.js';
import { along } from './helpers/lane-run.js';
import { fixture, REPO_ROOT, tempDir } from './helpers/paths.js';

// These run inside the page (page.evaluate); the Node compilation has no DOM types, on purpose.
declare const window: any;
declare const document: any;

const LIMSIM_FILE = fixture('limsim-db', 'egoTrackingTest.db');
const BEGIN = 1_760_000_000_000_000;

const dir = tempDir('simrec-viewer-engineer-');
let store: StoreBackend;
let server: RunningServer;
let browser: Browser;
let demo: number;
let demoEvaluation: EvaluationSummary;
let limsim: number;
let mock: number;
let solo: number;
let comings: number;
let tiny: number;
let boxes: number;

before(async () => {
  store = await openStore(join(dir.path, 'viewer.db'));
  demo = (await recordDemoRun(store, { duration: 40, seed: 3 })).run.id;
  demoEvaluation = await evaluateRun(store, demo);
  limsim = (await importLimSim(store, LIMSIM_FILE)).run.id;
  mock = (await importPerception(store, fixture('perception-simrun', 'Dataset'))).run.id;
  solo = (await importSolo(store, join(REPO_ROOT, 'test', 'fixtures', 'pysolotools', 'solo'))).run.id;
  comings = await recordComingsAndGoings(store);
  tiny = await recordTinyValues(store);
  boxes = await recordBoxesPastTheEdge(store);
  server = await startServer({ store, port: 0, liveIntervalMs: 200 });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.close();
  await store?.close();
  dir.cleanup();
});

/**
 * Three cars at 10 Hz for 5 s, side by side: `stays` all along; `leaves` says it left at 2 s;
 * `goesQuiet` stops sending at 3 s and never says so (the staleness rule lets it go).
 */
async function recordComingsAndGoings(s: StoreBackend): Promise<number> {
  const rec = await RunRecorder.begin(s, { simulator: { name: 'presence-check' }, begin: BEGIN });
  for (const id of ['stays', 'leaves', 'goesQuiet']) {
    await rec.declareActor({ id, kind: 'vehicle', extents: { length: 4.5, width: 1.9, height: 1.5 } });
    await rec.declareStream(stateStream(id, { rateHz: 10 }));
  }
  const lane = { stays: 0, leaves: 10, goesQuiet: 20 } as const;
  for (let i = 0; i <= 50; i++)
    for (const id of ['stays', 'leaves', 'goesQuiet'] as const) {
      const t = BEGIN + i * 100_000;
      if (id === 'leaves' && i > 20) continue;
      if (id === 'goesQuiet' && i > 30) continue;
      await rec.append(`${id}/state`, { t, step: i, x: i, y: lane[id], yaw: 0, speed: 10 });
    }
  await rec.leave('leaves', BEGIN + 2_000_000);
  return (await rec.end('completed')).id;
}

/** A probe whose one field hovers around 3e-13 m: what float noise around zero looks like. */
async function recordTinyValues(s: StoreBackend): Promise<number> {
  const rec = await RunRecorder.begin(s, { simulator: { name: 'tiny-values' }, begin: BEGIN });
  await rec.declareActor({ id: 'probe', kind: 'vehicle' });
  await rec.declareStream(stateStream('probe'));
  const noise = await rec.declareStream({
    name: 'noise',
    actor: 'probe',
    fields: [{ name: 'residual', type: 'f64', unit: 'm' }],
  });
  for (let i = 0; i < 40; i++) {
    const t = BEGIN + i * 100_000;
    await rec.append('probe/state', { t, step: i, x: i, y: 0, yaw: 0, speed: 1 });
    await rec.append(noise, { t, step: i, residual: 3e-13 + (i % 7) * 1e-14 });
  }
  return (await rec.end('completed')).id;
}

/** A 200x100 image with a box reaching past its right and bottom edges, as detectors report them. */
async function recordBoxesPastTheEdge(s: StoreBackend): Promise<number> {
  const rec = await RunRecorder.begin(s, { simulator: { name: 'camera-check' }, begin: BEGIN });
  await rec.declareActor({ id: 'cam', kind: 'sensor' });
  const pixels = new Uint8Array(200 * 100 * 3).fill(90);
  await rec.attach({
    name: 'frames/0.png',
    mediaType: 'image/png',
    t: BEGIN,
    data: encodePng(200, 100, 3, pixels),
    metadata: {
      capture: '0',
      sensor: 'cam',
      boxes: [
        { x: 150, y: 60, width: 100, height: 80, label: 'past the edge' },
        { x: 10, y: 10, width: 30, height: 20, label: 'inside' },
      ],
    },
  });
  return (await rec.end('completed', { end: BEGIN + 1_000_000 })).id;
}

async function openRun(hash: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(new URL(hash, server.url).toString());
  if (hash.startsWith('#/runs/')) {
    await page.locator('#app[data-ready="true"]').waitFor();
    // The first window of states is in once something was drawn.
    await page.waitForFunction(() => window.simrecView?.framesDrawn > 0);
    await settled(page);
  }
  return page;
}

/**
 * Two frames on: the layout the last panels gave the page has been reported to the map (its
 * ResizeObserver runs before a frame is painted) and drawn.
 */
async function settled(page: Page): Promise<void> {
  await page.evaluate(
    () =>
      new Promise((done) =>
        window.requestAnimationFrame(() => window.requestAnimationFrame(() => done(null))),
      ),
  );
}

/** The road network's corners on screen and the canvas's size, as the page has laid it out now. */
function networkOnScreen(page: Page) {
  return page.evaluate(() => {
    const map = window.simrecView.map;
    const net = map.bounds;
    return {
      scale: map.scale,
      center: { ...map.center },
      corners: [map.toScreen(net.min[0], net.min[1]), map.toScreen(net.max[0], net.max[1])],
      w: map.canvas.clientWidth,
      h: map.canvas.clientHeight,
    };
  });
}

const wholeNetworkInView = (at: Awaited<ReturnType<typeof networkOnScreen>>): boolean =>
  at.corners.every((c) => c.x >= 0 && c.x <= at.w && c.y >= 0 && c.y <= at.h);

async function closeClean(page: Page): Promise<void> {
  assert.deepEqual((page as Page & { errors: string[] }).errors, [], 'no errors in the page');
  await page.close();
}

const timeLabel = async (page: Page): Promise<number> =>
  Number((await page.getByTestId('time').textContent())!.split(' / ')[0]);

/** Seeks the timeline to `seconds` after its begin and waits for that frame to be drawn. */
async function seek(page: Page, seconds: number): Promise<void> {
  await page.evaluate((s) => {
    const view = window.simrecView;
    view.timeline.seek(view.timeline.begin + s * 1e6);
  }, seconds);
  await page.waitForFunction((s) => {
    const view = window.simrecView;
    return (
      Math.abs(view.timeline.t - view.timeline.begin - s * 1e6) < 1 && view.map.state?.poses !== undefined
    );
  }, seconds);
}

/** The ids the map drew in its last frame. */
const drawnIds = (page: Page): Promise<string[]> =>
  page.evaluate(() => [...window.simrecView.map.state.poses.keys()].sort());

/** How many pixels within `radius` of a screen point have the colour rgb (within 10 per channel). */
function countColour(page: Page, sx: number, sy: number, radius: number, rgb: number[]): Promise<number> {
  return page.evaluate(
    ([x, y, r, c]) => {
      const map = window.simrecView.map;
      const ratio = window.devicePixelRatio || 1;
      const data = map.canvas
        .getContext('2d')
        .getImageData(
          Math.round((x - r) * ratio),
          Math.round((y - r) * ratio),
          2 * r * ratio,
          2 * r * ratio,
        ).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4)
        if (
          Math.abs(data[i] - c[0]!) < 10 &&
          Math.abs(data[i + 1] - c[1]!) < 10 &&
          Math.abs(data[i + 2] - c[2]!) < 10
        )
          n++;
      return n / (ratio * ratio);
    },
    [sx, sy, radius, rgb] as [number, number, number, number[]],
  );
}

/** LimSim's evaluationINFO read straight from its file: each metric's mean display score. */
function limsimMeans(): Partial<Record<LimsimMetric, number>> {
  const db = new Database(LIMSIM_FILE, { readonly: true });
  try {
    const rows = db.prepare('SELECT * FROM evaluationINFO').all() as Record<string, number | null>[];
    const means: Partial<Record<LimsimMetric, number>> = {};
    for (const m of LIMSIM_METRICS) {
      const values = rows.map((r) => r[m]).filter((v): v is number => typeof v === 'number');
      means[m] = values.reduce((a, v) => a + limsimScore(m, v), 0) / values.length;
    }
    return means;
  } finally {
    db.close();
  }
}

describe('viewer for engineers (#27) and actor lifetimes (#20), in Chromium', () => {
  it("opens a LimSim import on its first frame with its vehicles present and LimSim's own scores", async () => {
    const d = await describeRun(store, limsim);
    // The fixture's run begins 69.7 s before its first frame (LimSim's startTime): the lead-in is real.
    assert.ok(d.timeRange!.begin - d.run.begin > 60_000_000);
    const page = await openRun(`#/runs/${limsim}`);
    assert.equal(await timeLabel(page), 0);
    assert.equal(await page.evaluate(() => window.simrecView.timeline.begin), d.timeRange!.begin);
    const atStart = await sceneAt(store, limsim, { t: d.timeRange!.begin });
    assert.ok(atStart.actors.length >= 3, 'vehicles at the first frame');
    assert.equal(
      await page.getByTestId('present-count').textContent(),
      `${atStart.actors.length} actors present`,
    );
    assert.deepEqual(await drawnIds(page), atStart.actors.map((a) => a.id).sort());
    // LimSim's stored evaluation, scored as LimSim's radar scores it, read here from the file itself.
    const expected = overallScore(limsimMeans(), false);
    assert.match(
      (await page.getByTestId('run-score').textContent())!,
      new RegExp(`^${expected} / 100 higher is better`),
    );
    assert.match(
      (await page.getByTestId('evaluation').textContent())!,
      /LimSim's own evaluation \(evaluationINFO\)/,
    );
    // Frame 697's offset in the file is 0.004905021313988809 m^2: shown rounded, with its unit.
    assert.equal(
      await page.locator('[data-testid="kpis"] tr[data-metric="offset"] td.value').textContent(),
      '0.004905 m²',
    );
    const means = limsimMeans();
    assert.equal(
      await page.locator('[data-testid="kpis"] tr[data-metric="discomfort"] td').last().textContent(),
      means.discomfort!.toFixed(2),
    );
    // What LimSim's own code draws (evaluation.RealTimeEvaluation.normalize_result, run on this file's
    // evaluationINFO rows): discomfort's mean over the run 1.2127822673036033, and 4 at frame 701.
    const kpi = (metric: string): ReturnType<Page['locator']> =>
      page.locator(`[data-testid="kpis"] tr[data-metric="${metric}"] td`);
    assert.equal(await kpi('discomfort').last().textContent(), '1.21');
    await seek(page, 0.4);
    assert.equal(await kpi('discomfort').and(page.locator('.score-now')).textContent(), '4.00');
    assert.equal(await kpi('offset').and(page.locator('.score-now')).textContent(), '1.00');
    await seek(page, 0);
    await page.screenshot({ path: join(ARTIFACTS, 'limsim-open.png') });
    await closeClean(page);
  });

  it("draws only the actors present at t, as the server's scenes do, and says how many", async () => {
    // LimSim's real recording: vehicle 60 leaves the area of interest 1.3 s in.
    const page = await openRun(`#/runs/${limsim}`);
    const begin = (await describeRun(store, limsim)).timeRange!.begin;
    for (const s of [0, 0.5, 1.2, 1.35, 2, 3]) {
      await seek(page, s);
      const scene = await sceneAt(store, limsim, { t: begin + s * 1e6 });
      assert.deepEqual(await drawnIds(page), scene.actors.map((a) => a.id).sort(), `at ${s} s`);
      assert.equal(
        await page.getByTestId('present-count').textContent(),
        `${scene.actors.length} actors present`,
      );
    }
    assert.ok(!(await drawnIds(page)).includes('60'), 'the vehicle that left is not drawn');
    await page.close();

    // A leave, and a stream that goes quiet: neither car stays where it was last seen.
    const other = await openRun(`#/runs/${comings}`);
    await seek(other, 1);
    assert.deepEqual(await drawnIds(other), ['goesQuiet', 'leaves', 'stays']);
    await seek(other, 4);
    assert.deepEqual(await drawnIds(other), ['stays']);
    assert.equal(await other.getByTestId('present-count').textContent(), '1 actor present');
    const lastSeen = await other.evaluate(() => {
      const map = window.simrecView.map;
      map.scale = 10;
      map.center = { x: 20, y: 10 };
      map.draw();
      return [map.toScreen(20, 10), map.toScreen(30, 20)];
    });
    const blue = [41, 128, 185];
    assert.equal(
      await countColour(other, lastSeen[0].x, lastSeen[0].y, 15, blue),
      0,
      'no car where `leaves` left',
    );
    assert.equal(
      await countColour(other, lastSeen[1].x, lastSeen[1].y, 15, blue),
      0,
      'no car where `goesQuiet` went quiet',
    );
    await closeClean(other);

    // The demo at its end: the vehicles that reached their exits earlier are not drawn there.
    const town = await openRun(`#/runs/${demo}`);
    const d = await describeRun(store, demo);
    const end = (d.timeRange!.end - d.timeRange!.begin) / 1e6;
    await seek(town, end);
    const atEnd = await sceneAt(store, demo, { t: d.timeRange!.end, includeDeparted: true });
    const gone = atEnd.actors.filter((a) => a.departed !== undefined).map((a) => a.id);
    assert.ok(gone.length > 0, 'some demo vehicles left before the end');
    const drawn = await drawnIds(town);
    assert.deepEqual(
      drawn,
      atEnd.actors
        .filter((a) => a.departed === undefined)
        .map((a) => a.id)
        .sort(),
    );
    assert.ok(!gone.some((id) => drawn.includes(id)), 'none of those that left is drawn');
    await closeClean(town);
  });

  it('makes the map readable at first sight: fit, a minimum size, labels, legend, scale bar, hover', async () => {
    const page = await openRun(`#/runs/${demo}`);
    const opened = await networkOnScreen(page);
    assert.ok(wholeNetworkInView(opened), `the whole network is in view on open: ${JSON.stringify(opened)}`);
    // Every vehicle at least 14x7 px on screen: count its blue around it (its nose is white).
    const vehicle = await page.evaluate(() => {
      const view = window.simrecView;
      for (const [id, pose] of view.map.state.poses)
        if (view.map.state.actors.get(id)?.kind === 'vehicle') return view.map.toScreen(pose.x, pose.y);
      return null;
    });
    assert.ok(vehicle, 'a vehicle on the map');
    const blue = await countColour(page, vehicle.x, vehicle.y, 12, [41, 128, 185]);
    // At true size a demo car is about 8x3 px here (some 20 px of blue); at 14x7 px less its nose and
    // outline, 35 or more.
    assert.ok(blue >= 35, `a vehicle covers ${blue} px of blue at the default zoom, expected 35 or more`);
    assert.ok(
      (await page.evaluate(() => window.simrecView.map.drawn.labels)).includes('ego'),
      'the ego is labelled',
    );
    const legend = (await page.getByTestId('legend').textContent())!;
    for (const word of ['ego', 'vehicle', 'pedestrian', 'red', 'yellow', 'green'])
      assert.match(legend, new RegExp(word));
    const bar = await page.evaluate(() => ({
      ...window.simrecView.map.drawn.scaleBar,
      scale: window.simrecView.map.scale,
    }));
    assert.ok(
      /^[125]0*$/.test(String(bar.metres)) || [0.1, 0.2, 0.5].includes(bar.metres),
      `round bar: ${bar.metres} m`,
    );
    assert.ok(bar.pixels >= 48 && bar.pixels <= 120, `bar ${bar.pixels} px`);
    assert.ok(Math.abs(bar.pixels - bar.metres * bar.scale) < 1e-9, 'the bar is as long as it says');
    // Hover the ego: its id, kind and speed with units.
    const ego = await page.evaluate(() => {
      const pose = window.simrecView.map.state.poses.get('ego');
      return window.simrecView.map.toScreen(pose.x, pose.y);
    });
    const box = (await page.getByTestId('map').boundingBox())!;
    await page.mouse.move(box.x + ego.x, box.y + ego.y);
    await page.getByTestId('map-tooltip').waitFor();
    assert.match(
      (await page.getByTestId('map-tooltip').textContent())!,
      /^ego · ego · [\d.]+ m\/s \([\d.]+ km\/h\)$/,
    );
    // Zoom in and pan away, then Fit brings the network back.
    await page.keyboard.press('+');
    await page.keyboard.press('+');
    await page.mouse.move(box.x + 300, box.y + 300);
    await page.mouse.down();
    await page.mouse.move(box.x + 500, box.y + 400, { steps: 4 });
    await page.mouse.up();
    assert.notDeepEqual(await page.evaluate(() => window.simrecView.map.center), opened.center);
    await page.getByTestId('fit').click();
    const fitted = await page.evaluate(() => ({
      scale: window.simrecView.map.scale,
      center: window.simrecView.map.center,
    }));
    assert.deepEqual(fitted, { scale: opened.scale, center: opened.center });
    await page.screenshot({ path: join(ARTIFACTS, 'demo-run-view.png') });
    await closeClean(page);
  });

  it('keeps the fitted network in view as the page changes size, until the user moves the map', async () => {
    const page = await openRun(`#/runs/${demo}`);
    const wide = await networkOnScreen(page);
    assert.ok(wholeNetworkInView(wide), `in view at 1280x800: ${JSON.stringify(wide)}`);
    await page.setViewportSize({ width: 640, height: 480 });
    await settled(page);
    const narrow = await networkOnScreen(page);
    assert.ok(narrow.w < wide.w && narrow.h < wide.h, 'the map is smaller in the smaller window');
    assert.ok(wholeNetworkInView(narrow), `in view at 640x480: ${JSON.stringify(narrow)}`);
    assert.ok(narrow.scale < wide.scale, 'zoomed out to fit');
    assert.deepEqual(narrow.center, wide.center);
    // Zoomed by the user, the view is theirs: a larger window keeps its scale and centre.
    await page.keyboard.press('+');
    const zoomed = await networkOnScreen(page);
    await page.setViewportSize({ width: 1280, height: 800 });
    await settled(page);
    const kept = await networkOnScreen(page);
    assert.ok(kept.w > zoomed.w, 'the map grew with the window');
    assert.deepEqual([kept.scale, kept.center], [zoomed.scale, zoomed.center]);
    // Fit takes the window's size again, and follows it from then on.
    await page.keyboard.press('f');
    await settled(page);
    const refitted = await networkOnScreen(page);
    assert.deepEqual([refitted.scale, refitted.center], [wide.scale, wide.center]);
    await closeClean(page);
  });

  it('draws a traffic light as a stub at its stop line, not a line across the junction', async () => {
    const net = (await loadRoadNetwork(store, demo))!;
    const lanes = new Map(net.lanes.map((l) => [l.id, l]));
    const lengthOf = (line: readonly (readonly number[])[]): number =>
      line.slice(1).reduce((sum, p, i) => sum + Math.hypot(p[0]! - line[i]![0]!, p[1]! - line[i]![1]!), 0);
    // A connection through a junction, long enough that its middle is far from every stop line.
    const through = net.connections.find(
      (c) => c.trafficLight !== undefined && c.via && lengthOf(lanes.get(c.via)!.centerLine) > 16,
    )!;
    assert.ok(through, 'the demo town has signalled junctions');
    const line = lanes.get(through.via!)!.centerLine;
    const page = await openRun(`#/runs/${demo}`);
    // Only the road and its lights: the actors are set aside so none covers the points read.
    const colours = await page.evaluate(
      ([light, index, points]) => {
        const view = window.simrecView;
        const map = view.map;
        map.state = {
          ...map.state,
          poses: new Map(),
          trails: new Map(),
          futures: new Map(),
          highlighted: new Set(),
        };
        const state = map.state.lightStates.get(light)[index];
        map.scale = 10;
        return {
          state,
          at: points.map(([x, y]: number[]) => {
            map.center = { x, y };
            map.draw();
            const p = map.toScreen(x, y);
            const ratio = window.devicePixelRatio || 1;
            const d = map.canvas
              .getContext('2d')
              .getImageData(Math.round(p.x * ratio), Math.round(p.y * ratio), 1, 1).data;
            return `rgb(${d[0]},${d[1]},${d[2]})`;
          }),
        };
      },
      [
        through.trafficLight!,
        through.linkIndex!,
        [along(line, 1), along(line, lengthOf(line) / 2)].map((p) => [p.x, p.y]),
      ] as [string, number, number[][]],
    );
    const hex = (rgb: string): string =>
      '#' +
      rgb
        .match(/\d+/g)!
        .map((n) => Number(n).toString(16).padStart(2, '0'))
        .join('');
    const LIGHTS: Record<string, string> = { r: '#e74c3c', y: '#f1c40f', g: '#2ecc71', G: '#27ae60' };
    assert.equal(
      hex(colours.at[0]!),
      LIGHTS[colours.state],
      `1 m past the stop line: the light's ${colours.state}`,
    );
    assert.equal(hex(colours.at[1]!), '#4a5055', 'the middle of the junction: road grey, not the light');
    await closeClean(page);
  });

  it("draws a still view's roads once, copies them after, and draws each frame's lights over them", async () => {
    const net = (await loadRoadNetwork(store, demo))!;
    const lanes = new Map(net.lanes.map((l) => [l.id, l]));
    const signalled = net.connections.find((c) => c.trafficLight !== undefined && c.via)!;
    const stub = along(lanes.get(signalled.via!)!.centerLine, 1);
    const page = await openRun(`#/runs/${demo}`);
    await page.getByTestId('follow').uncheck();
    const drawn = await page.evaluate(
      ([light, x, y]) => {
        const map = window.simrecView.map;
        const ratio = window.devicePixelRatio || 1;
        // Every pixel of the map, folded into one number: two frames alike have the same.
        const pixels = (): number => {
          const d = map.canvas.getContext('2d').getImageData(0, 0, map.canvas.width, map.canvas.height).data;
          let h = 0;
          for (let i = 0; i < d.length; i++) h = (Math.imul(h, 31) + d[i]) | 0;
          return h;
        };
        const stubColour = (): string => {
          const p = map.toScreen(x, y);
          const d = map.canvas
            .getContext('2d')
            .getImageData(Math.round(p.x * ratio), Math.round(p.y * ratio), 1, 1).data;
          return `${d[0]},${d[1]},${d[2]}`;
        };
        // Three frames at each of two views: the first draws the roads, the second into the image it
        // copies, the third copies that image.
        const frames = (cx: number): { painted: number; pixels: number }[] =>
          [0, 1, 2].map(() => {
            map.center = { x: cx, y };
            const before = map.roadsPainted;
            map.draw();
            return { painted: map.roadsPainted - before, pixels: pixels() };
          });
        map.scale = 10;
        const still = frames(x);
        const moved = frames(x + 3);
        // The light's state changes while the view holds still: the frame shows it at once.
        const lights = (ch: string): void => {
          const states = new Map<string, string>(map.state.lightStates);
          // Every link of the light: the stubs leaving one stop line overlap there.
          states.set(light, ch.repeat(states.get(light)!.length));
          map.state = {
            ...map.state,
            lightStates: states,
            poses: new Map(),
            trails: new Map(),
            futures: new Map(),
          };
        };
        map.center = { x, y };
        map.draw();
        map.draw();
        const before = map.roadsPainted;
        lights('r');
        map.draw();
        const red = stubColour();
        lights('G');
        map.draw();
        return { still, moved, red, green: stubColour(), painted: map.roadsPainted - before };
      },
      [signalled.trafficLight!, stub.x, stub.y] as [string, number, number],
    );
    for (const [name, frames] of [
      ['a still view', drawn.still],
      ['the view moved', drawn.moved],
    ] as const) {
      assert.deepEqual(
        frames.map((f) => f.painted),
        [1, 1, 0],
        `${name}: roads drawn, drawn into the image, copied`,
      );
      assert.equal(
        frames[1]!.pixels,
        frames[0]!.pixels,
        `${name}: the image copied is the frame drawn directly`,
      );
      assert.equal(frames[2]!.pixels, frames[0]!.pixels, `${name}: copied again, alike`);
    }
    assert.notEqual(drawn.moved[0]!.pixels, drawn.still[0]!.pixels, 'another view, other pixels');
    assert.equal(drawn.red, '231,76,60', "the stub in the light's red");
    assert.equal(drawn.green, '39,174,96', "then in its green, the roads' image kept");
    assert.equal(drawn.painted, 0, 'the roads are not drawn again for a light');
    await closeClean(page);
  });

  it('draws an actor at its pose, turned by its heading, its light band at its front', async () => {
    const net = (await loadRoadNetwork(store, demo))!;
    const page = await openRun(`#/runs/${demo}`);
    await page.getByTestId('follow').uncheck();
    // Beyond the network, on the background: one vehicle, heading 30 degrees left of east.
    const [x, y] = [net.boundary.max[0] + 60, net.boundary.max[1] + 60];
    const yaw = Math.PI / 6;
    const colours = await page.evaluate(
      ([x, y, yaw]) => {
        const map = window.simrecView.map;
        const ratio = window.devicePixelRatio || 1;
        const vehicle = [...map.state.actors.values()].find((a: { kind: string }) => a.kind === 'vehicle');
        map.state = {
          ...map.state,
          poses: new Map([[vehicle.id, { x, y, yaw }]]),
          trails: new Map(),
          futures: new Map(),
          highlighted: new Set(),
          selected: null,
        };
        map.scale = 20;
        map.center = { x, y };
        map.draw();
        const length = vehicle.extents?.length || 4.5;
        // Along the heading (metres ahead) and across it (metres to the left).
        const at = (ahead: number, left: number): string => {
          const p = map.toScreen(
            x + ahead * Math.cos(yaw) - left * Math.sin(yaw),
            y + ahead * Math.sin(yaw) + left * Math.cos(yaw),
          );
          const d = map.canvas
            .getContext('2d')
            .getImageData(Math.round(p.x * ratio), Math.round(p.y * ratio), 1, 1).data;
          return `${d[0]},${d[1]},${d[2]}`;
        };
        return {
          front: at(length / 2 - 0.3, 0),
          rear: at(-length / 2 + 0.3, 0),
          middle: at(0, 0),
          side: at(0, 1.5),
          ahead: at(length / 2 + 1, 0),
        };
      },
      [x, y, yaw] as [number, number, number],
    );
    const [r, g, b] = colours.front.split(',').map(Number) as [number, number, number];
    assert.ok(r > 180 && g > 200 && b > 220, `the front: the light band, got ${colours.front}`);
    assert.equal(colours.middle, '41,128,185', "the middle: the vehicle's blue");
    assert.equal(colours.rear, '41,128,185', "the rear: the vehicle's blue");
    assert.equal(colours.side, '30,35,38', 'beside it: the background');
    assert.equal(colours.ahead, '30,35,38', 'ahead of it: the background');
    await closeClean(page);
  });

  it("shows DI-drive's bird's-eye view of the moment on request, as `simrec birdview` draws it (#29)", async () => {
    const page = await openRun(`#/runs/${demo}`);
    const image = page.getByTestId('birdview');
    assert.equal(await image.isVisible(), false, 'hidden until asked for');
    await page.getByTestId('birdview-toggle').check();
    await seek(page, 3);
    type Img = { complete: boolean; naturalWidth: number; naturalHeight: number; src: string };
    await page.waitForFunction(() => {
      const img = document.querySelector('[data-testid="birdview"]') as unknown as Img | null;
      return img !== null && img.complete && img.naturalWidth > 0 && /t=\d+/.test(img.src);
    });
    const shown = await image.evaluate((element) => {
      const img = element as unknown as Img;
      return { width: img.naturalWidth, height: img.naturalHeight, src: img.src };
    });
    assert.deepEqual([shown.width, shown.height], [320, 320]);
    // The same picture the API gives for that moment: the hero's blue at its place, the route's green.
    const t = Number(new URL(shown.src).searchParams.get('t'));
    const png = decodePng(
      new Uint8Array(
        await (await fetch(new URL(`api/runs/${demo}/birdview?t=${t}`, server.url))).arrayBuffer(),
      ),
    );
    assert.deepEqual([png.width, png.height], [320, 320]);
    const lit = (png.data as Uint8Array).some((v, i) => i % 3 === 2 && v > 200);
    assert.ok(lit, 'something is drawn in it');
    const bad = await fetch(new URL(`api/runs/${demo}/birdview?at=-3`, server.url));
    assert.equal(bad.status, 400);
    await closeClean(page);
  });

  it('lists the events by kind in their colours, filters them, and a click jumps to one and rings its actors', async () => {
    const page = await openRun(`#/runs/${demo}`);
    const events = demoEvaluation.events;
    assert.ok(events.length > 1, 'the demo has events');
    assert.equal(await page.getByTestId('event-row').count(), events.length);
    // A mark per event, but events of a kind within a slider step of each other share one.
    const markedEvents = (): Promise<number> =>
      page
        .getByTestId('event-mark')
        .evaluateAll((marks: any[]) => marks.reduce((sum, m) => sum + Number(m.dataset.count), 0));
    assert.equal(await markedEvents(), events.length);
    const kinds = [...new Set(events.map((e) => e.kind))];
    for (const kind of kinds) {
      const listed = await page
        .locator(`[data-testid="event-row"][data-kind="${kind}"] .swatch`)
        .first()
        .evaluate((n: any) => window.getComputedStyle(n).backgroundColor);
      const marked = await page
        .locator(`[data-testid="event-mark"][data-kind="${kind}"]`)
        .first()
        .evaluate((n: any) => window.getComputedStyle(n).backgroundColor);
      assert.equal(listed, marked, `${kind}: one colour in the list and on the timeline`);
    }
    const hidden = kinds[0]!;
    await page.locator(`[data-testid="event-filter"][data-kind="${hidden}"]`).uncheck();
    const rest = events.filter((e) => e.kind !== hidden).length;
    assert.equal(await page.getByTestId('event-row').count(), rest);
    assert.equal(await markedEvents(), rest);
    await page.locator(`[data-testid="event-filter"][data-kind="${hidden}"]`).check();
    // Pick the last event in the list: the time jumps there and its actors are ringed and labelled.
    const last = events[events.length - 1]!;
    await page.getByTestId('event-row').last().click();
    const begin = await page.evaluate(() => window.simrecView.timeline.begin);
    assert.equal(await timeLabel(page), Number(((last.t - begin) / 1e6).toFixed(2)));
    assert.deepEqual(
      await page.evaluate(() => [...window.simrecView.highlighted].sort()),
      [...last.actors].sort(),
    );
    const present = await drawnIds(page);
    const labels: string[] = await page.evaluate(() => window.simrecView.map.drawn.labels);
    for (const a of last.actors.filter((x) => present.includes(x)))
      assert.ok(labels.includes(a), `${a} labelled`);
    // A mark on the timeline picks its event too.
    await page.getByTestId('event-mark').first().click();
    assert.equal(await timeLabel(page), Number(((events[0]!.t - begin) / 1e6).toFixed(2)));
    await page.screenshot({ path: join(ARTIFACTS, 'events.png') });
    await closeClean(page);
  });

  it('shows the run score with which way is better, KPIs with units, and sorts the run list by score', async () => {
    const page = await openRun(`#/runs/${demo}`);
    assert.match(
      (await page.getByTestId('run-score').textContent())!,
      new RegExp(`^${demoEvaluation.score} / 100 higher is better`),
    );
    assert.equal(await page.locator('[data-testid="kpis"] tbody tr').count(), 5);
    await seek(page, 10);
    assert.match(
      (await page.locator('[data-testid="kpis"] tr[data-metric="discomfort"] td.value').textContent())!,
      / m²\/s⁶$/,
    );
    assert.match(
      (await page.locator('[data-testid="kpis"] tr[data-metric="collision"] td.value').textContent())!,
      / s$/,
    );
    await closeClean(page);

    const list = await openRun('#/');
    await list.locator(`tr[data-run="${demo}"]`).waitFor();
    const scoreOf = async (run: number): Promise<string> =>
      (await list.locator(`tr[data-run="${run}"] [data-testid="score"]`).textContent())!;
    assert.equal(await scoreOf(demo), String(demoEvaluation.score));
    assert.equal(await scoreOf(limsim), String(overallScore(limsimMeans(), false)));
    assert.equal(await scoreOf(mock), '–');
    await list.getByTestId('sort-score').click();
    const order = async (): Promise<number[]> =>
      await list
        .locator('tbody tr[data-run]')
        .evaluateAll((rows: any[]) => rows.map((r) => Number(r.dataset.run)));
    const score = new Map([
      [demo, demoEvaluation.score],
      [limsim, overallScore(limsimMeans(), false)],
    ]);
    const scored = [demo, limsim].sort((a, b) => score.get(b)! - score.get(a)!);
    assert.deepEqual((await order()).slice(0, 2), scored, 'best score first');
    await list.getByTestId('sort-score').click();
    assert.deepEqual((await order()).slice(-2), [...scored].reverse(), 'then worst first, unscored first');
    // A row opens its run from anywhere on it.
    await list.locator(`tr[data-run="${limsim}"] td`).nth(1).click();
    await list.locator('#app[data-ready="true"]').waitFor();
    assert.match(list.url(), new RegExp(`#/runs/${limsim}`));
    await closeClean(list);
  });

  it("inspects an actor with units and rounded numbers, its type's attributes apart from its state", async () => {
    const page = await openRun(`#/runs/${limsim}?actor=69`);
    const inspector = page.getByTestId('inspector');
    await inspector.getByTestId('inspector-state').locator('tr[data-field="speed"]').waitFor();
    // LimSim's float32 extents (4.519999980926514) read as people write them.
    assert.equal(
      await inspector.locator('tr[data-field="size"] td').textContent(),
      '4.52 m × 1.92 m × 1.5 m',
    );
    assert.match((await inspector.getByTestId('inspector-attributes').textContent())!, /maxAccel2\.6/);
    const state = inspector.getByTestId('inspector-state');
    assert.match(
      (await state.locator('tr[data-field="speed"] td').textContent())!,
      /^[\d.]+ m\/s \([\d.]+ km\/h\)$/,
    );
    assert.match(
      (await state.locator('tr[data-field="yaw"] td').textContent())!,
      /^-?[\d.e-]+ rad \(-?[\d.e-]+°\)$/,
    );
    assert.match((await state.locator('tr[data-field="accel"] td').textContent())!, / m\/s²$/);
    assert.match((await state.locator('tr[data-field="x"] td').textContent())!, /^-?[\d.]+ m$/);
    // Four significant digits at most: 0.004132 is fine, 4.519999980926514 is float noise.
    assert.doesNotMatch((await inspector.textContent())!, /\.0*[1-9]\d{4,}/, 'no float noise');
    await closeClean(page);
  });

  it("plots with a searchable picker (the selected actor's fields first), several lines, and tiny values told apart", async () => {
    const page = await openRun(`#/runs/${limsim}?actor=69`);
    const plotting = (): Promise<string[]> =>
      page.evaluate(() =>
        performance
          .getEntriesByType('resource')
          .map((e) => e.name)
          .filter((name) => /\/assets\/uPlot[^/]*\.(js|css)$/.test(name)),
      );
    // uPlot is half of the viewer's script: a page loads it when it first plots, not to open a run.
    assert.deepEqual(await plotting(), [], 'uPlot not loaded to open a run');
    await page.getByTestId('plot-search').fill('speed');
    const options = await page
      .getByTestId('plot-option')
      .evaluateAll((b: any[]) => b.map((x) => x.dataset.key));
    assert.ok(options.length > 2, 'every actor has a speed');
    assert.equal(options[0], '69/state:speed', "the selected actor's field first");
    await page.getByTestId('plot-option').first().click();
    await page.getByTestId('plot-search').fill('69 accel');
    await page.getByTestId('plot-option').first().click();
    await page.waitForFunction(() => window.simrecView.plots.series.length === 2);
    assert.equal(await page.getByTestId('plot-chip').count(), 2);
    const loaded = await plotting();
    assert.ok(
      loaded.some((name) => name.endsWith('.js')) && loaded.some((name) => name.endsWith('.css')),
      `uPlot's script and stylesheet loaded once plotting: ${loaded.join(', ')}`,
    );
    // Its stylesheet applies: the layer taking the plot's clicks lies over the canvas, as it says.
    assert.equal(
      await page.evaluate(() => window.getComputedStyle(document.querySelector('.uplot .u-over')).position),
      'absolute',
    );
    // Each line has its values (asked for as that field alone).
    const valued = await page.evaluate(() =>
      window.simrecView.plots.series.map(
        (s: any) => s.v.filter((v: unknown) => typeof v === 'number').length,
      ),
    );
    assert.ok(
      valued.every((n: number) => n > 10),
      `values on each line: ${valued.join(', ')}`,
    );
    assert.equal(
      await page.evaluate(() => window.simrecView.plots.plot.series.length),
      3,
      'time and two lines on one plot',
    );
    // Different units, two labelled axes.
    const axes = await page.evaluate(() => window.simrecView.plots.plot.axes.map((a: any) => a.label));
    assert.deepEqual(axes, ['time (s)', 'm/s', 'm/s²']);
    await page.getByTestId('plot-remove').first().click();
    assert.equal(await page.getByTestId('plot-chip').count(), 1);
    await page.screenshot({ path: join(ARTIFACTS, 'plots.png') });
    await closeClean(page);

    const noise = await openRun(`#/runs/${tiny}`);
    await noise.getByTestId('plot-search').fill('residual');
    await noise.getByTestId('plot-option').first().click();
    await noise.waitForFunction(() => window.simrecView.plots.plot !== null);
    // uPlot draws its ticks on the canvas; these are the texts it drew on the y axis.
    const labels: string[] = await noise.evaluate(() => window.simrecView.plots.plot.axes[1]._values);
    assert.ok(labels.length >= 3, `y axis labelled: ${labels}`);
    assert.equal(new Set(labels).size, labels.length, `labels differ: ${labels}`);
    for (const l of labels) assert.match(l, /e-13$/, `tiny values in exponent form, not 0: ${labels}`);
    await closeClean(noise);
  });

  it('shows capture runs image first with the sensor named, boxes clipped to the image, and counts missing image files', async () => {
    const page = await openRun(`#/runs/${solo}`);
    assert.ok(await page.locator('.run-view.image-first').count(), 'image-first layout');
    // No road, no pose: no empty map beside the image, and no note about a blank map.
    assert.equal(await page.getByTestId('map').count(), 0);
    assert.equal(await page.getByTestId('notes').textContent(), '');
    const img = page.getByTestId('capture').locator('img');
    await page.waitForFunction(() => document.querySelector('[data-testid="capture"] img')?.complete);
    assert.ok((await img.boundingBox())!.width > 600, 'a large image');
    assert.match(
      (await page.locator('.capture-caption').textContent())!,
      /^sensor camera \(The main camera\)/,
    );
    assert.equal(
      await page.locator('.capture-strip .capture-tick').count(),
      2,
      'both captures on the timeline',
    );
    await page.getByTestId('box2d').first().waitFor();
    assert.equal(await page.getByTestId('box2d').count(), 3);
    await page.screenshot({ path: join(ARTIFACTS, 'capture-run.png') });
    await closeClean(page);

    const clipped = await openRun(`#/runs/${boxes}`);
    await clipped.getByTestId('box2d').nth(1).waitFor();
    const image = (await clipped.getByTestId('capture').locator('img').boundingBox())!;
    for (const b of await clipped.getByTestId('box2d').all()) {
      const r = (await b.boundingBox())!;
      assert.ok(
        r.x >= image.x - 0.5 &&
          r.y >= image.y - 0.5 &&
          r.x + r.width <= image.x + image.width + 0.5 &&
          r.y + r.height <= image.y + image.height + 0.5,
        `box ${JSON.stringify(r)} inside the image ${JSON.stringify(image)}`,
      );
    }
    await closeClean(clipped);

    // Unity's mock names image files it does not ship: the records are counted, not hidden.
    const missing = await openRun(`#/runs/${mock}`);
    assert.match(
      (await missing.getByTestId('capture-status').textContent())!,
      /^3 capture records; 3 of their image files are missing/,
    );
    await closeClean(missing);
  });

  it("shows a live run's camera images as they arrive, captured or attached, on the timeline's strip and at the cursor", async () => {
    // A simulator with a camera, recording through the server's ingest as the Python client does.
    const client = await IngestClient.connect({
      url: `${server.url.replace(/^http/, 'ws')}ingest`,
      simulator: { name: 'camera-live' },
    });
    const run = await client.beginRun({ description: 'a camera, live' });
    await client.declareActors([
      { id: 'ego', kind: 'ego', extents: { length: 4.5, width: 1.8, height: 1.5 } },
    ]);
    await client.declareStreams([stateStream('ego')]);
    await client.declareSensors([
      { id: 'front', actor: 'ego', modality: 'camera', width: 8, height: 4, fov: 1.2, captureInterval: 0 },
    ]);
    const image = encodePng(8, 4, 3, new Uint8Array(8 * 4 * 3).fill(120));
    const drive = async (from: number, to: number): Promise<void> => {
      const steps = Array.from({ length: to - from }, (_, i) => from + i);
      await client.append({
        'ego/state': steps.map((step) => ({ t: BEGIN + step * 100_000, step, x: step, y: 0, yaw: 0 })),
      });
      await client.capture({
        sensor: 'front',
        t: BEGIN + from * 100_000,
        step: from,
        mediaType: 'image/png',
        data: image,
      });
    };
    try {
      await drive(0, 10);
      const page = await openRun(`#/runs/${run}`);
      const caption = page.locator('.capture-caption');
      await caption.getByText('front/00000000.png').waitFor();
      assert.equal(await page.getByTestId('capture-status').textContent(), '1 capture.');
      // Two more seconds and a second image: counted, marked on the strip, and shown where it was taken.
      await drive(10, 30);
      await page.getByTestId('capture-status').getByText('2 captures.').waitFor();
      await page.waitForFunction(
        () => document.querySelectorAll('.capture-strip .capture-tick').length === 2,
      );
      await seek(page, 1.5);
      await caption.getByText('front/00000010.png').waitFor();
      await seek(page, 0.5);
      await caption.getByText('front/00000000.png').waitFor();
      // An image attached without a sample (a simulator that sends its camera's files as attachments):
      // the run's samples do not change, its attachments do, and the page hears of it.
      await client.attach({
        name: 'front/00000020.png',
        mediaType: 'image/png',
        t: BEGIN + 20 * 100_000,
        metadata: { sensor: 'front' },
        data: image,
      });
      await page.getByTestId('capture-status').getByText('3 captures.').waitFor();
      await page.waitForFunction(
        () => document.querySelectorAll('.capture-strip .capture-tick').length === 3,
      );
      await seek(page, 2.5);
      await caption.getByText('front/00000020.png').waitFor();
      await closeClean(page);
    } finally {
      await client.endRun('user_request');
      await client.close();
    }
  });

  it('keeps the run, the time and the selected actor in the address, so a moment can be shared', async () => {
    const page = await openRun(`#/runs/${limsim}?t=1.5&actor=67`);
    assert.equal(await timeLabel(page), 1.5);
    await page.getByTestId('inspector').locator('tr[data-field="id"] td').getByText('67').waitFor();
    assert.ok(
      (await page.evaluate(() => window.simrecView.map.drawn.labels)).includes('67'),
      'the selected actor is labelled',
    );
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => window.location.hash.includes('t=1.60'));
    assert.match(page.url(), new RegExp(`#/runs/${limsim}\\?t=1\\.60&actor=67$`));
    // Opened again from that address: the same moment.
    const again = await openRun(new URL(page.url()).hash);
    assert.equal(await timeLabel(again), 1.6);
    assert.equal(await again.evaluate(() => window.simrecView.selected), '67');
    await closeClean(again);
    await closeClean(page);
  });

  it('answers keys: space plays and pauses, arrows step, + and - zoom, f fits', async () => {
    const page = await openRun(`#/runs/${demo}`);
    const state = (): Promise<{ playing: boolean; t: number; scale: number }> =>
      page.evaluate(() => ({
        playing: window.simrecView.timeline.playing,
        t: window.simrecView.timeline.t - window.simrecView.timeline.begin,
        scale: window.simrecView.map.scale,
      }));
    const opened = await state();
    await page.keyboard.press(' ');
    assert.equal((await state()).playing, true);
    await page.keyboard.press(' ');
    const paused = await state();
    assert.equal(paused.playing, false);
    await page.keyboard.press('ArrowRight');
    assert.equal((await state()).t, paused.t + 100_000);
    await page.keyboard.press('ArrowLeft');
    assert.equal((await state()).t, paused.t);
    await page.keyboard.press('+');
    assert.ok(Math.abs((await state()).scale - opened.scale * 1.25) < 1e-9);
    await page.keyboard.press('-');
    await page.keyboard.press('-');
    assert.ok((await state()).scale < opened.scale);
    await page.keyboard.press('f');
    assert.equal((await state()).scale, opened.scale);
    // Typing in the plot search is typing, not a shortcut.
    await page.getByTestId('plot-search').fill('');
    await page.getByTestId('plot-search').press('f');
    assert.equal(await page.getByTestId('plot-search').inputValue(), 'f');
    await closeClean(page);
  });

  it('plays a run that samples fast in short windows of states, and draws the actors present across their edges', async () => {
    // 250 cars at 100 Hz for 12 s (25,000 samples a second: windows of 2 s, the walker's interval
    // doubled, longer than 30,000 samples' 1.2 s), a pedestrian at 1 Hz, and a car that leaves at 5 s.
    const rec = await RunRecorder.begin(store, { simulator: { name: 'fast-sampling' }, begin: BEGIN });
    const cars = Array.from({ length: 250 }, (_, i) => `car${i}`);
    await rec.declareActors([
      ...cars.map((id) => ({ id, kind: 'vehicle' as const })),
      { id: 'walker', kind: 'pedestrian' as const },
    ]);
    await rec.declareStreams([...cars.map((id) => stateStream(id, { rateHz: 100 })), stateStream('walker')]);
    for (let step = 0; step <= 1200; step++) {
      const t = BEGIN + step * 10_000;
      // car7 is in the frames until it leaves.
      const actors = step <= 500 ? cars : cars.filter((id) => id !== 'car7');
      const index = actors.map((id) => Number(id.slice(3)));
      const columns = {
        x: Float64Array.from(index, (i) => Math.floor(i / 25) * 10 + step * 0.01),
        y: Float64Array.from(index, (i) => (i % 25) * 4),
        yaw: new Float64Array(actors.length),
        speed: new Float64Array(actors.length),
      };
      await rec.appendFrame('state', { t, step, actors, columns });
      if (step % 100 === 0)
        await rec.append('walker/state', { t, step: step / 100, x: -5, y: 0, yaw: 0, speed: 1 });
      if (step === 500) await rec.leave('car7', t + 5_000);
    }
    const fast = (await rec.end('completed')).id;

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    (page as Page & { errors: string[] }).errors = errors;
    const windows: number[] = [];
    // Windows asked for by their bounds (the first, the page's moment, is asked for by the moment), over
    // HTTP or, once it is open, the live channel.
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname.endsWith(`/runs/${fast}/states`) && url.searchParams.has('from'))
        windows.push(Number(url.searchParams.get('to')) - Number(url.searchParams.get('from')) + 1);
    });
    page.on('websocket', (socket) =>
      socket.on('framesent', ({ payload }) => {
        const message = JSON.parse(String(payload)) as { type: string; from?: number; to?: number };
        if (message.type === 'states' && message.from !== undefined)
          windows.push(message.to! - message.from + 1);
      }),
    );
    await page.goto(new URL(`#/runs/${fast}`, server.url).toString());
    await page.locator('#app[data-ready="true"]').waitFor();
    await page.waitForFunction(() => window.simrecView?.framesDrawn > 0);
    for (const at of [0.5, 3.99, 4.0, 4.01, 4.5, 5.2, 7.999, 8.3, 11.9, 12]) {
      // A frame drawn after the seek: its window loaded (a frame is not drawn before it is).
      const before = await page.evaluate((s) => {
        const view = window.simrecView;
        const drawn = view.framesDrawn;
        view.timeline.seek(view.timeline.begin + s * 1e6);
        return drawn;
      }, at);
      await page.waitForFunction((n) => window.simrecView.framesDrawn > n, before);
      const scene = await sceneAt(store, fast, { t: BEGIN + Math.round(at * 1e6) });
      assert.deepEqual(await drawnIds(page), scene.actors.map((a) => a.id).sort(), `at ${at} s`);
    }
    assert.ok(!(await drawnIds(page)).includes('car7'), 'the car that left is not drawn');
    assert.ok(windows.length >= 3, `windows fetched: ${windows.length}`);
    assert.ok(
      windows.every((w) => w === 2_000_000),
      `every window 2 s long (twice the walker's interval; 30,000 samples at 25,001 a second is 1.2 s): ${windows.join(', ')}`,
    );
    await closeClean(page);
  });
});
