// engine: both
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SANDBOX_KEY_PATTERN, SandboxProcessor } from '../../../src/adapters/processors/sandbox';
import {
  CardRefused,
  KeyRefused,
  ProcessorUnavailable,
  type DebitRequest,
  type Processor,
  type ProcessorChange,
  type Rail,
} from '../../../src/adapters/processors/types';
import { FakeClock } from '../../../src/platform/clock';
import { openDatabase, type DbHandle } from '../../../src/platform/db';
import { newId } from '../../../src/platform/ids';
import { sqliteTransaction } from '../../../src/platform/transactions.sqlite';

const SETTLE = 60_000;
const KEY = 'sbx_test_0123456789abcdef';
const OTHER_KEY = 'sbx_other_0123456789abcdef';

const dirs: string[] = [];
const handles: DbHandle[] = [];
afterAll(() => {
  for (const h of handles.splice(0)) h.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A sandbox on a fresh SQLite file with the real migrations, and a clock the test moves. */
function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'drs-sandbox-test-'));
  dirs.push(dir);
  const file = join(dir, 'service.sqlite');
  const clock = new FakeClock(Date.UTC(2026, 2, 1, 12));
  const open = () => {
    const h = openDatabase(file);
    handles.push(h);
    // No outage for cents 88 here: its own tests set one.
    const processor: Processor = new SandboxProcessor({ sqlite: h.sqlite, clock, settlementMs: SETTLE, outageMs: 0 });
    return { h, processor };
  };
  return { file, clock, open, ...open() };
}

const debit = (amountCents: number, rail: Rail, paymentId = newId()): DebitRequest => ({
  paymentId,
  reference: `DRS-b1-${paymentId}`,
  amountCents,
  rail,
  instrument: rail === 'ach' ? { kind: 'bank_account', routingNumber: '110000000', accountNumber: '0001234567' } : { kind: 'token', token: 'sbxpm_test' },
  borrower: { name: 'Test Borrower' },
});

/** Reads every change after the cursor, page by page; returns them and the cursor to resume from. */
async function drain(p: Processor, key: string, cursor: string | null, limit = 500) {
  const changes: ProcessorChange[] = [];
  for (;;) {
    const page = await p.listChanges(key, cursor, { limit });
    changes.push(...page.changes);
    cursor = page.nextCursor;
    if (!page.hasMore) return { changes, cursor };
  }
}

const show = (cs: ProcessorChange[]) => cs.map((c) => (c.returnCode ? `${c.status} ${c.returnCode}` : c.status));

// What a poller sees: at creation (before settlement), after one settlement period, after two.
type Seen = [string[], string[], string[]];
const EXPECTED: Record<Rail, Record<number, Seen>> = {
  ach: {
    0: [['processing'], ['settled'], []],
    45: [['processing'], ['settled'], []],
    89: [['processing'], ['settled'], []],
    90: [['processing'], ['settled'], []],
    91: [['processing'], ['returned R01'], []],
    92: [['processing'], ['returned R09'], []],
    93: [['processing'], ['returned R02'], []],
    94: [['processing'], ['returned R10'], []],
    95: [['processing'], ['settled'], ['late_returned R10']],
    96: [['invalid'], [], []],
    97: [['processing'], [], []],
    98: [['processing'], ['settled'], []],
    99: [['processing'], ['settled'], ['late_returned R01']],
  },
  card: {
    0: [['settled'], [], []],
    45: [['settled'], [], []],
    // A card reported stolen: declined, never to be retried.
    89: [['invalid'], [], []],
    90: [['settled'], [], []],
    91: [['returned R01'], [], []],
    92: [['returned R09'], [], []],
    93: [['invalid'], [], []],
    94: [['invalid'], [], []],
    95: [['settled'], ['late_returned R10'], []],
    96: [['invalid'], [], []],
    97: [['processing'], [], []],
    98: [['settled'], [], []],
    99: [['settled'], ['late_returned R01'], []],
  },
};

