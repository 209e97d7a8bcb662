// engine: once
// The collection decision as a pure function (decision.ts), over any borrower, read, history and policy that
// fast-check makes: it asks for what it needs at most once each and then decides; a payment is created only
// when every condition of the money rule holds, never above the collectable amount, and never beside a payment
// scheduled or in flight; a scheduled payment goes out only on its day, for its own amount, with the balance
// covering it; a linked account its provider forbids is never debited. No database: the rule on its own.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { BANK_ACCOUNT_STATES, LINK_HEALTHS, MONITOR_STATES } from '../../../db/schema/enums';
import { decide, balanceTruth, type Decision, type DecisionInputs, type DecidingPayments, type Need, type Step } from '../../../src/modules/collection/decision';
import { planPayment, type PastPayment } from '../../../src/modules/collection/rules';
import { DEFAULT_POLICY, type CollectionPolicy } from '../../../src/modules/collection-policy/policy';
import { accountBlockOf, ACCOUNT_BLOCK_WORDS, blockedReasonOf, isAccountBlock } from '../../../src/modules/enrollments/monitor';

const NOW = Date.UTC(2026, 5, 10, 15);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** A scheduled payment's day is a calendar day (its UTC midnight; the policy's zone is UTC here). */
const TODAY = Date.UTC(2026, 5, 10);

/** `usual` four times in five. */
const mostly = (usual: boolean) => fc.oneof({ arbitrary: fc.constant(usual), weight: 4 }, { arbitrary: fc.constant(!usual), weight: 1 });

const policyArb: fc.Arbitrary<CollectionPolicy> = fc.record({
  cfpbCovered: fc.boolean(),
  maxReinitiations: fc.integer({ min: 0, max: 2 }),
  reinitiationAmount: fc.constantFrom('current' as const, 'original' as const),
  noticeDays: fc.constantFrom(0, 0, 1, 3),
  returnRatePause: fc.boolean(),
  readCadence: fc.constant(DEFAULT_POLICY.readCadence),
  debitBufferCents: fc.constantFrom(0, 0, 500),
  timeZone: fc.constant(null),
  lateReturnWindowDays: fc.constantFrom(0, 5),
  allowCurrentBalance: fc.boolean(),
  currentBalanceBufferCents: fc.constantFrom(0, 2500),
  maxBalanceAgeMinutes: fc.constantFrom(60, 240),
  applyNotificationsOfChange: fc.constantFrom('automatic' as const, 'review' as const),
  requireAccountValidation: fc.boolean(),
  accountReturnStates: fc.constant({}),
  noticeChannel: fc.constantFrom(null, 'electronic' as const, 'mail' as const),
  regEElection: fc.constantFrom({ type: 'none' as const }, { type: 'none' as const }, { type: 'always' as const }, { type: 'difference_over' as const, amount_cents: 500 }),
});

const pastArb: fc.Arbitrary<PastPayment> = fc.record({
  id: fc.constantFrom('p1', 'p2', 'p3', 'p4'),
  status: fc.constantFrom('settled', 'returned', 'late_returned', 'processing', 'initiating', 'not_attempted', 'voided', 'invalid'),
  returnCode: fc.constantFrom(null, 'R01', 'R09', 'R08', 'R02', 'R10'),
  amountCents: fc.integer({ min: 1, max: 200_000 }),
  attempt: fc.integer({ min: 1, max: 3 }),
  reinitiationOf: fc.constantFrom(null, null, 'p1', 'p2'),
  createdAt: fc.integer({ min: NOW - 200 * DAY, max: NOW }),
  updatedAt: fc.integer({ min: NOW - 200 * DAY, max: NOW }),
  firstAttemptAt: fc.option(fc.integer({ min: NOW - 200 * DAY, max: NOW })),
  reportedReturnCode: fc.constantFrom(null, null, null, 'R08'),
  reportedAt: fc.option(fc.integer({ min: NOW - 200 * DAY, max: NOW })),
  debitOn: fc.constant(null),
  noticeClass: fc.constant(null),
});

