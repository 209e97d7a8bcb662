// The Stripe adapter through the real `stripe` SDK against a stateful fake Stripe server on 127.0.0.1: the
// whole mapping table, idempotent creates, card declines, disputes, requires_action, key checks, card
// tokenization, transient failures, and a change feed that resumes where it stopped. No test reaches Stripe.
import { afterAll, describe, expect, test } from 'bun:test';
import { startFakeStripe } from '../../fakes/stripe-server';
import { StripeProcessor, disputeReturnCode, stripeFailureToReturnCode } from '../../../src/adapters/processors/stripe';
import { CardRefused, KeyRefused, ProcessorUnavailable, type DebitRequest, type ProcessorChange } from '../../../src/adapters/processors';

const fake = startFakeStripe();
afterAll(() => fake.stop());
const stripe = new StripeProcessor({ apiUrl: fake.url });

let n = 0;
const freshKey = () => `sk_test_account${String(++n).padStart(6, '0')}`;
const ach = (paymentId: string, amountCents = 4200): DebitRequest => ({
  paymentId,
  reference: `DRS-loan-${paymentId}`,
  amountCents,
  rail: 'ach',
  instrument: { kind: 'bank_account', routingNumber: '110000000', accountNumber: '000123456789' },
  borrower: { name: 'Ada Lovelace' },
});
async function allChanges(key: string): Promise<ProcessorChange[]> {
  const out: ProcessorChange[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 20; i++) {
    const page = await stripe.listChanges(key, cursor, { limit: 2 });
    out.push(...page.changes);
    cursor = page.nextCursor;
    if (!page.hasMore) break;
  }
  return out;
}
const statuses = (cs: ProcessorChange[]) => cs.map((c) => (c.returnCode ? `${c.status}:${c.returnCode}` : c.status));

describe('mapping table (events → event statuses)', () => {
  const rows: [string, (pi: string) => void, string[]][] = [
    ['processing then succeeded', (pi) => fake.control.succeed(pi), ['processing', 'settled', 'settled']],
    ['insufficient_funds', (pi) => fake.control.fail(pi, 'insufficient_funds'), ['processing', 'returned:R01', 'returned:R01']],
    ['account_closed', (pi) => fake.control.fail(pi, 'account_closed'), ['processing', 'returned:R02', 'returned:R02']],
    ['bank_account_closed', (pi) => fake.control.fail(pi, 'bank_account_closed'), ['processing', 'returned:R02', 'returned:R02']],
    ['no_account', (pi) => fake.control.fail(pi, 'no_account'), ['processing', 'returned:R03', 'returned:R03']],
    ['account_number_invalid', (pi) => fake.control.fail(pi, 'account_number_invalid'), ['processing', 'returned:R03', 'returned:R03']],
    ['debit_not_authorized', (pi) => fake.control.fail(pi, 'debit_not_authorized'), ['processing', 'returned:R10', 'returned:R10']],
    ['bank_account_frozen', (pi) => fake.control.fail(pi, 'bank_account_frozen'), ['processing', 'returned:R16', 'returned:R16']],
    ['bank_account_restricted', (pi) => fake.control.fail(pi, 'bank_account_restricted'), ['processing', 'returned:R20', 'returned:R20']],
    ['recipient_deceased', (pi) => fake.control.fail(pi, 'recipient_deceased'), ['processing', 'returned:R15', 'returned:R15']],
    ['a raw network code wins', (pi) => fake.control.fail(pi, 'insufficient_funds', 'R09'), ['processing', 'returned:R09', 'returned:R01']],
    ['canceled', (pi) => fake.control.cancel(pi), ['processing', 'voided']],
    ['a dispute after success is a late return', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'fraudulent')), ['processing', 'settled', 'settled', 'late_returned:R10']],
    ['a dispute with a network reason code', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'general', 'R05')), ['processing', 'settled', 'settled', 'late_returned:R05']],
    ['a full refund', (pi) => (fake.control.succeed(pi), fake.control.refund(pi)), ['processing', 'settled', 'settled', 'refunded']],
    ['a partial refund changes nothing', (pi) => (fake.control.succeed(pi), fake.control.refund(pi, 100)), ['processing', 'settled', 'settled']],
  ];
  for (const [name, drive, expected] of rows) {
    test(name, async () => {
      const key = freshKey();
      const created = await stripe.createDebit(key, ach(`pay-${name.replace(/\W/g, '')}`));
      expect(created.status).toBe('processing');
      drive(created.processorPaymentId!);
      const changes = await allChanges(key);
      expect(statuses(changes)).toEqual(expected);
      expect(changes.every((c) => c.processorPaymentId === created.processorPaymentId)).toBe(true);
      expect(changes.every((c) => c.reference === `DRS-loan-pay-${name.replace(/\W/g, '')}`)).toBe(true);
      expect(new Set(changes.map((c) => c.sourceEventId)).size).toBe(changes.length);
    });
  }

  test('failure codes and dispute reasons as a table', () => {
    expect(stripeFailureToReturnCode('insufficient_funds')).toBe('R01');
    expect(stripeFailureToReturnCode('something_new')).toBeNull();
    expect(stripeFailureToReturnCode('insufficient_funds', 'R09')).toBe('R09');
    expect(stripeFailureToReturnCode('insufficient_funds', 'not-an-rcode')).toBe('R01');
    expect(disputeReturnCode({ reason: 'unrecognized' })).toBe('R10');
    expect(disputeReturnCode({ reason: 'insufficient_funds' })).toBe('R01');
    expect(disputeReturnCode({ reason: 'general', network_reason_code: 'R07' })).toBe('R07');
  });
});

