import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, which .ci/run installs; playwright-core never downloads a browser of its own. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the viewer cannot be measured here, or null when Chromium is there. */
export const chromiumMissing = (): string | null =>
  existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;

/** Headless Chromium as the benchmark and the browser tests run it. */
export function launchChromium(): Promise<Browser> {
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
      `--disable-features=${[...PLAYWRIGHT_DISABLED_FEATURES, ...BROWSER_UI_FEATURES].join(',')}`,
    ],
  });
}

/**
 * The browser's own pages a headless window has no use for. Each new context opens a window, and for
 * each window Chromium built its address bar's suggestion popup, a page of its own in a renderer of its
 * own ("top-chrome"), whatever the page opened: on two cores it took as much of them as the viewer's
 * page did while that opened (docs/performance.md, "A fresh page's open"). A person's browser builds it
 * once per window, not once per page opened.
 */
const BROWSER_UI_FEATURES = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup'];

/**
 * The features playwright-core disables itself. Chromium keeps the last --disable-features it is given,
 * so ours must carry them too (test/chromium-launch.test.ts checks that the switch it reads holds every
 * name playwright-core passed).
 */
const PLAYWRIGHT_DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'msForceBrowserSignIn',
  'msEdgeUpdateLaunchServicesPreferredVersion',
];
