import { writeGate } from '../../platform/context';
import type { Db } from '../../platform/db';
import type { Deps, JobContext } from '../../deps';
import { betweenSlices, type Job } from '../../platform/jobs';
import { commitsSyncedLater, transaction } from '../../platform/context';
import { againOnConflict, isRefusedValue, refusalKind } from '../../platform/pg';
import type { TxCtx } from '../../platform/store';
import { drainClaims, writesInOrder } from '../../platform/work-pool';
import { yieldWhenSpent } from '../../platform/slices';
import { isDatabaseUnavailable } from '../../platform/db-unavailable';
import { TransientProviderError, type BalanceReadRequest, type BalanceReadResult, type ChangeNotice } from '../../adapters/bank-data/types';
import { BLOCKING_HEALTHS, detailOfHealth, healthOfDetail, type BankLink, type LinkCredentials, type LinkedReadResult, type LinkProbe } from '../../adapters/bank-data/linked';
import type { LinkHealth } from '../../../db/schema/enums';
import { healthOfLink, noteLinkHealth, noteLinkItem } from './link-health';
export { linkDigest, linkView } from './link-digest';
import type { BalanceKind, BankDataProvider } from '../../../db/schema/enums';
import { connectionFor, markRead } from '../bank-data-connections/service';
import { enqueueWebhook } from '../webhooks/service';
import type { CompletedBatch, RecordedRead } from './results';
import type { SensitiveFields } from '../authorizers/rules';
import { openSensitive, unpackItems } from './payload';
import { BALANCE_PROCESSING_JOB, IDEMPOTENCY_TTL_MS } from './service';
import { exportStatusFor, RESULT_NOT_STORABLE } from './status';
import { linkReadKey, linkReadsOf, reusedDetail, type ItemRead } from './link-reads';
import { ITEM_LEASE_MS, type ClaimedItem, type ReadFinish, type ResultRow } from './store';
import { implausible } from '../../adapters/bank-data/plausible';
import { withCallScope } from '../../platform/provider-calls';
import { PROVIDER_WAIT_MS, rateLimitBackoffMs, refreshLookMs } from './provider-waits';

export { ITEM_LEASE_MS };

/** Claims outlive the slowest read (provider timeout and retries), so a live worker keeps its items. */
export const MAX_READ_ATTEMPTS = 3;
export const RETRY_BASE_MS = 2_000;
const FLUSH_ROWS = 64;
const FLUSH_INTERVAL_MS = 100;
const PAYLOAD_CACHE_BATCHES = 128;

/** What a provider said of a link, recorded with the read (link-health.ts). */
interface HealthNote {
  link: BankLink;
  probe: LinkProbe;
}

type Outcome =
  | {
      kind: 'result';
      item: ClaimedItem;
      cents: number | null;
      code: number;
      exportStatus: string;
      institution: string | null;
      at: number;
      /** A Notification of Change the configured source passed on with the balance. */
      change?: ChangeNotice;
      linked?: {
        balanceKind: BalanceKind | null;
        asOf: number | null;
        detail: string | null;
        connectionId: string | null;
        /** What the provider said of the link, to be recorded (an episode opened, moved, closed). */
        note: HealthNote | null;
        /** Plaid: the link and the Item its read named, to be kept for the Item's webhooks. */
        item?: { link: BankLink; itemId: string };
        /** The link's health when it forbids a debit (revoked, closed, not transactable), for the collection decision. */
        linkHealth?: LinkHealth | null;
        /** The institution as the provider named it, in place of the routing directory's name. */
        institution?: string;
      };
    }
  | { kind: 'retry'; item: ClaimedItem; nextAt: number; waitingSince?: number | null };

/** How long a linked account's pending balance refresh (and rate limits) is waited on before it counts as a failed attempt. */
export const REFRESH_WAIT_MS = PROVIDER_WAIT_MS;

/**
 * Every pending batch moved to processing, each in its own transaction (a batch is either untouched or fully
 * queued), outside the claim: a claim's transaction only leases rows, however large the batches sent.
 */
