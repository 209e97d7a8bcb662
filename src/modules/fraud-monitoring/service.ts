import type { Static } from 'elysia';
import type { FraudRule } from '../../../db/schema/enums';
import type { Ctx, JobContext } from '../../deps';
import { iso, isoOrNull } from '../../platform/clock';
import { transaction, type Tx } from '../../platform/context';
import { Conflict, NotFound } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { keysetPage, type PageQuery } from '../../platform/pagination';
import type { StoreCtx } from '../../platform/store';
import { pushToEndpoints, type TargetsMemo } from '../webhooks/endpoints';
import { freezeAccount } from '../bank-accounts/service';
import type { FraudDispositionInput, FraudPolicyPut } from './model';
import { MAX_NEEDS_INFO } from './model';
import { DEFAULT_FRAUD_POLICY, rulesFrom, storedRules, type FraudPolicy } from './policy';
import { RULES, RULE_IDS } from './rules';
import type { AlertRow, DispositionRow } from './store';

// Fraud monitoring (Nacha's rule for non-consumer Originators, in force 19 June 2026): the lender's policy as
// versioned documents, the alerts its rules raise where the facts arise (hooks.ts), and what the lender does
// with each (a disposition, kept for good). An alert of a hold rule keeps the borrower's debits while it is
// open or needs_info: the collection decision blocks the borrower (fraud_hold) and the dispatch claim refuses to
// send (collection's stores read store-shared.ts OPEN_HOLD). confirmed_fraud freezes the bank account as a
// return does, so no payment not yet sent to it goes out for any borrower on it.

type InTx = JobContext & { tx: Tx };

/** The lender's policy in force: its latest version, or every default (version 0). */
export async function policyInForce(ctx: StoreCtx, lenderId: string): Promise<FraudPolicy> {
  const row = await ctx.deps.stores.fraud.latestPolicy(ctx, lenderId);
  return row ? { version: row.version, rules: storedRules(row.rules) } : DEFAULT_FRAUD_POLICY;
}

/** GET /v1/fraud_monitoring/rules: the catalogue. */
export const ruleCatalogue = () => ({
  rules: RULE_IDS.map((r) => {
    const s = RULES[r];
    return {
      id: s.id,
      version: s.version,
      catches: s.catches,
      reason: s.reason,
      evaluated_at: s.evaluatedAt,
      actions: [...s.actions],
      default_action: s.defaultAction,
      settings: Object.fromEntries(Object.entries(s.settings).map(([k, v]) => [k, { default: v.default, minimum: v.minimum, maximum: v.maximum, description: v.description }])),
    };
  }),
});

async function policyView(ctx: StoreCtx, lenderId: string) {
  const row = await ctx.deps.stores.fraud.latestPolicy(ctx, lenderId);
  const p = row ? { version: row.version, rules: storedRules(row.rules) } : DEFAULT_FRAUD_POLICY;
  return { version: p.version, rules: p.rules, notes: row?.notes ?? null, changed_by: row?.changedBy ?? null, changed_at: isoOrNull(row?.createdAt) };
}

/** GET /v1/fraud_monitoring/policy. */
export const getFraudPolicy = ({ ctx }: { ctx: Ctx }) => policyView(ctx, ctx.lender.id);

/** Who acts when the caller names nobody: the API key, by its id (never the key). */
export const keyActor = (keyId: string) => `api_key:${keyId}`;

/**
 * PUT /v1/fraud_monitoring/policy: a new version, the whole document (a rule absent is on with its defaults,
 * notes absent are none), with who and when. Bounds are checked first, naming the field.
 */
