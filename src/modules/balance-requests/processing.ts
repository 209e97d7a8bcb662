import type { Deps } from '../../platform/deps';
import type { Job } from '../../platform/jobs';
import { immediate } from '../../platform/db';
import { drainClaims } from '../../platform/work-pool';
import { TransientProviderError, type BalanceReadRequest, type BalanceReadResult } from '../../adapters/bank-data/types';
import { enqueueWebhook } from '../webhooks/service';
import { onScheduleBatchCompleted } from '../schedules/runs';
import type { SensitiveFields } from './validation';
import { unpackItems, unpackSensitive } from './payload';
import { IDEMPOTENCY_TTL_MS } from './service';
import { exportStatusFor } from './status';

/** Claims outlive the slowest read (provider timeout and retries), so a live worker keeps its items. */
export const ITEM_LEASE_MS = 120_000;
export const MAX_READ_ATTEMPTS = 3;
export const RETRY_BASE_MS = 2_000;
const FLUSH_ROWS = 64;
const FLUSH_INTERVAL_MS = 100;
const PAYLOAD_CACHE_BATCHES = 128;
const MIN_BATCH_CHUNK = 16;

interface ClaimedItem {
  id: number;
  batchId: string;
  lenderId: string;
  seq: number;
  authorizerUniqueId: string;
  paymentType: 'ACCOUNT_NUMBER' | 'DEBIT_CARD';
  routingNumber: string | null;
  phone: string | null;
  zip: string | null;
  attempts: number;
}

type Outcome =
  | { kind: 'result'; item: ClaimedItem; cents: number | null; code: number; exportStatus: string; institution: string | null; at: number }
  | { kind: 'retry'; item: ClaimedItem; nextAt: number };

interface CompletedBatch {
  id: string;
  lenderId: string;
  source: string;
  scheduleId: string | null;
  webhookUrl: string | null;
}

/**
 * Claims due items fairly: first an equal share per lender with pending work, then an equal share per
 * batch within a lender, so one large batch never starves a small one.
 */
function claimItems(deps: Deps, want: number, turn: number): ClaimedItem[] {
  const { sqlite, clock } = deps;
  const now = clock.now();
  return immediate(sqlite, () => {
    const active = sqlite
      .query<{ id: string; lenderId: string; status: string }, []>(
        "SELECT id, lender_id AS lenderId, status FROM batches WHERE status IN ('pending', 'processing') ORDER BY submitted_at, id",
      )
      .all();
    if (active.length === 0) return [];
    for (const b of active) if (b.status === 'pending') startBatch(deps, b.id, b.lenderId);
    const byLender = new Map<string, string[]>();
    for (const b of active) {
      const list = byLender.get(b.lenderId) ?? [];
      list.push(b.id);
      byLender.set(b.lenderId, list);
    }
    const pick = sqlite.query<ClaimedItem, [string, number, number]>(
      `SELECT id, batch_id AS batchId, lender_id AS lenderId, seq, authorizer_unique_id AS authorizerUniqueId,
              payment_type AS paymentType, routing_number AS routingNumber, phone, zip, attempts
         FROM batch_items
        WHERE batch_id = ?1 AND state = 'pending' AND next_attempt_at <= ?2 AND lease_until <= ?2
        ORDER BY seq LIMIT ?3`,
    );
    const lease = sqlite.query<unknown, [number, number]>('UPDATE batch_items SET lease_until = ? WHERE id = ?');
    const claimed: ClaimedItem[] = [];
    // Two passes: the fair share first, then whatever is left over for batches that have more. `turn`
    // rotates where each pass starts, and a batch gives at least MIN_BATCH_CHUNK items at a time, so many
    // open batches are served in turn without each claim touching every one of them.
    const lenders = [...byLender.values()];
    for (let pass = 0; pass < 2 && claimed.length < want; pass++) {
      const perLender = Math.max(1, Math.ceil((want - claimed.length) / lenders.length));
      for (let li = 0; li < lenders.length && claimed.length < want; li++) {
        const batchIds = lenders[(li + turn) % lenders.length]!;
        let lenderBudget = perLender;
        const perBatch = Math.max(MIN_BATCH_CHUNK, Math.ceil(perLender / batchIds.length));
        for (let bi = 0; bi < batchIds.length && lenderBudget > 0 && claimed.length < want; bi++) {
          const batchId = batchIds[(bi + turn) % batchIds.length]!;
          const items = pick.all(batchId, now, Math.min(perBatch, lenderBudget, want - claimed.length));
          for (const it of items) {
            lease.run(now + ITEM_LEASE_MS, it.id);
            claimed.push(it);
          }
          lenderBudget -= items.length;
        }
      }
    }
    return claimed;
  });
}

