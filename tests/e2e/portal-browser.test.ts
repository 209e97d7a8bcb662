// The lender portal in a real browser (Debian's chromium through playwright-core): sign-in, keys, balance
// checks with Creator, a results upload checked then recorded, sign-out, CSRF, tenancy, borrower ids with
// characters an address encodes acted on exactly, and axe-core on every
// page (no serious or critical violation).
// Screenshots of each page go to tests/e2e/.screenshots (ignored by git): they are for looking at.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Page } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context';
import { accessible, signInWith, useBrowser } from '../helpers/browser';
import { createUser } from '../../src/modules/portal/users';
import { createConnection } from '../../src/modules/payment-connections/service';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { enrollBorrower } from '../helpers/fixtures';

const EMAIL = 'olive@acme.test';
const PASSWORD = 'correct horse battery staple';

let ctx: TestContext;
let origin: string;
const browser = useBrowser();
let otherKeyId: string;

beforeAll(async () => {
  ctx = createTestContext({ HOST: '127.0.0.1' });
  ctx.app.listen({ port: 0, hostname: '127.0.0.1' });
  origin = `http://127.0.0.1:${ctx.app.server!.port}`;
  await createUser(ctx.rt, { lenderId: ctx.lender.id, email: EMAIL, displayName: 'Olive Ops', password: PASSWORD, now: ctx.clock.now() });
  const other = ctx.newLender();
  const k = await createConnection({
    ctx: { lender: { id: other.id, name: 'other', debitCardApproved: false }, deps: ctx.rt },
    input: { body: { api_key: 'sbx_other_lender_key_0001', rail_scope: 'both', is_default: true } },
  });
  otherKeyId = k.id;
});

afterAll(async () => {
  await ctx?.app.stop().catch(() => undefined);
  ctx?.close();
});

const session = () => browser.session(origin);
const signIn = (page: Page, password = PASSWORD) => signInWith(page, origin, EMAIL, password);

