import { connectedProviders, connectionFor } from '../bank-data-connections/service';
import { lastReadViews, type LastReadView } from '../balance-requests/service';
import { healthOfLinks, linksEnrolled, probeLinkNow, viewOf, type LinkHealthView } from '../balance-requests/link-health';
import { TransientProviderError } from '../../adapters/bank-data/types';
import type { BankLink } from '../../adapters/bank-data/linked';
import type { Static } from '@sinclair/typebox';
import type { HeldReason, LENDER_VALIDATION_METHODS, MonitorState } from '../../../db/schema/enums';
import { SANDBOX_ROUTING_NUMBERS } from '../../adapters/routing';
import { policyOf } from '../collection-policy/service';
import type { Ctx, Deps } from '../../deps';
import { iso, isoOrNull } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { Conflict, NotFound, Unavailable } from '../../platform/errors';
import { fits, problemsOf } from '../../platform/validation';
import { newId } from '../../platform/ids';
import { keysetPage } from '../../platform/pagination';
import type { SealedColumn } from '../../platform/vault';
import { CardRefused, ProcessorUnavailable, type TokenizedCard } from '../../adapters/processors';
import { validateAuthorizer, type NormalizedAuthorizer } from '../authorizers/rules';
import { eraseBorrowerDetails } from '../balance-requests/erase';
import { openBorrower, sealBorrower, type Enrollment } from './borrower';
import { resolveKey } from '../payment-connections/resolve';
import { Borrower, type EnrollmentRequest, type IdsBody } from './model';
import { type EnrollmentPayment } from './store';
import { type BorrowerWrite, type StoredMonitor } from './monitor-store';
import { applyMonitorEvent, enrollBorrowers } from './monitor-changes';
import { accountBlockOf, type BlockedReason } from './monitor';
import { linkAccounts, type ValidationEvidence } from '../bank-accounts/service';
import { fraudOnEnrollment, linkedOwners } from '../fraud-monitoring/hooks';
import type { LinkedAccount } from '../bank-accounts/store';
import { latestNotices, type rightsNoticeView } from '../rights-notices/service';
import { ledgersOf, type LedgerView } from './ledger';
import { indexBorrowers, unindexBorrowers } from './search';
import { withCallScope } from '../../platform/provider-calls';

const TOKENIZE_CONCURRENCY = 8;

export type EnrollmentInput = Static<typeof EnrollmentRequest>;
export type IdsInput = Static<typeof IdsBody>;

/** Columns of this feature holding vault-sealed values (null once erased). */
export const sealedColumns: SealedColumn[] = [
  { table: 'enrollments', key: 'id', column: 'sealed' },
  { table: 'enrollments', key: 'id', column: 'card_token_sealed' },
];

type Outcome = 'enrolled' | 'updated' | 'held' | 'failed';
interface Result {
  authorizer_unique_id: string | null;
  outcome: Outcome;
  reason?: string;
  message?: string;
}

type Instrument =
  | { kind: 'ach' }
  | { kind: 'token'; token: string; last4: string }
  | { kind: 'card'; card: { number: string; cvv: string | null; expMonth: number; expYear: number } };

interface Candidate {
  index: number;
  aid: string;
  authorizer: NormalizedAuthorizer;
  amount: number;
  daysPastDue: number;
  merchantRef: string | null;
  instrument: Instrument;
  card?: TokenizedCard;
  cfpbCovered: boolean | null;
  authorizationAt: number | null;
  authorizationRef: string | null;
  /** The lender's evidence that the bank account was validated, as sent. */
  validation: { method: (typeof LENDER_VALIDATION_METHODS)[number]; reference: string | null; at: number } | null;
}

const fail = (aid: string | null, reason: string, message?: string): Result => ({
  authorizer_unique_id: aid,
  outcome: 'failed',
  reason,
  ...(message ? { message } : {}),
});

