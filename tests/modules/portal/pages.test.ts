// The portal's console pages through the real app: the overview's figures equal the API's after a known
// sequence of payments; API keys, the signing secret and webhook endpoints managed from Developers; the
// collection rules form round-trips, its payment notices' fields too; the borrower page shows a scheduled
// payment's notice, a new authorization and the Regulation E election, and confirms a notice as the API does;
// every page is signed in, escapes what it shows and isolates bidi controls; errors are pages.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower, ownAccount } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { signedIn } from '../../helpers/portal';
import { dollars } from '../../../src/modules/portal/ui/format';
import { issueKey, MAX_LIVE_API_KEYS, TooManyApiKeys } from '../../../src/modules/lenders/service';
import { transaction } from '../../../src/platform/context';
import { pollProcessors } from '../../../src/modules/collection/poll';

const SETTLE = 60_000;
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
const fresh = (env: Record<string, string> = {}) => {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: '3600000', ...env });
  contexts.push(c);
  return c;
};
const figure = (html: string, id: string) => {
  const m = new RegExp(`<h3 id="${id}">[^<]*</h3><p>([^<]*)</p><small>last 30 days · ([^<]*) all time</small>`).exec(html);
  if (!m) throw new Error(`figure ${id} not on the page`);
  return { recent: m[1]!, all: m[2]! };
};
const cell = (html: string, label: string) => {
  const m = new RegExp(`>${label}</a></td><td>([\\d,]+)</td>|<td>${label}</td><td>([\\d,]+)</td>`).exec(html);
  if (!m) throw new Error(`row ${label} not on the page`);
  return Number((m[1] ?? m[2])!.replace(/,/g, ''));
};

type EnrollmentView = { state: string; ledger: { collected: number; reversed: number }; payments: { amount: number; status: string }[] };

async function allEnrollments(c: TestContext): Promise<EnrollmentView[]> {
  const out: EnrollmentView[] = [];
  let token: string | null = null;
  do {
    const r: { body: { enrollments: EnrollmentView[]; next_page_token: string | null } } = await c.json('GET', `/v1/payment_enrollments?limit=100${token ? `&next_page_token=${encodeURIComponent(token)}` : ''}`);
    out.push(...r.body.enrollments);
    token = r.body.next_page_token;
  } while (token);
  return out;
}

describe('the overview', () => {
  test('signed out it sends to sign-in; signed in its every figure equals the API’s after a known sequence of payments', async () => {
    const c = fresh();
    expect((await c.request('GET', '/portal', { key: null })).headers.get('location')).toBe('/portal/login');
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_overview_0000000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    // Settled; settled then returned late R10; returned R01; still processing; invalid.
    const amounts = [42500, 42595, 42591, 42597, 42596, 31000];
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: amounts.map((a, i) => enrollBorrower(`ov-${i}`, { collectable_amount: a })) } });
    await cycle(c);
    await dispatchAndSettle(c, SETTLE);
    const p = await signedIn(c);
    const page = await p.get('/portal');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Overview</h1>');

    const list = await allEnrollments(c);
    const collected = list.reduce((s, e) => s + e.ledger.collected, 0);
    const reversed = list.reduce((s, e) => s + e.ledger.reversed, 0);
    const flight = list.flatMap((e) => e.payments).filter((x) => x.status === 'processing' || x.status === 'initiating');
    expect(collected).toBeGreaterThan(0);
    expect(reversed).toBeGreaterThan(0);
    expect(flight.length).toBeGreaterThan(0);
    expect(figure(page.text, 'fig-collected')).toEqual({ recent: dollars(collected), all: dollars(collected) });
    expect(figure(page.text, 'fig-reversed')).toEqual({ recent: dollars(reversed), all: dollars(reversed) });
    // Returned debits apart from reversals: each returned debit once, with its amount, credited or not.
    const returnedDebits = list.flatMap((e) => e.payments).filter((x) => x.status === 'returned' || x.status === 'late_returned');
    expect(returnedDebits.length).toBe(2);
    const ret = `${dollars(returnedDebits.reduce((s, x) => s + x.amount, 0))} (2)`;
    expect(figure(page.text, 'fig-returned')).toEqual({ recent: ret, all: ret });
    expect(reversed).toBeLessThan(returnedDebits.reduce((s, x) => s + x.amount, 0));
    const inFlight = `${dollars(flight.reduce((s, x) => s + x.amount, 0))} (${flight.length})`;
    expect(figure(page.text, 'fig-flight')).toEqual({ recent: inFlight, all: inFlight });
    for (const state of ['monitored', 'held', 'collected', 'lapsed', 'removed', 'stopped']) {
      expect(`${state} ${cell(page.text, state)}`).toBe(`${state} ${list.filter((e) => e.state === state).length}`);
    }
    for (const status of ['processing', 'settled', 'returned', 'late_returned', 'invalid']) {
      expect(`${status} ${cell(page.text, status)}`).toBe(`${status} ${list.flatMap((e) => e.payments).filter((x) => x.status === status).length}`);
    }
    const rates = (await c.json('GET', '/v1/return_rates')).body;
    expect(page.text).toContain(`Return rates over the last 60 days (${rates.debits} ACH debits)`);
    for (const [cls, label] of [['unauthorized', 'Unauthorized'], ['administrative', 'Administrative'], ['overall', 'Overall']] as const) {
      const r = rates.rates[cls];
      expect(page.text).toContain(`<td>${label}</td><td>${r.returns}</td><td>${(r.rate * 100).toFixed(2)}%</td><td>${(r.threshold * 100).toFixed(2)}%</td><td>${r.status}</td>`);
    }
    // The charts: images with a text alternative, and the figures of the days in a table.
    expect(page.text).toMatch(/<svg viewBox="[^"]+" role="img" aria-labelledby="daily-t daily-d"/);
    expect(page.text).toContain(`Collected ${dollars(collected)} and reversed ${dollars(reversed)}`);
    expect((page.text.match(/<tr><td><time datetime="\d{4}-\d{2}-\d{2}">/g) ?? []).length).toBe(60);
  });
});

