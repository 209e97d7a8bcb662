// The Stripe adapter through the real `stripe` SDK against the fake Stripe server on 127.0.0.1: the whole
// mapping table, idempotent creates, declines, disputes, requires_action, key checks, card tokenization,
// transient failures and a change feed that resumes where it stopped. The contract flows at the top also run
// against Stripe's test mode when STRIPE_TEST_SECRET_KEY is set; nothing else here leaves the machine.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type Stripe from 'stripe';
import { startFakeStripe } from '../../fakes/stripe-server';
import { STRIPE_API_VERSION, StripeProcessor, disputeReturnCode, eventToChange, stripeFailureToReturnCode } from '../../../src/adapters/processors/stripe';
import { CardRefused, KeyRefused, ProcessorUnavailable, type DebitRequest, type ProcessorChange } from '../../../src/adapters/processors';

const fake = await startFakeStripe();
afterAll(() => fake.stop());
const logs: { obj: object; msg: string }[] = [];
const logger = { warn: (obj: object, msg: string) => void logs.push({ obj, msg }) };
const stripe = new StripeProcessor({ apiUrl: fake.url, logger });

const ROUTING = '110000000';
const ACCOUNT = '000123456789';
const run = Date.now().toString(36);
let n = 0;
const freshKey = () => `sk_test_acct${run}${String(++n).padStart(4, '0')}`;
const nextYear = new Date().getUTCFullYear() + 1;
const debit = (paymentId: string, over: Partial<DebitRequest> = {}): DebitRequest => ({
  paymentId,
  reference: `DRS-loan7-${paymentId}`,
  amountCents: 4200,
  rail: 'ach',
  instrument: { kind: 'bank_account', routingNumber: ROUTING, accountNumber: ACCOUNT },
  borrower: { name: 'Ada Lovelace' },
  ...over,
});
const card = (paymentId: string, token: string) => debit(paymentId, { rail: 'card', instrument: { kind: 'token', token }, amountCents: 5000 });
const statuses = (cs: ProcessorChange[]) => cs.map((c) => (c.returnCode ? `${c.status}:${c.returnCode}` : c.status));

/** Every change after `cursor`, page by page. */
async function readAll(p: StripeProcessor, key: string, cursor: string | null, limit = 2): Promise<{ changes: ProcessorChange[]; cursor: string | null }> {
  const changes: ProcessorChange[] = [];
  for (let i = 0; i < 500; i++) {
    const page = await p.listChanges(key, cursor, { limit });
    changes.push(...page.changes);
    cursor = page.nextCursor;
    if (!page.hasMore) break;
  }
  return { changes, cursor };
}

