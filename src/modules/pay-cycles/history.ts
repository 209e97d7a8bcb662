import type { Deps, JobContext } from '../../deps';
import { DAY_MS } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { betweenSlices, type Job } from '../../platform/jobs';
import type { TxCtx } from '../../platform/store';
import { hasHistory, TransientProviderError, type BalanceReadRequest, type HistoryResult, type HistoryWindow } from '../../adapters/bank-data';
import { connectionFor } from '../bank-data-connections/service';
import { withCallScope } from '../../platform/provider-calls';
import { openBorrower } from '../enrollments/borrower';
import { incomeDeposits } from './infer';
import { learnAndSchedule } from './learn';
import { type DueHistory } from './store';

// Transaction history for the pay cycle. On enrollment, a re-send and a new bank link the borrower is marked as
// wanting a reading (wantHistory, in the enrollment's transaction); this job reads it later, never inside a
// request nor a transaction: the last HISTORY_WINDOW_DAYS of the account's credits from the borrower's linked
// account (Plaid, Stripe Financial Connections) or the bank-data provider (the HTTP contract, the sandbox), the
// income deposits among them kept (day and amount), and the cycle learned again from them with source
// `transactions`. A source without history, or a reading given up, leaves the cycle learned from balance reads.

/** How far back a reading goes. */
export const HISTORY_WINDOW_DAYS = 90;
/** Readings claimed per tick, and in flight at once. */
export const HISTORIES_PER_TICK = 20;
const IN_FLIGHT = 4;
/** A claimed reading is due again after this if the process stops while it runs. */
const CLAIM_MS = 10 * 60_000;
/** Failed attempts in a row before a reading is given up (until the next enrollment, re-send or link). */
export const HISTORY_MAX_ATTEMPTS = 5;
/** The first retry after a failure; each next one four times later (1, 4, 16, 64 minutes). */
export const HISTORY_RETRY_BASE_MS = 60_000;
/** A source preparing transactions is looked at again no sooner than this (a refresh takes seconds to minutes). */
export const HISTORY_PENDING_POLL_MS = 30_000;
/** A source still preparing transactions this long after they were wanted is given up. */
export const HISTORY_MAX_WAIT_MS = DAY_MS;
/** A history the source says is not complete yet (its first ~30 days) is read again this often, the cycle learned again each time. */
export const HISTORY_INCOMPLETE_RECHECK_MS = 6 * 3_600_000;
/** How long a history may stay incomplete before it is taken as it is ('partial'). */
export const HISTORY_INCOMPLETE_MAX_MS = 3 * DAY_MS;

/** In the enrollment's transaction: these borrowers want a reading, due at once. */
export async function wantHistory(c: TxCtx, lenderId: string, enrollmentIds: readonly string[], now: number): Promise<void> {
  if (enrollmentIds.length === 0) return;
  await c.deps.stores.payCycles.wantHistory(c, lenderId, enrollmentIds, now);
}

/** Erasure: the stored deposits go with the borrowers' personal data. */
export async function eraseHistory(c: TxCtx, enrollmentIds: readonly string[]): Promise<void> {
  if (enrollmentIds.length === 0) return;
  await c.deps.stores.payCycles.eraseHistory(c, enrollmentIds);
}

type Outcome = HistoryResult | { kind: 'failed'; error: string };

/** The borrower's account read for history: its linked account when it has one, else the bank-data provider. */
async function readHistory(deps: Deps, r: DueHistory, window: HistoryWindow, now: number): Promise<HistoryResult> {
  if (!r.sealed) return { kind: 'none', detail: 'erased' };
  const b = openBorrower(deps, r.sealed);
  const link = b.s.bankLink;
  if (link) {
    const conn = await connectionFor(deps, r.lenderId, link.provider);
    if (!conn) return { kind: 'none', detail: 'connection_missing' };
    const creds = conn.creds;
    // Its calls counted as the lender's, through this connection (the usage route, /metrics).
    return withCallScope({ lenderId: r.lenderId, connectionId: conn.id }, async (): Promise<HistoryResult> => {
      if (link.provider === 'plaid' && creds.provider === 'plaid') return deps.linked.plaid.history(creds, link, window, now);
      if (link.provider === 'stripe' && creds.provider === 'stripe') return deps.linked.stripe.history(creds, link, window, now);
      return { kind: 'none', detail: 'connection_missing' };
    });
  }
  if (!hasHistory(deps.bank)) return { kind: 'none', detail: 'no_transactions' };
  const s = b.s;
  const req: BalanceReadRequest = {
    authorizerUniqueId: r.aid,
    paymentType: 'ACCOUNT_NUMBER',
    routingNumber: r.routing,
    accountNumber: s.accountNumber,
    debitCardNumber: null,
    ssn: s.ssn,
    ein: s.ein,
    firstName: s.firstName,
    lastName: s.lastName,
    phoneNumber: b.phone,
    zipCode: b.zip,
    dateOfBirth: s.dateOfBirth,
  };
  return deps.bank.history(req, window);
}

