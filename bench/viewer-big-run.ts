/**
 * The viewer on a big run, as a user meets it: an hour of the demo's traffic with 300 vehicles at 10 Hz
 * (about 10 M samples), recorded by `simrec demo`, served by `simrec serve` in a process of its own
 * (its memory is the server's alone), opened in headless Chromium. Measured: a fresh page opened at
 * five moments (time from navigation to that moment's actors drawn), seeks by the slider (time from
 * the slider's input to the frame at its moment), playing at 10x (frames drawn a second and stalls,
 * gaps of over 100 ms between frames), the page's JavaScript heap and the server's resident memory,
 * with one page, three on the run, and two on each of two such runs (a second recorded with another
 * seed: into a store given by SIMREC_BENCH_BIG_RUN too, when it holds one run). Beside the viewer, what a
 * user does next with such runs, each command in a process of its own: `simrec eval 1`, `simrec diff 1 2`,
 * a fresh process's first scene and first trajectory of the run (first-read.ts) and the run's tables
 * written as a server writes them.
 * Times are taken inside the page (performance.now()), so the polling of the benchmark adds nothing.
 */
import { spawn, execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { median, quantile } from './stats.js';
import type { TargetResult } from './targets.js';
import { chromiumMissing, launchChromium } from './chromium.js';
import type { FirstRead } from './first-read.js';
import { openStore } from '../src/store/open-store.js';
import { keepTablesInStep, type KeepTables } from '../src/tables/keep-tables.js';
import { TablesFolder } from '../src/tables/tables-folder.js';
import { keepTablesOnThreads } from '../src/tables/tables-writer-threads.js';

/** Compiled to dist/bench/: the command line is dist/src/cli/main.js. */
const CLI = resolve(fileURLToPath(import.meta.url), '..', '..', 'src', 'cli', 'main.js');

// Read inside the page (page.evaluate); the Node compilation has no DOM types, on purpose.
interface ViewInPage {
  framesDrawn: number;
  presentCount: number;
  drawn: { t: number; at: number };
  timeline: {
    t: number;
    begin: number;
    end: number;
    slider: { value: string; dispatchEvent(e: unknown): void };
  };
}
declare const window: { simrecView?: ViewInPage | null };
declare function requestAnimationFrame(f: (now: number) => void): void;
declare const performance: { now(): number };
declare class Event {
  constructor(type: string);
}

export interface BigRunSize {
  vehicles: number;
  seconds: number;
}
export const BIG_RUN_FULL: BigRunSize = { vehicles: 300, seconds: 3600 };
export const BIG_RUN_QUICK: BigRunSize = { vehicles: 30, seconds: 120 };

export interface BigRunViewerResults {
  skipped?: string;
  size?: BigRunSize & { samples: number };
  /**
   * Milliseconds from a fresh page's navigation to its moment's actors drawn, at 10, 30, 50, 70, 90 %,
   * and the work each open took, which moves less with the machine's load than its time does.
   */
  opened?: ({ at: number; ms: number; actors: number } & OpenWork)[];
  openedMedianMs?: number;
  openedWorstMs?: number;
  /** The work of the opens at the median, field by field. */
  openedWorkMedian?: OpenWork;
  /** Milliseconds from the slider's input to the frame at its moment. */
  seekP50Ms?: number;
  seekP95Ms?: number;
  seeks?: number;
  /** Playing at 10x. */
  play?: { seconds: number; fps: number; stalls: number; longestGapMs: number };
  /** The page's JavaScript heap (MiB): its peak while playing. */
  pageHeapPeakMiB?: number;
  /** The server's resident memory (MiB): after start, and its peak while pages opened, sought and played. */
  serverStartMiB?: number;
  serverPeakMiB?: number;
  /** Three pages playing the run at once, at three moments: the server's peak meanwhile. */
  threeViewersServerPeakMiB?: number;
  /**
   * Two pages on each of two big runs of the store (the second recorded as the first, another seed),
   * all four playing at 10x at once: the server's peak meanwhile, and each page's frames a second (four
   * pages drawing on two cores measure the machine as much as the server).
   */
  severalRuns?: { runs: number; pages: number; serverPeakMiB: number; fps: number[]; stalls: number };
  /** `simrec eval 1` on the run, in a process of its own: its time and peak resident memory. */
  evaluation?: { seconds: number; peakMiB: number; frames: number; events: number };
  /** `simrec diff 1 2` of the two big runs. */
  diff?: { seconds: number; peakMiB: number; streams: number };
  /**
   * A fresh process's first read of the run once the store is open, as `simrec scene` and `simrec traj`
   * make it: a scene at the run's middle, the ego's whole trajectory (ms; the median, and each process's).
   */
  firstReads?: {
    sceneMs: number;
    scenes: number[];
    actors: number;
    trajectoryMs: number;
    trajectories: number[];
    samples: number;
  };
  /**
   * The run's tables written as a server writes them when a run ends, on its own thread and on a worker
   * thread: seconds, and the longest its thread was held meanwhile (ms).
   */
  tablesWrite?: {
    onThread: { seconds: number; longestPauseMs: number };
    onWorker: { seconds: number; longestPauseMs: number };
  };
  /** #53's targets for the viewer on an hour of 300 vehicles (the quick run's are reported, not held). */
  targets?: TargetResult[];
}

/**
 * What an open cost, from the page's navigation to its moment's actors drawn: the page's main thread
 * busy (Chromium's TaskDuration), of which running script and laying out (ScriptDuration, LayoutDuration
 * with RecalcStyleDuration), and the server's CPU time (user and system, to the clock's tick).
 */
export interface OpenWork {
  pageBusyMs: number;
  pageScriptMs: number;
  pageLayoutMs: number;
  serverCpuMs: number;
}

/** #53's targets, from what this section measured. */
function bigRunTargets(r: BigRunViewerResults): TargetResult[] {
  const target = (id: string, goal: string, met: boolean, measured: string): TargetResult => ({
    id,
    goal,
    met,
    measured,
  });
  return [
    target(
      'viewer-open-median',
      "a fresh page at a moment shows that moment's actors within 500 ms at the median",
      r.openedMedianMs! <= 500,
      `${r.openedMedianMs} ms`,
    ),
    target(
      'viewer-open-worst',
      '... and within 1 s at worst',
      r.openedWorstMs! <= 1000,
      `${r.openedWorstMs} ms`,
    ),
    target(
      'viewer-seek-p95',
      'a seek by the slider within 300 ms at p95',
      r.seekP95Ms! <= 300,
      `${r.seekP95Ms} ms`,
    ),
    target(
      'viewer-play-10x',
      '10x playback at 30 fps or more without a stall',
      r.play!.fps >= 30 && r.play!.stalls === 0,
      `${r.play!.fps} fps, ${r.play!.stalls} stalls`,
    ),
    target(
      'viewer-server-memory',
      'the server under 400 MiB while a page plays it',
      r.serverPeakMiB! < 400,
      `${r.serverPeakMiB} MiB`,
    ),
  ];
}

const run = promisify(execFile);

/** Records the demo's big run into `store`, as `simrec demo --no-serve` does; `seed` picks its traffic. */
async function recordBigRun(store: string, size: BigRunSize, seed = 1): Promise<void> {
  await run(
    process.execPath,
    [
      CLI,
      'demo',
      '--no-serve',
      '--duration',
      String(size.seconds),
      '--vehicles',
      String(size.vehicles),
      '--seed',
      String(seed),
      '--store',
      store,
    ],
    { maxBuffer: 64 * 2 ** 20 },
  );
}

/**
 * A simrec command on the big run as a user runs it, in a process of its own: its wall time, peak
 * resident memory and what it printed. `exitCodes`: the codes that mean it worked.
 */
async function timedCommand(
  args: string[],
  exitCodes: readonly number[] = [0],
): Promise<{ seconds: number; peakMiB: number; printed: string }> {
  const start = performance.now();
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let printed = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  // Its high-water mark, read while it runs (gone with it once it exits).
  let peakMiB = 0;
  const watch = setInterval(() => {
    try {
      const kib = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
      peakMiB = Math.max(peakMiB, Math.round((kib / 1024) * 10) / 10);
    } catch {
      // exited between two readings
    }
  }, 50);
  const code = await new Promise<number | null>((done) => child.on('exit', done)).finally(() =>
    clearInterval(watch),
  );
  if (code === null || !exitCodes.includes(code))
    throw new Error(`simrec ${args[0]} exited (${code}): ${errors}`);
  return { seconds: Math.round((performance.now() - start) / 100) / 10, peakMiB, printed };
}

/** `simrec eval 1` on the big run (the evaluation stored, its tables written). */
async function evaluateBigRun(store: string): Promise<NonNullable<BigRunViewerResults['evaluation']>> {
  const { seconds, peakMiB, printed } = await timedCommand(['eval', '1', '--store', store, '--json']);
  // One run's summary, as `simrec eval RUN --json` prints it.
  const summary = JSON.parse(printed) as { frames: number; events: unknown[] };
  return { seconds, peakMiB, frames: summary.frames, events: summary.events.length };
}

/** `simrec diff 1 2`: the two big runs (other seeds) compared, every sample of both read. */
async function diffBigRuns(store: string): Promise<NonNullable<BigRunViewerResults['diff']>> {
  // Exit 1: the runs differ, as runs of two seeds do.
  const { seconds, peakMiB, printed } = await timedCommand(
    ['diff', '1', '2', '--store', store, '--json'],
    [0, 1],
  );
  const diff = JSON.parse(printed) as { streams: { compared: number } };
  return { seconds, peakMiB, streams: diff.streams.compared };
}

/** Fresh processes reading the big run each (first-read.ts), scene and trajectory in turn. */
const FIRST_READS = 5;

async function firstReads(store: string): Promise<NonNullable<BigRunViewerResults['firstReads']>> {
  const script = resolve(fileURLToPath(import.meta.url), '..', 'first-read.js');
  const firstRead = async (...what: string[]): Promise<FirstRead> =>
    JSON.parse((await run(process.execPath, [script, store, '1', ...what])).stdout) as FirstRead;
  const scenes: number[] = [];
  const trajectories: number[] = [];
  let actors = 0;
  let samples = 0;
  for (let i = 0; i < FIRST_READS; i++) {
    const scene = await firstRead('scene');
    scenes.push(scene.ms);
    actors = scene.count;
    const trajectory = await firstRead('trajectory', 'ego');
    trajectories.push(trajectory.ms);
    samples = trajectory.count;
  }
  return {
    sceneMs: median(scenes),
    scenes,
    actors,
    trajectoryMs: median(trajectories),
    trajectories,
    samples,
  };
}

/**
 * The run's tables written into a folder of their own, once on this thread (as a server did) and once
 * on a thread of its own (as it does), while a timer every 10 ms measures how long this thread is
 * held: what a viewer of the server waits for its windows, seeks and live updates meanwhile.
 */
async function tablesWritePauses(
  storePath: string,
  dir: string,
): Promise<NonNullable<BigRunViewerResults['tablesWrite']>> {
  const store = await openStore(storePath);
  try {
    const measure = async (keep: KeepTables, name: string) => {
      const path = join(dir, `tables-${name}`);
      rmSync(path, { recursive: true, force: true });
      let last = performance.now();
      let longest = 0;
      const timer = setInterval(() => {
        const now = performance.now();
        longest = Math.max(longest, now - last - 10);
        last = now;
      }, 10);
      const start = performance.now();
      try {
        await keep(store, new TablesFolder(path), [1]);
      } finally {
        clearInterval(timer);
      }
      rmSync(path, { recursive: true, force: true });
      return {
        seconds: Math.round((performance.now() - start) / 10) / 100,
        longestPauseMs: Math.round(longest),
      };
    };
    return {
      onThread: await measure(keepTablesInStep, 'on-thread'),
      onWorker: await measure(keepTablesOnThreads({ threads: 1 }), 'on-worker'),
    };
  } finally {
    await store.close();
  }
}

/** `simrec serve` on the store, in its own process; resolves once it printed its address. */
async function serve(store: string, settings: string): Promise<{ url: string; pid: number; stop(): void }> {
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--store', store, '--port', '0', '--settings', settings],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let printed = '';
  const url = await new Promise<string>((done, fail) => {
    child.stdout.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
      const match = /simrec viewer: (\S+)/.exec(printed);
      if (match) done(match[1]!);
    });
    child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    child.on('exit', (code) => fail(new Error(`simrec serve exited (${code}) before serving: ${printed}`)));
  });
  return { url, pid: child.pid!, stop: () => child.kill('SIGTERM') };
}