describe('Developers', () => {
  test('an API key created on the page calls /v1 and, revoked after its confirmation, gets 401', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const created = await p.post('/portal/developers/keys', {});
    expect(created.status).toBe(200);
    const key = /id="new-key-value" class="secret" readonly="" value="([^"]+)"|id="new-key-value" class="secret" readonly value="([^"]+)"/.exec(created.text);
    const apiKey = (key?.[1] ?? key?.[2])!;
    expect(apiKey).toMatch(/^drs_/);
    expect((await c.json('GET', '/v1/webhook_endpoints', { key: apiKey })).status).toBe(200);
    // Shown once: the list shows prefixes only.
    const again = await p.get('/portal/developers');
    expect(again.text).not.toContain(apiKey);
    const revokeLink = [...again.text.matchAll(/href="(\/portal\/developers\/keys\/[^"]+\/revoke)"/g)].map((m) => m[1]!);
    expect(revokeLink.length).toBe(2);
    // The confirmation page names the key; the POST revokes the one it names.
    let revoked = false;
    for (const link of revokeLink) {
      const confirm = await p.get(link);
      expect(confirm.status).toBe(200);
      if (!confirm.text.includes(apiKey.slice(0, 12))) continue;
      expect(confirm.text).toContain('Revoke key');
      expect((await p.post(link, {})).status).toBe(200);
      revoked = true;
    }
    expect(revoked).toBe(true);
    expect((await c.json('GET', '/v1/webhook_endpoints', { key: apiKey })).status).toBe(401);
    expect((await c.json('GET', '/v1/webhook_endpoints')).status).toBe(200);
    // Another lender's key cannot be revoked from here.
    const other = c.newLender('other');
    const otherId = (c.sql.query('SELECT id FROM api_keys WHERE lender_id = ?').get(other.id) as { id: string }).id;
    expect((await p.post(`/portal/developers/keys/${otherId}/revoke`, {})).status).toBe(404);
    expect((await c.json('GET', '/v1/webhook_endpoints', { key: other.key })).status).toBe(200);
    // Without the CSRF token nothing is created.
    expect((await p.post('/portal/developers/keys', {}, { csrf: null })).status).toBe(403);
  });

  test(`at most ${MAX_LIVE_API_KEYS} live API keys: the next is refused on the page, and a revoked key frees its place`, async () => {
    const c = fresh();
    const p = await signedIn(c);
    const live = () => (c.sql.query('SELECT count(*) AS n FROM api_keys WHERE lender_id = ? AND revoked_at IS NULL').get(c.lender.id) as { n: number }).n;
    // The lender's first key is one of them.
    expect(live()).toBe(1);
    for (let i = live(); i < MAX_LIVE_API_KEYS; i++) expect((await p.post('/portal/developers/keys', {})).status).toBe(200);
    expect(live()).toBe(MAX_LIVE_API_KEYS);
    const refused = await p.post('/portal/developers/keys', {});
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('role="alert"');
    expect(refused.text).toContain(`A lender has at most ${MAX_LIVE_API_KEYS} live API keys`);
    expect(refused.text).toContain('Revoke a key that is no longer used');
    expect(refused.text).not.toContain('id="new-key-value"');
    expect(live()).toBe(MAX_LIVE_API_KEYS);
    // Another lender's keys are its own count.
    const other = c.newLender('other-keys');
    const q = await signedIn(c, { lenderId: other.id });
    expect((await q.post('/portal/developers/keys', {})).status).toBe(200);
    // Revoked keys do not count.
    const link = /href="(\/portal\/developers\/keys\/[^"]+\/revoke)"/.exec(refused.text)![1]!;
    expect((await p.post(link, {})).status).toBe(200);
    expect((await p.post('/portal/developers/keys', {})).status).toBe(200);
    expect((await p.post('/portal/developers/keys', {})).status).toBe(409);
    // The same limit holds on every path that issues a key, the operator's included.
    await expect(transaction({ deps: c.rt }, (tx) => issueKey(tx, c.lender.id, c.clock.now()))).rejects.toThrow(TooManyApiKeys);
    expect(live()).toBe(MAX_LIVE_API_KEYS);
  });

  test('an endpoint added on the page is in GET /v1/webhook_endpoints; a bad one is refused on the page; delete removes it', async () => {
    const c = fresh({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    const p = await signedIn(c);
    const form = new URLSearchParams({ _csrf: await p.csrf(), url: 'https://127.0.0.1:9/portal-hook', description: 'Ops <b>hook</b>' });
    form.append('event_types', 'PAYMENT_EVENT');
    form.append('event_types', 'RETURN_RATE_ALERT');
    const res = await c.request('POST', '/portal/developers/endpoints', { key: null, raw: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: p.cookie } });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toContain('Endpoint added');
    expect(text).toContain('Ops &lt;b&gt;hook&lt;/b&gt;');
    const list = (await c.json('GET', '/v1/webhook_endpoints')).body.endpoints;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ url: 'https://127.0.0.1:9/portal-hook', event_types: ['PAYMENT_EVENT', 'RETURN_RATE_ALERT'], description: 'Ops <b>hook</b>' });
    const none = await p.post('/portal/developers/endpoints', { url: 'https://127.0.0.1:9/x' });
    expect(none.status).toBe(400);
    expect(none.text).toContain('role="alert"');
    expect((await c.json('GET', '/v1/webhook_endpoints')).body.endpoints).toHaveLength(1);
    expect((await p.post(`/portal/developers/endpoints/${list[0].id}/delete`, {})).status).toBe(200);
    expect((await c.json('GET', '/v1/webhook_endpoints')).body.endpoints).toEqual([]);
  });

  test('the signing secret is shown only on demand, equals the API’s, and rotates', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const api = (await c.json('GET', '/v1/webhooks/secret')).body.secret as string;
    expect((await p.get('/portal/developers')).text).not.toContain(api);
    expect((await p.post('/portal/developers/secret', { action: 'reveal' })).text).toContain(api);
    const rotated = await p.post('/portal/developers/secret', { action: 'rotate' });
    const now = (await c.json('GET', '/v1/webhooks/secret')).body.secret as string;
    expect(now).not.toBe(api);
    expect(rotated.text).toContain(now);
  });
});