/** One borrower's fields: shape and rules, every problem named by field (never by value). */
function readBorrower(raw: EnrollmentInput['borrowers'][number], index: number, now: number, bankProviders: readonly string[]): Candidate | Result {
  const aid = raw.authorizer_unique_id;
  if (!fits(Borrower, raw)) {
    const problems = problemsOf(Borrower, raw);
    const cardProblem = problems.find((p) => p.path.startsWith('/charge_instrument'));
    if (cardProblem) return fail(aid, 'card_tokenization_failed', `${cardProblem.path.slice(1)}: ${cardProblem.message}`);
    const p = problems[0]!;
    return fail(aid, 'tokenization_failed', `${p.path.slice(1) || 'borrower'}: ${p.message}`);
  }
  const b = raw; // a Borrower from here on
  // Required on enrollment, and not blank (the shared rules treat blank identity fields as absent).
  for (const f of ['first_name', 'last_name', 'phone_number'] as const) {
    if (!b[f].trim()) return fail(aid, 'tokenization_failed', `${f} is required`);
  }
  if (!b.address.zip_code?.trim()) return fail(aid, 'tokenization_failed', 'address.zip_code is required');
  const checked = validateAuthorizer(b, index + 1, { debitCardsApproved: false, now, bankProviders });
  if (!checked.ok) return fail(aid, 'tokenization_failed', checked.failure.error);
  let authorizationAt: number | null = null;
  if (b.authorization) {
    authorizationAt = Date.parse(b.authorization.obtained_at);
    if (!Number.isFinite(authorizationAt)) return fail(aid, 'tokenization_failed', 'authorization.obtained_at: Expected a date-time');
    if (authorizationAt > now) return fail(aid, 'tokenization_failed', 'authorization.obtained_at: Expected a time not in the future');
  }

  let validation: Candidate['validation'] = null;
  if (b.account_validation) {
    const at = Date.parse(b.account_validation.validated_at);
    if (!Number.isFinite(at)) return fail(aid, 'tokenization_failed', 'account_validation.validated_at: Expected a date-time');
    if (at > now) return fail(aid, 'tokenization_failed', 'account_validation.validated_at: Expected a time not in the future');
    if (b.charge_instrument) return fail(aid, 'tokenization_failed', 'account_validation: only a borrower debited from its bank account (no charge_instrument) has one');
    validation = { method: b.account_validation.method, reference: b.account_validation.reference ?? null, at };
  }

  let instrument: Instrument = { kind: 'ach' };
  const ci = b.charge_instrument;
  if (ci) {
    const options = [ci.processor_token !== undefined, ci.card !== undefined].filter(Boolean).length;
    if (options !== 1) return fail(aid, 'card_tokenization_failed', 'charge_instrument holds exactly one of processor_token or card');
    if (ci.processor_token !== undefined) {
      if (!ci.card_last4) return fail(aid, 'card_tokenization_failed', 'card_last4 (4 digits) is required with processor_token');
      instrument = { kind: 'token', token: ci.processor_token, last4: ci.card_last4 };
    } else if (ci.card) {
      const c = ci.card;
      instrument = {
        kind: 'card',
        card: { number: c.debit_card_number.replace(/[\s-]/g, ''), cvv: c.cvv ?? null, expMonth: c.expiration_month, expYear: c.expiration_year },
      };
    }
  }
  return {
    index,
    aid: checked.value.authorizerUniqueId,
    authorizer: checked.value,
    amount: b.collectable_amount,
    daysPastDue: b.days_past_due,
    merchantRef: b.merchant_ref ?? null,
    instrument,
    cfpbCovered: b.cfpb_covered ?? null,
    authorizationAt,
    authorizationRef: b.authorization?.reference ?? null,
    validation,
  };
}

/** Raw cards to tokens at the key that would take the borrower's card payments; the number goes no further. */
async function tokenizeCards(ctx: Ctx, cands: Candidate[], results: (Result | null)[]): Promise<void> {
  const queue = cands.filter((c) => c.instrument.kind === 'card');
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      if (c.instrument.kind !== 'card') continue;
      const { card } = c.instrument;
      const key = await resolveKey(ctx, { lenderId: ctx.lender.id, rail: 'card', merchantRef: c.merchantRef });
      if (!key || !key.keySealed) {
        results[c.index] = fail(c.aid, 'card_tokenization_failed', 'no processor key for card payments');
        continue;
      }
      try {
        c.card = await ctx.deps.processors.forLender(key.processor, ctx.lender.id).tokenizeCard(ctx.deps.vault.open(key.keySealed), card);
      } catch (e) {
        if (e instanceof CardRefused) results[c.index] = fail(c.aid, 'card_tokenization_failed', e.message);
        else if (e instanceof ProcessorUnavailable) {
          results[c.index] = fail(c.aid, 'chunk_failed', 'The processor could not be reached to tokenize the card; send this borrower again');
        } else throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: TOKENIZE_CONCURRENCY }, worker));
}