/** A process's CPU time so far, user and system, in milliseconds (Linux; to the clock's tick). */
function cpuMs(pid: number): number {
  // Fields 14 and 15 of /proc/PID/stat, counted after the command's closing parenthesis.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}
/** Linux's USER_HZ, what /proc counts CPU time in. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Resident memory of a process, MiB (Linux). */
function residentMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kib / 1024) * 10) / 10;
}

/** The server's peak resident memory while `work` runs, sampled every 50 ms. */
async function peakWhile<T>(pid: number, work: () => Promise<T>): Promise<{ value: T; peakMiB: number }> {
  let peak = residentMiB(pid);
  const timer = setInterval(() => (peak = Math.max(peak, residentMiB(pid))), 50);
  try {
    const value = await work();
    return { value, peakMiB: Math.max(peak, residentMiB(pid)) };
  } finally {
    clearInterval(timer);
  }
}

/**
 * Waits in the page until a frame at moment `t` (microseconds) has been drawn; answers when (page ms).
 * The page watches itself, a check a frame: Playwright's waitForFunction would first load its injected
 * script (selector engines and all) into the page while it opens, work a user's page never does, timed
 * as part of the open.
 */
async function drawnAt(page: Page, t: number, timeoutMs = 30_000): Promise<{ at: number; actors: number }> {
  return page.evaluate(
    ({ target, timeout }) =>
      new Promise<{ at: number; actors: number }>((done, fail) => {
        const start = performance.now();
        const look = (): void => {
          const view = window.simrecView;
          if (view && Math.abs(view.drawn.t - target) < 1)
            done({ at: view.drawn.at, actors: view.presentCount });
          else if (performance.now() - start > timeout)
            fail(new Error(`no frame at ${target} within ${timeout} ms`));
          else requestAnimationFrame(look);
        };
        look();
      }),
    { target: t, timeout: timeoutMs },
  );
}