// The flows a real Stripe account answers the same way: Stripe's own test tokens, no control surface.
function contractFlows(label: string, target: () => { processor: StripeProcessor; key: string; patienceMs: number }) {
  describe(label, () => {
    const ids = (s: string) => `${label.split(' ')[0]}-${run}-${s}`;
    let start: string | null = null;
    const made: Record<string, string> = {};
    beforeAll(async () => {
      const { processor, key } = target();
      start = (await readAll(processor, key, null, 100)).cursor;
    });

    test('a key verifies; a refused key is KeyRefused', async () => {
      const { processor, key } = target();
      await processor.verifyKey(key);
      await expect(processor.verifyKey('sk_test_refused_0000000000000000')).rejects.toBeInstanceOf(KeyRefused);
    });

    test('cards: settled at once; a decline for funds is returned R01, any other decline invalid', async () => {
      const { processor, key } = target();
      const good = await processor.createDebit(key, card(ids('card-ok'), 'pm_card_visa'));
      expect(good).toMatchObject({ status: 'settled', returnCode: null });
      made.card = good.processorPaymentId!;
      const funds = await processor.createDebit(key, card(ids('card-funds'), 'pm_card_chargeDeclinedInsufficientFunds'));
      expect(funds).toMatchObject({ status: 'returned', returnCode: 'R01' });
      expect(funds.processorPaymentId).toMatch(/^pi_/);
      expect(await processor.createDebit(key, card(ids('card-declined'), 'pm_card_chargeDeclined'))).toMatchObject({ status: 'invalid', returnCode: null });
      // A decline that must never be retried carries its code.
      expect(await processor.createDebit(key, card(ids('card-stolen'), 'pm_card_chargeDeclinedStolenCard'))).toMatchObject({
        status: 'invalid',
        returnCode: null,
        declineCode: 'stolen_card',
      });
    });

    test('an ACH debit on a bank account token is processing; the same payment id returns the same PaymentIntent', async () => {
      const { processor, key } = target();
      const req = debit(ids('ach'), { instrument: { kind: 'token', token: 'pm_usBankAccount_success' } });
      const first = await processor.createDebit(key, req);
      expect(first).toMatchObject({ status: 'processing', returnCode: null, message: null });
      expect((await processor.createDebit(key, req)).processorPaymentId).toBe(first.processorPaymentId);
      made.ach = first.processorPaymentId!;
    });

    test('a raw card tokenizes to a pm_ token, or is refused without echoing the number', async () => {
      const { processor, key } = target();
      try {
        const t = await processor.tokenizeCard(key, { number: '4242424242424242', cvv: '123', expMonth: 12, expYear: nextYear });
        expect(t).toMatchObject({ last4: '4242', brand: 'visa', expMonth: 12, expYear: nextYear });
        expect(t.token).toMatch(/^pm_/);
      } catch (e) {
        // Stripe refuses raw card numbers on accounts without raw card data access.
        expect(e).toBeInstanceOf(CardRefused);
        expect((e as Error).message).not.toContain('4242424242424242');
      }
    });

    test('the feed from a cursor lists the new payments, oldest first, each event once', async () => {
      const { processor, key, patienceMs } = target();
      const until = Date.now() + patienceMs;
      let seen: ProcessorChange[] = [];
      for (;;) {
        seen = (await readAll(processor, key, start, 100)).changes;
        const has = (pi: string, s: string) => seen.some((c) => c.processorPaymentId === pi && c.status === s);
        if ((has(made.card!, 'settled') && has(made.ach!, 'processing')) || Date.now() > until) break;
        await Bun.sleep(1000);
      }
      const card = seen.find((c) => c.processorPaymentId === made.card && c.status === 'settled');
      expect(card).toMatchObject({ reference: `DRS-loan7-${ids('card-ok')}`, amountCents: 5000, returnCode: null });
      expect(seen.some((c) => c.processorPaymentId === made.ach && c.status === 'processing')).toBe(true);
      expect(new Set(seen.map((c) => c.sourceEventId)).size).toBe(seen.length);
      expect(seen.map((c) => c.occurredAt)).toEqual([...seen.map((c) => c.occurredAt)].sort((a, b) => a - b));
    });
  });
}

const contractKey = freshKey();
contractFlows('fake Stripe: contract flows', () => ({ processor: stripe, key: contractKey, patienceMs: 0 }));

// Stripe's test mode, only when a test key is given (CI never sets it): the same flows, over the internet.
if (process.env.STRIPE_TEST_SECRET_KEY) {
  const live = new StripeProcessor({ logger });
  contractFlows('Stripe test mode: contract flows', () => ({ processor: live, key: process.env.STRIPE_TEST_SECRET_KEY!, patienceMs: 30_000 }));
}