export async function startPendingBatches(deps: Pick<Deps, 'db' | 'reader' | 'pg' | 'engine' | 'stores'>): Promise<number> {
  const pending = (await deps.stores.balances.openBatches({ deps })).filter((b) => b.status === 'pending');
  for (const b of pending) {
    await transaction({ deps }, async (tx) => {
      // Started meanwhile by another claimer: left as it is. Held from here, so its payload is read as it is now.
      if (await tx.deps.stores.balances.lockWaitingBatch(tx, b.id)) await startBatch(tx, b.id, b.lenderId);
    });
  }
  return pending.length;
}

/** pending → processing: the batch's queue rows created from its payload, its clear copy dropped. */
async function startBatch(tx: TxCtx, batchId: string, lenderId: string): Promise<void> {
  const items = await tx.deps.stores.balances.waitingItems(tx, batchId);
  if (items === undefined) throw new Error(`payload of batch ${batchId} is missing`);
  await tx.deps.stores.balances.startBatch(tx, batchId, lenderId, unpackItems(items));
}

/** A read kept under its key while it is pending and once it has answered; one that fails is dropped. */
function remember<K, V>(cache: Map<K, Promise<V>>, key: K, read: Promise<V>): Promise<V> {
  cache.set(key, read);
  read.catch(() => {
    if (cache.get(key) === read) cache.delete(key);
  });
  return read;
}

/**
 * The batch's sealed payload, opened once per batch and kept for the few batches being worked on. The reads
 * of a claim start together: each batch's payload is read and opened once, its other items wait for it.
 */
class PayloadCache {
  private readonly cache = new Map<string, Promise<SensitiveFields[]>>();
  constructor(private readonly deps: Deps) {}
  get(batchId: string): Promise<SensitiveFields[]> {
    let v = this.cache.get(batchId);
    if (v) {
      // Least recently used goes first: re-inserting moves this batch to the end.
      this.cache.delete(batchId);
      this.cache.set(batchId, v);
    } else {
      if (this.cache.size >= PAYLOAD_CACHE_BATCHES) this.cache.delete(this.cache.keys().next().value!);
      // A payload that could not be read is not kept: the batch's next item tries again.
      v = remember(this.cache, batchId, this.open(batchId));
    }
    return v;
  }
  private async open(batchId: string): Promise<SensitiveFields[]> {
    const sealed = await this.deps.stores.balances.sealedPayload({ deps: this.deps }, batchId);
    if (sealed === undefined) throw new Error(`payload of batch ${batchId} is missing`);
    return openSensitive(this.deps.vault, sealed);
  }
}

/** A lender's bank-data credentials per provider, opened once per tick. */
class ConnectionCache {
  private readonly cache = new Map<string, Promise<{ id: string; creds: LinkCredentials } | null>>();
  constructor(private readonly deps: Deps) {}
  get(lenderId: string, provider: BankDataProvider): Promise<{ id: string; creds: LinkCredentials } | null> {
    const key = `${lenderId}\n${provider}`;
    return this.cache.get(key) ?? remember(this.cache, key, connectionFor(this.deps, lenderId, provider));
  }
}

async function readLinked(deps: Deps, creds: LinkCredentials, link: BankLink, now: number, waitingSince: number | null): Promise<LinkedReadResult> {
  let r: LinkedReadResult;
  if (link.provider === 'plaid' && creds.provider === 'plaid') r = await deps.linked.plaid.read(creds, link, now);
  else if (link.provider === 'stripe' && creds.provider === 'stripe') r = await deps.linked.stripe.read(creds, link, now);
  else throw new Error('a link read with another provider’s credentials');
  // A refresh still running is looked at again with backoff (provider-waits.ts), for every item sharing the look.
  if (r.kind === 'pending') return { kind: 'pending', retryAt: Math.max(r.retryAt, now + refreshLookMs(now - (waitingSince ?? now), deps.config.providerTimeScale)) };
  // A number no account holds, or a time that is not one, is a failed read with its reason, never a balance.
  const why = r.kind === 'balance' ? implausible(r.balanceCents, r.asOf, now) : null;
  return why === null ? r : { kind: 'failed', statusCode: 9000, detail: why };
}

