import type { Database } from 'bun:sqlite';
import { webhookDeliveries } from '../../../db/schema';
import type { Deps } from '../../deps';
import type { Job } from '../../platform/jobs';
import { immediate } from '../../platform/db';
import { LeaseQueue } from '../../platform/lease-queue';
import { drainClaims } from '../../platform/work-pool';
import { sendWebhook } from '../../adapters/webhooks/sender';
import { signatureHeaders } from '../../adapters/webhooks/signing';
import { signingSecrets } from './service';
import * as q from './queries';
import type { DueRow } from './queries';

export const WEBHOOK_CONCURRENCY = 16;
/** Longer than a send can take (10 s timeout), so a live sender never loses its claim. */
export const DELIVERY_LEASE_MS = 30_000;
const FLUSH_EVERY = 32;


interface AttemptResult {
  row: DueRow;
  attemptedAt: number;
  outcome: 'delivered' | 'retry' | 'gone' | 'blocked';
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
 * The delivery queue of a database: due deliveries oldest first, leaving out those this run already holds
 * or has recorded as due again (`exclude`, bound as a JSON array: it stays small whatever the run's length).
 */
function deliveryQueue(sqlite: Database, exclude: () => string) {
  return new LeaseQueue<typeof webhookDeliveries, DueRow>(sqlite, webhookDeliveries, {
    leaseMs: DELIVERY_LEASE_MS,
    pick: ({ want, now, due, lease }) => lease(q.dueDeliveries(sqlite, due, now, want, exclude())),
  });
}

/** At start no other process holds a claim on this file: release what a previous process left. */
export function releaseDeliveryLeases(deps: Pick<Deps, 'sqlite'>): number {
  return deliveryQueue(deps.sqlite, () => '[]').releaseAll();
}

/**
 * Sends every due delivery, at most `concurrency` at once, and records each attempt. Claims are leases in
 * SQLite, so a delivery claimed by a process that died is sent again (same webhook-id) once its lease
 * has passed.
 */
export async function deliverDueWebhooks(deps: Deps, opts: { concurrency?: number; signal?: AbortSignal } = {}): Promise<{ attempted: number }> {
  const concurrency = opts.concurrency ?? WEBHOOK_CONCURRENCY;
  const { sqlite, clock, config } = deps;

  const results: AttemptResult[] = [];
  const secretsByLender = new Map<string, string[]>();
  // Each delivery at most once per run. A claim can lapse while the run is busy elsewhere, so what is in
  // flight is excluded by id; so is what this run recorded as due again already (Retry-After: 0). Both
  // sets stay small, whatever the length of the run.
  const inFlight = new Set<string>();
  const dueAgain = new Set<string>();
  let attempted = 0;
  const queue = deliveryQueue(sqlite, () => JSON.stringify([...inFlight, ...dueAgain]));

  const claim = (): DueRow[] => {
    // Record what has been sent before claiming more, so the database never shows it as still due.
    flush();
    const due = queue.claim(concurrency * 4, clock.now());
    for (const r of due) inFlight.add(r.id);
    return due;
  };

  const flush = () => {
    if (results.length === 0) return;
    const batch = results.splice(0, results.length);
    immediate(sqlite, () => {
      for (const r of batch) {
        const attempts = r.row.attempts + 1;
        const firstAt = r.row.firstAttemptAt ?? r.attemptedAt;
        const deadline = firstAt + config.webhookMaxAgeMs;
        let state: 'pending' | 'delivered' | 'failed' = 'pending';
        let next: number | null = null;
        if (r.outcome === 'delivered') state = 'delivered';
        else if (r.outcome === 'gone') state = 'failed';
        else {
          next = r.attemptedAt + (r.retryAfterMs ?? backoffMs(config.webhookRetryBaseMs, attempts));
          if (next > deadline) {
            state = 'failed';
            next = null;
          }
        }
        inFlight.delete(r.row.id);
        if (next !== null && next <= clock.now()) dueAgain.add(r.row.id);
        q.insertAttempt(sqlite, { deliveryId: r.row.id, at: r.attemptedAt, statusCode: r.statusCode, error: r.error, durationMs: Math.round(r.durationMs) });
        queue.finalize(r.row.id, {
          state,
          attempts,
          nextAttemptAt: next,
          set: {
            lastAttemptAt: r.attemptedAt,
            firstAttemptAt: firstAt,
            lastStatusCode: r.statusCode,
            lastError: r.error,
            finishedAt: state === 'pending' ? null : clock.now(),
          },
        });
        deps.metrics.webhookAttempts.inc({ outcome: r.outcome });
        if (state !== 'pending') deps.metrics.webhookFinal.inc({ state });
      }
    });
  };

  const attempt = async (row: DueRow): Promise<void> => {
    let secrets = secretsByLender.get(row.lenderId);
    if (!secrets) {
      secrets = signingSecrets(deps, row.lenderId, clock.now());
      secretsByLender.set(row.lenderId, secrets);
    }
    // The signature's timestamp is wall time: receivers check it against their own clocks.
    // The sender adds content-type and user-agent.
    const headers = signatureHeaders(secrets, row.id, Math.floor(Date.now() / 1000), row.payload);
    const attemptedAt = clock.now();
    const res = await sendWebhook({
      url: row.targetUrl,
      headers,
      body: row.payload,
      allowPrivate: config.webhookAllowPrivateTargets,
      timeoutMs: config.webhookTimeoutMs,
    });
    attempted++;
    results.push({ row, attemptedAt, ...res });
    if (results.length >= FLUSH_EVERY) flush();
  };

  await drainClaims({ concurrency, signal: opts.signal, claim, handle: attempt, finish: flush });
  return { attempted };
}

export const webhookDeliveryJob: Job<Deps> = {
  name: 'webhook-delivery',
  intervalMs: 250,
  tick: (deps, signal) => deliverDueWebhooks(deps, { signal }),
};
