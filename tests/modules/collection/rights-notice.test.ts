// engine: both
// The consumer-rights notice of the CFPB payday rule (12 CFR 1041.9(c)), end to end against the sandbox processor
// (cents 91: every debit returned R01): a covered borrower's second consecutive failure for funds makes exactly
// one notice due by the end of the third business day after the service learned of it, pushed as
// RIGHTS_NOTICE_DUE in the transaction that records the return; an uncovered borrower and a stop (R08: the
// processor's, through the real Stripe adapter against the fake Stripe server, or the lender's upload) owe none;
// the lender records the notice as sent once; the enrollment view, the listing and the portal show it.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { signedIn } from '../../helpers/portal';
import { startFakeStripe } from '../../fakes/stripe-server';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { holdChain } from '../../../src/modules/collection/chain';
import { noticeDueBy } from '../../../src/modules/rights-notices/service';
import { transaction } from '../../../src/platform/context';
import { addBusinessDays } from '../../../src/platform/business-days';

const SETTLE = 60_000;
const READ = 3_600_000;
const DAY = 86_400_000;
/** Wednesday 25 November 2026: Thursday is Thanksgiving, then a weekend, so three business days on is Tuesday 1 December. */
const AT = '2026-11-25T12:00:00.000Z';
const DUE = '2026-12-01T23:59:59.999Z';
const HEADER = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';

const stripe = startFakeStripe();
const contexts: TestContext[] = [];
afterAll(() => {
  contexts.forEach((c) => c.close());
  stripe.stop();
});

let keys = 0;
async function setup(policy: Record<string, unknown> = { cfpb_covered: true }) {
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) }, { clockAt: AT });
  contexts.push(c);
  const key = `sbx_rights_notice_${String(++keys).padStart(8, '0')}`;
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'both', is_default: true } })).status).toBe(201);
  // Kept in the outbox (never delivered here: nothing listens on port 9).
  expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/notices', event_types: ['RIGHTS_NOTICE_DUE'] } })).status).toBe(201);
  // The payday rule's payment notices are the lender's own here (no debit waits for them; payment-notices.test.ts binds them).
  expect((await c.json('PATCH', '/v1/collection_policy', { body: { notice_channel: null, ...policy } })).status).toBe(200);
  return c;
}

/** Reads and payments: each round a read (and a debit when one may go out), its outcome one settlement period later. */
async function run(c: TestContext, rounds: number) {
  for (let i = 0; i < rounds; i++) {
    await cycle(c);
    c.clock.advance(SETTLE);
    await pollProcessors(c.rt);
    c.clock.advance(READ);
  }
}

const enroll = async (c: TestContext, ...borrowers: Record<string, unknown>[]) => {
  const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } });
  expect(r.status).toBe(207);
  expect(r.body.results.map((x: { outcome: string }) => x.outcome)).toEqual(borrowers.map(() => 'enrolled'));
};
const view = async (c: TestContext, aid: string) => (await c.json('GET', `/v1/payment_enrollments/${aid}`)).body;
const iso = (ms: number) => new Date(ms).toISOString();

interface NoticeRow {
  id: string;
  enrollmentId: string;
  reference: string;
  learnedAt: number;
  dueBy: number;
  sentAt: number | null;
  channel: string | null;
  evidenceRef: string | null;
}
const notices = (c: TestContext) =>
  c.rows<NoticeRow>(
    `SELECT id, enrollment_id AS enrollmentId, reference, learned_at AS learnedAt, due_by AS dueBy, sent_at AS sentAt, channel, evidence_ref AS evidenceRef
       FROM rights_notices ORDER BY created_at, id`,
  );
const pushes = async (c: TestContext) =>
  (await c.rows<{ payload: string }>("SELECT payload FROM webhook_deliveries WHERE type = 'RIGHTS_NOTICE_DUE' ORDER BY created_at, id")).map((d) => JSON.parse(d.payload));