function readRequest(item: ClaimedItem, s: SensitiveFields): BalanceReadRequest {
  return {
    authorizerUniqueId: item.authorizerUniqueId,
    paymentType: item.paymentType,
    routingNumber: item.routingNumber,
    accountNumber: s.accountNumber,
    debitCardNumber: s.debitCardNumber,
    cvv: s.cvv,
    expirationMonth: s.expirationMonth,
    expirationYear: s.expirationYear,
    ssn: s.ssn,
    ein: s.ein,
    firstName: s.firstName,
    lastName: s.lastName,
    phoneNumber: item.phone,
    zipCode: item.zip,
    dateOfBirth: s.dateOfBirth,
  };
}

/**
 * Records outcomes in one transaction: results (one per item, enforced by a unique key), retries, what the
 * results set off (deps.balanceResults, listed in modules/balance-results.ts), batch counters, and, with the
 * last result of a batch, its completion and its webhook, then what the completion sets off.
 */
async function recordOutcomes(ctx: JobContext, outcomes: Outcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  // On PostgreSQL two replicas' flushes may still lock the same rows in two orders (a borrower read in two
  // batches at once): the one the database picks to undo is written again, rather than its reads left leased
  // until their claims run out.
  try {
    await againOnConflict(3, () => recordOutcomesOnce(ctx, outcomes));
  } catch (e) {
    if (!isRefusedValue(e)) throw e;
    // A value the database refuses (PostgreSQL refuses a NUL in text, a number past its column) fails the whole
    // flush, and would fail it again each time its reads came back: the outcomes are written one by one
    // instead, and one that cannot be stored as it is is recorded as a failed read naming why, so that its
    // batch completes and nothing is read again for it.
    for (const o of outcomes) {
      try {
        await againOnConflict(3, () => recordOutcomesOnce(ctx, [o]));
      } catch (alone) {
        if (o.kind !== 'result' || !isRefusedValue(alone)) throw alone;
        // The kind of refusal only: the database's message may quote the value refused.
        ctx.deps.logger.error({ batch_id: o.item.batchId, refusal: refusalKind(alone) }, 'a balance result could not be stored; recorded as failed');
        await againOnConflict(3, () => recordOutcomesOnce(ctx, [notStorable(o)]));
      }
    }
  }
}

/** A result the database refused, as the failed read recorded in its place: nothing of what was refused is kept. */
function notStorable(o: Extract<Outcome, { kind: 'result' }>): Outcome {
  return {
    ...o,
    cents: null,
    code: 9000,
    exportStatus: exportStatusFor(9000, 'internal'),
    institution: null,
    linked: { balanceKind: null, asOf: null, detail: RESULT_NOT_STORABLE, connectionId: o.linked?.connectionId ?? null, note: o.linked?.note ?? null, linkHealth: o.linked?.linkHealth ?? null },
  };
}