describe('the lender portal', () => {
  test('a wrong password gets a generic message; the right one signs in; every page is accessible', async () => {
    const { context, page } = await session();
    try {
      await page.goto(`${origin}/portal/login`);
      await accessible(page, 'login');
      await signIn(page, 'not the password at all');
      expect(page.url()).toContain('/portal/login');
      await expect(page.getByRole('alert').innerText()).resolves.toContain('The email or password is not right.');
      await signIn(page);
      expect(page.url()).toBe(`${origin}/portal`);
      for (const [path, name] of [
        ['/portal', 'overview'],
        ['/portal/balance-checks', 'balance-checks'],
        ['/portal/monitoring', 'monitoring'],
        ['/portal/payments/connections', 'connections'],
        ['/portal/payments/borrowers', 'borrowers'],
        ['/portal/payments/results-upload', 'results-upload'],
        ['/portal/payments/rules', 'collection-rules'],
        ['/portal/developers', 'developers'],
      ]) {
        await page.goto(`${origin}${path}`);
        expect(await page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
        await accessible(page, name!);
      }
    } finally {
      await context.close();
    }
  }, 120_000);

  test('keys: add (listed with its last four), a conflict shown on the form, promote swaps, delete after confirmation', async () => {
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.goto(`${origin}/portal/payments/connections`);
      const add = async (key: string, scope: string, isDefault: boolean, label: string) => {
        await page.getByLabel('API key', { exact: true }).fill(key);
        await page.getByLabel('Rail scope').selectOption(scope);
        if (isDefault) await page.getByLabel('Default key').check();
        await page.getByLabel('Label', { exact: true }).fill(label);
        await page.getByRole('button', { name: 'Add key' }).click();
        await page.waitForLoadState('load');
      };
      await add('sbx_portal_first_key_AAAA', 'ach', true, 'First');
      await expect(page.getByRole('status').innerText()).resolves.toContain('Added First');
      expect(await page.locator('table').innerText()).toContain('…AAAA');
      await add('sbx_portal_clash_key_CCCC', 'ach', true, 'Clash');
      await expect(page.getByRole('alert').first().innerText()).resolves.toContain('default key for rail_scope ach');
      await add('sbx_portal_second_key_BBBB', 'ach', false, 'Second');
      await page.getByRole('button', { name: 'Promote Second' }).click();
      await page.waitForLoadState('load');
      const rows = await page.locator('tbody tr').allInnerTexts();
      expect(rows.find((r) => r.startsWith('Second'))).toContain('Default');
      expect(rows.find((r) => r.startsWith('First'))).toContain('Unused');
      await accessible(page, 'connections-with-keys');
      await page.getByRole('link', { name: 'Delete First' }).click();
      await page.waitForLoadState('load');
      await accessible(page, 'delete-confirmation');
      await page.getByRole('button', { name: 'Delete key' }).click();
      await page.waitForLoadState('load');
      expect((await page.locator('tbody tr').allInnerTexts()).some((r) => r.startsWith('First'))).toBe(false);
    } finally {
      await context.close();
    }
  }, 120_000);

  test("a balance CSV uploaded in the portal: the export's Creator is the user's display name", async () => {
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.goto(`${origin}/portal/balance-checks`);
      await page.getByLabel('CSV file').setInputFiles({
        name: 'batch.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('authorizer_unique_id,ssn,account_number,routing_number\nportal-1,123456789,0001234567,110000000\n'),
      });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.waitForLoadState('load');
      await expect(page.getByRole('status').innerText()).resolves.toContain('Batch accepted');
      await processBalances(ctx.rt);
      await page.reload();
      const link = page.getByRole('link', { name: 'Download CSV' }).first();
      const res = await page.request.get(`${origin}${await link.getAttribute('href')}`);
      expect(res.status()).toBe(200);
      const [header, row] = (await res.text()).trim().split('\r\n');
      const creator = header!.split(',').indexOf('Creator');
      expect(row!.split(',')[creator]).toBe('Olive Ops');
      const batchId = row!.split(',')[1]!;
      expect((await ctx.json('GET', `/v1/balance_requests/${batchId}`)).body.creator).toBe('Olive Ops');
    } finally {
      await context.close();
    }
  }, 120_000);

  test('a results upload: the dry-run report (counts and problems), then confirmed and recorded', async () => {
    expect((await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('portal-loan-1')] } })).status).toBe(207);
    const events = async () => (await ctx.json('GET', '/v1/payment_events?authorizer_unique_id=portal-loan-1')).body.events as { status: string; source: string }[];
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.goto(`${origin}/portal/payments/results-upload`);
      await page.getByLabel('Results CSV file').setInputFiles({
        name: 'results.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(
          'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\n' +
            'portal-loan-1,PORTAL-1,425.00,settled,2026-11-02,2026-11-04,,\n' +
            'portal-loan-1,PORTAL-2,-5,settled,2026-11-02,2026-11-04,,\n',
        ),
      });
      await page.getByRole('button', { name: 'Check file' }).click();
      await page.waitForLoadState('load');
      const report = await page.locator('main').innerText();
      expect(report).toContain('Dry run: nothing was recorded yet');
      expect(report).toMatch(/Rows accepted\s+1/);
      expect(report).toMatch(/Matched to a borrower\s+1/);
      expect(report).toContain('payment_amount is not a positive amount');
      await accessible(page, 'results-upload-report');
      expect(await events()).toEqual([]);
      const confirmation = {
        _csrf: (await page.locator('form:has(input[name="checked"]) input[name="_csrf"]').getAttribute('value'))!,
        action: 'confirm',
        checked: (await page.locator('input[name="checked"]').getAttribute('value'))!,
      };
      await page.getByRole('button', { name: 'Record 1 row' }).click();
      await page.waitForLoadState('load');
      await expect(page.getByRole('status').innerText()).resolves.toContain('Recorded results.csv: 1 row.');
      expect((await events()).map((e) => [e.status, e.source])).toEqual([['settled', 'upload']]);
      // A confirmation is used once: posting it again records nothing more.
      const again = await page.request.post(`${origin}/portal/payments/results-upload`, { form: confirmation });
      expect(again.status()).toBe(200);
      expect(await again.text()).toContain('no longer held');
      expect(await events()).toHaveLength(1);
    } finally {
      await context.close();
    }
  }, 120_000);

  test('sign out; a protected page then redirects to sign-in', async () => {
    const { context, page } = await session();
    try {
      await signIn(page);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForLoadState('load');
      expect(page.url()).toContain('/portal/login');
      await page.goto(`${origin}/portal/payments/connections`);
      expect(page.url()).toBe(`${origin}/portal/login`);
    } finally {
      await context.close();
    }
  }, 120_000);

  test('a form post without the CSRF token is refused; another lender’s key id is not found', async () => {
    const { context, page } = await session();
    try {
      await signIn(page);
      const forged = await page.request.post(`${origin}/portal/payments/connections`, { form: { api_key: 'sbx_forged_key_0000000001', rail_scope: 'card' } });
      expect(forged.status()).toBe(403);
      expect(await forged.text()).toContain('CSRF');
      expect((await ctx.json('GET', '/v1/payment_connections')).body.connections.some((k: { key_last4: string }) => k.key_last4 === '0001')).toBe(false);
      const theirs = await page.request.get(`${origin}/portal/payments/connections/${otherKeyId}/delete`);
      expect(theirs.status()).toBe(404);
      const csrf = await page.locator('input[name="_csrf"]').first().getAttribute('value');
      const del = await page.request.post(`${origin}/portal/payments/connections/${otherKeyId}`, { form: { _csrf: csrf!, action: 'delete' } });
      expect(del.status()).toBe(404);
    } finally {
      await context.close();
    }
  }, 120_000);
});