/**
 * A borrower charged through a Stripe pm_… token verified with Financial Connections, sent without a
 * bank_link, is read through that account when the lender has a Stripe bank-data connection.
 */
async function linkFromPaymentMethods(ctx: Ctx, cands: Candidate[]): Promise<void> {
  const queue = cands.filter((c) => c.instrument.kind === 'token' && c.instrument.token.startsWith('pm_') && !c.authorizer.sensitive.bankLink);
  if (queue.length === 0) return;
  const conn = await connectionFor(ctx.deps, ctx.lender.id, 'stripe');
  if (!conn || conn.creds.provider !== 'stripe') return;
  const creds = conn.creds;
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      if (c.instrument.kind !== 'token') continue;
      const token = c.instrument.token;
      const account = await withCallScope({ lenderId: ctx.lender.id, connectionId: conn.id }, () => ctx.deps.linked.stripe.accountOfPaymentMethod(creds, token));
      if (account) c.authorizer.sensitive.bankLink = { provider: 'stripe', account };
    }
  };
  await Promise.all(Array.from({ length: TOKENIZE_CONCURRENCY }, worker));
}

/** Why a borrower's bank cannot be read, or null when it can. */
export function heldReasonOf(deps: Pick<Deps, 'routing'>, routing: string): HeldReason | null {
  const institution = deps.routing.lookup(routing);
  if (!institution) return 'unresolvable_routing_number';
  if (institution.support !== 'supported') return 'institution_not_supported';
  return null;
}

const HELD_MESSAGES: Record<HeldReason, string> = {
  unresolvable_routing_number: 'The routing number matches no known bank; monitoring starts when it does',
  institution_not_supported: 'The bank is not readable yet; monitoring starts by itself when it is',
};

/**
 * POST /v1/payment_enrollments: every borrower read and checked alone (row failures never fail the
 * request), raw cards tokenized at the processor, then every storable borrower written in one
 * BEGIN IMMEDIATE transaction: all of them or none.
 */
