// engine: both
// What lives as long as one transaction (platform/tx-scope.ts). What a transaction counts is counted once it commits: dropped when it rolls back (a transaction PostgreSQL
// undoes in a deadlock and runs again counts its attempt that stood, once), dropped with a savepoint rolled
// back, never by a read snapshot; and a payment event recorded in a transaction that is undone is not counted
// in payment_events_total. What a transaction reads once for all its steps is read once in it, read again in
// the next, and forgotten by the step that writes it and when a savepoint is rolled back.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { enrollBorrower } from '../helpers/fixtures';
import { afterCommit, forget, readSnapshot, remembered, savepoint, transaction } from '../../src/platform/context';
import { recordSlice } from '../../src/modules/collection/record';

const c = createTestContext();
afterAll(() => c.close());

/** A turn of the event loop: the transaction stays open across it. */
const turn = () => new Promise((r) => setImmediate(r));

describe('afterCommit', () => {
  test('runs after the commit, in the order given; a nested transaction’s wait for the outer commit', async () => {
    const ran: string[] = [];
    const result = await transaction({ deps: c.rt }, async (tx) => {
      afterCommit(tx, () => ran.push('first'));
      await turn();
      // A service called inside joins the transaction: its hooks wait for the same commit.
      await transaction(tx, async (inner) => afterCommit(inner, () => ran.push('nested')));
      afterCommit(tx, () => ran.push('last'));
      expect(ran).toEqual([]);
      return 'done';
    });
    expect(result).toBe('done');
    expect(ran).toEqual(['first', 'nested', 'last']);
  });

  test('a transaction rolled back runs none; the next transaction starts with none', async () => {
    const ran: string[] = [];
    await expect(
      transaction({ deps: c.rt }, async (tx) => {
        afterCommit(tx, () => ran.push('undone'));
        await turn();
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    await transaction({ deps: c.rt }, async (tx) => afterCommit(tx, () => ran.push('committed')));
    expect(ran).toEqual(['committed']);
  });

  test('a savepoint rolled back drops its own hooks, nested ones included; those before and after it run', async () => {
    const ran: string[] = [];
    await transaction({ deps: c.rt }, async (tx) => {
      afterCommit(tx, () => ran.push('before'));
      await savepoint(tx, async () => afterCommit(tx, () => ran.push('kept')));
      await savepoint(tx, async () => {
        afterCommit(tx, () => ran.push('inner kept'));
        await expect(
          savepoint(tx, async () => {
            afterCommit(tx, () => ran.push('inner dropped'));
            await turn();
            throw new Error('inner');
          }),
        ).rejects.toThrow('inner');
      });
      await expect(
        savepoint(tx, async () => {
          afterCommit(tx, () => ran.push('dropped'));
          throw new Error('outer');
        }),
      ).rejects.toThrow('outer');
      afterCommit(tx, () => ran.push('after'));
    });
    expect(ran).toEqual(['before', 'kept', 'inner kept', 'after']);
  });

  test('a read snapshot commits nothing: its hooks never run, alone or inside a transaction', async () => {
    const ran: string[] = [];
    await readSnapshot({ deps: c.rt }, async (tx) => afterCommit(tx, () => ran.push('alone')));
    await transaction({ deps: c.rt }, async (tx) => {
      await readSnapshot(tx, async (snap) => afterCommit(snap, () => ran.push('inside')));
      afterCommit(tx, () => ran.push('committed'));
    });
    expect(ran).toEqual(['committed']);
  });

  test('outside a transaction it runs at once', () => {
    const ran: string[] = [];
    afterCommit({}, () => ran.push('now'));
    expect(ran).toEqual(['now']);
  });
});

describe('remembered', () => {
  test('read once a transaction, its steps side by side included; read again in the next, and each time outside one', async () => {
    let reads = 0;
    const read = async () => {
      await turn();
      return ++reads;
    };
    const inFirst = await transaction({ deps: c.rt }, async (tx) => Promise.all([remembered(tx, 'k', read), remembered(tx, 'k', read), remembered(tx, 'other', read)]));
    expect(inFirst.slice(0, 2)).toEqual([1, 1]);
    expect(reads).toBe(2);
    expect(await transaction({ deps: c.rt }, (tx) => remembered(tx, 'k', read))).toBe(3);
    expect(await remembered({}, 'k', read)).toBe(4);
    expect(await remembered({}, 'k', read)).toBe(5);
  });

  test('forgotten by the step that writes it, when a savepoint is rolled back, and when a read fails', async () => {
    let value = 'before';
    const read = async () => value;
    await transaction({ deps: c.rt }, async (tx) => {
      expect(await remembered(tx, 'k', read)).toBe('before');
      value = 'written';
      expect(await remembered(tx, 'k', read)).toBe('before');
      forget(tx, 'k');
      expect(await remembered(tx, 'k', read)).toBe('written');
      await expect(
        savepoint(tx, async () => {
          value = 'undone';
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await remembered(tx, 'k', read)).toBe('undone');
      await expect(remembered(tx, 'failing', async () => Promise.reject(new Error('no answer')))).rejects.toThrow('no answer');
      expect(await remembered(tx, 'failing', read)).toBe('undone');
    });
  });
});

describe('payment events counted', () => {
  test('an event recorded in a transaction that is undone is not counted; recorded again and committed, it is counted once', async () => {
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_commit_hooks_000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('counted-1')] } })).status).toBe(207);
    const [e] = await c.rows<{ id: string }>('SELECT id FROM enrollments WHERE authorizer_unique_id = ?', 'counted-1');
    const counted = async () => (await c.rt.metrics.paymentEvents.get()).values.filter((v) => v.labels.source === 'upload').reduce((n, v) => n + v.value, 0);
    const before = await counted();
    // A lender's report of a payment made elsewhere: an event of its own reference, no payment of the service.
    const observation = {
      lenderId: c.lender.id,
      reference: 'ELSEWHERE-1',
      status: 'settled' as const,
      amountCents: 1000,
      returnCode: null,
      message: null,
      occurredAt: c.clock.now(),
      source: 'upload' as const,
      sourceEventId: 'upload:ELSEWHERE-1:settled',
      enrollmentId: e!.id,
      authorizerUniqueId: 'counted-1',
      paymentId: null,
      connectionId: null,
    };
    await expect(
      transaction({ deps: c.rt }, async (tx) => {
        const [r] = await recordSlice(tx, [observation]);
        expect(r?.recorded).toBe(true);
        throw new Error('undone after the slice');
      }),
    ).rejects.toThrow('undone after the slice');
    expect(await c.rows('SELECT id FROM payment_events WHERE reference = ?', 'ELSEWHERE-1')).toEqual([]);
    expect(await counted()).toBe(before);

    const [r] = await transaction({ deps: c.rt }, (tx) => recordSlice(tx, [observation]));
    expect(r?.recorded).toBe(true);
    expect(await c.rows('SELECT id FROM payment_events WHERE reference = ?', 'ELSEWHERE-1')).toHaveLength(1);
    expect(await counted()).toBe(before + 1);
  });
});
