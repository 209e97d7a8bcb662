import { blob, integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';

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

// Work that one replica at a time does (a job, or one processor key's feed): whoever holds the row until
// `until` does it; a lease past its time is taken over. Unused while one process serves a SQLite file.
export const leases = sqliteTable('leases', {
  name: text('name').primaryKey(),
  owner: text('owner').notNull(),
  until: integer('until').notNull(),
});

// State the replicas on one PostgreSQL database share (on SQLite, one process keeps it in memory):
// token buckets of the rate limits, by a key that names no secret.
export const rateBuckets = sqliteTable('rate_buckets', {
  key: text('key').primaryKey(),
  tokens: real('tokens').notNull(),
  at: integer('at').notNull(),
});

// Sign-in attempts counted per window, by a keyed hash of the email, the address or the pair.
export const signInCounts = sqliteTable('sign_in_counts', {
  key: text('key').primaryKey(),
  count: integer('count').notNull(),
  first: integer('first').notNull(),
});

// Files checked in the portal and held for their confirmation, by a hash of the session; sealed by the vault.
export const heldFiles = sqliteTable('held_files', {
  key: text('key').primaryKey(),
  id: text('id').notNull(),
  name: text('name').notNull(),
  body: blob('body', { mode: 'buffer' }).notNull(),
  at: integer('at').notNull(),
});
