// A request that will be refused is refused before its body is read. Over real connections (raw sockets that
// send a body's first 64 KB and then nothing more, so any answer is one given without the rest): a lender
// at its bound on authorizers waiting, a key over its rate and a body declared over its route's limit are each
// answered at once; a lender's large bodies in flight are bounded, the ones past the bound refused unread (429
// with Retry-After) while the admitted ones are still arriving; and a spawned service under 60 CSVs of 4.6 MB at
// once from one key keeps answering /healthz with its peak memory well under 500 MB.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../helpers/context';
import { bankAuthorizer } from '../helpers/fixtures';
import { rawConnect, type RawConnection, type RawResponse } from '../helpers/raw-http';
import { ServiceHarness, TEST_API_KEY } from '../helpers/server';
import { burst, largeCsvBody, longestGap, peakRss, poll } from '../helpers/body-burst';
import { LARGE_BODIES_PER_LENDER } from '../../src/http/admission';
import { MULTIPART_OVERHEAD_BYTES } from '../../src/http/body';

const FIRST = 64 * 1024;
const CSV = largeCsvBody(5000, 'burst');
/** The balance CSV route's limit on a body (routes.ts: a 5 MB file and its multipart framing). */
const CSV_BODY_LIMIT = 5 * 1024 * 1024 + MULTIPART_OVERHEAD_BYTES;

const contexts: TestContext[] = [];
afterAll(async () => {
  for (const c of contexts) {
    await c.app.stop(true);
    c.close();
  }
});

/** A context whose app listens on 127.0.0.1, as the service does: its port. */
function listening(env: Record<string, string> = {}): { c: TestContext; port: number } {
  const c = createTestContext(env);
  contexts.push(c);
  c.app.listen({ hostname: '127.0.0.1', port: 0 });
  return { c, port: c.app.server!.port! };
}

/** A balance CSV's head and the first 64 KB of its body, on a connection of its own; the rest is not sent. */
async function started(port: number, key: string, declared = CSV.body.byteLength): Promise<RawConnection> {
  const conn = await rawConnect(port);
  await conn.write(
    `POST /v1/balance_requests/csv HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: ${CSV.contentType}\r\nContent-Length: ${declared}\r\n\r\n`,
  );
  await conn.write(CSV.body.subarray(0, FIRST));
  return conn;
}

/** Waits until `check` holds, a state the test reaches by itself; the bound only ends a hung test. */
async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 12_000) throw new Error(`never reached: ${what}`);
    await Bun.sleep(5);
  }
}