export async function enroll({ ctx, input }: { ctx: Ctx; input: { body: EnrollmentInput } }) {
  const raw = input.body.borrowers;
  const now = ctx.deps.clock.now();

  const results: (Result | null)[] = raw.map(() => null);
  const counts = new Map<string, number>();
  for (const r of raw) counts.set(r.authorizer_unique_id, (counts.get(r.authorizer_unique_id) ?? 0) + 1);
  const cands: Candidate[] = [];
  const bankProviders = await connectedProviders(ctx);
  raw.forEach((r, i) => {
    const id = r.authorizer_unique_id;
    if ((counts.get(id) ?? 0) > 1) {
      results[i] = fail(id, 'duplicate_in_request', 'This authorizer_unique_id appears more than once in the request; every copy is rejected');
      return;
    }
    const c = readBorrower(r, i, now, bankProviders);
    if ('outcome' in c) results[i] = c;
    else cands.push(c);
  });
  await tokenizeCards(ctx, cands, results);
  await linkFromPaymentMethods(ctx, cands);
  const storable = cands.filter((c) => results[c.index] === null);
  // Fraud monitoring's owner_mismatch asks the providers here, before the transaction (no network inside one).
  const owners = await linkedOwners(ctx, storable.map((c) => ({ aid: c.aid, link: c.authorizer.sensitive.bankLink })));

  await transaction(ctx, async (tx) => {
    // Each borrower is written from what is read of it here: another request about it waits for this one.
    await tx.deps.stores.enrollments.serializeBorrowers(tx, ctx.lender.id, storable.map((c) => c.aid));
    const existing = new Map((await tx.deps.stores.monitors.monitorsOf(tx, ctx.lender.id, storable.map((c) => c.aid))).map((e) => [e.aid, e]));
    const held = storable.map((c) => heldReasonOf(ctx.deps, c.authorizer.routingNumber!));
    const accounts = await achAccountsOf(tx, storable, now);
    const policy = await policyOf(tx, ctx.lender.id);
    const writes = storable.map((c, i): { write: BorrowerWrite; prior: StoredMonitor | undefined; held: HeldReason | null } => {
      const routing = c.authorizer.routingNumber!;
      const card = c.card ?? null;
      return {
        write: {
          id: existing.get(c.aid)?.id ?? newId(),
          lenderId: ctx.lender.id,
          aid: c.aid,
          amount: c.amount,
          daysPastDue: c.daysPastDue,
          merchantRef: c.merchantRef,
          rail: c.instrument.kind === 'ach' ? 'ach' : 'card',
          routing,
          bankName: ctx.deps.routing.lookup(routing)?.name ?? null,
          sealed: sealBorrower(ctx.deps, { s: c.authorizer.sensitive, phone: c.authorizer.phone, zip: c.authorizer.zip }),
          metadata: c.authorizer.metadata ? JSON.stringify(c.authorizer.metadata) : null,
          cardTokenSealed: card ? ctx.deps.vault.seal(card.token) : c.instrument.kind === 'token' ? ctx.deps.vault.seal(c.instrument.token) : null,
          cardLast4: card ? card.last4 : c.instrument.kind === 'token' ? c.instrument.last4 : null,
          cardBrand: card?.brand ?? null,
          cfpbCovered: c.cfpbCovered,
          authorizationAt: c.authorizationAt,
          authorizationRef: c.authorizationRef,
          bankAccountId: accounts[i]?.id ?? null,
          now,
        },
        prior: existing.get(c.aid),
        held: held[i]!,
      };
    });
    const changes = await enrollBorrowers(tx, writes);
    // A link sent again whose provider said it needed the borrower is probed at once: repaired in place (the
    // same token, the same account), it is read again without waiting for its next probe.
    // The borrowers holding each link are kept, for the providers' webhooks to find them.
    await linksEnrolled(tx, ctx.lender.id, storable.flatMap((c) => (c.authorizer.sensitive.bankLink ? [{ aid: c.aid, link: c.authorizer.sensitive.bankLink }] : [])), now);
    // Searchable by name, phone and last four from now on (keyed hashes, beside the sealed values).
    await indexBorrowers(
      tx,
      ctx.deps.vault,
      storable.map((c, i) => ({
        lenderId: ctx.lender.id,
        aid: c.aid,
        sensitive: c.authorizer.sensitive,
        phone: c.authorizer.phone,
        cardLast4: writes[i]!.write.cardLast4,
        fresh: !existing.has(c.aid),
      })),
    );
    // Fraud monitoring: an account shared too widely or under different names (shared_account), a linked
    // account whose owners are others (owner_mismatch), and the switches of account a re-send made
    // (account_changed reads them at the next debit).
    await fraudOnEnrollment(
      tx,
      ctx.lender.id,
      storable.map((c, i) => ({
        enrollmentId: writes[i]!.write.id,
        aid: c.aid,
        bankAccountId: writes[i]!.write.bankAccountId ?? null,
        priorAccountId: existing.get(c.aid)?.bankAccountId,
        firstName: c.authorizer.sensitive.firstName,
        lastName: c.authorizer.sensitive.lastName,
        owners: owners.get(c.aid) ?? null,
      })),
    );
    // Borrowers whose account's transaction history is read next (pay-cycles/history.ts), after this commits.
    const wantingHistory: string[] = [];
    for (const [i, c] of storable.entries()) {
      const change = changes[i]!;
      const id = writes[i]!.write.id;
      // A re-sent borrower's debt keeps its chain of presentments: the rules are asked with what this
      // re-send brought (an authorization, an amount), which may block or free it.
      const prior = existing.get(c.aid);
      if (prior && change.state === 'monitored') await ctx.deps.enrollmentChanges.resent(tx, prior.id, now);
      // A new borrower on a bank account whose state blocks it is enrolled, and blocked at once with the
      // account's reason (ENROLLMENT_BLOCKED to the lender), and not read (a re-send asks again, chain.ts).
      const block = accountBlockOf(accounts[i], c.authorizationAt, policy.requireAccountValidation);
      if (!prior && change.state === 'monitored' && block) {
        await applyMonitorEvent(tx, { enrollmentId: id, event: { type: 'blocked', reason: block }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
      }
      if (change.state === 'monitored') wantingHistory.push(id);
      const h = held[i]!;
      results[c.index] = h
        ? { authorizer_unique_id: c.aid, outcome: 'held', reason: h, message: HELD_MESSAGES[h] }
        : { authorizer_unique_id: c.aid, outcome: change.outcome! };
    }
    await ctx.deps.enrollmentChanges.wantHistory(tx, ctx.lender.id, wantingHistory, now);
  });

  // Every borrower has its result by now: a failure before the transaction, or its outcome in it.
  const done = results.filter((r): r is Result => r !== null);
  const n = (o: Outcome) => done.filter((r) => r.outcome === o).length;
  return { results: done, enrolled: n('enrolled'), updated: n('updated'), held: n('held'), failed: n('failed'), already_enrolled: 0 };
}

/**
 * The bank account of each borrower debited by ACH (a routing and an account number), in order, made where it
 * is new; undefined for a card borrower, which has none in this version.
 */
async function achAccountsOf(tx: Ctx & { tx: NonNullable<Ctx['tx']> }, storable: readonly Candidate[], now: number): Promise<(LinkedAccount | undefined)[]> {
  const ach = storable.flatMap((c, i) =>
    c.instrument.kind === 'ach' && c.authorizer.sensitive.accountNumber
      ? [{ i, routing: c.authorizer.routingNumber!, accountNumber: c.authorizer.sensitive.accountNumber, evidence: evidenceOf(tx.deps, c, now) }]
      : [],
  );
  const linked = await linkAccounts(tx, tx.lender.id, ach, now);
  const out: (LinkedAccount | undefined)[] = storable.map(() => undefined);
  ach.forEach((a, k) => (out[a.i] = linked[k]));
  return out;
}

/**
 * The validation evidence an ACH borrower's entry brings for its account: the lender's own (account_validation)
 * when it sent one, else its bank link (Plaid Auth, Stripe Financial Connections), else, where the sandbox is
 * the bank-data source, the sandbox's (its accounts count as linked, but those of its unvalidated bank).
 */
function evidenceOf(deps: Ctx['deps'], c: Candidate, now: number): ValidationEvidence | null {
  if (c.validation) return { method: c.validation.method, source: null, reference: c.validation.reference, at: c.validation.at };
  const link = c.authorizer.sensitive.bankLink;
  if (link) return { method: 'bank_link', source: link.provider, reference: null, at: now };
  if (deps.config.bankDataProvider === 'sandbox' && c.authorizer.routingNumber !== SANDBOX_ROUTING_NUMBERS.unvalidated) {
    return { method: 'bank_link', source: 'sandbox', reference: null, at: now };
  }
  return null;
}

/**
 * DELETE /v1/payment_enrollments: monitoring stops in the transaction that answers, so once this returns no
 * new payment is initiated for a removed borrower, and no payment not yet claimed for sending is sent
 * (collection/dispatch.ts: a send's claim finds the borrower monitored, or nothing goes out).
 */
export async function removeEnrollments({ ctx, input }: { ctx: Ctx; input: { body: IdsInput } }) {
  const ids = input.body.authorizer_unique_ids;
  const now = ctx.deps.clock.now();
  const results = await transaction(ctx, async (tx) => {
    await tx.deps.stores.enrollments.serializeBorrowers(tx, ctx.lender.id, ids);
    const existing = new Map((await tx.deps.stores.monitors.monitorsOf(tx, ctx.lender.id, ids)).map((e) => [e.aid, e]));
    const out: { authorizer_unique_id: string; outcome: 'unknown' | 'not_monitored' | 'removed' }[] = [];
    for (const aid of ids) {
      const e = existing.get(aid);
      if (!e) {
        out.push({ authorizer_unique_id: aid, outcome: 'unknown' });
        continue;
      }
      if (e.state !== 'monitored' && e.state !== 'collected') {
        out.push({ authorizer_unique_id: aid, outcome: 'not_monitored' });
        continue;
      }
      await applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'removed' }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
      await ctx.deps.enrollmentChanges.stopped(tx, e.id);
      existing.set(aid, { ...e, state: 'removed' });
      out.push({ authorizer_unique_id: aid, outcome: 'removed' });
    }
    return out;
  });
  const n = (o: string) => results.filter((r) => r.outcome === o).length;
  return { results, removed: n('removed'), not_monitored: n('not_monitored'), unknown: n('unknown') };
}

/**
 * DELETE /v1/persisted_authorizers: monitoring stops as on removal, and the borrower's personal data and card
 * token are overwritten (the database runs with secure_delete: freed space is zeroed too). Each module erases
 * its own rows (the balance pipeline's clear copies: balance-requests/erase.ts). The record, its payments,
 * events and ledger stay.
 */
export async function eraseBorrowers({ ctx, input }: { ctx: Ctx; input: { body: IdsInput } }) {
  const ids = input.body.authorizer_unique_ids;
  const now = ctx.deps.clock.now();
  const results = await transaction(ctx, async (tx) => {
    await tx.deps.stores.enrollments.serializeBorrowers(tx, ctx.lender.id, ids);
    const existing = new Map((await tx.deps.stores.monitors.monitorsOf(tx, ctx.lender.id, ids)).map((e) => [e.aid, e]));
    const out: { authorizer_unique_id: string; outcome: 'unknown' | 'deleted' }[] = [];
    const erased: { id: string; aid: string }[] = [];
    for (const aid of ids) {
      const e = existing.get(aid);
      if (!e) {
        out.push({ authorizer_unique_id: aid, outcome: 'unknown' });
        continue;
      }
      await applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'erased' }, now, readIntervalMs: ctx.deps.config.monitorReadIntervalMs });
      await ctx.deps.enrollmentChanges.stopped(tx, e.id);
      await eraseBorrowerDetails(tx, ctx.lender.id, aid);
      erased.push({ id: e.id, aid });
      out.push({ authorizer_unique_id: aid, outcome: 'deleted' });
    }
    // Each borrower's own rows, for all of them at once: its personal data, its deposits, its search entries.
    await tx.deps.stores.enrollments.eraseBorrowerData(tx, erased.map((e) => e.id), now);
    await ctx.deps.enrollmentChanges.erased(tx, erased.map((e) => e.id));
    await unindexBorrowers(tx, ctx.lender.id, erased.map((e) => e.aid));
    return out;
  });
  const n = (o: string) => results.filter((r) => r.outcome === o).length;
  return { results, deleted: n('deleted'), unknown: n('unknown') };
}

