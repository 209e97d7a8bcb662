// The portal's Bank accounts page in a real browser (Debian's chromium through playwright-core): reached from
// the navigation, filtered by state with the form, an account opened from the list and a borrower from the
// account, the month's ACH report downloaded through the form as the API's CSV, and axe-core on both pages.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { createTestContext, type TestContext } from '../helpers/context';
import { accessible, signInWith, useBrowser } from '../helpers/browser';
import { enrollBorrower, ownAccount } from '../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../helpers/collection';
import { createUser } from '../../src/modules/portal/users';

const EMAIL = 'ada@accounts.test';
const PASSWORD = 'correct horse battery staple';
const SETTLE = 60_000;

let ctx: TestContext;
let origin: string;
const browser = useBrowser();

beforeAll(async () => {
  ctx = createTestContext({ HOST: '127.0.0.1', SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: '3600000' });
  ctx.app.listen({ port: 0, hostname: '127.0.0.1' });
  origin = `http://127.0.0.1:${ctx.app.server!.port}`;
  await createUser(ctx.rt, { lenderId: ctx.lender.id, email: EMAIL, displayName: 'Ada Ops', password: PASSWORD, now: ctx.clock.now() });
  expect((await ctx.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_accounts_browser_0001', rail_scope: 'ach', is_default: true } })).status).toBe(201);
  expect((await ctx.json('PATCH', '/v1/collection_policy', { body: { require_account_validation: false } })).status).toBe(200);
  // One debit returned R02 (its account invalid), one settled (its account ok).
  const borrowers = [enrollBorrower('acct-returned', { collectable_amount: 42593, account_number: ownAccount(1) }), enrollBorrower('acct-settled', { account_number: ownAccount(2) })];
  expect((await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
  await cycle(ctx);
  await dispatchAndSettle(ctx, SETTLE);
});

afterAll(async () => {
  await ctx?.app.stop().catch(() => undefined);
  ctx?.close();
});

describe('Bank accounts in a browser', () => {
  test('the navigation, the state filter, an account and its borrower, the report downloaded; accessible', async () => {
    const { context, page } = await browser.session(origin);
    try {
      await signInWith(page, origin, EMAIL, PASSWORD);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Bank accounts' }).click();
      await page.waitForLoadState('load');
      expect(new URL(page.url()).pathname).toBe('/portal/payments/bank-accounts');
      expect(await page.getByRole('row').count()).toBe(3);
      await accessible(page, 'bank-accounts');

      await page.getByLabel('State').selectOption('invalid');
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForLoadState('load');
      expect(new URL(page.url()).searchParams.get('state')).toBe('invalid');
      const rows = page.getByRole('row');
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(1).innerText()).toContain('R02');

      await rows.nth(1).getByRole('link', { name: /^…\d{4}$/ }).click();
      await page.waitForLoadState('load');
      expect(await page.getByRole('heading', { level: 1 }).innerText()).toMatch(/^Bank account …\d{4}$/);
      expect(await page.getByRole('row', { name: /^State/ }).innerText()).toContain('invalid');
      await accessible(page, 'bank-account');
      await page.getByRole('link', { name: 'acct-returned' }).click();
      await page.waitForLoadState('load');
      expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('Borrower acct-returned');

      await page.goto(`${origin}/portal/payments/bank-accounts`);
      await page.getByLabel('Month (UTC)').selectOption('2026-11');
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
      expect(download.suggestedFilename()).toBe('ach-report-2026-11.csv');
      const file = readFileSync((await download.path())!, 'utf8');
      expect(file).toBe(await (await ctx.request('GET', '/v1/reports/ach?month=2026-11&format=csv')).text());
      expect(file).toContain('accounts_blocked,,by_state.invalid,1\r\n');
    } finally {
      await context.close();
    }
  }, 120_000);
});