describe('refused before the body is read', () => {
  test('a lender at its bound on authorizers waiting, a key over its rate, a body declared over its route’s limit', async () => {
    // The fake clock stands still: a key's bucket of 2 never refills.
    const { c, port } = listening({ MAX_PENDING_AUTHORIZERS_PER_LENDER: '5', RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '2' });
    const full = await c.json('POST', '/v1/balance_requests', { body: { authorizers: Array.from({ length: 5 }, (_, i) => bankAuthorizer(`full-${i}`)) } });
    expect(full.status).toBe(201);
    const answerOf = async (conn: RawConnection): Promise<RawResponse> => {
      // The rest of the body never comes: any answer is one given without it (the wait only ends a hung test).
      const res = await conn.response(30_000);
      conn.close();
      expect(res).not.toBeNull();
      return res!;
    };

    const backlog = await answerOf(await started(port, c.lender.key));
    expect(backlog.status).toBe(429);
    expect(backlog.headers['retry-after']).toBe('30');
    expect(JSON.parse(backlog.body).error.message).toContain('at most 5 may wait');

    const rate = await answerOf(await started(port, c.lender.key));
    expect(rate.status).toBe(429);
    expect(Number(rate.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    const other = c.newLender();
    const size = await answerOf(await started(port, other.key, CSV_BODY_LIMIT + 1));
    expect(size.status).toBe(413);
    expect(JSON.parse(size.body).error.code).toBe('PAYLOAD_TOO_LARGE');
    // Nothing of the refused requests was stored.
    expect((await c.rows<{ n: number }>('SELECT COUNT(*) AS n FROM batches'))[0]!.n).toBe(1);
  }, 60_000);
});

describe('a lender’s large request bodies in flight are bounded', () => {
  test(`60 CSVs of 4.6 MB at once: ${LARGE_BODIES_PER_LENDER} are read, the others refused unread with 429 and Retry-After`, async () => {
    const { c, port } = listening();
    const admitted = LARGE_BODIES_PER_LENDER;
    const conns = await Promise.all(Array.from({ length: 60 }, () => started(port, c.lender.key)));
    const answers: (RawResponse | null | undefined)[] = conns.map(() => undefined);
    conns.forEach((conn, i) => void conn.response(120_000).then((r) => (answers[i] = r)));
    await until('every request past the bound is answered', () => answers.filter((a) => a !== undefined).length >= 60 - admitted);

    // The admitted ones are still waiting for their bodies; every other was answered without its body.
    const refused = answers.flatMap((a, i) => (a === undefined ? [] : [{ a: a!, i }]));
    expect(refused.length).toBe(60 - admitted);
    for (const { a } of refused) {
      expect(a.status).toBe(429);
      expect(a.headers['retry-after']).toBe('1');
      expect(JSON.parse(a.body).error.code).toBe('RATE_LIMITED');
    }

    // Another lender has places of its own.
    const other = c.newLender();
    const theirs = await started(port, other.key);
    await theirs.write(CSV.body.subarray(FIRST));

    // The admitted bodies arrive in full and are accepted.
    const waiting = conns.filter((_, i) => answers[i] === undefined);
    for (const conn of waiting) await conn.write(CSV.body.subarray(FIRST));
    const accepted = await Promise.all([theirs, ...waiting].map((conn) => conn.response(120_000)));
    expect(accepted.map((r) => r?.status)).toEqual(Array(admitted + 1).fill(201));
    for (const conn of [...conns, theirs]) conn.close();

    // Once they are answered, the lender's places are free again.
    const again = await fetch(`http://127.0.0.1:${port}/v1/balance_requests/csv`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.lender.key}`, 'content-type': CSV.contentType },
      body: CSV.body,
    });
    expect(again.status).toBe(201);
  }, 180_000);
});

describe('a spawned service under a burst of large bodies from one key', () => {
  const harness = new ServiceHarness();
  afterAll(() => harness.cleanup());

  test('60 CSVs of 4.6 MB at once: /healthz keeps answering, peak RSS stays under 500 MB, every answer a 201 or a 429 with Retry-After', async () => {
    const service = await harness.start();
    const poller = poll(`${service.url}/healthz`);
    const from = Date.now();
    const answers = await burst(`${service.url}/v1/balance_requests/csv`, TEST_API_KEY, CSV.body, CSV.contentType, 60);
    const to = Date.now();
    const { answers: health, failed } = await poller.stop();
    const peak = peakRss(service.proc.pid);

    const during = health.filter((h) => h.start >= from && h.end <= to);
    const gap = longestGap(health.map((h) => h.end), from, to);
    const refused = answers.filter((a) => a.status === 429);
    console.log(
      `burst of 60 × ${(CSV.body.byteLength / 1e6).toFixed(1)} MB: ${answers.filter((a) => a.status === 201).length} accepted, ${refused.length} refused ` +
        `(median ${Math.round(median(refused.map((a) => a.sentAtAnswer)) / 1024)} KB of the body sent by then); ${to - from} ms; ` +
        `/healthz answered ${during.length} times during it, longest gap ${gap} ms; peak RSS ${Math.round(peak / 1e6)} MB`,
    );
    expect(failed).toBe(0);
    expect(health.every((h) => h.status === 200)).toBe(true);
    expect(during.length).toBeGreaterThan(0);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(500 * 1e6);
    for (const a of answers) {
      expect([201, 429]).toContain(a.status);
      if (a.status === 429) expect(a.retryAfter).not.toBeNull();
    }
    expect(refused.length).toBeGreaterThan(0);
  }, 300_000);
});

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