/**
 * Enrollments as the API and the portal show them, in the order given: a page of the listing, or one borrower.
 * Each kind of row they show (ledger entries and totals, payments, latest reads, bank links' health, the latest
 * consumer-rights notices) is read in one statement for all of them, so a page costs the same number of
 * statements whatever its size.
 */
async function enrollmentViews(ctx: Ctx, es: readonly Enrollment[]) {
  const ids = es.map((e) => e.id);
  const ledgers = await ledgersOf(ctx, es);
  const payments = new Map<string, EnrollmentPayment[]>(ids.map((id) => [id, []]));
  for (const p of await ctx.deps.stores.enrollments.paymentsAmong(ctx, ctx.lender.id, ids)) payments.get(p.enrollmentId)?.push(p);
  const reads = await lastReadViews(
    ctx,
    ctx.lender.id,
    es.flatMap((e) => (e.lastReadAt === null ? [] : [{ aid: e.authorizerUniqueId, cents: e.lastReadCents, at: e.lastReadAt }])),
  );
  // Each borrower's sealed details opened once, for its account's last four and its bank_link.
  const sealed = es.map((e) => (e.sealed ? openBorrower(ctx.deps, e.sealed).s : null));
  const links = sealed.map((s) => s?.bankLink ?? null);
  const healths = await healthOfLinks(ctx, ctx.lender.id, links.filter((l) => l !== null));
  const notices = await latestNotices(ctx, ids);
  let linked = 0;
  return es.map((e, i) => {
    const s = sealed[i] ?? null;
    const link = links[i] ?? null;
    return enrollmentView(e, {
      ledger: ledgers.get(e.id)!,
      payments: payments.get(e.id)!,
      lastRead: e.lastReadAt === null ? null : reads.get(e.authorizerUniqueId)!,
      accountLast4: s?.accountNumber ? s.accountNumber.slice(-4) : null,
      bankLink: link ? bankLinkView(link, viewOf(healths[linked++])) : null,
      rightsNotice: notices.get(e.id) ?? null,
    });
  });
}