describe('the mapping table: create, drive the outcome, read the feed', () => {
  const rows: [string, (pi: string) => void, string[]][] = [
    ['settles', (pi) => fake.control.succeed(pi), ['processing', 'settled', 'settled']],
    ['insufficient_funds', (pi) => fake.control.fail(pi, 'insufficient_funds'), ['processing', 'returned:R01', 'returned:R01']],
    ['account_closed', (pi) => fake.control.fail(pi, 'account_closed'), ['processing', 'returned:R02', 'returned:R02']],
    ['bank_account_closed', (pi) => fake.control.fail(pi, 'bank_account_closed'), ['processing', 'returned:R02', 'returned:R02']],
    ['no_account', (pi) => fake.control.fail(pi, 'no_account'), ['processing', 'returned:R03', 'returned:R03']],
    ['bank_account_invalid_details', (pi) => fake.control.fail(pi, 'bank_account_invalid_details'), ['processing', 'returned:R03', 'returned:R03']],
    ['account_number_invalid', (pi) => fake.control.fail(pi, 'account_number_invalid'), ['processing', 'returned:R03', 'returned:R03']],
    ['debit_not_authorized', (pi) => fake.control.fail(pi, 'debit_not_authorized'), ['processing', 'returned:R10', 'returned:R10']],
    ['bank_account_frozen', (pi) => fake.control.fail(pi, 'bank_account_frozen'), ['processing', 'returned:R16', 'returned:R16']],
    ['bank_account_restricted', (pi) => fake.control.fail(pi, 'bank_account_restricted'), ['processing', 'returned:R20', 'returned:R20']],
    ['recipient_deceased', (pi) => fake.control.fail(pi, 'recipient_deceased'), ['processing', 'returned:R15', 'returned:R15']],
    ['a raw network R-code wins', (pi) => fake.control.fail(pi, 'insufficient_funds', 'R09'), ['processing', 'returned:R09', 'returned:R09']],
    ['an unknown failure code is a return without a code', (pi) => fake.control.fail(pi, 'brand_new_code'), ['processing', 'returned', 'returned']],
    ['canceled', (pi) => fake.control.cancel(pi), ['processing', 'voided']],
    ['a dispute after success is a late return (R10)', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'fraudulent')), ['processing', 'settled', 'settled', 'late_returned:R10']],
    ['a dispute with a network R-code', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'general', 'R05')), ['processing', 'settled', 'settled', 'late_returned:R05']],
    ['a late funds failure (dispute insufficient_funds)', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'insufficient_funds')), ['processing', 'settled', 'settled', 'late_returned:R01']],
    ['a dispute naming only its charge', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'debit_not_authorized', null, true)), ['processing', 'settled', 'settled', 'late_returned:R10']],
    ['a full refund', (pi) => (fake.control.succeed(pi), fake.control.refund(pi)), ['processing', 'settled', 'settled', 'refunded']],
    ['a dispute won: the funds are back, settled again', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'fraudulent'), fake.control.closeDispute(pi, 'won')), ['processing', 'settled', 'settled', 'late_returned:R10', 'settled']],
    ['a dispute lost: the return stands', (pi) => (fake.control.succeed(pi), fake.control.dispute(pi, 'fraudulent'), fake.control.closeDispute(pi, 'lost')), ['processing', 'settled', 'settled', 'late_returned:R10']],
    ['a refund that fails: the funds stay, settled again', (pi) => (fake.control.succeed(pi), fake.control.refund(pi), fake.control.failRefund(pi)), ['processing', 'settled', 'settled', 'refunded', 'settled']],
    ['a partial refund changes nothing', (pi) => (fake.control.succeed(pi), fake.control.refund(pi, 100)), ['processing', 'settled', 'settled']],
  ];
  for (const [name, drive, expected] of rows) {
    test(name, async () => {
      const key = freshKey();
      const paymentId = `pay-${name.replace(/\W+/g, '-')}`;
      const created = await stripe.createDebit(key, debit(paymentId));
      expect(created).toMatchObject({ status: 'processing', returnCode: null });
      drive(created.processorPaymentId!);
      const { changes } = await readAll(stripe, key, null);
      expect(statuses(changes)).toEqual(expected);
      for (const c of changes) expect(c).toMatchObject({ processorPaymentId: created.processorPaymentId, reference: `DRS-loan7-${paymentId}`, amountCents: 4200 });
      expect(new Set(changes.map((c) => c.sourceEventId)).size).toBe(changes.length);
    });
  }

  test('failure codes and dispute reasons, as a table', () => {
    expect(stripeFailureToReturnCode('insufficient_funds')).toBe('R01');
    expect(stripeFailureToReturnCode('something_new')).toBeNull();
    expect(stripeFailureToReturnCode('insufficient_funds', 'r9')).toBe('R09');
    expect(stripeFailureToReturnCode('insufficient_funds', '51')).toBe('R01');
    expect(disputeReturnCode({ reason: 'unrecognized' })).toBe('R10');
    expect(disputeReturnCode({ reason: 'incorrect_account_details' })).toBe('R03');
    expect(disputeReturnCode({ reason: 'general', network_reason_code: 'R07' })).toBe('R07');
    expect(disputeReturnCode({ reason: 'fraudulent', payment_method_details: { type: 'card', card: { brand: 'visa', case_type: 'chargeback', network: 'visa', network_reason_code: '10.4' } } })).toBe('R10');
  });

  test('an event of a type without a mapping stays processing and is logged', () => {
    const before = logs.length;
    const e = { id: 'evt_x', object: 'event', created: 1_800_000_000, type: 'payment_intent.requires_action', data: { object: { id: 'pi_x', amount: 700, metadata: { drs_reference: 'DRS-a-b' }, description: null } } } as unknown as Stripe.Event;
    expect(eventToChange(e, logger)).toMatchObject({ processorPaymentId: 'pi_x', reference: 'DRS-a-b', status: 'processing', amountCents: 700, occurredAt: 1_800_000_000_000 });
    expect(logs.length).toBe(before + 1);
  });
});

