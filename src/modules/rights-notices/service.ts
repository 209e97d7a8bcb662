import type { Static } from 'elysia';
import type { Ctx, JobContext } from '../../deps';
import { addBusinessDays } from '../../platform/business-days';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { transaction, type Tx } from '../../platform/context';
import { Conflict, InvalidInput, NotFound } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { keysetPage, type PageQuery } from '../../platform/pagination';
import { pushToEndpoints } from '../webhooks/endpoints';
import type { NoticeState, RightsNoticeSent } from './model';
import type { RightsNoticeRow } from './store';

// The consumer-rights notice of the CFPB payday rule (12 CFR 1041.9(c)). After a covered borrower's second
// consecutive attempt fails for funds, no further debit goes out without a new authorization (collection's
// rules block the borrower reauthorization_required), and the lender owes the borrower a notice of its rights
// within three business days of learning of that failure. The service makes the notice due when it records the
// second failure (collection/chain.ts calls noteSecondFailure in that transaction) and tells the lender's
// endpoints (RIGHTS_NOTICE_DUE); the lender sends the notice itself and records here when and how it did.

/** The end (UTC) of the third business day after `learnedAt`: weekends and Federal Reserve holidays do not count. */
export const noticeDueBy = (learnedAt: number): number => addBusinessDays(learnedAt, 3) + DAY_MS - 1;

/**
 * The notice made due for a covered borrower's second consecutive failure for funds, `failed` being the first
 * and the second failed payments' ids, oldest first; in the caller's transaction, with RIGHTS_NOTICE_DUE to the
 * lender's endpoints. One per second failure: a notice for its reference already there makes nothing.
 * learned_at is when the service recorded the later of the two failures.
 */
export async function noteSecondFailure(ctx: JobContext & { tx: Tx }, v: { lenderId: string; enrollmentId: string; failed: readonly [string, string] }): Promise<void> {
  const attempts = await ctx.deps.stores.rightsNotices.attemptsOf(ctx, v.lenderId, v.failed);
  const [first, second] = v.failed.map((id) => attempts.find((a) => a.id === id));
  if (!first || !second) return;
  const learnedAt = Math.max(first.returnedAt, second.returnedAt);
  const row = { id: newId(), lenderId: v.lenderId, enrollmentId: v.enrollmentId, reference: second.reference, learnedAt, dueBy: noticeDueBy(learnedAt), createdAt: ctx.deps.clock.now() };
  if (!(await ctx.deps.stores.rightsNotices.insertNotice(ctx, row))) return;
  await pushToEndpoints(ctx, row.createdAt, v.lenderId, 'RIGHTS_NOTICE_DUE', {
    authorizer_unique_id: second.aid,
    notice_id: row.id,
    failed_attempts: [first, second].map((a) => ({
      reference: a.reference,
      amount: a.amountCents,
      attempted_at: iso(a.attemptedAt),
      returned_at: iso(a.returnedAt),
      return_code: a.returnCode,
    })),
    learned_at: iso(learnedAt),
    due_by: iso(row.dueBy),
  });
}

/** A notice as the enrollment view shows it; overdue as of `now`. */
export const rightsNoticeView = (n: RightsNoticeRow, now: number) => ({
  id: n.id,
  learned_at: iso(n.learnedAt),
  due_by: iso(n.dueBy),
  sent_at: isoOrNull(n.sentAt),
  channel: n.channel,
  evidence_ref: n.evidenceRef,
  overdue: n.sentAt === null && n.dueBy < now,
});

/** A notice as the listing and the recording answer it. */
const noticeView = (n: RightsNoticeRow, now: number) => ({ ...rightsNoticeView(n, now), authorizer_unique_id: n.aid, reference: n.reference });

/** Each of these borrowers' latest notice, by enrollment id, for the enrollment views (one statement for a page). */
export async function latestNotices(ctx: Ctx, enrollmentIds: readonly string[]): Promise<Map<string, ReturnType<typeof rightsNoticeView>>> {
  const now = ctx.deps.clock.now();
  const found = await ctx.deps.stores.rightsNotices.latestAmong(ctx, enrollmentIds);
  return new Map(found.map((n) => [n.enrollmentId, rightsNoticeView(n, now)]));
}

/**
 * POST /v1/payment_enrollments/{id}/rights_notice: the borrower's oldest notice not sent is recorded as sent,
 * when and how the lender says. An unknown borrower (or another lender's) is 404; none open is 409; a sent_at in
 * the future or before the notice's learned_at is 400.
 */
export async function recordNoticeSent({ ctx, input }: { ctx: Ctx; input: { authorizerUniqueId: string; body: Static<typeof RightsNoticeSent> } }) {
  const sentAt = Date.parse(input.body.sent_at);
  if (!Number.isFinite(sentAt)) throw InvalidInput.field('sent_at', 'sent_at must be a date-time');
  const now = ctx.deps.clock.now();
  if (sentAt > now) throw InvalidInput.field('sent_at', 'sent_at must not be in the future');
  return transaction(ctx, async (tx) => {
    const e = await tx.deps.stores.enrollments.enrollmentOf(tx, ctx.lender.id, input.authorizerUniqueId);
    if (!e) throw new NotFound('Enrollment', input.authorizerUniqueId);
    const notice = await tx.deps.stores.rightsNotices.oldestOpen(tx, e.id);
    if (!notice) throw new Conflict('The borrower has no consumer-rights notice waiting to be sent');
    if (sentAt < notice.learnedAt) {
      throw InvalidInput.field('sent_at', `sent_at must not be before the notice’s learned_at (${iso(notice.learnedAt)})`, 'Send the time the notice was sent, after the second failure was learned');
    }
    const v = { id: notice.id, sentAt, channel: input.body.channel, evidenceRef: input.body.evidence_ref ?? null };
    if (!(await tx.deps.stores.rightsNotices.markSent(tx, v))) throw new Conflict('The notice was recorded as sent meanwhile');
    return noticeView({ ...notice, sentAt, channel: v.channel, evidenceRef: v.evidenceRef }, now);
  });
}

/** GET /v1/compliance/notices: the lender's notices by due_by (most urgent first), of one state or all, a page at a time. */
export async function listNotices({ ctx, input }: { ctx: Ctx; input: PageQuery & { state?: NoticeState } }) {
  const now = ctx.deps.clock.now();
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `rights_notices:${ctx.lender.id}:${input.state ?? ''}`,
    query: input,
    limit: input.limit ?? 50,
    start: { d: 0, i: '' },
    fetch: (after, take) => ctx.deps.stores.rightsNotices.noticesPage(ctx, { lenderId: ctx.lender.id, state: input.state, now, after: { dueBy: after.d, id: after.i }, limit: take }),
    positionOf: (n) => ({ d: n.dueBy, i: n.id }),
  });
  return { notices: page.map((n) => noticeView(n, now)), has_more: hasMore, next_page_token: nextPageToken };
}
