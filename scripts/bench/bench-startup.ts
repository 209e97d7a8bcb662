// 1. Startup: spawning `bun run src/index.ts` to the first /healthz 200, on a fresh and on an existing database.
import type { Bench } from './common';
import { ms } from './common';
import { measureStartup } from './startup';
import { onPostgres } from './engine';

export const startupBench: Bench = {
  name: 'startup',
  title: 'Startup to first /healthz 200',
  timeoutMs: 90_000,
  async run(ctx) {
    const fresh = await measureStartup({ runs: 5, database: 'fresh' });
    ctx.log(`fresh: ${fresh.runsMs.join(', ')} ms`);
    const existing = await measureStartup({ runs: 5, database: 'existing' });
    ctx.log(`existing: ${existing.runsMs.join(', ')} ms`);
    return {
      metrics: [
        {
          label: `fresh database (vault key, migrations, default lender${onPostgres ? '; an empty PostgreSQL database' : ''}), median of 5`,
          value: ms(fresh.medianMs, 0),
        },
        { label: 'existing database (restart), median of 5', value: ms(existing.medianMs, 0) },
      ],
      notes: [`fresh runs ${fresh.runsMs.join(', ')} ms; existing runs ${existing.runsMs.join(', ')} ms`],
    };
  },
};
