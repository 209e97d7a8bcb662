// Swagger UI at /docs in a real browser (Debian's chromium driven by playwright-core), with the network cut
// off: every request that does not go to the service is aborted and recorded. The docs must render from the
// service alone (assets from /docs/assets, the document from /docs/json), as on an offline or locked-down host.
// Browser tests take seconds (launch, render, network idle): each sets its own timeout, and the waits inside
// a test have none of their own (a busy machine renders slowly; the test's timeout is the bound).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Page } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context';
import { freePort } from '../helpers/server';
import { useBrowser } from '../helpers/browser';

// A name that is not loopback, resolved by the browser to 127.0.0.1: how a deployed service is reached.
const PUBLIC_NAME = 'docs.drs.example';

let ctx: TestContext;
let origin: string;
let port: number;
const browser = useBrowser({ args: [`--host-resolver-rules=MAP ${PUBLIC_NAME} 127.0.0.1`] });

beforeAll(() => {
  port = freePort();
  ctx = createTestContext({ PORT: String(port), HOST: '127.0.0.1' });
  ctx.app.listen({ port, hostname: '127.0.0.1' });
  origin = `http://127.0.0.1:${ctx.app.server!.port}`;
});

afterAll(async () => {
  await ctx?.app.stop().catch(() => undefined);
  ctx?.close();
});

interface Visit {
  page: Page;
  requested: string[];
  blocked: string[];
  pageErrors: string[];
  specStatus: number | null;
}

