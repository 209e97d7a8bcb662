// Token buckets that every replica on one PostgreSQL database shares (`rate_buckets`): `perSecond` tokens refill
// each second up to `burst`. One process on SQLite keeps its buckets in memory instead (http/rate-limit.ts);
// both answer through RateBuckets, the in-memory one at once, this one as a promise.
import { sql } from 'drizzle-orm';
import type { PgHandle } from './pg';
import { rows } from './sql/pg';
import type { RateBuckets } from './engine';

export type { RateBuckets };

/** Full buckets idle this long are deleted (they hold nothing a fresh bucket would not). */
const IDLE_MS = 60_000;

/**
 * Buckets in `rate_buckets`, their keys prefixed with `name` (one limit's buckets apart from another's). Each
 * take is one statement: the row is created full on first use, refilled for the time since it was last
 * touched, and spent from when a token is there, under the row's lock, so two replicas never spend the same
 * token. A key names no secret: the caller passes an API key's id, or a hash.
 */
export class PgRateBuckets implements RateBuckets {
  private lastSweep = 0;

  constructor(
    private readonly pg: PgHandle,
    private readonly name: string,
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly onSweepError: (e: unknown) => void = () => undefined,
  ) {}

  private refilled(now: number) {
    return sql`least(${this.burst}::float8, b.tokens + greatest(0, ${now}::bigint - b.at) * ${this.perSecond}::float8 / 1000.0)`;
  }

  private waitFor(tokens: number | null): number {
    if (tokens === null) return 1;
    return tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / this.perSecond));
  }

  async take(key: string, now: number): Promise<number> {
    this.sweepNowAndThen(now);
    const k = `${this.name}:${key}`;
    const refilled = this.refilled(now);
    // The update happens only when a token is there (spent); a refusal leaves the row as it was, and the
    // outer read gives its tokens for the wait (how many seconds to say in Retry-After).
    const [r] = await rows<{ spent: number; tokens: number | null }>(
      this.pg.db,
      sql`WITH up AS (
            INSERT INTO rate_buckets AS b (key, tokens, at) VALUES (${k}, ${this.burst - 1}::float8, ${now}::bigint)
            ON CONFLICT (key) DO UPDATE SET tokens = ${refilled} - 1, at = greatest(b.at, ${now}::bigint)
            WHERE ${refilled} >= 1
            RETURNING 1)
          SELECT (SELECT count(*) FROM up)::int AS spent,
                 (SELECT ${refilled} FROM rate_buckets b WHERE b.key = ${k})::float8 AS tokens`,
    );
    // The read sees the row as the statement began: under a concurrent take it may show a token the update
    // found spent. A refusal is always at least a second's wait.
    return r!.spent === 1 ? 0 : Math.max(1, this.waitFor(r!.tokens === null ? null : Number(r!.tokens)));
  }

  async wait(key: string, now: number): Promise<number> {
    const [r] = await rows<{ tokens: number }>(
      this.pg.db,
      sql`SELECT ${this.refilled(now)}::float8 AS tokens FROM rate_buckets b WHERE b.key = ${`${this.name}:${key}`}`,
    );
    return r ? this.waitFor(Number(r.tokens)) : 0;
  }

  async spend(key: string, now: number): Promise<void> {
    this.sweepNowAndThen(now);
    await this.pg.db.execute(
      sql`INSERT INTO rate_buckets AS b (key, tokens, at) VALUES (${`${this.name}:${key}`}, ${this.burst - 1}::float8, ${now}::bigint)
          ON CONFLICT (key) DO UPDATE SET tokens = greatest(0, ${this.refilled(now)} - 1), at = greatest(b.at, ${now}::bigint)`,
    );
  }

  /** At most once a minute per process: this limit's full buckets idle for a minute go (rows stay bounded). */
  private sweepNowAndThen(now: number): void {
    if (now - this.lastSweep < IDLE_MS) return;
    this.lastSweep = now;
    this.sweep(now).catch(this.onSweepError);
  }

  async sweep(now: number): Promise<number> {
    const deleted = await rows<{ n: number }>(
      this.pg.db,
      sql`WITH d AS (DELETE FROM rate_buckets b
                      WHERE b.key LIKE ${`${this.name}:%`} AND b.at < ${now - IDLE_MS}::bigint AND ${this.refilled(now)} >= ${this.burst}::float8
                      RETURNING 1)
          SELECT count(*)::int AS n FROM d`,
    );
    return deleted[0]?.n ?? 0;
  }
}