/** What an enrollment's view shows beside its own row, read for the whole page by enrollmentViews. */
interface ViewParts {
  ledger: LedgerView;
  payments: EnrollmentPayment[];
  lastRead: LastReadView | null;
  accountLast4: string | null;
  bankLink: ReturnType<typeof bankLinkView> | null;
  rightsNotice: ReturnType<typeof rightsNoticeView> | null;
}

function enrollmentView(e: Enrollment, { ledger, payments, lastRead, accountLast4, bankLink, rightsNotice }: ViewParts) {
  return {
    authorizer_unique_id: e.authorizerUniqueId,
    state: e.state,
    reason: e.reason,
    // Written only by the monitor store, from the state machine: one of BLOCKED_REASONS.
    blocked_reason: e.blockedReason as BlockedReason | null,
    window_started_at: isoOrNull(e.windowStartedAt),
    window_ends_at: isoOrNull(e.windowEndsAt),
    collectable_amount: e.collectableAmountCents,
    days_past_due: e.daysPastDue,
    merchant_ref: e.merchantRef,
    bank_account_id: e.bankAccountId,
    instrument:
      e.rail === 'card'
        ? { rail: 'card' as const, card_brand: e.cardBrand, last4: e.cardLast4 }
        : { rail: 'ach' as const, bank_name: e.bankName, last4: accountLast4 },
    last_read: lastRead,
    bank_link: bankLink,
    next_read_at: e.state === 'monitored' ? isoOrNull(e.nextReadAt) : null,
    pay_cycle:
      e.payCycleFrequency === null
        ? null
        : {
            frequency: e.payCycleFrequency,
            next_payday: e.payCycleNextPayday === null ? null : iso(e.payCycleNextPayday).slice(0, 10),
            confidence: e.payCycleConfidence ?? 0,
            source: e.payCycleSource ?? 'balances',
          },
    payments_used: e.paymentsUsed,
    cfpb_covered: e.cfpbCovered,
    authorization: e.authorizationAt === null ? null : { obtained_at: iso(e.authorizationAt), reference: e.authorizationRef },
    revocation: e.revokedAt === null ? null : { received_at: iso(e.revokedAt), channel: e.revocationChannel!, evidence_ref: e.revocationRef },
    scheduled_payment: scheduledView(payments),
    reauthorization: e.reauthorization ? (JSON.parse(e.reauthorization) as StoredReauthorization) : null,
    reg_e_election: e.regEElection ? (JSON.parse(e.regEElection) as { type: string }) : null,
    rights_notice: rightsNotice,
    payments: payments.map((p) => ({
      reference: p.reference,
      amount: p.amount,
      status: p.status,
      attempt: p.attempt,
      reinitiation_of: p.reinitiationOf,
      notice_class: p.noticeClass,
      created_at: iso(p.createdAt),
      reported:
        p.reportedStatus === null
          ? null
          : { status: p.reportedStatus, return_code: p.reportedReturnCode, reported_at: isoOrNull(p.reportedAt), held_because: p.reportHold },
    })),
    ledger,
  };
}

