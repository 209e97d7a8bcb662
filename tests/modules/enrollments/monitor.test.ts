// The monitor's state machine, cell by cell: every state against every event, with the next state, reason,
// blocked reason and what follows. A cell that changes fails here first.
import { describe, expect, test } from 'bun:test';
import { MONITOR_STATES } from '../../../db/schema/enums';
import { accountBlockOf, ACCOUNT_BLOCKS, IllegalTransition, nextMonitor, type MonitorChange, type MonitorEvent, type MonitorFrom, type MonitorSnapshot } from '../../../src/modules/enrollments/monitor';

const FROM: Record<MonitorFrom, MonitorSnapshot> = {
  new: { state: 'new', reason: null, blockedReason: null },
  monitored: { state: 'monitored', reason: null, blockedReason: 'verification_required' },
  held: { state: 'held', reason: 'institution_not_supported', blockedReason: null },
  collected: { state: 'collected', reason: null, blockedReason: null },
  lapsed: { state: 'lapsed', reason: null, blockedReason: null },
  removed: { state: 'removed', reason: null, blockedReason: null },
  stopped: { state: 'stopped', reason: 'R02', blockedReason: null },
};

const EVENTS = {
  enrolled: { type: 'enrolled', held: null },
  enrolled_held: { type: 'enrolled', held: 'unresolvable_routing_number' },
  readable: { type: 'readable' },
  still_held_same: { type: 'still_held', held: 'institution_not_supported' },
  still_held_other: { type: 'still_held', held: 'unresolvable_routing_number' },
  read: { type: 'read' },
  removed: { type: 'removed' },
  erased: { type: 'erased' },
  lapsed: { type: 'lapsed' },
  settled: { type: 'settled' },
  returned_R01: { type: 'returned', code: 'R01' },
  returned_R09: { type: 'returned', code: 'R09' },
  returned_R02: { type: 'returned', code: 'R02' },
  returned_no_code: { type: 'returned', code: null },
  invalid: { type: 'invalid' },
  invalid_stolen_card: { type: 'invalid', declineCode: 'stolen_card' },
  invalid_retryable_decline: { type: 'invalid', declineCode: 'generic_decline' },
  late_R01_in_window: { type: 'late_returned', code: 'R01', inWindow: true },
  late_R01_after_window: { type: 'late_returned', code: 'R01', inWindow: false },
  late_R10_in_window: { type: 'late_returned', code: 'R10', inWindow: true },
  late_no_code: { type: 'late_returned', code: null, inWindow: true },
  blocked_no_key: { type: 'blocked', reason: 'no_processor_key' },
  blocked_same: { type: 'blocked', reason: 'verification_required' },
  payment_initiated: { type: 'payment_initiated' },
} satisfies Record<string, MonitorEvent>;