const payments = (c: TestContext, aid: string) =>
  c.rows<{ id: string; reference: string; status: string; returnCode: string | null; amountCents: number; firstAttemptAt: number; updatedAt: number }>(
    `SELECT id, reference, status, return_code AS returnCode, amount_cents AS amountCents, first_attempt_at AS firstAttemptAt, updated_at AS updatedAt
       FROM payments WHERE authorizer_unique_id = ? ORDER BY created_at, id`,
    aid,
  );
const record = (c: TestContext, aid: string, body: unknown, key?: string) => c.json('POST', `/v1/payment_enrollments/${encodeURIComponent(aid)}/rights_notice`, { body, ...(key ? { key } : {}) });
const list = (c: TestContext, query = '', key?: string) => c.json('GET', `/v1/compliance/notices${query}`, key ? { key } : {});

describe('the notice is made due by the second consecutive failure for funds of a covered borrower', () => {
  test('one notice, due by the end of the third business day after the second return was recorded (a holiday and a weekend between), pushed once', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('nsf', { collectable_amount: 1091 }));
    await run(c, 1);
    // One failure: nothing is due yet.
    expect(await payments(c, 'nsf')).toMatchObject([{ status: 'returned', returnCode: 'R01' }]);
    expect(await notices(c)).toEqual([]);
    expect((await view(c, 'nsf')).rights_notice).toBeNull();

    await run(c, 1);
    const [first, second] = await payments(c, 'nsf');
    expect([first, second].map((p) => `${p!.status}:${p!.returnCode}`)).toEqual(['returned:R01', 'returned:R01']);
    expect((await view(c, 'nsf')).blocked_reason).toBe('reauthorization_required');
    const found = await notices(c);
    expect(found).toHaveLength(1);
    const n = found[0]!;
    expect(n).toMatchObject({ reference: second!.reference, learnedAt: second!.updatedAt, sentAt: null, channel: null, evidenceRef: null });
    expect(iso(n.learnedAt).slice(0, 10)).toBe('2026-11-25');
    expect(iso(n.dueBy)).toBe(DUE);
    expect(n.dueBy).toBe(addBusinessDays(n.learnedAt, 3) + DAY - 1);

    expect(await pushes(c)).toEqual([
      {
        event_uuid: expect.any(String),
        type: 'RIGHTS_NOTICE_DUE',
        authorizer_unique_id: 'nsf',
        notice_id: n.id,
        failed_attempts: [first!, second!].map((p) => ({
          reference: p.reference,
          amount: 1091,
          attempted_at: iso(p.firstAttemptAt),
          returned_at: iso(p.updatedAt),
          return_code: 'R01',
        })),
        learned_at: iso(n.learnedAt),
        due_by: DUE,
      },
    ]);

    // The same failure recorded again makes no second notice, and the blocked borrower is never debited again.
    await transaction({ deps: c.rt }, (tx) => holdChain(tx, n.enrollmentId, c.clock.now(), { returned: true }));
    await run(c, 3);
    expect(await payments(c, 'nsf')).toHaveLength(2);
    expect(await notices(c)).toHaveLength(1);
    expect(await pushes(c)).toHaveLength(1);
  });

  test('an uncovered borrower owes none; a borrower covered by its own cfpb_covered does, under a policy that covers no one', async () => {
    const c = await setup({});
    await enroll(c, enrollBorrower('plain', { collectable_amount: 1091 }), enrollBorrower('own-flag', { collectable_amount: 2091, cfpb_covered: true, account_number: '0007654321' }));
    await run(c, 4);
    expect((await payments(c, 'plain')).map((p) => `${p.status}:${p.returnCode}`)).toEqual(['returned:R01', 'returned:R01', 'returned:R01']);
    const covered = await payments(c, 'own-flag');
    expect(covered).toHaveLength(2);
    expect((await notices(c)).map((n) => n.reference)).toEqual([covered[1]!.reference]);
    expect((await pushes(c)).map((p) => p.authorizer_unique_id)).toEqual(['own-flag']);
    expect((await view(c, 'plain')).rights_notice).toBeNull();
    expect((await view(c, 'own-flag')).rights_notice).toMatchObject({ due_by: DUE, sent_at: null });
  });

  test('a stop (R08) returned by the processor after a failure for funds blocks the borrower but owes no notice', async () => {
    const c = createTestContext({ STRIPE_API_URL: stripe.url, MONITOR_READ_INTERVAL_MS: String(READ) }, { clockAt: AT });
    contexts.push(c);
    const key = 'sk_test_rights_notice_stop_0001';
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: key, rail_scope: 'ach', is_default: true } })).status).toBe(201);
    expect((await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'https://127.0.0.1:9/notices', event_types: ['RIGHTS_NOTICE_DUE'] } })).status).toBe(201);
    expect((await c.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: true, notice_channel: null } })).status).toBe(200);
    await enroll(c, enrollBorrower('stopped', { collectable_amount: 5000 }));
    const intent = async (n: number) => (await c.rows<{ pi: string }>("SELECT processor_payment_id AS pi FROM payments WHERE authorizer_unique_id = 'stopped' ORDER BY created_at, id"))[n]!.pi;
    await cycle(c);
    stripe.control.fail(await intent(0), 'insufficient_funds');
    await pollProcessors(c.rt);
    c.clock.advance(READ);
    await cycle(c);
    // The reinitiation: the borrower's bank says it stopped the payment.
    stripe.control.fail(await intent(1), 'debit_not_authorized', 'R08');
    await pollProcessors(c.rt);
    expect((await payments(c, 'stopped')).map((p) => `${p.status}:${p.returnCode}`)).toEqual(['returned:R01', 'returned:R08']);
    expect(await view(c, 'stopped')).toMatchObject({ state: 'stopped', reason: 'R08' });
    expect(await notices(c)).toEqual([]);
    expect(await pushes(c)).toEqual([]);
    expect((await view(c, 'stopped')).rights_notice).toBeNull();
  });

  test('a stop (R08) the lender uploads for a payment after a failure for funds owes no notice either', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('reported', { collectable_amount: 1091 }));
    await run(c, 1);
    // Re-sent with an amount the sandbox never resolves (cents 97): the reinitiation stays processing.
    const resent = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('reported', { collectable_amount: 1097 })] } });
    expect(resent.body.results).toMatchObject([{ outcome: 'updated' }]);
    await cycle(c);
    const [, p] = await payments(c, 'reported');
    expect(p).toMatchObject({ status: 'processing', amountCents: 1097 });
    const day = iso(c.clock.now()).slice(0, 10);
    const form = new FormData();
    form.append('file', new Blob([`${HEADER}\nreported,${p!.reference},10.97,returned,${day},,${day},R08\n`], { type: 'text/csv' }), 'results.csv');
    const uploaded = await c.json('POST', '/v1/payment_results/uploads', { form });
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.matched).toBe(1);
    expect((await view(c, 'reported')).state).toBe('stopped');
    await run(c, 2);
    expect(await payments(c, 'reported')).toHaveLength(2);
    expect(await notices(c)).toEqual([]);
    expect(await pushes(c)).toEqual([]);
  });
});

