// A processor account's feed can carry more than one lender's payments (a key registered by two lenders, an
// account shared by mistake). A payment the service made is matched to the lender that made it, and never to
// another lender's borrower of the same identifier.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../../src/modules/collection/dispatch';
import { matchChange } from '../../../src/modules/collection/poll';
import type { ProcessorChange } from '../../../src/adapters/processors';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

describe('matching never crosses lenders', () => {
  test("lender A's payment DRS-shared-id-… is A's, never B's borrower shared-id", async () => {
    const c = createTestContext({ MONITOR_READ_INTERVAL_MS: '3600000' });
    contexts.push(c);
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_tenancy_a_000000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('shared-id', { collectable_amount: 1000 })] } })).status).toBe(207);
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await dispatchPayments(c.rt);
    const a = c.sql.query("SELECT id, lender_id AS lenderId, connection_id AS conn, reference FROM payments WHERE authorizer_unique_id = 'shared-id'").get() as {
      id: string;
      lenderId: string;
      conn: string;
      reference: string;
    };
    expect(a.reference).toBe(`DRS-shared-id-${a.id}`);

    const b = c.newLender('lender-b');
    expect((await c.json('POST', '/v1/payment_enrollments', { key: b.key, body: { borrowers: [enrollBorrower('shared-id', { collectable_amount: 1000 })] } })).status).toBe(207);
    const change: ProcessorChange = {
      sourceEventId: 'evt-1',
      processorPaymentId: 'sbxpay_1',
      reference: a.reference,
      status: 'settled',
      amountCents: 1000,
      returnCode: null,
      occurredAt: c.clock.now(),
      message: null,
    };
    // Read through B's connection to the same account: unmatched for B.
    expect(await matchChange({ deps: c.rt }, b.id, 'connection-of-b', change, 0)).toBeNull();
    // Read through A's: A's own payment.
    expect(await matchChange({ deps: c.rt }, a.lenderId, a.conn, change, 0)).toMatchObject({ paymentId: a.id, authorizerUniqueId: 'shared-id' });
    // A DRS- reference of no payment the service made still names B's borrower (a payment B made at the processor).
    const own = await matchChange({ deps: c.rt }, b.id, 'connection-of-b', { ...change, reference: 'DRS-shared-id-INV-7' }, 0);
    expect(own).toMatchObject({ authorizerUniqueId: 'shared-id', paymentId: null });
    // Not through a key whose account is unknown or another lender's, nor for a payment made before B's binding.
    expect(await matchChange({ deps: c.rt }, b.id, 'connection-of-b', { ...change, reference: 'DRS-shared-id-INV-7' }, null)).toBeNull();
    expect(await matchChange({ deps: c.rt }, b.id, 'connection-of-b', { ...change, reference: 'DRS-shared-id-INV-7', paymentCreatedAt: 5 }, 6)).toBeNull();
    // A's own payment matches whatever the binding says: it is A's by its id.
    expect(await matchChange({ deps: c.rt }, a.lenderId, a.conn, change, null)).toMatchObject({ paymentId: a.id });
  });
});