describe('createDebit', () => {
  test('a replayed payment id returns the first PaymentIntent: the same Idempotency-Key twice, one PaymentIntent', async () => {
    const key = freshKey();
    const first = await stripe.createDebit(key, debit('pay-replay'));
    const again = await stripe.createDebit(key, debit('pay-replay'));
    expect(again).toEqual(first);
    expect(fake.control.paymentIntents(key)).toHaveLength(1);
    const creates = fake.control.requests.filter((r) => r.key === key && r.path === '/v1/payment_intents');
    expect(creates.map((r) => [r.idempotencyKey, r.replayed])).toEqual([['pay-replay', false], ['pay-replay', true]]);
    expect(creates[0]!.stripeVersion).toBe(STRIPE_API_VERSION);
    expect(creates[0]!.params).toEqual({
      amount: '4200',
      currency: 'usd',
      confirm: 'true',
      description: 'DRS-loan7-pay-replay',
      metadata: { drs_reference: 'DRS-loan7-pay-replay', drs_payment_id: 'pay-replay' },
      payment_method_data: { type: 'us_bank_account', us_bank_account: { routing_number: ROUTING, account_number: ACCOUNT, account_holder_type: 'individual' }, billing_details: { name: 'Ada Lovelace' } },
      allowed_payment_method_types: ['us_bank_account'],
      mandate_data: { customer_acceptance: { type: 'offline' } },
    });
  });

  test('every create carries its payment id as the Idempotency-Key', async () => {
    const key = freshKey();
    await stripe.createDebit(key, debit('pay-raw'));
    await stripe.createDebit(key, debit('pay-token', { instrument: { kind: 'token', token: 'pm_usBankAccount_success' } }));
    await stripe.createDebit(key, card('pay-card', 'pm_card_visa'));
    await stripe.createDebit(key, card('pay-card-declined', 'pm_card_chargeDeclined'));
    const creates = fake.control.requests.filter((r) => r.key === key && r.method === 'POST');
    expect(creates).toHaveLength(4);
    for (const r of creates) expect(r.idempotencyKey).toBe((r.params.metadata as Record<string, string>).drs_payment_id!);
    expect(creates[2]!.params).toMatchObject({ payment_method: 'pm_card_visa', allowed_payment_method_types: ['card'], off_session: 'true', confirm: 'true' });
  });

  test('the same payment id with other parameters is refused by Stripe: invalid, and nothing new is created', async () => {
    const key = freshKey();
    await stripe.createDebit(key, debit('pay-changed'));
    const r = await stripe.createDebit(key, debit('pay-changed', { amountCents: 9900 }));
    expect(r).toMatchObject({ status: 'invalid', processorPaymentId: null, message: expect.stringContaining('same parameters') });
    expect(fake.control.paymentIntents(key)).toHaveLength(1);
  });

  test('a transient 500 is not retried by the SDK: the service retries, with the same key, and one PaymentIntent is made', async () => {
    const key = freshKey();
    fake.control.failNext(1, 500);
    // The service's dispatch is the one retry policy (it knows how old the key is): the SDK sends once.
    await expect(stripe.createDebit(key, debit('pay-transient'))).rejects.toBeInstanceOf(ProcessorUnavailable);
    expect(fake.control.requests.filter((r) => r.key === key).map((r) => [r.idempotencyKey, r.status])).toEqual([['pay-transient', 500]]);
    expect(await stripe.createDebit(key, debit('pay-transient'))).toMatchObject({ status: 'processing' });
    expect(fake.control.paymentIntents(key)).toHaveLength(1);
    expect(fake.control.requests.filter((r) => r.key === key).map((r) => [r.idempotencyKey, r.status])).toEqual([['pay-transient', 500], ['pay-transient', 200]]);
  });

  test('5xx, 429, a timeout: ProcessorUnavailable; the same payment id later makes one PaymentIntent', async () => {
    const key = freshKey();
    fake.control.failNext(1, 503);
    await expect(stripe.createDebit(key, debit('pay-down'))).rejects.toBeInstanceOf(ProcessorUnavailable);
    fake.control.failNext(1, 429);
    await expect(stripe.createDebit(key, debit('pay-down'))).rejects.toBeInstanceOf(ProcessorUnavailable);
    const impatient = new StripeProcessor({ apiUrl: fake.url, timeoutMs: 150 });
    fake.control.stallNext(1);
    await expect(impatient.createDebit(key, debit('pay-down'))).rejects.toBeInstanceOf(ProcessorUnavailable);
    expect(await stripe.createDebit(key, debit('pay-down'))).toMatchObject({ status: 'processing' });
    expect(fake.control.paymentIntents(key)).toHaveLength(1);
  });

  test('requires_action at creation is not_attempted, with the reason and no account data', async () => {
    const key = freshKey();
    fake.control.requireAction(true);
    const r = await stripe.createDebit(key, debit('pay-verify'));
    // Read before any asymmetric matcher: Bun's toMatchObject writes the matcher into the received object.
    expect(r.message).toContain('verification required');
    expect(r.message).not.toContain(ACCOUNT);
    expect(r).toMatchObject({ status: 'not_attempted', processorPaymentId: expect.stringMatching(/^pi_/) });
    expect((await stripe.createDebit(key, debit('pay-verify-2'))).status).toBe('processing');
  });

  test('a refused request is invalid with Stripe message, numbers masked; a card debit needs a token', async () => {
    const key = freshKey();
    const r = await stripe.createDebit(key, debit('pay-bad-routing', { instrument: { kind: 'bank_account', routingNumber: '123456789', accountNumber: ACCOUNT } }));
    expect(r.message).toContain('routing number');
    expect(r.message).not.toContain('123456789');
    expect(r).toMatchObject({ status: 'invalid', processorPaymentId: null });
    expect(await stripe.createDebit(key, debit('pay-card-no-token', { rail: 'card' }))).toMatchObject({ status: 'invalid' });
    await expect(stripe.createDebit('sk_test_refused_key', debit('pay-refused'))).rejects.toBeInstanceOf(KeyRefused);
  });
});