const worldArb = fc.record({
  marginCents: fc.constantFrom(0, 100),
  enrollment: fc.option(
    fc.record({
      state: fc.oneof({ arbitrary: fc.constant('monitored' as const), weight: 4 }, { arbitrary: fc.constantFrom(...MONITOR_STATES), weight: 1 }),
      windowEndsAt: fc.oneof({ arbitrary: fc.constantFrom(NOW + DAY, NOW + 30 * DAY), weight: 4 }, { arbitrary: fc.constantFrom(null, NOW - 1, NOW), weight: 1 }),
      blockedReason: fc.constantFrom(null, null, 'verification_required', 'late_return_window', 'stale_balance', 'current_only', 'account_revoked', 'no_processor_key', 'return_rate_paused'),
      rail: fc.constantFrom('ach' as const, 'card' as const),
      cfpbCovered: fc.constantFrom(null, true, false),
      authorizationAt: fc.option(fc.integer({ min: NOW - 200 * DAY, max: NOW })),
      collectableAmountCents: fc.oneof(fc.constantFrom(10_000, 20_000), fc.integer({ min: 1, max: 200_000 })),
    }),
    { freq: 8 },
  ),
  read: fc.record({
    balanceCents: fc.constant(null as number | null),
    balanceKind: fc.constantFrom(null, 'available' as const, 'current' as const),
    asOf: fc.option(fc.integer({ min: NOW - 5 * HOUR, max: NOW })),
    at: fc.integer({ min: NOW - 5 * HOUR, max: NOW }),
    linkHealth: fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, { arbitrary: fc.constantFrom(...LINK_HEALTHS), weight: 1 }),
  }),
  policy: policyArb,
  history: fc.oneof({ arbitrary: fc.constant<PastPayment[]>([]), weight: 2 }, { arbitrary: fc.array(pastArb, { maxLength: 4 }), weight: 3 }),
  scheduled: fc.option(fc.record({ amountCents: fc.oneof(fc.constantFrom(10_000, 20_000), fc.integer({ min: 1, max: 200_000 })), debitOn: fc.constantFrom(TODAY - DAY, TODAY, TODAY + DAY) }), { freq: 3 }),
  inFlight: mostly(false),
  paused: mostly(false),
  hasKey: mostly(true),
});

/** The world with a balance at the edges of what it must cover (the amount, the margin, the buffers), or anywhere, or none. */
const inputsArb = worldArb.chain((w) => {
  const amounts = [w.enrollment?.collectableAmountCents ?? 10_000, w.scheduled?.amountCents ?? 10_000];
  const edges = amounts.flatMap((a) => {
    const edge = a + w.marginCents + w.policy.debitBufferCents;
    return [edge - 1, edge, edge + w.policy.currentBalanceBufferCents - 1, edge + w.policy.currentBalanceBufferCents];
  });
  const balance = fc.oneof({ arbitrary: fc.constantFrom(...edges), weight: 3 }, { arbitrary: fc.integer({ min: 0, max: 400_000 }), weight: 1 }, { arbitrary: fc.constant(null), weight: 1 });
  return balance.map((balanceCents) => ({ ...w, read: { ...w.read, balanceCents } }));
});

type World = typeof inputsArb extends fc.Arbitrary<infer T> ? T : never;

/** The decision run as decide.ts runs it: each need answered from the world, and every need counted. */
function run(w: World): { steps: Step[]; needs: Need[] } {
  const payments: DecidingPayments = { policy: w.policy, history: w.history, scheduled: w.scheduled, inFlight: w.scheduled === null && w.inFlight };
  const inputs: DecisionInputs = { now: NOW, marginCents: w.marginCents, read: w.read, enrollment: w.enrollment };
  const needs: Need[] = [];
  for (let i = 0; i < 10; i++) {
    const d: Decision = decide(inputs);
    if ('steps' in d) return { steps: d.steps, needs };
    needs.push(d.need);
    if (d.need === 'payments') inputs.payments = payments;
    else if (d.need === 'paused') inputs.paused = w.paused;
    else inputs.hasKey = w.hasKey;
  }
  throw new Error('the decision kept asking');
}

const PROPERTY = { numRuns: 10_000 };

