import type { Deps } from '../../platform/deps';
import type { Job } from '../../platform/jobs';
import { immediate } from '../../platform/db';
import { iso } from '../../platform/clock';
import { enqueueWebhook, MAX_PAYLOAD_BYTES } from '../webhooks/service';
import { insertBatch } from '../balance-requests/service';
import type { NormalizedAuthorizer, SensitiveFields } from '../balance-requests/validation';
import { nextRunAfter } from './times';
import { SELECT_SCHEDULE, type ScheduleRow } from './service';

/** Runs started per call: each is a synchronous transaction, so the job yields between groups. */
const DUE_LIMIT = 10;

/**
 * The scheduler's due check. It reads the (status, next_run_at) index only, so its cost does not grow
 * with the number of schedules that are not due. Each due schedule starts one run: a batch of its current
 * authorizers, and next_run_at moved to the first slot after now, in one transaction (a restart can neither
 * lose nor repeat a run). A run missed while the service was down therefore runs once, then the schedule
 * continues at its next future slot.
 */
export function startDueRuns(deps: Deps): { started: number; due: number } {
  const { sqlite, clock } = deps;
  const now = clock.now();
  const due = sqlite
    .query<{ id: string }, [number, number]>(
      "SELECT id FROM schedules WHERE status = 'ACTIVE' AND next_run_at <= ? ORDER BY next_run_at LIMIT ?",
    )
    .all(now, DUE_LIMIT);
  let started = 0;
  for (const { id } of due) {
    if (startRun(deps, id, now)) started++;
  }
  return { started, due: due.length };
}

/** Starts every due run, DUE_LIMIT at a time, letting requests through in between. */
export async function startAllDueRuns(deps: Deps, signal?: AbortSignal): Promise<{ started: number }> {
  let started = 0;
  for (;;) {
    const r = startDueRuns(deps);
    started += r.started;
    if (r.due < DUE_LIMIT || signal?.aborted) return { started };
    await Bun.sleep(0);
  }
}

function startRun(deps: Deps, scheduleId: string, now: number): boolean {
  const { sqlite, vault } = deps;
  return immediate(sqlite, () => {
    const s = sqlite
      .query<ScheduleRow, [string, number]>(`${SELECT_SCHEDULE} WHERE id = ? AND status = 'ACTIVE' AND next_run_at <= ?`)
      .get(scheduleId, now);
    if (!s) return false;
    const rows = sqlite
      .query<
        {
          aid: string;
          paymentType: 'ACCOUNT_NUMBER' | 'DEBIT_CARD';
          routingNumber: string | null;
          phone: string | null;
          zip: string | null;
          metadata: string | null;
          thresholdCents: number | null;
          sealed: string;
        },
        [string]
      >(
        `SELECT authorizer_unique_id AS aid, payment_type AS paymentType, routing_number AS routingNumber, phone, zip, metadata,
                threshold_cents AS thresholdCents, sealed FROM schedule_authorizers WHERE schedule_id = ? ORDER BY id`,
      )
      .all(s.id);
    const next = nextRunAfter(s, now);
    if (rows.length > 0) {
      const authorizers: NormalizedAuthorizer[] = rows.map((r, i) => ({
        authorizerUniqueId: r.aid,
        paymentType: r.paymentType,
        routingNumber: r.routingNumber,
        phone: r.phone,
        zip: r.zip,
        metadata: r.metadata ? JSON.parse(r.metadata) : null,
        // The authorizer's own threshold overrides the schedule's.
        thresholdCents: r.thresholdCents ?? s.thresholdCents,
        sensitive: vault.openJson<SensitiveFields>(r.sealed),
        rowNumber: i + 1,
      }));
      insertBatch(deps, { lenderId: s.lenderId, source: 'schedule', scheduleId: s.id, webhookUrl: s.webhook, authorizers, now });
    }
    sqlite
      .query('UPDATE schedules SET next_run_at = ?, status = ?, updated_at = ? WHERE id = ?')
      .run(next, next === null ? 'COMPLETED' : 'ACTIVE', now, s.id);
    return rows.length > 0;
  });
}

/** Alerts that fit one delivery: the alert list is split when a run has very many. */
function chunkAlerts<T>(alerts: T[], base: Record<string, unknown>): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = JSON.stringify(base).length + 64;
  for (const a of alerts) {
    const len = JSON.stringify(a).length + 1;
    if (current.length > 0 && size + len > MAX_PAYLOAD_BYTES - 512) {
      chunks.push(current);
      current = [];
      size = JSON.stringify(base).length + 64;
    }
    current.push(a);
    size += len;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Called in the transaction that completes a schedule run's batch: last_run_at, and one
 * BALANCE_THRESHOLD_ALERT listing every authorizer whose balance meets or exceeds its threshold.
 */
export function onScheduleBatchCompleted(
  deps: Deps,
  run: { batchId: string; scheduleId: string; lenderId: string; now: number },
): void {
  const { sqlite } = deps;
  sqlite.query('UPDATE schedules SET last_run_at = ? WHERE id = ?').run(run.now, run.scheduleId);
  const webhook = sqlite.query<{ webhook: string | null }, [string]>('SELECT webhook FROM schedules WHERE id = ?').get(run.scheduleId)?.webhook;
  if (!webhook) return;
  const hits = sqlite
    .query<{ aid: string; institution: string | null; cents: number; threshold: number }, [string]>(
      `SELECT r.authorizer_unique_id AS aid, r.institution, r.balance_cents AS cents, i.threshold_cents AS threshold
         FROM balance_results r JOIN batch_items i ON i.id = r.item_id
        WHERE r.batch_id = ? AND i.threshold_cents IS NOT NULL AND r.balance_cents IS NOT NULL AND r.balance_cents >= i.threshold_cents
        ORDER BY i.seq`,
    )
    .all(run.batchId);
  if (hits.length === 0) return;
  const alerts = hits.map((h) => ({
    authorizer_unique_id: h.aid,
    institution_name: h.institution,
    balance: h.cents / 100,
    threshold_amount: h.threshold / 100,
  }));
  const base = { event_uuid: '', type: 'BALANCE_THRESHOLD_ALERT', schedule_id: run.scheduleId, batch_id: run.batchId, timestamp: iso(run.now) };
  for (const chunk of chunkAlerts(alerts, base)) {
    enqueueWebhook(deps, {
      lenderId: run.lenderId,
      type: 'BALANCE_THRESHOLD_ALERT',
      url: webhook,
      payload: { ...base, event_uuid: crypto.randomUUID(), alerts: chunk },
    });
  }
}

export const scheduleJob: Job = {
  name: 'schedule-runs',
  intervalMs: 15_000,
  tick: (deps, signal) => startAllDueRuns(deps, signal),
};
