// A flush of balance results decides for all its borrowers with what it read of them at once
// (collection/decide.ts decideCollections). A borrower read twice in one flush is decided alone each time, so
// the second decision sees the payment the first created: one debit, never two. (Were it decided on what was
// read before the first, the index payments_in_flight_uq would still refuse a second payment in flight, and
// the flush would be written again result by result: the test also checks the flush read as it should.)
import { expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';

const ctx = useTestContext({}, { clockAt: '2026-11-23T15:00:00.000Z' });

const rows = <T>(sql: string, ...params: string[]) => ctx.sql.query(sql).all(...params) as T[];

test('a borrower read twice in one flush, its balance covering the amount each time: one payment', async () => {
  expect((await ctx.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_flush_twice_00001', rail_scope: 'both', is_default: true } })).status).toBe(201);
  const borrowers = ['twice', 'alone-1', 'alone-2'].map((id) => enrollBorrower(id, { account_number: '0001234567', collectable_amount: 42500 }));
  expect((await ctx.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
  // The first reads queued, not read yet; a second read of one borrower queued beside them.
  expect((await queueDueReads(ctx.rt)).queued).toBe(3);
  expect((await ctx.json('POST', '/v1/payment_enrollments/twice/read')).status).toBe(202);
  // What the flush asks of the decisions store is watched (each call goes through): the borrowers read once.
  const store = ctx.rt.stores.decisions;
  const asked: string[][] = [];
  const decisionInputsOf = store.decisionInputsOf;
  store.decisionInputsOf = (c, ids) => {
    asked.push([...ids]);
    return decisionInputsOf.call(store, c, ids);
  };
  // Read and recorded in one run: four results, one flush.
  try {
    await processBalances(ctx.rt);
  } finally {
    store.decisionInputsOf = decisionInputsOf;
  }
  const idOf = (aid: string) => rows<{ id: string }>('SELECT id FROM enrollments WHERE authorizer_unique_id = ?', aid)[0]!.id;
  // One flush, which read the two borrowers read once together and left the one read twice to decide alone.
  expect(asked).toEqual([[idOf('alone-1'), idOf('alone-2')].sort()].map((ids) => expect.arrayContaining(ids)));
  expect(asked[0]).toHaveLength(2);
  const results = rows<{ aid: string; n: number }>('SELECT authorizer_unique_id AS aid, COUNT(*) AS n FROM balance_results GROUP BY authorizer_unique_id ORDER BY aid');
  expect(results).toEqual([
    { aid: 'alone-1', n: 1 },
    { aid: 'alone-2', n: 1 },
    { aid: 'twice', n: 2 },
  ]);
  const payments = rows<{ aid: string; n: number }>('SELECT authorizer_unique_id AS aid, COUNT(*) AS n FROM payments GROUP BY authorizer_unique_id ORDER BY aid');
  expect(payments).toEqual([
    { aid: 'alone-1', n: 1 },
    { aid: 'alone-2', n: 1 },
    { aid: 'twice', n: 1 },
  ]);
  const [used] = rows<{ n: number }>("SELECT payments_used AS n FROM enrollments WHERE authorizer_unique_id = 'twice'");
  expect(used!.n).toBe(1);
});