describe('createDebit', () => {
  test('every create carries the payment id as Idempotency-Key; a replay returns the first PaymentIntent', async () => {
    const key = freshKey();
    const first = await stripe.createDebit(key, ach('pay-replay'));
    const again = await stripe.createDebit(key, ach('pay-replay'));
    expect(again.processorPaymentId).toBe(first.processorPaymentId);
    expect(fake.control.intents(key)).toHaveLength(1);
    const creates = fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents' && r.params.description === 'DRS-loan-pay-replay');
    expect(creates).toHaveLength(2);
    expect(creates.every((r) => r.idempotencyKey === 'pay-replay')).toBe(true);
    const p = creates[0]!.params as Record<string, any>;
    expect(p.metadata).toEqual({ drs_reference: 'DRS-loan-pay-replay', drs_payment_id: 'pay-replay' });
    expect(p.allowed_payment_method_types).toEqual(['us_bank_account']);
    expect(p.mandate_data.customer_acceptance.type).toBe('offline');
    expect(p.payment_method_data.us_bank_account).toMatchObject({ routing_number: '110000000', account_number: '000123456789' });
  });

  test('a transient 500 is retried by the SDK with the same key: one PaymentIntent', async () => {
    const key = freshKey();
    fake.control.failNext(1, 500);
    const r = await stripe.createDebit(key, ach('pay-transient'));
    expect(r.status).toBe('processing');
    expect(fake.control.intents(key)).toHaveLength(1);
    expect(fake.requests.filter((x) => x.idempotencyKey === 'pay-transient').length).toBeGreaterThanOrEqual(2);
  });

  test('Stripe down (5xx on every try): ProcessorUnavailable, to be retried with the same key', async () => {
    const key = freshKey();
    fake.control.failNext(10, 503);
    await expect(stripe.createDebit(key, ach('pay-down'))).rejects.toBeInstanceOf(ProcessorUnavailable);
    await Bun.sleep(0);
    fake.control.failNext(0);
  });

  test('requires_action at creation is not_attempted, with the reason', async () => {
    const key = freshKey();
    fake.control.requireActionNext();
    const r = await stripe.createDebit(key, ach('pay-verify'));
    expect(r).toMatchObject({ status: 'not_attempted', message: expect.stringContaining('verification') });
  });

  test('cards: settled at once; a 402 decline for funds is returned R01, any other decline invalid', async () => {
    const key = freshKey();
    const card = async (number: string, paymentId: string) => {
      const t = await stripe.tokenizeCard(key, { number, cvv: '123', expMonth: 12, expYear: new Date().getUTCFullYear() + 2 });
      return stripe.createDebit(key, { ...ach(paymentId, 5000), rail: 'card', instrument: { kind: 'token', token: t.token } });
    };
    expect(await card('4242424242424242', 'card-ok')).toMatchObject({ status: 'settled' });
    expect(await card('4000000000009995', 'card-funds')).toMatchObject({ status: 'returned', returnCode: 'R01' });
    const generic = await card('4000000000000002', 'card-generic');
    expect(generic).toMatchObject({ status: 'invalid', returnCode: null });
    expect(generic.processorPaymentId).toMatch(/^pi_/);
    const last = fake.requests.filter((r) => r.idempotencyKey === 'card-ok')[0]!.params as Record<string, unknown>;
    expect(last).toMatchObject({ off_session: 'true', allowed_payment_method_types: ['card'] });
  });
});

