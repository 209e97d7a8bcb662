import type { BankAccountState, ValidationMethod } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { accountStateOfReturn, type BlockingAccountState } from '../../adapters/processors/account-states';
import { iso, isoOrNull } from '../../platform/clock';
import type { PlatformDeps } from '../../platform/context';
import { NotFound } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { keysetPage } from '../../platform/pagination';
import type { TxCtx } from '../../platform/store';
import { canonicalAccount, fingerprintKey, fingerprintOf } from './fingerprint';
import type { BankAccountRow, ChangeRow, LinkedAccount } from './store';
import { changeView } from './changes';
import { accountValidated } from './standing';

// Bank accounts as the service knows them: one record per lender per ACH account (a routing and an account
// number), linked from every enrollment of a borrower debited by ACH (enrollments/service.ts, and for
// borrowers stored before accounts were known, enrollments/account-links.ts). A return of a debit to it sets
// its state for every borrower on it (collection/reactions.ts); the collection decision and the dispatch read
// that state (payments.md, Bank accounts).

/** How an account was validated, by what (a provider, the processor's method), the lender's reference, and when. */
export interface ValidationEvidence {
  method: ValidationMethod;
  source: string | null;
  reference: string | null;
  at: number;
}

/** An ACH account as an enrollment gives it, with the validation evidence its entry brings. */
export interface AchAccount {
  routing: string;
  accountNumber: string;
  evidence?: ValidationEvidence | null;
}

type LinkCtx = TxCtx & { deps: Pick<PlatformDeps, 'vault' | 'clock'> };

/**
 * The lender's bank accounts of these ACH accounts, in their order, each made (state ok) where it is new: the
 * fingerprints computed once for all, one store call for all of them.
 */
export async function linkAccounts(c: LinkCtx, lenderId: string, accounts: readonly AchAccount[], now: number): Promise<LinkedAccount[]> {
  if (accounts.length === 0) return [];
  const key = await fingerprintKey(c);
  const wanted = accounts.map((a) => {
    const number = canonicalAccount(a.accountNumber);
    return { id: newId(), fingerprint: fingerprintOf(key, a.routing, number), last4: number.slice(-4) };
  });
  const found = await c.deps.stores.bankAccounts.accountsFor(c, lenderId, wanted, now);
  const linked = wanted.map((w) => found.get(w.fingerprint)!);
  // Each account keeps its latest evidence: one store call for the accounts given a later one than they have.
  const latest = new Map<string, ValidationEvidence>();
  accounts.forEach((a, i) => {
    const e = a.evidence;
    const account = linked[i]!;
    if (!e || (account.validatedAt !== null && account.validatedAt >= e.at)) return;
    const kept = latest.get(account.id);
    if (!kept || kept.at < e.at) latest.set(account.id, e);
  });
  if (latest.size > 0) {
    await c.deps.stores.bankAccounts.recordValidations(c, [...latest].map(([id, e]) => ({ id, ...e })));
    // The standings answered are as they stand now.
    return linked.map((a) => {
      const e = latest.get(a.id);
      return e ? { ...a, validatedAt: e.at } : a;
    });
  }
  return linked;
}

/**
 * A return recorded against an account (the outcome path, collection/reactions.ts): the state its code sets
 * (adapters/processors/account-states.ts), kept if the account's is more severe, its code added; nothing for
 * a code that says nothing of the account. Its monitored borrowers are told by the account-blocks job; until
 * then, and whatever it does, no payment is created, released or sent for any of them (the decision and the
 * dispatch read the account's state).
 */
export async function recordAccountReturn(
  c: TxCtx,
  v: { accountId: string; code: string | null; reference: string; at: number; stricter?: Readonly<Record<string, BlockingAccountState>> },
): Promise<void> {
  const state = accountStateOfReturn(v.code, v.stricter);
  if (state === null) return;
  await c.deps.stores.bankAccounts.recordReturn(c, { id: v.accountId, state, code: v.code!, reference: v.reference, at: v.at });
}

