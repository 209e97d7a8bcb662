import { expect, test } from 'bun:test';
import { contract } from './contract';
import { enrollBorrower } from '../helpers/fixtures';
import { cycle } from '../helpers/collection';
import { pollProcessors } from '../../src/modules/collection/poll';
import type { NewRightsNotice, RightsNoticeRow } from '../../src/modules/rights-notices/store';

const SETTLE = 60_000;
const READ = 3_600_000;
const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-25T12:00:00.000Z');

/** Each field's JavaScript type as read, null where null: what both engines must hand back alike. */
const typesOf = (e: object) => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === null ? 'null' : typeof v]));

contract(
  'rightsNotices',
  (t) => {
    const { ctx, store, storeCtx } = t;
    let n = 0;

    /** A borrower of the lender's, enrolled through the API: its enrollment id. */
    async function borrower(lender: { id: string; key: string }, aid: string): Promise<string> {
      const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower(aid, { account_number: `${String(++n).padStart(3, '0')}1234567` })] } });
      expect(r.status).toBe(207);
      return (await ctx.rows<{ id: string }>('SELECT id FROM enrollments WHERE lender_id = ? AND authorizer_unique_id = ?', lender.id, aid))[0]!.id;
    }
    /** A notice as the service makes it due, its reference of its own. */
    const notice = (lenderId: string, enrollmentId: string, v: { id: string; learnedAt: number; dueBy: number }): NewRightsNotice => ({
      lenderId,
      enrollmentId,
      reference: `REF-${v.id}`,
      id: v.id,
      learnedAt: v.learnedAt,
      dueBy: v.dueBy,
      createdAt: v.learnedAt,
    });
    const insert = (row: NewRightsNotice) => t.inTx((tx) => store.insertNotice(tx, row));

    test('attemptsOf and insertNotice, as a covered borrower’s second R01 calls them: the lender’s payments oldest first, one notice per reference', async () => {
      await ctx.json('POST', '/v1/payment_connections', { body: { api_key: `sbx_rights_contract_${t.engine.padEnd(8, '0')}`, rail_scope: 'both', is_default: true } });
      // The payday rule's payment notices are the lender's own here: the two debits go at once.
      await ctx.json('PATCH', '/v1/collection_policy', { body: { cfpb_covered: true, notice_channel: null } });
      await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('nsf', { collectable_amount: 1091 })] } });
      for (let i = 0; i < 2; i++) {
        await cycle(ctx);
        ctx.clock.advance(SETTLE);
        await pollProcessors(ctx.rt);
        ctx.clock.advance(READ);
      }
      const paid = await ctx.rows<{ id: string; reference: string; firstAttemptAt: number; updatedAt: number }>(
        "SELECT id, reference, first_attempt_at AS firstAttemptAt, updated_at AS updatedAt FROM payments WHERE authorizer_unique_id = 'nsf' ORDER BY created_at, id",
      );
      expect(paid).toHaveLength(2);
      const made = await ctx.rows<{ reference: string }>('SELECT reference FROM rights_notices');
      expect(made).toEqual([{ reference: paid[1]!.reference }]);

      const attempts = await store.attemptsOf(storeCtx, ctx.lender.id, [paid[1]!.id, paid[0]!.id, 'no-such-payment']);
      expect(attempts).toEqual(
        paid.map((p) => ({ id: p.id, reference: p.reference, aid: 'nsf', amountCents: 1091, attemptedAt: p.firstAttemptAt, returnedAt: p.updatedAt, returnCode: 'R01' })),
      );
      expect(typesOf(attempts[0]!)).toEqual({ id: 'string', reference: 'string', aid: 'string', amountCents: 'number', attemptedAt: 'number', returnedAt: 'number', returnCode: 'string' });
      // Another lender's ids read nothing; no ids, no statement.
      expect(await store.attemptsOf(storeCtx, ctx.newLender().id, paid.map((p) => p.id))).toEqual([]);
      expect(await store.attemptsOf(storeCtx, ctx.lender.id, [])).toEqual([]);

      // The same reference again is not kept, whatever its id; another is.
      const enrollmentId = (await ctx.rows<{ id: string }>("SELECT id FROM enrollments WHERE authorizer_unique_id = 'nsf'"))[0]!.id;
      expect(await insert({ ...notice(ctx.lender.id, enrollmentId, { id: 'again', learnedAt: T0, dueBy: T0 }), reference: paid[1]!.reference })).toBe(false);
      expect(await insert(notice(ctx.lender.id, enrollmentId, { id: 'another', learnedAt: T0, dueBy: T0 }))).toBe(true);
      // The same reference for another lender is its own.
      const other = ctx.newLender();
      expect(await insert({ ...notice(other.id, await borrower(other, 'theirs'), { id: 'theirs', learnedAt: T0, dueBy: T0 }), reference: paid[1]!.reference })).toBe(true);
      expect((await ctx.rows<{ id: string }>('SELECT id FROM rights_notices WHERE reference = ? ORDER BY id', paid[1]!.reference)).length).toBe(2);
    });

    test('oldestOpen and markSent: the oldest not sent, recorded once; latestAmong: each borrower’s latest', async () => {
      const lender = ctx.newLender();
      const x = await borrower(lender, 'x');
      const y = await borrower(lender, 'y');
      const none = await borrower(lender, 'none');
      // Learned out of id order: the oldest is by learned_at, then by id.
      await insert(notice(lender.id, x, { id: 'x-2', learnedAt: T0 + 2 * HOUR, dueBy: T0 + 100 * HOUR }));
      await insert(notice(lender.id, x, { id: 'x-1b', learnedAt: T0 + HOUR, dueBy: T0 + 99 * HOUR }));
      await insert(notice(lender.id, x, { id: 'x-1a', learnedAt: T0 + HOUR, dueBy: T0 + 99 * HOUR }));
      await insert(notice(lender.id, y, { id: 'y-1', learnedAt: T0, dueBy: T0 + 98 * HOUR }));

      const oldest = await store.oldestOpen(storeCtx, x);
      const row: RightsNoticeRow = {
        id: 'x-1a',
        lenderId: lender.id,
        enrollmentId: x,
        aid: 'x',
        reference: 'REF-x-1a',
        learnedAt: T0 + HOUR,
        dueBy: T0 + 99 * HOUR,
        sentAt: null,
        channel: null,
        evidenceRef: null,
        createdAt: T0 + HOUR,
      };
      expect(oldest).toEqual(row);
      expect(typesOf(oldest!)).toEqual(typesOf(row));
      expect(await store.oldestOpen(storeCtx, none)).toBeUndefined();

      const sent = { id: 'x-1a', sentAt: T0 + 5 * HOUR, channel: 'mail' as const, evidenceRef: 'cert-7' };
      expect(await t.inTx((tx) => store.markSent(tx, sent))).toBe(true);
      expect(await t.inTx((tx) => store.markSent(tx, { ...sent, channel: 'electronic', evidenceRef: null }))).toBe(false);
      expect((await store.oldestOpen(storeCtx, x))!.id).toBe('x-1b');
      expect(await t.inTx((tx) => store.markSent(tx, { id: 'x-1b', sentAt: T0 + 6 * HOUR, channel: 'electronic', evidenceRef: null }))).toBe(true);
      expect(await t.inTx((tx) => store.markSent(tx, { id: 'no-such-notice', sentAt: T0, channel: 'electronic', evidenceRef: null }))).toBe(false);
      // Read inside the transaction that wrote it: the write is seen.
      await t.inTx(async (tx) => {
        expect(await store.markSent(tx, { id: 'x-2', sentAt: T0 + 7 * HOUR, channel: 'electronic', evidenceRef: null })).toBe(true);
        expect(await store.oldestOpen(tx, x)).toBeUndefined();
      });

      const latest = await store.latestAmong(storeCtx, [x, y, none, 'no-such-enrollment']);
      expect(latest.map((r) => [r.enrollmentId, r.id]).sort()).toEqual([
        [x, 'x-2'],
        [y, 'y-1'],
      ].sort());
      const sentRow = (await store.latestAmong(storeCtx, [x]))[0]!;
      expect(sentRow).toEqual({ ...row, id: 'x-2', reference: 'REF-x-2', learnedAt: T0 + 2 * HOUR, dueBy: T0 + 100 * HOUR, createdAt: T0 + 2 * HOUR, sentAt: T0 + 7 * HOUR, channel: 'electronic' });
      expect(typesOf(sentRow)).toEqual({ ...typesOf(row), sentAt: 'number', channel: 'string' });
      const first = await t.inTx(async (tx) => (await store.oldestOpen(tx, y))!);
      expect(first.id).toBe('y-1');
      expect(await store.latestAmong(storeCtx, [])).toEqual([]);
    });

    test('noticesPage: the lender’s notices of a state by due_by then id, after a position, at most limit; overdue is due_by before now', async () => {
      const lender = ctx.newLender();
      const a = await borrower(lender, 'a');
      const b = await borrower(lender, 'b');
      const due = (h: number) => T0 + h * HOUR;
      // Two due at the same time (ordered by id), one sent, one due exactly at `now`.
      await insert(notice(lender.id, a, { id: 'n-3', learnedAt: T0, dueBy: due(30) }));
      await insert(notice(lender.id, b, { id: 'n-1', learnedAt: T0, dueBy: due(10) }));
      await insert(notice(lender.id, a, { id: 'n-2b', learnedAt: T0, dueBy: due(20) }));
      await insert(notice(lender.id, b, { id: 'n-2a', learnedAt: T0, dueBy: due(20) }));
      await insert(notice(lender.id, b, { id: 'n-4', learnedAt: T0, dueBy: due(40) }));
      await t.inTx((tx) => store.markSent(tx, { id: 'n-2b', sentAt: due(1), channel: 'mail', evidenceRef: null }));
      // Another lender's, due first.
      const other = ctx.newLender();
      await insert(notice(other.id, await borrower(other, 'o'), { id: 'n-0', learnedAt: T0, dueBy: due(1) }));

      const now = due(30);
      const page = async (state: 'open' | 'overdue' | 'sent' | undefined, after = { dueBy: 0, id: '' }, limit = 10) =>
        (await store.noticesPage(storeCtx, { lenderId: lender.id, state, now, after, limit })).map((r) => r.id);
      expect(await page(undefined)).toEqual(['n-1', 'n-2a', 'n-2b', 'n-3', 'n-4']);
      expect(await page('open')).toEqual(['n-1', 'n-2a', 'n-3', 'n-4']);
      expect(await page('sent')).toEqual(['n-2b']);
      // Due exactly now is not overdue yet.
      expect(await page('overdue')).toEqual(['n-1', 'n-2a']);
      // After a position: strictly after it, ties broken by id.
      expect(await page(undefined, { dueBy: due(20), id: 'n-2a' })).toEqual(['n-2b', 'n-3', 'n-4']);
      expect(await page('open', { dueBy: due(20), id: 'n-2a' }, 1)).toEqual(['n-3']);
      expect(await page('overdue', { dueBy: due(10), id: 'n-1' })).toEqual(['n-2a']);
      expect(await page(undefined, { dueBy: due(40), id: 'n-4' })).toEqual([]);
      expect(await page(undefined, undefined, 2)).toEqual(['n-1', 'n-2a']);

      const [r] = await store.noticesPage(storeCtx, { lenderId: lender.id, state: 'sent', now, after: { dueBy: 0, id: '' }, limit: 1 });
      expect(r).toEqual({
        id: 'n-2b',
        lenderId: lender.id,
        enrollmentId: a,
        aid: 'a',
        reference: 'REF-n-2b',
        learnedAt: T0,
        dueBy: due(20),
        sentAt: due(1),
        channel: 'mail',
        evidenceRef: null,
        createdAt: T0,
      });
      expect(typesOf(r!)).toEqual({ id: 'string', lenderId: 'string', enrollmentId: 'string', aid: 'string', reference: 'string', learnedAt: 'number', dueBy: 'number', sentAt: 'number', channel: 'string', evidenceRef: 'null', createdAt: 'number' });
    });
  },
  { env: { SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) }, clockAt: '2026-11-25T12:00:00.000Z' },
);
