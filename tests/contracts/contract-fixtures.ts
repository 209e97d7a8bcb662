import { expect } from 'bun:test';
import type { TestContext } from '../helpers/context';
import { enrollBorrower } from '../helpers/fixtures';
import { cycle } from '../helpers/collection';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { processBalances } from '../../src/modules/balance-requests/processing';

/**
 * A new lender with a default sandbox key (`apiKey`) and one borrower enrolled, read and decided: its payment,
 * sent when asked.
 */
export async function lenderWithSandboxPayment(ctx: TestContext, apiKey: string, aid: string, opts: { send?: boolean } = {}) {
  const lender = ctx.newLender();
  const key = await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: apiKey, rail_scope: 'both', is_default: true } });
  expect(key.status).toBe(201);
  const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower(aid, { collectable_amount: 42500 })] } });
  expect(r.status).toBeLessThan(300);
  if (opts.send) await cycle(ctx);
  else {
    await queueDueReads(ctx.rt);
    await processBalances(ctx.rt);
  }
  const [p] = await ctx.rows<{ id: string; enrollmentId: string; reference: string; pid: string | null; firstAttemptAt: number | null }>(
    `SELECT id, enrollment_id AS enrollmentId, reference, processor_payment_id AS pid, first_attempt_at AS firstAttemptAt
       FROM payments WHERE lender_id = ?`,
    lender.id,
  );
  expect(p).toBeDefined();
  return { lender, connectionId: key.body.id as string, payment: p! };
}
