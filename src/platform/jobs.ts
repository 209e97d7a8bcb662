import { AsyncLocalStorage } from 'node:async_hooks';
import { AsyncTask, SimpleIntervalJob, ToadScheduler } from 'toad-scheduler';
import { writeAlone } from './tx-lock';
import { HeldLease, LeaseLostError } from './leases';
import type { PlatformDeps, TransactionsSlot } from './context';
import { isDatabaseUnavailable } from './db-unavailable';
import { yieldNow } from './slices';

/** The lease of the one-at-a-time tick running in this async context, renewed between its slices. */
const tickLease = new AsyncLocalStorage<HeldLease>();

/**
 * Between two slices of a job's work: a turn of the event loop (requests, timers and I/O go first), then the
 * write gate's turn, since the next slice writes at once. A job that works through many rows does so in
 * slices of a few milliseconds each, with this between them, so no job holds the loop for long.
 */
export async function betweenSlices(deps: TransactionsSlot): Promise<void> {
  await yieldNow();
  await deps.engine.transactions.gate.turn();
  // In a one-at-a-time tick (PostgreSQL): the lease renewed before the next slice, or the tick stops here.
  const lease = tickLease.getStore();
  if (lease) await lease.keepOrThrow();
}

/** A job's run, counted in job_state (the same statement on both engines, with `?n` for SQLite). */
const RECORD_RUN = `INSERT INTO job_state (name, runs, failures, last_started_at, last_finished_at, last_duration_ms, last_error)
  VALUES ($1, 1, $2, $3, $4, $5, $6)
  ON CONFLICT(name) DO UPDATE SET runs = job_state.runs + 1, failures = job_state.failures + $2, last_started_at = $3,
    last_finished_at = $4, last_duration_ms = $5, last_error = $6`;

/** A job is a plain function of the platform; the runner only decides when it is called. */
export interface Job<D extends PlatformDeps = PlatformDeps> {
  name: string;
  intervalMs: number;
  /**
   * One replica at a time (PostgreSQL, several replicas on one database): a tick runs only on the replica that
   * takes the lease `job:<name>`, and is skipped on the others. For work that two replicas doing at once would
   * do twice or wrong; work claimed row by row (FOR UPDATE SKIP LOCKED) or taken by one conditional statement
   * runs on every replica. Nothing changes on SQLite (one process).
   */
  exclusive?: boolean;
  /** How long the lease of an exclusive tick lasts without renewal; by default jobLeaseMs. */
  leaseMs?: number;
  /** `signal` aborts at shutdown: a long tick stops taking new work and finishes what it holds. */
  tick(deps: D, signal: AbortSignal): Promise<unknown> | unknown;
}

/**
 * An exclusive job's lease: three intervals, at least 30 s and at most 10 minutes. It is renewed between the
 * tick's slices (betweenSlices), so it only has to outlast one slice; a replica killed mid-tick holds the job
 * up for at most this long.
 */
export const jobLeaseMs = (job: Pick<Job, 'intervalMs' | 'leaseMs'>): number => job.leaseMs ?? Math.min(Math.max(30_000, 3 * job.intervalMs), 600_000);

/**
 * Runs jobs on toad-scheduler without overlap (a tick that is still running is not started again),
 * records every run in `job_state`, counts failures in metrics and logs them. `stop()` waits for running
 * ticks to finish. On PostgreSQL an exclusive job's tick first takes its lease (owner: this replica): a tick
 * that does not get it is skipped, counted as `job_runs_total{outcome="skipped"}` and not recorded as a run;
 * one whose lease passed to another replica mid-tick stops at its next slice (`outcome="lease_lost"`). Neither
 * is a failure.
 */
export class JobRunner<D extends PlatformDeps = PlatformDeps> {
  private readonly scheduler = new ToadScheduler();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Jobs woken while a tick of theirs ran: that tick may have looked before the work was there, so one more. */
  private readonly wokenDuring = new Set<string>();
  private readonly unlisten: (() => void)[] = [];
  private stopped = true;
  private readonly abort = new AbortController();
  /** The bodies of the ticks running now (not those waiting for the database to come back). */
  private readonly bodies = new Set<Promise<unknown>>();
  /** The database was found out of reach: what this process claimed is let go before anything is claimed again. */
  private outage = false;
  private recovering: Promise<boolean> | null = null;

  /**
   * `afterOutage`: what the start does with this replica's own claims (let go, to be claimed again). Run when
   * the database answers again after an outage, once every tick that was running through it has ended and
   * before any tick claims again: a claim whose finish never reached the database is not left waiting for its
   * lease to run out, and no work of this process still holds one of them.
   */
  constructor(
    private readonly deps: D,
    private readonly jobs: Job<D>[],
    private readonly opts: { afterOutage?: () => Promise<unknown> } = {},
  ) {}

  /** The database was found out of reach (a job's statement, a request's). */
  noteOutage(): void {
    this.outage = true;
  }