describe('the collection decision (pure)', () => {
  test('asks for each input at most once, in the order payments, pause, key, and always ends', () => {
    fc.assert(
      fc.property(inputsArb, (w) => {
        const { needs } = run(w);
        expect(new Set(needs).size).toBe(needs.length);
        const order = ['payments', 'paused', 'key'];
        expect([...needs].sort((a, b) => order.indexOf(a) - order.indexOf(b))).toEqual(needs);
        // The pause is evaluated (it alerts) only for an ACH borrower of a lender that pauses.
        if (needs.includes('paused')) expect(w.enrollment!.rail === 'ach' && w.policy.returnRatePause).toBe(true);
      }),
      PROPERTY,
    );
  });

  test('a payment is created only when every condition of the money rule holds, for at most the collectable amount', () => {
    fc.assert(
      fc.property(inputsArb, (w) => {
        const { steps } = run(w);
        const creates = steps.filter((s) => s.do === 'create');
        expect(creates.length).toBeLessThanOrEqual(1);
        if (creates.length === 0) return;
        const c = creates[0] as Extract<Step, { do: 'create' }>;
        const e = w.enrollment!;
        expect(e.state).toBe('monitored');
        expect(e.windowEndsAt !== null && NOW < e.windowEndsAt).toBe(true);
        expect(e.blockedReason).not.toBe('verification_required');
        expect(blockedReasonOf(w.read.linkHealth ?? null)).toBeNull();
        expect(w.scheduled).toBeNull();
        expect(w.inFlight).toBe(false);
        expect(w.hasKey).toBe(true);
        if (e.rail === 'ach' && w.policy.returnRatePause) expect(w.paused).toBe(false);
        const plan = planPayment({ history: w.history, authorizationAt: e.authorizationAt, covered: e.cfpbCovered ?? w.policy.cfpbCovered, policy: w.policy, collectableCents: e.collectableAmountCents, now: NOW });
        expect(plan).toMatchObject({ ok: true, amountCents: c.amountCents, attempt: c.attempt, reinitiationOf: c.reinitiationOf });
        expect(c.amountCents).toBeLessThanOrEqual(e.collectableAmountCents);
        const truth = balanceTruth(w.read, w.policy, NOW);
        expect(truth.ok).toBe(true);
        const buffer = truth.ok ? truth.bufferCents : 0;
        expect(w.read.balanceCents!).toBeGreaterThanOrEqual(c.amountCents + w.marginCents + w.policy.debitBufferCents + buffer);
        // Sent now without a notice period or a notice the rules ask for; scheduled after one, with the notice's
        // window ending no earlier than now and before the debit's day.
        const needsNotice = c.notice!.needs.length > 0;
        expect(c.debitOn === null).toBe(w.policy.noticeDays === 0 && !needsNotice);
        if (c.debitOn !== null) expect(c.debitOn).toBeGreaterThan(NOW);
        if (needsNotice) {
          expect(c.notice!.dueFrom!).toBeLessThanOrEqual(c.notice!.dueBy!);
          expect(c.notice!.dueBy!).toBeGreaterThanOrEqual(NOW);
          expect(c.notice!.dueBy!).toBeLessThan(c.debitOn!);
        }
        // The payday rule's notice is asked exactly for a covered borrower's first, unusual or reinitiation debit, where the lender binds them.
        const covered = e.cfpbCovered ?? w.policy.cfpbCovered;
        expect(c.notice!.needs.includes('cfpb')).toBe(covered && w.policy.noticeChannel !== null && ['first', 'unusual', 'reinitiation'].includes(c.notice!.klass));
        // Nothing else moves money beside it.
        expect(steps.filter((s) => s.do === 'release' || s.do === 'void')).toEqual([]);
      }),
      PROPERTY,
    );
  });

  test('a scheduled payment goes out only on its day, for its own amount, with the balance covering it; otherwise it waits or is voided', () => {
    fc.assert(
      fc.property(inputsArb, (w) => {
        const { steps } = run(w);
        if (steps.some((s) => s.do === 'release')) {
          const e = w.enrollment!;
          expect(steps).toEqual([{ do: 'release' }]);
          expect(w.scheduled).not.toBeNull();
          expect(NOW).toBeGreaterThanOrEqual(w.scheduled!.debitOn);
          expect(blockedReasonOf(w.read.linkHealth ?? null)).toBeNull();
          const plan = planPayment({ history: w.history, authorizationAt: e.authorizationAt, covered: e.cfpbCovered ?? w.policy.cfpbCovered, policy: w.policy, collectableCents: e.collectableAmountCents, now: NOW });
          expect(plan).toMatchObject({ ok: true, amountCents: w.scheduled!.amountCents });
          expect(w.read.balanceCents!).toBeGreaterThanOrEqual(w.scheduled!.amountCents + w.marginCents + w.policy.debitBufferCents);
          if (e.rail === 'ach' && w.policy.returnRatePause) expect(w.paused).toBe(false);
        }
        // A void ends a payment that is scheduled, and only one.
        if (steps.some((s) => s.do === 'void')) {
          expect(w.scheduled).not.toBeNull();
          expect(steps.filter((s) => s.do === 'void')).toHaveLength(1);
        }
        // Before its day a scheduled payment is left alone, the borrower read again when its day begins (unless its account may no longer be debited).
        if (w.scheduled && NOW < w.scheduled.debitOn && blockedReasonOf(w.read.linkHealth ?? null) === null) {
          expect(steps.filter((s) => s.do !== 'read_by')).toEqual([]);
          for (const s of steps) expect(s).toEqual({ do: 'read_by', at: w.scheduled.debitOn });
        }
      }),
      PROPERTY,
    );
  });

  test('a linked account its provider forbids is never debited: the borrower is blocked with why, and a scheduled payment voided', () => {
    fc.assert(
      fc.property(inputsArb, (w) => {
        const e = w.enrollment;
        const linkBlock = blockedReasonOf(w.read.linkHealth ?? null);
        if (!e || e.state !== 'monitored' || e.windowEndsAt === null || NOW >= e.windowEndsAt || e.blockedReason === 'verification_required' || linkBlock === null) return;
        const { steps } = run(w);
        expect(steps).toEqual([...(w.scheduled ? [{ do: 'void', message: `not debited: ${linkBlock}` }] : []), { do: 'block', reason: linkBlock }] as Step[]);
      }),
      PROPERTY,
    );
  });

  test('a monitor that is not monitored, out of its window or waiting for verification decides nothing and reads nothing', () => {
    fc.assert(
      fc.property(inputsArb, (w) => {
        const e = w.enrollment;
        if (e && e.state === 'monitored' && e.windowEndsAt !== null && NOW < e.windowEndsAt && e.blockedReason !== 'verification_required') return;
        expect(run(w)).toEqual({ steps: [], needs: [] });
      }),
      PROPERTY,
    );
  });

  test('examples: a covered balance creates; one cent short creates nothing; a pause and a missing key block', () => {
    const enrollment = { state: 'monitored' as const, windowEndsAt: NOW + DAY, blockedReason: null, rail: 'ach' as const, cfpbCovered: null, authorizationAt: null, collectableAmountCents: 10_000 };
    const base: World = {
      marginCents: 100,
      enrollment,
      read: { balanceCents: 10_100, balanceKind: null, asOf: null, at: NOW, linkHealth: null },
      policy: DEFAULT_POLICY,
      history: [],
      scheduled: null,
      inFlight: false,
      paused: false,
      hasKey: true,
    };
    expect(run(base).steps).toMatchObject([{ do: 'create', amountCents: 10_000, attempt: 1, reinitiationOf: null, debitOn: null, notice: { klass: 'first', needs: [] } }]);
    expect(run({ ...base, read: { ...base.read, balanceCents: 10_099 } }).steps).toEqual([]);
    expect(run({ ...base, policy: { ...DEFAULT_POLICY, returnRatePause: true }, paused: true }).steps).toEqual([{ do: 'block', reason: 'return_rate_paused' }]);
    expect(run({ ...base, hasKey: false }).steps).toEqual([{ do: 'block', reason: 'no_processor_key' }]);
    // A fresh read lifts a block the last one set, whatever its balance says.
    expect(run({ ...base, enrollment: { ...enrollment, blockedReason: 'stale_balance' }, read: { ...base.read, balanceCents: 5 } }).steps).toEqual([{ do: 'unblock' }]);
    // A payment in flight: nothing, whatever the balance.
    expect(run({ ...base, inFlight: true }).steps).toEqual([]);
  });
});

