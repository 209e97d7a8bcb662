import type { RoutingDirectory } from '../routing/directory';
import { DAY_MS, systemClock, type Clock } from '../../platform/clock';
import { isBusinessDay } from '../../platform/business-days';
import { dollarsToCents } from '../../platform/money';
import {
  type BalanceProvider,
  type BalanceReadRequest,
  type BalanceReadResult,
  isFailureStatusCode,
  OTHER_ERROR_CODE,
  TransientProviderError,
  type HistoryResult,
  type HistoryWindow,
  type TransactionHistorySource,
} from './types';

// The default provider: deterministic answers chosen by the numbers a caller sends, so tests and new users can
// reach every outcome without an account anywhere (the table of "Sandbox test values" in the README).

const FORCED_CODE_PREFIX = '9999';
// A borrower paid on a schedule: 9997, the frequency (1 weekly, 2 biweekly on Fridays, 3 semimonthly on the 1st
// and 16th, 4 monthly on the 1st; each paid the business day before a weekend or holiday), then the pay in
// whole dollars. The balance is the pay on payday, spent down evenly to 5% of it by the next.
const PAY_PATTERN_PREFIX = '9997';
const TRANSIENT_PREFIX = '9998';
const BALANCE_DIGITS = 7;

const NOT_SUPPORTED = 3300;
const IN_TESTING = 3310;
// Nothing to read from (missing or non-numeric number): the authorizer information does not match an account.
const NO_MATCH = 3400;

const failed = (statusCode: number): BalanceReadResult => ({ kind: 'failed', statusCode });

/** The last seven digits read as cents; shorter numbers are read whole. Null when they are not all digits. */
function centsFromDigits(digits: string): number | null {
  const tail = digits.slice(-BALANCE_DIGITS);
  return /^\d+$/.test(tail) ? Number(tail) : null;
}

export class SandboxBalanceProvider implements BalanceProvider, TransactionHistorySource {
  private readonly directory: RoutingDirectory;
  private readonly latencyMs: number;

  private readonly clock: Clock;

  constructor(opts: { directory: RoutingDirectory; latencyMs: number; clock?: Clock }) {
    this.directory = opts.directory;
    this.latencyMs = opts.latencyMs;
    this.clock = opts.clock ?? systemClock;
  }

  async read(req: BalanceReadRequest): Promise<BalanceReadResult> {
    // Latency applies to every outcome, failures included, so concurrency tests see realistic timing.
    if (this.latencyMs > 0) await Bun.sleep(this.latencyMs);
    return req.paymentType === 'DEBIT_CARD' ? this.readCard(req) : this.readAccount(req);
  }

  private institutionProblem(routing: string | null): number | null {
    if (routing === null || routing === '') return null;
    const institution = this.directory.lookup(routing);
    if (institution === null || institution.support === 'unsupported') return NOT_SUPPORTED;
    if (institution.support === 'testing') return IN_TESTING;
    return null;
  }

  private readAccount(req: BalanceReadRequest): BalanceReadResult {
    if (req.routingNumber === null || req.routingNumber === '') return failed(NO_MATCH);
    const problem = this.institutionProblem(req.routingNumber);
    if (problem !== null) return failed(problem);

    const account = req.accountNumber;
    if (account === null || account === '') return failed(NO_MATCH);
    if (account.startsWith(FORCED_CODE_PREFIX)) {
      const code = account.slice(FORCED_CODE_PREFIX.length, FORCED_CODE_PREFIX.length + 4);
      const n = /^\d{4}$/.test(code) ? Number(code) : NaN;
      return failed(isFailureStatusCode(n) ? n : OTHER_ERROR_CODE);
    }
    if (account.startsWith(TRANSIENT_PREFIX)) {
      // Every attempt fails the same way, so the caller's retry budget runs out (RETRY_LIMIT).
      throw new TransientProviderError('Sandbox provider unavailable for this account (9998 test prefix)');
    }
    if (account.startsWith(PAY_PATTERN_PREFIX)) {
      const m = /^9997([1-4])(\d{1,7})$/.exec(account);
      if (!m) return failed(NO_MATCH);
      return { kind: 'balance', balanceCents: payPatternBalance(Number(m[1]) as 1 | 2 | 3 | 4, dollarsToCents(m[2])!, this.clock.now()) };
    }
    const cents = centsFromDigits(account);
    return cents === null ? failed(NO_MATCH) : { kind: 'balance', balanceCents: cents };
  }

