// A simulated population of thin-margin borrowers, to compare when reads happen: every day, against around
// predicted paydays (the service's cadence: the real inferPayCycle and nextReadAt of src/modules/pay-cycles, called
// after every read as learn.ts calls them). Deterministic by seed. Assumptions (also in docs/pay-cycles.md):
//
// - Pay: weekly 20%, biweekly 35% (Fridays), semimonthly (1st and 16th) 20%, monthly (a day from the 1st to
//   the 28th) 15%, irregular 10% (5 to 25 days apart); paid on the business day before a weekend or Federal
//   Reserve holiday; 10% of the regular payers' banks post it a day earlier still (early direct deposit);
//   amounts vary ±10%. A deposit posts at 06:00 UTC.
// - Spending: about what the pay brings in over the period (80% to 115% of it each day, on average), plus a
//   bill of 20% to 50% of one pay on one day in seven: thin margins, balances that swing. The day's spending
//   comes after the morning read.
// - Each borrower owes 15% to 45% of one pay, and is enrolled on a day spread over four weeks from 2026-04-01;
//   the 90 days of transactions before enrollment are linked (the cycle is learned from them and from every
//   credit after), and monitoring runs 120 days.
// - Both strategies read at 08:00 UTC, after the morning's deposit; the fixed interval is a day (irregular and
//   unknown cycles are read daily, as the daily strategy reads everyone), the quiet interval three days. A
//   debit is made when the balance covers the amount plus the buffer; it settles the next morning (next-day
//   ACH) if the balance still covers it, else it is returned R01 and a $34 fee is taken. Two failures stop
//   collection (the payday rule), and so does a settled debit, which ends the borrower's debt.
// - A third run of the cadence has no linked history: it learns from the rises of its own reads' balances, as
//   learn.ts does while transactions are not a source.
import { DAY_MS } from '../../src/platform/clock';
import { isBusinessDay } from '../../src/platform/business-days';
import { depositsFromBalances, inferPayCycle, type Deposit, type Frequency } from '../../src/modules/pay-cycles/infer';
import { followsCycle, nextReadAt, paydaySlots } from '../../src/modules/pay-cycles/cadence';

const START = Date.UTC(2026, 0, 1);
const HISTORY_DAYS = 90;
const MONITOR_DAYS = 120;
/** Borrowers are enrolled over four weeks, not all on one day (which would be a payday of many). */
const ENROLL_SPREAD_DAYS = 28;
/** Regular payers whose bank posts payroll a day early. */
const EARLY_SHARE = 0.1;
const DEPOSIT_HOUR = 6 * 3_600_000;
const READ_HOUR = 8 * 3_600_000;
const FEE = 3_400;

export interface SimOptions {
  borrowers: number;
  seed: number;
}

export interface StrategyResult {
  readsPerBorrower: number;
  returnsPer100: number;
  collectedShare: number;
}

export interface SimResult {
  daily: StrategyResult;
  cadence: StrategyResult;
  cadenceBuffer: StrategyResult;
  /** The payday cadence with no linked history: the cycle learned from the rises of its own reads' balances. */
  cadenceBalances: StrategyResult;
  /** Regular payers whose next payday, learned at enrollment, was right within a day. */
  predictedWithinADay: number;
  regular: number;
  /** Where the payday cadence's reads go, per borrower: why each read was due. */
  breakdown: Record<ReadReason, number>;
  /** The same, learning from its own reads' balances. */
  breakdownBalances: Record<ReadReason, number>;
  /** The payday cadence's reads per borrower of each true pay frequency, against daily's. */
  byFrequency: Record<string, { borrowers: number; daily: number; cadence: number }>;
}

/** Why a read of the payday cadence was due: the first at enrollment, a slot around a predicted payday, a quiet
 * read between paydays, the fixed interval of an irregular cycle, or of one unknown while the history is short. */
export type ReadReason = 'enrollment' | 'slot' | 'quiet' | 'fixed' | 'short';

function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const paidOn = (day: number) => {
  let d = day;
  while (!isBusinessDay(START + d * DAY_MS)) d--;
  return d;
};

interface Borrower {
  frequency: Frequency;
  /** The day (index) the borrower is enrolled: monitoring runs MONITOR_DAYS from it. */
  enrolled: number;
  /** Day index → pay in cents. */
  pay: Map<number, number>;
  /** Day index → spending in cents that day. */
  spend: Float64Array;
  startBalance: number;
  owed: number;
  /** The true paydays in order. */
  paydays: number[];
}

