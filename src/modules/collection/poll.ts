import type { Deps, JobContext } from '../../deps';
import type { StoreCtx } from '../../platform/store';
import { transaction, type Tx } from '../../platform/context';
import { betweenSlices, type Job } from '../../platform/jobs';
import { HeldLease } from '../../platform/leases';
import type { ProcessorChange } from '../../adapters/processors';
import { recordSlice, type Known, type Observation } from './record';
import { receiveNotice } from '../bank-accounts/changes';
import { reconcileKeys } from './reconcile';
import { madeForAnotherLender, matchReference, namesInReference, ownMatch, REFERENCE_PREFIX, type PaymentMatch } from './reference';
import { ACCOUNT_OF_ANOTHER_LENDER, learnAccounts, outsideMatchingFrom } from '../payment-connections/accounts';
import type { ProcessorName } from '../../../db/schema/enums';

// Reading outcomes: every live key's change feed, from its stored cursor, every PROCESSOR_POLL_INTERVAL_MS.
// Each page is one transaction: its events, the cursor, ingested, matched and last_poll_at commit together,
// so a crash repeats at most a page, which records nothing new the second time. A failing key records
// last_poll_error and does not hold up the others.
//
// Replicas (PostgreSQL): the job runs on every replica, and a key's feed is read by one at a time: by the
// replica holding the lease `poll:<connection id>` (taken for the key's stretch of pages, renewed between
// pages, released after), so two replicas read different keys at once and a key another replica is reading
// is skipped this tick. The stored cursor moves by compare and set: a page asked for from a cursor that moved
// meanwhile (a replica that stalled past its lease while another took the key over) is discarded, its
// transaction rolled back, and never recorded twice or moves the cursor back. Recording is forward-only
// besides (record.ts). On SQLite the lease is granted at once and the compare and set always holds.

const PAGE = 500;
const MAX_PAGES_PER_TICK = 200;

/** A key's feed lease: three poll intervals, at least 30 s and at most 10 minutes; renewed between pages. */
export const pollLeaseMs = (deps: Pick<Deps, 'config'>): number => Math.min(Math.max(30_000, 3 * deps.config.processorPollIntervalMs), 600_000);

/** The stored cursor is no longer the one a page was read from: the page's transaction is rolled back. */
class CursorMoved extends Error {}

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
  return (await matcherOf(sc, lenderId, connectionId, [c], outsideFrom))(c);
}

/**
 * matchChange for any change of `changes`, from what the store is asked once for all of them: the lender's
 * own payments by reference and by processor id through the key, the references made for another lender,
 * and the borrowers the references name (a page's look-ups, a few statements rather than a few per change).
 */
async function matcherOf(
  sc: StoreCtx,
  lenderId: string,
  connectionId: string,
  changes: ProcessorChange[],
  outsideFrom: number | null,
): Promise<(c: ProcessorChange) => PaymentMatch | null> {
  const references = [...new Set(changes.flatMap((c) => (c.reference ? [c.reference] : [])))];
  const own = await sc.deps.stores.matching.ownPaymentsAmong(sc, lenderId, connectionId, references, [...new Set(changes.map((c) => c.processorPaymentId))]);
  // What matchReference asks of a DRS- reference not our own payment: another lender's payment, or names.
  const outside = references.filter((r) => r.startsWith(REFERENCE_PREFIX) && !own.byReference.has(r));
  const others = new Set((await Promise.all(outside.map(async (r) => ((await madeForAnotherLender(sc, lenderId, r)) ? [r] : [])))).flat());
  const names = [...new Set(outside.filter((r) => !others.has(r)).flatMap((r) => namesInReference(r)))];
  const borrowers = new Map(names.length ? (await sc.deps.stores.enrollments.borrowersAmong(sc, lenderId, names)).map((b) => [b.aid, b.id]) : []);
  return (c) => {
    // The service's own payment also by the processor's id through the same key (a change without our reference).
    const mine = (c.reference ? own.byReference.get(c.reference) : undefined) ?? own.byProcessorId.get(c.processorPaymentId) ?? null;
    if (!c.reference) return mine ? ownMatch(mine) : null;
    const m = matchReference(
      {
        payment: () => mine,
        borrowers: (ids) => new Map(ids.flatMap((id) => (borrowers.has(id) ? [[id, borrowers.get(id)!] as const] : []))),
        othersPayment: (r) => others.has(r),
      },
      c.reference,
      { prefixed: true },
    );
    // A payment made elsewhere is the lender's only through an account bound to it, and only when made since
    // then: an account that changed hands never credits the new lender with the old one's payments.
    if (m && m.paymentId === null && (outsideFrom === null || (c.paymentCreatedAt ?? c.occurredAt) < outsideFrom)) return null;
    return m;
  };
}