/**
 * pending → processing: the batch's queue rows are created from its payload, in the claim's transaction,
 * so a batch is either untouched or fully queued.
 */
function startBatch(deps: Deps, batchId: string, lenderId: string): void {
  const { sqlite } = deps;
  const payload = sqlite.query<{ items: string }, [string]>('SELECT items FROM batch_payloads WHERE batch_id = ?').get(batchId);
  if (!payload) throw new Error(`payload of batch ${batchId} is missing`);
  const items = unpackItems(payload.items);
  const insert = sqlite.query<unknown, [string, string, number, string, string, string | null, string | null, string | null, string | null, number | null]>(
    `INSERT INTO batch_items (batch_id, lender_id, seq, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  for (let i = 0; i < items.length; i++) {
    const a = items[i]!;
    insert.run(batchId, lenderId, i, a.id, a.type, a.routing, a.phone, a.zip, a.meta ? JSON.stringify(a.meta) : null, a.threshold);
  }
  sqlite.query("UPDATE batches SET status = 'processing' WHERE id = ?").run(batchId);
}

/** The batch's sealed payload, opened once per batch and kept for the few batches being worked on. */
class PayloadCache {
  private readonly cache = new Map<string, SensitiveFields[]>();
  constructor(private readonly deps: Deps) {}
  get(batchId: string): SensitiveFields[] {
    let v = this.cache.get(batchId);
    if (v) {
      // Least recently used goes first: re-inserting moves this batch to the end.
      this.cache.delete(batchId);
      this.cache.set(batchId, v);
    } else {
      const row = this.deps.sqlite.query<{ sealed: string }, [string]>('SELECT sealed FROM batch_payloads WHERE batch_id = ?').get(batchId);
      if (!row) throw new Error(`payload of batch ${batchId} is missing`);
      v = unpackSensitive(this.deps.vault.open(row.sealed));
      if (this.cache.size >= PAYLOAD_CACHE_BATCHES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(batchId, v);
    }
    return v;
  }
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
 * Records outcomes in one transaction: results (one per item, enforced by a unique key), retries, batch
 * counters, and, with the last result of a batch, its completion and webhooks.
 */
function recordOutcomes(deps: Deps, outcomes: Outcome[]): void {
  if (outcomes.length === 0) return;
  const { sqlite } = deps;
  immediate(sqlite, () => {
    const insert = sqlite.query<unknown, [number, string, string, string, number | null, number, string, string | null, number]>(
      `INSERT OR IGNORE INTO balance_results (item_id, batch_id, lender_id, authorizer_unique_id, balance_cents, status_code, export_status, institution, recorded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const done = sqlite.query<unknown, [number]>("UPDATE batch_items SET state = 'done', lease_until = 0 WHERE id = ?");
    const retry = sqlite.query<unknown, [number, number, number]>(
      'UPDATE batch_items SET attempts = ?, next_attempt_at = ?, lease_until = 0 WHERE id = ?',
    );
    const added = new Map<string, number>();
    for (const o of outcomes) {
      if (o.kind === 'retry') {
        retry.run(o.item.attempts + 1, o.nextAt, o.item.id);
        continue;
      }
      const res = insert.run(o.item.id, o.item.batchId, o.item.lenderId, o.item.authorizerUniqueId, o.cents, o.code, o.exportStatus, o.institution, o.at);
      done.run(o.item.id);
      if (res.changes > 0) added.set(o.item.batchId, (added.get(o.item.batchId) ?? 0) + 1);
    }
    const bump = sqlite.query<CompletedBatch & { completed: number }, [number, string]>(
      `UPDATE batches SET total_processed = total_processed + ?1
        WHERE id = ?2
        RETURNING id, lender_id AS lenderId, source, schedule_id AS scheduleId, webhook_url AS webhookUrl,
                  (total_processed >= total_authorizers AND status != 'completed') AS completed`,
    );
    for (const [batchId, n] of added) {
      const b = bump.get(n, batchId);
      if (b && b.completed) completeBatch(deps, b);
    }
  });
}