describe('Collection rules', () => {
  test('the form round-trips through GET /v1/collection_policy; a bad value is refused on the page; the return rates are shown', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const page = await p.get('/portal/payments/rules');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Collection rules</h1>');
    expect(page.text).toContain('Return rates</h2>');
    const saved = await p.post('/portal/payments/rules', { cfpb_covered: 'true', max_reinitiations: '1', reinitiation_amount: 'original', notice_days: '3', time_zone: 'America/New_York' });
    expect(saved.status).toBe(200);
    expect((await c.json('GET', '/v1/collection_policy')).body).toMatchObject({
      cfpb_covered: true,
      max_reinitiations: 1,
      reinitiation_amount: 'original',
      notice_days: 3,
      return_rate_pause: false,
      time_zone: 'America/New_York',
    });
    // What was saved is what the form shows next.
    const shown = (await p.get('/portal/payments/rules')).text;
    expect(shown).toMatch(/id="cfpb_covered" name="cfpb_covered" type="checkbox" value="true" checked/);
    expect(shown).toMatch(/<option value="1" selected/);
    expect(shown).toMatch(/<option value="original" selected/);
    expect(shown).toMatch(/name="notice_days"[^>]*value="3"/);
    expect(shown).toMatch(/name="time_zone"[^>]*value="America\/New_York"/);
    for (const bad of [{ notice_days: '11' }, { notice_days: 'soon' }, { max_reinitiations: '3' }, { reinitiation_amount: 'double' }, { time_zone: 'Nowhere/Land' }]) {
      const r = await p.post('/portal/payments/rules', { max_reinitiations: '1', reinitiation_amount: 'original', notice_days: '3', time_zone: 'America/New_York', ...bad });
      expect(r.status).toBe(400);
      expect(r.text).toContain('role="alert"');
    }
    expect((await c.json('GET', '/v1/collection_policy')).body).toMatchObject({ cfpb_covered: true, max_reinitiations: 1, notice_days: 3, time_zone: 'America/New_York' });
    // An empty time zone is UTC.
    await p.post('/portal/payments/rules', { max_reinitiations: '1', reinitiation_amount: 'original', notice_days: '3', time_zone: '' });
    expect((await c.json('GET', '/v1/collection_policy')).body.time_zone).toBeNull();
  });
});

