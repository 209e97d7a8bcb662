import { transaction, writeGate } from '../../platform/context';
import { replicaPrefix } from '../../platform/lease-token';
import type { Deps } from '../../deps';
import type { Job } from '../../platform/jobs';
import { drainClaims, writesInOrder } from '../../platform/work-pool';
import { sendWebhook, type DeliveryOutcome } from '../../adapters/webhooks/sender';
import { signatureHeaders } from '../../adapters/webhooks/signing';
import { ensureSecret, signingSecrets } from './service';
import { type AttemptRecord, type DueRow } from './store';

export const WEBHOOK_CONCURRENCY = 16;
/** Longer than a send can take (10 s timeout), so a live sender never loses its claim. */
export const DELIVERY_LEASE_MS = 30_000;
const FLUSH_EVERY = 32;


interface AttemptResult {
  row: DueRow;
  attemptedAt: number;
  /** 'not_sent': the run stopped before this claimed delivery's request left. */
  outcome: DeliveryOutcome | 'not_sent';
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  retryAfterMs: number | null;
}

/** Exponential backoff with ±20% jitter: each gap is still longer than the one before it. */
export function backoffMs(base: number, attempt: number, random = Math.random): number {
  return Math.round(base * 2 ** (attempt - 1) * (0.8 + 0.4 * random()));
}

/**
 * At start, the attempts a stopped process left open are marked as cut short, and what it held is released:
 * on SQLite all of it (one process serves the file), on PostgreSQL what this replica held before a restart under
 * the same REPLICA_ID; another replica's claims are taken over when their leases run out.
 */
export function releaseDeliveryLeases(deps: Pick<Deps, 'db' | 'reader' | 'pg' | 'engine' | 'clock' | 'stores'>): Promise<number> {
  return transaction({ deps }, (tx) => tx.deps.stores.webhooks.releaseDeliveryLeases(tx, replicaPrefix(), deps.clock.now()));
}

/**
 * Sends every due delivery, at most `concurrency` at once, and records each attempt. Claims are leases in
 * SQLite, so a delivery claimed by a process that died is sent again (same webhook-id) once its lease
 * has passed.
 */
