import { expect, test } from 'bun:test';
import { contract, inTurns } from './contract';
import type { TestContext } from '../helpers/context';
import { enrollBorrower } from '../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../helpers/collection';

const HEADER = 'reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
const day = (d: string) => Date.parse(`${d}T00:00:00.000Z`);

async function upload(ctx: TestContext, key: string, rows: string[]) {
  const form = new FormData();
  form.append('file', new Blob([[HEADER, ...rows].join('\n') + '\n'], { type: 'text/csv' }), 'results.csv');
  const r = await ctx.json('POST', '/v1/payment_results/uploads', { form, key });
  expect(r.status).toBe(200);
  expect(r.body.problems.filter((p: { severity: string }) => p.severity === 'error')).toEqual([]);
}

const SETTLE = 60_000;

contract('returnRates', (t) => {
  const { ctx, store, storeCtx } = t;

  test('a lender never evaluated has no statuses; lenderIds names every lender', async () => {
    const fresh = ctx.newLender();
    expect(await store.watchedStatuses(storeCtx, fresh.id)).toBeUndefined();
    const ids = await store.lenderIds(storeCtx);
    expect(ids).toContain(ctx.lender.id);
    expect(ids).toContain(fresh.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => typeof id === 'string')).toBe(true);
  });

  test('uploaded debits and returns of [from, to], both ends included, once per reference; counts are numbers', async () => {
    const lender = ctx.newLender();
    await upload(ctx, lender.key, [
      'S-1,10.00,settled,2026-11-02,2026-11-03,,',
      'S-2,10.00,settled,2026-11-10,2026-11-11,,',
      'R-1,10.00,returned,2026-11-05,,2026-11-07,R10',
      // Submitted before the window, returned on its last day: a return of the window, not one of its debits.
      'L-1,10.00,late_return,2026-11-01,2026-11-03,2026-11-12,R01',
      // Not a debit that went to the bank.
      'P-1,10.00,pending,2026-11-06,,,',
      'O-1,10.00,returned,2026-08-01,,2026-08-03,R02',
    ]);
    const from = day('2026-11-02');
    const to = day('2026-11-12');
    const debits = await store.debitsIn(storeCtx, lender.id, from, to);
    expect(debits).toBe(3);
    expect(typeof debits).toBe('number');
    const returns = await store.returnsIn(storeCtx, lender.id, from, to);
    expect([...returns].sort((a, b) => a.reference.localeCompare(b.reference))).toEqual([
      { reference: 'L-1', code: 'R01' },
      { reference: 'R-1', code: 'R10' },
    ]);
    // One millisecond less on either end leaves the rows of that day out.
    expect(await store.debitsIn(storeCtx, lender.id, from + 1, to)).toBe(2);
    expect(await store.returnsIn(storeCtx, lender.id, from, to - 1)).toEqual([{ reference: 'R-1', code: 'R10' }]);
    // The same rows with their total, exactly: 3 debits of $10.00; 2 once the first day is left out.
    expect(await store.debitTotalsIn(storeCtx, lender.id, from, to)).toEqual({ count: 3, cents: 3000n });
    expect(await store.debitTotalsIn(storeCtx, lender.id, from + 1, to)).toEqual({ count: 2, cents: 2000n });
    // The same file again: each reference is still counted once.
    await upload(ctx, lender.key, ['S-1,10.00,settled,2026-11-02,2026-11-03,,', 'R-1,10.00,returned,2026-11-05,,2026-11-07,R10']);
    expect(await store.debitsIn(storeCtx, lender.id, from, to)).toBe(3);
    expect(await store.returnsIn(storeCtx, lender.id, from, to)).toHaveLength(2);
    // Another lender's window is empty.
    expect(await store.debitsIn(storeCtx, ctx.lender.id, from, to)).toBe(0);
    expect(await store.debitTotalsIn(storeCtx, ctx.lender.id, from, to)).toEqual({ count: 0, cents: 0n });
    expect(await store.returnsIn(storeCtx, ctx.lender.id, from, to)).toEqual([]);
    // The API's figures are the store's: 4 debits over the 60 days to now (L-1 included), R10 and R01 returned.
    const rates = await ctx.json('GET', '/v1/return_rates', { key: lender.key });
    expect(rates.status).toBe(200);
    expect(rates.body).toMatchObject({ debits: 4, by_code: { R10: 1, R01: 1 }, rates: { overall: { returns: 2 } } });
    // In code order, whatever order the engine read the rows in (the portal lists them so).
    expect(Object.keys(rates.body.by_code)).toEqual(['R01', 'R10']);
  });

  test('the service’s own payments: ACH debits that reached the processor and their returns; card payments and refusals are not', async () => {
    const lender = ctx.newLender('Own payments', { cards: true });
    const body = { api_key: 'sbx_rates_contract_000001', rail_scope: 'both', is_default: true };
    const key = await ctx.json('POST', '/v1/payment_connections', { key: lender.key, body });
    expect(key.status).toBe(201);
    // By the cents of the amount: 00 settles, 91 comes back R01, 96 is refused at once; the card one comes back R01.
    const borrowers = [
      enrollBorrower('settles', { collectable_amount: 42500 }),
      enrollBorrower('returns', { collectable_amount: 42591 }),
      enrollBorrower('refused', { collectable_amount: 42596 }),
      enrollBorrower('card', { collectable_amount: 5091, charge_instrument: { processor_token: 'sbxpm_contract', card_last4: '4242' } }),
    ];
    expect((await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers } })).status).toBeLessThan(300);
    const from = ctx.clock.now();
    await cycle(ctx);
    await dispatchAndSettle(ctx, SETTLE);
    const to = ctx.clock.now();
    const payments = await ctx.rows<{ aid: string; reference: string }>('SELECT authorizer_unique_id AS aid, reference FROM payments WHERE lender_id = ?', lender.id);
    const refs = new Map(payments.map((r) => [r.aid, r.reference]));
    const card = await ctx.json('GET', '/v1/payment_events?authorizer_unique_id=card', { key: lender.key });
    expect(card.body.events.at(-1)).toMatchObject({ status: 'returned' });
    // The lender's upload of its own payment's reference is that payment, not a debit of its own.
    await upload(ctx, lender.key, [`${refs.get('settles')},425.00,settled,2026-11-21,2026-11-21,,`]);
    expect(await store.debitsIn(storeCtx, lender.id, from, to)).toBe(2);
    // Their total is their amounts: the refused one, the card one and the upload of its own reference are not in it.
    expect(await store.debitTotalsIn(storeCtx, lender.id, from, to)).toEqual({ count: 2, cents: 42500n + 42591n });
    // From the start of the day the uploaded row (stored) was submitted on: still the two.
    const stored = await ctx.rows('SELECT submitted_at FROM uploaded_results WHERE lender_id = ? AND reference = ?', lender.id, refs.get('settles')!);
    expect(stored.map((r) => Number(r.submitted_at))).toEqual([day('2026-11-21')]);
    expect(await store.debitsIn(storeCtx, lender.id, day('2026-11-21'), to)).toBe(2);
    expect(await store.returnsIn(storeCtx, lender.id, from, to)).toEqual([{ reference: refs.get('returns')!, code: 'R01' }]);
    // First attempted at `from`: a window starting a millisecond later holds none of them.
    expect(await store.debitsIn(storeCtx, lender.id, from + 1, to)).toBe(0);
  });

  test('a recorded return evaluates the rates: the statuses and the time of the evaluation are saved', async () => {
    const lender = ctx.newLender();
    await upload(ctx, lender.key, ['S-1,10.00,settled,2026-11-02,2026-11-03,,', 'U-1,10.00,returned,2026-11-05,,2026-11-07,R10']);
    const saved = await store.watchedStatuses(storeCtx, lender.id);
    // One unauthorized return of two debits: above both thresholds; no administrative return.
    expect(saved).toEqual({ unauthorized: 'exceeded', administrative: 'ok', overall: 'exceeded', evaluatedAt: ctx.clock.now() });
    expect(typeof saved!.evaluatedAt).toBe('number');
  });

  test('saveWatchedStatuses creates then replaces the one row; a rolled-back save leaves nothing', async () => {
    const lender = ctx.newLender();
    await expect(
      t.inTx(async (tx) => {
        await store.serializeWatch(tx, lender.id);
        await store.saveWatchedStatuses(tx, lender.id, { unauthorized: 'warning', administrative: 'ok', overall: 'ok' }, 1_000);
        expect(await store.watchedStatuses(tx, lender.id)).toEqual({ unauthorized: 'warning', administrative: 'ok', overall: 'ok', evaluatedAt: 1_000 });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.watchedStatuses(storeCtx, lender.id)).toBeUndefined();

    await t.inTx(async (tx) => {
      await store.serializeWatch(tx, lender.id);
      await store.saveWatchedStatuses(tx, lender.id, { unauthorized: 'ok', administrative: 'warning', overall: 'ok' }, 2_000);
    });
    expect(await store.watchedStatuses(storeCtx, lender.id)).toEqual({ unauthorized: 'ok', administrative: 'warning', overall: 'ok', evaluatedAt: 2_000 });
    // Taken twice in one transaction (an upload's save that evaluates again): the turn is already this one's.
    await t.inTx(async (tx) => {
      await store.serializeWatch(tx, lender.id);
      await store.serializeWatch(tx, lender.id);
      await store.saveWatchedStatuses(tx, lender.id, { unauthorized: 'exceeded', administrative: 'exceeded', overall: 'warning' }, 3_000);
    });
    expect(await store.watchedStatuses(storeCtx, lender.id)).toEqual({
      unauthorized: 'exceeded',
      administrative: 'exceeded',
      overall: 'warning',
      evaluatedAt: 3_000,
    });
    const rows = await ctx.rows('SELECT COUNT(*) AS n FROM return_rate_watch WHERE lender_id = ?', lender.id);
    expect(Number(rows[0]!.n)).toBe(1);
  });

  test('serializeWatch: a second evaluation of the lender waits for the first, then reads the statuses it saved', async () => {
    const lender = ctx.newLender();
    const seen = await inTurns(
      t,
      (tx) => store.serializeWatch(tx, lender.id),
      (tx) => store.saveWatchedStatuses(tx, lender.id, { unauthorized: 'warning', administrative: 'ok', overall: 'ok' }, 5_000),
      (tx) => store.watchedStatuses(tx, lender.id),
    );
    expect(seen).toEqual({ unauthorized: 'warning', administrative: 'ok', overall: 'ok', evaluatedAt: 5_000 });
  });
}, { env: { SANDBOX_SETTLEMENT_MS: String(SETTLE) } });