describe('the outcome table, by the cents of the amount', () => {
  for (const rail of ['ach', 'card'] as const) {
    for (const [centsText, [atCreation, afterOne, afterTwo]] of Object.entries(EXPECTED[rail])) {
      const cents = Number(centsText);
      test(`${rail} ${String(cents).padStart(2, '0')}: ${[...atCreation, ...afterOne, ...afterTwo].join(' → ')}`, async () => {
        const { processor, clock } = setup();
        const req = debit(12_300 + cents, rail);
        const createdAt = clock.now();
        if (cents === 98) await expect(processor.createDebit(KEY, req)).rejects.toBeInstanceOf(ProcessorUnavailable);
        const result = await processor.createDebit(KEY, req);
        expect(result.processorPaymentId).toMatch(/^sbxpay_/);
        expect(result.returnCode ? `${result.status} ${result.returnCode}` : result.status).toBe(atCreation[0]!);

        let read = await drain(processor, KEY, null);
        expect(show(read.changes)).toEqual(atCreation);
        clock.advance(SETTLE - 1); // nothing moves before the settlement period is over
        read = await drain(processor, KEY, read.cursor);
        expect(read.changes).toEqual([]);
        clock.advance(1);
        read = await drain(processor, KEY, read.cursor);
        expect(show(read.changes)).toEqual(afterOne);
        for (const c of read.changes) expect(c.occurredAt).toBe(createdAt + SETTLE);
        clock.advance(SETTLE);
        read = await drain(processor, KEY, read.cursor);
        expect(show(read.changes)).toEqual(afterTwo);
        for (const c of read.changes) expect(c.occurredAt).toBe(createdAt + 2 * SETTLE);
        clock.advance(30 * SETTLE); // and nothing after that, ever
        expect((await drain(processor, KEY, read.cursor)).changes).toEqual([]);
      });
    }
  }

  for (const rail of ['ach', 'card'] as const) {
    test(`${rail}: all 100 cents values fall in their class, on one feed`, async () => {
      const { processor, clock } = setup();
      const byPayment = new Map<string, number>();
      for (let cents = 0; cents < 100; cents++) {
        const req = debit(100_000 + cents, rail);
        if (cents === 98) await processor.createDebit(KEY, req).catch(() => undefined);
        byPayment.set((await processor.createDebit(KEY, req)).processorPaymentId!, cents);
      }
      let cursor: string | null = null;
      for (let stage = 0; stage < 3; stage++) {
        const read = await drain(processor, KEY, cursor, 37);
        cursor = read.cursor;
        const seen = new Map<number, ProcessorChange[]>();
        for (const c of read.changes) {
          const cents = byPayment.get(c.processorPaymentId)!;
          seen.set(cents, [...(seen.get(cents) ?? []), c]);
        }
        for (let cents = 0; cents < 100; cents++) {
          expect([cents, show(seen.get(cents) ?? [])]).toEqual([cents, EXPECTED[rail][cents <= 90 && cents !== 89 ? 0 : cents]![stage]]);
        }
        clock.advance(SETTLE);
      }
    });
  }

  test('every change carries the payment, its reference and amount; codes only on returns', async () => {
    const { processor, clock } = setup();
    const req = debit(5_099, 'ach');
    const { processorPaymentId } = await processor.createDebit(KEY, req);
    clock.advance(3 * SETTLE);
    const { changes } = await drain(processor, KEY, null);
    expect(changes.map((c) => c.status)).toEqual(['processing', 'settled', 'late_returned']);
    const seqs = new Set(changes.map((c) => c.sourceEventId));
    expect(seqs.size).toBe(3);
    for (const c of changes) {
      expect(c.sourceEventId).toMatch(/^sbxevt_\d+$/);
      expect(c.processorPaymentId).toBe(processorPaymentId!);
      expect(c.reference).toBe(req.reference);
      expect(c.amountCents).toBe(5_099);
      expect(c.returnCode).toBe(c.status === 'late_returned' ? 'R01' : null);
    }
    expect(changes[2]!.message).toBe('Insufficient funds');
  });

  test('a lazily materialised feed keeps time order across payments', async () => {
    const { processor, clock } = setup();
    await processor.createDebit(KEY, debit(1_000, 'ach')); // settles at T+60s
    clock.advance(SETTLE / 2);
    await processor.createDebit(KEY, debit(2_000, 'ach')); // settles at T+90s
    clock.advance(10 * SETTLE);
    const { changes } = await drain(processor, KEY, null);
    expect(changes.map((c) => `${c.amountCents} ${c.status}`)).toEqual(['1000 processing', '2000 processing', '1000 settled', '2000 settled']);
    const times = changes.map((c) => c.occurredAt);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
});

describe('createDebit idempotency', () => {
  test('a repeated paymentId returns the first result and creates nothing', async () => {
    const { processor, h } = setup();
    const req = debit(4_200, 'ach');
    const first = await processor.createDebit(KEY, req);
    const again = await processor.createDebit(KEY, req);
    const changedAmount = await processor.createDebit(KEY, { ...req, amountCents: 4_291 });
    expect(again).toEqual(first);
    expect(changedAmount).toEqual(first);
    expect(h.sqlite.query('SELECT COUNT(*) AS n FROM sandbox_payments').get()).toEqual({ n: 1 });
    expect((await drain(processor, KEY, null)).changes).toHaveLength(1);
  });

  test('98: the first attempt of each key fails transiently and leaves nothing; the retry succeeds once', async () => {
    const { processor, h } = setup();
    const req = debit(98, 'card');
    const e = await processor.createDebit(KEY, req).catch((x) => x);
    expect(e).toBeInstanceOf(ProcessorUnavailable);
    expect(h.sqlite.query('SELECT COUNT(*) AS n FROM sandbox_payments').get()).toEqual({ n: 0 });
    expect((await drain(processor, KEY, null)).changes).toEqual([]);
    const ok = await processor.createDebit(KEY, req);
    expect(ok.status).toBe('settled');
    expect(await processor.createDebit(KEY, req)).toEqual(ok);
    // Each idempotency key gets its own first failure; the same payment id under another key is another payment.
    await expect(processor.createDebit(KEY, debit(198, 'card'))).rejects.toBeInstanceOf(ProcessorUnavailable);
    await expect(processor.createDebit(OTHER_KEY, req)).rejects.toBeInstanceOf(ProcessorUnavailable);
  });

  test('a card charge drawn on a bank account is refused as invalid', async () => {
    const { processor } = setup();
    const result = await processor.createDebit(KEY, { ...debit(1_000, 'card'), instrument: debit(1, 'ach').instrument });
    expect(result.status).toBe('invalid');
    expect(result.message).toContain('card token');
  });
});

describe('the change feed cursor', () => {
  test('small pages resume without repeats or gaps, and an empty read keeps the cursor', async () => {
    const { processor, clock } = setup();
    for (let i = 0; i < 7; i++) await processor.createDebit(KEY, debit(1_000 + i, 'ach'));
    clock.advance(SETTLE);
    const seen: ProcessorChange[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const page = await processor.listChanges(KEY, cursor, { limit: 3 });
      expect(page.changes.length).toBeLessThanOrEqual(3);
      seen.push(...page.changes);
      cursor = page.nextCursor;
      pages++;
      if (!page.hasMore) break;
    }
    expect(pages).toBe(5); // 14 changes in pages of 3
    expect(seen).toHaveLength(14);
    expect(new Set(seen.map((c) => c.sourceEventId)).size).toBe(14);
    const seqs = seen.map((c) => Number(c.sourceEventId.slice('sbxevt_'.length)));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const empty = await processor.listChanges(KEY, cursor, { limit: 3 });
    expect(empty).toEqual({ changes: [], nextCursor: cursor, hasMore: false });
    // New changes appear after the cursor, and only they.
    await processor.createDebit(KEY, debit(2_000, 'card'));
    const next = await processor.listChanges(KEY, cursor);
    expect(next.changes.map((c) => c.amountCents)).toEqual([2_000]);
  });

  test('two keys are two accounts: neither sees the other', async () => {
    const { processor } = setup();
    await processor.createDebit(KEY, debit(1_000, 'card'));
    await processor.createDebit(OTHER_KEY, debit(2_000, 'card'));
    expect((await drain(processor, KEY, null)).changes.map((c) => c.amountCents)).toEqual([1_000]);
    expect((await drain(processor, OTHER_KEY, null)).changes.map((c) => c.amountCents)).toEqual([2_000]);
  });

  test('payments and events survive reopening the database file; the key is never stored', async () => {
    const first = setup();
    const req = debit(7_700, 'ach');
    const created = await first.processor.createDebit(KEY, req);
    const before = await drain(first.processor, KEY, null);
    first.h.close();
    handles.splice(handles.indexOf(first.h), 1);

    const { h, processor } = first.open();
    expect(await processor.createDebit(KEY, req)).toEqual(created); // still idempotent after a restart
    first.clock.advance(SETTLE);
    const after = await drain(processor, KEY, before.cursor);
    expect(show(after.changes)).toEqual(['settled']);
    expect((await drain(processor, KEY, null)).changes.map((c) => c.sourceEventId)).toEqual([
      ...before.changes.map((c) => c.sourceEventId),
      ...after.changes.map((c) => c.sourceEventId),
    ]);
    const accounts = h.sqlite.query('SELECT DISTINCT account FROM sandbox_payments').all() as { account: string }[];
    expect(accounts).toHaveLength(1);
    expect(accounts[0]!.account).toMatch(/^[0-9a-f]{64}$/);
    expect(accounts[0]!.account).not.toContain(KEY.slice(4));
  });
});

describe('keys', () => {
  const { processor } = setup();

  test('a well-formed sandbox key is accepted', async () => {
    expect(SANDBOX_KEY_PATTERN.test(KEY)).toBe(true);
    await processor.verifyKey(KEY);
  });

  test('a key containing _refused is refused, on every call', async () => {
    const refused = 'sbx_test_refused_0123456789';
    await expect(processor.verifyKey(refused)).rejects.toBeInstanceOf(KeyRefused);
    await expect(processor.listChanges(refused, null)).rejects.toBeInstanceOf(KeyRefused);
    await expect(processor.createDebit(refused, debit(100, 'ach'))).rejects.toBeInstanceOf(KeyRefused);
  });

  test('a malformed key is refused without echoing it', async () => {
    for (const bad of ['sbx_short', 'sk_test_0123456789abcdef', 'sbx_0123456789abcdef-!', '']) {
      const e = await processor.verifyKey(bad).catch((x) => x);
      expect(e).toBeInstanceOf(KeyRefused);
      if (bad) expect((e as Error).message).not.toContain(bad);
    }
  });
});

describe('tokenizeCard', () => {
  const { processor, h, clock } = setup();
  const card = (number: string, expMonth = 12, expYear = 2030) => ({ number, cvv: '123', expMonth, expYear });

  test('a valid card becomes a token; only last4, brand and expiry are kept', async () => {
    const t = await processor.tokenizeCard(KEY, card('4111 1111 1111 1111'));
    expect(t).toEqual({ token: expect.stringMatching(/^sbxpm_[0-9A-Za-z]+$/), last4: '1111', brand: 'visa', funding: 'debit', expMonth: 12, expYear: 2030 });
    expect((await processor.tokenizeCard(KEY, card('5555555555554444'))).brand).toBe('mastercard');
    expect((await processor.tokenizeCard(KEY, card('378282246310005'))).brand).toBe('unknown');
    const stored = JSON.stringify(h.sqlite.query('SELECT * FROM sandbox_cards').all());
    expect(stored).not.toContain('4111111111111111');
    expect(stored).not.toContain('5555555555554444');
  });

  test('a number failing Luhn is refused, without the number in the message', async () => {
    const e = await processor.tokenizeCard(KEY, card('4111111111111112')).catch((x) => x);
    expect(e).toBeInstanceOf(CardRefused);
    expect(e.message).toContain('Luhn');
    expect(e.message).not.toContain('4111');
  });

  test('a card is good through its expiry month, by the clock', async () => {
    const month = new Date(clock.now()).getUTCMonth() + 1;
    const year = new Date(clock.now()).getUTCFullYear();
    await processor.tokenizeCard(KEY, card('4242424242424242', month, year));
    const prev = month === 1 ? [12, year - 1] : [month - 1, year];
    const e = await processor.tokenizeCard(KEY, card('4242424242424242', prev[0]!, prev[1]!)).catch((x) => x);
    expect(e).toBeInstanceOf(CardRefused);
    expect(e.message).toContain('expired');
    await expect(processor.tokenizeCard(KEY, card('4242424242424242', 13, 2030))).rejects.toBeInstanceOf(CardRefused);
  });

  test('a card tokenized while another caller’s transaction is open is stored in its own: it stays when that one is rolled back', async () => {
    let opened!: () => void;
    const isOpen = new Promise<void>((r) => (opened = r));
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    // The service's own transaction on the same connection, open across an await, and rolled back.
    const other = sqliteTransaction(h.db, {}, async () => {
      opened();
      await finished;
      throw new Error('rolled back');
    });
    await isOpen;
    const tokenized = processor.tokenizeCard(KEY, card('4000056655665556'));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    finish();
    await expect(other).rejects.toThrow('rolled back');
    const t = await tokenized;
    expect(h.sqlite.query('SELECT last4 FROM sandbox_cards WHERE token = ?').get(t.token)).toEqual({ last4: '5556' });
  });
});