/**
 * The lender confirmed fraud on an account (fraud-monitoring): frozen, as a return that freezes it would (a more
 * severe state kept), with the alert as its reference and no return code. Every borrower on it is blocked from
 * then on, and told by the account-blocks job as after a return.
 */
export async function freezeAccount(c: TxCtx, v: { accountId: string; reference: string; at: number }): Promise<void> {
  await c.deps.stores.bankAccounts.recordReturn(c, { id: v.accountId, state: 'frozen', code: null, reference: v.reference, at: v.at });
}

/** At most this many borrowers an account's view names; `enrollment_count` says how many there are. */
export const BORROWERS_SHOWN = 20;

/** At most this many Notifications of Change an account's view lists, newest first; `change_count` says how many there are. */
export const CHANGES_SHOWN = 20;

function accountView(a: BankAccountRow, borrowers: { aid: string; total: number }[], changes: (ChangeRow & { total: number })[]) {
  return {
    id: a.id,
    last4: a.last4,
    state: a.state,
    state_since: iso(a.stateSince),
    return_codes: a.returnCodes,
    state_reference: a.stateReference,
    last_return_at: isoOrNull(a.lastReturnAt),
    account_type: a.accountType,
    validation:
      a.validationMethod === null || a.validatedAt === null
        ? null
        : { method: a.validationMethod, source: a.validationSource, reference: a.validationReference, validated_at: iso(a.validatedAt), current: accountValidated(a) },
    number_changed_at: isoOrNull(a.numberChangedAt),
    pending_change_id: a.pendingChangeId,
    changes: changes.map(changeView),
    change_count: changes[0]?.total ?? 0,
    enrollment_count: borrowers[0]?.total ?? 0,
    enrollments: borrowers.map((b) => ({ authorizer_unique_id: b.aid })),
    created_at: iso(a.createdAt),
    updated_at: iso(a.updatedAt),
  };
}

/** Accounts as the API shows them: their borrowers read in one statement for the whole page. */
async function accountViews(ctx: Ctx, accounts: readonly BankAccountRow[]) {
  const ids = accounts.map((a) => a.id);
  const on = new Map<string, { aid: string; total: number }[]>(accounts.map((a) => [a.id, []]));
  for (const b of await ctx.deps.stores.bankAccounts.borrowersOn(ctx, ids, BORROWERS_SHOWN)) on.get(b.accountId)?.push(b);
  const changes = new Map<string, (ChangeRow & { total: number })[]>(accounts.map((a) => [a.id, []]));
  for (const ch of await ctx.deps.stores.bankAccounts.changesOn(ctx, ids, CHANGES_SHOWN)) changes.get(ch.bankAccountId)?.push(ch);
  return accounts.map((a) => accountView(a, on.get(a.id)!, changes.get(a.id)!));
}

/** GET /v1/bank_accounts: the lender's accounts by id, all or of one state, a page at a time. */
export async function listBankAccounts({ ctx, input }: { ctx: Ctx; input: { state?: BankAccountState; limit?: number; next_page_token?: string; nextPageToken?: string } }) {
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `bank_accounts:${ctx.lender.id}:${input.state ?? ''}`,
    query: input,
    limit: input.limit ?? 50,
    start: { a: '' },
    fetch: (after, take) => ctx.deps.stores.bankAccounts.accountsPage(ctx, { lenderId: ctx.lender.id, state: input.state, after: after.a, limit: take }),
    positionOf: (a) => ({ a: a.id }),
  });
  return { bank_accounts: await accountViews(ctx, page), has_more: hasMore, next_page_token: nextPageToken };
}

/** GET /v1/bank_accounts/{id}: one of the lender's accounts; another lender's is not found. */
export async function getBankAccount({ ctx, input }: { ctx: Ctx; input: { id: string } }) {
  const a = await ctx.deps.stores.bankAccounts.accountOf(ctx, ctx.lender.id, input.id);
  if (!a) throw new NotFound('Bank account', input.id);
  const [view] = await accountViews(ctx, [a]);
  return view!;
}