export async function putFraudPolicy({ ctx, input }: { ctx: Ctx; input: { body: Static<typeof FraudPolicyPut>; actor: string } }) {
  const rules = rulesFrom(input.body.rules ?? {});
  const now = ctx.deps.clock.now();
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.fraud.serializePolicy(tx, ctx.lender.id);
    const cur = await tx.deps.stores.fraud.latestPolicy(tx, ctx.lender.id);
    await tx.deps.stores.fraud.insertPolicy(tx, {
      id: newId(),
      lenderId: ctx.lender.id,
      version: (cur?.version ?? 0) + 1,
      rules: JSON.stringify(rules),
      notes: input.body.notes ?? null,
      changedBy: input.body.changed_by ?? input.actor,
      createdAt: now,
    });
    return policyView(tx, ctx.lender.id);
  });
}

/** A hit of a rule, as the hooks find it. */
export interface Hit {
  rule: FraudRule;
  subject: string;
  fact: string;
  enrollmentId: string | null;
  aid: string | null;
  bankAccountId: string | null;
  paymentId: string | null;
  details: Record<string, number | string | boolean | null>;
}

const holds = (a: Pick<AlertRow, 'action' | 'state'>) => a.action === 'hold' && (a.state === 'open' || a.state === 'needs_info');

const alertFields = (a: AlertRow) => ({
  rule: a.rule,
  rule_version: a.ruleVersion,
  policy_version: a.policyVersion,
  action: a.action,
  state: a.state,
  holds: holds(a),
  subject: a.subject,
  authorizer_unique_id: a.aid,
  bank_account_id: a.bankAccountId,
  payment_id: a.paymentId,
  details: JSON.parse(a.details) as Hit['details'],
  created_at: iso(a.createdAt),
});

const alertView = (a: AlertRow, dispositions: readonly DispositionRow[]) => ({
  id: a.id,
  ...alertFields(a),
  disposed_at: isoOrNull(a.disposedAt),
  dispositions: dispositions.map((d) => ({ disposition: d.disposition, note: d.note, disposed_by: d.disposedBy, disposed_at: iso(d.createdAt) })),
});

/**
 * The alerts of these hits, in the caller's transaction, each pushed as FRAUD_ALERT_RAISED: one per rule,
 * subject and fact, however often the fact is evaluated (the store's unique index). Returns how many were new.
 */
export async function raise(ctx: InTx & TargetsMemo, lenderId: string, policy: FraudPolicy, hits: readonly Hit[]): Promise<number> {
  if (hits.length === 0) return 0;
  // The lender's endpoints read once for all the hits (an enrollment of a thousand borrowers may raise as many).
  const memo: InTx & TargetsMemo = ctx.targetsOf ? ctx : { ...ctx, targetsOf: new Map() };
  let raised = 0;
  const now = ctx.deps.clock.now();
  for (const h of hits) {
    const row = {
      id: newId(),
      lenderId,
      rule: h.rule,
      ruleVersion: RULES[h.rule].version,
      policyVersion: policy.version,
      action: policy.rules[h.rule].action,
      subject: h.subject,
      fact: h.fact,
      enrollmentId: h.enrollmentId,
      aid: h.aid,
      bankAccountId: h.bankAccountId,
      paymentId: h.paymentId,
      details: JSON.stringify(h.details),
      createdAt: now,
    };
    if (!(await ctx.deps.stores.fraud.insertAlert(ctx, row))) continue;
    raised++;
    const { id, ...rest } = { ...row, state: 'open' as const, disposedAt: null };
    await pushToEndpoints(memo, now, lenderId, 'FRAUD_ALERT_RAISED', { alert_id: id, ...alertFields({ id, ...rest }) });
  }
  return raised;
}

