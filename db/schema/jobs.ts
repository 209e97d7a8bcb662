import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// One row per in-process job: what it last did, so /readyz and operators can see it, and so a restart
// knows when it last ran.
export const jobState = sqliteTable('job_state', {
  name: text('name').primaryKey(),
  runs: integer('runs').notNull().default(0),
  failures: integer('failures').notNull().default(0),
  lastStartedAt: integer('last_started_at'),
  lastFinishedAt: integer('last_finished_at'),
  lastDurationMs: integer('last_duration_ms'),
  lastError: text('last_error'),
});