/**
 * A fresh page at `atSeconds` of run `run`: when it drew that moment's actors (ms from its navigation),
 * how many, and, given the server's process, what the open cost (OpenWork).
 */
async function openAt(
  browser: Browser,
  url: string,
  begin: number,
  atSeconds: number,
  run = 1,
  serverPid?: number,
) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const devtools = serverPid === undefined ? null : await context.newCDPSession(page);
  await devtools?.send('Performance.enable');
  const serverBefore = serverPid === undefined ? 0 : cpuMs(serverPid);
  await page.goto(new URL(`#/runs/${run}?t=${atSeconds.toFixed(2)}`, url).toString());
  const { at, actors } = await drawnAt(page, begin + Math.round(atSeconds * 100) * 10_000);
  let work: OpenWork | null = null;
  if (devtools && serverPid !== undefined) {
    const serverCpuMs = Math.round(cpuMs(serverPid) - serverBefore);
    const { metrics } = await devtools.send('Performance.getMetrics');
    const seconds = (name: string): number => metrics.find((m) => m.name === name)?.value ?? 0;
    work = {
      pageBusyMs: Math.round(seconds('TaskDuration') * 1000),
      pageScriptMs: Math.round(seconds('ScriptDuration') * 1000),
      pageLayoutMs: Math.round((seconds('LayoutDuration') + seconds('RecalcStyleDuration')) * 1000),
      serverCpuMs,
    };
  }
  return { page, close: () => context.close(), ms: Math.round(at), actors, work };
}

