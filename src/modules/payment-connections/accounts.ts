import { and, asc, eq, isNotNull, isNull } from 'drizzle-orm';
import { lenders, paymentConnections, processorAccounts } from '../../../db/schema';
import type { ProcessorName } from '../../../db/schema/enums';
import type { Deps } from '../../deps';
import type { Db } from '../../platform/db';
import { transaction, type Tx } from '../../platform/context';
import { Conflict } from '../../platform/errors';

// One processor account, one lender, for good. A lender's first key of an account binds the account to it;
// the binding outlives the key (deleting it and registering it elsewhere would hand the next lender the first
// one's payments), and only the operator releases it (`bun run cli account release`). A key whose account is
// not known yet (stored before accounts were recorded) is asked about before it is polled, and matches no
// payment made elsewhere until it is known and bound to its lender.

/** What a key whose account another lender holds says in last_poll_error, poll after poll. */
export const ACCOUNT_OF_ANOTHER_LENDER = 'this key belongs to a processor account another lender registered first: payments made elsewhere are not matched through it';

export interface AccountBinding {
  lenderId: string;
  boundAt: number;
}

export const bindingOf = (db: Db, processor: ProcessorName, accountId: string): AccountBinding | undefined =>
  db
    .select({ lenderId: processorAccounts.lenderId, boundAt: processorAccounts.boundAt })
    .from(processorAccounts)
    .where(and(eq(processorAccounts.processor, processor), eq(processorAccounts.accountId, accountId)))
    .get();

/**
 * Binds the account to the lender, or refuses (409) when another lender holds it; called under the write lock
 * with the key's write, so two lenders registering one account at once cannot both win.
 */
export function bindAccount(tx: Tx, v: { lenderId: string; processor: ProcessorName; accountId: string; now: number }): AccountBinding {
  const held = bindingOf(tx, v.processor, v.accountId);
  if (held && held.lenderId !== v.lenderId) {
    throw new Conflict(
      'This key belongs to a processor account another lender has registered; one account serves one lender. If the account has changed hands, the operator releases it with `bun run cli account release`.',
    );
  }
  if (held) return held;
  tx.insert(processorAccounts).values({ processor: v.processor, accountId: v.accountId, lenderId: v.lenderId, boundAt: v.now }).run();
  return { lenderId: v.lenderId, boundAt: v.now };
}

/**
 * From when a key's feed may credit the lender's borrowers with payments made elsewhere: the binding's time
 * when the key's account is bound to the key's lender; null (never) when the account is unknown or another's.
 */
export function outsideMatchingFrom(db: Db, conn: { lenderId: string; processor: ProcessorName; accountId: string | null }): number | null {
  if (conn.accountId === null) return null;
  const b = bindingOf(db, conn.processor, conn.accountId);
  return b && b.lenderId === conn.lenderId ? b.boundAt : null;
}

/**
 * Keys stored without their account: each is asked once (the processor's cheap authenticated read), its
 * account recorded and bound to its lender when free. A key whose account another lender holds keeps working
 * for its own payments and matches nothing made elsewhere; its last_poll_error says why. A processor that does
 * not answer is asked again at the next poll.
 */
export async function learnAccounts(deps: Deps, opts: { processor?: ProcessorName } = {}): Promise<number> {
  const unknown = unknownKeys(deps.db, opts.processor);
  let learned = 0;
  for (const c of unknown) {
    let accountId: string;
    try {
      ({ accountId } = await deps.processors.byName(c.processor).verifyKey(deps.vault.open(c.keySealed!)));
    } catch (e) {
      deps.logger.warn({ connection_id: c.id, processor: c.processor, err: e instanceof Error ? e.message : String(e) }, 'processor account of a key not known yet; asked again later');
      continue;
    }
    await transaction({ deps }, ({ tx }) => {
      const now = deps.clock.now();
      const held = bindingOf(tx, c.processor, accountId);
      if (!held) tx.insert(processorAccounts).values({ processor: c.processor, accountId, lenderId: c.lenderId, boundAt: now }).run();
      const another = held !== undefined && held.lenderId !== c.lenderId;
      tx.update(paymentConnections)
        .set({
          accountId,
          ...(another ? { lastPollError: ACCOUNT_OF_ANOTHER_LENDER } : {}),
        })
        .where(eq(paymentConnections.id, c.id))
        .run();
    });
    learned++;
  }
  return learned;
}

const unknownKeys = (db: Db, processor?: ProcessorName) =>
  db
    .select({ id: paymentConnections.id, lenderId: paymentConnections.lenderId, processor: paymentConnections.processor, keySealed: paymentConnections.keySealed })
    .from(paymentConnections)
    .where(
      and(
        isNull(paymentConnections.accountId),
        isNull(paymentConnections.deletedAt),
        isNotNull(paymentConnections.keySealed),
        processor ? eq(paymentConnections.processor, processor) : undefined,
      ),
    )
    .orderBy(asc(paymentConnections.createdAt), asc(paymentConnections.id))
    .all();

/**
 * Before a key is registered: every live key of the processor has its account known (asked now if not), so
 * that an account held since before accounts were recorded is bound to its first lender, never to the next
 * one. False when a processor did not answer: the registration waits rather than guess.
 */
export async function accountsKnown(deps: Deps, processor: ProcessorName): Promise<boolean> {
  if (unknownKeys(deps.db, processor).length === 0) return true;
  await learnAccounts(deps, { processor });
  return unknownKeys(deps.db, processor).length === 0;
}

/** The bound accounts, for the operator (CLI). */
export const listBindings = (db: Db) =>
  db
    .select({ processor: processorAccounts.processor, accountId: processorAccounts.accountId, lender: lenders.name, boundAt: processorAccounts.boundAt })
    .from(processorAccounts)
    .innerJoin(lenders, eq(lenders.id, processorAccounts.lenderId))
    .orderBy(asc(processorAccounts.boundAt))
    .all();

/**
 * Releases an account (the operator, for a real handover): the next lender to register a key of it binds it,
 * from that moment. Refused while a live key of the holder still uses it.
 */
export function releaseAccount(tx: Tx, processor: ProcessorName, accountId: string): 'released' | 'unknown' | 'in_use' {
  const held = bindingOf(tx, processor, accountId);
  if (!held) return 'unknown';
  const inUse = tx
    .select({ id: paymentConnections.id })
    .from(paymentConnections)
    .where(
      and(
        eq(paymentConnections.processor, processor),
        eq(paymentConnections.accountId, accountId),
        eq(paymentConnections.lenderId, held.lenderId),
        isNull(paymentConnections.deletedAt),
      ),
    )
    .get();
  if (inUse) return 'in_use';
  tx.delete(processorAccounts).where(and(eq(processorAccounts.processor, processor), eq(processorAccounts.accountId, accountId))).run();
  return 'released';
}