async function recordOutcomesOnce(ctx: JobContext, outcomes: Outcome[]): Promise<void> {
  await transaction(ctx, async (tx) => {
    // What the flush writes is held first, each kind in one order: flushes at once never each wait for the other.
    await tx.deps.stores.balances.lockReads(tx, outcomes.map((o) => o.item.id));
    const readThrough = new Set<string>();
    const results: Extract<Outcome, { kind: 'result' }>[] = [];
    const retries: { id: number; leaseToken: string; finish: ReadFinish }[] = [];
    for (const o of outcomes) {
      if (o.kind === 'retry') {
        retries.push({
          id: o.item.id,
          leaseToken: o.item.leaseToken,
          // A refresh still running at the provider is waited on, not an attempt used.
          finish:
            o.waitingSince !== undefined
              ? { state: 'pending', nextAttemptAt: o.nextAt, set: { waitingSince: o.waitingSince } }
              : { state: 'pending', attempts: o.item.attempts + 1, nextAttemptAt: o.nextAt },
        });
        continue;
      }
      if (o.linked?.connectionId) readThrough.add(o.linked.connectionId);
      if (o.linked?.item) await noteLinkItem(tx, o.item.lenderId, o.linked.item.link, o.linked.item.itemId);
      if (o.linked?.note) await noteLinkHealth(tx, { lenderId: o.item.lenderId, aid: o.item.authorizerUniqueId, link: o.linked.note.link, probe: o.linked.note.probe, batchId: o.item.batchId }, o.at);
      results.push(o);
    }
    // The flush's results in one call: one row per item, a unique item_id makes a second impossible.
    const inserted = await tx.deps.stores.balances.recordResults(
      tx,
      results.map(
        (o): ResultRow => ({
          itemId: o.item.id,
          batchId: o.item.batchId,
          lenderId: o.item.lenderId,
          aid: o.item.authorizerUniqueId,
          cents: o.cents,
          code: o.code,
          exportStatus: o.exportStatus,
          institution: o.institution,
          at: o.at,
          kind: o.linked?.balanceKind ?? null,
          asOf: o.linked?.asOf ?? null,
          detail: o.linked?.detail ?? null,
        }),
      ),
    );
    await tx.deps.stores.balances.finishReads(tx, [...retries, ...results.map((o) => ({ id: o.item.id, leaseToken: o.item.leaseToken, finish: { state: 'done' } }))]);
    const added = new Map<string, number>();
    const recorded: RecordedRead[] = [];
    results.forEach((o, i) => {
      if (!inserted[i]) return;
      added.set(o.item.batchId, (added.get(o.item.batchId) ?? 0) + 1);
      recorded.push({
        batchId: o.item.batchId,
        lenderId: o.item.lenderId,
        authorizerUniqueId: o.item.authorizerUniqueId,
        balanceCents: o.cents,
        statusCode: o.code,
        at: o.at,
        balanceKind: o.linked?.balanceKind ?? null,
        asOf: o.linked?.asOf ?? null,
        linkHealth: o.linked?.linkHealth ?? null,
        ...(o.change ? { change: o.change } : {}),
      });
    });
    // The results in one order by every flush (lender, then authorizer), decided in it; the borrowers' rows they
    // move are locked first, in the order of their ids (enrollments' enrollmentsOfReads).
    recorded.sort((a, b) => (a.lenderId < b.lenderId ? -1 : a.lenderId > b.lenderId ? 1 : a.authorizerUniqueId < b.authorizerUniqueId ? -1 : a.authorizerUniqueId > b.authorizerUniqueId ? 1 : 0));
    await markRead(tx, [...readThrough], ctx.deps.clock.now());
    if (recorded.length > 0) await ctx.deps.balanceResults.afterResults(tx, recorded);
    await tx.deps.stores.balances.lockBatches(tx, [...added.keys()]);
    for (const [batchId, n] of added) {
      const b = await tx.deps.stores.balances.countProcessed(tx, batchId, n);
      if (b && b.completed) await completeBatch(tx, { id: b.id, lenderId: b.lenderId, source: b.source, scheduleId: b.scheduleId, webhookUrl: b.webhookUrl, completedAt: ctx.deps.clock.now() });
    }
  });
}

/** At most `limit` reads in flight per key (a lender and provider); the rest wait their turn in order. */
class Limiter {
  private readonly active = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  constructor(private readonly limit: () => number) {}
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if ((this.active.get(key) ?? 0) >= this.limit()) {
      await new Promise<void>((resolve) => {
        const q = this.waiting.get(key) ?? [];
        q.push(resolve);
        this.waiting.set(key, q);
      });
    } else {
      this.active.set(key, (this.active.get(key) ?? 0) + 1);
    }
    try {
      return await fn();
    } finally {
      const q = this.waiting.get(key);
      const next = q?.shift();
      if (q && q.length === 0) this.waiting.delete(key);
      // The slot passes straight to the next waiter; the count drops only when none waits.
      if (next) next();
      else {
        const n = (this.active.get(key) ?? 1) - 1;
        if (n <= 0) this.active.delete(key);
        else this.active.set(key, n);
      }
    }
  }
}


const limiters = new WeakMap<Db, Limiter>();
/** One limiter per database, shared by every tick: a lender's reads per provider stay within the limit. */
function limiterOf(deps: Deps): Limiter {
  let l = limiters.get(deps.db);
  if (!l) limiters.set(deps.db, (l = new Limiter(() => deps.config.bankLinkConcurrency)));
  return l;
}

