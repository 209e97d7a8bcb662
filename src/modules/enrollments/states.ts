import type { MonitorState } from '../../../db/schema/enums';

// The monitor's state machine as a table (payments.md, Monitor states). A change that is not in it throws:
// a bug that tries one must not quietly move a borrower into a state that collects money.

type From = MonitorState | 'new';

const ALLOWED: Record<From, readonly MonitorState[]> = {
  // Enrollment: stored and read, or stored and held.
  new: ['monitored', 'held'],
  // A re-send refreshes (monitored again, or held when the new bank is not readable); the window ends; a
  // removal; a payment settles; a return other than R01/R09.
  monitored: ['monitored', 'held', 'lapsed', 'removed', 'collected', 'stopped'],
  // The bank became readable, or a re-send; erasure removes.
  held: ['held', 'monitored', 'removed'],
  // A late return: R01/R09 makes it eligible again, another code stops it; a re-send starts fresh.
  collected: ['monitored', 'stopped', 'held', 'removed'],
  // Re-sends start fresh; erasure of an ended monitor records it as removed.
  lapsed: ['monitored', 'held', 'removed'],
  removed: ['monitored', 'held', 'removed'],
  stopped: ['monitored', 'held', 'removed'],
};

export class IllegalTransition extends Error {
  constructor(from: From, to: MonitorState) {
    super(`a monitor cannot go from ${from} to ${to}`);
    this.name = 'IllegalTransition';
  }
}

/** Returns `to` when the move is allowed, throws otherwise. */
export function transition(from: From, to: MonitorState): MonitorState {
  if (!ALLOWED[from].includes(to)) throw new IllegalTransition(from, to);
  return to;
}

export const canTransition = (from: From, to: MonitorState): boolean => ALLOWED[from].includes(to);