describe('keys and cards', () => {
  test('verifyKey: a refused or under-privileged key is KeyRefused; Stripe down or unreachable is ProcessorUnavailable', async () => {
    await expect(stripe.verifyKey('rk_test_restricted_key')).rejects.toBeInstanceOf(KeyRefused);
    fake.control.failNext(1, 500);
    await expect(stripe.verifyKey(freshKey())).rejects.toBeInstanceOf(ProcessorUnavailable);
    const gone = await startFakeStripe();
    gone.stop();
    await expect(new StripeProcessor({ apiUrl: gone.url, timeoutMs: 1000 }).verifyKey(freshKey())).rejects.toBeInstanceOf(ProcessorUnavailable);
  });

  test('tokenizeCard: last four, brand, funding and expiry; a bad or expired card is CardRefused without the number', async () => {
    const key = freshKey();
    const t = await stripe.tokenizeCard(key, { number: '4000056655665556', cvv: null, expMonth: 4, expYear: nextYear });
    expect(t).toEqual({ token: expect.stringMatching(/^pm_/), last4: '5556', brand: 'visa', funding: 'debit', expMonth: 4, expYear: nextYear });
    const [made, customer, attach] = fake.control.requests.slice(-3);
    expect(made).toMatchObject({ method: 'POST', path: '/v1/payment_methods' });
    expect(made!.params).toEqual({ type: 'card', card: { number: '4000056655665556', exp_month: '4', exp_year: String(nextYear) } });
    // Its own Customer, so that it can be charged more than once; nothing personal on the Customer.
    expect(customer).toMatchObject({ method: 'POST', path: '/v1/customers', params: { description: 'Borrower card (debit recovery)' } });
    expect(attach).toMatchObject({ method: 'POST', path: `/v1/payment_methods/${t.token}/attach` });
    expect(attach!.params.customer).toMatch(/^cus_/);
    for (const bad of [{ number: '4242424242424241', expYear: nextYear }, { number: '4242424242424242', expYear: 2020 }]) {
      const e = await stripe.tokenizeCard(key, { ...bad, cvv: '123', expMonth: 1 }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(CardRefused);
      expect((e as Error).message).not.toContain(bad.number);
    }
    fake.control.failNext(1, 502);
    await expect(stripe.tokenizeCard(key, { number: '4242424242424242', cvv: null, expMonth: 1, expYear: nextYear })).rejects.toBeInstanceOf(ProcessorUnavailable);
  });
});

describe('a card charged more than once', () => {
  test('a tokenized card is charged again (a retry after a decline for funds) with its Customer; a card on no Customer only once', async () => {
    const key = freshKey();
    const t = await stripe.tokenizeCard(key, { number: '4242424242424242', cvv: '123', expMonth: 12, expYear: nextYear });
    const first = await stripe.createDebit(key, card('pay-twice-1', t.token));
    const second = await stripe.createDebit(key, card('pay-twice-2', t.token));
    expect([first.status, second.status]).toEqual(['settled', 'settled']);
    const creates = fake.control.requests.filter((r) => r.path === '/v1/payment_intents' && r.method === 'POST').slice(-2);
    expect(creates.map((r) => r.params.customer)).toEqual([expect.stringMatching(/^cus_/), expect.stringMatching(/^cus_/)]);

    // What Stripe does with a PaymentMethod on no Customer, which is why cards are attached: the second use is refused.
    const res = await fetch(`${fake.url}/v1/payment_methods`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: `type=card&card[number]=4242424242424242&card[exp_month]=12&card[exp_year]=${nextYear}`,
    });
    const bare = ((await res.json()) as { id: string }).id;
    expect((await stripe.createDebit(key, card('pay-bare-1', bare))).status).toBe('settled');
    const again = await stripe.createDebit(key, card('pay-bare-2', bare));
    expect(again).toMatchObject({ status: 'invalid', processorPaymentId: null });
    expect(again.message).toContain('may not be used again');
  });
});

