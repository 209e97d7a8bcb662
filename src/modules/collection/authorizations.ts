import type { AuthorizationMethod, NoticeChannel, NoticeClass, Rail } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { transaction, type Tx } from '../../platform/context';
import { resolveKey } from '../payment-connections/resolve';
import { fraudOnDebit } from '../fraud-monitoring/hooks';
import { Conflict, InvalidInput, NotFound } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { localDayOf, localTime } from '../../platform/zone';
import { policyOf, checkedElection } from '../collection-policy/service';
import { applyMonitorEvent } from '../enrollments/monitor-changes';
import { revokedNow } from '../enrollments/monitor';
import { holdChain } from './chain';
import { cfpbWindowOf, dayOfString, dayString, windowDays, type AuthorizedTransfer, type NoticeNeed, type RegEElection } from './notices';
import { referenceOf } from './reference';
import type { PaymentNotice } from './store';

// What the lender tells the service of a borrower's notices and authorizations, as the CFPB payday rule and
// Regulation E ask them (docs/payments.md, Payment notices):
// - a payment notice was sent (POST /v1/payments/{id}/notice), inside the window the payment was planned with;
// - a covered borrower's new authorization after two failures, naming each further transfer's date, maximum
//   amount and channel (12 CFR 1041.8(c)): POST /v1/payment_enrollments/{id}/authorizations;
// - a single immediate payment the borrower asked for (1041.8(d)): POST /v1/payment_enrollments/{id}/payments;
// - the borrower's Regulation E election for varying amounts: POST /v1/payment_enrollments/{id}/reg_e_election.

const MAX_TRANSFERS = 60;

const needsOf = (p: { noticeNeeds: string | null }): NoticeNeed[] => (p.noticeNeeds ? (p.noticeNeeds.split(',') as NoticeNeed[]) : []);

const noticeView = (p: PaymentNotice) => ({
  payment_id: p.id,
  reference: p.reference,
  authorizer_unique_id: p.aid,
  status: p.status,
  amount: p.amountCents,
  debit_on: p.debitOn === null ? null : dayString(p.debitOn),
  notice_class: p.noticeClass,
  requirements: needsOf(p),
  notice_due_from: isoOrNull(p.noticeDueFrom),
  notice_due_by: isoOrNull(p.noticeDueBy),
  notice_sent_at: isoOrNull(p.noticeSentAt),
  notice_sent_channel: p.noticeSentChannel,
  evidence_ref: p.noticeEvidenceRef,
});

/** The window of a payment's notice sent by `channel` (the payday rule's windows differ by channel), as instants. */
export function windowFor(p: { debitOn: number; noticeClass: NoticeClass | null; noticeNeeds: string | null; createdAt: number }, channel: NoticeChannel, timeZone: string | null) {
  const w = windowDays(p.debitOn, needsOf(p), cfpbWindowOf(p.noticeClass, channel));
  const from = Number.isFinite(w.from) ? Math.max(p.createdAt, localTime(w.from, 0, timeZone)) : p.createdAt;
  return { dueFrom: from, dueBy: localTime(w.by + DAY_MS, 0, timeZone) - 1 };
}

/**
 * POST /v1/payments/{id}/notice: the lender sent the payment's notice. Kept once; only for a scheduled payment
 * that needs one, sent inside its window for the channel it went by (a 400 naming the window otherwise).
 */