/** A new authorization under the payday rule as collection/authorizations.ts stores it. */
interface StoredReauthorization {
  obtained_at: string;
  method: string;
  evidence_ref: string;
  transfers: { date: string; max_amount_cents: number; channel: string }[];
  fee_max_amount_cents?: number;
  recorded_at: string;
}

/** The payment waiting out its notice: what the lender tells the borrower. */
function scheduledView(payments: EnrollmentPayment[]) {
  const p = payments.find((x) => x.status === 'scheduled');
  if (!p || p.debitOn === null) return null;
  const notice =
    p.noticeNeeds === null
      ? null
      : { requirements: p.noticeNeeds.split(','), due_from: isoOrNull(p.noticeDueFrom), due_by: isoOrNull(p.noticeDueBy), sent_at: isoOrNull(p.noticeSentAt) };
  return { payment_id: p.id, reference: p.reference, amount: p.amount, debit_on: iso(p.debitOn).slice(0, 10), notice_class: p.noticeClass, notice };
}

/** What is shown of the borrower's bank_link: the provider and which account, never the access token, and its health. */
function bankLinkView(link: BankLink, health: LinkHealthView) {
  return link.provider === 'plaid'
    ? { provider: 'plaid' as const, account_last4: link.accountId.slice(-4), health }
    : { provider: 'stripe' as const, account: link.account, health };
}