/** Inside the transaction of the batch's last result: completed, its notification in the outbox, then what it sets off. */
async function completeBatch(ctx: JobContext & TxCtx, b: CompletedBatch): Promise<void> {
  await ctx.deps.stores.balances.completeBatch(ctx, b.id, b.completedAt);
  if (b.webhookUrl) {
    const event_uuid = crypto.randomUUID();
    await enqueueWebhook({
      ctx,
      input: {
        lenderId: b.lenderId,
        type: 'BALANCE_BATCH_COMPLETED',
        url: b.webhookUrl,
        payload: {
          event_uuid,
          type: 'BALANCE_BATCH_COMPLETED',
          batch_id: b.id,
          ...(b.scheduleId ? { schedule_id: b.scheduleId } : {}),
        },
      },
    });
  }
  await ctx.deps.balanceResults.afterBatchCompleted(ctx, b);
}

/**
 * One tick of the balance pipeline: reads every due item with at most `concurrency` reads in flight,
 * refilling the queue fairly as it drains, and records results in small transactions. Transient provider
 * failures are retried with backoff up to MAX_READ_ATTEMPTS, then recorded as RETRY_LIMIT.
 */
export async function processBalances(deps: Deps, opts: { concurrency?: number; signal?: AbortSignal } = {}): Promise<{ recorded: number }> {
  const concurrency = opts.concurrency ?? deps.config.balanceConcurrency;
  const { clock, metrics } = deps;
  const payloads = new PayloadCache(deps);
  const connections = new ConnectionCache(deps);
  const claimedAt = new WeakMap<ClaimedItem, number>();
  const gate = writeGate(deps);
  const atLeast = deps.stores.balances.readsPerClaim;
  const flushRows = Math.max(FLUSH_ROWS, atLeast);
  let pending: Outcome[] = [];
  let lastFlush = performance.now();
  let recorded = 0;

  // Items being read or whose outcome is not written yet: a second claim of one (its lease lapsed while it
  // waited behind the lender's other reads) is left to the first, so the provider is not asked twice; the
  // first's outcome is then written under the second claim's token, the one that holds the row now.
  const inHand = new Map<number, ClaimedItem>();
  // Items this run claimed whose outcome is not written yet. Outcomes are written in order, one write after the
  // other; a write that fails is the run's error, raised at the next claim or at the end, and the items whose
  // outcomes it held, with those claimed and not read, are then given back (due again at once), rather than
  // left leased until their claims run out.
  const unwritten = new Map<number, ClaimedItem>();
  const writes = writesInOrder();
  const flush = (): Promise<void> => {
    const batch = pending;
    pending = [];
    lastFlush = performance.now();
    if (batch.length > 0) {
      writes.add(
        // On a turn of its own when the slice that gathered it has used its time: the results' transaction
        // and its commit are not added to the reads that came before them.
        async () => {
          await yieldWhenSpent();
          await recordOutcomes({ deps }, batch);
          for (const o of batch) if (unwritten.get(o.item.id) === o.item) unwritten.delete(o.item.id);
        },
        () => {
          for (const o of batch) inHand.delete(o.item.id);
        },
      );
    }
    return writes.settled();
  };
  const push = (o: Outcome) => {
    pending.push(o);
    if (o.kind === 'result') {
      recorded++;
      metrics.balanceReads.inc({ status: o.exportStatus });
    }
    // Not while a worker holds the write lock: the results wait for the next claim, which waits its turn.
    if (!gate.held && (pending.length >= flushRows || performance.now() - lastFlush >= FLUSH_INTERVAL_MS)) void flush().catch(() => undefined);
  };

  const readOne = async (item: ClaimedItem) => {
    const held = inHand.get(item.id);
    if (held) {
      held.leaseToken = item.leaseToken;
      return;
    }
    inHand.set(item.id, item);
    push(await readItem(deps, item, { payloads, connections, claimedAt }));
  };

  await drainClaims({
    concurrency,
    signal: opts.signal,
    // Results are written before claiming more, so no claimed item is ever shown as still due.
    claim: async () => {
      await flush();
      await startPendingBatches(deps);
      const now = clock.now();
      const items = await deps.stores.balances.claimDueReads({ deps }, Math.max(concurrency * 4, atLeast), now);
      for (const it of items) {
        claimedAt.set(it, now);
        // A second claim of an item in hand: the first's outcome is written under this claim's token.
        unwritten.set(it.id, inHand.get(it.id) ?? it);
      }
      return items;
    },
    handle: readOne,
    finish: flush,
    gate,
  }).catch(async (e) => {
    // Not while the database is out of reach: it could not take it, and once it answers again the start's
    // release (releaseStaleClaims) lets go of every lease this replica holds.
    if (!isDatabaseUnavailable(e)) await giveBack(deps, [...unwritten.values()]);
    throw e;
  });
  return { recorded };
}

