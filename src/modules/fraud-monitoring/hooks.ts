import type { Rail } from '../../../db/schema/enums';
import type { Ctx, JobContext } from '../../deps';
import { TransientProviderError } from '../../adapters/bank-data/types';
import type { BankLink } from '../../adapters/bank-data/linked';
import { withCallScope } from '../../platform/provider-calls';
import { connectionFor } from '../bank-data-connections/service';
import { DAY_MS, iso } from '../../platform/clock';
import type { Tx } from '../../platform/context';
import { newId } from '../../platform/ids';
import { unpackSensitive } from '../balance-requests/payload';
import { accountValidated, type Standing } from '../bank-accounts/standing';
import { fullName, namesMatch } from './names';
import { amountOutlier, changedWithin } from './rules';
import { isUnauthorizedReturn, UNAUTHORIZED_RETURNS } from '../../adapters/processors/return-codes';
import { policyInForce, raise, type Hit } from './service';

// Where the rules meet the facts: each is called, once, by the code that records its fact, in that fact's
// transaction, so an alert commits with its fact or not at all.
//   - an enrollment or re-send (enrollments/service.ts): shared_account, owner_mismatch (the owners asked of the
//     provider just before the enrollment's transaction, by linkedOwners: no network call inside one), and the
//     account switch account_changed reads;
//   - a planned debit (collection/decide.ts createPayment): first_debit_unvalidated, account_changed, amount_outlier, velocity;
//   - a recorded return (collection/reactions.ts): unauthorized_streak.
// Each reads what its rules need (bounded reads, store.ts) and decides with the pure functions of rules.ts.

type InTx = JobContext & { tx: Tx };

/** A borrower as an enrollment stored it, for the enrollment rules (shared_account, owner_mismatch) and the switches. */
export interface EnrolledBorrower {
  enrollmentId: string;
  aid: string;
  bankAccountId: string | null;
  /** The account it was on before this re-send; undefined for a borrower enrolled now. */
  priorAccountId: string | null | undefined;
  firstName: string | null;
  lastName: string | null;
  /** Its linked account's owners as the provider named them (linkedOwners); null when not asked. */
  owners?: LinkedOwners | null;
}

/** A linked account's owners' names, and the account they are of. */
export interface LinkedOwners {
  provider: BankLink['provider'];
  account: string;
  names: string[];
}

/** Owners' reads in flight at once for one enrollment request. */
const OWNERS_CONCURRENCY = 4;

/**
 * The owners of the linked accounts of borrowers about to be enrolled, by authorizer_unique_id: asked, before
 * the enrollment's transaction, only while owner_mismatch is on and only through a connection of the lender
 * that has the identity product (each call counted in its usage). One the provider cannot name now is left
 * out: it raises nothing.
 */
export async function linkedOwners(ctx: Ctx, borrowers: readonly { aid: string; link: BankLink | null | undefined }[]): Promise<Map<string, LinkedOwners>> {
  const out = new Map<string, LinkedOwners>();
  const linked = borrowers.filter((b): b is { aid: string; link: BankLink } => !!b.link);
  if (linked.length === 0 || !(await policyInForce(ctx, ctx.lender.id)).rules.owner_mismatch.enabled) return out;
  for (const provider of ['plaid', 'stripe'] as const) {
    const queue = linked.filter((b) => b.link.provider === provider);
    if (queue.length === 0) continue;
    const conn = await connectionFor(ctx.deps, ctx.lender.id, provider);
    if (!conn?.identity) continue;
    const worker = async () => {
      for (let b = queue.shift(); b; b = queue.shift()) {
        const link = b.link;
        try {
          const r = await withCallScope({ lenderId: ctx.lender.id, connectionId: conn.id }, () =>
            link.provider === 'plaid' && conn.creds.provider === 'plaid'
              ? ctx.deps.linked.plaid.owners(conn.creds, link)
              : link.provider === 'stripe' && conn.creds.provider === 'stripe'
                ? ctx.deps.linked.stripe.owners(conn.creds, link)
                : null,
          );
          if (r?.kind === 'owners') out.set(b.aid, { provider, account: link.provider === 'plaid' ? link.accountId : link.account, names: r.names });
        } catch (e) {
          if (!(e instanceof TransientProviderError)) throw e;
        }
      }
    };
    await Promise.all(Array.from({ length: OWNERS_CONCURRENCY }, worker));
  }
  return out;
}

