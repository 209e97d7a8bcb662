// engine: both
import { describe, expect, test } from 'bun:test';
import { createTestContext, useTestContext } from '../helpers/context';
import { betweenSlices, JobRunner, type Job } from '../../src/platform/jobs';
import { HeldLease, releaseLease, takeLease } from '../../src/platform/leases';

const ctx = useTestContext();
let seq = 0;

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(e: unknown): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

interface JobStateRow {
  name: string;
  runs: number;
  failures: number;
  last_started_at: number | null;
  last_finished_at: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
}
const jobState = (name: string) => ctx.sql.query('SELECT * FROM job_state WHERE name = ?').get(name) as JobStateRow | null;

/** A job whose ticks are counted and, when `gate` is given, wait for it. */
function makeJob(opts: { intervalMs?: number; tick?: (signal: AbortSignal) => unknown } = {}) {
  const calls: number[] = [];
  const job: Job = {
    name: `test-job-${++seq}`,
    intervalMs: opts.intervalMs ?? 3_600_000,
    tick: (deps, signal) => {
      expect(deps).toBe(ctx.rt);
      expect(signal).toBeInstanceOf(AbortSignal);
      calls.push(ctx.clock.now());
      return opts.tick?.(signal);
    },
  };
  return { job, calls };
}

async function flush(times = 10) {
  for (let i = 0; i < times; i++) await Promise.resolve();
}

