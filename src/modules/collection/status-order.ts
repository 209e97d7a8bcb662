import type { EventStatus, PaymentStatus } from '../../../db/schema/enums';

// The one order a payment's recorded status moves along (payments.md, section 5). Sources disagree in time,
// not in truth: a change feed delivers an older status after a look-up found a newer one, a re-read repeats
// what was recorded, an upload arrives days later. Whatever the order of arrival, a status is recorded only
// when it is ahead of the one recorded; anything else is history the service already has.
//
//   scheduled → initiating → processing → settled → late_returned | refunded
//       │           │             └──────→ returned | invalid | voided
//       │           └→ not_attempted (on the processor's word, or never sent: no send of it was ever claimed)
//       └→ voided, or any outcome the processor gives (a lender's report of it is held, never recorded as one)
//
// `scheduled → initiating` is the release of a payment on its day (its notice has run): the one move no
// observation makes, as no source reports `initiating`; the recorder makes it (record.ts, releaseScheduled).
//
// A status may skip the steps the service did not see (initiating → settled after a lost answer). Final
// statuses never change, except that money that went back can come back (a dispute won, a refund that
// failed): late_returned or refunded → settled again, only when the processor says so (`reinstated`).

const FINAL: readonly EventStatus[] = [];
const AFTER_SETTLED: readonly EventStatus[] = ['late_returned', 'refunded'];
const AFTER_PROCESSING: readonly EventStatus[] = ['settled', 'returned', 'invalid', 'voided', ...AFTER_SETTLED];

/** The statuses each recorded status may move to. */
const AHEAD: Record<PaymentStatus, readonly PaymentStatus[]> = {
  scheduled: ['initiating', 'voided', 'processing', 'settled', 'returned', 'invalid', 'late_returned', 'refunded', 'not_attempted'],
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
export function isAhead(current: PaymentStatus | null, next: PaymentStatus, reinstated = false): boolean {
  if (current === null) return true;
  if (reinstated) return next === 'settled' && REINSTATABLE.includes(current);
  return AHEAD[current].includes(next);
}