interface PolledKey {
  id: string;
  lenderId: string;
  processor: ProcessorName;
  accountId: string | null;
}

/**
 * One page of changes read from cursor `from`, recorded with the cursor it leads to and the counts in one
 * transaction. False when the stored cursor is no longer `from`: nothing of the page is recorded.
 */
async function recordPage(ctx: JobContext, conn: PolledKey, from: string | null, changes: ProcessorChange[], cursor: string | null, cursorLost = false): Promise<boolean> {
  const now = ctx.deps.clock.now();
  try {
    await recordPageIn(ctx, conn, from, changes, cursor, cursorLost, now);
    return true;
  } catch (e) {
    if (e instanceof CursorMoved) return false;
    throw e;
  }
}

async function recordPageIn(ctx: JobContext, conn: PolledKey, from: string | null, changes: ProcessorChange[], cursor: string | null, cursorLost: boolean, now: number): Promise<void> {
  await transaction(ctx, async (tx) => {
    // Whether each processor payment was ingested is read, then written with the counts: one page of a key at
    // a time. The page's references are held at once, in one order, before any of them is recorded.
    await tx.deps.stores.matching.serializeFeed(tx, conn.id);
    await tx.deps.stores.outcomes.serializeReferences(tx, conn.lenderId, changes.map(referenceOf));
    const outsideFrom = await outsideMatchingFrom(tx, conn);
    const matches = await matchPage(tx, conn, changes, outsideFrom);
    const { ingested, matched } = await ingestPage(tx, conn.id, changes, matches);
    const known = await knownOfPage(tx, conn.lenderId, changes, matches);
    const observations = changes.map((c, i): Observation | null => {
      const m = matches[i]!.match;
      if (!m) return null;
      return {
        lenderId: conn.lenderId,
        reference: referenceOf(c),
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
        known: known[i],
      };
    });
    // Borrower by borrower, each borrower's changes in the order of the feed (recordSlice); the processor's id
    // of our payment kept first where the page is the first to tell it.
    await recordSlice(tx, observations, (i) => {
      const m = matches[i]!;
      return m.keepId ? () => tx.deps.stores.matching.keepProcessorPaymentId(tx, m.match!.paymentId!, changes[i]!.processorPaymentId) : undefined;
    });
    // A Notification of Change the processor tells with a change of one of the lender's payments.
    for (const [i, c] of changes.entries()) {
      const m = matches[i]!.match;
      if (!c.notificationOfChange || !m?.enrollmentId) continue;
      await receiveNotice(tx, {
        lenderId: conn.lenderId,
        paymentId: m.paymentId,
        enrollmentId: m.enrollmentId,
        notice: c.notificationOfChange,
        reference: c.reference,
        source: 'processor',
        sourceKey: `processor:${conn.id}:${c.sourceEventId}`,
        receivedAt: now,
      });
    }
    const moved = await tx.deps.stores.feeds.recordPoll(tx, conn.id, {
      from,
      cursor,
      at: now,
      error: conn.accountId !== null && outsideFrom === null ? ACCOUNT_OF_ANOTHER_LENDER : null,
      // Changes were missed: the key is reconciled by listing the processor's payments.
      reconcileDue: cursorLost,
      ingested,
      matched,
    });
    // Another poller moved the cursor since the page was asked for: everything above is rolled back.
    if (!moved) throw new CursorMoved();
  });
}

