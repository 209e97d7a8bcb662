import { RateLimited } from './errors';
import type { PlatformDeps } from './context';

// Work a lender asks for now, outside its cadence (run a schedule now, read a borrower now), is bounded per
// lender: a bucket of ON_DEMAND_BURST requests refilled one every ON_DEMAND_REFILL_S seconds, shared by the
// API and the portal. The bucket lives with the process (as the per-key rate limit does).

export const ON_DEMAND_BURST = 20;
export const ON_DEMAND_REFILL_S = 3;

/** One bucket per lender (lenders are few: the operator creates them), per running service. */
const buckets = new WeakMap<PlatformDeps, Map<string, { tokens: number; at: number }>>();

/** Spends one of the lender's on-demand requests, or refuses with 429 and how long to wait. */
export function takeOnDemand(deps: PlatformDeps, lenderId: string, what: string): void {
  let map = buckets.get(deps);
  if (!map) buckets.set(deps, (map = new Map()));
  const now = deps.clock.now();
  const b = map.get(lenderId) ?? { tokens: ON_DEMAND_BURST, at: now };
  b.tokens = Math.min(ON_DEMAND_BURST, b.tokens + Math.max(0, now - b.at) / (ON_DEMAND_REFILL_S * 1000));
  b.at = now;
  map.set(lenderId, b);
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return;
  }
  const wait = Math.max(1, Math.ceil((1 - b.tokens) * ON_DEMAND_REFILL_S));
  throw new RateLimited(
    wait,
    `At most ${ON_DEMAND_BURST} schedule runs and borrower reads on demand at once, then one every ${ON_DEMAND_REFILL_S} seconds; ${what} was not started`,
    `Retry after ${wait} seconds; the regular cadence goes on meanwhile`,
  );
}
