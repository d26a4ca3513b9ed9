/**
 * A CARLA recording in the viewer (#51), in Debian's Chromium: ScenarioRunner's real recording with
 * Town01's OpenDRIVE, its criteria shown as ScenarioRunner judged them (a real results file with
 * failures), and the map following the hero as it drives.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { importRecording } from '../src/record/import-run.js';
import { sceneAt } from '../src/replay/run-queries.js';
import { REPO_ROOT } from './helpers/paths.js';
import { closeClean, openWatchedPage, viewerSession, type WatchedPage } from './helpers/viewer-session.js';

declare const window: any;

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'scenario_runner');
const CRITERIA = join(FIXTURES, 'CriteriaFilter_criteria.json');

let run: number;
let hero: string;
const viewer = viewerSession(
  'viewer-carla',
  async (store) => {
    const { runs } = await importRecording(store, 'carla', join(FIXTURES, 'DistanceToLaneCenter.log'), {
      settings: {
        xodr: join(REPO_ROOT, 'test', 'fixtures', 'carla-maps', 'Town01.xodr'),
        criteria: CRITERIA,
      },
    });
    run = runs[0]!.id;
    hero = (await store.listActors(run)).find((a) => a.kind === 'ego')!.id;
  },
  (dir) => ({ settingsFile: join(dir, 'settings.json') }),
);

const openRun = (): Promise<WatchedPage> =>
  openWatchedPage(viewer.browser, new URL(`#/runs/${run}`, viewer.server.url).toString(), { ready: true });

describe('a CARLA recording in the viewer', () => {
  it("shows ScenarioRunner's criteria as its results file has them, and the verdict", async () => {
    const page = await openRun();
    const file = JSON.parse(readFileSync(CRITERIA, 'utf8')) as Record<
      string,
      { test_status: string; actual_value: unknown }
    >;
    const rows = await page.$$eval('[data-testid="criteria"] tr[data-criterion]', (trs) =>
      trs.map((tr) => [
        tr.getAttribute('data-criterion'),
        tr.querySelector('.status')!.textContent,
        tr.querySelector('td.num')!.textContent,
      ]),
    );
    assert.deepEqual(
      rows.map(([name, status]) => [name, status]),
      Object.entries(file).map(([name, c]) => [name, c.test_status]),
    );
    const collision = rows.find(([name]) => name === 'CollisionTest')!;
    assert.equal(collision[2], String(file.CollisionTest!.actual_value), 'the actual value, as written');
    const failed = Object.entries(file)
      .filter(([, c]) => c.test_status === 'FAILURE')
      .map(([name]) => name);
    assert.equal(
      await page.getByTestId('criteria-verdict').textContent(),
      `ScenarioRunner: FAILURE (${failed.join(', ')} failed)`,
    );
    await closeClean(page);
  });

  it('follows the hero: the map keeps it at its centre while it drives', async () => {
    const page = await openRun();
    await page.getByTestId('follow').check();
    const detail = await page.evaluate(() => ({
      begin: window.simrecView.timeline.begin as number,
      end: window.simrecView.timeline.end as number,
    }));
    const centres: { x: number; y: number }[] = [];
    for (const fraction of [0.2, 0.8]) {
      const t = Math.round(detail.begin + fraction * (detail.end - detail.begin));
      const pose = (await sceneAt(viewer.store, run, { t })).actors.find((a) => a.id === hero)!;
      await page.evaluate((at) => window.simrecView.timeline.seek(at), t);
      // The window of states around t may still be on its way: the map follows once it is drawn.
      await page.waitForFunction(
        ([x, y]: number[]) => {
          const c = window.simrecView.map.center as { x: number; y: number };
          return Math.hypot(c.x - x!, c.y - y!) < 1;
        },
        [pose.x as number, pose.y as number],
        { timeout: 10_000 },
      );
      centres.push(await page.evaluate(() => ({ ...window.simrecView.map.center })));
    }
    const moved = Math.hypot(centres[1]!.x - centres[0]!.x, centres[1]!.y - centres[0]!.y);
    assert.ok(moved > 10, `the hero drove and the map went with it (${moved.toFixed(1)} m)`);
    await closeClean(page);
  });
});