describe('the lender records the notice as sent', () => {
  test('once: a bad body is 400, another lender’s or an unknown borrower 404, none waiting 409; the view shows it due, overdue, then sent', async () => {
    const c = await setup();
    await enroll(c, enrollBorrower('nsf', { collectable_amount: 1091 }), enrollBorrower('paid', { collectable_amount: 5000, account_number: '0007654321' }));
    await run(c, 2);
    const [n] = await notices(c);
    expect(n).toBeDefined();
    expect((await view(c, 'nsf')).rights_notice).toEqual({ id: n!.id, learned_at: iso(n!.learnedAt), due_by: DUE, sent_at: null, channel: null, evidence_ref: null, overdue: false });

    const now = c.clock.now();
    const bad: [unknown, string][] = [
      [{ channel: 'electronic' }, 'sent_at'],
      [{ sent_at: 'yesterday', channel: 'electronic' }, 'sent_at'],
      [{ sent_at: iso(now), channel: 'fax' }, 'channel'],
      [{ sent_at: iso(now) }, 'channel'],
      [{ sent_at: iso(now), channel: 'mail', evidence_ref: 'x'.repeat(256) }, 'evidence_ref'],
      [{ sent_at: iso(now), channel: 'mail', evidence_ref: 'line\nbreak' }, 'evidence_ref'],
      [{ sent_at: iso(now), channel: 'mail', sent_by: 'ops' }, 'sent_by'],
      [{ sent_at: iso(now + 60_000), channel: 'mail' }, 'future'],
      [{ sent_at: iso(n!.learnedAt - 1), channel: 'mail' }, 'learned_at'],
    ];
    for (const [body, named] of bad) {
      const r = await record(c, 'nsf', body);
      expect([body, r.status, r.body.error.code]).toEqual([body, 400, 'BAD_REQUEST']);
      expect([body, JSON.stringify(r.body.error)]).toEqual([body, expect.stringContaining(named)]);
    }
    expect((await notices(c))[0]!.sentAt).toBeNull();

    const body = { sent_at: iso(now - 60_000), channel: 'electronic', evidence_ref: 'msg-88231' };
    const other = c.newLender();
    expect((await record(c, 'nsf', body, other.key)).status).toBe(404);
    expect((await record(c, 'nobody', body)).status).toBe(404);
    const none = await record(c, 'paid', body);
    expect([none.status, none.body.error.code]).toEqual([409, 'CONFLICT']);

    // Overdue once its due day is over, not before.
    c.clock.set(Date.parse(DUE));
    expect((await view(c, 'nsf')).rights_notice.overdue).toBe(false);
    c.clock.set(Date.parse(DUE) + 1);
    expect((await view(c, 'nsf')).rights_notice.overdue).toBe(true);

    const sent = await record(c, 'nsf', body);
    expect(sent.status).toBe(200);
    const shown = { id: n!.id, learned_at: iso(n!.learnedAt), due_by: DUE, sent_at: body.sent_at, channel: 'electronic', evidence_ref: 'msg-88231', overdue: false };
    expect(sent.body).toEqual({ ...shown, authorizer_unique_id: 'nsf', reference: n!.reference });
    expect((await view(c, 'nsf')).rights_notice).toEqual(shown);
    expect((await notices(c))[0]).toMatchObject({ sentAt: Date.parse(body.sent_at), channel: 'electronic', evidenceRef: 'msg-88231' });
    // Once: the notice is sent, and nothing else waits.
    const again = await record(c, 'nsf', { ...body, channel: 'mail' });
    expect([again.status, again.body.error.code]).toEqual([409, 'CONFLICT']);
    expect((await notices(c))[0]).toMatchObject({ channel: 'electronic' });

    // The portal's borrower page shows it.
    const portal = await signedIn(c);
    const page = await portal.get('/portal/payments/borrowers/nsf');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Consumer-rights notice');
    expect(page.text).toContain('sent <time');
    expect(page.text).toContain('msg-88231');
  });
});