/** The reference a change is recorded under: the one it carries, else the processor's id of the payment. */
const referenceOf = (c: ProcessorChange): string => c.reference ?? c.processorPaymentId;

/** A change's borrower, and whether the page keeps the processor's id of our payment with it. */
interface PageMatch {
  match: PaymentMatch | null;
  keepId: boolean;
}

/**
 * Every change of a page matched (matchChange), from look-ups made for the whole page at once. Then, in the
 * feed's order, what an earlier change of the page teaches a later one: a change without our reference is
 * matched by the processor's id, which the page may be the first to tell of our payment (an earlier change
 * carried both), and that id is kept once.
 */
async function matchPage(tx: StoreCtx, conn: PolledKey, changes: ProcessorChange[], outsideFrom: number | null): Promise<PageMatch[]> {
  const matchOf = await matcherOf(tx, conn.lenderId, conn.id, changes, outsideFrom);
  const taught = new Map<string, PaymentMatch>();
  const kept = new Set<string>();
  return changes.map((c) => {
    let match = matchOf(c);
    if (!match && !c.reference) match = taught.get(c.processorPaymentId) ?? null;
    if (!match?.paymentId || match.processorIdKnown || kept.has(match.paymentId)) return { match, keepId: false };
    kept.add(match.paymentId);
    taught.set(c.processorPaymentId, { ...match, processorIdKnown: true });
    return { match, keepId: true };
  });
}

/**
 * What is recorded of the page's matched changes, read for the page at once rather than by each change (its
 * references are held since the page began): whether its source event was read before, and for the first
 * change of each reference the reference's latest event. A later change of the same reference reads that
 * itself, after the earlier one is recorded on it; a source event twice in the page is seen the second time.
 */
async function knownOfPage(tx: StoreCtx & { tx: Tx }, lenderId: string, changes: ProcessorChange[], matches: PageMatch[]): Promise<(Known | undefined)[]> {
  const at = changes.flatMap((c, i) => (matches[i]!.match ? [i] : []));
  if (at.length === 0) return [];
  const seen = new Set(await tx.deps.stores.outcomes.seenAmong(tx, lenderId, 'processor', [...new Set(at.map((i) => changes[i]!.sourceEventId))]));
  const firstOf = new Map<string, number>();
  for (const i of at) if (!firstOf.has(referenceOf(changes[i]!))) firstOf.set(referenceOf(changes[i]!), i);
  const last = new Map((await tx.deps.stores.outcomes.lastEventsAmong(tx, lenderId, [...firstOf.keys()])).map((r) => [r.reference, { status: r.status, occurredAt: r.occurredAt }]));
  const out: (Known | undefined)[] = [];
  const inPage = new Set<string>();
  for (const i of at) {
    const c = changes[i]!;
    const ref = referenceOf(c);
    out[i] = { seen: seen.has(c.sourceEventId) || inPage.has(c.sourceEventId), last: firstOf.get(ref) === i ? (last.get(ref) ?? null) : undefined, held: true };
    inPage.add(c.sourceEventId);
  }
  return out;
}

/**
 * Whether each processor payment of a page was ingested, read at once, then written at once: a new one
 * ingested (matched or not), one ingested unmatched and matched now marked. The counts are the page's.
 */
async function ingestPage(tx: StoreCtx & { tx: Tx }, connectionId: string, changes: ProcessorChange[], matches: PageMatch[]) {
  const ids = [...new Set(changes.map((c) => c.processorPaymentId))];
  const before = new Map((await tx.deps.stores.matching.ingestedAmong(tx, connectionId, ids)).map((r) => [r.id, r.matched]));
  const after = new Map(before);
  let ingested = 0;
  let matched = 0;
  changes.forEach((c, i) => {
    const m = matches[i]!.match !== null;
    const was = after.get(c.processorPaymentId);
    if (was === undefined) {
      after.set(c.processorPaymentId, m);
      ingested++;
      if (m) matched++;
    } else if (!was && m) {
      after.set(c.processorPaymentId, true);
      matched++;
    }
  });
  await tx.deps.stores.matching.saveIngested(tx, connectionId, [...after].flatMap(([id, m]) => (before.get(id) === m ? [] : [{ id, matched: m }])));
  return { ingested, matched };
}