describe('the borrower’s bank account (decision, pure)', () => {
  const at = fc.option(fc.integer({ min: NOW - 200 * DAY, max: NOW }));
  const accountArb = fc.record({
    state: fc.constantFrom(...BANK_ACCOUNT_STATES),
    lastReturnAt: at,
    // A Notification of Change waiting, validation evidence, a number corrected: each sometimes.
    pendingChangeId: fc.option(fc.constant('noc-1'), { freq: 4 }),
    validatedAt: at,
    numberChangedAt: fc.option(fc.integer({ min: NOW - 200 * DAY, max: NOW }), { freq: 2 }),
  });

  test('an account that blocks the borrower is never debited: blocked with its reason, a scheduled payment voided; one that does not changes nothing', () => {
    fc.assert(
      fc.property(inputsArb, accountArb, (w, account) => {
        const e = w.enrollment;
        if (!e) return;
        const { steps } = run({ ...w, enrollment: { ...e, account } } as World);
        const without = run(w).steps;
        const block = accountBlockOf(account, e.authorizationAt, w.policy.requireAccountValidation);
        const decides = e.state === 'monitored' && e.windowEndsAt !== null && NOW < e.windowEndsAt && e.blockedReason !== 'verification_required';
        if (!decides || block === null) {
          expect(steps).toEqual(without);
          return;
        }
        expect(steps).toEqual([...(w.scheduled ? [{ do: 'void', message: `not debited: ${ACCOUNT_BLOCK_WORDS[block]}` }] : []), { do: 'block', reason: block }] as Step[]);
        expect(steps.some((s) => s.do === 'create' || s.do === 'release')).toBe(false);
      }),
      PROPERTY,
    );
  });
});

