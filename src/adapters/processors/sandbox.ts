// The built-in sandbox processor: deterministic, stateful in its own `sandbox_*` tables, time from the
// service's clock. The cents part of the amount picks the outcome (docs: payments.md, "Sandbox processor").
//
// Future statuses are stored as scheduled transitions and appended to the change feed lazily, when a call
// for that account finds their time has come (at the start of listChanges and createDebit). Each event keeps
// its scheduled time as occurred_at, so the feed reads the same however late it is polled.
import type { Database } from 'bun:sqlite';
import { createHash } from 'node:crypto';
import type { Clock } from '../../platform/clock';
import type { PgHandle } from '../../platform/pg';
import { newId, randomBase62 } from '../../platform/ids';
import { RETURN_CODES } from './return-codes';
import type { SandboxPaymentRow, SandboxStore } from './sandbox-store';
import { pgSandboxStore } from './sandbox-store.pg';
import { sqliteSandboxStore } from './sandbox-store.sqlite';
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

/** Where the sandbox keeps its tables: the service's SQLite file, or its PostgreSQL database (`pg` wins). */
export type SandboxStorage = { sqlite: Database; pg?: PgHandle } | { sqlite?: Database; pg: PgHandle };

export type SandboxOptions = SandboxStorage & {
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
};