export async function recordPaymentNotice({ ctx, input }: { ctx: Ctx; input: { paymentId: string; body: { sent_at: string; channel: NoticeChannel; evidence_ref?: string } } }) {
  const sentAt = Date.parse(input.body.sent_at);
  if (!Number.isFinite(sentAt)) throw InvalidInput.field('/sent_at', 'Expected a date-time');
  const now = ctx.deps.clock.now();
  if (sentAt > now) throw InvalidInput.field('/sent_at', 'Expected a time not in the future');
  return transaction(ctx, async (tx) => {
    const p = await tx.deps.stores.decisions.paymentNoticeOf(tx, ctx.lender.id, input.paymentId);
    if (!p) throw new NotFound('Payment', input.paymentId);
    if (p.noticeNeeds === null || p.debitOn === null) throw new Conflict('This payment needs no notice');
    if (p.noticeSentAt !== null) throw new Conflict(`Its notice was confirmed already (sent ${iso(p.noticeSentAt)})`);
    if (p.status !== 'scheduled') throw new Conflict(`The payment is ${p.status}: a notice confirmed now cannot let it go out`);
    const { timeZone } = await policyOf(tx, ctx.lender.id);
    const w = windowFor({ ...p, debitOn: p.debitOn }, input.body.channel, timeZone);
    if (sentAt < w.dueFrom || sentAt > w.dueBy) {
      throw InvalidInput.field(
        '/sent_at',
        `A ${input.body.channel} notice of this payment is sent between ${iso(w.dueFrom)} and ${iso(w.dueBy)}; ${iso(sentAt)} is outside it`,
        'A payment goes out only with a notice confirmed inside its window; one whose window passes is voided and planned again',
      );
    }
    const v = { id: p.id, sentAt, channel: input.body.channel, ref: input.body.evidence_ref ?? null, dueFrom: w.dueFrom, dueBy: w.dueBy, now };
    if (!(await tx.deps.stores.decisions.confirmNotice(tx, v))) throw new Conflict('The payment moved on meanwhile');
    return noticeView({ ...p, noticeSentAt: sentAt, noticeSentChannel: v.channel, noticeEvidenceRef: v.ref, noticeDueFrom: w.dueFrom, noticeDueBy: w.dueBy });
  });
}

export interface AuthorizationInput {
  obtained_at: string;
  method: AuthorizationMethod;
  evidence_ref: string;
  transfers: AuthorizedTransfer[];
  fee_max_amount_cents?: number;
}

/** What the enrollment view shows of a new authorization (as stored). */
export const reauthorizationView = (json: string | null) => (json ? (JSON.parse(json) as AuthorizationInput & { recorded_at: string }) : null);

/**
 * POST /v1/payment_enrollments/{id}/authorizations: a covered borrower's new authorization after two failures
 * (12 CFR 1041.8(c)). It may be obtained no earlier than the consumer-rights notice was sent (1041.8(c)(3)(i))
 * and must be dated after a revocation; each transfer names a date (on or after it was obtained), a maximum
 * amount and a channel. From then on the borrower's debits go only on those dates, for at most those amounts,
 * through that channel; it is the only thing that lifts the payday rule's block.
 */
