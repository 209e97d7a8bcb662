import { AsyncTask, SimpleIntervalJob, ToadScheduler } from 'toad-scheduler';
import { gateOf } from './write-gate';
import { writeAlone } from './tx-lock';
import type { PlatformDeps } from './context';

/**
 * Between two slices of a job's work: a turn of the event loop (requests, timers and I/O go first), then the
 * write gate's turn, since the next slice writes at once. A job that works through many rows does so in
 * slices of a few milliseconds each, with this between them, so no job holds the loop for long.
 */
export async function betweenSlices(deps: Pick<PlatformDeps, 'sqlite' | 'pg'>): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  await gateOf(deps.pg ?? deps.sqlite).turn();
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
  /** `signal` aborts at shutdown: a long tick stops taking new work and finishes what it holds. */
  tick(deps: D, signal: AbortSignal): Promise<unknown> | unknown;
}

/**
 * Runs jobs on toad-scheduler without overlap (a tick that is still running is not started again),
 * records every run in `job_state`, counts failures in metrics and logs them. `stop()` waits for running
 * ticks to finish.
 */
export class JobRunner<D extends PlatformDeps = PlatformDeps> {
  private readonly scheduler = new ToadScheduler();
  private readonly inFlight = new Map<string, Promise<void>>();
  private stopped = true;
  private readonly abort = new AbortController();

  constructor(
    private readonly deps: D,
    private readonly jobs: Job<D>[],
  ) {}

  get running(): boolean {
    return !this.stopped;
  }

  start(): void {
    this.stopped = false;
    for (const job of this.jobs) {
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
    const p = this.execute(job).finally(() => this.inFlight.delete(job.name));
    this.inFlight.set(job.name, p);
    return p;
  }

  private async execute(job: Job<D>): Promise<void> {
    if (this.stopped) return;
    const { sqlite, pg, clock, metrics, logger } = this.deps;
    const startedAt = clock.now();
    const t0 = performance.now();
    let error: unknown = null;
    const gate = gateOf(pg ?? sqlite);
    try {
      // A tick's first steps write at once: they start once a worker's write transaction, if any, is over.
      await gate.turn();
      await job.tick(this.deps, this.abort.signal);
    } catch (e) {
      error = e;
    }
    const ms = performance.now() - t0;
    metrics.jobRuns.inc({ job: job.name, outcome: error ? 'failure' : 'success' });
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
    this.abort.abort();
    this.scheduler.stop();
    await Promise.allSettled([...this.inFlight.values()]);
  }
}
