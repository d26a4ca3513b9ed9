import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../../bench/chromium.js';
import { REPO_ROOT } from './paths.js';

/** Screenshots the browser tests keep, for people to look at after a run. */
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');

/** Chromium as the benchmark runs it (bench/chromium.ts), with the folder for screenshots made. */
export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return launchChromium();
}