/** Seeks by the slider, from the page's input to the frame at the new moment. */
async function sliderSeek(page: Page, value: number): Promise<number> {
  return page.evaluate(
    (v) =>
      new Promise<number>((done, fail) => {
        const view = window.simrecView!;
        const start = performance.now();
        view.timeline.slider.value = String(v);
        view.timeline.slider.dispatchEvent(new Event('input'));
        const target = view.timeline.t;
        const wait = (now: number): void => {
          if (Math.abs(view.drawn.t - target) < 1) done(view.drawn.at - start);
          else if (now - start > 20_000) fail(new Error(`no frame at ${target} within 20 s`));
          else requestAnimationFrame(wait);
        };
        requestAnimationFrame(wait);
      }),
    value,
  );
}

/** Plays at 10x for `seconds`: frames drawn, and the gaps between them (a stall is one over 100 ms). */
async function playTenTimes(page: Page, seconds: number) {
  await page.getByTestId('speed').selectOption('10');
  await page.getByTestId('play').click();
  const gaps = await page.evaluate(
    (ms) =>
      new Promise<number[]>((done) => {
        const view = window.simrecView!;
        const times: number[] = [];
        let frames = view.framesDrawn;
        const start = performance.now();
        const watch = (now: number): void => {
          if (view.framesDrawn !== frames) {
            frames = view.framesDrawn;
            times.push(view.drawn.at);
          }
          if (now - start < ms) requestAnimationFrame(watch);
          else done([start, ...times, now]);
        };
        requestAnimationFrame(watch);
      }),
    seconds * 1000,
  );
  await page.getByTestId('play').click();
  const frames = gaps.length - 2;
  const between = gaps.slice(1).map((t, i) => t - gaps[i]!);
  return {
    seconds,
    fps: Math.round((frames / seconds) * 10) / 10,
    stalls: between.filter((g) => g > 100).length,
    longestGapMs: Math.round(Math.max(...between)),
  };
}

