// engine: postgres
// Jobs that one replica at a time must do, on one PostgreSQL database shared by two replicas (two runtimes in
// this process, each with its own REPLICA_ID and pool):
// - a lease is one conditional statement: of two owners one holds it, its owner renews it, only its owner
//   lets it go, and another takes it over only once it has expired by the server's clock, never before;
// - an exclusive job's tick never runs on both replicas at once (ticks in flight counted with a shared
//   counter), the replica that does not get the lease skips its tick and counts it as skipped, not failed;
// - a replica killed holding a job's lease holds the job up until the lease expires, and no longer;
// - a tick whose lease passed to another replica stops at its next slice, counted as lease_lost.
import { describe, expect, test } from 'bun:test';
import { twoReplicas } from '../helpers/context';
import { onPostgres } from '../helpers/pg';
import { waitFor } from '../helpers/server';
import { betweenSlices, jobLeaseMs, JobRunner, type Job } from '../../src/platform/jobs';
import { releaseLease, takeLease } from '../../src/platform/leases';
import type { Runtime } from '../../src/runtime';

if (!onPostgres) {
  test('PostgreSQL: not applicable without DATABASE_URL=postgres://… (on SQLite one process serves the file; tests/platform/jobs.test.ts covers it)', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const { a, b } = twoReplicas();

  let seq = 0;
  const leaseRow = async (name: string) => {
    const [r] = (await a.rt.pg!.sql`SELECT owner, until::float8 AS until FROM leases WHERE name = ${name}`) as { owner: string; until: number }[];
    return r ?? null;
  };

  async function metric(rt: Runtime, job: string, outcome: string): Promise<number> {
    const text = await rt.metrics.registry.metrics();
    const m = new RegExp(`^job_runs_total\\{job="${job}",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  }

  function deferred() {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  }

  describe('a lease', () => {
    test('one owner holds it; its owner renews it; only its owner lets it go', async () => {
      const name = `test:${++seq}`;
      expect(await takeLease(a.rt, name, 'replica-a', 60_000)).toBe(true);
      expect(await takeLease(b.rt, name, 'replica-b', 60_000)).toBe(false);
      const first = (await leaseRow(name))!;
      expect(await takeLease(a.rt, name, 'replica-a', 120_000)).toBe(true);
      const renewed = (await leaseRow(name))!;
      expect(renewed.owner).toBe('replica-a');
      expect(renewed.until).toBeGreaterThan(first.until);
      // Not the owner: nothing happens.
      await releaseLease(b.rt, name, 'replica-b');
      expect(await takeLease(b.rt, name, 'replica-b', 60_000)).toBe(false);
      await releaseLease(a.rt, name, 'replica-a');
      expect(await leaseRow(name)).toBeNull();
      expect(await takeLease(b.rt, name, 'replica-b', 60_000)).toBe(true);
      expect((await leaseRow(name))!.owner).toBe('replica-b');
    });

    test('20 owners asking at once: exactly one gets it', async () => {
      const name = `test:${++seq}`;
      const got = await Promise.all(Array.from({ length: 20 }, (_, i) => takeLease(i % 2 ? a.rt : b.rt, name, `owner-${i}`, 60_000)));
      expect(got.filter(Boolean).length).toBe(1);
      expect((await leaseRow(name))!.owner).toBe(`owner-${got.indexOf(true)}`);
    });

    test('an expired lease is taken over by the next asker, and not before it expired', async () => {
      const name = `test:${++seq}`;
      const TTL = 1_500;
      expect(await takeLease(a.rt, name, 'replica-a', TTL)).toBe(true);
      const held = (await leaseRow(name))!;
      let refused = 0;
      await waitFor('replica-b takes the expired lease', async () => {
        if (await takeLease(b.rt, name, 'replica-b', 60_000)) return true;
        refused++;
        return false;
      });
      expect(refused).toBeGreaterThan(0);
      const taken = (await leaseRow(name))!;
      expect(taken.owner).toBe('replica-b');
      // Taken at the server's time `taken.until - 60 s`, which is at or after the moment the first one expired.
      expect(taken.until - 60_000).toBeGreaterThanOrEqual(held.until);
    });
  });

  describe('an exclusive job', () => {
    test('a tick runs on one replica at a time: the other skips it, counted as skipped and not as a failure', async () => {
      const ROUNDS = 10;
      let active = 0;
      let most = 0;
      let ticks = 0;
      let gate = deferred();
      const job: Job = {
        name: `exclusive-${++seq}`,
        intervalMs: 3_600_000,
        exclusive: true,
        tick: async () => {
          ticks++;
          active++;
          most = Math.max(most, active);
          await gate.promise;
          active--;
        },
      };
      const ra = new JobRunner(a.rt, [job]);
      const rb = new JobRunner(b.rt, [job]);
      // Started so runOnce runs (the scheduler's own ticks for an hourly job are the first round's).
      ra.start();
      rb.start();
      const skipped = async () => (await metric(a.rt, job.name, 'skipped')) + (await metric(b.rt, job.name, 'skipped'));
      for (let round = 1; round <= ROUNDS; round++) {
        const both = Promise.all([ra.runOnce(job), rb.runOnce(job)]);
        // One tick holds the lease and waits; the other replica's tick has been refused it.
        await waitFor('one tick running and one skipped', async () => ticks === round && (await skipped()) === round);
        expect(active).toBe(1);
        gate.resolve();
        await both;
        gate = deferred();
      }
      await ra.stop();
      await rb.stop();
      expect(most).toBe(1);
      expect(ticks).toBe(ROUNDS);
      expect(await skipped()).toBe(ROUNDS);
      expect((await metric(a.rt, job.name, 'failure')) + (await metric(b.rt, job.name, 'failure'))).toBe(0);
      expect((await metric(a.rt, job.name, 'success')) + (await metric(b.rt, job.name, 'success'))).toBe(ROUNDS);
      // job_state is the system's: the runs of both replicas, skips not among them; the lease let go.
      const [state] = (await a.rt.pg!.sql`SELECT runs::int AS runs, failures::int AS failures FROM job_state WHERE name = ${job.name}`) as { runs: number; failures: number }[];
      expect(state).toEqual({ runs: ROUNDS, failures: 0 });
      expect(await leaseRow(`job:${job.name}`)).toBeNull();
    });

    test('both replicas ticking on their own schedule: never two ticks at once', async () => {
      let active = 0;
      let most = 0;
      let ticks = 0;
      const job: Job = {
        name: `exclusive-${++seq}`,
        intervalMs: 20,
        exclusive: true,
        tick: async (deps) => {
          ticks++;
          active++;
          most = Math.max(most, active);
          // A few slices, each a round trip to the server.
          for (let i = 0; i < 3; i++) {
            await deps.pg!.sql`SELECT 1`;
            await betweenSlices(deps);
          }
          active--;
        },
      };
      const ra = new JobRunner(a.rt, [job]);
      const rb = new JobRunner(b.rt, [job]);
      ra.start();
      rb.start();
      await waitFor('30 ticks', async () => ticks >= 30, 60_000);
      await ra.stop();
      await rb.stop();
      expect(most).toBe(1);
      expect(active).toBe(0);
    });

    test("a killed replica's lease holds the job until it expires, then another replica runs it", async () => {
      let ticks = 0;
      let heldAtTick: { owner: string; until: number } | null = null;
      const job: Job = {
        name: `exclusive-${++seq}`,
        intervalMs: 3_600_000,
        exclusive: true,
        tick: async () => {
          ticks++;
          heldAtTick = await leaseRow(`job:${job.name}`);
        },
      };
      // Replica A took the job's lease and was killed mid-tick: nothing lets it go.
      expect(await takeLease(a.rt, `job:${job.name}`, 'replica-a', 3_600_000)).toBe(true);
      const rb = new JobRunner(b.rt, [job]);
      rb.start();
      await rb.runOnce(job);
      expect(ticks).toBe(0);
      expect(await metric(b.rt, job.name, 'skipped')).toBeGreaterThan(0);
      // Its time passes (moved on the server, so no test waits for it): the lease ran out a moment ago.
      await a.rt.pg!.sql`UPDATE leases SET until = (extract(epoch from clock_timestamp()) * 1000)::bigint - 1 WHERE name = ${`job:${job.name}`}`;
      const dead = (await leaseRow(`job:${job.name}`))!;
      await waitFor('replica-b runs the job', async () => {
        await rb.runOnce(job);
        return ticks > 0;
      });
      await rb.stop();
      expect(ticks).toBe(1);
      // B held it from a moment at or after A's lease ran out, and let it go after its tick.
      expect(heldAtTick!.owner).toBe('replica-b');
      expect(heldAtTick!.until - jobLeaseMs(job)).toBeGreaterThanOrEqual(dead.until);
      expect(await leaseRow(`job:${job.name}`)).toBeNull();
      expect(await metric(b.rt, job.name, 'failure')).toBe(0);
    });

    test('a tick whose lease passed to another replica stops at its next slice, counted as lease_lost', async () => {
      let slices = 0;
      const stolen = deferred();
      const job: Job = {
        name: `exclusive-${++seq}`,
        intervalMs: 3_600_000,
        exclusive: true,
        // Renewed at every slice (a third of 1 ms passes between any two).
        leaseMs: 1,
        tick: async (deps, signal) => {
          for (let i = 0; i < 10 && !signal.aborted; i++) {
            slices++;
            if (i === 2) await stolen.promise;
            await betweenSlices(deps);
          }
        },
      };
      const ra = new JobRunner(a.rt, [job]);
      ra.start();
      const running = ra.runOnce(job);
      await waitFor('the third slice', async () => slices === 3);
      // A stalled past its lease and replica B took the job over.
      await a.rt.pg!.sql`UPDATE leases SET owner = 'replica-b', until = until + 3600000 WHERE name = ${`job:${job.name}`}`;
      stolen.resolve();
      await running;
      await ra.stop();
      expect(slices).toBe(3);
      expect(await metric(a.rt, job.name, 'lease_lost')).toBe(1);
      expect(await metric(a.rt, job.name, 'failure')).toBe(0);
      // B's lease is B's: A did not let it go.
      expect((await leaseRow(`job:${job.name}`))!.owner).toBe('replica-b');
    });
  });
}