describe('Collection rules: payment notices', () => {
  test('the notice channel and the Regulation E default election are saved as PATCH saves them; a bad one is refused on the page, and a form without them leaves them', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const policy = async () => (await c.json('GET', '/v1/collection_policy')).body;
    // A new lender binds the notices electronically and asks no varying-amount notice: the form shows it so.
    const first = (await p.get('/portal/payments/rules')).text;
    expect(first).toMatch(/<option value="electronic" selected/);
    expect(first).toMatch(/<option value="none" selected/);
    expect(first).toContain('I send the payday rule’s notices myself');
    const base = { max_reinitiations: '2', reinitiation_amount: 'current', notice_days: '0' };
    let r = await p.post('/portal/payments/rules', { ...base, cfpb_covered: 'true', notice_channel: 'mail', reg_e_type: 'outside_range', reg_e_min_cents: '500', reg_e_max_cents: '20000', reg_e_amount_cents: '' });
    expect(r.status).toBe(200);
    expect(r.text).toContain('Collection rules saved.');
    expect(await policy()).toMatchObject({ cfpb_covered: true, notice_channel: 'mail', reg_e_election: { type: 'outside_range', min_cents: 500, max_cents: 20000 } });
    const shown = (await p.get('/portal/payments/rules')).text;
    expect(shown).toMatch(/<option value="mail" selected/);
    expect(shown).toMatch(/<option value="outside_range" selected/);
    expect(shown).toMatch(/name="reg_e_min_cents"[^>]*value="500"/);
    expect(shown).toMatch(/name="reg_e_max_cents"[^>]*value="20000"/);
    // Only the amounts of the chosen election are read.
    r = await p.post('/portal/payments/rules', { ...base, cfpb_covered: 'true', notice_channel: 'self', reg_e_type: 'difference_over', reg_e_min_cents: '500', reg_e_max_cents: '20000', reg_e_amount_cents: '300' });
    expect(r.status).toBe(200);
    expect(await policy()).toMatchObject({ notice_channel: null, reg_e_election: { type: 'difference_over', amount_cents: 300 } });
    expect((await policy()).reg_e_election).toEqual({ type: 'difference_over', amount_cents: 300 });
    expect((await p.get('/portal/payments/rules')).text).toMatch(/<option value="self" selected/);
    for (const [bad, words] of [
      [{ reg_e_type: 'outside_range', reg_e_min_cents: '3000', reg_e_max_cents: '2000' }, 'min_cents must not be above max_cents'],
      [{ reg_e_type: 'outside_range', reg_e_min_cents: '3000', reg_e_max_cents: '' }, 'the highest amount without a notice'],
      [{ reg_e_type: 'difference_over', reg_e_amount_cents: 'lots' }, 'the largest difference without a notice'],
      [{ reg_e_type: 'sometimes' }, 'reg_e_election'],
      [{ notice_channel: 'pigeon' }, 'notice_channel'],
      // Covered, with mail notices, the lead must stay inside their window (6 to 10 business days).
      [{ notice_channel: 'mail', notice_days: '5' }, 'notice_days'],
    ] as const) {
      const refused = await p.post('/portal/payments/rules', Object.assign({ ...base, cfpb_covered: 'true', notice_channel: 'self', reg_e_type: 'always' }, bad));
      expect(refused.status).toBe(400);
      expect(refused.text).toContain('role="alert"');
      expect(refused.text).toContain(words);
    }
    expect((await policy())).toMatchObject({ notice_channel: null, reg_e_election: { type: 'difference_over', amount_cents: 300 } });
    // Mail notices with a lead inside their window; then always.
    r = await p.post('/portal/payments/rules', { ...base, cfpb_covered: 'true', notice_days: '6', notice_channel: 'mail', reg_e_type: 'always' });
    expect(r.status).toBe(200);
    expect(await policy()).toMatchObject({ notice_days: 6, notice_channel: 'mail', reg_e_election: { type: 'always' } });
    // A form that does not send them (an older page) leaves them as they are.
    await p.post('/portal/payments/rules', base);
    expect(await policy()).toMatchObject({ cfpb_covered: false, notice_channel: 'mail', reg_e_election: { type: 'always' } });
  });
});

