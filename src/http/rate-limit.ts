import type { RateBuckets } from '../platform/rate-buckets';

// Token buckets in memory: `perSecond` tokens refill each second up to `burst`. Used per API key (every
// request spends one) and per client address (only failed authentications spend one). On PostgreSQL the
// replicas share theirs in the database instead (platform/rate-buckets.ts): src/engine-services.ts picks one at start.

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter implements RateBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    /** Keys kept at most; past it, full buckets (which hold nothing worth keeping) and then the oldest go. */
    private readonly maxKeys = 100_000,
  ) {}

  private bucket(key: string, now: number): Bucket {
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.prune(now);
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
    }
    b.tokens = Math.min(this.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.perSecond);
    b.at = now;
    return b;
  }

  private prune(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(key);
    }
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < this.maxKeys) break;
      this.buckets.delete(key);
    }
  }

  private waitFor(b: Bucket): number {
    return b.tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond));
  }

  /** 0 when the request may go ahead (a token is spent), else the whole seconds to wait before one is free. */
  take(key: string, now: number): number {
    const b = this.bucket(key, now);
    const wait = this.waitFor(b);
    if (wait === 0) b.tokens -= 1;
    return wait;
  }

  /** Like take, without spending: 0 when a token is there now, else the seconds until one is. */
  wait(key: string, now: number): number {
    const b = this.buckets.get(key);
    return b ? this.waitFor(this.bucket(key, now)) : 0;
  }

  /** Spends a token if there is one (a failure counted after the fact). */
  spend(key: string, now: number): void {
    const b = this.bucket(key, now);
    b.tokens = Math.max(0, b.tokens - 1);
  }

  get size(): number {
    return this.buckets.size;
  }
}

/**
 * At most one log line per key per interval, carrying how many events it stands for: a client hammering the
 * service with bad keys costs one line a second, not one a request.
 */
export class SampledLog {
  private readonly last = new Map<string, { at: number; unlogged: number }>();

  constructor(
    private readonly intervalMs: number,
    private readonly write: (key: string, count: number) => void,
    private readonly maxKeys = 10_000,
  ) {}

  note(key: string, now: number): void {
    const entry = this.last.get(key);
    if (entry && now - entry.at < this.intervalMs) {
      entry.unlogged++;
      return;
    }
    if (!entry && this.last.size >= this.maxKeys) {
      for (const [k, e] of this.last) if (now - e.at >= this.intervalMs && e.unlogged === 0) this.last.delete(k);
      for (const k of this.last.keys()) {
        if (this.last.size < this.maxKeys) break;
        this.last.delete(k);
      }
    }
    this.write(key, (entry?.unlogged ?? 0) + 1);
    this.last.set(key, { at: now, unlogged: 0 });
  }
}
