import type { ReadCadence, ReinitiationAmount } from '../../../db/schema/enums';
import type { Db } from '../../platform/db';

/**
 * The lender's policy row, read by the collection rules once per decision and per recorded return (an upload
 * of a 10 MB file asks it tens of thousands of times): a cached statement, not the query builder.
 */
export const policyRow = (db: Db, lenderId: string) =>
  db.$client
    .query<
      {
        cfpbCovered: number;
        maxReinitiations: number;
        reinitiationAmount: ReinitiationAmount;
        noticeDays: number;
        returnRatePause: number;
        readCadence: ReadCadence;
        debitBufferCents: number;
        timeZone: string | null;
      },
      [string]
    >(
      `SELECT cfpb_covered AS cfpbCovered, max_reinitiations AS maxReinitiations, reinitiation_amount AS reinitiationAmount, notice_days AS noticeDays,
              return_rate_pause AS returnRatePause, read_cadence AS readCadence, debit_buffer_cents AS debitBufferCents, time_zone AS timeZone
         FROM collection_policies WHERE lender_id = ?`,
    )
    .get(lenderId);
