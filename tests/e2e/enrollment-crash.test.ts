// engine: both
// A spawned server killed (SIGKILL) while it handles a 1000-borrower enrollment loses no borrower that got a
// 207 and half-writes none: the request is one transaction, so after a restart either every borrower of it
// is stored or none is.
import { afterAll, describe, expect, test } from 'bun:test';
import { ServiceHarness, TEST_API_KEY } from '../helpers/server';
import { enrollBorrower } from '../helpers/fixtures';

const harnesses: ServiceHarness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.cleanup();
});

const stored = (h: ServiceHarness, prefix: string): number => {
  const db = h.database();
  try {
    return (db.query("SELECT COUNT(*) AS n FROM enrollments WHERE authorizer_unique_id LIKE ? || '%'").get(prefix) as { n: number }).n;
  } finally {
    db.close();
  }
};

describe('crash during an enrollment', () => {
  test('killed at several points of 1000-borrower requests: each request is all stored or none, and every 207 is kept', async () => {
    const h = new ServiceHarness();
    harnesses.push(h);
    const outcomes: { prefix: string; answered: boolean }[] = [];
    // Kill after growing delays, so some kills land before the commit and some after it.
    for (const delayMs of [5, 20, 40, 80, 160, 400]) {
      const svc = await h.start();
      const prefix = `crash-${delayMs}-`;
      const body = JSON.stringify({ borrowers: Array.from({ length: 1000 }, (_, i) => enrollBorrower(`${prefix}${i}`)) });
      const pending = fetch(`${svc.url}/v1/payment_enrollments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' },
        body,
      })
        .then(async (r) => (r.status === 207 ? ((await r.json()) as { enrolled: number }).enrolled === 1000 : false))
        .catch(() => false);
      await Bun.sleep(delayMs);
      await svc.kill('SIGKILL');
      outcomes.push({ prefix, answered: await pending });
    }
    const again = await h.start();
    for (const o of outcomes) {
      const n = stored(h, o.prefix);
      expect([0, 1000]).toContain(n);
      if (o.answered) expect(n).toBe(1000);
    }
    // The service works on after the crashes: a request sent again completes.
    const retry = await again.call('POST', '/v1/payment_enrollments', { borrowers: [enrollBorrower(`${outcomes[0]!.prefix}0`)] });
    expect(retry.status).toBe(207);
    expect(['enrolled', 'updated']).toContain(retry.body.results[0].outcome);
  });
});