/**
 * The reads a run claimed and could not record (a write failed) let go, each only while its
 * claim holds it: due again at once, for this replica's next run or another's. Best effort: when the database
 * cannot take it either, the leases run out as they would have.
 */
async function giveBack(deps: Deps, items: ClaimedItem[]): Promise<void> {
  if (items.length === 0) return;
  try {
    await transaction({ deps }, (c) => deps.stores.balances.finishReads(c, items.map((i) => ({ id: i.id, leaseToken: i.leaseToken, finish: { state: 'pending' } }))));
  } catch (e) {
    deps.logger.warn({ reads: items.length, err: e instanceof Error ? e.name : 'error' }, 'claimed balance reads could not be given back; they are read again when their leases run out');
  }
}

/** What a read shares with the run that claimed its item. */
interface ReadRun {
  payloads: PayloadCache;
  connections: ConnectionCache;
  claimedAt: WeakMap<ClaimedItem, number>;
}

type ResultOutcome = Extract<Outcome, { kind: 'result' }>;
type LinkedFields = NonNullable<ResultOutcome['linked']>;
type Cause = 'provider' | 'retry_limit' | 'internal';
type ResultOf = (cents: number | null, code: number, cause?: Cause, at?: number, linked?: LinkedFields) => Outcome;

/**
 * One claimed item read: its balance (or the provider's status code) as a result to record, or a retry. Its
 * source is its linked account when it has one (Plaid, Stripe), else the configured bank-data source. Every
 * failure to read goes through one rule (transient, waitOn).
 */
async function readItem(deps: Deps, item: ClaimedItem, run: ReadRun): Promise<Outcome> {
  const { clock, routing, logger } = deps;
  const institution = item.routingNumber ? (routing.lookup(item.routingNumber)?.name ?? null) : null;
  const result: ResultOf = (cents, code, cause = 'provider', at = clock.now(), linked) => ({
    kind: 'result',
    item,
    cents,
    code,
    exportStatus: exportStatusFor(code, cause),
    institution: linked?.institution ?? institution,
    at,
    ...(linked ? { linked } : {}),
  });
  let sensitive: SensitiveFields;
  try {
    sensitive = (await run.payloads.get(item.batchId))[item.seq]!;
  } catch (e) {
    logger.error({ batch_id: item.batchId, err: e }, 'balance read failed');
    return result(null, 9000, 'internal');
  }
  if (sensitive.bankLink) return readLinkedItem(deps, item, sensitive.bankLink, run, result);
  let read: BalanceReadResult;
  try {
    read = await withCallScope({ lenderId: item.lenderId, attempt: item.attempts + 1 }, () => deps.bank.read(readRequest(item, sensitive)));
  } catch (e) {
    if (e instanceof TransientProviderError) return transient(deps, item, result);
    logger.error({ batch_id: item.batchId, err: e }, 'balance read failed');
    return result(null, 9000, 'internal');
  }
  // The sandbox's and the HTTP bridge's balances are checked as the linked sources' are.
  const why = read.kind === 'balance' ? implausible(read.balanceCents, null, clock.now()) : null;
  if (why !== null) {
    logger.warn({ batch_id: item.batchId, reason: why }, 'balance source answered an implausible balance');
    return result(null, 9000, 'provider', clock.now(), { balanceKind: null, asOf: null, detail: why, connectionId: null, note: null });
  }
  if (read.kind !== 'balance') return result(null, read.statusCode);
  const r = result(read.balanceCents, 0);
  return read.change && r.kind === 'result' ? { ...r, change: read.change } : r;
}

