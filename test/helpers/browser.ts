import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { REPO_ROOT } from './paths.js';

/** Debian's Chromium, which .ci/run installs; playwright-core never downloads a browser of its own. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Screenshots the browser tests keep, for people to look at after a run. */
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    // Without the background-networking flags Chromium tries to reach Google's hosts, which this
    // closed network refuses many times a second.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
