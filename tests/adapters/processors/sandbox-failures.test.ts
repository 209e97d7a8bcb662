// engine: both
// The sandbox behaves like a processor under failure, so the service's handling of unknown outcomes can be
// tested black box: idempotency keys that expire, an outage that hides a payment it did create (cents 88),
// change-feed retention, and look-ups by our payment id.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxProcessor, type SandboxOptions } from '../../../src/adapters/processors/sandbox';
import { ProcessorUnavailable, type DebitRequest } from '../../../src/adapters/processors/types';
import { DAY_MS, FakeClock } from '../../../src/platform/clock';
import { openDatabase, type DbHandle } from '../../../src/platform/db';
import { newId } from '../../../src/platform/ids';

const KEY = 'sbx_failures_0123456789ab';
const SETTLE = 60_000;
const dirs: string[] = [];
const handles: DbHandle[] = [];
afterAll(() => {
  for (const h of handles.splice(0)) h.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function setup(opts: Partial<Omit<SandboxOptions, 'sqlite' | 'clock'>> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'drs-sandbox-failures-'));
  dirs.push(dir);
  const h = openDatabase(join(dir, 'service.sqlite'));
  handles.push(h);
  const clock = new FakeClock(Date.UTC(2026, 5, 1, 12));
  const sandbox = new SandboxProcessor({ sqlite: h.sqlite, clock, settlementMs: SETTLE, ...opts });
  const count = (paymentId: string) =>
    (h.sqlite.query('SELECT COUNT(*) AS n FROM sandbox_payments WHERE idempotency_key = ?').get(paymentId) as { n: number }).n;
  return { h, clock, sandbox, count };
}

const debit = (amountCents: number, paymentId = newId()): DebitRequest => ({
  paymentId,
  reference: `DRS-b1-${paymentId}`,
  amountCents,
  rail: 'ach',
  instrument: { kind: 'bank_account', routingNumber: '110000000', accountNumber: '0001234567' },
  borrower: { name: 'Test Borrower' },
});

describe('SANDBOX_IDEMPOTENCY_TTL_MS', () => {
  test('within the TTL a reused key answers the first payment; after it, a reused key makes a new payment', async () => {
    const { clock, sandbox, count } = setup({ idempotencyTtlMs: DAY_MS });
    const req = debit(1000);
    const first = await sandbox.createDebit(KEY, req);
    clock.advance(DAY_MS - 1);
    expect((await sandbox.createDebit(KEY, req)).processorPaymentId).toBe(first.processorPaymentId);
    expect(count(req.paymentId)).toBe(1);
    clock.advance(1);
    const late = await sandbox.createDebit(KEY, req);
    expect(late.processorPaymentId).not.toBe(first.processorPaymentId);
    expect(count(req.paymentId)).toBe(2);
  });
});

describe('cents 88: created, then every answer about it is a 503 until SANDBOX_OUTAGE_MS has passed', () => {
  test('creation, replays, look-ups, listings and the key’s feed fail; then it settles as 00', async () => {
    const { clock, sandbox, count } = setup({ outageMs: 30_000 });
    const req = debit(1088);
    await expect(sandbox.createDebit(KEY, req)).rejects.toBeInstanceOf(ProcessorUnavailable);
    // It exists at the processor all the same.
    expect(count(req.paymentId)).toBe(1);
    const window = { paymentId: req.paymentId, createdFrom: clock.now() - 1000, createdTo: clock.now() + 1000 };
    clock.advance(29_999);
    await expect(sandbox.createDebit(KEY, req)).rejects.toBeInstanceOf(ProcessorUnavailable);
    await expect(sandbox.findPayment(KEY, window)).rejects.toBeInstanceOf(ProcessorUnavailable);
    await expect(sandbox.listPayments(KEY, { createdFrom: 0, createdTo: clock.now(), page: null })).rejects.toBeInstanceOf(ProcessorUnavailable);
    await expect(sandbox.listChanges(KEY, null)).rejects.toBeInstanceOf(ProcessorUnavailable);
    clock.advance(1);
    const replay = await sandbox.createDebit(KEY, req);
    expect(replay.status).toBe('processing');
    expect(count(req.paymentId)).toBe(1);
    expect(await sandbox.findPayment(KEY, window)).toMatchObject({ found: true, processorPaymentId: replay.processorPaymentId, status: 'processing' });
    clock.advance(SETTLE);
    expect(await sandbox.findPayment(KEY, window)).toMatchObject({ found: true, status: 'settled' });
    const feed = await sandbox.listChanges(KEY, null);
    expect(feed.changes.map((c) => c.status)).toEqual(['processing', 'settled']);
  });
});