describe('the lender’s listing', () => {
  test('open, overdue and sent, by due_by then id, a page at a time; another lender sees none', async () => {
    const c = await setup();
    await enroll(
      c,
      enrollBorrower('a', { collectable_amount: 1091, account_number: '0001234567' }),
      enrollBorrower('b', { collectable_amount: 2091, account_number: '0002234567' }),
      enrollBorrower('c', { collectable_amount: 3091, account_number: '0003234567' }),
    );
    await run(c, 2);
    // A fourth learned on Monday 30 November: due Thursday 3 December.
    c.clock.set(Date.parse('2026-11-30T12:00:00.000Z'));
    await enroll(c, enrollBorrower('d', { collectable_amount: 4091, account_number: '0004234567' }));
    await run(c, 2);
    const stored = await notices(c);
    expect(stored).toHaveLength(4);
    const aidOf = new Map((await c.rows<{ id: string; aid: string }>('SELECT id, authorizer_unique_id AS aid FROM enrollments')).map((r) => [r.id, r.aid]));
    const order = [...stored].sort((x, y) => x.dueBy - y.dueBy || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    const aids = order.map((n) => aidOf.get(n.enrollmentId)!);
    expect(aids[3]).toBe('d');
    expect(order.map((n) => iso(n.dueBy))).toEqual([DUE, DUE, DUE, '2026-12-03T23:59:59.999Z']);
    expect(order.map((n) => n.dueBy)).toEqual(order.map((n) => noticeDueBy(n.learnedAt)));

    expect((await record(c, 'b', { sent_at: iso(c.clock.now()), channel: 'mail' })).status).toBe(200);

    /** Every page of a listing, `limit` at a time: the authorizer ids in order, and how many pages. */
    async function all(query: string, limit: number) {
      const out: string[] = [];
      let token: string | null = null;
      let pages = 0;
      do {
        const r: { status: number; body: { notices: { authorizer_unique_id: string }[]; has_more: boolean; next_page_token: string | null } } = await list(
          c,
          `?limit=${limit}${query}${token ? `&next_page_token=${encodeURIComponent(token)}` : ''}`,
        );
        expect(r.status).toBe(200);
        expect(r.body.notices.length).toBeLessThanOrEqual(limit);
        expect(r.body.has_more).toBe(r.body.next_page_token !== null);
        out.push(...r.body.notices.map((n) => n.authorizer_unique_id));
        token = r.body.next_page_token;
        pages++;
      } while (token);
      return { aids: out, pages };
    }
    expect(await all('', 2)).toEqual({ aids, pages: 2 });
    expect(await all('', 100)).toEqual({ aids, pages: 1 });
    const open = aids.filter((a) => a !== 'b');
    expect(await all('&state=open', 1)).toEqual({ aids: open, pages: 3 });
    expect(await all('&state=sent', 50)).toEqual({ aids: ['b'], pages: 1 });
    // Tuesday's notices are overdue from Wednesday; Thursday's is not yet.
    expect(await all('&state=overdue', 50)).toEqual({ aids: [], pages: 1 });
    c.clock.set(Date.parse('2026-12-02T09:00:00.000Z'));
    expect(await all('&state=overdue', 1)).toEqual({ aids: aids.filter((a) => a === 'a' || a === 'c'), pages: 2 });
    const overdue = (await list(c, '?state=overdue')).body.notices;
    expect(overdue.every((n: { overdue: boolean; sent_at: string | null }) => n.overdue && n.sent_at === null)).toBe(true);
    const everyOne = (await list(c)).body.notices as { authorizer_unique_id: string; overdue: boolean; sent_at: string | null; channel: string | null }[];
    expect(everyOne.map((n) => [n.authorizer_unique_id, n.overdue, n.channel])).toEqual(aids.map((a) => [a, a === 'a' || a === 'c', a === 'b' ? 'mail' : null]));

    // Refusals: a token of another listing, a limit out of range, an unknown state.
    const first = await list(c, '?state=open&limit=1');
    expect((await list(c, `?state=sent&next_page_token=${encodeURIComponent(first.body.next_page_token)}`)).status).toBe(400);
    for (const q of ['?limit=0', '?limit=101', '?state=late']) expect([q, (await list(c, q)).status]).toEqual([q, 400]);
    const other = c.newLender();
    expect((await list(c, '', other.key)).body).toEqual({ notices: [], has_more: false, next_page_token: null });
  });
});