type Cell = '!' | '-' | string;
// A cell: '!' the event cannot happen in that state (throws); '-' nothing moves; otherwise
// "state reason blocked window nextRead payments [outcome]" with '∅' for null.
const TABLE: Record<keyof typeof EVENTS, Record<MonitorFrom, Cell>> = {
  enrolled: {
    new: 'monitored ∅ ∅ fresh now reset enrolled',
    monitored: 'monitored ∅ ∅ keep keep keep updated',
    held: 'monitored ∅ ∅ fresh now reset enrolled',
    collected: 'monitored ∅ ∅ fresh now reset enrolled',
    lapsed: 'monitored ∅ ∅ fresh now reset enrolled',
    removed: 'monitored ∅ ∅ fresh now reset enrolled',
    stopped: 'monitored ∅ ∅ fresh now reset enrolled',
  },
  enrolled_held: {
    new: 'held unresolvable_routing_number ∅ none none reset held',
    monitored: 'held unresolvable_routing_number ∅ none none keep held',
    held: 'held unresolvable_routing_number ∅ none none keep held',
    collected: 'held unresolvable_routing_number ∅ none none reset held',
    lapsed: 'held unresolvable_routing_number ∅ none none reset held',
    removed: 'held unresolvable_routing_number ∅ none none reset held',
    stopped: 'held unresolvable_routing_number ∅ none none reset held',
  },
  readable: { new: '!', monitored: '!', held: 'monitored ∅ ∅ fresh now reset', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
  still_held_same: { new: '!', monitored: '!', held: '-', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
  still_held_other: { new: '!', monitored: '!', held: 'held unresolvable_routing_number ∅ keep keep keep', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
  read: { new: '!', monitored: 'monitored ∅ verification_required keep interval keep', held: '!', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
  removed: { new: '!', monitored: 'removed ∅ verification_required keep none keep', held: '!', collected: 'removed ∅ ∅ keep none keep', lapsed: '!', removed: '!', stopped: '!' },
  erased: {
    new: '!',
    monitored: 'removed ∅ verification_required keep none keep',
    held: 'removed institution_not_supported ∅ keep none keep',
    collected: 'removed ∅ ∅ keep none keep',
    lapsed: 'removed ∅ ∅ keep none keep',
    removed: 'removed ∅ ∅ keep none keep',
    stopped: 'removed R02 ∅ keep none keep',
  },
  lapsed: { new: '!', monitored: 'lapsed ∅ verification_required keep none keep', held: '!', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
  settled: { new: '!', monitored: 'collected ∅ ∅ keep none keep', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  returned_R01: { new: '!', monitored: '-', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  returned_R09: { new: '!', monitored: '-', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  returned_R02: { new: '!', monitored: 'stopped R02 verification_required keep none keep', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  returned_no_code: { new: '!', monitored: 'stopped returned verification_required keep none keep', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  invalid: { new: '!', monitored: 'stopped invalid verification_required keep none keep', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  invalid_stolen_card: { new: '!', monitored: 'stopped stolen_card verification_required keep none keep', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  invalid_retryable_decline: { new: '!', monitored: 'stopped invalid verification_required keep none keep', held: '-', collected: '-', lapsed: '-', removed: '-', stopped: '-' },
  late_R01_in_window: { new: '!', monitored: '-', held: '-', collected: 'monitored ∅ ∅ keep now keep', lapsed: '-', removed: '-', stopped: '-' },
  late_R01_after_window: {
    new: '!',
    monitored: 'stopped R01 verification_required keep none keep',
    held: '-',
    collected: 'stopped R01 ∅ keep none keep',
    lapsed: '-',
    removed: '-',
    stopped: '-',
  },
  late_R10_in_window: {
    new: '!',
    monitored: 'stopped R10 verification_required keep none keep',
    held: '-',
    collected: 'stopped R10 ∅ keep none keep',
    lapsed: '-',
    removed: '-',
    stopped: '-',
  },
  late_no_code: {
    new: '!',
    monitored: 'stopped late_returned verification_required keep none keep',
    held: '-',
    collected: 'stopped late_returned ∅ keep none keep',
    lapsed: '-',
    removed: '-',
    stopped: '-',
  },
  blocked_no_key: { new: '!', monitored: 'monitored ∅ no_processor_key keep keep keep', held: '!', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
  blocked_same: { new: '!', monitored: '-', held: '!', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
  payment_initiated: { new: '!', monitored: 'monitored ∅ ∅ keep keep keep', held: '!', collected: '!', lapsed: '!', removed: '!', stopped: '!' },
};

function show(c: MonitorChange): string {
  const v = (x: string | null) => x ?? '∅';
  return [c.state, v(c.reason), v(c.blockedReason), c.window, c.nextRead, c.payments, ...(c.outcome ? [c.outcome] : [])].join(' ');
}

describe('the monitor state machine', () => {
  const froms = ['new', ...MONITOR_STATES] as MonitorFrom[];
  for (const [name, event] of Object.entries(EVENTS) as [keyof typeof EVENTS, MonitorEvent][]) {
    for (const from of froms) {
      const cell = TABLE[name][from];
      test(`${from} + ${name} → ${cell === '!' ? 'refused' : cell === '-' ? 'unchanged' : cell}`, () => {
        if (cell === '!') {
          expect(() => nextMonitor(FROM[from], event)).toThrow(IllegalTransition);
          return;
        }
        const change = nextMonitor(FROM[from], event);
        if (cell === '-') expect(change).toBeNull();
        else expect(change === null ? null : show(change)).toBe(cell);
      });
    }
  }

  test('the table covers every state and every event type', () => {
    const types = new Set(Object.values(EVENTS).map((e) => e.type));
    // Every variant of MonitorEvent appears in the table (a new event type must be added here).
    expect([...types].sort() as string[]).toEqual(
      ['blocked', 'enrolled', 'erased', 'invalid', 'lapsed', 'late_returned', 'payment_initiated', 'read', 'readable', 'removed', 'returned', 'settled', 'still_held'].sort(),
    );
    for (const row of Object.values(TABLE)) expect(Object.keys(row).sort()).toEqual([...froms].sort());
  });

  test('a payment can be initiated only from monitored: every other state refuses the event', () => {
    for (const from of froms.filter((f) => f !== 'monitored')) {
      expect(() => nextMonitor(FROM[from], { type: 'payment_initiated' })).toThrow(IllegalTransition);
    }
  });
});

describe('a bank account’s block', () => {
  const monitored = (blockedReason: string | null): MonitorSnapshot => ({ state: 'monitored', reason: null, blockedReason });
  test('stands until the lender acts, as a collection rule’s does: not read meanwhile, kept through a re-send, read at once when lifted', () => {
    for (const reason of ACCOUNT_BLOCKS) {
      expect(show(nextMonitor(monitored(null), { type: 'blocked', reason })!)).toBe(`monitored ∅ ${reason} keep none keep`);
      // A re-send keeps it (the chain is asked again, and lifts it if it no longer holds).
      expect(show(nextMonitor(monitored(reason), { type: 'enrolled', held: null })!)).toBe(`monitored ∅ ${reason} keep keep keep updated`);
      expect(show(nextMonitor({ state: 'stopped', reason: 'R10', blockedReason: reason }, { type: 'enrolled', held: null })!)).toBe(`monitored ∅ ${reason} fresh none reset enrolled`);
      expect(show(nextMonitor(monitored(reason), { type: 'unblocked' })!)).toBe('monitored ∅ ∅ keep now keep');
      // Taking the place of a wait that lifts by itself stops reads; one that lifts by itself taking its place reads again.
      expect(show(nextMonitor(monitored('stale_balance'), { type: 'blocked', reason })!)).toBe(`monitored ∅ ${reason} keep none keep`);
      expect(show(nextMonitor(monitored(reason), { type: 'blocked', reason: 'late_return_window' })!)).toBe('monitored ∅ late_return_window keep now keep');
    }
  });

  test('what an account blocks for a borrower: any state but ok; unauthorized only without an authorization after the last return', () => {
    const at = 1_000;
    expect(accountBlockOf(null, null)).toBeNull();
    expect(accountBlockOf(undefined, null)).toBeNull();
    expect(accountBlockOf({ state: 'ok', lastReturnAt: null }, null)).toBeNull();
    for (const state of ['invalid', 'frozen', 'deceased'] as const) {
      expect(accountBlockOf({ state, lastReturnAt: at }, null)).toBe(`account_${state}`);
      expect(accountBlockOf({ state, lastReturnAt: at }, at + 1)).toBe(`account_${state}`);
    }
    expect(accountBlockOf({ state: 'unauthorized', lastReturnAt: at }, null)).toBe('account_unauthorized');
    expect(accountBlockOf({ state: 'unauthorized', lastReturnAt: at }, at)).toBe('account_unauthorized');
    expect(accountBlockOf({ state: 'unauthorized', lastReturnAt: at }, at + 1)).toBeNull();
  });
});
