import { BANK_ACCOUNT_STATES, CHANGE_STATUSES, type ChangeStatus } from '../../../db/schema/enums';
import type { BlockingAccountState } from '../../adapters/processors/account-states';
import type { Ctx } from '../../deps';
import { businessDaysBetween } from '../../platform/business-days';
import { iso, isoOrNull } from '../../platform/clock';
import { InvalidInput } from '../../platform/errors';
import { debitsAndReturnsIn } from '../return-rates/service';
import { TIMELINESS, type ChangeRow, type Timeliness } from './store';

// The monthly ACH report: the figures a bank (the ODFI) asks of an Originator for a calendar month (UTC), for
// the lender alone. Debits and returns are counted by the return rates' own statements, so the report and
// GET /v1/return_rates agree on any window; Notifications of Change and the accounts blocked are read from the
// month's rows. Every figure is exact; the list of Notifications of Change is bounded (the first 1,000).

/** At most this many Notifications of Change are listed one by one; the counts are of all of them. */
export const CHANGES_LISTED = 1000;

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;
const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** The month's first and last millisecond (UTC, both included); a month not as YYYY-MM, or after now's, is refused. */
export function monthBounds(month: string, now: number): { from: number; to: number } {
  const m = MONTH.exec(month);
  if (!m) throw InvalidInput.field('month', 'month must be a calendar month written YYYY-MM, such as 2026-10');
  const from = Date.parse(`${month}-01T00:00:00.000Z`);
  if (from > now) {
    throw InvalidInput.field('month', `month ${month} is in the future: the report covers the current month (${iso(now).slice(0, 7)}) or an earlier one`);
  }
  const [year, mm] = [Number(m[1]), Number(m[2])];
  const next = mm === 12 ? `${pad(year + 1, 4)}-01` : `${m[1]}-${pad(mm + 1, 2)}`;
  return { from, to: Date.parse(`${next}-01T00:00:00.000Z`) - 1 };
}

/** Integer cents as a JSON number: every month's total a lender can have is below 2^53; one that is not is a fault, never rounded. */
function exactCents(cents: bigint): number {
  const n = Number(cents);
  if (!Number.isSafeInteger(n)) throw new Error('an ACH total beyond 2^53 cents cannot be answered exactly');
  return n;
}

/** Every key with its count, 0 for a key no row has, in the list's order. */
function countsOf<K extends string>(keys: readonly K[], found: Iterable<[K, number]>): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const [k, n] of found) out[k] += n;
  return out;
}

/** Counts by a text key, in the key's order (the rows come in whatever order the engine read them). */
function byKey(found: Iterable<[string, number]>): Record<string, number> {
  const m = new Map<string, number>();
  for (const [k, n] of found) m.set(k, (m.get(k) ?? 0) + n);
  return Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Applied by its due day: yes when on time, no when late or overdue, not yet known while pending, none to apply. */
const APPLIED_BY_DUE: Record<Timeliness, boolean | null> = { on_time: true, late: false, overdue: false, pending: null, none: null };

const changeView = (r: ChangeRow) => ({
  id: r.id,
  code: r.code,
  status: r.status,
  bank_account_id: r.bankAccountId,
  received_at: iso(r.receivedAt),
  due_by: iso(r.dueBy),
  applied_at: isoOrNull(r.appliedAt),
  banking_days_to_apply: r.appliedAt === null ? null : businessDaysBetween(r.receivedAt, r.appliedAt),
  applied_by_due: APPLIED_BY_DUE[r.timeliness],
  timeliness: r.timeliness,
});

const BLOCKING = BANK_ACCOUNT_STATES.filter((s): s is BlockingAccountState => s !== 'ok');

/** GET /v1/reports/ach: the lender's ACH figures for a calendar month (UTC), as of now. */
export async function achReport({ ctx, input }: { ctx: Ctx; input: { month: string } }) {
  const now = ctx.deps.clock.now();
  const { from, to } = monthBounds(input.month, now);
  const lenderId = ctx.lender.id;
  const ach = await debitsAndReturnsIn(ctx, lenderId, from, to);
  const store = ctx.deps.stores.achReport;
  const counts = await store.changeCounts(ctx, lenderId, from, to, now);
  const listed = await store.changesIn(ctx, lenderId, from, to, now, CHANGES_LISTED);
  const blocked = await store.blockedCounts(ctx, lenderId, from, to);
  const changes = counts.reduce((s, r) => s + r.n, 0);
  const accountsBlocked = blocked.reduce((s, r) => s + r.n, 0);
  return {
    month: input.month,
    from: iso(from),
    to: iso(to),
    generated_at: iso(now),
    debits: { count: ach.debits.count, total_cents: exactCents(ach.debits.cents) },
    returns: { count: ach.returns, by_code: ach.by_code, rates: ach.rates },
    notifications_of_change: {
      count: changes,
      by_code: byKey(counts.map((r) => [r.code, r.n])),
      by_status: countsOf<ChangeStatus>(CHANGE_STATUSES, counts.map((r) => [r.status, r.n])),
      by_timeliness: countsOf<Timeliness>(TIMELINESS, counts.map((r) => [r.timeliness, r.n])),
      changes: listed.map(changeView),
      truncated: changes > listed.length,
    },
    accounts_blocked: { count: accountsBlocked, by_state: countsOf<BlockingAccountState>(BLOCKING, blocked.map((r) => [r.state, r.n])) },
  };
}

export type AchReportView = Awaited<ReturnType<typeof achReport>>;