function borrower(rand: () => number): Borrower {
  const r = rand();
  const frequency: Frequency = r < 0.2 ? 'weekly' : r < 0.55 ? 'biweekly' : r < 0.75 ? 'semimonthly' : r < 0.9 ? 'monthly' : 'irregular';
  const enrolled = HISTORY_DAYS + Math.floor(rand() * ENROLL_SPREAD_DAYS);
  const days = HISTORY_DAYS + ENROLL_SPREAD_DAYS + MONITOR_DAYS + 10;
  const period = { weekly: 7, biweekly: 14, semimonthly: 15.2, monthly: 30.4, irregular: 15, unknown: 15 }[frequency];
  const payCents = Math.round((frequency === 'weekly' ? 500 : frequency === 'monthly' ? 2_800 : frequency === 'irregular' ? 700 : 1_300) * 100 * (0.75 + rand() * 0.5));
  const nominal: number[] = [];
  if (frequency === 'weekly' || frequency === 'biweekly') {
    // Fridays: 2 January 2026 is one.
    const step = frequency === 'weekly' ? 7 : 14;
    for (let d = 1 + 7 * Math.floor(rand() * (step / 7)); d < days; d += step) nominal.push(d);
  } else if (frequency === 'semimonthly' || frequency === 'monthly') {
    const dom = 1 + Math.floor(rand() * 28);
    for (let m = 0; m < 10; m++) {
      const doms = frequency === 'semimonthly' ? [1, 16] : [dom];
      for (const x of doms) nominal.push(Math.round((Date.UTC(2026, m, x) - START) / DAY_MS));
    }
  } else {
    for (let d = Math.floor(rand() * 10); d < days; d += 5 + Math.floor(rand() * 21)) nominal.push(d);
  }
  // Early direct deposit: some banks post payroll a day before the payday.
  const early = frequency !== 'irregular' && rand() < EARLY_SHARE ? 1 : 0;
  const paydays = [...new Set(nominal.map((d) => (frequency === 'irregular' ? d : paidOn(d) - early)).filter((d) => d >= 0 && d < days))].sort((a, b) => a - b);
  const pay = new Map(paydays.map((d) => [d, Math.round(payCents * (0.9 + rand() * 0.2))]));
  const spend = new Float64Array(days);
  const daily = payCents / period;
  for (let d = 0; d < days; d++) spend[d] = daily * (0.8 + rand() * 0.35) + (rand() < 1 / 7 ? payCents * (0.2 + rand() * 0.3) : 0);
  return { frequency, enrolled, pay, spend, startBalance: Math.round(payCents * rand() * 0.3), owed: Math.round(payCents * (0.15 + rand() * 0.3)), paydays };
}

/** Daily reads; the payday cadence on the linked history; the payday cadence on its own reads' balances. */
type Strategy = 'daily' | 'cadence' | 'balances';

/** One borrower under one strategy: its reads, returns and what was collected. */
function run(b: Borrower, strategy: Strategy, bufferCents: number) {
  let balance = b.startBalance;
  const credits: Deposit[] = [];
  // The days before enrollment; the linked history is the transactions of the last 90 of them.
  for (let d = 0; d < b.enrolled; d++) {
    const p = b.pay.get(d);
    if (p) {
      balance += p;
      if (d >= b.enrolled - HISTORY_DAYS) credits.push({ at: START + d * DAY_MS + DEPOSIT_HOUR, amountCents: p });
    }
    balance = Math.max(0, balance - b.spend[d]!);
  }
  let reads = 0;
  const why: Record<ReadReason, number> = { enrollment: 0, slot: 0, quiet: 0, fixed: 0, short: 0 };
  let reason: ReadReason = 'enrollment';
  let returns = 0;
  let collected = 0;
  let failures = 0;
  let pending: number | null = null;
  let lastRead: number | null = null;
  const seen: { at: number; balanceCents: number }[] = [];
  let nextRead = START + b.enrolled * DAY_MS + READ_HOUR;
  for (let d = b.enrolled; d < b.enrolled + MONITOR_DAYS; d++) {
    const morning = START + d * DAY_MS;
    const p = b.pay.get(d);
    if (p) {
      balance += p;
      credits.push({ at: morning + DEPOSIT_HOUR, amountCents: p });
    }
    if (pending !== null) {
      if (balance >= b.owed) {
        balance -= b.owed;
        collected = b.owed;
      } else {
        returns++;
        failures++;
        balance -= FEE;
      }
      pending = null;
      if (collected > 0 || failures >= 2) break;
    }
    const readAt = morning + READ_HOUR;
    const due = strategy === 'daily' || nextRead <= readAt;
    if (due) {
      reads++;
      why[reason]++;
      if (balance >= b.owed + bufferCents) pending = d + 1;
      if (strategy !== 'daily') {
        lastRead = readAt;
        seen.push({ at: readAt, balanceCents: Math.round(balance) });
        const cycle = inferPayCycle(strategy === 'cadence' ? credits : depositsFromBalances(seen), readAt);
        nextRead = nextReadAt({ cycle, lastReadAt: lastRead, now: readAt, fixedIntervalMs: DAY_MS, quietIntervalMs: 3 * DAY_MS, timeZone: null });
        reason = !followsCycle(cycle) ? (cycle.frequency === 'unknown' ? 'short' : 'fixed') : paydaySlots(cycle, null).includes(nextRead) ? 'slot' : 'quiet';
      }
    }
    balance -= b.spend[d]!;
  }
  return { reads, returns, collected, why };
}

