// engine: postgres
// PostgreSQL out of reach under load: every API request is answered 503 SERVICE_UNAVAILABLE with Retry-After,
// never 500 (a client removing a borrower can tell that it should send the request again), and the service
// answers again by itself once the server is back. The server is taken away by cutting a proxy in front of it.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../helpers/context';
import { onPostgres } from '../helpers/pg';
import { pgBehindProxy } from '../helpers/tcp-proxy';
import { waitFor } from '../helpers/server';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';

if (!onPostgres) {
  test('PostgreSQL unreachable: not applicable without DATABASE_URL=postgres://…', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const { proxy, url, stop } = await pgBehindProxy();
  const c = createTestContext({ DATABASE_URL: url, DATABASE_POOL_MAX: '4' });
  afterAll(() => {
    c.close();
    stop();
  });

  type Answer = { status: number; retryAfter: string | null; code: string | undefined; path: string };

  /** One of each kind of request a lender sends: reads, a removal, a balance request, an enrollment. */
  function burst(round: number): Promise<Answer>[] {
    const calls: [string, string, unknown?][] = [
      ['GET', '/v1/payment_enrollments'],
      ['GET', '/v1/payment_enrollments/held-1'],
      ['GET', '/v1/payment_connections'],
      ['DELETE', '/v1/payment_enrollments', { authorizer_unique_ids: [`held-${round % 3}`] }],
      ['POST', '/v1/balance_requests', { authorizers: [bankAuthorizer(`outage-${round}`)] }],
      ['POST', '/v1/payment_enrollments', { borrowers: [enrollBorrower(`late-${round}`)] }],
      ['GET', '/v1/collection_policy'],
    ];
    return calls.map(async ([method, path, body]) => {
      const res = await c.request(method, path, body === undefined ? {} : { body });
      const text = await res.text();
      let code: string | undefined;
      try {
        code = JSON.parse(text)?.error?.code;
      } catch {
        /* not JSON */
      }
      return { status: res.status, retryAfter: res.headers.get('retry-after'), code, path: `${method} ${path}` };
    });
  }

  describe('PostgreSQL unreachable', () => {
    test('under load every answer is what it would be, or a 503 with Retry-After; never a 500; answered again once it is back', async () => {
      expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [0, 1, 2].map((i) => enrollBorrower(`held-${i}`)) } })).status).toBe(207);
      const answers: Promise<Answer>[] = [];
      for (let round = 0; round < 4; round++) answers.push(...burst(round));
      // Cut while those are in flight, then more arrive while it is down.
      await proxy.cut();
      for (let round = 4; round < 12; round++) answers.push(...burst(round));
      const all = await Promise.all(answers);
      const unavailable = all.filter((a) => a.status === 503);
      expect(all.filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);
      expect(unavailable.length).toBeGreaterThan(0);
      for (const a of unavailable) {
        expect(a.code).toBe('SERVICE_UNAVAILABLE');
        expect(Number(a.retryAfter)).toBeGreaterThan(0);
      }
      // Every request sent while it was down was refused as unavailable.
      expect(all.slice(4 * 7).every((a) => a.status === 503)).toBe(true);
      // Back: the pool connects again by itself, and a removal sent again is answered.
      await proxy.restore();
      await waitFor('the service to answer again', async () => (await c.request('GET', '/v1/payment_connections')).status === 200);
      const removal = await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['held-0', 'held-1', 'held-2'] } });
      expect(removal.status).toBe(200);
      expect(removal.body.removed + removal.body.not_monitored).toBe(3);
    });
  });
}