/**
 * The retry rule: a transient failure (an outage, a timeout, a 5xx) is tried again with exponential backoff
 * until the item's attempts run out, then recorded 9000 RETRY_LIMIT.
 */
function transient(deps: Deps, item: ClaimedItem, result: ResultOf): Outcome {
  const attempts = item.attempts + 1;
  if (attempts >= MAX_READ_ATTEMPTS) return result(null, 9000, 'retry_limit');
  return { kind: 'retry', item, nextAt: deps.clock.now() + RETRY_BASE_MS * 2 ** (attempts - 1) };
}

/**
 * A wait the provider asks for (a documented rate limit, a balance refresh still pending): asked again at
 * `nextAt`, its attempts untouched, while the item's wait lasts (REFRESH_WAIT_MS); past it, a transient failure.
 */
function waitOn(deps: Deps, item: ClaimedItem, nextAt: (now: number, since: number) => number, result: ResultOf): Outcome {
  const now = deps.clock.now();
  const since = item.waitingSince ?? now;
  if (now - since >= REFRESH_WAIT_MS * deps.config.providerTimeScale) return transient(deps, item, result);
  return { kind: 'retry', item, nextAt: nextAt(now, since), waitingSince: since };
}

/** An item read through its linked account, with what the provider says of the link's health. */
async function readLinkedItem(deps: Deps, item: ClaimedItem, link: BankLink, run: ReadRun, result: ResultOf): Promise<Outcome> {
  const { clock, logger } = deps;
  const known = await healthOfLink({ deps }, item.lenderId, link);
  if (known && BLOCKING_HEALTHS.has(known.health)) {
    // An open episode: the link is probed (link-health.ts), not read, until the provider says it is well
    // again. A row from before links were kept for probing gets this one.
    const note = known.linkSealed === null ? { link, probe: { health: known.health, expiresAt: known.expiresAt } } : null;
    return result(null, known.health === 'closed' ? 3200 : 9000, 'provider', clock.now(), {
      balanceKind: null,
      asOf: null,
      detail: detailOfHealth(known.health),
      connectionId: null,
      note,
      linkHealth: known.health,
    });
  }
  const conn = await run.connections.get(item.lenderId, link.provider);
  if (!conn) return result(null, 9000, 'provider', clock.now(), { balanceKind: null, asOf: null, detail: 'connection_missing', connectionId: null, note: null });
  let r: ItemRead;
  try {
    // One call per account and window: another item's answer for the same account is taken when there is one.
    r = await linkReadsOf(deps).read(linkReadKey(deps.vault, item.lenderId, conn.id, link), {
      now: () => clock.now(),
      windowMs: deps.config.bankLinkMinReadIntervalMs,
      self: { batchId: item.batchId, aid: item.authorizerUniqueId },
      read: () =>
        limiterOf(deps).run<LinkedReadResult | 'given_back'>(`${item.lenderId}\n${link.provider}`, () =>
          // Waited so long behind the lender's other reads that its claim may lapse: given back to the queue
          // unread, rather than read while another claim of it may be reading it too.
          clock.now() - (run.claimedAt.get(item) ?? clock.now()) > ITEM_LEASE_MS / 2
            ? Promise.resolve('given_back' as const)
            : // Its calls counted as the lender's, through this connection (the usage route, /metrics).
              withCallScope({ lenderId: item.lenderId, connectionId: conn.id, attempt: item.attempts + 1 }, () => readLinked(deps, conn.creds, link, clock.now(), item.waitingSince)),
        ),
    });
  } catch (e) {
    if (e instanceof TransientProviderError) {
      // A documented rate limit: asked again when the provider allows, within the item's wait.
      if (e.rateLimited) return waitOn(deps, item, (now, since) => now + (e.retryAfterMs ?? rateLimitBackoffMs(now - since, deps.config.providerTimeScale)), result);
      return transient(deps, item, result);
    }
    logger.error({ batch_id: item.batchId, provider: link.provider, err: e instanceof Error ? e.name : 'error' }, 'linked balance read failed');
    return result(null, 9000, 'internal', clock.now(), { balanceKind: null, asOf: null, detail: null, connectionId: conn.id, note: null });
  }
  if (r.kind === 'given_back') return { kind: 'retry', item, nextAt: clock.now(), waitingSince: item.waitingSince };
  if (r.kind === 'pending') return waitOn(deps, item, (now) => Math.max(r.retryAt, now), result);
  const a = r.answer;
  if (r.kind === 'reused') {
    // Another item's answer: not a read through the connection, and a relink is told by the item that read it.
    const detail = reusedDetail(a.kind === 'failed' ? a.detail : null, r.from);
    if (a.kind === 'balance') return result(a.balanceCents, 0, 'provider', clock.now(), { balanceKind: a.balanceKind, asOf: a.asOf, detail, connectionId: null, note: null, linkHealth: blockingOf(a.health?.health), institution: a.institution });
    return result(null, a.statusCode, 'provider', clock.now(), { balanceKind: null, asOf: null, detail, connectionId: null, note: null, linkHealth: blockingOf(healthOfDetail(a.detail)) });
  }
  // Recorded at the time its answer is remembered under: the time the reuses of it name.
  if (a.kind === 'balance') {
    // What Stripe says of the link beside the balance (expiring, not transactable, or well again) is recorded
    // when it differs from what is known.
    const said = a.health ?? null;
    const note = said && said.health !== (known?.health ?? 'ok') ? { link, probe: said } : null;
    const plaidItem = a.itemId ? { link, itemId: a.itemId } : undefined;
    return result(a.balanceCents, 0, 'provider', r.from.at, { balanceKind: a.balanceKind, asOf: a.asOf, detail: null, connectionId: conn.id, note, linkHealth: blockingOf(said?.health), item: plaidItem, institution: a.institution });
  }
  const told = healthOfDetail(a.detail);
  const note = told ? { link, probe: { health: told, expiresAt: null } } : null;
  return result(null, a.statusCode, 'provider', r.from.at, { balanceKind: null, asOf: null, detail: a.detail, connectionId: conn.id, note, linkHealth: blockingOf(told) });
}

