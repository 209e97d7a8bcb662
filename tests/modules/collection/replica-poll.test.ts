// engine: postgres
// Polling the processors from two replicas on one PostgreSQL database (two runtimes in this process, each with
// its own REPLICA_ID), with a scripted processor whose pages the test releases:
// - a key's feed is read by the replica holding its lease: while replica A is in the middle of one key's page,
//   replica B skips that key and reads the other, from the cursor A left it at;
// - a page read from a cursor that moved meanwhile (A stalled past its lease, B took the key over and read on)
//   is discarded whole: nothing of it is ingested, the counts do not move and the cursor is not moved back.
import { describe, expect, test } from 'bun:test';
import { twoReplicas } from '../../helpers/context';
import { onPostgres } from '../../helpers/pg';
import { waitFor } from '../../helpers/server';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { Processors, type Processor } from '../../../src/adapters/processors';
import type { ChangePage, ProcessorChange } from '../../../src/adapters/processors/types';
import type { Deps } from '../../../src/deps';
import type { TestContext } from '../../helpers/context';

if (!onPostgres) {
  test('PostgreSQL: not applicable without DATABASE_URL=postgres://… (on SQLite one process polls; the collection tests cover it)', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const { a, b } = twoReplicas();

  type Replica = 'A' | 'B';
  interface Call {
    replica: Replica;
    key: string;
    cursor: string | null;
    /** The calls still unanswered when this one was made. */
    during: string[];
  }
  const calls: Call[] = [];
  const inFlight = new Set<string>();
  /** How a key's feed answers: by replica and cursor; by default, nothing new. */
  const scripts = new Map<string, (replica: Replica, cursor: string | null) => Promise<ChangePage>>();

  function processorOf(replica: Replica): Processor {
    const refuse = () => Promise.reject(new Error('not used by polling'));
    return {
      name: 'sandbox',
      verifyKey: refuse,
      tokenizeCard: refuse,
      createDebit: refuse,
      findPayment: refuse,
      listPayments: refuse,
      cancelPayment: refuse,
      async listChanges(key, cursor) {
        const tag = `${replica}:${key}`;
        calls.push({ replica, key, cursor, during: [...inFlight] });
        inFlight.add(tag);
        try {
          return await (scripts.get(key)?.(replica, cursor) ?? Promise.resolve({ changes: [], nextCursor: cursor, hasMore: false }));
        } finally {
          inFlight.delete(tag);
        }
      },
    } as Processor;
  }
  const depsOf = (c: TestContext, replica: Replica): Deps =>
    ({ ...c.rt, processors: new Processors({ sandbox: () => processorOf(replica), stripe: () => processorOf(replica) }) }) as Deps;
  const depsA = depsOf(a, 'A');
  const depsB = depsOf(b, 'B');

  let keys = 0;
  /** A lender with a sandbox key, registered through the API (the real sandbox checks it). */
  async function connection(): Promise<{ id: string; key: string }> {
    const key = `sbx_replica_poll_${String(++keys).padStart(8, '0')}`;
    const lender = a.newLender();
    const r = await a.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: key, rail_scope: 'both', is_default: true } });
    expect(r.status).toBe(201);
    return { id: r.body.id, key };
  }

  const connRow = async (id: string) => {
    const [r] = (await a.rt.pg!.sql`SELECT poll_cursor, ingested::int AS ingested, matched::int AS matched, last_poll_error FROM payment_connections WHERE id = ${id}`) as {
      poll_cursor: string | null;
      ingested: number;
      matched: number;
      last_poll_error: string | null;
    }[];
    return r!;
  };
  const ingestedOf = async (id: string) =>
    ((await a.rt.pg!.sql`SELECT processor_payment_id AS pid FROM ingested_payments WHERE connection_id = ${id} ORDER BY 1`) as { pid: string }[]).map((r) => r.pid);
  const leaseOf = async (id: string) => {
    const [r] = (await a.rt.pg!.sql`SELECT owner FROM leases WHERE name = ${`poll:${id}`}`) as { owner: string }[];
    return r?.owner ?? null;
  };

  function deferred() {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  }

  /** A change nobody's borrower made: it is ingested (counted) and matches nothing. */
  const change = (pid: string): ProcessorChange => ({
    sourceEventId: `evt_${pid}`,
    processorPaymentId: pid,
    reference: null,
    status: 'processing',
    amountCents: 1_000,
    returnCode: null,
    occurredAt: a.clock.now(),
    message: null,
  });

  describe('two replicas polling', () => {
    test('each key is read by one replica at a time, and two keys by two replicas at once', async () => {
      const one = await connection();
      const two = await connection();
      const releaseOne = deferred();
      scripts.set(one.key, async (replica, cursor) => {
        if (replica === 'A' && cursor === null) await releaseOne.promise;
        return { changes: [change(`${one.key}-1`)], nextCursor: 'one-1', hasMore: false };
      });
      scripts.set(two.key, async (_replica, cursor) => ({ changes: [change(`${two.key}-${cursor ?? 0}`)], nextCursor: `${cursor ?? ''}x`, hasMore: false }));

      const pollingA = pollProcessors(depsA);
      // A holds key one's page open, and has read key two and let it go.
      await waitFor("A inside key one's page, done with key two", async () =>
        inFlight.has(`A:${one.key}`) && (await connRow(two.id)).poll_cursor === 'x' && (await leaseOf(two.id)) === null,
      );
      expect(await leaseOf(one.id)).toBe('replica-a');

      const b1 = await pollProcessors(depsB);
      expect(b1).toMatchObject({ failures: 0, skipped: 1, discarded: 0 });
      const byB = calls.filter((c) => c.replica === 'B' && (c.key === one.key || c.key === two.key));
      // B read key two only, from where A left it, while A was still inside key one's page.
      expect(byB).toEqual([{ replica: 'B', key: two.key, cursor: 'x', during: [`A:${one.key}`] }]);
      expect((await connRow(two.id)).poll_cursor).toBe('xx');

      releaseOne.resolve();
      const a1 = await pollingA;
      expect(a1).toMatchObject({ failures: 0, skipped: 0, discarded: 0 });
      expect(await connRow(one.id)).toMatchObject({ poll_cursor: 'one-1', ingested: 1, last_poll_error: null });
      expect(await connRow(two.id)).toMatchObject({ poll_cursor: 'xx', ingested: 2, last_poll_error: null });
      expect(calls.filter((c) => c.key === one.key).map((c) => c.replica)).toEqual(['A']);
      expect(await leaseOf(one.id)).toBeNull();
      expect(await leaseOf(two.id)).toBeNull();
    });

    test('a page read from a cursor that moved meanwhile records nothing and does not move the cursor back', async () => {
      const k = await connection();
      const releaseA = deferred();
      scripts.set(k.key, async (replica, cursor) => {
        if (replica === 'A') {
          // A's page from the start, answered late; and what it would read next, were the page recorded.
          if (cursor === null) {
            await releaseA.promise;
            return { changes: [change('pi_1'), change('pi_only_a')], nextCursor: 'p1', hasMore: true };
          }
          return { changes: [], nextCursor: cursor, hasMore: false };
        }
        if (cursor === null) return { changes: [change('pi_1')], nextCursor: 'p1', hasMore: true };
        return { changes: [change('pi_2')], nextCursor: 'p2', hasMore: false };
      });

      const pollingA = pollProcessors(depsA);
      // (A polls the other tests' keys too: done with them, their leases let go.)
      await waitFor("A inside the key's first page, done with the other keys", async () => {
        const [other] = (await a.rt.pg!.sql`SELECT count(*)::int AS n FROM leases WHERE name <> ${`poll:${k.id}`}`) as { n: number }[];
        return inFlight.has(`A:${k.key}`) && other!.n === 0;
      });
      // A stalls past its lease: it expires, and B takes the key over and reads it to the end.
      await a.rt.pg!.sql`UPDATE leases SET until = 0 WHERE name = ${`poll:${k.id}`}`;
      const b1 = await pollProcessors(depsB);
      expect(b1).toMatchObject({ failures: 0, skipped: 0, discarded: 0 });
      const afterB = await connRow(k.id);
      expect(afterB).toMatchObject({ poll_cursor: 'p2', ingested: 2, matched: 0, last_poll_error: null });
      expect(await ingestedOf(k.id)).toEqual(['pi_1', 'pi_2']);

      // A's page arrives, read from a cursor that is no longer stored: discarded whole.
      releaseA.resolve();
      const a1 = await pollingA;
      expect(a1).toMatchObject({ failures: 0, discarded: 1 });
      expect(await connRow(k.id)).toEqual(afterB);
      expect(await ingestedOf(k.id)).toEqual(['pi_1', 'pi_2']);
      // A read no further page of the key, and let go of no lease it did not hold.
      expect(calls.filter((c) => c.key === k.key).map((c) => `${c.replica}:${c.cursor}`)).toEqual(['A:null', 'B:null', 'B:p1']);
      expect(await leaseOf(k.id)).toBeNull();
      expect(a.logs.join('')).toContain('page discarded: another poller moved the cursor meanwhile');
    });
  });
}
