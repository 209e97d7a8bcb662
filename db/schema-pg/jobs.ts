import { pgTable, text } from 'drizzle-orm/pg-core';
import { count, ident, ms } from './columns';

// One row per in-process job: what it last did, so /readyz and operators can see it, and so a restart
// knows when it last ran.
export const jobState = pgTable('job_state', {
  name: ident('name').primaryKey(),
  runs: count('runs').notNull().default(0),
  failures: count('failures').notNull().default(0),
  lastStartedAt: ms('last_started_at'),
  lastFinishedAt: ms('last_finished_at'),
  lastDurationMs: ms('last_duration_ms'),
  lastError: text('last_error'),
});