/**
 * Every replica: balance reads are claimed row by row (SKIP LOCKED), each by one claimer. Its claims and
 * flushes commit without a sync of their own (platform/wal-sync.ts): what they set off outside the process (a
 * payment sent, a webhook) goes through a transaction of its own whose COMMIT syncs them too. A power cut may
 * undo the last of them; their reads are then made again.
 */
export const balanceProcessingJob: Job<Deps> = {
  name: BALANCE_PROCESSING_JOB,
  intervalMs: 250,
  tick: (deps, signal) => commitsSyncedLater(() => processBalances(deps, { signal })),
};

/** Idempotency entries dropped per transaction: each holds a whole answer, so a slice is bounded in rows. */
const EXPIRED_PER_SLICE = 500;

/**
 * Drops idempotency entries past their 24 hours, a slice at a time off their creation index, yielding
 * between slices: an hour's worth of answers can be many thousands of rows.
 */
export async function dropExpiredIdempotency(deps: Deps, signal?: AbortSignal): Promise<{ dropped: number }> {
  const before = deps.clock.now() - IDEMPOTENCY_TTL_MS;
  let dropped = 0;
  for (;;) {
    const n = await transaction({ deps }, (tx) => tx.deps.stores.balances.dropExpiredIdempotency(tx, before, EXPIRED_PER_SLICE));
    dropped += n;
    if (n < EXPIRED_PER_SLICE || signal?.aborted) return { dropped };
    await betweenSlices(deps);
  }
}

/**
 * Every replica: each slice deletes the expired entries it locks (SKIP LOCKED), so two replicas delete
 * different entries and each entry once.
 */
export const idempotencyCleanupJob: Job<Deps> = {
  name: 'idempotency-cleanup',
  intervalMs: 3_600_000,
  tick: (deps, signal) => dropExpiredIdempotency(deps, signal),
};

/** The health a read reports when it forbids a debit (what the collection decision blocks on), else null. */
function blockingOf(h: LinkHealth | null | undefined): LinkHealth | null {
  return h === 'revoked' || h === 'closed' || h === 'not_transactable' ? h : null;
}