describe('a revocation of the authorization (decision, pure)', () => {
  test('a borrower whose revocation has no later authorization is never debited: blocked, a scheduled payment voided; an authorization after it changes nothing', () => {
    fc.assert(
      fc.property(inputsArb, fc.integer({ min: NOW - 200 * DAY, max: NOW }), (w, revokedAt) => {
        const e = w.enrollment;
        if (!e) return;
        const { steps } = run({ ...w, enrollment: { ...e, revokedAt } } as World);
        const decides = e.state === 'monitored' && e.windowEndsAt !== null && NOW < e.windowEndsAt && e.blockedReason !== 'verification_required';
        const revoked = !(e.authorizationAt !== null && e.authorizationAt > revokedAt);
        if (!decides || !revoked) {
          expect(steps).toEqual(run(w).steps);
          return;
        }
        expect(steps.some((s) => s.do === 'create' || s.do === 'release')).toBe(false);
        expect(steps[steps.length - 1]).toEqual({ do: 'block', reason: 'authorization_revoked' });
        expect(steps.some((s) => s.do === 'void')).toBe(w.scheduled !== null);
      }),
      PROPERTY,
    );
  });
});

describe('a fraud-monitoring hold (decision, pure)', () => {
  test('a borrower held by a hold rule’s alert is never debited nor released: blocked fraud_hold, a scheduled payment kept; a stronger block comes first; no hold changes nothing', () => {
    fc.assert(
      fc.property(inputsArb, (w) => {
        const e = w.enrollment;
        if (!e) return;
        const { steps } = run({ ...w, enrollment: { ...e, fraudHold: 1 } } as World);
        expect(run({ ...w, enrollment: { ...e, fraudHold: 0 } } as World).steps).toEqual(run(w).steps);
        expect(steps.some((s) => s.do === 'create' || s.do === 'release')).toBe(false);
        const decides = e.state === 'monitored' && e.windowEndsAt !== null && NOW < e.windowEndsAt && e.blockedReason !== 'verification_required';
        if (!decides) {
          expect(steps).toEqual(run(w).steps);
          return;
        }
        // A revocation or an account's block says its own reason (and voids); else the hold, which voids nothing.
        const stronger = run(w).steps.some((s) => s.do === 'block' && (s.reason === 'authorization_revoked' || isAccountBlock(s.reason)));
        expect(steps).toEqual(stronger ? run(w).steps : [{ do: 'block', reason: 'fraud_hold' }]);
      }),
      PROPERTY,
    );
  });
});