  /**
   * Transaction history: a pay-pattern account (9997…) has its paydays' credits up to the sandbox's today;
   * every other account has none (its pay cycle is learned from its balance reads alone).
   */
  async history(req: BalanceReadRequest, window: HistoryWindow): Promise<HistoryResult> {
    if (this.latencyMs > 0) await Bun.sleep(this.latencyMs);
    const m = req.paymentType === 'ACCOUNT_NUMBER' && this.institutionProblem(req.routingNumber) === null ? /^9997([1-4])(\d{1,7})$/.exec(req.accountNumber ?? '') : null;
    if (!m) return { kind: 'none', detail: 'no_transactions' };
    const pay = Number(m[2]) * 100;
    const paydays = payPatternPaydays(Number(m[1]) as 1 | 2 | 3 | 4, window.from, Math.min(window.to, this.clock.now()));
    return { kind: 'credits', credits: paydays.map((at) => ({ at, amountCents: pay })), truncated: false };
  }

  private readCard(req: BalanceReadRequest): BalanceReadResult {
    // Cards route by the card number; a routing number is optional, but when given it must name a usable bank.
    const problem = this.institutionProblem(req.routingNumber);
    if (problem !== null) return failed(problem);

    const card = req.debitCardNumber;
    if (card === null || card.length < 2) return failed(NO_MATCH);
    // The final digit is the Luhn check digit, so the balance comes from the seven digits before it.
    const cents = centsFromDigits(card.slice(0, -1));
    return cents === null ? failed(NO_MATCH) : { kind: 'balance', balanceCents: cents };
  }
}

/** The payday of a nominal day: the business day on or before it. */
function paidOn(day: number): number {
  let d = day;
  while (!isBusinessDay(d)) d -= DAY_MS;
  return d;
}

/** The nominal paydays of a pattern around a time: the one on or before it and the one after. */
function paydaysAround(frequency: 1 | 2 | 3 | 4, now: number): [number, number] {
  const days: number[] = [];
  if (frequency <= 2) {
    // Fridays counted from Friday 2 January 2026.
    const step = (frequency === 1 ? 7 : 14) * DAY_MS;
    const anchor = Date.UTC(2026, 0, 2);
    const k = Math.floor((now - anchor) / step);
    for (let i = k - 1; i <= k + 2; i++) days.push(anchor + i * step);
  } else {
    const d = new Date(now);
    for (let m = -2; m <= 2; m++) {
      days.push(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + m, 1));
      if (frequency === 3) days.push(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + m, 16));
    }
  }
  const paid = days.map(paidOn).sort((a, b) => a - b);
  const i = paid.findLastIndex((p) => p <= now);
  return [paid[i]!, paid[i + 1]!];
}

/** The balance of a pay-pattern account at a time: the pay on payday, spent evenly down to 5% by the next. */
export function payPatternBalance(frequency: 1 | 2 | 3 | 4, payCents: number, now: number): number {
  const [last, next] = paydaysAround(frequency, now);
  return Math.round(payCents * (1 - (0.95 * (now - last)) / (next - last)));
}

/** The paydays of a pattern from one time to another (UTC midnights, inclusive), oldest first. */
export function payPatternPaydays(frequency: 1 | 2 | 3 | 4, from: number, to: number): number[] {
  const out: number[] = [];
  // Nominal days a few days past the end too: one paid early (a weekend, a holiday) may fall inside.
  const end = to + 4 * DAY_MS;
  if (frequency <= 2) {
    const step = (frequency === 1 ? 7 : 14) * DAY_MS;
    const anchor = Date.UTC(2026, 0, 2);
    for (let d = anchor + Math.floor((from - anchor) / step) * step; d <= end; d += step) out.push(paidOn(d));
  } else {
    const start = new Date(from);
    for (let y = start.getUTCFullYear(), m = start.getUTCMonth(); Date.UTC(y, m, 1) <= end; m++) {
      out.push(paidOn(Date.UTC(y, m, 1)));
      if (frequency === 3) out.push(paidOn(Date.UTC(y, m, 16)));
    }
  }
  return out.filter((d) => d >= from && d <= to).sort((a, b) => a - b);
}