export function simulate(opts: SimOptions): SimResult {
  const rand = mulberry32(opts.seed);
  const totals = {
    daily: { reads: 0, returns: 0, collected: 0 },
    cadence: { reads: 0, returns: 0, collected: 0 },
    cadenceBuffer: { reads: 0, returns: 0, collected: 0 },
    cadenceBalances: { reads: 0, returns: 0, collected: 0 },
  };
  const breakdownBalances: Record<ReadReason, number> = { enrollment: 0, slot: 0, quiet: 0, fixed: 0, short: 0 };
  const breakdown: Record<ReadReason, number> = { enrollment: 0, slot: 0, quiet: 0, fixed: 0, short: 0 };
  const byFrequency: SimResult['byFrequency'] = {};
  let owed = 0;
  let regular = 0;
  let predicted = 0;
  for (let i = 0; i < opts.borrowers; i++) {
    const b = borrower(rand);
    owed += b.owed;
    for (const [key, strategy, buffer] of [
      ['daily', 'daily', 0],
      ['cadence', 'cadence', 0],
      ['cadenceBuffer', 'cadence', 2_500],
      ['cadenceBalances', 'balances', 0],
    ] as const) {
      const r = run(b, strategy, buffer);
      totals[key].reads += r.reads;
      totals[key].returns += r.returns;
      totals[key].collected += r.collected;
      const f = (byFrequency[b.frequency] ??= { borrowers: 0, daily: 0, cadence: 0 });
      if (key === 'daily') {
        f.borrowers++;
        f.daily += r.reads;
      }
      if (key === 'cadence') {
        f.cadence += r.reads;
        for (const k of Object.keys(breakdown) as ReadReason[]) breakdown[k] += r.why[k];
      }
      if (key === 'cadenceBalances') for (const k of Object.keys(breakdown) as ReadReason[]) breakdownBalances[k] += r.why[k];
    }
    if (b.frequency !== 'irregular') {
      regular++;
      const enrolledAt = START + b.enrolled * DAY_MS;
      const history = b.paydays.filter((d) => d < b.enrolled && d >= b.enrolled - HISTORY_DAYS).map((d) => ({ at: START + d * DAY_MS + DEPOSIT_HOUR, amountCents: b.pay.get(d)! }));
      const truth = b.paydays.find((d) => d >= b.enrolled)!;
      const c = inferPayCycle(history, enrolledAt);
      if (c.nextPayday !== null && Math.abs(c.nextPayday - (START + truth * DAY_MS)) <= DAY_MS) predicted++;
    }
  }
  const view = (t: { reads: number; returns: number; collected: number }): StrategyResult => ({
    readsPerBorrower: t.reads / opts.borrowers,
    returnsPer100: (100 * t.returns) / opts.borrowers,
    collectedShare: t.collected / owed,
  });
  for (const k of Object.keys(breakdown) as ReadReason[]) {
    breakdown[k] /= opts.borrowers;
    breakdownBalances[k] /= opts.borrowers;
  }
  for (const f of Object.values(byFrequency)) {
    f.daily /= f.borrowers;
    f.cadence /= f.borrowers;
  }
  return { daily: view(totals.daily), cadence: view(totals.cadence), cadenceBuffer: view(totals.cadenceBuffer), cadenceBalances: view(totals.cadenceBalances), predictedWithinADay: predicted, regular, breakdown, breakdownBalances, byFrequency };
}

if (import.meta.main) console.log(simulate({ borrowers: Number(process.argv[2] ?? 1000), seed: 36 }));