export class SandboxProcessor implements Processor {
  readonly name = 'sandbox' as const;
  private readonly store: SandboxStore;
  private readonly clock: Clock;
  private readonly settlementMs: number;
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
    // The processor's store on the engine it was given, chosen once.
    this.store = opts.pg ? pgSandboxStore(opts.pg) : sqliteSandboxStore(opts.sqlite!);
    this.clock = opts.clock;
    this.settlementMs = opts.settlementMs;
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
    await this.store.saveCard({ token, account, last4, brand, funding: 'debit', expMonth, expYear, createdAt: this.clock.now() });
    return { token, last4, brand, funding: 'debit', expMonth, expYear };
  }

  async createDebit(key: string, req: DebitRequest): Promise<DebitResult> {
    const account = this.account(key);
    if (!req.paymentId) throw new RangeError('paymentId is required: it is the idempotency key');
    if (!Number.isSafeInteger(req.amountCents) || req.amountCents <= 0) {
      throw new RangeError('amountCents must be a positive whole number of cents');
    }
    const now = this.clock.now();
    const steps = req.rail === 'card' && req.instrument.kind !== 'token'
      ? [step('invalid', 0, null, 'a card charge needs a card token')]
      : sandboxOutcome(req.amountCents, req.rail);
    const first = steps[0]!;
    const id = `sbxpay_${randomBase62(24)}`;
    // One write transaction: the replay check and the insert cannot interleave with another caller
    // (the service and the CLI may share the file), and due events are appended before the new one.
    const created = await this.store.createPayment({
      account,
      idempotencyKey: req.paymentId,
      now,
      replayAfter: now - this.idempotencyTtlMs,
      failFirstAttempt: req.amountCents % 100 === 98,
      payment: {
        id,
        reference: req.reference ?? null,
        amountCents: req.amountCents,
        rail: req.rail,
        instrumentKind: req.instrument.kind,
        entryDescription: req.entryDescription ?? null,
        correction: correctionOf(req.instrument),
      },
      steps: steps.map((s) => ({ status: s.status, returnCode: s.returnCode, message: s.message, dueAt: now + s.after * this.settlementMs })),
    });
    const outcome: DebitResult | 'transient' =
      'existing' in created
        ? this.inOutage(created.existing, now) ? 'transient' : resultOf(created.existing)
        : 'failedAttempt' in created
          ? 'transient'
          : // Cents 88: created, but the answer is lost in an outage.
            req.amountCents % 100 === 88 && this.outageMs > 0
            ? 'transient'
            : { processorPaymentId: id, status: first.status, returnCode: first.returnCode, message: first.message, declineCode: first.declineCode ?? null };
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
    await this.store.appendDueStatuses(account, now);
    await this.refuseDuringOutage(account, now);
    const keptFrom = now - this.retentionMs;
    if (cursor !== null && (await this.store.changeLeftFeedAfter(account, after, limit + 1, keptFrom))) {
      // Changes after the cursor have left the feed: read on from the newest, and say what was lost.
      const newest = await this.store.newestChangeSeq(account);
      return { changes: [], nextCursor: newest === null ? cursor : String(newest), hasMore: false, cursorLost: true };
    }
    const rows = await this.store.changesAfter(account, after, keptFrom, limit + 1);
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
      // The receiving bank's Notification of Change comes with the settlement of the entry it corrects.
      ...(r.status === 'settled' && r.correction ? { notificationOfChange: { code: r.correction.slice(0, 3), correctedData: r.correction.slice(4) } } : {}),
    }));
    const nextCursor = rows.length > 0 ? String(rows[rows.length - 1]!.seq) : cursor;
    return { changes, nextCursor, hasMore };
  }

  async findPayment(key: string, q: { paymentId: string; createdFrom: number; createdTo: number }): Promise<FoundPayment> {
    const account = this.account(key);
    const now = this.clock.now();
    await this.store.appendDueStatuses(account, now);
    const row = await this.store.paymentMadeWithKey(account, q.paymentId, q.createdFrom, q.createdTo);
    if (!row) return { found: false };
    if (this.inOutage(row, now)) throw new ProcessorUnavailable('sandbox: temporary failure reading the payment; try again later');
    return { found: true, processorPaymentId: row.id, ...(await this.store.currentStatus(row.id)) };
  }

  async listPayments(key: string, q: { createdFrom: number; createdTo: number; page: string | null; limit?: number }): Promise<PaymentPage> {
    const account = this.account(key);
    const now = this.clock.now();
    await this.store.appendDueStatuses(account, now);
    await this.refuseDuringOutage(account, now);
    const limit = Math.min(Math.max(Math.trunc(q.limit ?? DEFAULT_LIMIT), 1), MAX_LIMIT);
    const [afterAt, afterId] = q.page ? [Number(q.page.slice(0, q.page.indexOf(':'))), q.page.slice(q.page.indexOf(':') + 1)] : [-1, ''];
    const { rows, more } = await this.store.paymentsCreatedBetween(account, q.createdFrom, q.createdTo, { at: afterAt, id: afterId }, limit);
    const payments: ListedPayment[] = rows.map((r) => ({
      processorPaymentId: r.id,
      paymentId: r.idempotency_key,
      reference: r.reference,
      amountCents: r.amount_cents,
      createdAt: r.created_at,
      status: r.status,
      returnCode: r.returnCode,
      message: r.message,
    }));
    const last = rows.at(-1);
    return { payments, next: more && last ? `${last.created_at}:${last.id}` : null };
  }

  /** The sandbox never holds a payment open: nothing to cancel; its status is answered as it is. */
  async cancelPayment(key: string, processorPaymentId: string): Promise<DebitResult> {
    this.account(key);
    return { processorPaymentId, ...(await this.store.currentStatus(processorPaymentId)) };
  }

  private inOutage(p: SandboxPaymentRow, now: number): boolean {
    return p.amount_cents % 100 === 88 && now < p.created_at + this.outageMs;
  }

  private async refuseDuringOutage(account: string, now: number): Promise<void> {
    if (this.outageMs > 0 && (await this.store.outageSince(account, now - this.outageMs))) {
      throw new ProcessorUnavailable('sandbox: the processor is answering 503 for this account; try again later');
    }
  }

  /** The account a key stands for: the SHA-256 of the key, so the key itself is never stored. */
  private account(key: string): string {
    if (typeof key !== 'string' || !SANDBOX_KEY_PATTERN.test(key)) throw new KeyRefused('the processor refused this key: not a sandbox key');
    if (key.includes('_refused')) throw new KeyRefused();
    return createHash('sha256').update(key).digest('hex');
  }
}

const resultOf = (p: SandboxPaymentRow): DebitResult => ({
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
/**
 * A sandbox test value: a debit to an account number starting 9996 settles, and its receiving bank answers it
 * with a Notification of Change C01, the corrected number the same with 0006 in its place.
 */
export const NOC_ACCOUNT_PREFIX = '9996';
const correctionOf = (i: DebitRequest['instrument']): string | null =>
  i.kind === 'bank_account' && i.accountNumber.startsWith(NOC_ACCOUNT_PREFIX) ? `C01:0006${i.accountNumber.slice(NOC_ACCOUNT_PREFIX.length)}` : null;

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