/** GET /v1/fraud_alerts: the lender's alerts, newest first, by rule, state, borrower and account, a page at a time. */
export async function listAlerts({
  ctx,
  input,
}: {
  ctx: Ctx;
  input: PageQuery & { rule?: FraudRule; state?: AlertRow['state']; authorizer_unique_id?: string; bank_account_id?: string };
}) {
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `fraud_alerts:${ctx.lender.id}:${input.rule ?? ''}:${input.state ?? ''}:${input.authorizer_unique_id ?? ''}:${input.bank_account_id ?? ''}`,
    query: input,
    limit: input.limit ?? 50,
    start: { c: Number.MAX_SAFE_INTEGER, i: '' },
    fetch: (after, take) =>
      ctx.deps.stores.fraud.alertsPage(ctx, {
        lenderId: ctx.lender.id,
        rule: input.rule,
        state: input.state,
        aid: input.authorizer_unique_id,
        bankAccountId: input.bank_account_id,
        after: { createdAt: after.c, id: after.i },
        limit: take,
      }),
    positionOf: (a) => ({ c: a.createdAt, i: a.id }),
  });
  const dispositions = await ctx.deps.stores.fraud.dispositionsOf(
    ctx,
    page.map((a) => a.id),
  );
  return { alerts: page.map((a) => alertView(a, dispositions.filter((d) => d.alertId === a.id))), has_more: hasMore, next_page_token: nextPageToken };
}

/** GET /v1/fraud_alerts/{id}: another lender's or an unknown one is not found. */
export async function getAlert({ ctx, input }: { ctx: Ctx; input: { id: string } }) {
  const a = await ctx.deps.stores.fraud.alertOf(ctx, ctx.lender.id, input.id);
  if (!a) throw new NotFound('Fraud alert', input.id);
  return alertView(a, await ctx.deps.stores.fraud.dispositionsOf(ctx, [a.id]));
}

/**
 * POST /v1/fraud_alerts/{id}/disposition: kept for good. cleared or confirmed_fraud is final (a second is 409);
 * needs_info keeps the alert open. confirmed_fraud freezes the alert's bank account for every borrower on it,
 * as a return does: no payment not yet sent to it goes out (the decision and the dispatch read the account's
 * state, and collection/account-blocks.ts tells each borrower and voids what is scheduled).
 */
export async function disposeAlert({ ctx, input }: { ctx: Ctx; input: { id: string; body: Static<typeof FraudDispositionInput>; actor: string } }) {
  const now = ctx.deps.clock.now();
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.fraud.serializeAlert(tx, input.id);
    const a = await tx.deps.stores.fraud.alertOf(tx, ctx.lender.id, input.id);
    if (!a) throw new NotFound('Fraud alert', input.id);
    if (a.state === 'cleared' || a.state === 'confirmed_fraud') throw new Conflict(`The alert was already disposed of: ${a.state}`);
    const earlier = await tx.deps.stores.fraud.dispositionsOf(tx, [a.id]);
    if (input.body.disposition === 'needs_info' && earlier.length >= MAX_NEEDS_INFO) {
      throw new Conflict(`The alert has ${MAX_NEEDS_INFO} needs_info dispositions already; clear or confirm it`);
    }
    const d: DispositionRow = {
      id: newId(),
      alertId: a.id,
      lenderId: ctx.lender.id,
      disposition: input.body.disposition,
      note: input.body.note ?? null,
      disposedBy: input.body.disposed_by ?? input.actor,
      createdAt: now,
    };
    if (!(await tx.deps.stores.fraud.insertDisposition(tx, d))) throw new Conflict('The alert was disposed of meanwhile');
    await tx.deps.stores.fraud.setAlertState(tx, { id: a.id, state: d.disposition, at: now });
    if (d.disposition === 'confirmed_fraud' && a.bankAccountId) await freezeAccount(tx, { accountId: a.bankAccountId, reference: `fraud_alert:${a.id}`, at: now });
    const after = { ...a, state: d.disposition, disposedAt: d.disposition === 'needs_info' ? a.disposedAt : now };
    return alertView(after, [...earlier, d]);
  });
}

/** Whether an alert of a hold rule keeps the borrower's debits now (dispatch asks before it plans a send). */
export const heldForFraud = (ctx: StoreCtx, enrollmentId: string): Promise<boolean> => ctx.deps.stores.fraud.holdsDebit(ctx, enrollmentId);

