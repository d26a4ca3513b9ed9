/**
 * The viewer in headless Chromium: frames per second while playing a run of 500 actors (the 30 fps
 * target) and of 2,000 (reported, to see how it scales), and the time
 * from opening a one-hour run's page to its first drawn frame. Measured in the browser, on the same
 * machine as the server, so it is a ratio to the 30 fps target rather than a portable number.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../src/store/open-store.js';
import { startServer } from '../src/server/start-server.js';
import { TrafficGenerator, type BenchSize } from './generator.js';
import { simrecPeer } from './peers/simrec.js';
import { chromiumMissing, launchChromium } from './chromium.js';

// Read inside the page (page.evaluate); the Node compilation has no DOM types, on purpose.
declare const window: { simrecView?: { framesDrawn: number } };

interface Playback {
  actors: number;
  fps: number;
  seconds: number;
  frames: number;
}

export interface ViewerResults {
  skipped?: string;
  playback?: Playback;
  /** The same at four times the actors: reported, not held to the target. */
  playbackLarge?: Playback;
  firstFrame?: { actors: number; runSeconds: number; ms: number };
}

async function recordRun(dir: string, size: BenchSize): Promise<void> {
  mkdirSync(dir, { recursive: true });
  await simrecPeer.record({ dir, frames: new TrafficGenerator(size), commitEverySteps: 100 });
}

export async function measureViewer(scratch: string, quick: boolean): Promise<ViewerResults> {
  const missing = chromiumMissing();
  if (missing) return { skipped: missing };
  const playbackSize: BenchSize = { actors: quick ? 50 : 500, steps: quick ? 100 : 600, hz: 10 };
  const largeSize: BenchSize = { ...playbackSize, actors: playbackSize.actors * 4 };
  const longSize: BenchSize = { actors: quick ? 20 : 100, steps: quick ? 600 : 36_000, hz: 10 };
  const playbackDir = join(scratch, 'viewer-playback');
  const longDir = join(scratch, 'viewer-hour');
  const largeDir = join(scratch, 'viewer-playback-large');
  await recordRun(playbackDir, playbackSize);
  await recordRun(largeDir, largeSize);
  await recordRun(longDir, longSize);
  const browser = await launchChromium();
  const results: ViewerResults = {};
  try {
    for (const [dir, kind, size] of [
      [playbackDir, 'playback', playbackSize],
      [largeDir, 'playbackLarge', largeSize],
      [longDir, 'firstFrame', longSize],
    ] as const) {
      const store = await openStore(join(dir, 'bench.simrec.db'));
      const server = await startServer({ store, port: 0 });
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
        const opened = performance.now();
        await page.goto(new URL('#/runs/1', server.url).toString());
        await page.waitForFunction(() => (window.simrecView?.framesDrawn ?? 0) > 0, undefined, {
          timeout: 120_000,
        });
        const firstFrameMs = performance.now() - opened;
        if (kind === 'firstFrame') {
          results.firstFrame = {
            actors: longSize.actors,
            runSeconds: longSize.steps / longSize.hz,
            ms: Math.round(firstFrameMs),
          };
        } else {
          // Let the first window of states arrive, then play at 1x for a few seconds.
          await page.waitForTimeout(1000);
          const before = await page.evaluate(() => window.simrecView?.framesDrawn ?? 0);
          await page.getByTestId('play').click();
          const seconds = quick ? 2 : 5;
          await page.waitForTimeout(seconds * 1000);
          const after = await page.evaluate(() => window.simrecView?.framesDrawn ?? 0);
          const frames = after - before;
          results[kind] = {
            actors: size.actors,
            fps: Math.round((frames / seconds) * 10) / 10,
            seconds,
            frames,
          };
        }
        await page.close();
      } finally {
        await server.close();
        await store.close();
      }
    }
  } finally {
    await browser.close();
  }
  return results;
}

export function formatViewer(v: ViewerResults): string {
  if (v.skipped) return `viewer: skipped: ${v.skipped}`;
  const lines = ['viewer (headless Chromium, this machine):'];
  for (const p of [v.playback, v.playbackLarge])
    if (p)
      lines.push(
        `  playback of ${p.actors} actors: ${p.fps} fps (${(p.fps / 30).toFixed(2)}x the 30 fps target)`,
      );
  if (v.firstFrame)
    lines.push(
      `  first frame of a ${v.firstFrame.runSeconds / 60} min run of ${v.firstFrame.actors} actors: ${v.firstFrame.ms} ms after opening its page`,
    );
  return lines.join('\n');
}