describe('the two notifications of one failure', () => {
  const cases: [string, (pi: string) => void, string][] = [
    // The PaymentIntent's error enum has no bank_account_closed: only the charge names it.
    ['a code only the charge carries', (pi) => fake.control.fail(pi, 'bank_account_closed', null, { intentCode: 'payment_method_provider_decline' }), 'R02'],
    // The raw R-code Stripe documents for ACH, on the blocked PaymentMethod.
    ['the blocked PaymentMethod’s network code', (pi) => fake.control.fail(pi, 'bank_account_closed', null, { blockedCode: 'R08' }), 'R08'],
    ['insufficient funds named by the charge only', (pi) => fake.control.fail(pi, 'insufficient_funds', null, { intentCode: 'payment_method_provider_decline' }), 'R01'],
  ];
  for (const [name, drive, code] of cases) {
    test(`${name}: both give ${code}, whichever is read first`, async () => {
      const key = freshKey();
      const created = await stripe.createDebit(key, debit(`two-${name.replace(/\W+/g, '-')}`));
      drive(created.processorPaymentId!);
      // One change per page, so each notification is read (and mapped) on its own.
      const one = await readAll(stripe, key, null, 1);
      const failures = one.changes.filter((c) => c.status !== 'processing');
      expect(failures.map((c) => `${c.status}:${c.returnCode}`)).toEqual([`returned:${code}`, `returned:${code}`]);
    });
  }
});

