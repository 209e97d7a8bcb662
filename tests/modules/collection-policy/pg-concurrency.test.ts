// engine: postgres
// The collection policy on PostgreSQL: a PATCH reads the policy and writes it back whole, so changes of
// different fields sent at once (20 here) must each see the one before, or a field changed by one is written
// back to its old value by another. Every field ends as it was last sent.
import { afterAll, describe, expect, test } from 'bun:test';
import type { Ctx } from '../../../src/deps';
import { getPolicy, policyOf, updatePolicy } from '../../../src/modules/collection-policy/service';
import type { PolicyPatchInput } from '../../../src/modules/collection-policy/model';
import { createLender } from '../../../src/modules/lenders/service';
import { FakeClock } from '../../../src/platform/clock';
import { openPg } from '../../../src/platform/pg';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;
const NOW = Date.UTC(2026, 0, 5, 12);

if (!onPostgres) {
  test('the collection policy under concurrent changes: not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const database = freshPgDatabase();
  const pg = openPg(database.url, { max: CALLERS + 5 });
  const deps = { ...pgStoreDeps(pg), clock: new FakeClock(NOW) };
  afterAll(async () => {
    await pg.close();
    database.drop();
  });

  // Each caller changes one field; callers on the same field send the same value.
  const PATCHES: PolicyPatchInput[] = [
    { cfpb_covered: true },
    { max_reinitiations: 1 },
    { reinitiation_amount: 'original' },
    { notice_days: 3 },
    { return_rate_pause: true },
    { read_cadence: 'interval' },
    { debit_buffer_cents: 2_500_000_000_00 },
    { time_zone: 'america/chicago' },
  ];

  describe('the collection policy on PostgreSQL', () => {
    test('20 changes of different fields at once: none is lost', async () => {
      const { lender } = await createLender(deps, 'Policy Lender', NOW);
      const ctx = { lender: { id: lender.id, name: lender.name, debitCardApproved: false }, deps } as unknown as Ctx;
      const results = await Promise.allSettled(Array.from({ length: CALLERS }, (_, i) => updatePolicy({ ctx, input: PATCHES[i % PATCHES.length]! })));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await getPolicy({ ctx })).toEqual({
        cfpb_covered: true,
        max_reinitiations: 1,
        reinitiation_amount: 'original',
        notice_days: 3,
        return_rate_pause: true,
        read_cadence: 'interval',
        debit_buffer_cents: 2_500_000_000_00,
        time_zone: 'America/Chicago',
        late_return_window_days: 5,
        allow_current_balance: false,
        current_balance_buffer_cents: 0,
        max_balance_age_minutes: 60,
        apply_notifications_of_change: 'automatic',
        require_account_validation: true,
        account_return_states: {},
        notice_channel: 'electronic',
        reg_e_election: { type: 'none' },
        updated_at: new Date(NOW).toISOString(),
      });
      // The row as the collection rules read it: flags as booleans from 0/1, cents above int4 exact.
      expect(await policyOf({ deps }, lender.id)).toMatchObject({ cfpbCovered: true, returnRatePause: true, debitBufferCents: 2_500_000_000_00 });
    });

    test('a lender that never saved one has every default', async () => {
      const { lender } = await createLender(deps, 'Default Lender', NOW);
      const ctx = { lender: { id: lender.id, name: lender.name, debitCardApproved: false }, deps } as unknown as Ctx;
      expect(await getPolicy({ ctx })).toMatchObject({ cfpb_covered: false, max_reinitiations: 2, notice_days: 0, updated_at: null });
    });
  });
}
