import { expect, test } from 'bun:test';
import { contract, waiting } from './contract';
import { enrollBorrower, SANDBOX_BANK } from '../helpers/fixtures';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { dispatchPayments } from '../../src/modules/collection/dispatch';
import { replicaPrefix } from '../../src/platform/lease-token';
import { DISPATCH_LEASE_MS } from '../../src/modules/collection/store';

// Borrowers are read once a month here, so a borrower of an earlier test is never read and decided again.
const env = { SANDBOX_SETTLEMENT_MS: '60000', MONITOR_READ_INTERVAL_MS: String(30 * 86_400_000) };

contract(
  'dispatch',
  (t) => {
    const { ctx, store, storeCtx } = t;
    let n = 0;

    /** A lender with a default sandbox key and `aids` enrolled, read and decided: one initiating payment each, not sent. */
    async function decided(aids: string[]) {
      const lender = ctx.newLender();
      const key = await ctx.json('POST', '/v1/payment_connections', {
        key: lender.key,
        body: { api_key: `sbx_dispatch_contract_${++n}_0000`, rail_scope: 'both', is_default: true },
      });
      expect(key.status).toBe(201);
      for (const aid of aids) {
        const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower(aid, { collectable_amount: 42500 })] } });
        expect(r.status).toBeLessThan(300);
        // One at a time, a second apart: the payments are due in the order enrolled.
        await queueDueReads(ctx.rt);
        await processBalances(ctx.rt);
        ctx.clock.advance(1_000);
      }
      const payments = await ctx.rows<{ id: string; enrollmentId: string; connectionId: string; aid: string }>(
        'SELECT id, enrollment_id AS enrollmentId, connection_id AS connectionId, authorizer_unique_id AS aid FROM payments WHERE lender_id = ? ORDER BY created_at, id',
        lender.id,
      );
      expect(payments.map((p) => p.aid)).toEqual(aids);
      return { lender, connectionId: key.body.id as string, payments };
    }

    /** Every due payment claimed now, so a test starts from an empty queue. */
    async function drain() {
      for (const p of await store.claimDuePayments(storeCtx, 1000, ctx.clock.now())) {
        await t.inTx((tx) => store.finishDue(tx, p, { state: 'done' }));
      }
    }

    test('a claim leases the due payments oldest first, with their numbers as numbers; a leased one is not claimed again', async () => {
      await drain();
      const { lender, payments } = await decided(['d-first', 'd-second', 'd-third']);
      const now = ctx.clock.now();
      const first = await store.claimDuePayments(storeCtx, 2, now);
      expect(first.map((p) => p.id)).toEqual([payments[0]!.id, payments[1]!.id]);
      expect(first[0]).toEqual({
        id: payments[0]!.id,
        lenderId: lender.id,
        enrollmentId: payments[0]!.enrollmentId,
        authorizerUniqueId: 'd-first',
        connectionId: payments[0]!.connectionId,
        rail: 'ach',
        amountCents: 42500,
        reference: `DRS-d-first-${payments[0]!.id}`,
        attempts: 0,
        attempt: 1,
        leaseToken: expect.any(String),
      });
      // One claim, one token: both rows carry it.
      expect(first[1]!.leaseToken).toBe(first[0]!.leaseToken);
      const rest = await store.claimDuePayments(storeCtx, 10, now);
      expect(rest.map((p) => p.id)).toEqual([payments[2]!.id]);
      expect(rest[0]!.leaseToken).not.toBe(first[0]!.leaseToken);
      expect(await store.claimDuePayments(storeCtx, 10, now)).toEqual([]);
      // A lease that runs out makes the payment due again, under a new token.
      const later = await store.claimDuePayments(storeCtx, 10, now + DISPATCH_LEASE_MS);
      expect(later.map((p) => p.id).sort()).toEqual(payments.map((p) => p.id).sort());
      expect(later.every((p) => p.leaseToken !== first[0]!.leaseToken)).toBe(true);
      // The first claim's lease was taken over: its finish changes nothing; the holder's does.
      expect(await t.inTx((tx) => store.finishDue(tx, first[0]!, { state: 'done' }))).toBe(false);
      const held = later.find((p) => p.id === payments[0]!.id)!;
      const retryAt = now + DISPATCH_LEASE_MS + 5_000;
      expect(await t.inTx((tx) => store.finishDue(tx, held, { state: 'pending', attempts: 1, nextAttemptAt: retryAt }))).toBe(true);
      const [row] = await ctx.rows<{ state: string; attempts: number; nextAttemptAt: number; leaseToken: string | null }>(
        'SELECT state, attempts, next_attempt_at AS nextAttemptAt, lease_token AS leaseToken FROM payments WHERE id = ?',
        held.id,
      );
      expect(row).toEqual({ state: 'pending', attempts: 1, nextAttemptAt: retryAt, leaseToken: null });
      // Pending again with its next attempt: due then, not before.
      expect(await store.claimDuePayments(storeCtx, 10, retryAt - 1)).toEqual([]);
      const retry = await store.claimDuePayments(storeCtx, 10, retryAt);
      expect(retry.map((p) => [p.id, p.attempts])).toEqual([[held.id, 1]]);
      for (const p of [...retry, ...later.filter((p) => p.id !== held.id)]) expect(await t.inTx((tx) => store.finishDue(tx, p, { state: 'done' }))).toBe(true);
    });

    test('a finish rolled back leaves the claim holding the row', async () => {
      await drain();
      const { payments } = await decided(['d-rolled']);
      const [claim] = await store.claimDuePayments(storeCtx, 1, ctx.clock.now());
      expect(claim!.id).toBe(payments[0]!.id);
      await expect(
        t.inTx(async (tx) => {
          expect(await store.finishDue(tx, claim!, { state: 'done' })).toBe(true);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      const [row] = await ctx.rows<{ state: string; leaseToken: string }>('SELECT state, lease_token AS leaseToken FROM payments WHERE id = ?', claim!.id);
      expect(row).toEqual({ state: 'pending', leaseToken: claim!.leaseToken });
      expect(await t.inTx((tx) => store.finishDue(tx, claim!, { state: 'done' }))).toBe(true);
    });

    test('the leases of a stopped process are let go: its own on every engine, every lease only on SQLite', async () => {
      await drain();
      await decided(['d-release-1', 'd-release-2']);
      const now = ctx.clock.now();
      const claimed = await store.claimDuePayments(storeCtx, 10, now);
      expect(claimed).toHaveLength(2);
      expect(claimed[0]!.leaseToken.startsWith(replicaPrefix())).toBe(true);
      // Another replica's prefix: on PostgreSQL its claims are not ours to let go.
      const foreign = await t.inTx((tx) => store.releasePaymentLeases(tx, 'another-replica/'));
      expect(foreign).toBe(t.engine === 'sqlite' ? 2 : 0);
      const own = await t.inTx((tx) => store.releasePaymentLeases(tx, replicaPrefix()));
      expect(own).toBe(t.engine === 'sqlite' ? 0 : 2);
      expect(await t.inTx((tx) => store.releasePaymentLeases(tx, replicaPrefix()))).toBe(0);
      // Due again at once, before the lease would have run out.
      const again = await store.claimDuePayments(storeCtx, 10, now);
      expect(again.map((p) => p.id).sort()).toEqual(claimed.map((p) => p.id).sort());
      for (const p of again) await t.inTx((tx) => store.finishDue(tx, p, { state: 'done' }));
    });

    test('what a send reads: the payment, its borrower and its key; absent is null', async () => {
      await drain();
      const { payments, connectionId } = await decided(['d-reads']);
      const p = payments[0]!;
      expect(await store.sendStateOf(storeCtx, p.id)).toEqual({ status: 'initiating', firstAttemptAt: null, reportedStatus: null });
      expect(await store.sendStateOf(storeCtx, 'no-such-payment')).toBeNull();
      const borrower = await store.borrowerToDebit(storeCtx, p.enrollmentId);
      expect(borrower).toEqual({ state: 'monitored', sealed: expect.any(String), cardToken: null, routing: SANDBOX_BANK, revoked: false });
      expect(await store.borrowerToDebit(storeCtx, 'no-such-enrollment')).toBeNull();
      expect(p.connectionId).toBe(connectionId);
      expect(await store.keyToSend(storeCtx, connectionId)).toEqual({ processor: 'sandbox', keySealed: expect.any(String) });
      expect(await store.keyToSend(storeCtx, 'no-such-key')).toBeNull();
      expect(await store.paymentKeyLive(storeCtx, p.id)).toBe(true);
      expect(await store.paymentKeyLive(storeCtx, 'no-such-payment')).toBe(false);
    });

    test('a send is claimed only by the claim holding the row, once its first attempt is recorded; that time stands', async () => {
      await drain();
      const { payments } = await decided(['d-send']);
      const p = payments[0]!;
      const [claim] = await store.claimDuePayments(storeCtx, 1, ctx.clock.now());
      expect(claim!.id).toBe(p.id);
      const sentAt = ctx.clock.now();
      // Rolled back: nothing recorded.
      await expect(
        t.inTx(async (tx) => {
          expect(await store.claimSend(tx, claim!, sentAt)).toBe(true);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await store.sendStateOf(storeCtx, p.id))!.firstAttemptAt).toBeNull();
      expect(await t.inTx((tx) => store.claimSend(tx, { id: p.id, leaseToken: 'not-the-holder' }, sentAt))).toBe(false);
      expect(await t.inTx((tx) => store.claimSend(tx, claim!, sentAt))).toBe(true);
      // A retry of the same send keeps the first attempt's time.
      expect(await t.inTx((tx) => store.claimSend(tx, claim!, sentAt + 10_000))).toBe(true);
      const state = await store.sendStateOf(storeCtx, p.id);
      expect(state).toEqual({ status: 'initiating', firstAttemptAt: sentAt, reportedStatus: null });
      expect(typeof state!.firstAttemptAt).toBe('number');
      // The processor's id: the first one kept stands; a null answer keeps it too.
      await t.inTx((tx) => store.noteProcessorPaymentId(tx, p.id, null, sentAt));
      expect((await ctx.rows('SELECT processor_payment_id AS pid FROM payments WHERE id = ?', p.id))[0]).toEqual({ pid: null });
      await t.inTx((tx) => store.noteProcessorPaymentId(tx, p.id, 'proc-1', sentAt + 1));
      await t.inTx((tx) => store.noteProcessorPaymentId(tx, p.id, 'proc-2', sentAt + 2));
      expect((await ctx.rows('SELECT processor_payment_id AS pid, updated_at AS at FROM payments WHERE id = ?', p.id))[0]).toEqual({ pid: 'proc-1', at: sentAt + 2 });
      expect(await t.inTx((tx) => store.finishDue(tx, claim!, { state: 'done' }))).toBe(true);
    });

    test('no send is claimed for a borrower no longer monitored, nor after the key is deleted', async () => {
      await drain();
      const { lender, payments, connectionId } = await decided(['d-removed', 'd-keyless']);
      const [removed, keyless] = payments;
      const claims = await store.claimDuePayments(storeCtx, 10, ctx.clock.now());
      expect(claims.map((c) => c.id)).toEqual([removed!.id, keyless!.id]);
      const gone = await ctx.json('DELETE', '/v1/payment_enrollments', { key: lender.key, body: { authorizer_unique_ids: ['d-removed'] } });
      expect(gone.body.removed).toBe(1);
      expect((await store.borrowerToDebit(storeCtx, removed!.enrollmentId))!.state).not.toBe('monitored');
      expect(await t.inTx((tx) => store.claimSend(tx, claims[0]!, ctx.clock.now()))).toBe(false);
      const del = await ctx.json('DELETE', `/v1/payment_connections/${connectionId}`, { key: lender.key });
      expect(del.status).toBe(204);
      expect(await store.keyToSend(storeCtx, connectionId)).toEqual({ processor: 'sandbox', keySealed: null });
      expect(await store.paymentKeyLive(storeCtx, keyless!.id)).toBe(false);
      for (const c of claims) await t.inTx((tx) => store.finishDue(tx, c, { state: 'done' }));
    });

    test('accountsToDebit and the claim: no send is claimed while the bank account blocks the borrower; a later authorization lets it go', async () => {
      await drain();
      const { payments } = await decided(['d-acct-one', 'd-acct-two']);
      const [one, two] = payments;
      // Both on the lender's one account (the fixture's number): the payment's and the borrower's are one.
      const [{ accountId }] = await ctx.rows<{ accountId: string }>('SELECT bank_account_id AS accountId FROM payments WHERE id = ?', one!.id);
      expect(accountId).toEqual(expect.any(String));
      expect(await store.accountsToDebit(storeCtx, one!.id)).toEqual({ authorizationAt: null, accounts: [expect.objectContaining({ state: 'ok', lastReturnAt: null, pendingChangeId: null })], accountType: null });
      expect(await store.accountsToDebit(storeCtx, 'no-such-payment')).toEqual({ authorizationAt: null, accounts: [], accountType: null });
      const claims = await store.claimDuePayments(storeCtx, 10, ctx.clock.now());
      expect(claims.map((c) => c.id)).toEqual([one!.id, two!.id]);
      const returnedAt = ctx.clock.now();
      // A return being recorded on the account: the claim waits for it (PostgreSQL: on the account's row; SQLite:
      // on the one writer), then finds the account unauthorized and claims nothing.
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let marked!: () => void;
      const isMarked = new Promise<void>((r) => (marked = r));
      const before = await waiting(t);
      const recorder = t.inTx(async (tx) => {
        await t.stores.bankAccounts.recordReturn(tx, { id: accountId!, state: 'unauthorized', code: 'R10', reference: 'DRS-elsewhere', at: returnedAt });
        marked();
        await held;
      });
      await isMarked;
      let claimed: boolean | undefined;
      const send = t.inTx(async (tx) => (claimed = await store.claimSend(tx, claims[0]!, ctx.clock.now())));
      for (let i = 0; (await waiting(t)) <= before; i++) expect(i).toBeLessThan(10_000);
      expect(claimed).toBeUndefined();
      release();
      await recorder;
      expect(await send).toBe(false);
      expect(await store.accountsToDebit(storeCtx, one!.id)).toEqual({ authorizationAt: null, accounts: [expect.objectContaining({ state: 'unauthorized', lastReturnAt: returnedAt, pendingChangeId: null })], accountType: null });
      // An authorization dated before the return changes nothing; one after it lets this borrower's payment go.
      ctx.sql.query('UPDATE enrollments SET authorization_at = ? WHERE id = ?').run(returnedAt, two!.enrollmentId);
      expect(await t.inTx((tx) => store.claimSend(tx, claims[1]!, ctx.clock.now()))).toBe(false);
      ctx.sql.query('UPDATE enrollments SET authorization_at = ? WHERE id = ?').run(returnedAt + 1, two!.enrollmentId);
      expect(await store.accountsToDebit(storeCtx, two!.id)).toEqual({ authorizationAt: returnedAt + 1, accounts: [expect.objectContaining({ state: 'unauthorized', lastReturnAt: returnedAt, pendingChangeId: null })], accountType: null });
      expect(await t.inTx((tx) => store.claimSend(tx, claims[1]!, ctx.clock.now()))).toBe(true);
      // Any other blocking state blocks whatever the authorization.
      await t.inTx((tx) => t.stores.bankAccounts.recordReturn(tx, { id: accountId!, state: 'frozen', code: 'R16', reference: 'DRS-elsewhere-2', at: returnedAt + 2 }));
      ctx.sql.query('UPDATE enrollments SET authorization_at = ? WHERE id = ?').run(returnedAt + 10, one!.enrollmentId);
      expect(await t.inTx((tx) => store.claimSend(tx, claims[0]!, ctx.clock.now()))).toBe(false);
      for (const c of claims) await t.inTx((tx) => store.finishDue(tx, c, { state: 'done' }));
    });

    test('the dispatch job sends a due payment through these reads and claims', async () => {
      await drain();
      const { payments } = await decided(['d-job']);
      await dispatchPayments(ctx.rt);
      const state = await store.sendStateOf(storeCtx, payments[0]!.id);
      expect(state).toEqual({ status: 'processing', firstAttemptAt: ctx.clock.now(), reportedStatus: null });
      const [row] = await ctx.rows<{ state: string; pid: string | null }>('SELECT state, processor_payment_id AS pid FROM payments WHERE id = ?', payments[0]!.id);
      expect(row!.state).toBe('done');
      expect(typeof row!.pid).toBe('string');
    });
  },
  { env },
);
