// The built-in sandbox processor: deterministic, stateful in its own `sandbox_*` tables, time from the
// service's clock. The cents part of the amount picks the outcome (docs: payments.md, "Sandbox processor").
//
// Future statuses are stored as scheduled transitions and appended to the change feed lazily, when a call
// for that account finds their time has come (at the start of listChanges and createDebit). Each event keeps
// its scheduled time as occurred_at, so the feed reads the same however late it is polled.
import type { Database, Statement } from 'bun:sqlite';
import { writeAlone } from '../../platform/tx-lock';
import { createHash } from 'node:crypto';
import type { Clock } from '../../platform/clock';
import { newId, randomBase62 } from '../../platform/ids';
import { RETURN_CODES } from './return-codes';
import {
  CardRefused,
  KeyRefused,
  ProcessorUnavailable,
  type ChangePage,
  type DebitRequest,
  type DebitResult,
  type EventStatus,
  type FoundPayment,
  type ListedPayment,
  type PaymentPage,
  type Processor,
  type ProcessorChange,
  type Rail,
  type RawCard,
  type TokenizedCard,
} from './types';

export const SANDBOX_KEY_PATTERN = /^sbx_[A-Za-z0-9_]{16,}$/;

const DEFAULT_LIMIT = 500;
const MAX_LIMIT = 10_000;

interface Step {
  status: EventStatus;
  returnCode: string | null;
  message: string | null;
  declineCode?: string;
  /** Settlement periods after creation; 0 = the creation status itself. */
  after: number;
}

const step = (status: EventStatus, after: number, returnCode: string | null = null, message?: string): Step => ({
  status,
  after,
  returnCode,
  message: message ?? (returnCode ? RETURN_CODES[returnCode]!.description : null),
});

/**
 * The outcome table, by the cents part of the amount. ACH debits always start `processing` (a bank debit is
 * never final at creation) except 96, refused outright for bad account details; ACH returns come one
 * settlement period after creation, and the late returns of 95/99 one period after settling. Card charges
 * are decided at once: 95/99 start `settled` and are late-returned one period later.
 */
export function sandboxOutcome(amountCents: number, rail: Rail): Step[] {
  const cents = amountCents % 100;
  const ach = rail === 'ach';
  if (cents === 96) return [step('invalid', 0, null, ach ? 'bad account details' : 'card details invalid')];
  // A card reported stolen: a decline that must never be retried. ACH: as 00.
  if (cents === 89 && !ach) return [{ ...step('invalid', 0, null, 'card declined: the card is reported stolen'), declineCode: 'stolen_card' }];
  if (cents === 97) return [step('processing', 0)];
  if (cents === 95 || cents === 99) {
    const code = cents === 95 ? 'R10' : 'R01';
    return ach
      ? [step('processing', 0), step('settled', 1), step('late_returned', 2, code)]
      : [step('settled', 0), step('late_returned', 1, code)];
  }
  const returned: Record<number, string> = { 91: 'R01', 92: 'R09', 93: 'R02', 94: 'R10' };
  const code = returned[cents];
  if (code) {
    if (ach) return [step('processing', 0), step('returned', 1, code)];
    // A card decline for funds reads as a funds return; any other decline is simply invalid.
    if (code === 'R01' || code === 'R09') return [step('returned', 0, code, `card declined: ${RETURN_CODES[code]!.description.toLowerCase()}`)];
    return [step('invalid', 0, null, `card declined: ${RETURN_CODES[code]!.description.toLowerCase()}`)];
  }
  // 00–90, and 98 once its transient first attempt is behind it.
  return ach ? [step('processing', 0), step('settled', 1)] : [step('settled', 0)];
}

/** Luhn checksum over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

interface PaymentRow {
  id: string;
  amount_cents: number;
  created_at: number;
  created_status: EventStatus;
  created_return_code: string | null;
  created_message: string | null;
}

interface TransitionRow {
  id: number;
  payment_id: string;
  status: EventStatus;
  return_code: string | null;
  message: string | null;
  due_at: number;
}

interface ChangeRow {
  seq: number;
  payment_id: string;
  reference: string | null;
  status: EventStatus;
  amount_cents: number;
  return_code: string | null;
  occurred_at: number;
  message: string | null;
  created_at: number;
}

export interface SandboxOptions {
  sqlite: Database;
  clock: Clock;
  settlementMs: number;
  latencyMs?: number;
  /** Up to this much more, at random, per create: answers of varied latency (1 to 3 s: 1000 and 2000). */
  latencyJitterMs?: number;
  /** After this, a reused idempotency key makes a new payment (Stripe keeps keys at least 24 hours). */
  idempotencyTtlMs?: number;
  /** Cents 88: every answer about the payment is a 503 until this long after its creation. */
  outageMs?: number;
  /** Changes older than this leave the change feed, as Stripe's events do after 30 days. */
  eventRetentionMs?: number;
}