  /** After an outage: true once the database answered the release, false while it is still out of reach. */
  private recover(): Promise<boolean> {
    this.recovering ??= (async () => {
      try {
        // The ticks that ran through the outage end first (their statements fail at once while it lasts).
        await Promise.allSettled([...this.bodies]);
        await this.opts.afterOutage?.();
        this.outage = false;
        this.deps.logger.info('the database answers again: this replica’s unfinished claims were let go, to be claimed again');
        return true;
      } catch (e) {
        if (!isDatabaseUnavailable(e)) this.deps.logger.error({ err: e }, 'could not let go of this replica’s claims after an outage');
        return false;
      } finally {
        this.recovering = null;
      }
    })();
    return this.recovering;
  }

  get running(): boolean {
    return !this.stopped;
  }

  start(): void {
    this.stopped = false;
    for (const job of this.jobs) {
      // Work queued for the job (deps.wakeups) runs it now rather than at its next tick.
      if (this.deps.wakeups) this.unlisten.push(this.deps.wakeups.on(job.name, () => this.wake(job)));
      const task = new AsyncTask(job.name, () => this.runOnce(job));
      this.scheduler.addSimpleIntervalJob(
        new SimpleIntervalJob({ milliseconds: job.intervalMs, runImmediately: true }, task, { id: job.name, preventOverrun: true }),
      );
    }
  }

  /** Runs one tick of the job now unless one is already running (then waits for that one). */
  runOnce(job: Job<D>): Promise<void> {
    const current = this.inFlight.get(job.name);
    if (current) return current;
    const p = this.execute(job).finally(() => {
      this.inFlight.delete(job.name);
      if (this.wokenDuring.delete(job.name)) this.wake(job);
    });
    this.inFlight.set(job.name, p);
    return p;
  }

  /** A tick now, or once the running one ends: wake-ups meanwhile make one tick, not one each. */
  private wake(job: Job<D>): void {
    if (this.stopped) return;
    if (this.inFlight.has(job.name)) this.wokenDuring.add(job.name);
    else void this.runOnce(job).catch(() => undefined);
  }

  private async execute(job: Job<D>): Promise<void> {
    if (this.stopped) return;
    const { sqlite, pg, clock, metrics, logger, config } = this.deps;
    if (this.outage && !(await this.recover())) {
      // Still out of reach: nothing is claimed, and the next tick asks again.
      metrics.jobRuns.inc({ job: job.name, outcome: 'skipped' });
      return;
    }
    let lease: HeldLease | null = null;
    if (job.exclusive && pg) {
      try {
        lease = await HeldLease.take(this.deps, `job:${job.name}`, config.replicaId, jobLeaseMs(job));
      } catch (e) {
        metrics.jobRuns.inc({ job: job.name, outcome: 'failure' });
        logger.error({ job: job.name, err: e }, 'could not take the job lease');
        return;
      }
      if (!lease) {
        // Another replica runs it now: not a run of this one, and not a failure.
        metrics.jobRuns.inc({ job: job.name, outcome: 'skipped' });
        logger.debug({ job: job.name }, 'job skipped: another replica holds its lease');
        return;
      }
    }
    const startedAt = clock.now();
    const t0 = performance.now();
    let error: unknown = null;
    const gate = this.deps.engine.transactions.gate;
    try {
      // A tick's first steps write at once: they start once a worker's write transaction, if any, is over.
      await gate.turn();
      const held = lease;
      const body = Promise.resolve(
        held ? tickLease.run(held, () => job.tick(this.deps, AbortSignal.any([this.abort.signal, held.signal]))) : job.tick(this.deps, this.abort.signal),
      );
      this.bodies.add(body);
      try {
        await body;
      } finally {
        this.bodies.delete(body);
      }
    } catch (e) {
      error = e;
      if (isDatabaseUnavailable(e)) this.noteOutage();
    }
    if (lease) {
      try {
        await lease.release();
      } catch (e) {
        logger.warn({ job: job.name, err: e }, 'could not release the job lease; it expires on its own');
      }
    }
    // Stopped at a slice because the lease passed on (a replica stalled past its lease): not a failure.
    const lost = error instanceof LeaseLostError || (error === null && lease?.signal.aborted === true);
    if (lost) {
      logger.warn({ job: job.name }, 'job stopped: its lease passed to another replica');
      error = null;
    }
    const ms = performance.now() - t0;
    metrics.jobRuns.inc({ job: job.name, outcome: lost ? 'lease_lost' : error ? 'failure' : 'success' });
    metrics.jobDuration.observe({ job: job.name }, ms / 1000);
    const message = error ? (error instanceof Error ? error.message : String(error)) : null;
    if (error) logger.error({ job: job.name, err: error }, 'job failed');
    try {
      const values = [job.name, error ? 1 : 0, startedAt, clock.now(), Math.round(ms), message] as const;
      if (pg) await pg.sql.unsafe(RECORD_RUN, [...values]);
      // In its turn, after any transaction open on the connection.
      else await writeAlone(sqlite, () =>
        sqlite
          .query(RECORD_RUN.replace(/\$(\d)/g, '?$1'))
          .run(...values),
      );
    } catch (e) {
      logger.error({ job: job.name, err: e }, 'could not record job state');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const off of this.unlisten.splice(0)) off();
    this.abort.abort();
    this.scheduler.stop();
    await Promise.allSettled([...this.inFlight.values()]);
  }
}