export interface PollResult {
  changes: number;
  failures: number;
  /** Keys another replica was reading (their lease held elsewhere): left to it this tick. */
  skipped: number;
  /** Pages read from a cursor another poller had moved meanwhile: discarded, nothing recorded. */
  discarded: number;
}

/** Reads the changes since its cursor of every live key whose feed this replica can lease. */
export async function pollProcessors(deps: Deps, opts: { signal?: AbortSignal } = {}): Promise<PollResult> {
  const ctx: JobContext = { deps };
  // Keys stored before their account was recorded are asked which account they belong to first.
  await learnAccounts(deps);
  const conns = await ctx.deps.stores.feeds.keysToPoll(ctx);
  let changes = 0;
  let failures = 0;
  let skipped = 0;
  let discarded = 0;
  const lost: string[] = [];
  await Promise.all(
    conns.map(async (conn) => {
      let lease: HeldLease | null;
      try {
        lease = await HeldLease.take(deps, `poll:${conn.id}`, deps.config.replicaId, pollLeaseMs(deps));
      } catch (e) {
        failures++;
        deps.logger.warn({ connection_id: conn.id, processor: conn.processor, err: e instanceof Error ? e.message : String(e) }, 'could not take the feed lease; tried again next poll');
        return;
      }
      if (!lease) {
        skipped++;
        return;
      }
      const processor = deps.processors.forLender(conn.processor, conn.lenderId);
      const key = deps.vault.open(conn.keySealed!);
      try {
        // Read again under the lease: the list was read before it, and another replica may have read on since.
        const stored = await ctx.deps.stores.feeds.pollCursorOf(ctx, conn.id);
        if (!stored) return;
        let cursor = stored.cursor;
        for (let page = 0; page < MAX_PAGES_PER_TICK && !opts.signal?.aborted; page++) {
          // Renewed between pages; once it is lost, the key is another replica's.
          if (!(await lease.keep())) break;
          const res = await processor.listChanges(key, cursor, { limit: PAGE });
          // A page is one transaction; an in-process processor answers at once, so the loop gets its turn here.
          await betweenSlices(deps);
          if (!(await recordPage(ctx, conn, cursor, res.changes, res.nextCursor, res.cursorLost === true))) {
            discarded++;
            deps.logger.info({ connection_id: conn.id, processor: conn.processor }, 'page discarded: another poller moved the cursor meanwhile');
            break;
          }
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
        await transaction(ctx, (tx) => tx.deps.stores.feeds.recordPollError(tx, conn.id, message.slice(0, 500)));
        deps.logger.warn({ connection_id: conn.id, processor: conn.processor, err: message }, 'processor poll failed');
      } finally {
        await lease.release().catch((e: unknown) =>
          deps.logger.warn({ connection_id: conn.id, err: e instanceof Error ? e.message : String(e) }, 'could not release the feed lease; it expires on its own'),
        );
      }
    }),
  );
  if (lost.length > 0 && !opts.signal?.aborted) await reconcileKeys(deps, { connectionIds: lost, signal: opts.signal });
  return { changes, failures, skipped, discarded };
}

/**
 * Every replica, one key at a time: a key's feed is leased (poll:<connection id>) and its cursor moved by
 * compare and set, so two replicas read different keys at once and never record a page twice or move a cursor
 * back. A job-wide lease would leave every key to one replica.
 */
export const pollJob = (intervalMs: number): Job<Deps> => ({
  name: 'processor-poll',
  intervalMs,
  tick: (deps, signal) => pollProcessors(deps, { signal }),
});
