// engine: sqlite
// What a store reads with. Inside a transaction (its ctx, or a call from inside the one its caller opened) a
// store reads on the transaction's connection and sees its writes; outside one it reads on the read-only
// second connection, which sees every committed write and none of a transaction still open across awaits.
import { afterAll, expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { transaction } from '../../src/platform/context';
import { readerOf } from '../../src/platform/sql/sqlite';

const c = createTestContext();
afterAll(() => c.close());

const lenderId = c.lender.id;
const policy = (noticeDays: number) => ({
  lenderId,
  cfpbCovered: false,
  maxReinitiations: 2,
  reinitiationAmount: 'current' as const,
  noticeDays,
  returnRatePause: true,
  readCadence: 'payday' as const,
  debitBufferCents: 0,
  timeZone: null,
  lateReturnWindowDays: 5,
  allowCurrentBalance: false,
  currentBalanceBufferCents: 0,
  maxBalanceAgeMinutes: 60,
  applyNotificationsOfChange: 'automatic' as const,
  requireAccountValidation: true,
  accountReturnStates: null,
  noticeChannel: null,
  regEElection: null,
  updatedAt: 1,
});

test('the reader is a second connection, read-only', () => {
  expect(c.rt.reader.$client).not.toBe(c.sql);
  expect(() => c.rt.reader.$client.query('CREATE TABLE nope (x INTEGER)').run()).toThrow(/readonly/i);
});

test('a read outside the transaction does not see its writes until it commits; one inside does', async () => {
  const outside = { deps: c.rt };
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let insideSaw: number | undefined;
  let insideWithoutCtx: number | undefined;
  let written!: () => void;
  const wrote = new Promise<void>((r) => (written = r));
  const open = transaction(outside, async (tx) => {
    await tx.deps.stores.collectionPolicy.savePolicy(tx, policy(7));
    insideSaw = (await tx.deps.stores.collectionPolicy.policyRow(tx, lenderId))?.noticeDays;
    // A function called from inside without the ctx still reads what its caller's transaction wrote.
    insideWithoutCtx = (await outside.deps.stores.collectionPolicy.policyRow(outside, lenderId))?.noticeDays;
    written();
    await held;
  });
  await wrote;
  // Another caller, while the transaction is open across an await: the committed state, not the open writes.
  expect(c.sql.inTransaction).toBe(true);
  expect(readerOf(outside)).toBe(c.rt.reader);
  expect(await outside.deps.stores.collectionPolicy.policyRow(outside, lenderId)).toBeUndefined();
  release();
  await open;
  expect(insideSaw).toBe(7);
  expect(insideWithoutCtx).toBe(7);
  expect((await outside.deps.stores.collectionPolicy.policyRow(outside, lenderId))?.noticeDays).toBe(7);
});

test('a rolled-back transaction leaves nothing for the reader', async () => {
  const outside = { deps: c.rt };
  await expect(
    transaction(outside, async (tx) => {
      await tx.deps.stores.collectionPolicy.savePolicy(tx, policy(9));
      throw new Error('refused');
    }),
  ).rejects.toThrow('refused');
  expect((await outside.deps.stores.collectionPolicy.policyRow(outside, lenderId))?.noticeDays).toBe(7);
});
