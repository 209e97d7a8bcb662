import type { Rail, RailScope } from '../../../db/schema/enums';
import type { StoreCtx } from '../../platform/store';
import { type ResolvableKey } from './store';

/** The part of a key that decides which payments it takes. */
export interface KeyChoice {
  id: string;
  railScope: RailScope;
  isDefault: boolean;
  merchantRef: string | null;
}

/**
 * Which key takes a payment of rail R for a borrower: with merchant_ref M, the key tagged M with
 * rail_scope R, else the key tagged M with `both`; without M, the default for R, else the `both` default.
 * Null when none does (the payment is skipped). `keys` are the lender's live keys; the database's unique
 * indexes guarantee each of these lookups has at most one answer.
 */
export function pickKey<K extends KeyChoice>(keys: readonly K[], rail: Rail, merchantRef: string | null): K | null {
  const fits = (k: K, scope: RailScope) =>
    k.railScope === scope && (merchantRef === null ? k.isDefault : k.merchantRef === merchantRef);
  return keys.find((k) => fits(k, rail)) ?? keys.find((k) => fits(k, 'both')) ?? null;
}

/** The live key (with its sealed value) that takes a payment of `rail` for a borrower with `merchantRef`. */
export async function resolveKey(c: StoreCtx, input: { lenderId: string; rail: Rail; merchantRef: string | null }): Promise<ResolvableKey | null> {
  return pickKey(await c.deps.stores.paymentConnections.resolvableKeys(c, input.lenderId), input.rail, input.merchantRef);
}
