/**
 * Debian's headless Chromium for the viewer's browser tests: where it is, whether it is there (a
 * missing one skips those tests, saying so), and a persistent context launched the same way by each.
 */
import { existsSync } from 'node:fs';

import { chromium } from 'playwright-core';
import type { BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM) {
  process.stderr.write(`test/viewer: SKIPPED the browser test: ${CHROMIUM} is missing (apt-get update && apt-get install -y chromium)\n`);
}

/** Headless Chromium with a profile in `profileDir`, no network beyond the page's own server. */
export function launchChromium(profileDir: string, opts: { viewport?: { width: number; height: number } } = {}): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    ...(opts.viewport ? { viewport: opts.viewport } : {}),
  });
}