/** What a reading's end writes, in one transaction: the deposits and the cycle, a retry, or the end. */
async function record(deps: Deps, r: DueHistory, o: Outcome, window: HistoryWindow, now: number): Promise<void> {
  await transaction({ deps } as JobContext, async (ctx) => {
    await ctx.deps.stores.payCycles.serializeReading(ctx, r.enrollmentId);
    if (o.kind === 'credits') {
      // Only what inference needs: the income among the credits of the window, one per day (at most a window of days).
      const inWindow = o.credits.filter((c) => c.at >= window.from && c.at < window.to + DAY_MS);
      await ctx.deps.stores.payCycles.storeDeposits(ctx, r.enrollmentId, incomeDeposits(inWindow), now, window.to);
      // The source is still pulling older history (Plaid's first ~30 days): the cycle is learned from what there
      // is now and again when the rest arrives; the reading stays due until then, or is kept as partial.
      const incomplete = o.complete === false;
      if (incomplete && now - (r.wantedAt ?? now) < HISTORY_INCOMPLETE_MAX_MS) await ctx.deps.stores.payCycles.setHistoryDue(ctx, r.enrollmentId, now + HISTORY_INCOMPLETE_RECHECK_MS, 0);
      else await ctx.deps.stores.payCycles.endHistory(ctx, r.enrollmentId, r.wantedAt, incomplete ? 'partial' : 'credits');
      await learnAndSchedule(ctx, { enrollmentId: r.enrollmentId, lenderId: r.lenderId, aid: r.aid, at: await ctx.deps.stores.payCycles.lastReadOf(ctx, r.enrollmentId), force: true });
      return;
    }
    if (o.kind === 'none') return ctx.deps.stores.payCycles.endHistory(ctx, r.enrollmentId, r.wantedAt, o.detail);
    if (o.kind === 'pending') {
      if (now - (r.wantedAt ?? now) >= HISTORY_MAX_WAIT_MS) return ctx.deps.stores.payCycles.endHistory(ctx, r.enrollmentId, r.wantedAt, 'gave_up');
      return ctx.deps.stores.payCycles.setHistoryDue(ctx, r.enrollmentId, Math.max(o.retryAt, now + HISTORY_PENDING_POLL_MS), r.attempts);
    }
    const attempts = r.attempts + 1;
    // Never the borrower, the link or the credentials: the enrollment's id, the attempt and the provider's words.
    deps.logger.warn({ enrollment_id: r.enrollmentId, attempt: attempts, error: o.error }, 'transaction history could not be read');
    if (attempts >= HISTORY_MAX_ATTEMPTS) return ctx.deps.stores.payCycles.endHistory(ctx, r.enrollmentId, r.wantedAt, 'gave_up');
    return ctx.deps.stores.payCycles.setHistoryDue(ctx, r.enrollmentId, now + HISTORY_RETRY_BASE_MS * 4 ** (attempts - 1), attempts);
  });
}

/**
 * One tick: the readings due (at most HISTORIES_PER_TICK), claimed in a transaction, read with no transaction
 * open (IN_FLIGHT at once), and each recorded in its own transaction once the write gate gives its turn.
 */
export async function readDueHistories(deps: Deps, signal?: AbortSignal): Promise<{ read: number }> {
  const now = deps.clock.now();
  if ((await deps.stores.payCycles.dueHistories({ deps }, now, 1)).length === 0) return { read: 0 };
  const claimed = await transaction({ deps } as JobContext, (tx) => tx.deps.stores.payCycles.claimDueHistories(tx, now, HISTORIES_PER_TICK, now + CLAIM_MS));
  const today = now - (now % DAY_MS);
  const window: HistoryWindow = { from: today - HISTORY_WINDOW_DAYS * DAY_MS, to: today };
  const queue = [...claimed];
  const worker = async () => {
    for (let r = queue.shift(); r && !signal?.aborted; r = queue.shift()) {
      let o: Outcome;
      try {
        o = await readHistory(deps, r, window, deps.clock.now());
      } catch (e) {
        o = { kind: 'failed', error: e instanceof TransientProviderError ? e.message : e instanceof Error ? e.name : 'error' };
      }
      await betweenSlices(deps);
      await record(deps, r, o, window, deps.clock.now());
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { read: claimed.length };
}

/** Every replica: due readings are claimed row by row (SKIP LOCKED) and leased, each read by one claimer. */
export const payHistoryJob: Job<Deps> = {
  name: 'pay-history',
  intervalMs: 5_000,
  tick: (deps, signal) => readDueHistories(deps, signal),
};
