import { and, asc, eq, gt, inArray, lte, ne, sql } from 'drizzle-orm';
import { batches, scheduleAuthorizers, schedules } from '../../../db/schema-pg';
import { lockFor, readerOf, writerOf, rows, listOf } from '../../platform/sql/pg';
import type { ScheduleStore } from './store';

// The schedules store on PostgreSQL. Transactions run side by side here, so what SQLite's single writer gave
// for free is said outright:
// - a due run is taken by one conditional UPDATE (still ACTIVE, still due at the time the caller read), so two
//   schedulers that both found it due start it once;
// - a change that reads the schedule first holds its row (lockSchedule: FOR UPDATE) until it ends;
// - a name is checked and written under the lender's advisory lock (serializeScheduleNames).


export const pgScheduleStore: ScheduleStore = {
  async scheduleOf(c, lenderId, id) {
    const [row] = await readerOf(c)
      .select()
      .from(schedules)
      .where(and(eq(schedules.id, id), eq(schedules.lenderId, lenderId)));
    return row;
  },
  async lockSchedule(c, lenderId, id) {
    const [row] = await writerOf(c)
      .select()
      .from(schedules)
      .where(and(eq(schedules.id, id), eq(schedules.lenderId, lenderId)))
      .for('update');
    return row;
  },
  async serializeScheduleNames(c, lenderId) {
    await lockFor(c, 'schedule-names', lenderId);
  },
  async authorizerCounts(c, scheduleIds) {
    if (scheduleIds.length === 0) return [];
    const counted = await rows<{ scheduleId: string; n: number }>(
      readerOf(c),
      sql`SELECT schedule_id AS "scheduleId", count(*)::int AS n FROM schedule_authorizers
           WHERE schedule_id = ANY(${listOf(scheduleIds)}::text[]) GROUP BY schedule_id`,
    );
    const byId = new Map(counted.map((r) => [r.scheduleId, r.n]));
    return scheduleIds.map((id) => byId.get(id) ?? 0);
  },
  async nameTaken(c, lenderId, name, exceptId) {
    const conds = [eq(schedules.lenderId, lenderId), eq(schedules.name, name)];
    if (exceptId) conds.push(ne(schedules.id, exceptId));
    const found = await readerOf(c)
      .select({ id: schedules.id })
      .from(schedules)
      .where(and(...conds))
      .limit(1);
    return found.length > 0;
  },
  async listSchedules(c, f) {
    const conds = [eq(schedules.lenderId, f.lenderId), gt(schedules.id, f.afterId)];
    if (f.status) conds.push(eq(schedules.status, f.status));
    return readerOf(c)
      .select()
      .from(schedules)
      .where(and(...conds))
      .orderBy(asc(schedules.id))
      .limit(f.take);
  },
  async createSchedule(c, schedule, authorizers) {
    const tx = writerOf(c);
    await tx.insert(schedules).values(schedule);
    if (authorizers.length === 0) return;
    // Up to 1000 authorizers: one statement, each column bound as one array, in the order they were sent.
    const col = <K extends keyof (typeof authorizers)[number]>(k: K) => listOf(authorizers.map((a) => a[k]));
    await tx.execute(sql`
      INSERT INTO schedule_authorizers (schedule_id, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents, sealed)
      SELECT ${schedule.id}, authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents, sealed
        FROM unnest(${col('authorizerUniqueId')}::text[], ${col('paymentType')}::text[], ${col('routingNumber')}::text[],
                    ${col('phone')}::text[], ${col('zip')}::text[], ${col('metadata')}::text[], ${col('thresholdCents')}::bigint[],
                    ${col('sealed')}::text[]) WITH ORDINALITY
             AS v(authorizer_unique_id, payment_type, routing_number, phone, zip, metadata, threshold_cents, sealed, n)
       ORDER BY n`);
  },
  async updateSchedule(c, id, v) {
    await writerOf(c).update(schedules).set(v).where(eq(schedules.id, id));
  },
  async disableSchedule(c, id, now) {
    await writerOf(c).update(schedules).set({ status: 'DISABLED', nextRunAt: null, updatedAt: now }).where(eq(schedules.id, id));
  },
  async removeAuthorizers(c, scheduleId, authorizerUniqueIds) {
    if (authorizerUniqueIds.length === 0) return 0;
    const gone = await writerOf(c)
      .delete(scheduleAuthorizers)
      .where(and(eq(scheduleAuthorizers.scheduleId, scheduleId), inArray(scheduleAuthorizers.authorizerUniqueId, authorizerUniqueIds)))
      .returning({ id: scheduleAuthorizers.id });
    return gone.length;
  },

  async dueScheduleIds(c, now, limit) {
    // Off schedules_due_idx (status, next_run_at): O(due), not O(schedules).
    const due = await rows<{ id: string }>(
      readerOf(c),
      sql`SELECT id FROM schedules WHERE status = 'ACTIVE' AND next_run_at <= ${now} ORDER BY next_run_at, id LIMIT ${limit}`,
    );
    return due.map((r) => r.id);
  },
  async dueSchedule(c, id, now) {
    const [row] = await readerOf(c)
      .select()
      .from(schedules)
      .where(and(eq(schedules.id, id), eq(schedules.status, 'ACTIVE'), lte(schedules.nextRunAt, now)));
    return row;
  },
  async scheduleAuthorizers(c, scheduleId) {
    return readerOf(c).select().from(scheduleAuthorizers).where(eq(scheduleAuthorizers.scheduleId, scheduleId)).orderBy(asc(scheduleAuthorizers.id));
  },
  async recordRunStarted(c, id, dueAt, nextRunAt, now) {
    // One statement: a concurrent caller waits for this row, then finds the run no longer due at dueAt.
    const taken = await writerOf(c)
      .update(schedules)
      .set({ nextRunAt, status: nextRunAt === null ? 'COMPLETED' : 'ACTIVE', updatedAt: now })
      .where(and(eq(schedules.id, id), eq(schedules.status, 'ACTIVE'), eq(schedules.nextRunAt, dueAt)))
      .returning({ id: schedules.id });
    return taken.length > 0;
  },
  async recordRunCompleted(c, id, completedAt) {
    const [row] = await writerOf(c)
      .update(schedules)
      .set({ lastRunAt: completedAt })
      .where(eq(schedules.id, id))
      .returning({ webhook: schedules.webhook });
    return row?.webhook ?? null;
  },
  async openRunOf(c, scheduleId) {
    // The schedule's batches, off batches_schedule_idx: a run still going is not doubled.
    const [row] = await readerOf(c)
      .select({ id: batches.id })
      .from(batches)
      .where(and(eq(batches.scheduleId, scheduleId), inArray(batches.status, ['pending', 'processing'])))
      .limit(1);
    return row?.id;
  },
};
