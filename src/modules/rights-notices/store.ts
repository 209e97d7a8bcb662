import type { RightsNoticeChannel } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { NoticeState } from './model';

// What the consumer-rights notices ask of the database (rights_notices, written here only): a notice made due
// once per second failure, the lender's word that it was sent, and the reads of the enrollment view and the
// lender's listing. Every read is bounded: one borrower's notices, a page of a listing off an index.

/** A notice as stored. */
export interface RightsNoticeRow {
  id: string;
  lenderId: string;
  enrollmentId: string;
  /** The borrower's authorizer_unique_id (its enrollment's). */
  aid: string;
  /** The second failed payment's reference. */
  reference: string;
  learnedAt: number;
  dueBy: number;
  sentAt: number | null;
  channel: RightsNoticeChannel | null;
  evidenceRef: string | null;
  createdAt: number;
}

export type NewRightsNotice = Omit<RightsNoticeRow, 'aid' | 'sentAt' | 'channel' | 'evidenceRef'>;

/** A failed payment as the notice's event tells it. */
export interface FailedAttempt {
  id: string;
  reference: string;
  aid: string;
  amountCents: number;
  /** When it was first sent to the processor (its creation when that is not known). */
  attemptedAt: number;
  /** When its return was recorded. */
  returnedAt: number;
  returnCode: string | null;
}

export interface NoticePageQuery {
  lenderId: string;
  state?: NoticeState;
  /** Overdue is due_by before it. */
  now: number;
  /** The position after which the page starts: due_by, then id. */
  after: { dueBy: number; id: string };
  limit: number;
}

export interface RightsNoticeStore {
  /** The lender's payments of these ids, oldest first, as a notice's event tells them (another lender's are left out). */
  attemptsOf(c: StoreCtx, lenderId: string, paymentIds: readonly string[]): Promise<FailedAttempt[]>;
  /** A notice kept unless the lender has one for its reference already: whether it was kept. */
  insertNotice(c: TxCtx, row: NewRightsNotice): Promise<boolean>;
  /** The borrower's oldest notice not sent (by learned_at, then id). */
  oldestOpen(c: StoreCtx, enrollmentId: string): Promise<RightsNoticeRow | undefined>;
  /** The notice recorded as sent, if it was not already: whether this call recorded it. */
  markSent(c: TxCtx, v: { id: string; sentAt: number; channel: RightsNoticeChannel; evidenceRef: string | null }): Promise<boolean>;
  /** Each of these borrowers' latest notice (by learned_at, then id); a borrower with none is absent. */
  latestAmong(c: StoreCtx, enrollmentIds: readonly string[]): Promise<RightsNoticeRow[]>;
  /** A page of the lender's notices in a state (every one without), by due_by then id, after a position. */
  noticesPage(c: StoreCtx, q: NoticePageQuery): Promise<RightsNoticeRow[]>;
}