describe('borrower ids as the browser sends them', () => {
  test('a link followed, then Remove and Erase confirmed, act on exactly the borrower shown, never on one whose id is its decoded form', async () => {
    // Each odd id beside the borrower a second decoding of its address would name.
    const cases = [
      { id: 'br%41', decoy: 'brA', action: 'Remove' },
      { id: 'er%42', decoy: 'erB', action: 'Erase' },
      { id: '100%', decoy: null, action: 'Remove' },
      { id: 'a/b?c#d e ü', decoy: null, action: 'Erase' },
      { id: '..', decoy: null, action: 'Remove' },
    ];
    const ids = cases.flatMap((x) => (x.decoy ? [x.id, x.decoy] : [x.id]));
    expect((await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: ids.map((id) => enrollBorrower(id)) } })).status).toBe(207);
    const stateOf = async (id: string) =>
      ((await ctx.json('GET', `/v1/payment_enrollments?limit=100`)).body.enrollments as { authorizer_unique_id: string; state: string }[]).find((e) => e.authorizer_unique_id === id)?.state;
    const { context, page } = await session();
    try {
      await signIn(page);
      for (const x of cases) {
        await page.goto(`${origin}/portal/payments/borrowers`);
        await page.getByRole('link', { name: x.id, exact: true }).click();
        await page.waitForLoadState('load');
        expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe(`Borrower ${x.id}`);
        await page.getByRole('link', { name: x.action === 'Remove' ? 'Remove from collection' : 'Erase personal data' }).click();
        await page.waitForLoadState('load');
        expect(await page.locator('main strong').innerText()).toBe(x.id);
        await page.getByRole('button', { name: x.action === 'Remove' ? 'Remove borrower' : 'Erase personal data' }).click();
        await page.waitForLoadState('load');
        expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe(`Borrower ${x.id}`);
        expect(`${x.id} ${await stateOf(x.id)}`).toBe(`${x.id} removed`);
        if (x.decoy) expect(`${x.decoy} ${await stateOf(x.decoy)}`).toBe(`${x.decoy} monitored`);
      }
    } finally {
      await context.close();
    }
  }, 60_000);
});