describe('Payment notices on the borrower page', () => {
  /** Monday 23 November 2026, 16:00 UTC: Thursday is Thanksgiving. */
  const AT = '2026-11-23T16:00:00.000Z';
  const at = (env: Record<string, string> = {}) => {
    const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: '3600000', ...env }, { clockAt: AT });
    contexts.push(c);
    return c;
  };
  const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;

  test('a covered borrower’s scheduled payment shows its class, what asks for its notice and its window; the form confirms it as the API does, and refuses what the API refuses', async () => {
    const c = at();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_portal_notices_000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: true, notice_channel: 'electronic' } })).status).toBe(200);
    await c.json('POST', '/v1/payment_enrollments', {
      body: { borrowers: [enrollBorrower('told', { collectable_amount: 1000, account_number: ownAccount(0) }), enrollBorrower('late', { collectable_amount: 2000, account_number: ownAccount(1) })] },
    });
    await cycle(c);
    // The first payment, electronic: no later than 3 business days before its day, Monday 30 November (Thursday is a holiday).
    const s = (await view(c, 'told')).scheduled_payment;
    expect(s).toMatchObject({ notice_class: 'first', debit_on: '2026-11-30', notice: { requirements: ['cfpb'], due_from: AT, due_by: '2026-11-24T23:59:59.999Z', sent_at: null } });
    const p = await signedIn(c);
    const page = (await p.get('/portal/payments/borrowers/told')).text;
    expect(page).toContain('<h2 id="payment-notice">Payment notice</h2>');
    expect(page).toContain('<th scope="row">Class</th><td>first payment: no debit of the borrower has reached its processor before</td>');
    expect(page).toContain('<th scope="row">What asks for it</th><td>the CFPB payday rule’s payment notice (12 CFR 1041.9(b))</td>');
    expect(page).toMatch(/<th scope="row">Window<\/th><td>send it no earlier than <time datetime="2026-11-23T16:00:00.000Z">23 Nov 2026, 16:00 UTC \(just now\)<\/time> and no later than <time datetime="2026-11-24T23:59:59.999Z">24 Nov 2026, 23:59 UTC/);
    expect(page).toContain('for a debit on 2026-11-30 (the window of an electronic notice');
    expect(page).toContain('not sent yet');
    expect(page).toContain('(' + s.reference + '), waiting for its notice</td>');
    expect(page).toContain('Regulation E election</th><td>policy default (none: no varying-amount notice is asked)</td>');
    expect(page).toContain('New authorization</th><td>none recorded</td>');
    // The payments table gives each payment's class.
    expect(page).toMatch(/<th scope="col" class="wide">Class<\/th>/);
    expect(page).toMatch(/<td>scheduled<\/td><td class="wide">first<\/td>/);
    // The form: the payment shown, sent_at now (UTC, to the second), the policy's channel.
    expect(page).toContain(`<input type="hidden" name="payment_id" value="${s.payment_id}"/>`);
    expect(page).toMatch(/id="sent_at" name="sent_at" type="datetime-local" step="1" required="" value="2026-11-23T16:00:00"/);
    expect(page).toMatch(/<option value="electronic" selected/);

    const form = { payment_id: s.payment_id, sent_at: '2026-11-23T16:00:00', channel: 'electronic' };
    for (const [bad, status, words] of [
      [{ sent_at: '2026-11-23T17:00' }, 400, 'Expected a time not in the future'],
      [{ sent_at: 'soon' }, 400, 'sent_at'],
      // A mailed first-payment notice was due 6 business days before: its window has passed.
      [{ channel: 'mail' }, 400, 'A mail notice of this payment is sent between'],
      [{ channel: 'pigeon' }, 400, 'channel'],
      [{ evidence_ref: 'x'.repeat(201) }, 400, 'evidence_ref'],
      // Another borrower's payment (or one replanned since the page was shown) is not this page's to confirm.
      [{ payment_id: (await view(c, 'late')).scheduled_payment.payment_id }, 409, 'no longer the one the form was for'],
    ] as const) {
      const refused = await p.post('/portal/payments/borrowers/told/notice', { ...form, ...bad });
      expect(`${refused.status} ${refused.text.includes('role="alert"')}`).toBe(`${status} true`);
      expect(refused.text).toContain(words);
    }
    expect((await view(c, 'told')).scheduled_payment.notice.sent_at).toBeNull();
    expect((await view(c, 'late')).scheduled_payment.notice.sent_at).toBeNull();

    // Sent a while ago, confirmed now (the session is still young: 30 idle minutes end it).
    c.clock.advance(20 * 60_000);
    const done = await p.post('/portal/payments/borrowers/told/notice', { ...form, sent_at: '2026-11-23T16:10', evidence_ref: 'msg-4471' });
    expect(done.status).toBe(200);
    expect(done.text).toMatch(/<p role="status"><ins>Notice confirmed: sent 23 Nov 2026, 16:10 UTC by electronic\. The payment goes out on 2026-11-30/);
    expect((await view(c, 'told')).scheduled_payment.notice).toMatchObject({ sent_at: '2026-11-23T16:10:00.000Z' });
    const kept = (await c.rows<{ ref: string | null; channel: string | null }>('SELECT notice_evidence_ref AS ref, notice_sent_channel AS channel FROM payments WHERE id = ?', s.payment_id))[0];
    expect(kept).toEqual({ ref: 'msg-4471', channel: 'electronic' });
    expect(done.text).toContain('<th scope="row">Sent</th><td>sent <time datetime="2026-11-23T16:10:00.000Z">');
    expect(done.text).not.toContain('Confirm notice sent');
    expect(done.text).not.toContain('waiting for its notice');
    // Once: the API says so, and so does the page.
    const again = await p.post('/portal/payments/borrowers/told/notice', form);
    expect(again.status).toBe(409);
    expect(again.text).toContain('Its notice was confirmed already');

    // Past its window, unsent: overdue, and no form (the next read voids it).
    c.clock.set(Date.parse('2026-11-25T00:00:00.000Z'));
    const late = (await (await signedIn(c)).get('/portal/payments/borrowers/late')).text;
    expect(late).toContain('<strong>overdue</strong>: its window closed <time datetime="2026-11-24T23:59:59.999Z">');
    expect(late).not.toContain('Confirm notice sent');
  });

  test('a new authorization under the payday rule with its transfers, and the borrower’s Regulation E election', async () => {
    const c = at();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_portal_notices_000002', rail_scope: 'both', is_default: true } })).status).toBe(201);
    // The lender sends the payday rule's payment notices itself here: the debits go at once.
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: true, notice_channel: null } })).status).toBe(200);
    // Cents 91: every debit is returned R01; after two, the borrower waits for a new authorization.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('nsf', { collectable_amount: 1091 })] } });
    for (let i = 0; i < 5; i++) {
      await cycle(c);
      c.clock.advance(SETTLE);
      await pollProcessors(c.rt);
      c.clock.advance(3_600_000);
    }
    expect((await view(c, 'nsf')).blocked_reason).toBe('reauthorization_required');
    const now = new Date(c.clock.now()).toISOString();
    expect((await c.json('POST', '/v1/payment_enrollments/nsf/rights_notice', { body: { sent_at: now, channel: 'electronic' } })).status).toBe(200);
    c.clock.advance(60_000);
    const obtained = new Date(c.clock.now()).toISOString();
    const transfers = [
      { date: '2026-12-01', max_amount_cents: 500, channel: 'ach' },
      { date: '2026-12-15', max_amount_cents: 591, channel: 'ach' },
    ];
    const auth = await c.json('POST', '/v1/payment_enrollments/nsf/authorizations', { body: { obtained_at: obtained, method: 'recorded_call', evidence_ref: 'CALL-2291', transfers, fee_max_amount_cents: 0 } });
    expect(auth.status).toBe(200);
    expect((await c.json('POST', '/v1/payment_enrollments/nsf/reg_e_election', { body: { election: { type: 'outside_range', min_cents: 500, max_cents: 2000 } } })).status).toBe(200);
    const p = await signedIn(c);
    const page = (await p.get('/portal/payments/borrowers/nsf')).text;
    expect(page).toContain('<h2 id="reauthorization">New authorization</h2>');
    expect(page).toContain(`<th scope="row">Obtained</th><td><time datetime="${obtained}">`);
    expect(page).toContain('<th scope="row">Method</th><td>recorded_call</td>');
    expect(page).toContain('<th scope="row">Evidence</th><td>CALL-2291</td>');
    expect(page).toContain('<th scope="row">Fee maximum (recorded; no fee is debited)</th><td>$0.00</td>');
    expect(page).toContain('<tr><td>2026-12-01</td><td>$5.00</td><td>ach</td></tr>');
    expect(page).toContain('<tr><td>2026-12-15</td><td>$5.91</td><td>ach</td></tr>');
    expect(page).toContain('(2 transfers)');
    expect(page).toContain('Regulation E election</th><td>outside a range: a notice only below $5.00 or above $20.00</td>');
    // The payments so far: the first and its reinitiation.
    expect(page).toMatch(/<td>returned<\/td><td class="wide">first<\/td>/);
    expect(page).toMatch(/<td>returned<\/td><td class="wide">reinitiation<\/td>/);
    // Back to the policy's election.
    expect((await c.json('POST', '/v1/payment_enrollments/nsf/reg_e_election', { body: { election: null } })).status).toBe(200);
    expect((await p.get('/portal/payments/borrowers/nsf')).text).toContain('Regulation E election</th><td>policy default (none: no varying-amount notice is asked)</td>');
  });
});