export async function recordReauthorization({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string; body: AuthorizationInput } }) {
  const b = input.body;
  const at = Date.parse(b.obtained_at);
  if (!Number.isFinite(at)) throw InvalidInput.field('/obtained_at', 'Expected a date-time');
  const now = ctx.deps.clock.now();
  if (at > now) throw InvalidInput.field('/obtained_at', 'Expected a time not in the future');
  if (b.transfers.length === 0 || b.transfers.length > MAX_TRANSFERS) throw InvalidInput.field('/transfers', `Expected 1 to ${MAX_TRANSFERS} transfers`);
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.enrollments.serializeBorrowers(tx, ctx.lender.id, [input.authorizerUniqueId]);
    const e = await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId);
    if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
    const policy = await policyOf(tx, ctx.lender.id);
    const obtainedOn = localDayOf(at, policy.timeZone);
    const seen = new Set<number>();
    b.transfers.forEach((t, i) => {
      const day = dayOfString(t.date);
      if (day === null) throw InvalidInput.field(`/transfers/${i}/date`, 'Expected a calendar date YYYY-MM-DD');
      if (day < obtainedOn) throw InvalidInput.field(`/transfers/${i}/date`, 'A transfer’s date is on or after the day the authorization was obtained');
      if (seen.has(day)) throw InvalidInput.field(`/transfers/${i}/date`, 'Each date once');
      seen.add(day);
    });
    if (e.revokedAt !== null && at <= e.revokedAt) {
      throw InvalidInput.field('/obtained_at', `The borrower revoked its authorization at ${iso(e.revokedAt)}: a new one is dated after it`);
    }
    const open = await tx.deps.stores.rightsNotices.oldestOpen(tx, e.id);
    if (open) throw new Conflict('The consumer-rights notice is not recorded as sent: a new authorization may be asked for only once the borrower has it (12 CFR 1041.8(c)(3)(i))');
    const [latest] = await tx.deps.stores.rightsNotices.latestAmong(tx, [e.id]);
    if (!latest || latest.sentAt === null) throw new Conflict('The borrower owes no consumer-rights notice: the payday rule asks for no new authorization (a re-send’s authorization answers a stop or a revocation)');
    if (at < latest.sentAt) throw InvalidInput.field('/obtained_at', `The consumer-rights notice was sent at ${iso(latest.sentAt)}: a new authorization is obtained no earlier`);
    const record = { obtained_at: iso(at), method: b.method, evidence_ref: b.evidence_ref, transfers: [...b.transfers].sort((x, y) => x.date.localeCompare(y.date)), ...(b.fee_max_amount_cents !== undefined ? { fee_max_amount_cents: b.fee_max_amount_cents } : {}), recorded_at: iso(now) };
    await tx.deps.stores.enrollments.recordReauthorization(tx, { id: e.id, lenderId: ctx.lender.id, authorizationId: newId(), at, record: JSON.stringify(record), now });
    // The rules are asked again at once: the payday rule's block (or a revocation's) lifts, and reads resume.
    await holdChain(tx, e.id, now);
    const after = (await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId))!;
    return { authorizer_unique_id: after.authorizerUniqueId, state: after.state, blocked_reason: after.blockedReason, reauthorization: reauthorizationView(after.reauthorization)! };
  });
}

const MAX_LISTED = 100;

/** GET /v1/payment_enrollments/{id}/authorizations: every new authorization recorded for the borrower, latest first (at most 100). */
export async function listReauthorizations({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string } }) {
  const e = await ctx.deps.stores.enrollments.enrollmentOf(ctx, ctx.lender.id, input.authorizerUniqueId);
  if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
  const records = await ctx.deps.stores.enrollments.reauthorizationsOf(ctx, e.id, MAX_LISTED);
  return { authorizer_unique_id: e.authorizerUniqueId, authorizations: records.map((r) => reauthorizationView(r)!) };
}

/** POST /v1/payment_enrollments/{id}/reg_e_election: the borrower's Regulation E election; null: the policy's. */
export async function recordRegEElection({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string; body: { election: RegEElection | null } } }) {
  const election = input.body.election === null ? null : checkedElection(input.body.election, '/election');
  return transaction(ctx, async (tx) => {
    const e = await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId);
    if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
    await tx.deps.stores.enrollments.recordRegEElection(tx, { id: e.id, election: election === null ? null : JSON.stringify(election), now: ctx.deps.clock.now() });
    const policy = await policyOf(tx, ctx.lender.id);
    return { authorizer_unique_id: e.authorizerUniqueId, election: election ?? policy.regEElection, from_policy: election === null };
  });
}

/**
 * POST /v1/payment_enrollments/{id}/payments with consumer_initiated: a single payment the borrower asked for
 * (12 CFR 1041.8(d)): it goes out on its date without a new authorization, whatever the payday rule's block,
 * and is recorded as such (class consumer_initiated). Only for a monitored borrower with nothing in flight, not
 * revoked, for at most the collectable amount; its bank account's state and every other check at the send
 * still hold (a blocked account, a removal or a revocation before it goes means it is never sent).
 */
