import { sql, type SQL } from 'drizzle-orm';
import type { RightsNoticeChannel } from '../../../db/schema/enums';
import { num, numOrNull } from '../../platform/sql/numbers';
import type { FailedAttempt, NewRightsNotice, NoticePageQuery, RightsNoticeRow } from './store';

// The consumer-rights notices' statements, written once: both engines run them as they are. What differs is how
// a list is bound (`Dialect`) and how a statement is run, which each engine's store does. Numbers may come back
// as text on PostgreSQL (int8 from a raw query) and are read with num.

/** How an engine binds a list of text. */
export interface Dialect {
  /** `IN (…)` of a list of text, bound as one parameter. */
  inTexts: (values: readonly string[]) => SQL;
}

type Num = number | string;

/** A notice's columns (`r`) with its borrower's authorizer_unique_id (`e`), named as RightsNoticeRow's fields. */
const NOTICE_COLUMNS = sql.raw(`r.id, r.lender_id AS "lenderId", r.enrollment_id AS "enrollmentId", e.authorizer_unique_id AS "aid", r.reference,
  r.learned_at AS "learnedAt", r.due_by AS "dueBy", r.sent_at AS "sentAt", r.channel, r.evidence_ref AS "evidenceRef", r.created_at AS "createdAt"`);

type RawNotice = Omit<RightsNoticeRow, 'learnedAt' | 'dueBy' | 'sentAt' | 'createdAt'> & { learnedAt: Num; dueBy: Num; sentAt: Num | null; createdAt: Num };
export const noticeRowOf = (r: RawNotice): RightsNoticeRow => ({
  id: r.id,
  lenderId: r.lenderId,
  enrollmentId: r.enrollmentId,
  aid: r.aid,
  reference: r.reference,
  learnedAt: num(r.learnedAt),
  dueBy: num(r.dueBy),
  sentAt: numOrNull(r.sentAt),
  channel: r.channel,
  evidenceRef: r.evidenceRef,
  createdAt: num(r.createdAt),
});

type RawAttempt = Omit<FailedAttempt, 'amountCents' | 'attemptedAt' | 'returnedAt'> & { lenderId: string; amountCents: Num; attemptedAt: Num; returnedAt: Num };
/** The rows of attemptsOf that are the lender's, as FailedAttempts. */
export const attemptsOfLender = (found: RawAttempt[], lenderId: string): FailedAttempt[] =>
  found
    .filter((r) => r.lenderId === lenderId)
    .map(({ lenderId: _lender, ...r }) => ({ ...r, amountCents: num(r.amountCents), attemptedAt: num(r.attemptedAt), returnedAt: num(r.returnedAt) }));

/** The states of the listing as conditions on `r` (each answered by its partial index, `rights_notices_open_idx` or `_sent_idx`). */
const stateOf = (q: Pick<NoticePageQuery, 'state' | 'now'>): SQL =>
  q.state === 'open'
    ? sql` AND r.sent_at IS NULL`
    : q.state === 'overdue'
      ? sql` AND r.sent_at IS NULL AND r.due_by < CAST(${q.now} AS BIGINT)`
      : q.state === 'sent'
        ? sql` AND r.sent_at IS NOT NULL`
        : sql``;

export const noticeStatements = (d: Dialect) => ({
  // By id (a seek each, whatever the lender's number of payments); the lender is checked on the rows found.
  attemptsOf: (paymentIds: readonly string[]) => sql`
    SELECT id, lender_id AS "lenderId", reference, authorizer_unique_id AS "aid", amount_cents AS "amountCents",
           COALESCE(first_attempt_at, created_at) AS "attemptedAt", updated_at AS "returnedAt", return_code AS "returnCode"
      FROM payments WHERE id ${d.inTexts(paymentIds)} ORDER BY created_at, id`,
  insert: (r: NewRightsNotice) => sql`
    INSERT INTO rights_notices (id, lender_id, enrollment_id, reference, learned_at, due_by, created_at)
    VALUES (${r.id}, ${r.lenderId}, ${r.enrollmentId}, ${r.reference}, CAST(${r.learnedAt} AS BIGINT), CAST(${r.dueBy} AS BIGINT), CAST(${r.createdAt} AS BIGINT))
    ON CONFLICT (lender_id, reference) DO NOTHING RETURNING id`,
  oldestOpen: (enrollmentId: string) => sql`
    SELECT ${NOTICE_COLUMNS} FROM rights_notices r JOIN enrollments e ON e.id = r.enrollment_id
     WHERE r.enrollment_id = ${enrollmentId} AND r.sent_at IS NULL ORDER BY r.learned_at, r.id LIMIT 1`,
  markSent: (v: { id: string; sentAt: number; channel: RightsNoticeChannel; evidenceRef: string | null }) => sql`
    UPDATE rights_notices SET sent_at = CAST(${v.sentAt} AS BIGINT), channel = ${v.channel}, evidence_ref = ${v.evidenceRef}
     WHERE id = ${v.id} AND sent_at IS NULL RETURNING id`,
  latestAmong: (enrollmentIds: readonly string[]) => sql`
    SELECT * FROM (
      SELECT ${NOTICE_COLUMNS}, ROW_NUMBER() OVER (PARTITION BY r.enrollment_id ORDER BY r.learned_at DESC, r.id DESC) AS n
        FROM rights_notices r JOIN enrollments e ON e.id = r.enrollment_id
       WHERE r.enrollment_id ${d.inTexts(enrollmentIds)}) AS latest
     WHERE n = 1`,
  page: (q: NoticePageQuery) => sql`
    SELECT ${NOTICE_COLUMNS} FROM rights_notices r JOIN enrollments e ON e.id = r.enrollment_id
     WHERE r.lender_id = ${q.lenderId}${stateOf(q)}
       AND (r.due_by > CAST(${q.after.dueBy} AS BIGINT) OR (r.due_by = CAST(${q.after.dueBy} AS BIGINT) AND r.id > ${q.after.id}))
     ORDER BY r.due_by, r.id LIMIT ${q.limit}`,
});

/** A row of latestAmong without its place among the borrower's notices (the query's own). */
export const latestRowOf = ({ n: _n, ...r }: RawNotice & { n: Num }): RightsNoticeRow => noticeRowOf(r);