describe('every page', () => {
  const PAGES = ['/portal', '/portal/developers', '/portal/payments/rules', '/portal/balance-checks', '/portal/monitoring', '/portal/payments/borrowers', '/portal/payments/bank-accounts', '/portal/payments/connections', '/portal/payments/bank-data', '/portal/payments/results-upload'];

  test('signed out, each sends to sign-in', async () => {
    const c = fresh();
    for (const path of PAGES) {
      const r = await c.request('GET', path, { key: null });
      expect(`${path} ${r.status} ${r.headers.get('location')}`).toBe(`${path} 303 /portal/login`);
    }
  });

  test('a stored value with markup and bidi controls is shown as text, its controls written out', async () => {
    const c = fresh({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    const p = await signedIn(c, { name: 'Eve \u202Eexe.txt\u202C <script>alert(1)</script>' });
    await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/x', event_types: ['PAYMENT_EVENT'], description: '"><img src=x onerror=alert(1)>\u202Etxt' } });
    for (const path of PAGES) {
      const r = await p.get(path);
      expect(r.status).toBe(200);
      expect(r.text).not.toContain('<script>alert(1)');
      expect(r.text).not.toContain('<img src=x');
      expect(r.text).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    }
    expect((await p.get('/portal')).text).toContain('Signed in as Eve [U+202E]exe.txt[U+202C] &lt;script&gt;');
  });

  test('an error is a page with the envelope’s message: an unknown schedule, a bad export', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const missing = await p.get('/portal/monitoring/no-such-schedule');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('text/html');
    expect(missing.text).toContain('role="alert"');
    const exp = await p.get('/portal/balance-checks/export?batch_ids=not-a-batch');
    expect(exp.status).toBeGreaterThanOrEqual(400);
    expect(exp.headers.get('content-type')).toContain('text/html');
    const api = await c.json('GET', '/v1/balances/csv?batch_ids=not-a-batch');
    expect(api.status).toBe(exp.status);
    expect(exp.text).toContain(api.body.error.message.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;'));
    // A form its schema refuses (an action a key's row does not have) is the page again with the reason.
    const key = await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_form_schema_key_00001', rail_scope: 'ach' } });
    const bogus = await p.post(`/portal/payments/connections/${key.body.id}`, { action: 'explode' });
    expect(bogus.status).toBe(400);
    expect(bogus.text).toContain('role="alert"');
    expect(bogus.text).toContain('/action');
    expect((await c.json('GET', '/v1/payment_connections')).body.connections).toHaveLength(1);
    // Refused before any route (a path that does not decode): a page too, with the API's request id.
    const early = await p.get('/portal/payments/borrowers/%E0%A4%A');
    expect(early.status).toBe(400);
    expect(early.headers.get('content-type')).toContain('text/html');
    expect(early.text).toContain('malformed percent-encoding');
    expect(early.headers.get('x-request-id')).toBeTruthy();
    const apiEarly = await c.request('GET', '/v1/payment_enrollments/%E0%A4%A');
    expect(apiEarly.headers.get('content-type')).toContain('application/json');
  });
});

describe('Borrowers', () => {
  test('the list says why a borrower is held or stopped beside its state, as the API gives it', async () => {
    const c = fresh();
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_reasons_00000000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    // A bank the sandbox cannot read yet (held), and a debit returned R02 (stopped).
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('why-held', { routing_number: '110000026' }), enrollBorrower('why-stopped', { collectable_amount: 42593 })] } });
    await cycle(c);
    await dispatchAndSettle(c, SETTLE);
    const held = (await c.json('GET', '/v1/payment_enrollments/why-held')).body;
    const stopped = (await c.json('GET', '/v1/payment_enrollments/why-stopped')).body;
    expect([held.state, typeof held.reason]).toEqual(['held', 'string']);
    expect([stopped.state, typeof stopped.reason]).toEqual(['stopped', 'string']);
    const list = (await (await signedIn(c)).get('/portal/payments/borrowers?q=why-')).text;
    expect(list).toContain(`<td>held: ${held.reason}</td>`);
    expect(list).toContain(`<td>stopped: ${stopped.reason}</td>`);
  });

  test('the sign-in page says how accounts are made', async () => {
    const c = fresh();
    const page = await (await c.request('GET', '/portal/login', { key: null })).text();
    expect(page).toContain('Accounts are made by the operator of this service');
    expect(page).toContain('bun run cli user create');
  });

  test('search by a prefix of the id, filters, paging and the CSV of the list; removal from the borrower page stops collection', async () => {
    const c = fresh();
    const ids = [...Array.from({ length: 55 }, (_, i) => `loan-${String(i).padStart(3, '0')}`), 'other-1', 'other-2', 'ünï/cödé 1'];
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: ids.map((id) => enrollBorrower(id)) } });
    const p = await signedIn(c);
    const found = await p.get('/portal/payments/borrowers?q=other');
    expect(found.status).toBe(200);
    expect(found.text).toContain('>other-1</a>');
    expect(found.text).toContain('>other-2</a>');
    expect(found.text).not.toContain('>loan-000</a>');
    const first = await p.get('/portal/payments/borrowers?q=loan-');
    expect((first.text.match(/>loan-\d{3}<\/a>/g) ?? []).length).toBe(50);
    const next = /href="(\/portal\/payments\/borrowers\?[^"]*next_page_token=[^"]+)"/.exec(first.text)![1]!.replace(/&amp;/g, '&');
    const second = await p.get(next);
    expect((second.text.match(/>loan-\d{3}<\/a>/g) ?? []).length).toBe(5);
    expect(second.text).toContain('>loan-054</a>');
    expect(second.text).not.toContain('next_page_token');
    expect((await p.get('/portal/payments/borrowers?q=nobody')).text).toContain('No borrower matches.');
    expect((await p.get('/portal/payments/borrowers?state=bogus')).status).toBe(400);

    const csv = await p.get('/portal/payments/borrowers.csv?q=other');
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const lines = csv.text.trim().split(/\r?\n/);
    expect(lines[0]).toStartWith('authorizer_unique_id,state,');
    expect(lines.slice(1).map((l) => l.split(',')[0])).toEqual(['other-1', 'other-2']);
    const all = (await p.get('/portal/payments/borrowers.csv')).text.trim().split(/\r?\n/);
    expect(all.length).toBe(ids.length + 1);

    const odd = encodeURIComponent('ünï/cödé 1');
    const view = await p.get(`/portal/payments/borrowers/${odd}`);
    expect(view.status).toBe(200);
    expect(view.text).toContain('Remove from collection');
    const confirm = await p.get(`/portal/payments/borrowers/${odd}/remove`);
    expect(confirm.text).toContain('Remove borrower');
    // Nothing happens before the confirmation is posted.
    expect((await c.json('GET', `/v1/payment_enrollments/${odd}`)).body.state).toBe('monitored');
    const removed = await p.post(`/portal/payments/borrowers/${odd}/remove`, {});
    expect(removed.status).toBe(200);
    expect(removed.text).toContain('Removed');
    expect((await c.json('GET', `/v1/payment_enrollments/${odd}`)).body.state).toBe('removed');
    expect((await p.get('/portal/payments/borrowers?state=removed')).text).toContain('ünï/cödé 1');

    const erased = await p.post('/portal/payments/borrowers/other-1/erase', {});
    expect(erased.status).toBe(200);
    expect((await c.json('GET', '/v1/payment_enrollments/other-1')).body.state).toBe('removed');
    expect((await p.get('/portal/payments/borrowers/nobody')).status).toBe(404);
  });
});