/** Opens url with every request to a host other than `allowedHost` aborted and recorded. */
async function visit(url: string, allowedHost: string): Promise<Visit> {
  const page = await browser.page();
  const v: Visit = { page, requested: [], blocked: [], pageErrors: [], specStatus: null };
  await page.route('**/*', (route) => {
    const target = new URL(route.request().url());
    if (target.protocol === 'data:' || target.protocol === 'blob:') return route.continue();
    if (target.hostname === allowedHost && target.port === String(port)) {
      v.requested.push(target.pathname + target.search);
      return route.continue();
    }
    v.blocked.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  page.on('pageerror', (e) => v.pageErrors.push(e.message));
  page.on('response', (res) => {
    if (new URL(res.url()).pathname === '/docs/json') v.specStatus = res.status();
  });
  const res = await page.goto(url, { waitUntil: 'load' });
  expect(res?.status()).toBe(200);
  return v;
}

/** The operations the document lists (visible ones only), as "get /healthz". */
async function documentedOperations(): Promise<string[]> {
  const res = await fetch(`${origin}/docs/json`);
  expect(res.status).toBe(200);
  const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>>; webhooks?: Record<string, Record<string, unknown>> };
  const ops: string[] = [];
  // The paths, and the webhooks the service sends (Swagger UI shows each as a POST named by its type).
  for (const [path, item] of [...Object.entries(doc.paths), ...Object.entries(doc.webhooks ?? {})]) {
    for (const method of Object.keys(item)) {
      if (['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].includes(method)) ops.push(`${method} ${path}`);
    }
  }
  return ops.sort();
}

/** Waits for Swagger UI to list operations, or fails with the error it shows instead. */
async function renderedOperations(page: Page): Promise<string[]> {
  await page.waitForSelector('.opblock .opblock-summary-path, .errors-wrapper', { timeout: 0 });
  if ((await page.locator('.opblock').count()) === 0) {
    const shown = (await page.locator('.errors-wrapper').first().innerText()).replace(/\s+/g, ' ').trim();
    throw new Error(`Swagger UI shows no operations at ${page.url()}: ${shown}`);
  }
  const ops = await page.locator('.opblock').evaluateAll((els) =>
    els.map((el) => {
      const method = el.querySelector('.opblock-summary-method')?.textContent?.trim().toLowerCase() ?? '?';
      const path = el.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '?';
      return `${method} ${path}`;
    }),
  );
  return ops.sort();
}

describe('/docs', () => {
  test('the HTML references only assets the service serves itself', async () => {
    const res = await fetch(`${origin}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type') ?? '').toContain('text/html');
    const html = await res.text();

    const absolute = [...html.matchAll(/\b(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'<>)]*/gi)].map((m) => m[0]);
    expect(absolute, 'absolute URLs in the /docs HTML').toEqual([]);

    const refs = [...html.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref.startsWith('/docs/assets/'), `${ref} is not a local docs asset`).toBe(true);
      const asset = await fetch(new URL(ref, `${origin}/docs`));
      expect(asset.status, ref).toBe(200);
      const body = await asset.text();
      expect(body.length, ref).toBeGreaterThan(1000);
      if (ref.endsWith('.css')) {
        // Stylesheet: no web fonts or images fetched from elsewhere.
        const remote = [...body.matchAll(/url\(\s*["']?(https?:)?\/\/[^)]*\)/gi)].map((m) => m[0]);
        expect(remote, `${ref} loads remote resources`).toEqual([]);
        expect(body).not.toMatch(/@import\s+(url\()?["']?(https?:)?\/\//i);
      }
    }
  });

  test('Swagger UI renders every operation of /docs/json with no request leaving the service', async () => {
    const v = await visit(`${origin}/docs`, '127.0.0.1');
    try {
      const rendered = await renderedOperations(v.page);
      expect(rendered).toContain('get /healthz');
      expect(rendered).toEqual(await documentedOperations());
      expect(await v.page.locator('.opblock-get .opblock-summary-path[data-path="/healthz"]').count()).toBe(1);
      await expect(v.page.locator('.info .title').first().textContent()).resolves.toContain('Debit Recovery');

      expect(v.specStatus).toBe(200);
      expect(v.requested).toContain('/docs/json');
      expect(v.requested).toContain('/docs/assets/swagger-ui-bundle.js');
      expect(v.requested).toContain('/docs/assets/swagger-ui.css');
      // Settle, then check nothing was (or would have been) fetched from elsewhere.
      await v.page.waitForLoadState('networkidle');
      expect(v.blocked, 'requests to other hosts').toEqual([]);
      expect(v.pageErrors).toEqual([]);
      expect(await v.page.locator('.errors-wrapper .error-wrapper').count()).toBe(0);
    } finally {
      await v.page.close();
    }
  }, 90_000);

  test('reached under a public (non-loopback) name, the page still fetches nothing from elsewhere', async () => {
    // Swagger UI skips some remote features (the spec validator badge) on localhost/127.0.0.1 only.
    const v = await visit(`http://${PUBLIC_NAME}:${port}/docs`, PUBLIC_NAME);
    try {
      expect(await renderedOperations(v.page)).toContain('get /healthz');
      await v.page.waitForLoadState('networkidle');
      expect(v.blocked, 'requests to other hosts').toEqual([]);
      expect(v.pageErrors).toEqual([]);
    } finally {
      await v.page.close();
    }
  }, 90_000);

  test('/docs/ (trailing slash) renders too', async () => {
    const v = await visit(`${origin}/docs/`, '127.0.0.1');
    try {
      expect(await renderedOperations(v.page)).toContain('get /healthz');
      expect(v.specStatus).toBe(200);
      expect(v.blocked).toEqual([]);
    } finally {
      await v.page.close();
    }
  }, 90_000);

  test('a documentation_url opens the page at its error code’s section', async () => {
    const err = await fetch(`${origin}/v1/balance_requests`, { method: 'POST', headers: { authorization: 'Bearer drs_live_x' } });
    const url = new URL(((await err.json()) as { documentation_url: string }).documentation_url);
    expect(url.hash).toBe('#unauthorized');
    const v = await visit(`${origin}/docs${url.hash}`, '127.0.0.1');
    try {
      await renderedOperations(v.page);
      await v.page.waitForFunction('window.scrollY > 0', undefined, { timeout: 0 });
      const box = await v.page.locator('#unauthorized').boundingBox();
      const viewport = v.page.viewportSize()!;
      expect(box).not.toBeNull();
      expect(box!.y).toBeGreaterThanOrEqual(-1);
      expect(box!.y).toBeLessThan(viewport.height);
      expect(await v.page.locator('#unauthorized h3').innerText()).toContain('UNAUTHORIZED');
    } finally {
      await v.page.close();
    }
  }, 90_000);
});
