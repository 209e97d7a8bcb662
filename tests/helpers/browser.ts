// A real browser for the portal's tests: Debian's chromium through playwright-core, a fresh context per
// session (its own cookies), requests kept on the test server's origin, axe-core, and with TEST_SCREENSHOTS=1
// screenshots of each page checked at a desktop width and a phone's in tests/e2e/.screenshots (ignored by git;
// they are for looking at).
import { afterAll, afterEach, expect } from 'bun:test';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(import.meta.dir, '../e2e/.screenshots');
/** Screenshots are for looking at, and the most of a browser test's work: taken when TEST_SCREENSHOTS=1. */
const SCREENSHOTS = process.env.TEST_SCREENSHOTS === '1';
const AXE = join(import.meta.dir, '../../node_modules/axe-core/axe.min.js');

/** Chromium with the flags every browser test uses, and `args` (a test's own flags) after them. */
export async function launchBrowser(args: string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: this test needs Debian's chromium (apt-get install -y chromium); .ci/run installs it`);
  if (SCREENSHOTS) mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...args],
  });
}

export interface FileBrowser {
  /** The browser, launched on first use and again whenever it has closed or its process has gone. */
  get(): Promise<Browser>;
  /** A fresh context and page on `origin` (see browserSession), closed after the test at the latest. */
  session(origin: string, opts?: { headers?: Record<string, string> }): Promise<{ context: BrowserContext; page: Page }>;
  /** A fresh context of its own and its page, with nothing routed: for a test that routes requests itself. */
  page(): Promise<Page>;
}

/**
 * One browser for a file's tests, each test in contexts of its own. A test that times out leaves its
 * contexts open and may take the browser down with it (its process is ended with the test): its contexts
 * are closed after it, and the next test gets a browser that works, launched again if need be, instead of
 * failing at once on a closed one. Closed after the file's tests.
 */
export function useBrowser(opts: { args?: string[] } = {}): FileBrowser {
  let browser: Browser | null = null;
  let launching: Promise<Browser> | null = null;
  const open = new Set<BrowserContext>();
  const get = async (): Promise<Browser> => {
    if (browser?.isConnected()) return browser;
    if (!launching) {
      const old = browser;
      browser = null;
      launching = (async () => {
        await old?.close().catch(() => undefined);
        return launchBrowser(opts.args);
      })().then(
        (b) => ((browser = b), (launching = null), b),
        (e) => {
          launching = null;
          throw e;
        },
      );
    }
    return launching;
  };
  // A browser whose process was just ended may still look connected until its pipe reports the close: a
  // context that cannot be made on it is made on a browser launched again.
  const newContext = async (options: Parameters<Browser['newContext']>[0]): Promise<BrowserContext> => {
    const b = await get();
    let context: BrowserContext;
    try {
      context = await b.newContext(options);
    } catch (e) {
      if (!/has been closed/.test(String(e))) throw e;
      if (browser === b) browser = null;
      await b.close().catch(() => undefined);
      context = await (await get()).newContext(options);
    }
    open.add(context);
    context.on('close', () => open.delete(context));
    return context;
  };
  afterEach(async () => {
    const left = [...open];
    open.clear();
    await Promise.all(left.map((c) => c.close().catch(() => undefined)));
  });
  afterAll(async () => {
    await launching?.catch(() => undefined);
    await browser?.close().catch(() => undefined);
  });
  return {
    get,
    session: async (origin, o = {}) => onOrigin(await newContext(sessionOptions(o)), origin),
    page: async () => (await newContext({})).newPage(),
  };
}

/**
 * A fresh browser context on `origin`. CSP is bypassed so that axe-core can be injected, and so that markup a
 * page failed to escape would run: the escaping, not the policy, is what the tests see.
 */
export async function browserSession(browser: Browser, origin: string, opts: { headers?: Record<string, string> } = {}): Promise<{ context: BrowserContext; page: Page }> {
  return onOrigin(await browser.newContext(sessionOptions(opts)), origin);
}

const sessionOptions = (opts: { headers?: Record<string, string> }) => ({ bypassCSP: true, extraHTTPHeaders: opts.headers });

async function onOrigin(context: BrowserContext, origin: string): Promise<{ context: BrowserContext; page: Page }> {
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

/** axe-core on the page (no serious or critical violation), and with TEST_SCREENSHOTS=1 its screenshots at 1280 and 390 pixels wide. */
export async function accessible(page: Page, name: string) {
  await page.addScriptTag({ path: AXE });
  const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as { violations: { id: string; impact: string; nodes: unknown[] }[] };
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`);
  if (SCREENSHOTS) {
    const size = page.viewportSize() ?? { width: 1280, height: 800 };
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: join(SHOTS, `${name}-1280.png`), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(SHOTS, `${name}-390.png`), fullPage: true });
    await page.setViewportSize(size);
  }
  expect(`${name}: ${bad.join(', ')}`).toBe(`${name}: `);
}