describe('Borrower ids on the portal', () => {
  // Every id is decoded once: the page shows the exact id and its actions act on exactly that borrower, never
  // on another enrolled one whose id is its decoded form (what a second decoding would name).
  const ODD = ['x%41', 'e%42', '%', '100%', 'p%2Fq', 'a/b', 'what?', 'hash#tag', ' two  words ', 'ünï cödé ✓', '%E2%9C%93', '.', '..'];
  const DECOYS = ['xA', 'eB', 'p/q', '✓'];
  const escapeHtml = (x: string) => x.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const unescapeHref = (x: string) => x.replace(/&amp;/g, '&');
  const regexOf = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  async function states(c: TestContext): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    let token: string | null = null;
    do {
      const r: { body: { enrollments: { authorizer_unique_id: string; state: string }[]; next_page_token: string | null } } = await c.json(
        'GET',
        `/v1/payment_enrollments?limit=100${token ? `&next_page_token=${encodeURIComponent(token)}` : ''}`,
      );
      for (const e of r.body.enrollments) out.set(e.authorizer_unique_id, e.state);
      token = r.body.next_page_token;
    } while (token);
    return out;
  }

  test('the list links each borrower to a page of exactly that id; Remove and Erase act on exactly the borrower shown', async () => {
    const c = fresh();
    const enrolled = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [...ODD, ...DECOYS].map((id) => enrollBorrower(id)) } });
    expect(enrolled.status).toBe(207);
    expect([...(await states(c)).values()].every((x) => x === 'monitored')).toBe(true);
    const p = await signedIn(c);
    const list = (await p.get('/portal/payments/borrowers')).text;
    for (const [i, id] of ODD.entries()) {
      const shown = escapeHtml(id);
      // The link a browser follows, resolved as a browser resolves it.
      const href = unescapeHref(new RegExp(`<a href="([^"]+)">${regexOf(shown)}</a>`).exec(list)![1]!);
      const view = await p.get(href);
      expect(`${id} ${view.status}`).toBe(`${id} 200`);
      expect(view.text).toContain(`<h1>Borrower ${shown}</h1>`);
      const action = i % 2 === 0 ? 'remove' : 'erase';
      const label = action === 'remove' ? 'Remove from collection' : 'Erase personal data';
      const confirmHref = unescapeHref(new RegExp(`<a href="([^"]+)">${label}</a>`).exec(view.text)![1]!);
      const confirm = await p.get(confirmHref);
      expect(confirm.status).toBe(200);
      expect(confirm.text).toContain(`<strong>${shown}</strong>`);
      const post = unescapeHref(/<form method="post" action="([^"]+)">/.exec(confirm.text.slice(confirm.text.indexOf(`<strong>${shown}</strong>`)))![1]!);
      const done = await p.post(post, {});
      expect(`${id} ${done.status}`).toBe(`${id} 200`);
      expect(done.text).toContain(`<h1>Borrower ${shown}</h1>`);
      expect(done.text).toContain(action === 'remove' ? 'Removed: no new payment is made for this borrower.' : 'Personal data erased; monitoring stopped.');
      // Exactly this borrower changed: every id acted on so far is removed, every other one still monitored.
      const now = await states(c);
      for (const other of [...ODD, ...DECOYS]) {
        const acted = ODD.indexOf(other) !== -1 && ODD.indexOf(other) <= i;
        expect(`${other} ${now.get(other)}`).toBe(`${other} ${acted ? 'removed' : 'monitored'}`);
      }
    }
  });

  test('every other page with an id in its path takes it decoded once: an id with a percent sign is not found, never an error', async () => {
    const c = fresh();
    const p = await signedIn(c);
    for (const raw of ['x%2541', '100%25', '%25', 'a%2Fb', 'a%3Fb%23c%20%C3%BC']) {
      for (const path of [`/portal/monitoring/${raw}`, `/portal/payments/results-upload/history/${raw}`, `/portal/developers/keys/${raw}/revoke`, `/portal/payments/connections/${raw}/delete`]) {
        expect(`${path} ${(await p.get(path)).status}`).toBe(`${path} 404`);
      }
      for (const [path, fields] of [
        [`/portal/developers/keys/${raw}/revoke`, {}],
        [`/portal/developers/endpoints/${raw}/delete`, {}],
        [`/portal/payments/connections/${raw}`, { action: 'delete' }],
      ] as const) {
        expect(`POST ${path} ${(await p.post(path, fields)).status}`).toBe(`POST ${path} 404`);
      }
    }
  });

  test('typed into the address bar: an id with a percent sign is that id, and one that is only a percent sign is not an error', async () => {
    const c = fresh();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: ['x%41', 'xA', '100%'].map((id) => enrollBorrower(id)) } });
    const p = await signedIn(c);
    const exact = await p.get('/portal/payments/borrowers/x%2541');
    expect(exact.text).toContain('<h1>Borrower x%41</h1>');
    expect((await p.get('/portal/payments/borrowers/x%41')).text).toContain('<h1>Borrower xA</h1>');
    const percent = await p.get('/portal/payments/borrowers/100%25');
    expect(percent.status).toBe(200);
    expect(percent.text).toContain('<h1>Borrower 100%</h1>');
    // The page by query names a borrower exactly as sent, with no trimming.
    expect((await p.get('/portal/payments/borrower?id=x%2541')).text).toContain('<h1>Borrower x%41</h1>');
    expect((await p.get('/portal/payments/borrower?id=%20xA')).status).toBe(404);
    expect((await p.get('/portal/payments/borrower')).status).toBe(400);
    expect((await c.json('GET', '/v1/payment_enrollments/xA')).body.state).toBe('monitored');
  });
});