describe('keys and cards', () => {
  test('verifyKey: ok, refused, unreachable', async () => {
    await stripe.verifyKey(freshKey());
    await expect(stripe.verifyKey('sk_test_refused_account')).rejects.toBeInstanceOf(KeyRefused);
    const nowhere = new StripeProcessor({ apiUrl: 'http://127.0.0.1:9', timeoutMs: 2000 });
    await expect(nowhere.verifyKey(freshKey())).rejects.toBeInstanceOf(ProcessorUnavailable);
  });

  test('tokenizeCard: a pm_ token with last four and brand; a bad number is refused without echoing it', async () => {
    const t = await stripe.tokenizeCard(freshKey(), { number: '4242424242424242', cvv: null, expMonth: 4, expYear: new Date().getUTCFullYear() + 1 });
    expect(t).toMatchObject({ last4: '4242', brand: 'visa', funding: 'debit' });
    expect(t.token).toMatch(/^pm_/);
    const bad = stripe.tokenizeCard(freshKey(), { number: '4242424242424241', cvv: null, expMonth: 4, expYear: new Date().getUTCFullYear() + 1 });
    await expect(bad).rejects.toBeInstanceOf(CardRefused);
    try {
      await bad;
    } catch (e) {
      expect((e as Error).message).not.toContain('4242424242424241');
    }
  });
});

describe('the change feed', () => {
  test('a cursor resumes where it stopped: no repeats, no gaps, oldest first', async () => {
    const key = freshKey();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await stripe.createDebit(key, ach(`feed-${i}`))).processorPaymentId!);
    const first = await stripe.listChanges(key, null, { limit: 2 });
    expect(first.changes.map((c) => c.processorPaymentId)).toEqual(ids.slice(0, 2));
    expect(first.hasMore).toBe(true);
    // New events arrive while the reader is between pages.
    fake.control.succeed(ids[0]!);
    const rest: ProcessorChange[] = [];
    let cursor = first.nextCursor;
    for (let i = 0; i < 5; i++) {
      const page = await stripe.listChanges(key, cursor, { limit: 2 });
      rest.push(...page.changes);
      cursor = page.nextCursor;
      if (!page.hasMore) break;
    }
    expect(rest.map((c) => `${c.processorPaymentId}:${c.status}`)).toEqual([`${ids[2]}:processing`, `${ids[0]}:settled`, `${ids[0]}:settled`]);
    // Nothing new: the same cursor comes back with no changes.
    const idle = await stripe.listChanges(key, cursor);
    expect(idle).toEqual({ changes: [], nextCursor: cursor, hasMore: false });
  });
});

// Run the same checks against Stripe's test mode when a test key is given; CI never sets it.
if (process.env.STRIPE_TEST_SECRET_KEY) {
  describe('Stripe test mode (opt-in contract check)', () => {
    const live = new StripeProcessor({});
    const key = process.env.STRIPE_TEST_SECRET_KEY!;
    test('the key verifies, a test card tokenizes and is charged, the feed lists it', async () => {
      await live.verifyKey(key);
      const t = await live.tokenizeCard(key, { number: '4242424242424242', cvv: '123', expMonth: 12, expYear: new Date().getUTCFullYear() + 2 });
      const r = await live.createDebit(key, { ...ach(`contract-${Date.now()}`, 1000), rail: 'card', instrument: { kind: 'token', token: t.token } });
      expect(r.status).toBe('settled');
      const page = await live.listChanges(key, null, { limit: 100 });
      expect(page.changes.length).toBeGreaterThan(0);
    });
  });
}
