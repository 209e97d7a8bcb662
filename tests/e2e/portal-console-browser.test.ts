// The portal as an operations console, in a real browser (Debian's chromium through playwright-core): every
// page signed out; hostile values (markup, a javascript: URL, bidi controls) through every value a page shows,
// with no dialog and no injected element; axe-core on every page and its detail pages; an API key created and
// revoked; a webhook endpoint added; the collection rules form; search; removal stopping collection; the
// sign-in lock; another application's cookie that does not decode.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Page } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context';
import { accessible, signInWith, useBrowser } from '../helpers/browser';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { cycle } from '../helpers/collection';
import { createUser } from '../../src/modules/portal/users';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../src/modules/collection/dispatch';
import { SignInThrottle } from '../../src/modules/portal/session';

const EMAIL = 'ops@console.test';
const PASSWORD = 'correct horse battery staple';
/** Markup, a javascript: URL and bidi controls in one value of at most 80 characters. */
const HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>javascript:x()\u202Etxt\u202C';
/** How the page must show it: as text, its bidi controls written out. */
const SHOWN = '<script>alert(1)</script>"><img src=x onerror=alert(2)>javascript:x()[U+202E]txt[U+202C]';
const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';

let ctx: TestContext;
let origin: string;
const browser = useBrowser();
const ids: { schedule: string; connection: string; upload: string; account: string } = { schedule: '', connection: '', upload: '', account: '' };

beforeAll(async () => {
  ctx = createTestContext({ HOST: '127.0.0.1', TRUST_PROXY: 'loopback', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', MONITOR_READ_INTERVAL_MS: '3600000' });
  ctx.app.listen({ port: 0, hostname: '127.0.0.1' });
  origin = `http://127.0.0.1:${ctx.app.server!.port}`;
  // Every free-text value a lender or its operator can store holds the hostile string.
  ctx.sql.query('UPDATE lenders SET name = ? WHERE id = ?').run(HOSTILE, ctx.lender.id);
  await createUser(ctx.rt, { lenderId: ctx.lender.id, email: EMAIL, displayName: HOSTILE, password: PASSWORD, now: ctx.clock.now() });
  const connection = await ctx.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_console_key_000000001', rail_scope: 'both', is_default: true, label: HOSTILE } });
  expect(connection.status).toBe(201);
  ids.connection = connection.body.id;
  const schedule = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', { body: { name: HOSTILE, interval_days: 7, authorizers: [bankAuthorizer('console-sched-1')] } });
  expect(schedule.status).toBe(201);
  ids.schedule = schedule.body.schedule_id;
  expect((await ctx.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/hooks', event_types: ['PAYMENT_EVENT'], description: HOSTILE } })).status).toBe(201);
  expect((await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('console-xss-1')] } })).status).toBe(207);
  ids.account = (await ctx.json('GET', '/v1/payment_enrollments/console-xss-1')).body.bank_account_id;
});

afterAll(async () => {
  await ctx?.app.stop().catch(() => undefined);
  ctx?.close();
});

/** A browser behind the service's trusted proxy (TRUST_PROXY=loopback), which says the request came over HTTPS. */
const session = (headers: Record<string, string> = {}) => browser.session(origin, { headers: { 'x-forwarded-proto': 'https', ...headers } });
const signIn = (page: Page) => signInWith(page, origin, EMAIL, PASSWORD);

/** What the page would show if a value had been written as markup: scripts, images, handlers, javascript: URLs, raw bidi controls. */
async function injected(page: Page) {
  // Run in the page (a string: the tests are compiled without the DOM's types).
  return (await page.evaluate(`(() => {
    const all = [...document.querySelectorAll('*')];
    return {
      scripts: document.querySelectorAll('script').length,
      images: document.querySelectorAll('img').length,
      handlers: all.filter((e) => [...e.attributes].some((a) => a.name.toLowerCase().startsWith('on'))).length,
      javascriptUrls: all.filter((e) => ['href', 'src', 'action', 'formaction'].some((n) => /^\\s*javascript:/i.test(e.getAttribute(n) ?? ''))).length,
      // In the text, or in any attribute but a form field's value (kept as stored, so that saving the form
      // does not change it; a field is isolated from the text around it).
      rawBidi: /[\\u202A-\\u202E\\u2066-\\u2069]/.test(document.body.innerText + document.title) ||
        all.some((e) => [...e.attributes].some((a) => a.name !== 'value' && /[\\u202A-\\u202E\\u2066-\\u2069]/.test(a.value))),
      text: document.body.innerText,
    };
  })()`)) as { scripts: number; images: number; handlers: number; javascriptUrls: number; rawBidi: boolean; text: string };
}

