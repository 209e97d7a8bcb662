// A real browser for the portal's tests: Debian's chromium through playwright-core, a fresh context per
// session (its own cookies), requests kept on the test server's origin, axe-core, and screenshots of each page
// at a desktop width and a phone's in tests/e2e/.screenshots (ignored by git; they are for looking at).
import { expect } from 'bun:test';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(import.meta.dir, '../e2e/.screenshots');
const AXE = join(import.meta.dir, '../../node_modules/axe-core/axe.min.js');

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * A fresh browser context on `origin`. CSP is bypassed so that axe-core can be injected, and so that markup a
 * page failed to escape would run: the escaping, not the policy, is what the tests see.
 */
export async function browserSession(browser: Browser, origin: string, opts: { headers?: Record<string, string> } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ bypassCSP: true, extraHTTPHeaders: opts.headers });
  const page = await context.newPage();
  await page.route('**/*', (route) => (new URL(route.request().url()).origin === origin ? route.continue() : route.abort()));
  return { context, page };
}

export async function signInWith(page: Page, origin: string, email: string, password: string) {
  await page.goto(`${origin}/portal/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState('load');
}

/** axe-core on the page (no serious or critical violation), and its screenshots at 1280 and 390 pixels wide. */
export async function accessible(page: Page, name: string) {
  await page.addScriptTag({ path: AXE });
  const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as { violations: { id: string; impact: string; nodes: unknown[] }[] };
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`);
  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: join(SHOTS, `${name}-1280.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(SHOTS, `${name}-390.png`), fullPage: true });
  await page.setViewportSize(size);
  expect(`${name}: ${bad.join(', ')}`).toBe(`${name}: `);
}
