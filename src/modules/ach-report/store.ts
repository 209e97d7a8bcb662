import type { ChangeStatus } from '../../../db/schema/enums';
import type { BlockingAccountState } from '../../adapters/processors/account-states';
import type { StoreCtx } from '../../platform/store';

// What the monthly ACH report reads beyond the debits and returns (those are the return rates' own statements,
// return-rates/service.ts): the lender's Notifications of Change received in the month and its accounts
// blocked in it. Reads only; every one bounded by the month's rows of the lender, read from an index.

/**
 * Where a Notification of Change stands against its due_by (Nacha's six banking days), as of the report:
 * `on_time` applied on or before the day of due_by (UTC), `late` applied after it, `overdue` not applied and
 * that day is over, `pending` not applied and still within it, `none` recorded with nothing to apply (C09, C13).
 */
export const TIMELINESS = ['on_time', 'late', 'overdue', 'pending', 'none'] as const;
export type Timeliness = (typeof TIMELINESS)[number];

/** How many Notifications of Change of one code, status and timeliness. */
export interface ChangeCount {
  code: string;
  status: ChangeStatus;
  timeliness: Timeliness;
  n: number;
}

/** A Notification of Change as the report lists it: never the corrected details, which are sealed. */
export interface ChangeRow {
  id: string;
  code: string;
  status: ChangeStatus;
  bankAccountId: string;
  receivedAt: number;
  dueBy: number;
  appliedAt: number | null;
  timeliness: Timeliness;
}

export interface AchReportStore {
  /** The lender's Notifications of Change received in [from, to], counted by code, status and timeliness as of `now`. */
  changeCounts(c: StoreCtx, lenderId: string, from: number, to: number, now: number): Promise<ChangeCount[]>;
  /** The first `limit` of them by received_at (then by id), with their timeliness as of `now`. */
  changesIn(c: StoreCtx, lenderId: string, from: number, to: number, now: number, limit: number): Promise<ChangeRow[]>;
  /** The lender's accounts whose blocking state was set in [from, to] (state_since), counted by that state. */
  blockedCounts(c: StoreCtx, lenderId: string, from: number, to: number): Promise<{ state: BlockingAccountState; n: number }[]>;
}
