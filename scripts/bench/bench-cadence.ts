// Reads timed by pay cycles against reading every day, on a simulated thin-margin population (cadence-sim.ts:
// its assumptions are in its header and docs/pay-cycles.md). Deterministic by seed; no server, no database.
import type { Bench } from './common';
import { num } from './common';
import { simulate } from './cadence-sim';

const BORROWERS = 5_000;
const SEED = 36;

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export const cadenceBench: Bench = {
  name: 'cadence',
  title: `Reads around predicted paydays against daily reads, ${num(BORROWERS, 0)} simulated borrowers over 120 days`,
  timeoutMs: 300_000,
  async run(ctx) {
    ctx.log(`simulating ${BORROWERS} borrowers under three strategies`);
    const r = simulate({ borrowers: BORROWERS, seed: SEED });
    const ratio = r.cadence.readsPerBorrower / r.daily.readsPerBorrower;
    const predicted = r.predictedWithinADay / r.regular;
    return {
      metrics: [
        { label: 'reads per borrower: daily / payday cadence / cadence with a $25 buffer', value: `${r.daily.readsPerBorrower.toFixed(1)} / ${r.cadence.readsPerBorrower.toFixed(1)} / ${r.cadenceBuffer.readsPerBorrower.toFixed(1)}` },
        { label: 'payday cadence reads, of daily reads', value: pct(ratio), target: '≤ 30%', pass: ratio <= 0.3 },
        { label: 'R01 returns per 100 borrowers: daily / cadence / cadence with buffer', value: `${r.daily.returnsPer100.toFixed(1)} / ${r.cadence.returnsPer100.toFixed(1)} / ${r.cadenceBuffer.returnsPer100.toFixed(1)}`, target: 'cadence ≤ daily', pass: r.cadence.returnsPer100 <= r.daily.returnsPer100 },
        { label: 'owed amount collected: daily / cadence / cadence with buffer', value: `${pct(r.daily.collectedShare)} / ${pct(r.cadence.collectedShare)} / ${pct(r.cadenceBuffer.collectedShare)}`, target: 'within 3 points of daily', pass: Math.abs(r.cadence.collectedShare - r.daily.collectedShare) <= 0.03 },
        {
          label: 'where the payday cadence reads go, per borrower: at enrollment / payday slots / quiet reads / fixed interval (irregular) / history too short',
          value: (['enrollment', 'slot', 'quiet', 'fixed', 'short'] as const).map((k) => r.breakdown[k].toFixed(2)).join(' / '),
        },
        {
          label: 'reads per borrower by true pay frequency, daily → cadence',
          value: Object.entries(r.byFrequency)
            .map(([f, x]) => `${f} ${x.daily.toFixed(1)} → ${x.cadence.toFixed(1)}`)
            .join('; '),
        },
        {
          label: 'with no linked history (the cycle learned from its own reads’ balances): reads per borrower, of daily; R01 per 100; collected; where the reads go',
          value: `${r.cadenceBalances.readsPerBorrower.toFixed(1)}, ${pct(r.cadenceBalances.readsPerBorrower / r.daily.readsPerBorrower)}; ${r.cadenceBalances.returnsPer100.toFixed(1)}; ${pct(r.cadenceBalances.collectedShare)}; ${(['enrollment', 'slot', 'quiet', 'fixed', 'short'] as const).map((k) => r.breakdownBalances[k].toFixed(2)).join(' / ')}`,
        },
        { label: 'regular payers whose next payday is predicted within a day at enrollment', value: `${pct(predicted)} (${r.predictedWithinADay} of ${r.regular})`, target: '≥ 95%', pass: predicted >= 0.95 },
      ],
      notes: [`seed ${SEED}; the population and its assumptions: scripts/bench/cadence-sim.ts`],
    };
  },
};
