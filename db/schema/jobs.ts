import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { bytes, count, fraction, ident, ms } from './columns';

// One row per in-process job: what it last did, so /readyz and operators can see it, and so a restart
// knows when it last ran.
export const jobState = sqliteTable('job_state', {
  name: ident('name').primaryKey(),
  runs: count('runs').notNull().default(0),
  failures: count('failures').notNull().default(0),
  lastStartedAt: ms('last_started_at'),
  lastFinishedAt: ms('last_finished_at'),
  lastDurationMs: ms('last_duration_ms'),
  lastError: text('last_error'),
});

// Work that one replica at a time does (a job, or one processor key's feed): whoever holds the row until
// `until` does it; a lease past its time is taken over. Unused while one process serves a SQLite file.
export const leases = sqliteTable('leases', {
  name: ident('name').primaryKey(),
  owner: text('owner').notNull(),
  until: ms('until').notNull(),
});

// State the replicas on one PostgreSQL database share (on SQLite, one process keeps it in memory):
// token buckets of the rate limits, by a key that names no secret.
export const rateBuckets = sqliteTable('rate_buckets', {
  key: ident('key').primaryKey(),
  tokens: fraction('tokens').notNull(),
  at: ms('at').notNull(),
});

// Sign-in attempts counted per window, by a keyed hash of the email, the address or the pair.
export const signInCounts = sqliteTable('sign_in_counts', {
  key: ident('key').primaryKey(),
  count: count('count').notNull(),
  first: ms('first').notNull(),
});

// Files checked in the portal and held for their confirmation, by a hash of the session; sealed by the vault.
export const heldFiles = sqliteTable('held_files', {
  key: ident('key').primaryKey(),
  id: ident('id').notNull(),
  name: text('name').notNull(),
  body: bytes('body').notNull(),
  at: ms('at').notNull(),
});
