import type { NoticeChannel } from '../../../db/schema/enums';

// The windows of the payday rule's payment notices and the Regulation E elections, as the lender's policy
// bounds them (its notice_days, notice_channel and reg_e_election); collection/notices.ts plans each debit's
// notice with them.

/** A window of notice, in business days before the debit's day: no earlier than `earliest` (null: any time before), no later than `latest`. */
export interface NoticeWindow {
  earliest: number | null;
  latest: number;
}

export const CFPB_WINDOWS: Record<'first' | 'unusual' | 'reinitiation', Record<NoticeChannel, NoticeWindow>> = {
  first: { electronic: { earliest: null, latest: 3 }, mail: { earliest: null, latest: 6 } },
  unusual: { electronic: { earliest: 7, latest: 3 }, mail: { earliest: 10, latest: 6 } },
  reinitiation: { electronic: { earliest: 7, latest: 3 }, mail: { earliest: 10, latest: 6 } },
};

/** A borrower's Regulation E election (12 CFR 1005.10(d)(2)); `none` only as a lender's default (no varying-amount notice). */
export type RegEElection =
  | { type: 'none' }
  | { type: 'always' }
  | { type: 'outside_range'; min_cents: number; max_cents: number }
  | { type: 'difference_over'; amount_cents: number };

/**
 * The lead times (business days) a lender's notice_days may take for a covered loan: inside every class's window
 * for its channel (it must leave room for the latest day and not pass the earliest); 0 lets each class take its own.
 */
export function leadBounds(channel: NoticeChannel): { min: number; max: number } {
  const w = CFPB_WINDOWS.unusual[channel];
  return { min: Math.max(w.latest, CFPB_WINDOWS.first[channel].latest), max: w.earliest! };
}