describe('SANDBOX_EVENT_RETENTION_MS', () => {
  test('changes older than the retention leave the feed; a cursor before them is lost, and the feed goes on from the newest', async () => {
    const { clock, sandbox } = setup({ eventRetentionMs: 10 * DAY_MS });
    const a = await sandbox.createDebit(KEY, debit(1000));
    const first = await sandbox.listChanges(KEY, null);
    expect(first.changes.map((c) => c.processorPaymentId)).toEqual([a.processorPaymentId!]);
    // A return (cents 91) while nobody reads the feed for longer than the retention.
    const b = await sandbox.createDebit(KEY, debit(1091));
    clock.advance(11 * DAY_MS);
    const lost = await sandbox.listChanges(KEY, first.nextCursor);
    expect(lost.cursorLost).toBe(true);
    expect(lost.changes).toEqual([]);
    // Reading on from the newest change gives only what happens next.
    const c = await sandbox.createDebit(KEY, debit(1000));
    const next = await sandbox.listChanges(KEY, lost.nextCursor);
    expect(next.cursorLost).toBeUndefined();
    expect(next.changes.map((x) => x.processorPaymentId)).toEqual([c.processorPaymentId!]);
    // What was lost is still there to list: the return of b.
    const listed = await sandbox.listPayments(KEY, { createdFrom: 0, createdTo: clock.now(), page: null });
    expect(listed.payments.find((p) => p.processorPaymentId === b.processorPaymentId)).toMatchObject({ status: 'returned', returnCode: 'R01' });
    // A new key's first read starts from what is kept.
    expect((await sandbox.listChanges(KEY, null)).changes.map((x) => x.processorPaymentId)).toEqual([c.processorPaymentId!]);
  });
});

describe('look-ups by the service’s payment id', () => {
  test('findPayment: found with its current status, or definitely none; only inside the time window', async () => {
    const { clock, sandbox } = setup();
    const req = debit(1091);
    const created = await sandbox.createDebit(KEY, req);
    const at = clock.now();
    expect(await sandbox.findPayment(KEY, { paymentId: req.paymentId, createdFrom: at - 1, createdTo: at + 1 })).toMatchObject({
      found: true,
      processorPaymentId: created.processorPaymentId,
      status: 'processing',
    });
    clock.advance(SETTLE);
    expect(await sandbox.findPayment(KEY, { paymentId: req.paymentId, createdFrom: at - 1, createdTo: at + 1 })).toMatchObject({ status: 'returned', returnCode: 'R01' });
    expect(await sandbox.findPayment(KEY, { paymentId: newId(), createdFrom: 0, createdTo: clock.now() })).toEqual({ found: false });
    expect(await sandbox.findPayment(KEY, { paymentId: req.paymentId, createdFrom: at + 1, createdTo: at + 10 })).toEqual({ found: false });
    // Another account does not see it.
    expect(await sandbox.findPayment('sbx_someone_else_0123456789', { paymentId: req.paymentId, createdFrom: 0, createdTo: clock.now() })).toEqual({ found: false });
  });

  test('listPayments pages through every payment once, by creation time, with our payment ids', async () => {
    const { clock, sandbox } = setup();
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const req = debit(1000 + (i % 3));
      ids.push(req.paymentId);
      await sandbox.createDebit(KEY, req);
      if (i % 4 === 0) clock.advance(1000);
    }
    const seen: string[] = [];
    for (let page: string | null = null, first = true; first || page; first = false) {
      const r = await sandbox.listPayments(KEY, { createdFrom: 0, createdTo: clock.now(), page, limit: 7 });
      expect(r.payments.length).toBeLessThanOrEqual(7);
      seen.push(...r.payments.map((p) => p.paymentId!));
      page = r.next;
    }
    expect(seen).toHaveLength(ids.length);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  test('verifyKey names the key’s account: the same for the same key, another for another key', async () => {
    const { sandbox } = setup();
    const a = await sandbox.verifyKey(KEY);
    expect(a.accountId).toMatch(/^sbxacct_[0-9a-f]{32}$/);
    expect(await sandbox.verifyKey(KEY)).toEqual(a);
    expect((await sandbox.verifyKey('sbx_someone_else_0123456789')).accountId).not.toBe(a.accountId);
  });
});