/** The page's JavaScript heap in use, MiB, from the DevTools protocol. */
async function pageHeapMiB(page: Page): Promise<number> {
  const session = await page.context().newCDPSession(page);
  await session.send('Performance.enable');
  const { metrics } = await session.send('Performance.getMetrics');
  await session.detach();
  const used = metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0;
  return Math.round((used / 2 ** 20) * 10) / 10;
}

/** What the benchmark reads of a run's detail (`GET /api/runs/:id`). */
interface RunTimes {
  samples: number;
  timeRange: { begin: number; end: number };
}

/** Runs in a store file, read by a connection opened and closed for it. */
async function runCount(path: string): Promise<number> {
  const store = await openStore(path);
  try {
    return (await store.listRuns()).length;
  } finally {
    await store.close();
  }
}

export async function measureBigRunViewer(scratch: string, quick: boolean): Promise<BigRunViewerResults> {
  const missing = chromiumMissing();
  if (missing) return { skipped: missing };
  const size = quick ? BIG_RUN_QUICK : BIG_RUN_FULL;
  // A store recorded before (the same size) may be given, to measure the viewer alone while working on it.
  const given = process.env.SIMREC_BENCH_BIG_RUN;
  const dir = join(scratch, 'big-run');
  mkdirSync(dir, { recursive: true });
  const store = given ?? join(dir, 'big.simrec.db');
  if (!given) await recordBigRun(store, size);
  // A second big run, for several viewers on several runs (recorded into a given store that holds one).
  if ((await runCount(store)) < 2) await recordBigRun(store, size, 2);
  const evaluation = await evaluateBigRun(store);
  const diff = await diffBigRuns(store);
  const reads = await firstReads(store);
  const tablesWrite = await tablesWritePauses(store, dir);
  const server = await serve(store, join(dir, 'settings.json'));
  const browser = await launchChromium();
  const results: BigRunViewerResults = { evaluation, diff, firstReads: reads, tablesWrite };
  try {
    const detail = (await (await fetch(new URL('api/runs/1', server.url))).json()) as RunTimes;
    const { begin, end } = detail.timeRange;
    const runSeconds = (end - begin) / 1e6;
    // The run measured, which a store given by SIMREC_BENCH_BIG_RUN sets.
    results.size = { ...size, seconds: Math.round(runSeconds), samples: detail.samples };
    results.serverStartMiB = residentMiB(server.pid);
    const { peakMiB } = await peakWhile(server.pid, async () => {
      results.opened = [];
      for (const fraction of [0.1, 0.3, 0.5, 0.7, 0.9]) {
        const at = Math.round(runSeconds * fraction);
        const opened = await openAt(browser, server.url, begin, at, 1, server.pid);
        results.opened.push({ at, ms: opened.ms, actors: opened.actors, ...opened.work! });
        await opened.close();
      }
      const times = results.opened.map((o) => o.ms);
      results.openedMedianMs = quantile(times, 0.5);
      results.openedWorstMs = Math.max(...times);
      const median = (key: keyof OpenWork): number =>
        Math.round(
          quantile(
            results.opened!.map((o) => o[key]),
            0.5,
          ),
        );
      results.openedWorkMedian = {
        pageBusyMs: median('pageBusyMs'),
        pageScriptMs: median('pageScriptMs'),
        pageLayoutMs: median('pageLayoutMs'),
        serverCpuMs: median('serverCpuMs'),
      };

      const { page, close } = await openAt(browser, server.url, begin, 0);
      const seeks: number[] = [];
      // Positions spread over the run in a fixed shuffled order, each a jump of a sixth of it or more.
      for (let i = 0; i < (quick ? 6 : 20); i++) {
        seeks.push(await sliderSeek(page, (i * 379 + 97) % 1000));
        await page.waitForTimeout(300);
      }
      results.seeks = seeks.length;
      results.seekP50Ms = Math.round(quantile(seeks, 0.5));
      results.seekP95Ms = Math.round(quantile(seeks, 0.95));
      await sliderSeek(page, 200);
      let heapPeak = await pageHeapMiB(page);
      const heapTimer = setInterval(() => {
        pageHeapMiB(page).then(
          (mib) => (heapPeak = Math.max(heapPeak, mib)),
          () => {}, // the page closed between two samples: the peak stands
        );
      }, 500);
      results.play = await playTenTimes(page, quick ? 3 : 10);
      clearInterval(heapTimer);
      results.pageHeapPeakMiB = heapPeak;
      await close();
    });
    results.serverPeakMiB = peakMiB;

    const three = await peakWhile(server.pid, async () => {
      const pages = await Promise.all(
        [0.2, 0.5, 0.8].map((f) => openAt(browser, server.url, begin, Math.round(runSeconds * f))),
      );
      await Promise.all(pages.map((p) => playTenTimes(p.page, quick ? 3 : 10)));
      await Promise.all(pages.map((p) => p.close()));
    });
    results.threeViewersServerPeakMiB = three.peakMiB;

    // Each run's own span: a store given by SIMREC_BENCH_BIG_RUN may hold runs of other lengths.
    const spanOf = async (run: number): Promise<RunTimes['timeRange']> =>
      ((await (await fetch(new URL(`api/runs/${run}`, server.url))).json()) as RunTimes).timeRange;
    const spans = [detail.timeRange, await spanOf(2)];
    const several = await peakWhile(server.pid, async () => {
      const pages = await Promise.all(
        spans.flatMap((span, i) =>
          [0.25, 0.75].map((f) =>
            openAt(browser, server.url, span.begin, Math.round(((span.end - span.begin) / 1e6) * f), i + 1),
          ),
        ),
      );
      const plays = await Promise.all(pages.map((p) => playTenTimes(p.page, quick ? 3 : 10)));
      await Promise.all(pages.map((p) => p.close()));
      return plays;
    });
    results.severalRuns = {
      runs: 2,
      pages: several.value.length,
      serverPeakMiB: several.peakMiB,
      fps: several.value.map((p) => p.fps),
      stalls: several.value.reduce((n, p) => n + p.stalls, 0),
    };
    results.targets = bigRunTargets(results);
  } finally {
    await browser.close();
    server.stop();
  }
  return results;
}