export class SandboxProcessor implements Processor {
  readonly name = 'sandbox' as const;
  private readonly sqlite: Database;
  private readonly clock: Clock;
  private readonly settlementMs: number;
  // Raw prepared statements rather than Drizzle: listChanges is polled hard (50,000-change backlogs), and
  // prepared-once statements keep each page to one indexed query with no per-call query building.
  private readonly q: {
    anyDue: Statement;
    due: Statement;
    deleteTransition: Statement;
    insertEvent: Statement;
    page: Statement;
    lostAfter: Statement;
    newest: Statement;
    findPayment: Statement;
    findAnyPayment: Statement;
    current: Statement;
    listPage: Statement;
    inOutage: Statement;
    findAttempt: Statement;
    recordFailedAttempt: Statement;
    insertPayment: Statement;
    insertTransition: Statement;
    insertCard: Statement;
  };

  private readonly latencyMs: number;
  private readonly latencyJitterMs: number;
  private readonly idempotencyTtlMs: number;
  private readonly outageMs: number;
  private readonly retentionMs: number;

  constructor(opts: SandboxOptions) {
    this.latencyMs = opts.latencyMs ?? 0;
    this.latencyJitterMs = opts.latencyJitterMs ?? 0;
    this.idempotencyTtlMs = opts.idempotencyTtlMs ?? 86_400_000;
    this.outageMs = opts.outageMs ?? 60_000;
    this.retentionMs = opts.eventRetentionMs ?? 30 * 86_400_000;
    this.sqlite = opts.sqlite;
    this.clock = opts.clock;
    this.settlementMs = opts.settlementMs;
    const db = this.sqlite;
    this.q = {
      anyDue: db.prepare('SELECT 1 FROM sandbox_transitions WHERE account = ? AND due_at <= ? LIMIT 1'),
      due: db.prepare(
        'SELECT id, payment_id, status, return_code, message, due_at FROM sandbox_transitions WHERE account = ? AND due_at <= ? ORDER BY due_at, id',
      ),
      deleteTransition: db.prepare('DELETE FROM sandbox_transitions WHERE id = ?'),
      insertEvent: db.prepare(
        'INSERT INTO sandbox_events (account, payment_id, status, return_code, message, occurred_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      page: db.prepare(
        `SELECT e.seq, e.payment_id, p.reference, e.status, p.amount_cents, e.return_code, e.occurred_at, e.message, p.created_at
           FROM sandbox_events e JOIN sandbox_payments p ON p.id = e.payment_id
          WHERE e.account = ? AND e.seq > ? AND e.occurred_at >= ? ORDER BY e.seq LIMIT ?`,
      ),
      // A change of the next page that has already left the feed: the cursor is lost there. Only the page's
      // own changes are looked at, so a long backlog costs a page per read, not the whole feed.
      lostAfter: db.prepare(
        'SELECT 1 FROM (SELECT occurred_at FROM sandbox_events WHERE account = ? AND seq > ? ORDER BY seq LIMIT ?) WHERE occurred_at < ? LIMIT 1',
      ),
      newest: db.prepare('SELECT MAX(seq) AS seq FROM sandbox_events WHERE account = ?'),
      // The payment a key made within its idempotency window (the newest, should a key have been reused after it).
      findPayment: db.prepare(
        `SELECT id, amount_cents, created_at, created_status, created_return_code, created_message FROM sandbox_payments
          WHERE account = ? AND idempotency_key = ? AND created_at > ? ORDER BY created_at DESC LIMIT 1`,
      ),
      findAnyPayment: db.prepare(
        `SELECT id, amount_cents, created_at, created_status, created_return_code, created_message FROM sandbox_payments
          WHERE account = ? AND idempotency_key = ? AND created_at BETWEEN ? AND ? ORDER BY created_at LIMIT 1`,
      ),
      current: db.prepare('SELECT status, return_code, message FROM sandbox_events WHERE payment_id = ? ORDER BY seq DESC LIMIT 1'),
      listPage: db.prepare(
        `SELECT id, idempotency_key, reference, amount_cents, created_at FROM sandbox_payments
          WHERE account = ?1 AND created_at >= ?2 AND created_at <= ?3 AND (created_at > ?4 OR (created_at = ?4 AND id > ?5))
          ORDER BY created_at, id LIMIT ?6`,
      ),
      // Cents 88: the account answers nothing about such a payment until its outage has passed.
      inOutage: db.prepare(
        'SELECT 1 FROM sandbox_payments INDEXED BY sandbox_payments_outage_idx WHERE account = ? AND amount_cents % 100 = 88 AND created_at > ? LIMIT 1',
      ),
      findAttempt: db.prepare('SELECT failed_attempts FROM sandbox_idempotency WHERE account = ? AND idempotency_key = ?'),
      recordFailedAttempt: db.prepare(
        `INSERT INTO sandbox_idempotency (account, idempotency_key, failed_attempts, first_attempt_at) VALUES (?, ?, 1, ?)
         ON CONFLICT (account, idempotency_key) DO UPDATE SET failed_attempts = failed_attempts + 1`,
      ),
      insertPayment: db.prepare(
        `INSERT INTO sandbox_payments (id, account, idempotency_key, reference, amount_cents, rail, instrument_kind,
           created_status, created_return_code, created_message, created_at, entry_description) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertTransition: db.prepare(
        'INSERT INTO sandbox_transitions (account, payment_id, status, return_code, message, due_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      insertCard: db.prepare(
        `INSERT INTO sandbox_cards (token, account, last4, brand, funding, exp_month, exp_year, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
    };
  }

  async verifyKey(key: string): Promise<{ accountId: string }> {
    return { accountId: `sbxacct_${this.account(key).slice(0, 32)}` };
  }

  async tokenizeCard(key: string, card: RawCard): Promise<TokenizedCard> {
    const account = this.account(key);
    const number = String(card.number).replace(/[\s-]/g, '');
    if (!/^\d{12,19}$/.test(number)) throw new CardRefused('card number must be 12 to 19 digits');
    if (!luhnValid(number)) throw new CardRefused('card number failed the Luhn check');
    const { expMonth, expYear } = card;
    if (!Number.isInteger(expMonth) || expMonth < 1 || expMonth > 12) throw new CardRefused('expiry month must be 1 to 12');
    if (!Number.isInteger(expYear) || expYear < 1000) throw new CardRefused('expiry year must have four digits');
    // A card is good through the last day of its expiry month (UTC).
    if (this.clock.now() >= Date.UTC(expYear, expMonth, 1)) throw new CardRefused('card has expired');
    const token = `sbxpm_${randomBase62(24)}`;
    const last4 = number.slice(-4);
    const brand = number[0] === '4' ? 'visa' : number[0] === '5' ? 'mastercard' : 'unknown';
    this.q.insertCard.run(token, account, last4, brand, 'debit', expMonth, expYear, this.clock.now());
    return { token, last4, brand, funding: 'debit', expMonth, expYear };
  }

  async createDebit(key: string, req: DebitRequest): Promise<DebitResult> {
    const account = this.account(key);
    if (!req.paymentId) throw new RangeError('paymentId is required: it is the idempotency key');
    if (!Number.isSafeInteger(req.amountCents) || req.amountCents <= 0) {
      throw new RangeError('amountCents must be a positive whole number of cents');
    }
    const now = this.clock.now();
    // One write transaction: the replay check and the insert cannot interleave with another caller
    // (the service and the CLI may share the file), and due events are appended before the new one.
    const outcome = await writeAlone(this.sqlite, (): DebitResult | 'transient' => {
        this.materialise(account, now);
        const existing = this.q.findPayment.get(account, req.paymentId, now - this.idempotencyTtlMs) as PaymentRow | null;
        if (existing) return this.inOutage(existing, now) ? 'transient' : resultOf(existing);
        if (req.amountCents % 100 === 98 && !this.q.findAttempt.get(account, req.paymentId)) {
          this.q.recordFailedAttempt.run(account, req.paymentId, now);
          return 'transient';
        }
        const steps = req.rail === 'card' && req.instrument.kind !== 'token'
          ? [step('invalid', 0, null, 'a card charge needs a card token')]
          : sandboxOutcome(req.amountCents, req.rail);
        const first = steps[0]!;
        const id = `sbxpay_${randomBase62(24)}`;
        this.q.insertPayment.run(
          id, account, req.paymentId, req.reference ?? null, req.amountCents, req.rail, req.instrument.kind,
          first.status, first.returnCode, first.message, now, req.entryDescription ?? null,
        );
        this.q.insertEvent.run(account, id, first.status, first.returnCode, first.message, now);
        for (const s of steps.slice(1)) {
          this.q.insertTransition.run(account, id, s.status, s.returnCode, s.message, now + s.after * this.settlementMs);
        }
        // Cents 88: created, but the answer is lost in an outage.
        if (req.amountCents % 100 === 88 && this.outageMs > 0) return 'transient';
        return { processorPaymentId: id, status: first.status, returnCode: first.returnCode, message: first.message, declineCode: first.declineCode ?? null };
      });
    // The answer's time on the wire: the payment exists at the processor from the call on, as with a real one.
    const latency = this.latencyMs + (this.latencyJitterMs > 0 ? Math.floor(Math.random() * (this.latencyJitterMs + 1)) : 0);
    if (latency > 0) await Bun.sleep(latency);
    // Committed before throwing, so the next attempt with this key goes through.
    if (outcome === 'transient') throw new ProcessorUnavailable('sandbox: temporary failure creating the payment; retry with the same key');
    return outcome;
  }

  async listChanges(key: string, cursor: string | null, opts: { limit?: number } = {}): Promise<ChangePage> {
    const account = this.account(key);
    const after = parseCursor(cursor);
    const limit = Math.min(Math.max(Math.trunc(opts.limit ?? DEFAULT_LIMIT), 1), MAX_LIMIT);
    const now = this.clock.now();
    // A read first, so a poll with nothing due never takes the write lock.
    if (this.q.anyDue.get(account, now)) {
      await writeAlone(this.sqlite, () => this.materialise(account, now));
    }
    this.refuseDuringOutage(account, now);
    const keptFrom = now - this.retentionMs;
    if (cursor !== null && this.q.lostAfter.get(account, after, limit + 1, keptFrom)) {
      // Changes after the cursor have left the feed: read on from the newest, and say what was lost.
      const newest = (this.q.newest.get(account) as { seq: number | null }).seq;
      return { changes: [], nextCursor: newest === null ? cursor : String(newest), hasMore: false, cursorLost: true };
    }
    const rows = this.q.page.all(account, after, keptFrom, limit + 1) as ChangeRow[];
    const hasMore = rows.length > limit;
    if (hasMore) rows.length = limit;
    const changes: ProcessorChange[] = rows.map((r) => ({
      sourceEventId: `sbxevt_${r.seq}`,
      processorPaymentId: r.payment_id,
      reference: r.reference,
      status: r.status,
      amountCents: r.amount_cents,
      returnCode: r.return_code,
      occurredAt: r.occurred_at,
      paymentCreatedAt: r.created_at,
      message: r.message,
    }));
    const nextCursor = rows.length > 0 ? String(rows[rows.length - 1]!.seq) : cursor;
    return { changes, nextCursor, hasMore };
  }

  async findPayment(key: string, q: { paymentId: string; createdFrom: number; createdTo: number }): Promise<FoundPayment> {
    const account = this.account(key);
    const now = this.clock.now();
    await this.catchUp(account, now);
    const row = this.q.findAnyPayment.get(account, q.paymentId, q.createdFrom, q.createdTo) as PaymentRow | null;
    if (!row) return { found: false };
    if (this.inOutage(row, now)) throw new ProcessorUnavailable('sandbox: temporary failure reading the payment; try again later');
    return { found: true, processorPaymentId: row.id, ...this.currentOf(row.id) };
  }

  async listPayments(key: string, q: { createdFrom: number; createdTo: number; page: string | null; limit?: number }): Promise<PaymentPage> {
    const account = this.account(key);
    const now = this.clock.now();
    await this.catchUp(account, now);
    this.refuseDuringOutage(account, now);
    const limit = Math.min(Math.max(Math.trunc(q.limit ?? DEFAULT_LIMIT), 1), MAX_LIMIT);
    const [afterAt, afterId] = q.page ? [Number(q.page.slice(0, q.page.indexOf(':'))), q.page.slice(q.page.indexOf(':') + 1)] : [-1, ''];
    const rows = this.q.listPage.all(account, q.createdFrom, q.createdTo, afterAt, afterId, limit + 1) as {
      id: string;
      idempotency_key: string;
      reference: string | null;
      amount_cents: number;
      created_at: number;
    }[];
    const more = rows.length > limit;
    if (more) rows.length = limit;
    const payments: ListedPayment[] = rows.map((r) => ({
      processorPaymentId: r.id,
      paymentId: r.idempotency_key,
      reference: r.reference,
      amountCents: r.amount_cents,
      createdAt: r.created_at,
      ...this.currentOf(r.id),
    }));
    const last = rows.at(-1);
    return { payments, next: more && last ? `${last.created_at}:${last.id}` : null };
  }

  /** The sandbox never holds a payment open: nothing to cancel; its status is answered as it is. */
  async cancelPayment(key: string, processorPaymentId: string): Promise<DebitResult> {
    this.account(key);
    return { processorPaymentId, ...this.currentOf(processorPaymentId) };
  }

  /** A payment's latest status, as the processor would answer a read of it now. */
  private currentOf(paymentId: string): Omit<DebitResult, 'processorPaymentId'> {
    const e = this.q.current.get(paymentId) as { status: EventStatus; return_code: string | null; message: string | null };
    return { status: e.status, returnCode: e.return_code, message: e.message };
  }

  private async catchUp(account: string, now: number): Promise<void> {
    if (this.q.anyDue.get(account, now)) await writeAlone(this.sqlite, () => this.materialise(account, now));
  }

  private inOutage(p: PaymentRow, now: number): boolean {
    return p.amount_cents % 100 === 88 && now < p.created_at + this.outageMs;
  }

  private refuseDuringOutage(account: string, now: number): void {
    if (this.outageMs > 0 && this.q.inOutage.get(account, now - this.outageMs)) {
      throw new ProcessorUnavailable('sandbox: the processor is answering 503 for this account; try again later');
    }
  }

  /** Appends, in time order, the scheduled statuses of this account whose time has come. Call inside a write transaction. */
  private materialise(account: string, now: number): void {
    const due = this.q.due.all(account, now) as TransitionRow[];
    for (const t of due) {
      this.q.insertEvent.run(account, t.payment_id, t.status, t.return_code, t.message, t.due_at);
      this.q.deleteTransition.run(t.id);
    }
  }

  /** The account a key stands for: the SHA-256 of the key, so the key itself is never stored. */
  private account(key: string): string {
    if (typeof key !== 'string' || !SANDBOX_KEY_PATTERN.test(key)) throw new KeyRefused('the processor refused this key: not a sandbox key');
    if (key.includes('_refused')) throw new KeyRefused();
    return createHash('sha256').update(key).digest('hex');
  }
}

const resultOf = (p: PaymentRow): DebitResult => ({
  processorPaymentId: p.id,
  status: p.created_status,
  returnCode: p.created_return_code,
  message: p.created_message,
  // Cents 89 on a card: the stolen-card decline (its code follows from the amount, as every outcome here does).
  declineCode: p.created_status === 'invalid' && p.amount_cents % 100 === 89 ? 'stolen_card' : null,
});

function parseCursor(cursor: string | null): number {
  if (cursor == null || cursor === '') return 0;
  if (!/^\d{1,15}$/.test(cursor)) throw new RangeError('not a sandbox change cursor');
  return Number(cursor);
}

/** A dummy bank account for charges made at the sandbox from outside the service. */
const DUMMY_BANK_ACCOUNT = { kind: 'bank_account', routingNumber: '110000000', accountNumber: '000123456789' } as const;

/**
 * Creates a payment at the sandbox as a lender would outside the service (the CLI's `sandbox charge`): a fresh
 * payment id, a dummy bank account or a freshly tokenized test card. A transient failure (cents 98) is
 * retried once with the same payment id, as any client holding an idempotency key would.
 */
export async function createSandboxCharge(
  processor: SandboxProcessor,
  key: string,
  charge: { amountCents: number; reference: string; rail?: Rail },
): Promise<DebitResult & { processorPaymentId: string }> {
  const rail = charge.rail ?? 'ach';
  let instrument: DebitRequest['instrument'] = DUMMY_BANK_ACCOUNT;
  if (rail === 'card') {
    // A far expiry, so the test card stays valid whatever the processor's clock says.
    const card = await processor.tokenizeCard(key, { number: '4242424242424242', cvv: null, expMonth: 12, expYear: 2099 });
    instrument = { kind: 'token', token: card.token };
  }
  const req: DebitRequest = {
    paymentId: newId(),
    reference: charge.reference,
    amountCents: charge.amountCents,
    rail,
    instrument,
    borrower: { name: 'Sandbox charge' },
  };
  let result: DebitResult;
  try {
    result = await processor.createDebit(key, req);
  } catch (e) {
    if (!(e instanceof ProcessorUnavailable)) throw e;
    result = await processor.createDebit(key, req);
  }
  return { ...result, processorPaymentId: result.processorPaymentId! };
}