describe('the console in a browser', () => {
  test('signed out, every page and detail page sends the browser to sign-in', async () => {
    const { context, page } = await session();
    try {
      for (const path of [
        '/portal',
        '/portal/balance-checks',
        '/portal/monitoring',
        `/portal/monitoring/${ids.schedule}`,
        '/portal/payments/borrowers',
        '/portal/payments/borrowers/console-xss-1',
        '/portal/payments/bank-accounts',
        `/portal/payments/bank-accounts/${ids.account}`,
        '/portal/payments/connections',
        '/portal/payments/bank-data',
        '/portal/payments/results-upload',
        '/portal/payments/rules',
        '/portal/developers',
      ]) {
        await page.goto(`${origin}${path}`);
        expect(`${path} → ${new URL(page.url()).pathname}`).toBe(`${path} → /portal/login`);
        expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('Sign in');
      }
    } finally {
      await context.close();
    }
  }, 120_000);

  test('hostile values through every page: shown as text, no dialog, no injected element; axe on every page', async () => {
    const { context, page } = await session();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    try {
      await signIn(page);
      expect(new URL(page.url()).pathname).toBe('/portal');
      // A balance CSV and a results file sent from the portal: the user (hostile display name) is their creator.
      await page.goto(`${origin}/portal/balance-checks`);
      await page.getByLabel('CSV file').setInputFiles({ name: 'b.csv', mimeType: 'text/csv', buffer: Buffer.from('authorizer_unique_id,ssn,account_number,routing_number\nconsole-b-1,123456789,0001234567,110000000\n') });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.waitForLoadState('load');
      await processBalances(ctx.rt);
      await page.goto(`${origin}/portal/payments/results-upload`);
      const csv = `${HEADER}\nconsole-xss-1,"${HOSTILE.replace(/"/g, '""')}",10.00,settled,2026-11-02,2026-11-04,,\nconsole-xss-1,REF-2,10.00,"${HOSTILE.replace(/"/g, '""')}",2026-11-02,,,\n`;
      await page.getByLabel('Results CSV file').setInputFiles({ name: `${HOSTILE}.csv`, mimeType: 'text/csv', buffer: Buffer.from(csv) });
      await page.getByRole('button', { name: 'Check file' }).click();
      await page.waitForLoadState('load');
      const report = await injected(page);
      // Chromium sends a double quote in a file name as %22 (the HTML multipart rule); the rest arrives as typed.
      expect(report.text).toContain(`Check: ${SHOWN.replace('"', '%22')}.csv`);
      expect({ ...report, text: '' }).toEqual({ scripts: 0, images: 0, handlers: 0, javascriptUrls: 0, rawBidi: false, text: '' });
      await page.getByRole('button', { name: 'Record 1 row' }).click();
      await page.waitForLoadState('load');
      const uploads = (await ctx.json('GET', '/v1/payment_results/uploads')).body.uploads as { id: string; creator: string }[];
      expect(uploads[0]!.creator).toBe(HOSTILE);
      ids.upload = uploads[0]!.id;
      const keyId = (await ctx.sql.query('SELECT id FROM api_keys WHERE lender_id = ? LIMIT 1').get(ctx.lender.id)) as { id: string };

      // Each page, with how many times at least it shows the hostile value: the lender's name in the navigation
      // and the user's in the footer on every page, and the page's own values.
      const pages: [path: string, name: string, least: number][] = [
        ['/portal', 'console-overview', 2],
        ['/portal/balance-checks', 'console-balance-checks', 3],
        ['/portal/monitoring', 'console-monitoring', 3],
        [`/portal/monitoring/${ids.schedule}`, 'console-schedule', 3],
        ['/portal/payments/borrowers', 'console-borrowers', 2],
        ['/portal/payments/borrowers/console-xss-1', 'console-borrower', 4],
        ['/portal/payments/borrowers/console-xss-1/remove', 'console-borrower-remove', 2],
        ['/portal/payments/borrowers/console-xss-1/erase', 'console-borrower-erase', 2],
        ['/portal/payments/bank-accounts', 'console-bank-accounts', 2],
        [`/portal/payments/bank-accounts/${ids.account}`, 'console-bank-account', 2],
        ['/portal/payments/connections', 'console-connections', 5],
        [`/portal/payments/connections/${ids.connection}/delete`, 'console-connection-delete', 3],
        ['/portal/payments/bank-data', 'console-bank-data', 2],
        ['/portal/payments/results-upload', 'console-results-upload', 3],
        [`/portal/payments/results-upload/history/${ids.upload}`, 'console-upload', 3],
        ['/portal/payments/rules', 'console-rules', 2],
        ['/portal/developers', 'console-developers', 3],
        [`/portal/developers/keys/${keyId.id}/revoke`, 'console-key-revoke', 2],
        ['/portal/monitoring/no-such-schedule', 'console-not-found', 2],
      ];
      for (const [path, name, least] of pages) {
        await page.goto(`${origin}${path}`);
        const seen = await injected(page);
        const times = seen.text.split(SHOWN).length - 1;
        expect(`${path}: shown ${times >= least ? 'enough' : `${times} times`}`).toBe(`${path}: shown enough`);
        expect({ path, ...seen, text: '' }).toEqual({ path, scripts: 0, images: 0, handlers: 0, javascriptUrls: 0, rawBidi: false, text: '' });
        await accessible(page, name);
      }
      expect(dialogs).toEqual([]);
    } finally {
      await context.close();
    }
  }, 240_000);

  test('an API key created in the portal calls /v1; revoked after its confirmation, it gets 401', async () => {
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.goto(`${origin}/portal/developers`);
      await page.getByRole('button', { name: 'Create API key' }).click();
      await page.waitForLoadState('load');
      const key = await page.getByRole('textbox', { name: 'New API key' }).inputValue();
      expect(key).toMatch(/^drs_/);
      const call = () => fetch(`${origin}/v1/collection_policy`, { headers: { authorization: `Bearer ${key}`, 'x-forwarded-proto': 'https' } });
      expect((await call()).status).toBe(200);
      await page.reload();
      await page.getByRole('link', { name: `Revoke ${key.slice(0, 12)}` }).click();
      await page.waitForLoadState('load');
      expect((await call()).status).toBe(200);
      await page.getByRole('button', { name: 'Revoke key' }).click();
      await page.waitForLoadState('load');
      expect((await call()).status).toBe(401);
    } finally {
      await context.close();
    }
  }, 120_000);

  test('a webhook endpoint added in the portal is in GET /v1/webhook_endpoints', async () => {
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.goto(`${origin}/portal/developers`);
      await page.getByLabel('Endpoint URL').fill('https://127.0.0.1:9/from-the-portal');
      await page.getByLabel('RETURN_RATE_ALERT').check();
      await page.getByLabel('ENROLLMENT_BLOCKED').check();
      await page.getByLabel('Description (optional)').fill('ops pager');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.waitForLoadState('load');
      const listed = (await ctx.json('GET', '/v1/webhook_endpoints')).body.endpoints as { url: string; event_types: string[]; description: string | null }[];
      const added = listed.find((e) => e.url === 'https://127.0.0.1:9/from-the-portal');
      expect(added && { types: [...added.event_types].sort(), description: added.description }).toEqual({ types: ['ENROLLMENT_BLOCKED', 'RETURN_RATE_ALERT'], description: 'ops pager' });
      // The URL in the endpoints table is readable at a desktop's width and a phone's: a line of it holds at
      // least 15 characters (not squeezed to a few a line by the other columns).
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: 900 });
        // Run in the page (a string: the tests are compiled without the DOM's types).
        const perLine = (await page.evaluate(`(() => {
          const code = [...document.querySelectorAll('td code')].find((c) => c.textContent === 'https://127.0.0.1:9/from-the-portal');
          const probe = document.createElement('code');
          probe.textContent = 'x'.repeat(10);
          probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap;min-width:0;padding:0';
          code.parentElement.appendChild(probe);
          const ch = probe.getBoundingClientRect().width / 10;
          probe.remove();
          return code.getBoundingClientRect().width / ch;
        })()`)) as number;
        expect(perLine, `characters a line at ${width} px`).toBeGreaterThanOrEqual(15);
      }
    } finally {
      await context.close();
    }
  }, 120_000);

  test('the collection rules form round-trips through GET /v1/collection_policy', async () => {
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.goto(`${origin}/portal/payments/rules`);
      await page.getByLabel('Loans covered by the CFPB payday rule').check();
      await page.getByLabel('Reinitiations of a returned debit, at most').selectOption('1');
      await page.getByLabel('Amount of a reinitiation').selectOption('original');
      await page.getByLabel('Business days of notice before each debit').fill('3');
      await page.getByLabel('Pause ACH collection on a return-rate breach').check();
      await page.getByLabel('When monitored borrowers are read').selectOption('interval');
      await page.getByLabel('Buffer above the amount before a debit (cents)').fill('2500');
      await page.getByLabel('Your time zone (payday reads at 08:00 there)').fill('America/Chicago');
      await page.getByLabel('Business days a settled debit may still come back').fill('7');
      await page.getByLabel('Debit on a linked account’s current balance when it gives no available one').check();
      await page.getByLabel('Buffer above the amount on a current balance (cents)').fill('1500');
      await page.getByLabel('Oldest linked balance a debit may follow (minutes)').fill('120');
      await page.getByLabel('Notifications of Change').selectOption('review');
      await page.getByLabel('Require validation evidence before the first debit to an account').uncheck();
      await page.getByRole('button', { name: 'Save rules' }).click();
      await page.waitForLoadState('load');
      await expect(page.getByRole('status').innerText()).resolves.toContain('Collection rules saved.');
      const { updated_at: _at, ...policy } = (await ctx.json('GET', '/v1/collection_policy')).body;
      expect(policy).toEqual({ cfpb_covered: true, max_reinitiations: 1, reinitiation_amount: 'original', notice_days: 3, return_rate_pause: true, read_cadence: 'interval', debit_buffer_cents: 2500, time_zone: 'America/Chicago', late_return_window_days: 7, allow_current_balance: true, current_balance_buffer_cents: 1500, max_balance_age_minutes: 120, apply_notifications_of_change: 'review', require_account_validation: false, account_return_states: {}, notice_channel: 'electronic', reg_e_election: { type: 'none' } });
      // The page shows what was saved; a value the API refuses is refused on the page, and nothing changes.
      await page.reload();
      expect(await page.getByLabel('Your time zone (payday reads at 08:00 there)').inputValue()).toBe('America/Chicago');
      expect(await page.getByLabel('Business days of notice before each debit').inputValue()).toBe('3');
      expect(await page.getByLabel('Loans covered by the CFPB payday rule').isChecked()).toBe(true);
      await page.getByLabel('Loans covered by the CFPB payday rule').uncheck();
      await page.getByLabel('Pause ACH collection on a return-rate breach').uncheck();
      await page.getByLabel('Business days of notice before each debit').fill('0');
      await page.getByRole('button', { name: 'Save rules' }).click();
      await page.waitForLoadState('load');
      const { updated_at: _at2, ...back } = (await ctx.json('GET', '/v1/collection_policy')).body;
      expect(back).toEqual({ cfpb_covered: false, max_reinitiations: 1, reinitiation_amount: 'original', notice_days: 0, return_rate_pause: false, read_cadence: 'interval', debit_buffer_cents: 2500, time_zone: 'America/Chicago', late_return_window_days: 7, allow_current_balance: true, current_balance_buffer_cents: 1500, max_balance_age_minutes: 120, apply_notifications_of_change: 'review', require_account_validation: false, account_return_states: {}, notice_channel: 'electronic', reg_e_election: { type: 'none' } });
    } finally {
      await context.close();
    }
  }, 120_000);

  test('search finds a borrower; "Remove from collection" on its page stops its collection', async () => {
    const enrolled = await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('console-keep-1'), enrollBorrower('console-stop-1')] } });
    expect(enrolled.status).toBe(207);
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.goto(`${origin}/portal/payments/borrowers`);
      await page.getByLabel('Authorizer id starts with').fill('console-st');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForLoadState('load');
      const found = await page.locator('tbody tr').allInnerTexts();
      expect(found.map((r) => r.split('\t')[0])).toEqual(['console-stop-1']);
      await page.getByRole('link', { name: 'console-stop-1' }).click();
      await page.waitForLoadState('load');
      await page.getByRole('link', { name: 'Remove from collection' }).click();
      await page.waitForLoadState('load');
      expect((await ctx.json('GET', '/v1/payment_enrollments/console-stop-1')).body.state).toBe('monitored');
      await page.getByRole('button', { name: 'Remove borrower' }).click();
      await page.waitForLoadState('load');
      expect((await ctx.json('GET', '/v1/payment_enrollments/console-stop-1')).body.state).toBe('removed');
      // A collection cycle: the borrower kept is debited, the one removed is not.
      await cycle(ctx);
      ctx.clock.advance(10_000);
      await dispatchPayments(ctx.rt);
      const payments = async (id: string) => ((await ctx.json('GET', `/v1/payment_enrollments/${id}`)).body.payments as unknown[]).length;
      expect(await payments('console-keep-1')).toBeGreaterThan(0);
      expect(await payments('console-stop-1')).toBe(0);
    } finally {
      await context.close();
    }
  }, 120_000);

  test('the sign-in lock: a stranger’s failures lock the stranger, not the user; guessing from elsewhere is still slowed', async () => {
    const target = 'locked-out@console.test';
    await createUser(ctx.rt, { lenderId: ctx.lender.id, email: target, displayName: 'Target', password: PASSWORD, now: ctx.clock.now() });
    const stranger = await session({ 'x-forwarded-for': '203.0.113.7' });
    const user = await session({ 'x-forwarded-for': '192.0.2.10' });
    const elsewhere = await session({ 'x-forwarded-for': '198.51.100.9' });
    try {
      // The stranger's wrong passwords, sent at once from its browser (each answer is held by the throttle).
      await stranger.page.goto(`${origin}/portal/login`);
      const csrf = await stranger.page.locator('input[name="_csrf"]').getAttribute('value');
      const guesses = await Promise.all(
        Array.from({ length: SignInThrottle.LOCK_AFTER }, (_, i) =>
          stranger.page.request.post(`${origin}/portal/login`, { form: { _csrf: csrf!, email: target, password: `wrong guess ${i}!!` }, maxRedirects: 0 }),
        ),
      );
      expect(guesses.map((g) => g.status())).toEqual(Array(SignInThrottle.LOCK_AFTER).fill(401));
      // The stranger is locked out, even with the right password, and the page says so.
      await signInWith(stranger.page, origin, target, PASSWORD);
      expect(new URL(stranger.page.url()).pathname).toBe('/portal/login');
      expect(await stranger.page.getByRole('alert').innerText()).toContain('Too many failed sign-ins');
      // A guess from another address is not locked but slowed by the email's failures.
      await elsewhere.page.goto(`${origin}/portal/login`);
      await elsewhere.page.getByLabel('Email').fill(target);
      await elsewhere.page.getByLabel('Password').fill('another wrong one');
      const t0 = performance.now();
      await elsewhere.page.getByRole('button', { name: 'Sign in' }).click();
      await elsewhere.page.waitForLoadState('load');
      expect(performance.now() - t0).toBeGreaterThanOrEqual(4_900);
      expect(await elsewhere.page.getByRole('alert').innerText()).toContain('The email or password is not right.');
      // The user, from their own address, signs in.
      await signInWith(user.page, origin, target, PASSWORD);
      expect(new URL(user.page.url()).pathname).toBe('/portal');
      expect(await user.page.getByRole('heading', { level: 1 }).innerText()).toBe('Overview');
    } finally {
      await Promise.all([stranger.context.close(), user.context.close(), elsewhere.context.close()]);
    }
  }, 120_000);

  test('a cookie that does not decode (another application’s on the host) is ignored: sign-in and pages work', async () => {
    const { context, page } = await session();
    try {
      await context.addCookies([{ name: 'other_app', value: '%E0%A4%A', domain: '127.0.0.1', path: '/' }]);
      await page.goto(`${origin}/portal/payments/borrowers`);
      expect(new URL(page.url()).pathname).toBe('/portal/login');
      await signIn(page);
      for (const path of ['/portal', '/portal/payments/borrowers', '/portal/developers']) {
        const res = await page.goto(`${origin}${path}`);
        expect(`${path} ${res!.status()}`).toBe(`${path} 200`);
      }
      expect((await context.cookies()).some((c) => c.name === 'other_app')).toBe(true);
    } finally {
      await context.close();
    }
  }, 120_000);
});
