import { and, eq, isNull } from 'drizzle-orm';
import { paymentConnections } from '../../../db/schema';
import type { Rail, RailScope } from '../../../db/schema/enums';
import type { Deps } from '../../deps';
import { dbOf, type Tx } from '../../platform/context';

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
export function resolveKey(
  ctx: { deps: Pick<Deps, 'db'>; tx?: Tx },
  input: { lenderId: string; rail: Rail; merchantRef: string | null },
) {
  const keys = dbOf(ctx as { deps: Deps; tx?: Tx })
    .select({
      id: paymentConnections.id,
      railScope: paymentConnections.railScope,
      isDefault: paymentConnections.isDefault,
      merchantRef: paymentConnections.merchantRef,
      processor: paymentConnections.processor,
      keySealed: paymentConnections.keySealed,
    })
    .from(paymentConnections)
    .where(and(eq(paymentConnections.lenderId, input.lenderId), isNull(paymentConnections.deletedAt)))
    .all();
  return pickKey(keys, input.rail, input.merchantRef);
}
