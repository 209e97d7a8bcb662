// A simulated population of thin-margin borrowers, to compare when reads happen: every day, against around
// predicted paydays (the service's cadence, src/modules/pay-cycles). Deterministic by seed. Assumptions:
//
// - Pay: weekly 20%, biweekly 35%, semimonthly (1st and 16th) 20%, monthly 15%, irregular 10% (5 to 25 days
//   apart); paid early on the business day before a weekend or Federal Reserve holiday; amounts vary ±10%.
// - Spending: about what the pay brings in over the period (80% to 115% of it each day, on average), plus a
//   bill of 20% to 50% of one pay on one day in seven: thin margins, balances that swing.
// - Each borrower owes 15% to 45% of one pay. 90 days of transactions are linked at enrollment; monitoring runs
//   120 days, from 2026-04-01.
// - A read happens at 08:00 UTC, after the morning's deposit. A debit is made when the balance covers the amount
//   plus the buffer; it settles the next morning (next-day ACH) if the balance still covers it, else it is
//   returned R01 and a $34 fee is taken. Two failures stop collection (the payday rule). A settled debit ends
//   the borrower's debt.
import { DAY_MS } from '../../src/platform/clock';
import { isBusinessDay } from '../../src/platform/business-days';
import { inferPayCycle, type Deposit, type Frequency } from '../../src/modules/pay-cycles/infer';
import { nextReadAt } from '../../src/modules/pay-cycles/cadence';

const START = Date.UTC(2026, 0, 1);
const HISTORY_DAYS = 90;
const MONITOR_DAYS = 120;
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
  /** Regular payers whose next payday, learned at enrollment, was right within a day. */
  predictedWithinADay: number;
  regular: number;
}

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
  const days = HISTORY_DAYS + MONITOR_DAYS + 10;
  const period = { weekly: 7, biweekly: 14, semimonthly: 15.2, monthly: 30.4, irregular: 15, unknown: 15 }[frequency];
  const payCents = Math.round((frequency === 'weekly' ? 500 : frequency === 'monthly' ? 2_800 : frequency === 'irregular' ? 700 : 1_300) * 100 * (0.75 + rand() * 0.5));
  const nominal: number[] = [];
  if (frequency === 'weekly' || frequency === 'biweekly') {
    // Fridays: 2 January 2026 is one.
    const step = frequency === 'weekly' ? 7 : 14;
    for (let d = 1 + 7 * Math.floor(rand() * (step / 7)); d < days; d += step) nominal.push(d);
  } else if (frequency === 'semimonthly' || frequency === 'monthly') {
    const dom = 1 + Math.floor(rand() * 28);
    for (let m = 0; m < 8; m++) {
      const doms = frequency === 'semimonthly' ? [1, 16] : [dom];
      for (const x of doms) nominal.push(Math.round((Date.UTC(2026, m, x) - START) / DAY_MS));
    }
  } else {
    for (let d = Math.floor(rand() * 10); d < days; d += 5 + Math.floor(rand() * 21)) nominal.push(d);
  }
  const paydays = [...new Set(nominal.filter((d) => d >= 0 && d < days).map((d) => (frequency === 'irregular' ? d : paidOn(d))))].sort((a, b) => a - b);
  const pay = new Map(paydays.map((d) => [d, Math.round(payCents * (0.9 + rand() * 0.2))]));
  const spend = new Float64Array(days);
  const daily = payCents / period;
  for (let d = 0; d < days; d++) spend[d] = daily * (0.8 + rand() * 0.35) + (rand() < 1 / 7 ? payCents * (0.2 + rand() * 0.3) : 0);
  return { frequency, pay, spend, startBalance: Math.round(payCents * rand() * 0.3), owed: Math.round(payCents * (0.15 + rand() * 0.3)), paydays };
}

type Strategy = 'daily' | 'cadence';

/** One borrower under one strategy: its reads, returns and what was collected. */
function run(b: Borrower, strategy: Strategy, bufferCents: number) {
  let balance = b.startBalance;
  const credits: Deposit[] = [];
  // The linked history: transactions of the 90 days before enrollment.
  for (let d = 0; d < HISTORY_DAYS; d++) {
    const p = b.pay.get(d);
    if (p) {
      balance += p;
      credits.push({ at: START + d * DAY_MS + 6 * 3_600_000, amountCents: p });
    }
    balance = Math.max(0, balance - b.spend[d]!);
  }
  let reads = 0;
  let returns = 0;
  let collected = 0;
  let failures = 0;
  let pending: number | null = null;
  let lastRead: number | null = null;
  let nextRead = START + HISTORY_DAYS * DAY_MS + READ_HOUR;
  for (let d = HISTORY_DAYS; d < HISTORY_DAYS + MONITOR_DAYS; d++) {
    const morning = START + d * DAY_MS;
    const p = b.pay.get(d);
    if (p) {
      balance += p;
      credits.push({ at: morning + 6 * 3_600_000, amountCents: p });
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
      if (balance >= b.owed + bufferCents) pending = d + 1;
      if (strategy === 'cadence') {
        lastRead = readAt;
        const cycle = inferPayCycle(credits, readAt);
        nextRead = nextReadAt({ cycle, lastReadAt: lastRead, now: readAt, fixedIntervalMs: DAY_MS, quietIntervalMs: 3 * DAY_MS, readHourUtc: 8 });
      }
    }
    balance -= b.spend[d]!;
  }
  return { reads, returns, collected };
}

export function simulate(opts: SimOptions): SimResult {
  const rand = mulberry32(opts.seed);
  const totals = {
    daily: { reads: 0, returns: 0, collected: 0 },
    cadence: { reads: 0, returns: 0, collected: 0 },
    cadenceBuffer: { reads: 0, returns: 0, collected: 0 },
  };
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
    ] as const) {
      const r = run(b, strategy, buffer);
      totals[key].reads += r.reads;
      totals[key].returns += r.returns;
      totals[key].collected += r.collected;
    }
    if (b.frequency !== 'irregular') {
      regular++;
      const enrolledAt = START + HISTORY_DAYS * DAY_MS;
      const history = b.paydays.filter((d) => d < HISTORY_DAYS).map((d) => ({ at: START + d * DAY_MS + 6 * 3_600_000, amountCents: b.pay.get(d)! }));
      const truth = b.paydays.find((d) => d >= HISTORY_DAYS)!;
      const c = inferPayCycle(history, enrolledAt);
      if (c.nextPayday !== null && Math.abs(c.nextPayday - (START + truth * DAY_MS)) <= DAY_MS) predicted++;
    }
  }
  const view = (t: { reads: number; returns: number; collected: number }): StrategyResult => ({
    readsPerBorrower: t.reads / opts.borrowers,
    returnsPer100: (100 * t.returns) / opts.borrowers,
    collectedShare: t.collected / owed,
  });
  return { daily: view(totals.daily), cadence: view(totals.cadence), cadenceBuffer: view(totals.cadenceBuffer), predictedWithinADay: predicted, regular };
}

if (import.meta.main) console.log(simulate({ borrowers: Number(process.argv[2] ?? 1000), seed: 36 }));