describe('the change feed', () => {
  test('a cursor resumes where it stopped: pages, no repeats, no gaps, new events between pages', async () => {
    const key = freshKey();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await stripe.createDebit(key, debit(`feed-${i}`))).processorPaymentId!);
    // A new key's first read is the oldest event kept; the reads after it go forward from there.
    const first = await stripe.listChanges(key, null, { limit: 2 });
    expect(first.changes.map((c) => `${c.processorPaymentId}:${c.status}`)).toEqual([`${ids[0]}:processing`]);
    expect(first.hasMore).toBe(true);
    const second = await stripe.listChanges(key, first.nextCursor, { limit: 1 });
    expect(second.changes.map((c) => `${c.processorPaymentId}:${c.status}`)).toEqual([`${ids[1]}:processing`]);
    expect(second.hasMore).toBe(true);
    fake.control.succeed(ids[0]!);
    const rest = await readAll(stripe, key, second.nextCursor);
    expect(rest.changes.map((c) => `${c.processorPaymentId}:${c.status}`)).toEqual([`${ids[2]}:processing`, `${ids[0]}:settled`, `${ids[0]}:settled`]);
    // Nothing new: the same cursor back, no changes.
    expect(await stripe.listChanges(key, rest.cursor)).toEqual({ changes: [], nextCursor: rest.cursor, hasMore: false });
    expect(await stripe.listChanges(freshKey(), null)).toEqual({ changes: [], nextCursor: null, hasMore: false });
  });

  test('from the start, more than one Stripe page: oldest first, every event once, one page held at a time', async () => {
    const key = freshKey();
    const ids: string[] = [];
    for (let i = 0; i < 55; i++) ids.push((await stripe.createDebit(key, debit(`bulk-${i}`))).processorPaymentId!);
    for (const id of ids) fake.control.succeed(id);
    const first = await stripe.listChanges(key, null);
    expect(first.changes).toHaveLength(1);
    expect(first.hasMore).toBe(true);
    const rest = await readAll(stripe, key, first.nextCursor, 100);
    const all = [...first.changes, ...rest.changes];
    expect(all).toHaveLength(55 * 3);
    expect(all.slice(0, 55).map((c) => c.processorPaymentId)).toEqual(ids);
    expect(all.slice(55).every((c) => c.status === 'settled')).toBe(true);
    expect(new Set(all.map((c) => c.sourceEventId)).size).toBe(all.length);
  });

  test('a cursor Stripe no longer keeps (30 days): the cursor is lost, the feed goes on from the newest event, logged', async () => {
    const key = freshKey();
    await stripe.createDebit(key, debit('expire-a'));
    const page = await stripe.listChanges(key, null);
    const b = await stripe.createDebit(key, debit('expire-b'));
    fake.control.expireEvents(key, fake.control.events(key).findIndex((e) => e.id === page.nextCursor) + 1);
    const before = logs.length;
    const next = await stripe.listChanges(key, page.nextCursor);
    const newest = fake.control.events(key).at(-1)!;
    expect(next).toEqual({ changes: [], nextCursor: newest.id, hasMore: false, cursorLost: true });
    expect(logs.slice(before).map((l) => l.msg)).toEqual([expect.stringContaining('cursor')]);
    // What the lost changes said is found by listing the PaymentIntents (reconciliation).
    const listed = await stripe.listPayments(key, { createdFrom: 0, createdTo: Date.now() + 60_000, page: null });
    expect(listed.payments.map((p) => p.processorPaymentId)).toContain(b.processorPaymentId!);
  });

  test('a refused key is KeyRefused; Stripe down is ProcessorUnavailable', async () => {
    await expect(stripe.listChanges('sk_test_refused_feed', null)).rejects.toBeInstanceOf(KeyRefused);
    fake.control.failNext(1, 500);
    await expect(stripe.listChanges(freshKey(), 'evt_1')).rejects.toBeInstanceOf(ProcessorUnavailable);
  });
});

test('nothing the adapter logged names an account, routing or card number', () => {
  expect(logs.length).toBeGreaterThan(0);
  const text = JSON.stringify(logs);
  for (const secret of [ACCOUNT, ROUTING, '4242424242424242', '4000056655665556']) expect(text).not.toContain(secret);
});