export function formatBigRunViewer(r: BigRunViewerResults): string {
  if (r.skipped) return `viewer on a big run: skipped: ${r.skipped}`;
  const s = r.size!;
  return [
    `viewer on a big run (${s.seconds / 60} min of ${s.vehicles} demo vehicles, ${s.samples} samples; headless Chromium):`,
    `  a fresh page at a moment: ${r.opened!.map((o) => `${o.at} s ${o.ms} ms`).join(', ')} (median ${r.openedMedianMs} ms, worst ${r.openedWorstMs} ms; targets 500 and 1000)`,
    ...(r.openedWorkMedian
      ? [
          `  an open's work at the median: the page's main thread busy ${r.openedWorkMedian.pageBusyMs} ms (script ${r.openedWorkMedian.pageScriptMs}, style and layout ${r.openedWorkMedian.pageLayoutMs}), the server's CPU ${r.openedWorkMedian.serverCpuMs} ms`,
        ]
      : []),
    `  seek by the slider: p50 ${r.seekP50Ms} ms, p95 ${r.seekP95Ms} ms of ${r.seeks} (target p95 300)`,
    `  playing at 10x: ${r.play!.fps} fps, ${r.play!.stalls} stalls over 100 ms, longest gap ${r.play!.longestGapMs} ms (target 30 fps, no stall)`,
    `  page heap peak ${r.pageHeapPeakMiB} MiB; server ${r.serverStartMiB} MiB after start, peak ${r.serverPeakMiB} MiB (target < 400), ${r.threeViewersServerPeakMiB} MiB with three pages playing`,
    ...(r.severalRuns
      ? [
          `  ${r.severalRuns.pages} pages on ${r.severalRuns.runs} big runs playing at 10x at once: server peak ${r.severalRuns.serverPeakMiB} MiB; ${r.severalRuns.fps.join(', ')} fps, ${r.severalRuns.stalls} stalls in all`,
        ]
      : []),
    ...(r.tablesWrite
      ? [
          `  its tables written as a server does when a run ends: on the server's thread ${r.tablesWrite.onThread.seconds} s, the thread held up to ${r.tablesWrite.onThread.longestPauseMs} ms at a time; on a worker thread ${r.tablesWrite.onWorker.seconds} s, held up to ${r.tablesWrite.onWorker.longestPauseMs} ms`,
        ]
      : []),
    ...(r.evaluation
      ? [
          `  simrec eval 1 on it: ${r.evaluation.seconds} s, peak ${r.evaluation.peakMiB} MiB (${r.evaluation.frames} frames, ${r.evaluation.events} events)`,
        ]
      : []),
    ...(r.diff
      ? [
          `  simrec diff 1 2 (the two big runs, ${r.diff.streams} streams compared): ${r.diff.seconds} s, peak ${r.diff.peakMiB} MiB`,
        ]
      : []),
    ...(r.firstReads
      ? [
          `  a fresh process's first read, the store open: a scene at the middle ${r.firstReads.sceneMs} ms (${r.firstReads.actors} actors), the ego's trajectory ${r.firstReads.trajectoryMs} ms (${r.firstReads.samples} samples); medians of ${r.firstReads.scenes.length} processes`,
        ]
      : []),
    `  targets met: ${r.targets!.filter((t) => t.met).length} of ${r.targets!.length}${
      r.targets!.some((t) => !t.met)
        ? ` (missed: ${r
            .targets!.filter((t) => !t.met)
            .map((t) => `${t.id} ${t.measured}`)
            .join(', ')})`
        : ''
    }`,
  ].join('\n');
}

// `node dist/bench/viewer-big-run.js [--quick]`: this section alone, printed.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const scratch = join(process.env.TMPDIR ?? '/tmp', `simrec-bench-big-run-${process.pid}`);
  const results = await measureBigRunViewer(scratch, process.argv.includes('--quick'));
  console.log(
    process.argv.includes('--json') ? JSON.stringify(results, null, 2) : formatBigRunViewer(results),
  );
}
