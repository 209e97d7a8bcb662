import type { ProcessorName } from '../../../db/schema/enums';
import type { Deps } from '../../deps';
import { transaction } from '../../platform/context';
import { Conflict } from '../../platform/errors';
import type { StoreCtx, TxCtx } from '../../platform/store';
import { type AccountBinding, type BoundAccount } from './store';

// One processor account, one lender, for good. A lender's first key of an account binds the account to it;
// the binding outlives the key (deleting it and registering it elsewhere would hand the next lender the first
// one's payments), and only the operator releases it (`bun run cli account release`). A key whose account is
// not known yet (stored before accounts were recorded) is asked about before it is polled, and matches no
// payment made elsewhere until it is known and bound to its lender.

/** What a key whose account another lender holds says in last_poll_error, poll after poll. */
export const ACCOUNT_OF_ANOTHER_LENDER = 'this key belongs to a processor account another lender registered first: payments made elsewhere are not matched through it';

export type { AccountBinding } from './store';

/**
 * Binds the account to the lender, or refuses (409) when another lender holds it; called in the transaction
 * of the key's write, with the account's binding read and written one transaction at a time, so two lenders
 * registering one account at once cannot both win.
 */
export async function bindAccount(c: TxCtx, v: { lenderId: string; processor: ProcessorName; accountId: string; now: number }): Promise<AccountBinding> {
  await c.deps.stores.paymentConnections.serializeAccount(c, v.processor, v.accountId);
  const held = await c.deps.stores.paymentConnections.accountBinding(c, v.processor, v.accountId);
  if (held && held.lenderId !== v.lenderId) {
    throw new Conflict(
      'This key belongs to a processor account another lender has registered; one account serves one lender. If the account has changed hands, the operator releases it with `bun run cli account release`.',
    );
  }
  if (held) return held;
  await c.deps.stores.paymentConnections.bindAccount(c, { processor: v.processor, accountId: v.accountId, lenderId: v.lenderId, boundAt: v.now });
  return { lenderId: v.lenderId, boundAt: v.now };
}

type KeyOfAccount = { lenderId: string; processor: ProcessorName; accountId: string | null };

const matchingFrom = (conn: KeyOfAccount, b: AccountBinding | undefined): number | null => (b && b.lenderId === conn.lenderId ? b.boundAt : null);

/**
 * From when a key's feed may credit the lender's borrowers with payments made elsewhere: the binding's time
 * when the key's account is bound to the key's lender; null (never) when the account is unknown or another's.
 */
export async function outsideMatchingFrom(c: StoreCtx, conn: KeyOfAccount): Promise<number | null> {
  if (conn.accountId === null) return null;
  return matchingFrom(conn, await c.deps.stores.paymentConnections.accountBinding(c, conn.processor, conn.accountId));
}

/**
 * Keys stored without their account: each is asked once (the processor's cheap authenticated read), its
 * account recorded and bound to its lender when free. A key whose account another lender holds keeps working
 * for its own payments and matches nothing made elsewhere; its last_poll_error says why. A processor that does
 * not answer is asked again at the next poll.
 */
export async function learnAccounts(deps: Deps, opts: { processor?: ProcessorName } = {}): Promise<number> {
  const unknown = await deps.stores.paymentConnections.keysWithoutAccount({ deps }, opts.processor);
  let learned = 0;
  for (const c of unknown) {
    let accountId: string;
    try {
      ({ accountId } = await deps.processors.forLender(c.processor, c.lenderId).verifyKey(deps.vault.open(c.keySealed!)));
    } catch (e) {
      deps.logger.warn({ connection_id: c.id, processor: c.processor, err: e instanceof Error ? e.message : String(e) }, 'processor account of a key not known yet; asked again later');
      continue;
    }
    await transaction({ deps }, async (tx) => {
      await tx.deps.stores.paymentConnections.serializeAccount(tx, c.processor, accountId);
      const now = deps.clock.now();
      const held = await tx.deps.stores.paymentConnections.accountBinding(tx, c.processor, accountId);
      if (!held) await tx.deps.stores.paymentConnections.bindAccount(tx, { processor: c.processor, accountId, lenderId: c.lenderId, boundAt: now });
      const another = held !== undefined && held.lenderId !== c.lenderId;
      await tx.deps.stores.paymentConnections.recordKeyAccount(tx, c.id, accountId, another ? ACCOUNT_OF_ANOTHER_LENDER : undefined);
    });
    learned++;
  }
  return learned;
}

/**
 * Before a key is registered: every live key of the processor has its account known (asked now if not), so
 * that an account held since before accounts were recorded is bound to its first lender, never to the next
 * one. False when a processor did not answer: the registration waits rather than guess.
 */
export async function accountsKnown(deps: Deps, processor: ProcessorName): Promise<boolean> {
  if ((await deps.stores.paymentConnections.keysWithoutAccount({ deps }, processor)).length === 0) return true;
  await learnAccounts(deps, { processor });
  return (await deps.stores.paymentConnections.keysWithoutAccount({ deps }, processor)).length === 0;
}

/** The bound accounts, for the operator (CLI). */
export const listBindings = (c: StoreCtx): Promise<BoundAccount[]> => c.deps.stores.paymentConnections.listBindings(c);

/**
 * Releases an account (the operator, for a real handover): the next lender to register a key of it binds it,
 * from that moment. Refused while a live key of the holder still uses it.
 */
export async function releaseAccount(c: TxCtx, processor: ProcessorName, accountId: string): Promise<'released' | 'unknown' | 'in_use'> {
  // A key of the account registered meanwhile either binds before this reads, or finds it released.
  await c.deps.stores.paymentConnections.serializeAccount(c, processor, accountId);
  const held = await c.deps.stores.paymentConnections.accountBinding(c, processor, accountId);
  if (!held) return 'unknown';
  if (await c.deps.stores.paymentConnections.accountInUse(c, { processor, accountId, lenderId: held.lenderId })) return 'in_use';
  await c.deps.stores.paymentConnections.releaseAccount(c, processor, accountId);
  return 'released';
}
