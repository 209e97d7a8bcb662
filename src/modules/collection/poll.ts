import type { Deps, JobContext } from '../../deps';
import type { StoreCtx } from '../../platform/store';
import { transaction } from '../../platform/context';
import { betweenSlices, type Job } from '../../platform/jobs';
import type { ProcessorChange } from '../../adapters/processors';
import { recordOrSetAside } from './record';
import { reconcileKeys } from './reconcile';
import { collectionStore as store } from './store';
import { matchStoredReference, storedSource, type PaymentMatch } from './reference';
import { ACCOUNT_OF_ANOTHER_LENDER, learnAccounts, outsideMatchingFrom } from '../payment-connections/accounts';
import type { ProcessorName } from '../../../db/schema/enums';

// Reading outcomes: every live key's change feed, from its stored cursor, every PROCESSOR_POLL_INTERVAL_MS.
// Each page is one transaction: its events, the cursor, ingested, matched and last_poll_at commit together,
// so a crash repeats at most a page, which records nothing new the second time. A failing key records
// last_poll_error and does not hold up the others.

const PAGE = 500;
const MAX_PAGES_PER_TICK = 200;

/**
 * Which borrower a change belongs to: the service's own payments by processor id or reference; other `DRS-`
 * references by splitting after the prefix at each dash and taking the split whose left part is a borrower
 * of the lender: exactly one such split, or the change is unmatched.
 */
export async function matchChange(
  sc: StoreCtx,
  lenderId: string,
  connectionId: string,
  c: ProcessorChange,
  outsideFrom: number | null,
): Promise<PaymentMatch | null> {
  // The service's own payment also by the processor's id through the same key (a change without our reference).
  const own = () => store.ownPayment(sc, lenderId, connectionId, c.reference, c.processorPaymentId);
  if (!c.reference) {
    const p = await own();
    return p ? { enrollmentId: p.enrollmentId, authorizerUniqueId: p.aid, paymentId: p.id, amountCents: p.amount, processorIdKnown: !!p.pid } : null;
  }
  const m = await matchStoredReference(storedSource(sc, lenderId, own), c.reference, { prefixed: true });
  // A payment made elsewhere is the lender's only through an account bound to it, and only when made since
  // then: an account that changed hands never credits the new lender with the old one's payments.
  if (m && m.paymentId === null && (outsideFrom === null || (c.paymentCreatedAt ?? c.occurredAt) < outsideFrom)) return null;
  return m;
}

interface PolledKey {
  id: string;
  lenderId: string;
  processor: ProcessorName;
  accountId: string | null;
}

/** One page of changes, recorded with the cursor and the counts in one transaction. */
async function recordPage(ctx: JobContext, conn: PolledKey, changes: ProcessorChange[], cursor: string | null, cursorLost = false): Promise<void> {
  const now = ctx.deps.clock.now();
  await transaction(ctx, async (tx) => {
    // Whether each processor payment was ingested is read, then written with the counts: one page of a key at
    // a time. The page's references are held at once, in one order, before any of them is recorded.
    await store.serializeFeed(tx, conn.id);
    await store.serializeReferences(tx, conn.lenderId, changes.map((c) => c.reference ?? c.processorPaymentId));
    let ingested = 0;
    let matched = 0;
    const outsideFrom = await outsideMatchingFrom(tx, conn);
    for (const c of changes) {
      const m = await matchChange(tx, conn.lenderId, conn.id, c, outsideFrom);
      const seen = await store.ingestedOf(tx, conn.id, c.processorPaymentId);
      if (!seen) {
        await store.recordIngested(tx, conn.id, c.processorPaymentId, m !== null);
        ingested++;
        if (m) matched++;
      } else if (!seen.matched && m) {
        await store.markIngestedMatched(tx, conn.id, c.processorPaymentId);
        matched++;
      }
      if (!m) continue;
      const keepId = m.paymentId && !m.processorIdKnown ? () => store.keepProcessorPaymentId(tx, m.paymentId!, c.processorPaymentId) : undefined;
      await recordOrSetAside(tx, {
        lenderId: conn.lenderId,
        // The payment's own reference, whatever the processor echoes back.
        reference: c.reference ?? c.processorPaymentId,
        status: c.status,
        // One amount for every event of a reference: the amount the service sent, for its own payments.
        amountCents: m.amountCents ?? c.amountCents,
        returnCode: c.returnCode,
        message: c.message,
        occurredAt: c.occurredAt,
        source: 'processor',
        sourceEventId: c.sourceEventId,
        enrollmentId: m.enrollmentId,
        authorizerUniqueId: m.authorizerUniqueId,
        paymentId: m.paymentId,
        connectionId: conn.id,
        repeat: c.reinstated === true,
        declineCode: c.declineCode ?? null,
      }, keepId);
    }
    await store.recordPoll(tx, conn.id, {
      cursor,
      at: now,
      error: conn.accountId !== null && outsideFrom === null ? ACCOUNT_OF_ANOTHER_LENDER : null,
      // Changes were missed: the key is reconciled by listing the processor's payments.
      reconcileDue: cursorLost,
      ingested,
      matched,
    });
  });
}

/** Reads every live key's changes since its cursor. */
export async function pollProcessors(deps: Deps, opts: { signal?: AbortSignal } = {}): Promise<{ changes: number; failures: number }> {
  const ctx: JobContext = { deps };
  // Keys stored before their account was recorded are asked which account they belong to first.
  await learnAccounts(deps);
  const conns = await store.keysToPoll(ctx);
  let changes = 0;
  let failures = 0;
  const lost: string[] = [];
  await Promise.all(
    conns.map(async (conn) => {
      const processor = deps.processors.byName(conn.processor);
      const key = deps.vault.open(conn.keySealed!);
      let cursor = conn.cursor;
      try {
        for (let page = 0; page < MAX_PAGES_PER_TICK && !opts.signal?.aborted; page++) {
          const res = await processor.listChanges(key, cursor, { limit: PAGE });
          // A page is one transaction; an in-process processor answers at once, so the loop gets its turn here.
          await betweenSlices(deps);
          await recordPage(ctx, conn, res.changes, res.nextCursor, res.cursorLost === true);
          if (res.cursorLost) {
            deps.logger.warn({ connection_id: conn.id, processor: conn.processor }, 'the processor no longer holds changes after the cursor; reconciling the key');
            lost.push(conn.id);
          }
          changes += res.changes.length;
          cursor = res.nextCursor;
          if (!res.hasMore) break;
        }
      } catch (e) {
        failures++;
        deps.metrics.pollFailures.inc({ processor: conn.processor });
        const message = e instanceof Error ? e.message : String(e);
        await transaction(ctx, (tx) => store.recordPollError(tx, conn.id, message.slice(0, 500)));
        deps.logger.warn({ connection_id: conn.id, processor: conn.processor, err: message }, 'processor poll failed');
      }
    }),
  );
  if (lost.length > 0 && !opts.signal?.aborted) await reconcileKeys(deps, { connectionIds: lost, signal: opts.signal });
  return { changes, failures };
}

export const pollJob = (intervalMs: number): Job<Deps> => ({
  name: 'processor-poll',
  intervalMs,
  tick: (deps, signal) => pollProcessors(deps, { signal }),
});
