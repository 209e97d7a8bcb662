import type { ScheduleStatus } from '../../../db/schema/enums';
import type { scheduleAuthorizers, schedules } from '../../../db/schema';
import type { StoreCtx, TxCtx } from '../../platform/store';

export type ScheduleRow = typeof schedules.$inferSelect;
export type ScheduleAuthorizerRow = typeof scheduleAuthorizers.$inferSelect;
/** One authorizer of a new schedule, its sensitive fields sealed. */
export type NewScheduleAuthorizer = Omit<ScheduleAuthorizerRow, 'id' | 'scheduleId'>;

export interface ScheduleStore {
  /** The lender's schedule, if it has one with this id. */
  scheduleOf(c: StoreCtx, lenderId: string, id: string): Promise<ScheduleRow | undefined>;
  /**
   * The lender's schedule, held until the transaction ends (a row lock on PostgreSQL): a change that reads the
   * schedule before it writes (an update, disabling it, removing authorizers, a run now) waits for another
   * change of the same schedule to end, then reads what that one left. On SQLite, where one transaction
   * writes at a time, the same read as scheduleOf.
   */
  lockSchedule(c: TxCtx, lenderId: string, id: string): Promise<ScheduleRow | undefined>;
  /**
   * Called first in a transaction that checks a schedule name is free and then writes it: such transactions of
   * one lender run one after the other, so the check holds until the write. Nothing to do on SQLite.
   */
  serializeScheduleNames(c: TxCtx, lenderId: string): Promise<void>;
  /** How many authorizers each schedule has, in the order of the ids. */
  authorizerCounts(c: StoreCtx, scheduleIds: string[]): Promise<number[]>;
  /** Whether another of the lender's schedules has this name. */
  nameTaken(c: StoreCtx, lenderId: string, name: string, exceptId?: string): Promise<boolean>;
  /** The lender's schedules after `afterId`, by id, filtered by status. */
  listSchedules(c: StoreCtx, f: { lenderId: string; status?: ScheduleStatus; afterId: string; take: number }): Promise<ScheduleRow[]>;
  /** A new schedule and its authorizers (up to 1000). */
  createSchedule(c: TxCtx, schedule: ScheduleRow, authorizers: NewScheduleAuthorizer[]): Promise<void>;
  /** New name or timing; next_run_at recomputed. */
  updateSchedule(
    c: TxCtx,
    id: string,
    v: Pick<ScheduleRow, 'name' | 'intervalDays' | 'timeOfDay' | 'expiresAt' | 'updatedAt' | 'nextRunAt'>,
  ): Promise<void>;
  /** No further runs. */
  disableSchedule(c: TxCtx, id: string, now: number): Promise<void>;
  /** Removes the schedule's authorizers with these ids; how many there were. */
  removeAuthorizers(c: TxCtx, scheduleId: string, authorizerUniqueIds: string[]): Promise<number>;

  // Runs.
  /** Due ACTIVE schedules, read off the due index only: the check costs O(due), not O(schedules). */
  dueScheduleIds(c: StoreCtx, now: number, limit: number): Promise<string[]>;
  /** The schedule if it is still ACTIVE and due at `now`. */
  dueSchedule(c: StoreCtx, id: string, now: number): Promise<ScheduleRow | undefined>;
  /** A schedule's current authorizers, in the order they were added (at most 1000). */
  scheduleAuthorizers(c: StoreCtx, scheduleId: string): Promise<ScheduleAuthorizerRow[]>;
  /**
   * A run starts: takes the run due at `dueAt`, if the schedule is still ACTIVE and that run is still its
   * next, and moves it on to `nextRunAt` (COMPLETED when there is none), in one conditional statement. False
   * when the run was taken already (another run started it, the schedule was changed or disabled): a due
   * run starts once, however many callers try at once.
   */
  recordRunStarted(c: TxCtx, id: string, dueAt: number, nextRunAt: number | null, now: number): Promise<boolean>;
  /** A run's batch completed: last_run_at; the schedule's webhook, if any. */
  recordRunCompleted(c: TxCtx, id: string, completedAt: number): Promise<string | null>;
  /** A batch of this schedule still pending or processing, if any. */
  openRunOf(c: StoreCtx, scheduleId: string): Promise<string | undefined>;
}