/** Inside the transaction of the batch's last result: completed, and its notifications in the outbox. */
function completeBatch(deps: Deps, b: CompletedBatch): void {
  const now = deps.clock.now();
  deps.sqlite.query("UPDATE batches SET status = 'completed', completed_at = ? WHERE id = ?").run(now, b.id);
  if (b.webhookUrl) {
    const event_uuid = crypto.randomUUID();
    enqueueWebhook(deps, {
      lenderId: b.lenderId,
      type: 'BALANCE_BATCH_COMPLETED',
      url: b.webhookUrl,
      payload: {
        event_uuid,
        type: 'BALANCE_BATCH_COMPLETED',
        batch_id: b.id,
        ...(b.scheduleId ? { schedule_id: b.scheduleId } : {}),
      },
    });
  }
  if (b.source === 'schedule' && b.scheduleId) onScheduleBatchCompleted(deps, { batchId: b.id, scheduleId: b.scheduleId, lenderId: b.lenderId, now });
}

/**
 * One tick of the balance pipeline: reads every due item with at most `concurrency` reads in flight,
 * refilling the queue fairly as it drains, and records results in small transactions. Transient provider
 * failures are retried with backoff up to MAX_READ_ATTEMPTS, then recorded as RETRY_LIMIT.
 */
export async function processBalances(deps: Deps, opts: { concurrency?: number; signal?: AbortSignal } = {}): Promise<{ recorded: number }> {
  const concurrency = opts.concurrency ?? deps.config.balanceConcurrency;
  const { clock, bank, routing, logger, metrics } = deps;
  const payloads = new PayloadCache(deps);
  let pending: Outcome[] = [];
  let lastFlush = performance.now();
  let recorded = 0;
  let turn = 0;

  const flush = () => {
    const batch = pending;
    pending = [];
    lastFlush = performance.now();
    recordOutcomes(deps, batch);
  };
  const push = (o: Outcome) => {
    pending.push(o);
    if (o.kind === 'result') {
      recorded++;
      metrics.balanceReads.inc({ status: o.exportStatus });
    }
    if (pending.length >= FLUSH_ROWS || performance.now() - lastFlush >= FLUSH_INTERVAL_MS) flush();
  };

  const readOne = async (item: ClaimedItem) => {
    const institution = item.routingNumber ? (routing.lookup(item.routingNumber)?.name ?? null) : null;
    const result = (cents: number | null, code: number, cause: 'provider' | 'retry_limit' | 'internal' = 'provider'): Outcome => ({
      kind: 'result',
      item,
      cents,
      code,
      exportStatus: exportStatusFor(code, cause),
      institution,
      at: clock.now(),
    });
    let read: BalanceReadResult;
    try {
      read = await bank.read(readRequest(item, payloads.get(item.batchId)[item.seq]!));
    } catch (e) {
      if (e instanceof TransientProviderError) {
        const attempts = item.attempts + 1;
        if (attempts >= MAX_READ_ATTEMPTS) return push(result(null, 9000, 'retry_limit'));
        return push({ kind: 'retry', item, nextAt: clock.now() + RETRY_BASE_MS * 2 ** (attempts - 1) });
      }
      logger.error({ batch_id: item.batchId, err: e }, 'balance read failed');
      return push(result(null, 9000, 'internal'));
    }
    push(read.kind === 'balance' ? result(read.balanceCents, 0) : result(null, read.statusCode));
  };

  await drainClaims({
    concurrency,
    signal: opts.signal,
    // Results are written before claiming more, so no claimed item is ever shown as still due.
    claim: () => {
      flush();
      return claimItems(deps, concurrency * 4, turn++);
    },
    handle: readOne,
    finish: flush,
  });
  return { recorded };
}

/** At start no other process holds claims on this file: make what a stopped process held due again. */
export function releaseItemLeases(deps: Deps): void {
  deps.sqlite.query("UPDATE batch_items SET lease_until = 0 WHERE state = 'pending' AND lease_until > 0").run();
}

export const balanceProcessingJob: Job = {
  name: 'balance-processing',
  intervalMs: 250,
  tick: (deps, signal) => processBalances(deps, { signal }),
};

/** Drops idempotency entries past their 24 hours. */
export const idempotencyCleanupJob: Job = {
  name: 'idempotency-cleanup',
  intervalMs: 3_600_000,
  tick: (deps) => {
    deps.sqlite.query('DELETE FROM idempotency_keys WHERE created_at < ?').run(deps.clock.now() - IDEMPOTENCY_TTL_MS);
  },
};
