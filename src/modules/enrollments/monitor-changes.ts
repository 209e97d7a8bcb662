import type { HeldReason, MonitorState } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';
import { nextMonitor, type MonitorChange, type MonitorEvent, type MonitorFrom } from './monitor';
import { pushToEndpoints } from '../webhooks/endpoints';
import { MONITOR_WINDOW_MS, type BorrowerWrite, type CurrentMonitor, type StoredMonitor } from './monitor-store';

// The only code that moves a monitor's state, reason and blocked reason, and it moves them only as the state
// machine (monitor.ts) says, through the monitor store. Every write takes the open transaction: a monitor
// changes in the transaction of the request, read or outcome that moves it.

type EventOf = { enrollmentId: string; event: MonitorEvent | { type: 'late_returned'; code: string | null }; now: number; readIntervalMs: number };

/** The event as the machine takes it: a `late_returned` is given its `inWindow` from the stored window. */
const eventFor = (cur: CurrentMonitor, v: EventOf): MonitorEvent =>
  v.event.type === 'late_returned' ? { type: 'late_returned', code: v.event.code, inWindow: cur.windowEndsAt !== null && v.now < cur.windowEndsAt } : (v.event as MonitorEvent);

/** The lender is told when collection stops or waits on it: the ENROLLMENT_BLOCKED event, or null. */
function blockedNotice(cur: CurrentMonitor, change: MonitorChange) {
  const stopped = change.state === 'stopped' && cur.state !== 'stopped';
  const blocked = change.blockedReason !== null && change.blockedReason !== cur.blockedReason;
  if (!stopped && !blocked) return null;
  return { authorizer_unique_id: cur.aid, state: change.state, reason: change.reason, blocked_reason: change.blockedReason };
}

/**
 * Moves one monitor on an event, in the caller's transaction. `late_returned` events are given their
 * `inWindow` here, from the stored window. Returns the change written, or null when the event moved nothing.
 */
export async function applyMonitorEvent(c: TxCtx, v: EventOf): Promise<MonitorChange | null> {
  const cur = await c.deps.stores.monitors.currentMonitor(c, v.enrollmentId);
  if (!cur) return null;
  const change = nextMonitor(cur, eventFor(cur, v));
  if (!change) return null;
  await c.deps.stores.monitors.writeMonitorChange(c, { enrollmentId: v.enrollmentId, change, now: v.now, windowMs: MONITOR_WINDOW_MS, readIntervalMs: v.readIntervalMs });
  const notice = blockedNotice(cur, change);
  if (notice) await pushToEndpoints(c, v.now, cur.lenderId, 'ENROLLMENT_BLOCKED', notice);
  return change;
}

/** A monitor's state, or null when there is no such enrollment. */
export async function monitorStateOf(c: StoreCtx, enrollmentId: string): Promise<MonitorState | null> {
  return (await c.deps.stores.monitors.currentMonitor(c, enrollmentId))?.state ?? null;
}

/**
 * The enrollment of borrowers (new or re-sent): the state machine decides each monitor from its prior record
 * and whether its bank is readable, and the borrowers are inserted or refreshed with them, in one batch.
 * Returns each borrower's change, in order.
 */
export async function enrollBorrowers(c: TxCtx, borrowers: readonly { write: BorrowerWrite; prior: StoredMonitor | undefined; held: HeldReason | null }[]): Promise<MonitorChange[]> {
  const rows = borrowers.map(({ write, prior, held }) => {
    const from: MonitorFrom = prior?.state ?? 'new';
    const change = nextMonitor({ state: from, reason: prior?.reason ?? null, blockedReason: prior?.blockedReason ?? null }, { type: 'enrolled', held })!;
    return { write, prior, change };
  });
  await c.deps.stores.monitors.writeEnrollments(c, rows, MONITOR_WINDOW_MS);
  return rows.map((r) => r.change);
}