export async function createConsumerPayment({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string; body: { consumer_initiated: true; amount_cents: number; date: string } } }) {
  const now = ctx.deps.clock.now();
  const day = dayOfString(input.body.date);
  if (day === null) throw InvalidInput.field('/date', 'Expected a calendar date YYYY-MM-DD');
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.enrollments.serializeBorrowers(tx, ctx.lender.id, [input.authorizerUniqueId]);
    const e = await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId);
    if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
    const policy = await policyOf(tx, ctx.lender.id);
    if (day < localDayOf(now, policy.timeZone)) throw InvalidInput.field('/date', 'Expected today or a later day (the lender’s time zone)');
    if (input.body.amount_cents > e.collectableAmountCents) throw InvalidInput.field('/amount_cents', `At most the collectable amount (${e.collectableAmountCents} cents)`);
    if (e.state !== 'monitored') throw new Conflict(`The borrower is ${e.state}: a payment is made only for a monitored borrower`);
    await tx.deps.stores.decisions.serializeBorrowers(tx, [e.id]);
    const chain = await tx.deps.stores.decisions.chainInputsOf(tx, e.id);
    if (chain && revokedNow(chain)) throw new Conflict('The borrower revoked its authorization: record the borrower’s new authorization with a re-send first');
    if (await tx.deps.stores.decisions.paymentInFlight(tx, e.id)) throw new Conflict('The borrower has a payment in flight');
    if (await tx.deps.stores.decisions.scheduledPaymentOf(tx, e.id)) throw new Conflict('The borrower has a scheduled payment');
    return createConsumer(tx, e, { amountCents: input.body.amount_cents, day, timeZone: policy.timeZone, now });
  });
}

async function createConsumer(
  tx: Ctx & { tx: Tx },
  e: { id: string; lenderId: string; authorizerUniqueId: string; rail: Rail; merchantRef: string | null; bankAccountId: string | null },
  v: { amountCents: number; day: number; timeZone: string | null; now: number },
) {
  const k = await resolveKey(tx, { lenderId: e.lenderId, rail: e.rail, merchantRef: e.merchantRef });
  if (!k?.keySealed) throw new Conflict('No processor key resolves for the borrower');
  const id = newId();
  const reference = referenceOf(e.authorizerUniqueId, id);
  // Due at the start of its day in the lender's zone: dispatch sends it then, through the same claim as any debit.
  const dueAt = Math.max(v.now, localTime(v.day, 0, v.timeZone));
  await tx.deps.stores.decisions.createPayment(tx, {
    id,
    lenderId: e.lenderId,
    enrollmentId: e.id,
    authorizerUniqueId: e.authorizerUniqueId,
    connectionId: k.id,
    rail: e.rail,
    amountCents: v.amountCents,
    reference,
    status: 'initiating',
    attempt: 1,
    reinitiationOf: null,
    debitOn: v.day,
    noticeClass: 'consumer_initiated',
    bankAccountId: e.rail === 'ach' ? e.bankAccountId : null,
    state: 'pending',
    nextAttemptAt: dueAt,
    createdAt: v.now,
    updatedAt: v.now,
  });
  // Fraud monitoring's debit rules, as for any debit: a hold rule's hit keeps it unsent until cleared.
  const account = e.rail === 'ach' ? await tx.deps.stores.decisions.accountStandingOf(tx, e.id) : null;
  await fraudOnDebit(tx, { lenderId: e.lenderId, enrollmentId: e.id, aid: e.authorizerUniqueId, rail: e.rail, bankAccountId: e.rail === 'ach' ? e.bankAccountId : null, account, paymentId: id, amountCents: v.amountCents });
  await applyMonitorEvent(tx, { enrollmentId: e.id, event: { type: 'payment_initiated' }, now: v.now, readIntervalMs: tx.deps.config.monitorReadIntervalMs });
  return { payment_id: id, reference, authorizer_unique_id: e.authorizerUniqueId, amount: v.amountCents, debit_on: dayString(v.day), notice_class: 'consumer_initiated' as const, status: 'initiating' as const };
}