async function jobMetric(name: string, outcome: string): Promise<number> {
  const text = await ctx.rt.metrics.registry.metrics();
  const m = new RegExp(`^job_runs_total\\{job="${name}",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

describe('JobRunner', () => {
  test('start runs each job at once, records job_state and metrics; running reflects start/stop', async () => {
    const { job, calls } = makeJob();
    const runner = new JobRunner(ctx.rt, [job]);
    expect(runner.running).toBe(false);
    runner.start();
    expect(runner.running).toBe(true);
    await runner.runOnce(job); // the immediate run, still in flight
    expect(calls).toHaveLength(1);
    const row = jobState(job.name)!;
    expect(row).toMatchObject({ runs: 1, failures: 0, last_error: null, last_started_at: ctx.clock.now(), last_finished_at: ctx.clock.now() });
    expect(row.last_duration_ms).toBeGreaterThanOrEqual(0);
    expect(await jobMetric(job.name, 'success')).toBe(1);

    ctx.clock.advance(5_000);
    await runner.runOnce(job);
    expect(calls).toHaveLength(2);
    expect(jobState(job.name)).toMatchObject({ runs: 2, failures: 0, last_started_at: ctx.clock.now() });
    await runner.stop();
    expect(runner.running).toBe(false);
  });

  test('a throwing tick is counted as a failure, logged, and the next run clears last_error', async () => {
    let fail = true;
    const { job } = makeJob({
      tick: async () => {
        if (fail) throw new Error('provider exploded');
      },
    });
    const runner = new JobRunner(ctx.rt, [job]);
    runner.start();
    await runner.runOnce(job);
    expect(jobState(job.name)).toMatchObject({ runs: 1, failures: 1, last_error: 'provider exploded' });
    expect(await jobMetric(job.name, 'failure')).toBe(1);
    const line = ctx.logs
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => l.job === job.name);
    expect(line).toMatchObject({ level: 'error', msg: 'job failed', job: job.name });
    expect(line.err.message).toBe('provider exploded');

    // A synchronous throw is caught the same way.
    const { job: syncJob } = makeJob({
      tick: () => {
        throw new Error('sync failure');
      },
    });
    const runner2 = new JobRunner(ctx.rt, [syncJob]);
    runner2.start();
    await runner2.runOnce(syncJob);
    expect(jobState(syncJob.name)).toMatchObject({ runs: 1, failures: 1, last_error: 'sync failure' });
    await runner2.stop();

    // A non-Error throw is recorded as text.
    const { job: stringJob } = makeJob({
      tick: () => {
        throw 'plain text failure';
      },
    });
    const runner3 = new JobRunner(ctx.rt, [stringJob]);
    runner3.start();
    await runner3.runOnce(stringJob);
    expect(jobState(stringJob.name)).toMatchObject({ runs: 1, failures: 1, last_error: 'plain text failure' });
    await runner3.stop();

    fail = false;
    await runner.runOnce(job);
    expect(jobState(job.name)).toMatchObject({ runs: 2, failures: 1, last_error: null });
    expect(await jobMetric(job.name, 'success')).toBe(1);
    await runner.stop();
  });

  test('overlapping runOnce calls do not overlap: the second gets the same promise', async () => {
    let gate = deferred();
    let concurrent = 0;
    let maxConcurrent = 0;
    const { job, calls } = makeJob({
      tick: async () => {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        await gate.promise;
        concurrent--;
      },
    });
    const runner = new JobRunner(ctx.rt, [job]);
    runner.start(); // first tick starts and waits on the gate
    const p1 = runner.runOnce(job);
    const p2 = runner.runOnce(job);
    expect(p2).toBe(p1);
    await flush();
    expect(calls).toHaveLength(1);
    gate.resolve();
    await p1;
    expect(maxConcurrent).toBe(1);
    expect(jobState(job.name)!.runs).toBe(1);

    // Once finished, the next call is a new run.
    gate = deferred();
    const p3 = runner.runOnce(job);
    expect(p3).not.toBe(p1);
    expect(runner.runOnce(job)).toBe(p3);
    gate.resolve();
    await p3;
    expect(calls).toHaveLength(2);
    expect(jobState(job.name)!.runs).toBe(2);
    await runner.stop();
  });

  test('jobs are independent: one running does not hold another back', async () => {
    const gate = deferred();
    const slow = makeJob({ tick: () => gate.promise });
    const fast = makeJob();
    const runner = new JobRunner(ctx.rt, [slow.job, fast.job]);
    runner.start();
    await runner.runOnce(fast.job);
    expect(fast.calls).toHaveLength(1);
    expect(jobState(fast.job.name)!.runs).toBe(1);
    expect(jobState(slow.job.name)).toBeNull();
    gate.resolve();
    await runner.stop();
    expect(jobState(slow.job.name)!.runs).toBe(1);
  });

  test('stop() waits for a running tick, and nothing runs after it', async () => {
    const gate = deferred();
    let finished = false;
    let tickSignal: AbortSignal | null = null;
    const { job, calls } = makeJob({
      tick: async (signal) => {
        tickSignal = signal;
        await gate.promise;
        finished = true;
      },
    });
    const runner = new JobRunner(ctx.rt, [job]);
    runner.start();
    await flush();
    expect(calls).toHaveLength(1);

    let stopped = false;
    const stopping = runner.stop().then(() => {
      stopped = true;
    });
    await flush(20);
    expect(stopped).toBe(false);
    expect(finished).toBe(false);
    // The running tick is told to wind down...
    expect(tickSignal!.aborted).toBe(true);

    // ...and stop() resolves only once it has.
    gate.resolve();
    await stopping;
    expect(finished).toBe(true);
    expect(jobState(job.name)!.runs).toBe(1);

    await runner.runOnce(job);
    expect(calls).toHaveLength(1);
    expect(jobState(job.name)!.runs).toBe(1);
  });

  test('runOnce before start runs nothing', async () => {
    const { job, calls } = makeJob();
    const runner = new JobRunner(ctx.rt, [job]);
    await runner.runOnce(job);
    expect(calls).toHaveLength(0);
    expect(jobState(job.name)).toBeNull();
  });

  test('the scheduler repeats ticks on the interval and never overlaps a slow one', async () => {
    let gate = deferred();
    let concurrent = 0;
    let maxConcurrent = 0;
    const { job, calls } = makeJob({
      intervalMs: 10,
      tick: async () => {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        await gate.promise;
        concurrent--;
      },
    });
    const runner = new JobRunner(ctx.rt, [job]);
    runner.start();
    await Bun.sleep(80); // several intervals while the first tick is held
    expect(calls).toHaveLength(1);
    gate.resolve();
    gate = { promise: Promise.resolve(), resolve() {}, reject() {} };
    const deadline = Date.now() + 20_000;
    while (calls.length < 3 && Date.now() < deadline) await Bun.sleep(5);
    await runner.stop();
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(maxConcurrent).toBe(1);
    const n = calls.length;
    await Bun.sleep(40);
    expect(calls.length).toBe(n);
  });

  test('an exclusive job ticks as any other, slices and all, and leaves no lease behind (on SQLite the leases table is never touched)', async () => {
    let slices = 0;
    const { job, calls } = makeJob({
      tick: async () => {
        for (let i = 0; i < 3; i++) {
          slices++;
          await betweenSlices(ctx.rt);
        }
      },
    });
    const exclusive: Job = { ...job, exclusive: true };
    const runner = new JobRunner(ctx.rt, [exclusive]);
    runner.start();
    await runner.runOnce(exclusive);
    ctx.clock.advance(1_000);
    await runner.runOnce(exclusive);
    await runner.stop();
    expect(calls).toHaveLength(2);
    expect(slices).toBe(6);
    expect(jobState(job.name)).toMatchObject({ runs: 2, failures: 0, last_error: null });
    expect(await jobMetric(job.name, 'success')).toBe(2);
    expect(await jobMetric(job.name, 'skipped')).toBe(0);
    expect(ctx.sql.query('SELECT COUNT(*) AS n FROM leases').get()).toEqual({ n: 0 });
  });

  test('on SQLite every lease is granted at once, to any owner, without a row; on PostgreSQL one owner holds it', async () => {
    if (ctx.rt.pg) {
      // One process per file is SQLite's rule; on PostgreSQL a second owner waits for the lease to run out.
      expect(await takeLease(ctx.rt, 'job:pg-x', 'one', 30_000)).toBe(true);
      expect(await takeLease(ctx.rt, 'job:pg-x', 'two', 30_000)).toBe(false);
      await releaseLease(ctx.rt, 'job:pg-x', 'one');
      expect(await takeLease(ctx.rt, 'job:pg-x', 'two', 30_000)).toBe(true);
      await releaseLease(ctx.rt, 'job:pg-x', 'two');
      return;
    }
    expect(await takeLease(ctx.rt, 'job:x', 'one', 30_000)).toBe(true);
    expect(await takeLease(ctx.rt, 'job:x', 'two', 30_000)).toBe(true);
    const held = (await HeldLease.take(ctx.rt, 'poll:k', 'one', 1))!;
    expect(await held.keep()).toBe(true);
    await held.release();
    await releaseLease(ctx.rt, 'job:x', 'one');
    expect(ctx.sql.query('SELECT COUNT(*) AS n FROM leases').get()).toEqual({ n: 0 });
  });

  test('a wake-up runs the job at once; wake-ups during a tick make one more tick after it; none after stop', async () => {
    /** Turns of the event loop until `cond` holds (a tick's first steps await the write gate's turn). */
    const turnsUntil = async (cond: () => boolean) => {
      for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
      return cond();
    };
    let gate = deferred();
    const { job, calls } = makeJob({ tick: () => gate.promise });
    const runner = new JobRunner(ctx.rt, [job]);
    runner.start(); // the immediate tick, waiting on the gate; the next by the interval is an hour away
    expect(await turnsUntil(() => calls.length === 1)).toBe(true);
    const first = runner.runOnce(job);
    ctx.rt.wakeups!.wake(job.name);
    ctx.rt.wakeups!.wake(job.name);
    await flush();
    expect(calls).toHaveLength(1); // not beside the running tick
    gate.resolve();
    await first;
    // The tick the wake-ups asked for starts as the first ends, with no call of ours.
    expect(await turnsUntil(() => calls.length === 2)).toBe(true);
    expect(await turnsUntil(() => jobState(job.name)?.runs === 2)).toBe(true);
    expect(await turnsUntil(() => calls.length > 2)).toBe(false); // two wake-ups, one tick

    ctx.rt.wakeups!.wake(job.name); // idle: a tick now
    expect(await turnsUntil(() => calls.length === 3)).toBe(true);
    expect(await turnsUntil(() => jobState(job.name)?.runs === 3)).toBe(true);
    ctx.rt.wakeups!.wake('another-job');
    expect(await turnsUntil(() => calls.length > 3)).toBe(false);

    await runner.stop();
    ctx.rt.wakeups!.wake(job.name);
    expect(await turnsUntil(() => calls.length > 3)).toBe(false);
    expect(jobState(job.name)!.runs).toBe(3);
  });

  test('a failure to record job_state is logged, not thrown', async () => {
    const { job } = makeJob();
    const broken = createTestContext();
    try {
      broken.sql.exec('DROP TABLE job_state');
      const runner = new JobRunner(broken.rt, [{ ...job, tick: () => undefined }]);
      runner.start();
      await runner.runOnce(job);
      await runner.stop();
      expect(broken.logs.join('')).toContain('could not record job state');
    } finally {
      broken.close();
    }
  });
});