export async function getEnrollment({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string } }) {
  const e = await ctx.deps.stores.enrollments.enrollmentOf(ctx, ctx.lender.id, input.authorizerUniqueId);
  if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
  const [view] = await enrollmentViews(ctx, [e]);
  return view!;
}

/**
 * POST /v1/payment_enrollments/{id}/bank_link/check: the borrower's linked account probed now with its
 * provider's free call (Plaid /item/get, Stripe's account retrieve), what the provider says recorded (an open
 * episode closes when the same link is well again, and reads and collection go on), and its health answered.
 */
export async function checkBankLink({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string } }) {
  const e = await ctx.deps.stores.enrollments.enrollmentOf(ctx, ctx.lender.id, input.authorizerUniqueId);
  if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
  if (!e.sealed) throw new Conflict('The borrower’s personal data was erased: there is no linked account to check');
  const link = openBorrower(ctx.deps, e.sealed).s.bankLink;
  if (!link) throw new Conflict('The borrower has no bank_link: there is no linked account to check');
  if (!(await connectionFor(ctx.deps, ctx.lender.id, link.provider))) {
    throw new Conflict(`There is no ${link.provider} bank-data connection to check the link with`, undefined, 'Register one with POST /v1/bank_data_connections');
  }
  let health;
  try {
    health = await probeLinkNow(ctx.deps, ctx.lender.id, e.authorizerUniqueId, link);
  } catch (err) {
    if (err instanceof TransientProviderError) throw new Unavailable('The provider could not be asked just now; nothing changed. Try again.');
    throw err;
  }
  return {
    authorizer_unique_id: e.authorizerUniqueId,
    bank_link: link.provider === 'plaid' ? { provider: 'plaid' as const, account_last4: link.accountId.slice(-4), health } : { provider: 'stripe' as const, account: link.account, health },
  };
}

/**
 * The end of the range of ids that start with `prefix`: SQLite compares text as UTF-8 bytes, and U+10FFFF
 * (a noncharacter, F4 8F BF BF) sorts after every character an id holds.
 */
const prefixEnd = (prefix: string): string => `${prefix}\u{10FFFF}`;

export async function listEnrollments({
  ctx,
  input,
}: {
  ctx: Ctx;
  input: {
    state?: MonitorState;
    /** The portal's filters: a blocked reason, and a prefix of authorizer_unique_id. */
    blockedReason?: BlockedReason;
    prefix?: string;
    limit?: number;
    next_page_token?: string;
    nextPageToken?: string;
  };
}) {
  const prefix = input.prefix ?? '';
  const scope = `enrollments:${ctx.lender.id}:${input.state ?? ''}:${input.blockedReason ?? ''}:${prefix}`;
  const limit = input.limit ?? 50;
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope,
    query: input,
    limit,
    start: { a: '' },
    fetch: (after, take) =>
      ctx.deps.stores.enrollments.enrollmentsPage(ctx, {
        lenderId: ctx.lender.id,
        after: after.a,
        // A prefix starts the range at itself; its rows are contiguous in id order, so the range ends at the
        // first id without it (an index range, however many borrowers follow).
        prefix: prefix ? { from: prefix, to: prefixEnd(prefix) } : null,
        state: input.state,
        blockedReason: input.blockedReason,
        limit: take,
      }),
    positionOf: (e) => ({ a: e.authorizerUniqueId }),
  });
  return {
    enrollments: await enrollmentViews(ctx, page),
    has_more: hasMore,
    next_page_token: nextPageToken,
  };
}