export async function deliverDueWebhooks(deps: Deps, opts: { concurrency?: number; signal?: AbortSignal } = {}): Promise<{ attempted: number }> {
  const concurrency = opts.concurrency ?? WEBHOOK_CONCURRENCY;
  const { clock, config } = deps;

  const results: AttemptResult[] = [];
  const secretsByLender = new Map<string, string[]>();
  // Each delivery at most once per run. A claim can lapse while the run is busy elsewhere, so what is in
  // flight is excluded by id; so is what this run recorded as due again already (Retry-After: 0). Both
  // sets stay small, whatever the length of the run.
  const inFlight = new Set<string>();
  const dueAgain = new Set<string>();
  let attempted = 0;

  const claim = async (): Promise<DueRow[]> => {
    // Record what has been sent before claiming more, so the database never shows it as still due.
    await flush();
    // Due deliveries oldest first, leaving out those this run already holds or has recorded as due again.
    const now = clock.now();
    const due = await transaction({ deps }, (tx) => tx.deps.stores.webhooks.claimDueDeliveries(tx, concurrency * 4, now, DELIVERY_LEASE_MS, [...inFlight, ...dueAgain]));
    for (const r of due) inFlight.add(r.id);
    return due;
  };

  // Attempts are written in order, one write after the other; a write that fails is the run's error, raised
  // at the next claim or at the end.
  const writes = writesInOrder();
  const flush = (): Promise<void> => {
    const batch = results.splice(0, results.length);
    if (batch.length > 0) writes.add(() => write(batch));
    return writes.settled();
  };
  const write = (batch: AttemptResult[]) =>
    transaction({ deps }, async (tx) => {
      const records: AttemptRecord[] = [];
      for (const r of batch) {
        inFlight.delete(r.row.id);
        if (r.outcome === 'not_sent') {
          // Claimed, never sent: no attempt happened; the delivery is released as it was.
          records.push({ id: r.row.id, leaseToken: r.row.leaseToken, attemptId: r.row.attemptId, sent: false });
          continue;
        }
        const attempts = r.row.attempts + 1;
        const firstAt = r.row.firstAttemptAt ?? r.attemptedAt;
        const deadline = firstAt + config.webhookMaxAgeMs;
        let state: 'pending' | 'delivered' | 'failed' = 'pending';
        let next: number | null = null;
        if (r.outcome === 'delivered') state = 'delivered';
        // 410, and a target the SSRF guard refuses (or no longer a valid URL): no later attempt would do better.
        else if (r.outcome === 'gone' || r.outcome === 'blocked') state = 'failed';
        else {
          // Cut short by the service stopping: due again at once, no backoff (the receiver did nothing wrong).
          const wait = r.outcome === 'interrupted' ? 0 : (r.retryAfterMs ?? backoffMs(config.webhookRetryBaseMs, attempts));
          next = r.attemptedAt + wait;
          if (next > deadline) {
            state = 'failed';
            next = null;
          }
        }
        if (next !== null && next <= clock.now() && r.outcome !== 'interrupted') dueAgain.add(r.row.id);
        records.push({
          id: r.row.id,
          leaseToken: r.row.leaseToken,
          attemptId: r.row.attemptId,
          sent: true,
          attempt: { at: r.attemptedAt, statusCode: r.statusCode, error: r.error, durationMs: Math.round(r.durationMs) },
          state,
          attempts,
          nextAttemptAt: next,
          firstAttemptAt: firstAt,
          finishedAt: state === 'pending' ? null : clock.now(),
        });
      }
      await tx.deps.stores.webhooks.recordAttempts(tx, records);
      for (const r of batch) if (r.outcome !== 'not_sent') deps.metrics.webhookAttempts.inc({ outcome: r.outcome });
      for (const r of records) if (r.sent && r.state !== 'pending') deps.metrics.webhookFinal.inc({ state: r.state });
    });

  const attempt = async (row: DueRow): Promise<void> => {
    let secrets = secretsByLender.get(row.lenderId);
    if (!secrets) {
      await ensureSecret({ deps }, row.lenderId);
      secrets = await signingSecrets(deps, row.lenderId, clock.now());
      secretsByLender.set(row.lenderId, secrets);
    }
    // The signature's timestamp is wall time: receivers check it against their own clocks.
    // The sender adds content-type and user-agent.
    const headers = signatureHeaders(secrets, row.id, Math.floor(Date.now() / 1000), row.payload);
    const attemptedAt = clock.now();
    if (opts.signal?.aborted) {
      results.push({ row, attemptedAt, outcome: 'not_sent', statusCode: null, error: null, durationMs: 0, retryAfterMs: null });
      return;
    }
    const res = await sendWebhook({
      url: row.targetUrl,
      headers,
      body: row.payload,
      allowPrivate: config.webhookAllowPrivateTargets,
      timeoutMs: config.webhookTimeoutMs,
      // At shutdown the request is cut, so stopping never waits for a slow receiver.
      signal: opts.signal,
    });
    attempted++;
    results.push({ row, attemptedAt, ...res });
    // Not while a worker holds the write lock: the next claim writes them, in its turn.
    if (results.length >= FLUSH_EVERY && !writeGate(deps).held) void flush().catch(() => undefined);
  };

  await drainClaims({ concurrency, signal: opts.signal, claim, handle: attempt, finish: flush, gate: writeGate(deps) });
  return { attempted };
}

/** Every replica: due deliveries are claimed row by row (SKIP LOCKED), each by one claimer. */
export const webhookDeliveryJob: Job<Deps> = {
  name: 'webhook-delivery',
  intervalMs: 250,
  tick: (deps, signal) => deliverDueWebhooks(deps, { signal }),
};
