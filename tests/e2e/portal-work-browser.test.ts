// The portal as a place to work, in a real browser (Debian's chromium through playwright-core): the first-run
// checklist, a schedule run now, a borrower read now and its amount changed, a balance CSV's failed rows, the
// batch page, borrower search and the Payments page; axe-core on each page and screenshots at 1280 and 390
// pixels (tests/e2e/.screenshots, ignored by git); on a phone, amounts and statuses stay on screen.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Browser, Page } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context';
import { accessible, browserSession, launchBrowser, signInWith } from '../helpers/browser';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../helpers/collection';
import { createUser } from '../../src/modules/portal/users';
import { processBalances } from '../../src/modules/balance-requests/processing';

const EMAIL = 'wendy@lender.test';
const PASSWORD = 'a long enough password for work';

let ctx: TestContext;
let origin: string;
let browser: Browser;

beforeAll(async () => {
  ctx = createTestContext({ HOST: '127.0.0.1', SANDBOX_SETTLEMENT_MS: '60000', MONITOR_READ_INTERVAL_MS: '3600000' });
  ctx.app.listen({ port: 0, hostname: '127.0.0.1' });
  origin = `http://127.0.0.1:${ctx.app.server!.port}`;
  await createUser(ctx.rt, { lenderId: ctx.lender.id, email: EMAIL, displayName: 'Wendy Works', password: PASSWORD, now: ctx.clock.now() });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await ctx?.app.stop().catch(() => undefined);
  ctx?.close();
});

async function signedInPage(): Promise<{ page: Page; close: () => Promise<void> }> {
  const { context, page } = await browserSession(browser, origin);
  await signInWith(page, origin, EMAIL, PASSWORD);
  return { page, close: () => context.close() };
}

