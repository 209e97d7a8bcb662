import type { Static } from 'elysia';
import type { FraudAlertState } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { iso } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { csvLine, type CsvValue } from '../../platform/csv';
import { InvalidInput } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { keysetPage, type PageQuery } from '../../platform/pagination';
import { debitsAndReturnsIn } from '../return-rates/service';
import { REPORT_LIST_MAX, type FraudReport, type ReviewInput } from './model';
import { DEFAULT_FRAUD_POLICY, storedRules } from './policy';
import { RULE_IDS } from './rules';
import type { PolicyRow, ReviewRow } from './store';

// The yearly record Nacha's rule asks an Originator to keep and an ODFI or processor asks to see: the lender's
// reviews of its fraud-monitoring process, and the report of a calendar year (UTC): the policy versions in force,
// the reviews, the alerts by rule and state, the holds, the accounts frozen on confirmed fraud and the
// unauthorized return rate of each month. JSON, or the same figures as CSV (reportCsv).

const reviewView = (r: ReviewRow) => ({
  id: r.id,
  reviewed_on: r.reviewedOn,
  reviewer: r.reviewer,
  notes: r.notes,
  policy_version: r.policyVersion,
  recorded_at: iso(r.createdAt),
});

/**
 * POST /v1/fraud_monitoring/reviews: a review kept for good. reviewed_on must be a real day not after today
 * (UTC), and policy_version one the lender has (0, the defaults, always is); else 400 naming the field.
 */
