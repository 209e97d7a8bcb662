import type { HeldReason, MonitorState, Rail } from '../../../db/schema/enums';
import type { Tx } from '../../platform/context';
import { DAY_MS } from '../../platform/clock';
import type { StoreCtx, TxCtx } from '../../platform/store';
import { nextMonitor, type MonitorChange, type MonitorEvent, type MonitorFrom } from './monitor';
import { pushToEndpoints } from '../webhooks/endpoints';

// The only code that writes a monitor's state, reason and blocked reason, and it writes only what the state
// machine (monitor.ts) returns. Every write takes the open transaction: a monitor changes in the transaction
// of the request, read or outcome that moves it. Its SQL is the monitor store's (monitor-store.sqlite.ts,
// monitor-store.pg.ts); tests/architecture checks that no other file writes these columns.

export const MONITOR_WINDOW_MS = 30 * DAY_MS;

/** A monitor as an event finds it. */
export interface CurrentMonitor {
  state: MonitorState;
  reason: string | null;
  blockedReason: string | null;
  windowEndsAt: number | null;
  lenderId: string;
  aid: string;
}

/** The lender's existing records of these borrowers, by identifier. */
export interface StoredMonitor {
  id: string;
  aid: string;
  state: MonitorState;
  reason: string | null;
  blockedReason: string | null;
  windowStartedAt: number | null;
  windowEndsAt: number | null;
}

/** A borrower's details as an enrollment request stores them; the monitor's columns come from the machine. */
export interface BorrowerWrite {
  id: string;
  lenderId: string;
  aid: string;
  amount: number;
  daysPastDue: number;
  merchantRef: string | null;
  rail: Rail;
  routing: string;
  bankName: string | null;
  sealed: string;
  metadata: string | null;
  cardTokenSealed: string | null;
  cardLast4: string | null;
  cardBrand: string | null;
  cfpbCovered: boolean | null;
  authorizationAt: number | null;
  authorizationRef: string | null;
  now: number;
}

/** One borrower of an enrollment as the store writes it: its details, its prior record, its monitor's change. */
export interface BorrowerEnrollment {
  write: BorrowerWrite;
  prior: StoredMonitor | undefined;
  change: MonitorChange;
}

export interface MonitorStore {
  /**
   * A monitor as it stands, with its lender and borrower. Read inside a transaction, it is held until the
   * transaction ends (the row locked on PostgreSQL): it is read to be moved, and moved from what was read.
   */
  currentMonitor(c: StoreCtx, enrollmentId: string): Promise<CurrentMonitor | undefined>;
  /** Writes a change the state machine returned (its window, next read and payment count with it). */
  writeMonitorChange(c: TxCtx, v: { enrollmentId: string; change: MonitorChange; now: number; windowMs: number; readIntervalMs: number }): Promise<void>;
  /** The lender's records of these borrowers; read inside a transaction, held until it ends (as currentMonitor). */
  monitorsOf(c: StoreCtx, lenderId: string, aids: readonly string[]): Promise<StoredMonitor[]>;
  /** Borrowers inserted or refreshed with their monitors, one statement prepared for all of them. */
  writeEnrollments(c: TxCtx, rows: readonly BorrowerEnrollment[], windowMs: number): Promise<void>;
  /**
   * Monitored borrowers whose window has ended, off enrollments_lapse_due_idx (`limit` -1: all). Read inside a
   * transaction, they are claimed until it ends: a monitor another transaction holds is left for the next tick.
   */
  dueLapses(c: StoreCtx, now: number, limit: number): Promise<{ id: string }[]>;
}


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
