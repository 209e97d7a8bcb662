import type { RoutingDirectory } from '../routing/directory';
import {
  type BalanceProvider,
  type BalanceReadRequest,
  type BalanceReadResult,
  isFailureStatusCode,
  OTHER_ERROR_CODE,
  TransientProviderError,
} from './types';

// The default provider: deterministic answers chosen by the numbers a caller sends, so tests and new users can
// reach every outcome without an account anywhere (see "Sandbox bank-data provider" in the decisions).

const FORCED_CODE_PREFIX = '9999';
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

export class SandboxBalanceProvider implements BalanceProvider {
  private readonly directory: RoutingDirectory;
  private readonly latencyMs: number;

  constructor(opts: { directory: RoutingDirectory; latencyMs: number }) {
    this.directory = opts.directory;
    this.latencyMs = opts.latencyMs;
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
    const cents = centsFromDigits(account);
    return cents === null ? failed(NO_MATCH) : { kind: 'balance', balanceCents: cents };
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