describe('a working day in the portal', () => {
  test('a new lender’s overview is a checklist of first steps, each linked', async () => {
    const { page, close } = await signedInPage();
    try {
      await page.goto(`${origin}/portal`);
      const steps = page.getByRole('region', { name: 'Getting started' });
      await expect(steps.innerText()).resolves.toContain('0 of 4 done');
      await accessible(page, 'work-first-run-overview');
      await page.getByRole('link', { name: 'Processor keys' }).last().click();
      expect(page.url()).toBe(`${origin}/portal/payments/connections`);
      expect(await page.locator('h1').innerText()).toBe('Processor keys');
    } finally {
      await close();
    }
  }, 60_000);

  test('a balance CSV with bad rows: each listed with its reason; the batch page has counts, results and the export', async () => {
    const { page, close } = await signedInPage();
    try {
      await page.goto(`${origin}/portal/balance-checks`);
      const rows = [
        'authorizer_unique_id,ssn,account_number,routing_number',
        ...Array.from({ length: 8 }, (_, i) => `loan-${i + 1},123456789,000${1234567 + i * 1111},110000000`),
        'loan-closed,123456789,99993200,110000000',
        'loan-bad-ssn,12,0001234567,110000000',
        'loan-bad-routing,123456789,0001234567,110000001',
      ];
      await page.setInputFiles('#file', { name: 'balances.csv', mimeType: 'text/csv', buffer: Buffer.from(rows.join('\n') + '\n') });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.waitForLoadState('load');
      const failed = page.getByRole('table', { name: /2 rows failed validation/ });
      await expect(failed.innerText()).resolves.toContain('loan-bad-ssn');
      await expect(failed.innerText()).resolves.toContain('loan-bad-routing');
      while ((await ctx.sql.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM batches WHERE status != 'completed'").get())!.n > 0) await processBalances(ctx.rt);
      await page.getByRole('link', { name: 'Open the batch' }).click();
      await page.waitForLoadState('load');
      expect(await page.locator('h1').innerText()).toMatch(/^Batch /);
      const counts = await page.getByRole('table', { name: 'Results by status' }).innerText();
      expect(counts).toContain('SUCCESS');
      expect(counts).toContain('ACCOUNT_CLOSED');
      await expect(page.getByRole('link', { name: 'Download the results as CSV' }).isVisible()).resolves.toBe(true);
      await accessible(page, 'work-batch');
      // On a phone the result's balance and status stay on screen.
      await page.setViewportSize({ width: 390, height: 844 });
      const results = page.getByRole('table', { name: /Results, in the order/ });
      await expect(results.getByRole('columnheader', { name: 'Balance' }).isVisible()).resolves.toBe(true);
      await expect(results.getByRole('columnheader', { name: 'Status' }).isVisible()).resolves.toBe(true);
      await expect(results.getByRole('columnheader', { name: 'Recorded' }).isVisible()).resolves.toBe(false);
      const overflow = (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
      expect(overflow).toBeLessThanOrEqual(0);
    } finally {
      await close();
    }
  }, 90_000);

  test('a schedule run now; a borrower found by name, read now and its amount changed; the Payments page filtered, sorted and exported', async () => {
    const schedule = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', { body: { name: 'weekly', interval_days: 7, authorizers: [bankAuthorizer('sched-1')] } });
    await ctx.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_work_browser_000001', rail_scope: 'both', is_default: true } });
    await ctx.json('POST', '/v1/payment_enrollments', {
      body: {
        borrowers: [
          enrollBorrower('grace-1', { first_name: 'Grace', last_name: 'Hopper', collectable_amount: 12000, account_number: '0000011000' }),
          ...[42500, 20091, 30000, 40091, 5000, 15000].map((a, i) => enrollBorrower(`pay-${i}`, { collectable_amount: a })),
        ],
      },
    });
    await cycle(ctx);
    await dispatchAndSettle(ctx, 60_000);
    const { page, close } = await signedInPage();
    try {
      await page.goto(`${origin}/portal/monitoring/${schedule.body.schedule_id}`);
      await page.getByRole('button', { name: 'Run now' }).click();
      await page.waitForLoadState('load');
      await expect(page.getByRole('status').innerText()).resolves.toContain('Run started: 1 authorizer');

      await page.goto(`${origin}/portal/payments/borrowers`);
      await page.getByLabel('Name, phone, last four or payment reference').fill('grace hopper');
      await page.getByRole('button', { name: 'Find' }).click();
      await page.waitForLoadState('load');
      await page.getByRole('link', { name: 'grace-1' }).click();
      await page.waitForLoadState('load');
      await page.getByRole('button', { name: 'Read balance now' }).click();
      await page.waitForLoadState('load');
      await expect(page.getByRole('status').innerText()).resolves.toContain('Balance read queued');
      await page.getByLabel('Collectable amount, in dollars').fill('99.50');
      await page.getByRole('button', { name: 'Change amount' }).click();
      await page.waitForLoadState('load');
      await expect(page.getByRole('status').innerText()).resolves.toContain('Collectable amount changed to $99.50');
      expect((await ctx.json('GET', '/v1/payment_enrollments/grace-1')).body.collectable_amount).toBe(9950);

      await page.getByRole('link', { name: 'Payments', exact: true }).click();
      await page.waitForLoadState('load');
      expect(await page.locator('h1').innerText()).toBe('Payments');
      await page.getByLabel('Status').selectOption('settled');
      await page.getByLabel('Sort').selectOption('amount_desc');
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForLoadState('load');
      const table = page.getByRole('table', { name: /payments matching the filters, largest amount first/ });
      const amounts = await table.locator('tbody tr td:first-child').allInnerTexts();
      expect(amounts).toEqual(['$425.00', '$300.00', '$150.00', '$50.00']);
      const download = page.waitForEvent('download');
      await page.getByRole('link', { name: 'Download these payments as CSV' }).click();
      const file = await (await download).path();
      const csv = await Bun.file(file!).text();
      expect(csv.trim().split('\r\n')).toHaveLength(5);
      await page.goto(`${origin}/portal/payments/list`);
      await accessible(page, 'work-payments');
      await page.setViewportSize({ width: 390, height: 844 });
      const all = page.getByRole('table', { name: /The service's payments/ });
      await expect(all.getByRole('columnheader', { name: 'Amount' }).isVisible()).resolves.toBe(true);
      await expect(all.getByRole('columnheader', { name: 'Status' }).isVisible()).resolves.toBe(true);
      await expect(all.getByRole('columnheader', { name: 'Reference' }).isVisible()).resolves.toBe(false);
    } finally {
      await close();
    }
  }, 120_000);
});