export async function recordReview({ ctx, input }: { ctx: Ctx; input: Static<typeof ReviewInput> }) {
  const now = ctx.deps.clock.now();
  const day = Date.parse(`${input.reviewed_on}T00:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(input.reviewed_on) || !Number.isFinite(day) || iso(day).slice(0, 10) !== input.reviewed_on) {
    throw InvalidInput.field('/reviewed_on', 'reviewed_on must be a day written YYYY-MM-DD');
  }
  if (input.reviewed_on > iso(now).slice(0, 10)) throw InvalidInput.field('/reviewed_on', 'reviewed_on must not be after today (UTC)');
  return transaction(ctx, async (tx) => {
    const latest = (await tx.deps.stores.fraud.latestPolicy(tx, ctx.lender.id))?.version ?? 0;
    if (input.policy_version > latest) {
      throw InvalidInput.field('/policy_version', `policy_version ${input.policy_version} is not one of the lender’s: the latest is ${latest}`);
    }
    const row: ReviewRow = {
      id: newId(),
      lenderId: ctx.lender.id,
      reviewedOn: input.reviewed_on,
      reviewer: input.reviewer,
      notes: input.notes ?? null,
      policyVersion: input.policy_version,
      createdAt: now,
    };
    await tx.deps.stores.fraud.insertReview(tx, row);
    return reviewView(row);
  });
}

/** GET /v1/fraud_monitoring/reviews: the lender's reviews, the latest first, a page at a time. */
export async function listReviews({ ctx, input }: { ctx: Ctx; input: PageQuery }) {
  const { page, hasMore, nextPageToken } = await keysetPage({
    tokens: ctx.deps.pageTokens,
    scope: `fraud_reviews:${ctx.lender.id}`,
    query: input,
    limit: input.limit ?? 50,
    start: { d: '9999-99-99', i: '' },
    fetch: (after, take) =>
      ctx.deps.stores.fraud.reviewsPage(ctx, {
        lenderId: ctx.lender.id,
        after: { reviewedOn: after.d, id: after.i },
        limit: take,
      }),
    positionOf: (r) => ({ d: r.reviewedOn, i: r.id }),
  });
  return {
    reviews: page.map(reviewView),
    has_more: hasMore,
    next_page_token: nextPageToken,
  };
}

export type FraudReportView = Static<typeof FraudReport>;

/** The year's first millisecond and the end of what it covers (its last millisecond, or now for the current year); a later year is refused. */
function yearBounds(year: string, now: number): { from: number; to: number } {
  if (!/^\d{4}$/.test(year)) throw InvalidInput.field('year', 'year must be written YYYY, such as 2026');
  const from = Date.parse(`${year}-01-01T00:00:00.000Z`);
  if (from > now) throw InvalidInput.field('year', `year ${year} is in the future: the report covers the current year (${iso(now).slice(0, 4)}) or an earlier one`);
  const end = Date.parse(`${String(Number(year) + 1).padStart(4, '0')}-01-01T00:00:00.000Z`) - 1;
  return { from, to: Math.min(end, now) };
}

/** GET /v1/fraud_monitoring/report?year=YYYY. */
export async function fraudReport({ ctx, input }: { ctx: Ctx; input: { year: string } }): Promise<FraudReportView> {
  const now = ctx.deps.clock.now();
  const { from, to } = yearBounds(input.year, now);
  const lenderId = ctx.lender.id;
  const store = ctx.deps.stores.fraud;

  // The versions saved in the year, after the one in force when it began (version 0, the defaults, when none
  // was saved before it); the latest REPORT_LIST_MAX of them.
  const saved = await store.policyVersionsBefore(ctx, lenderId, to + 1, REPORT_LIST_MAX + 1);
  const versionOf = (p: PolicyRow, at: number) => ({
    version: p.version,
    changed_by: p.changedBy,
    changed_at: iso(p.createdAt),
    notes: p.notes,
    rules: storedRules(p.rules),
    at,
  });
  const before = saved.find((p) => p.createdAt < from);
  const atStart = before
    ? versionOf(before, from)
    : saved.length <= REPORT_LIST_MAX
      ? {
          version: 0,
          changed_by: null,
          changed_at: null,
          notes: null,
          rules: DEFAULT_FRAUD_POLICY.rules,
          at: from,
        }
      : null;
  const listed = [
    ...(atStart ? [atStart] : []),
    ...saved
      .filter((p) => p.createdAt >= from)
      .reverse()
      .map((p) => versionOf(p, p.createdAt)),
  ];
  const versions = listed.slice(-REPORT_LIST_MAX);
  let truncated = versions.length < listed.length;
  const policy_versions = versions.map(({ at, ...v }, i) => ({
    version: v.version,
    changed_by: v.changed_by,
    changed_at: v.changed_at,
    in_force_from: iso(at),
    in_force_until: i + 1 < versions.length ? iso(versions[i + 1]!.at) : null,
    notes: v.notes,
    rules: v.rules,
  }));

  const year = input.year;
  const reviews = await store.reviewsBetween(ctx, lenderId, `${year}-01-01`, `${year}-12-31`, REPORT_LIST_MAX + 1);
  truncated ||= reviews.length > REPORT_LIST_MAX;

  const counts = await store.alertCounts(ctx, lenderId, from, to + 1);
  const byRule = Object.fromEntries(RULE_IDS.map((r) => [r, { raised: 0, open: 0, needs_info: 0, cleared: 0, confirmed_fraud: 0 }])) as Record<
    (typeof RULE_IDS)[number],
    Record<'raised' | FraudAlertState, number>
  >;
  let raised = 0;
  const holds = { raised: 0, holding: 0 };
  for (const c of counts) {
    const r = byRule[c.rule];
    if (!r) continue;
    r.raised += c.n;
    r[c.state] += c.n;
    raised += c.n;
    if (c.action === 'hold') {
      holds.raised += c.n;
      if (c.state === 'open' || c.state === 'needs_info') holds.holding += c.n;
    }
  }

  const unauthorized_returns = [];
  for (let m = 0; m < 12; m++) {
    const start = Date.UTC(Number(year), m, 1);
    if (start > to) break;
    const end = Math.min(Date.UTC(Number(year), m + 1, 1) - 1, to);
    const f = await debitsAndReturnsIn(ctx, lenderId, start, end);
    unauthorized_returns.push({
      month: iso(start).slice(0, 7),
      debits: f.debits.count,
      returns: f.rates.unauthorized.returns,
      rate: f.rates.unauthorized.rate,
    });
  }

  return {
    year: Number(year),
    from: iso(from),
    to: iso(to),
    generated_at: iso(now),
    policy_versions,
    reviews: reviews.slice(0, REPORT_LIST_MAX).map(reviewView),
    alerts: { raised, by_rule: byRule },
    holds,
    frozen_accounts: await store.accountsConfirmed(ctx, lenderId, from, to + 1),
    unauthorized_returns,
    truncated,
  };
}

// The report as CSV, for a spreadsheet: one line per figure, `section,item,key,value`, as the monthly ACH report.
// `report`: the year and its bounds; `policy_versions`: one line per field of each version, its number the item
// (its rules' fields as dotted keys, rules.velocity.settings.max_debits); `reviews`: one line per field of each,
// its id the item; `alerts`: the total, then per rule (the item) one line per state; `holds` and
// `frozen_accounts`; `unauthorized_returns`: per month (the item) its debits, returns and rate. The same figures
// as the JSON, bounded as it is.

export const REPORT_CSV_HEADER = ['section', 'item', 'key', 'value'] as const;

function leaves(key: string, v: unknown, out: [string, CsvValue][]): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) leaves(key ? `${key}.${k}` : k, x, out);
  } else out.push([key, v as CsvValue]);
}

export function reportCsv(r: FraudReportView): string {
  let out = csvLine(REPORT_CSV_HEADER);
  const line = (section: string, item: string | number, key: string, value: CsvValue) => (out += csvLine([section, item, key, value]));
  for (const key of ['year', 'from', 'to', 'generated_at', 'truncated'] as const) line('report', '', key, r[key]);
  for (const { version, ...v } of r.policy_versions) {
    const found: [string, CsvValue][] = [];
    leaves('', v, found);
    for (const [key, value] of found) line('policy_versions', version, key, value);
  }
  for (const { id, ...v } of r.reviews) for (const [key, value] of Object.entries(v)) line('reviews', id, key, value);
  line('alerts', '', 'raised', r.alerts.raised);
  for (const [rule, states] of Object.entries(r.alerts.by_rule)) for (const [state, n] of Object.entries(states)) line('alerts', rule, state, n);
  line('holds', '', 'raised', r.holds.raised);
  line('holds', '', 'holding', r.holds.holding);
  line('frozen_accounts', '', 'count', r.frozen_accounts);
  for (const { month, ...v } of r.unauthorized_returns) for (const [key, value] of Object.entries(v)) line('unauthorized_returns', month, key, value);
  return out;
}

export const reportFilename = (year: number) => `fraud-monitoring-report-${year}.csv`;
