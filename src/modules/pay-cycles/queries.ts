import type { PayCycleSource, PayFrequency } from '../../../db/schema/enums';
import type { PayCycle, RegularFrequency } from './infer';
import type { Tx } from '../../platform/context';
import type { Db } from '../../platform/db';

export const cadenceStateOf = (db: Db, enrollmentId: string) =>
  db.$client
    .query<
      {
        lenderId: string;
        state: string;
        blockedReason: string | null;
        nextReadAt: number | null;
        frequency: PayFrequency | null;
        nextPayday: number | null;
        confidence: number | null;
        learnedAt: number | null;
        altFrequency: RegularFrequency | null;
        altNextPayday: number | null;
        landsEarly: number | null;
      },
      [string]
    >(
      `SELECT lender_id AS lenderId, state, blocked_reason AS blockedReason, next_read_at AS nextReadAt, pay_cycle_frequency AS frequency,
              pay_cycle_next_payday AS nextPayday, pay_cycle_confidence AS confidence, pay_cycle_at AS learnedAt,
              pay_cycle_alternative_frequency AS altFrequency, pay_cycle_alternative_next_payday AS altNextPayday, pay_cycle_lands_early AS landsEarly
         FROM enrollments WHERE id = ?`,
    )
    .get(enrollmentId);

/** The borrower's balances as the service read them since a time, oldest first (off the history index). */
export const balanceHistory = (db: Db, lenderId: string, aid: string, since: number) =>
  db.$client
    .query<{ at: number; balanceCents: number }, [string, string, number]>(
      `SELECT recorded_at AS at, balance_cents AS balanceCents FROM balance_results INDEXED BY balance_results_history_idx
        WHERE lender_id = ? AND authorizer_unique_id = ? AND balance_cents IS NOT NULL AND recorded_at >= ? ORDER BY id`,
    )
    .all(lenderId, aid, since);

/** The cycle learned, with its alternative (biweekly against semimonthly) and whether its pay lands early. */
export const setPayCycle = (
  tx: Tx,
  enrollmentId: string,
  c: Pick<PayCycle, 'nextPayday' | 'confidence' | 'alternative' | 'landsEarly'> & { frequency: PayFrequency; source: PayCycleSource; at: number },
) =>
  tx.$client
    .query(
      `UPDATE enrollments SET pay_cycle_frequency = ?, pay_cycle_next_payday = ?, pay_cycle_confidence = ?, pay_cycle_source = ?, pay_cycle_at = ?,
              pay_cycle_alternative_frequency = ?, pay_cycle_alternative_next_payday = ?, pay_cycle_lands_early = ? WHERE id = ?`,
    )
    .run(
      c.frequency,
      c.nextPayday,
      c.confidence,
      c.source,
      c.at,
      c.alternative?.frequency ?? null,
      c.alternative?.nextPayday ?? null,
      c.landsEarly === undefined ? null : c.landsEarly ? 1 : 0,
      enrollmentId,
    );

export const setNextRead = (tx: Tx, enrollmentId: string, at: number) =>
  tx.$client.query("UPDATE enrollments SET next_read_at = ? WHERE id = ? AND state = 'monitored'").run(at, enrollmentId);
