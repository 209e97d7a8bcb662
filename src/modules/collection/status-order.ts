import type { EventStatus, PaymentStatus } from '../../../db/schema/enums';

// The one order a payment's recorded status moves along (payments.md, section 5). Sources disagree in time,
// not in truth: a change feed delivers an older status after a look-up found a newer one, a re-read repeats
// what was recorded, an upload arrives days later. Whatever the order of arrival, a status is recorded only
// when it is ahead of the one recorded; anything else is history the service already has.
//
//   scheduled → initiating → processing → settled → late_returned | refunded
//                   │             └──────→ returned | invalid | voided
//                   └→ not_attempted (only on the processor's word)
//
// A status may skip the steps the service did not see (initiating → settled after a lost answer). Final
// statuses never change, except that money that went back can come back (a dispute won, a refund that
// failed): late_returned or refunded → settled again, only when the processor says so (`reinstated`).

const FINAL: readonly EventStatus[] = [];
const AFTER_SETTLED: readonly EventStatus[] = ['late_returned', 'refunded'];
const AFTER_PROCESSING: readonly EventStatus[] = ['settled', 'returned', 'invalid', 'voided', ...AFTER_SETTLED];

/** The statuses each recorded status may move to. */
const AHEAD: Record<PaymentStatus, readonly EventStatus[]> = {
  scheduled: ['voided', 'processing', 'settled', 'returned', 'invalid', 'late_returned', 'refunded', 'not_attempted'],
  initiating: ['not_attempted', 'processing', ...AFTER_PROCESSING],
  processing: AFTER_PROCESSING,
  settled: AFTER_SETTLED,
  late_returned: FINAL,
  refunded: FINAL,
  returned: FINAL,
  invalid: FINAL,
  voided: FINAL,
  not_attempted: FINAL,
};

/** The statuses from which the processor can put money back (a `reinstated` settled). */
const REINSTATABLE: readonly PaymentStatus[] = ['late_returned', 'refunded'];

/**
 * The status an observation stands for, given what is recorded: a return of a payment recorded settled is
 * its late return (the money had been counted as collected), whichever word the source used.
 */
export function asObserved(current: PaymentStatus | null, observed: EventStatus): EventStatus {
  return current === 'settled' && observed === 'returned' ? 'late_returned' : observed;
}

/**
 * Whether recording `next` moves a payment (or an outside reference) forward from `current` (null: nothing
 * recorded yet, so any status is news).
 */
export function isAhead(current: PaymentStatus | null, next: EventStatus, reinstated = false): boolean {
  if (current === null) return true;
  if (reinstated) return next === 'settled' && REINSTATABLE.includes(current);
  return AHEAD[current].includes(next);
}

/** Whether a status can never change again (reinstatement aside). */
export const isFinal = (s: PaymentStatus): boolean => AHEAD[s].length === 0;

/**
 * The furthest of a set of observed statuses by the order above, as recording them one by one in the best
 * order would leave it: used to repair a status recorded out of order from its events.
 */
export function furthest(start: PaymentStatus, observed: readonly EventStatus[]): PaymentStatus {
  let cur: PaymentStatus = start;
  // Repeatedly take any observed status that is ahead; each step strictly advances, so this ends quickly.
  for (let moved = true; moved; ) {
    moved = false;
    for (const s of observed) {
      const next = asObserved(cur, s);
      if (isAhead(cur, next)) {
        cur = next;
        moved = true;
      }
    }
  }
  return cur;
}