/** The name sealed with a borrower (enrollments/borrower.ts seals it in the balance payload's packed form). */
function sealedName(ctx: InTx, sealed: string): string {
  const [s] = JSON.parse(ctx.deps.vault.open(sealed)) as [string];
  const b = unpackSensitive(s)[0]!;
  return fullName(b.firstName, b.lastName);
}

/** Borrowers enrolled or re-sent: their account switches kept, owner_mismatch asked of those whose owners were read, and shared_account of each on an account. */
export async function fraudOnEnrollment(ctx: InTx, lenderId: string, borrowers: readonly EnrolledBorrower[]): Promise<void> {
  const now = ctx.deps.clock.now();
  for (const b of borrowers) {
    if (b.priorAccountId !== undefined && b.priorAccountId !== null && b.bankAccountId !== null && b.priorAccountId !== b.bankAccountId) {
      await ctx.deps.stores.fraud.recordSwitch(ctx, { id: newId(), lenderId, enrollmentId: b.enrollmentId, bankAccountId: b.bankAccountId, switchedAt: now });
    }
  }
  const policy = await policyInForce(ctx, lenderId);
  const hits: Hit[] = [];
  if (policy.rules.owner_mismatch.enabled) {
    for (const b of borrowers) {
      const own = fullName(b.firstName, b.lastName);
      const o = b.owners;
      if (!o || o.names.length === 0 || own === '' || o.names.some((n) => namesMatch(own, n))) continue;
      hits.push({
        rule: 'owner_mismatch',
        subject: `enrollment:${b.enrollmentId}`,
        fact: `owners:${o.provider}:${o.account}`,
        enrollmentId: b.enrollmentId,
        aid: b.aid,
        bankAccountId: b.bankAccountId,
        paymentId: null,
        details: { provider: o.provider, owners: o.names.length },
      });
    }
  }
  const rule = policy.rules.shared_account;
  const on = borrowers.filter((b) => b.bankAccountId !== null);
  if (!rule.enabled || on.length === 0) {
    await raise(ctx, lenderId, policy, hits);
    return;
  }
  const max = rule.settings.max_borrowers!;
  const sharing = await ctx.deps.stores.fraud.accountSharing(
    ctx,
    lenderId,
    on.map((b) => ({ accountId: b.bankAccountId!, except: b.enrollmentId })),
    max + 1,
  );
  // Each first borrower's name opened once, however many of the request's borrowers share its account.
  const names = new Map<string, string>();
  const nameOf = (id: string, sealed: string) => names.get(id) ?? names.set(id, sealedName(ctx, sealed)).get(id)!;
  on.forEach((b, i) => {
    const s = sharing[i]!;
    const tooMany = s.borrowers > max;
    const own = fullName(b.firstName, b.lastName);
    const namesDiffer = s.firstId !== null && s.firstSealed !== null && own !== '' && !namesMatch(own, nameOf(s.firstId, s.firstSealed));
    if (!tooMany && !namesDiffer) return;
    hits.push({
      rule: 'shared_account',
      subject: `bank_account:${b.bankAccountId}`,
      fact: `enrollment:${b.enrollmentId}`,
      enrollmentId: b.enrollmentId,
      aid: b.aid,
      bankAccountId: b.bankAccountId,
      paymentId: null,
      details: { borrowers: s.borrowers, max_borrowers: max, names_differ: namesDiffer },
    });
  });
  await raise(ctx, lenderId, policy, hits);
}

/** A debit planned for a borrower (its payment row just written). */
export interface PlannedDebit {
  lenderId: string;
  enrollmentId: string;
  aid: string;
  rail: Rail;
  bankAccountId: string | null;
  account: Standing | null;
  paymentId: string;
  amountCents: number;
}