describe('Balance checks and the upload history', () => {
  test('the batches the lender sent by default, the monitoring reads behind the filter', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const sent = await c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('bc-1')] } });
    c.sql.query("INSERT INTO batches (id, lender_id, source, status, submitted_at, total_authorizers, total_processed) SELECT 'monitoring-batch-1', lender_id, 'monitoring', 'completed', submitted_at + 1, 1, 1 FROM batches WHERE id = ?").run(sent.body.batch_id);
    const byDefault = await p.get('/portal/balance-checks');
    expect(byDefault.text).toContain(sent.body.batch_id);
    expect(byDefault.text).not.toContain('monitoring-batch-1');
    const monitoring = await p.get('/portal/balance-checks?kind=monitoring');
    expect(monitoring.text).toContain('monitoring-batch-1');
    expect(monitoring.text).not.toContain(sent.body.batch_id);
    const all = await p.get('/portal/balance-checks?kind=all');
    expect(all.text).toContain('monitoring-batch-1');
    expect(all.text).toContain(sent.body.batch_id);
    expect((await p.get('/portal/balance-checks?kind=bogus')).status).toBe(400);
  });

  test('a recorded upload is in the history with its sender; its page lists its problems', async () => {
    const c = fresh();
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('up-1')] } });
    const form = new FormData();
    form.append('file', new Blob(['authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\nup-1,UP-1,10.00,sent,2026-11-02,,,\n,,5,sent,2026-11-02,,,\n'], { type: 'text/csv' }), 'r.csv');
    expect((await c.json('POST', '/v1/payment_results/uploads', { form })).status).toBe(200);
    const p = await signedIn(c);
    const pageText = (await p.get('/portal/payments/results-upload')).text;
    expect(pageText).toContain('Recorded uploads');
    expect(pageText).toMatch(/API key drs_/);
    const link = /href="(\/portal\/payments\/results-upload\/history\/[^"]+)"/.exec(pageText)![1]!;
    const one = await p.get(link);
    expect(one.status).toBe(200);
    expect(one.text).toContain('authorizer_unique_id or reference is required');
    expect((await p.get('/portal/payments/results-upload/history/unknown')).status).toBe(404);
  });
});
