import { expect, test } from 'bun:test';
import { contract } from './contract';
import { enrollBorrower, SANDBOX_UNSUPPORTED_BANK } from '../helpers/fixtures';
import { lapseDueMonitors } from '../../src/modules/enrollments/monitoring';
import { MONITOR_WINDOW_MS, type StoredMonitor } from '../../src/modules/enrollments/monitor-store';
import type { MonitorChange } from '../../src/modules/enrollments/monitor';
import { DAY_MS } from '../../src/platform/clock';

const byAid = (a: { aid: string }, b: { aid: string }) => (a.aid < b.aid ? -1 : a.aid > b.aid ? 1 : 0);

contract('monitors', (t) => {
  const { ctx, store, storeCtx } = t;
  const enroll = (borrowers: unknown[], key?: string) => ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers }, ...(key ? { key } : {}) });
  const idOf = async (lenderId: string, aid: string) =>
    (await ctx.rows<{ id: string }>('SELECT id FROM enrollments WHERE lender_id = ? AND authorizer_unique_id = ?', lenderId, aid))[0]!.id;
  const columnsOf = async (id: string) =>
    (
      await ctx.rows<{ next_read_at: number | null; payments_used: number; window_started_at: number | null; updated_at: number }>(
        'SELECT next_read_at, payments_used, window_started_at, updated_at FROM enrollments WHERE id = ?',
        id,
      )
    )[0]!;

  test('an enrollment writes each monitor as the machine decided it, read back the same by id and by identifier', async () => {
    const lender = ctx.newLender();
    const now = ctx.clock.now();
    const r = await enroll([enrollBorrower('mon-a'), enrollBorrower('mon-held', { routing_number: SANDBOX_UNSUPPORTED_BANK })], lender.key);
    expect(r.body).toMatchObject({ enrolled: 1, held: 1 });

    const a = await store.currentMonitor(storeCtx, await idOf(lender.id, 'mon-a'));
    expect(a).toEqual({ state: 'monitored', reason: null, blockedReason: null, windowEndsAt: now + MONITOR_WINDOW_MS, lenderId: lender.id, aid: 'mon-a' });
    const held = await store.currentMonitor(storeCtx, await idOf(lender.id, 'mon-held'));
    expect(held).toEqual({ state: 'held', reason: 'institution_not_supported', blockedReason: null, windowEndsAt: null, lenderId: lender.id, aid: 'mon-held' });
    expect(await store.currentMonitor(storeCtx, 'no-such-enrollment')).toBeUndefined();

    // The lender's records of the identifiers asked for, and nothing of an unknown one. The order is not promised.
    const found = (await store.monitorsOf(storeCtx, lender.id, ['mon-held', 'mon-a', 'nobody'])).sort(byAid);
    expect(found).toEqual([
      { id: await idOf(lender.id, 'mon-a'), aid: 'mon-a', state: 'monitored', reason: null, blockedReason: null, windowStartedAt: now,
        windowEndsAt: now + MONITOR_WINDOW_MS, bankAccountId: expect.any(String) },
      { id: await idOf(lender.id, 'mon-held'), aid: 'mon-held', state: 'held', reason: 'institution_not_supported', blockedReason: null,
        windowStartedAt: null, windowEndsAt: null, bankAccountId: expect.any(String) },
    ]);
    expect(await store.monitorsOf(storeCtx, lender.id, [])).toEqual([]);
    // Another lender's borrower of the same identifier is not this lender's record.
    expect(await store.monitorsOf(storeCtx, ctx.newLender().id, ['mon-a'])).toEqual([]);
    // The first read is due at once, and nothing has been paid.
    expect(await columnsOf(await idOf(lender.id, 'mon-a'))).toMatchObject({ next_read_at: now, payments_used: 0 });
  });

  test('a re-send keeps the record: a monitored one its window and cadence, an ended one a fresh window', async () => {
    const lender = ctx.newLender();
    const start = ctx.clock.now();
    await enroll([enrollBorrower('re-kept'), enrollBorrower('re-ended')], lender.key);
    const [kept, ended] = [await idOf(lender.id, 're-kept'), await idOf(lender.id, 're-ended')];
    expect((await ctx.json('DELETE', '/v1/payment_enrollments', { key: lender.key, body: { authorizer_unique_ids: ['re-ended'] } })).body.removed).toBe(1);
    // Removal keeps the window it ended in and stops the reads.
    expect(await store.currentMonitor(storeCtx, ended)).toMatchObject({ state: 'removed', windowEndsAt: start + MONITOR_WINDOW_MS });
    expect(await columnsOf(ended)).toMatchObject({ next_read_at: null, window_started_at: start });

    ctx.clock.advance(DAY_MS);
    const again = await enroll([enrollBorrower('re-kept', { collectable_amount: 100 }), enrollBorrower('re-ended')], lender.key);
    expect(again.body.results.map((x: { outcome: string }) => x.outcome)).toEqual(['updated', 'enrolled']);
    const records = (await store.monitorsOf(storeCtx, lender.id, ['re-kept', 're-ended'])).sort(byAid);
    expect(records).toEqual([
      { id: ended, aid: 're-ended', state: 'monitored', reason: null, blockedReason: null, windowStartedAt: ctx.clock.now(),
        windowEndsAt: ctx.clock.now() + MONITOR_WINDOW_MS, bankAccountId: expect.any(String) },
      { id: kept, aid: 're-kept', state: 'monitored', reason: null, blockedReason: null, windowStartedAt: start, windowEndsAt: start + MONITOR_WINDOW_MS,
        bankAccountId: expect.any(String) },
    ]);
    // The kept one's next read is where it was; the re-enrolled one is read at once.
    expect((await columnsOf(kept)).next_read_at).toBe(start);
    expect((await columnsOf(ended)).next_read_at).toBe(ctx.clock.now());
  });

  test('an authorization stays until a later one is sent: a re-send without one, or with an older one, keeps it', async () => {
    const lender = ctx.newLender();
    const iso = (ms: number) => new Date(ms).toISOString();
    const t1 = ctx.clock.now() - 10 * DAY_MS;
    const read = async () => (await ctx.json('GET', '/v1/payment_enrollments/auth-1', { key: lender.key })).body.authorization;
    await enroll([enrollBorrower('auth-1', { authorization: { obtained_at: iso(t1), reference: 'first' } })], lender.key);
    expect(await read()).toEqual({ obtained_at: iso(t1), reference: 'first' });
    await enroll([enrollBorrower('auth-1')], lender.key);
    expect(await read()).toEqual({ obtained_at: iso(t1), reference: 'first' });
    await enroll([enrollBorrower('auth-1', { authorization: { obtained_at: iso(t1 - DAY_MS), reference: 'older' } })], lender.key);
    expect(await read()).toEqual({ obtained_at: iso(t1), reference: 'first' });
    await enroll([enrollBorrower('auth-1', { authorization: { obtained_at: iso(t1 + DAY_MS), reference: 'later' } })], lender.key);
    expect(await read()).toEqual({ obtained_at: iso(t1 + DAY_MS), reference: 'later' });
  });

  test('writeMonitorChange writes what it is given: kept, fresh and cleared windows, reads and payment counts; a rollback writes nothing', async () => {
    const lender = ctx.newLender();
    const start = ctx.clock.now();
    await enroll([enrollBorrower('chg')], lender.key);
    const id = await idOf(lender.id, 'chg');
    const write = (change: MonitorChange, now: number) =>
      t.inTx((tx) => store.writeMonitorChange(tx, { enrollmentId: id, change, now, windowMs: MONITOR_WINDOW_MS, readIntervalMs: 3_600_000 }));

    // A block that keeps the window and the read, one read interval on.
    ctx.clock.advance(1000);
    await write({ state: 'monitored', reason: null, blockedReason: 'no_processor_key', window: 'keep', nextRead: 'interval', payments: 'keep' }, ctx.clock.now());
    expect(await store.currentMonitor(storeCtx, id)).toMatchObject({ state: 'monitored', blockedReason: 'no_processor_key', windowEndsAt: start + MONITOR_WINDOW_MS });
    expect(await columnsOf(id)).toEqual({ next_read_at: ctx.clock.now() + 3_600_000, payments_used: 0, window_started_at: start, updated_at: ctx.clock.now() });

    // Rolled back: the monitor is as it was.
    await t
      .inTx(async (tx) => {
        await store.writeMonitorChange(tx, {
          enrollmentId: id,
          change: { state: 'stopped', reason: 'R02', blockedReason: null, window: 'none', nextRead: 'none', payments: 'keep' },
          now: ctx.clock.now(),
          windowMs: MONITOR_WINDOW_MS,
          readIntervalMs: 3_600_000,
        });
        expect(await store.currentMonitor(tx, id)).toMatchObject({ state: 'stopped', reason: 'R02' });
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    expect(await store.currentMonitor(storeCtx, id)).toMatchObject({ state: 'monitored', reason: null, blockedReason: 'no_processor_key' });

    // Ended: no window, no read.
    ctx.clock.advance(1000);
    await write({ state: 'stopped', reason: 'R02', blockedReason: null, window: 'none', nextRead: 'none', payments: 'keep' }, ctx.clock.now());
    expect(await store.currentMonitor(storeCtx, id)).toEqual({
      state: 'stopped',
      reason: 'R02',
      blockedReason: null,
      windowEndsAt: null,
      lenderId: lender.id,
      aid: 'chg',
    });
    expect(await columnsOf(id)).toMatchObject({ next_read_at: null, window_started_at: null });

    // Started again: a fresh window from now, read at once, payments counted from zero.
    ctx.sql.query('UPDATE enrollments SET payments_used = 2 WHERE id = ?').run(id);
    ctx.clock.advance(1000);
    const again = ctx.clock.now();
    await write({ state: 'monitored', reason: null, blockedReason: null, window: 'fresh', nextRead: 'now', payments: 'reset' }, again);
    expect((await store.currentMonitor(storeCtx, id))!.windowEndsAt).toBe(again + MONITOR_WINDOW_MS);
    expect(await columnsOf(id)).toEqual({ next_read_at: again, payments_used: 0, window_started_at: again, updated_at: again });

    // A change of an unknown enrollment writes nothing and does not fail.
    await t.inTx((tx) =>
      store.writeMonitorChange(tx, {
        enrollmentId: 'no-such-enrollment',
        change: { state: 'lapsed', reason: null, blockedReason: null, window: 'none', nextRead: 'none', payments: 'keep' },
        now: again,
        windowMs: MONITOR_WINDOW_MS,
        readIntervalMs: 1,
      }),
    );
    expect(await store.currentMonitor(storeCtx, 'no-such-enrollment')).toBeUndefined();
  });

  test('writeEnrollments: nothing for no rows, and a rolled-back enrollment leaves no borrower', async () => {
    const lender = ctx.newLender();
    await t.inTx((tx) => store.writeEnrollments(tx, [], MONITOR_WINDOW_MS));
    const now = ctx.clock.now();
    const prior: StoredMonitor | undefined = undefined;
    await t
      .inTx(async (tx) => {
        await store.writeEnrollments(
          tx,
          [
            {
              write: {
                id: 'enr-rolled-back',
                lenderId: lender.id,
                aid: 'rolled',
                amount: 1000,
                daysPastDue: 1,
                merchantRef: null,
                rail: 'ach',
                routing: '110000000',
                bankName: null,
                sealed: ctx.rt.vault.seal('{}'),
                metadata: null,
                cardTokenSealed: null,
                cardLast4: null,
                cardBrand: null,
                cfpbCovered: null,
                authorizationAt: null,
                authorizationRef: null,
                now,
              },
              prior,
              change: { state: 'monitored', reason: null, blockedReason: null, window: 'fresh', nextRead: 'now', payments: 'reset' },
            },
          ],
          MONITOR_WINDOW_MS,
        );
        expect((await store.monitorsOf(tx, lender.id, ['rolled'])).map((m) => m.state)).toEqual(['monitored']);
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    expect(await store.monitorsOf(storeCtx, lender.id, ['rolled'])).toEqual([]);
    expect(await store.currentMonitor(storeCtx, 'enr-rolled-back')).toBeUndefined();
  });

  test('dueLapses: monitored borrowers whose window has ended (at its end, not before), at most `limit`, -1 for all', async () => {
    const lender = ctx.newLender();
    // Three windows a minute apart, and a held borrower that has none. Earlier borrowers of this database may be
    // due as well: only ours are looked for.
    await enroll([enrollBorrower('lap-1'), enrollBorrower('lap-held', { routing_number: SANDBOX_UNSUPPORTED_BANK })], lender.key);
    const first = ctx.clock.now();
    ctx.clock.advance(60_000);
    await enroll([enrollBorrower('lap-2')], lender.key);
    ctx.clock.advance(60_000);
    await enroll([enrollBorrower('lap-3')], lender.key);
    const ids = {
      one: await idOf(lender.id, 'lap-1'),
      two: await idOf(lender.id, 'lap-2'),
      three: await idOf(lender.id, 'lap-3'),
      held: await idOf(lender.id, 'lap-held'),
    };
    const mine = (due: { id: string }[]) => due.map((d) => d.id).filter((id) => Object.values(ids).includes(id)).sort();

    expect(mine(await store.dueLapses(storeCtx, first + MONITOR_WINDOW_MS - 1, -1))).toEqual([]);
    const at = first + MONITOR_WINDOW_MS + 60_000;
    const all = await store.dueLapses(storeCtx, at, -1);
    expect(mine(all)).toEqual([ids.one, ids.two].sort());
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const d of all) expect(Object.keys(d)).toEqual(['id']);
    expect((await store.dueLapses(storeCtx, at, 1)).length).toBe(1);
    expect(await store.dueLapses(storeCtx, at, 0)).toEqual([]);

    // Lapsed by the job, they are due no more; the third lapses at its own end.
    ctx.clock.set(at);
    expect((await lapseDueMonitors(ctx.rt, 10_000)).lapsed).toBe(all.length);
    expect(await store.currentMonitor(storeCtx, ids.one)).toMatchObject({ state: 'lapsed', windowEndsAt: first + MONITOR_WINDOW_MS });
    expect((await columnsOf(ids.one)).next_read_at).toBeNull();
    expect(mine(await store.dueLapses(storeCtx, at, -1))).toEqual([]);
    expect(mine(await store.dueLapses(storeCtx, at + 60_000, -1))).toEqual([ids.three]);
    expect(await store.currentMonitor(storeCtx, ids.held)).toMatchObject({ state: 'held' });
  });
});