/** A planned debit: the debit rules asked of it. A hold rule's hit keeps it from being sent until cleared. */
export async function fraudOnDebit(ctx: InTx, d: PlannedDebit): Promise<void> {
  const policy = await policyInForce(ctx, d.lenderId);
  const r = policy.rules;
  if (!r.first_debit_unvalidated.enabled && !r.account_changed.enabled && !r.amount_outlier.enabled && !r.velocity.enabled) return;
  const now = ctx.deps.clock.now();
  const account = d.rail === 'ach' ? d.bankAccountId : null;
  const facts = await ctx.deps.stores.fraud.debitFacts(ctx, {
    lenderId: d.lenderId,
    enrollmentId: d.enrollmentId,
    bankAccountId: account,
    paymentId: d.paymentId,
    since: now - r.velocity.settings.window_days! * DAY_MS,
    cap: r.velocity.settings.max_debits! + 1,
  });
  const on = (rule: Hit['rule'], subject: string, fact: string, details: Hit['details']): Hit => ({
    rule,
    subject,
    fact,
    enrollmentId: d.enrollmentId,
    aid: d.aid,
    bankAccountId: account,
    paymentId: d.paymentId,
    details,
  });
  const borrower = `enrollment:${d.enrollmentId}`;
  const hits: Hit[] = [];
  if (r.first_debit_unvalidated.enabled && account !== null && d.account && facts.earlierToAccount === 0 && !accountValidated(d.account)) {
    hits.push(on('first_debit_unvalidated', borrower, `payment:${d.paymentId}`, { validated_at: d.account.validatedAt ? iso(d.account.validatedAt) : null }));
  }
  if (r.account_changed.enabled) {
    const noc = d.account?.numberChangedAt ?? null;
    const resend = facts.lastSwitch;
    const latest = resend && (noc === null || resend.at >= noc) ? { at: resend.at, fact: `switch:${resend.id}`, source: 'resend' } : noc !== null ? { at: noc, fact: `noc:${account}:${noc}`, source: 'notification_of_change' } : null;
    const windowDays = r.account_changed.settings.window_days!;
    if (latest && changedWithin(latest.at, now, windowDays)) hits.push(on('account_changed', borrower, latest.fact, { changed_at: iso(latest.at), source: latest.source, window_days: windowDays }));
  }
  if (r.amount_outlier.enabled) {
    const { factor, min_history: minHistory } = r.amount_outlier.settings as { factor: number; min_history: number };
    const o = amountOutlier({ amountCents: d.amountCents, borrowerAmounts: facts.borrowerAmounts, lenderAmounts: facts.lenderAmounts, factor, minHistory });
    if (o.hit) hits.push(on('amount_outlier', borrower, `payment:${d.paymentId}`, { amount: d.amountCents, median: o.baseline, compared_with: o.source, factor }));
  }
  if (r.velocity.enabled && account !== null) {
    const max = r.velocity.settings.max_debits!;
    if (facts.debitsToAccount > max) {
      hits.push(on('velocity', `bank_account:${account}`, `payment:${d.paymentId}`, { debits: facts.debitsToAccount, max_debits: max, window_days: r.velocity.settings.window_days! }));
    }
  }
  if (hits.length > 0) await raise(ctx, d.lenderId, policy, hits);
}

/**
 * A return recorded for one of the service's payments: unauthorized_streak asked when its code is of the
 * unauthorized class. One alert per cluster (routing number, day of enrollments, channel) and calendar month
 * (UTC) of the return that reaches the threshold.
 */
export async function fraudOnReturn(ctx: InTx, v: { lenderId: string; paymentId: string | null; code: string | null }): Promise<void> {
  if (v.paymentId === null || !isUnauthorizedReturn(v.code)) return;
  const policy = await policyInForce(ctx, v.lenderId);
  const rule = policy.rules.unauthorized_streak;
  if (!rule.enabled) return;
  const rc = await ctx.deps.stores.fraud.returnContext(ctx, v.paymentId);
  if (!rc) return;
  const now = ctx.deps.clock.now();
  const { threshold, window_days: windowDays } = rule.settings as { threshold: number; window_days: number };
  const dayStart = rc.enrolledAt - (rc.enrolledAt % DAY_MS);
  const counts = await ctx.deps.stores.fraud.streakCounts(ctx, {
    lenderId: v.lenderId,
    codes: UNAUTHORIZED_RETURNS,
    since: now - windowDays * DAY_MS,
    routing: rc.routing,
    dayStart,
    dayEnd: dayStart + DAY_MS,
    channel: rc.channel,
    cap: threshold,
  });
  const month = iso(now).slice(0, 7);
  const clusters: [string | null, number][] = [
    [rc.routing === null ? null : `routing:${rc.routing}`, counts.routing],
    [`enrolled_on:${iso(dayStart).slice(0, 10)}`, counts.day],
    [rc.channel === null ? null : `channel:${rc.channel}`, counts.channel],
  ];
  const hits: Hit[] = clusters
    .filter((c): c is [string, number] => c[0] !== null && c[1] >= threshold)
    .map(([subject, n]) => ({
      rule: 'unauthorized_streak',
      subject,
      fact: `month:${month}`,
      enrollmentId: rc.enrollmentId,
      aid: rc.aid,
      bankAccountId: rc.bankAccountId,
      paymentId: v.paymentId,
      details: { returns: n, threshold, window_days: windowDays, code: v.code },
    }));
  if (hits.length > 0) await raise(ctx, v.lenderId, policy, hits);
}
