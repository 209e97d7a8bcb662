import { afterAll, beforeEach, describe, expect, test } from 'bun:test';
import { HttpBalanceProvider } from '../../../src/adapters/bank-data/http';
import { TransientProviderError, type BalanceReadRequest } from '../../../src/adapters/bank-data/types';

interface Seen {
  method: string;
  path: string;
  authorization: string | null;
  contentType: string | null;
  body: unknown;
}

let seen: Seen[] = [];
let answer: (attempt: number) => Response | Promise<Response> = () => Response.json({ balance_status_code: 0, balance: 1 });

// A stand-in for the real data source: a real HTTP server on loopback whose answers each test chooses.
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(req) {
    const url = new URL(req.url);
    const text = await req.text();
    seen.push({
      method: req.method,
      path: url.pathname,
      authorization: req.headers.get('authorization'),
      contentType: req.headers.get('content-type'),
      body: text ? JSON.parse(text) : null,
    });
    return answer(seen.length);
  },
});
const baseUrl = `http://127.0.0.1:${server.port}`;

afterAll(() => server.stop(true));
beforeEach(() => {
  seen = [];
});

const fast = (extra: Partial<ConstructorParameters<typeof HttpBalanceProvider>[0]> = {}) =>
  new HttpBalanceProvider({ url: baseUrl, token: 'tok_123', retryDelayMs: 10, timeoutMs: 2_000, ...extra });

const request: BalanceReadRequest = {
  authorizerUniqueId: 'auth-1',
  paymentType: 'ACCOUNT_NUMBER',
  routingNumber: '011000015',
  accountNumber: '0001234567',
  debitCardNumber: null,
  ssn: '123456789',
  firstName: 'Ada',
  lastName: 'Lovelace',
  dateOfBirth: { day: 10, month: 12, year: 1985 },
};

describe('HttpBalanceProvider', () => {
  test('success: dollars become exact cents; the request follows the contract', async () => {
    answer = () => Response.json({ balance_status_code: 0, balance: 1234.56 });
    expect(await fast().read(request)).toEqual({ kind: 'balance', balanceCents: 123456 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      method: 'POST',
      path: '/balance',
      authorization: 'Bearer tok_123',
      contentType: 'application/json',
    });
    expect(seen[0].body).toEqual({
      authorizer_unique_id: 'auth-1',
      payment_type: 'ACCOUNT_NUMBER',
      routing_number: '011000015',
      account_number: '0001234567',
      debit_card_number: null,
      cvv: null,
      expiration_month: null,
      expiration_year: null,
      ssn: '123456789',
      ein: null,
      first_name: 'Ada',
      last_name: 'Lovelace',
      phone_number: null,
      zip_code: null,
      date_of_birth: { day: 10, month: 12, year: 1985 },
    });
  });

  test('amounts that binary floating point gets wrong are still exact', async () => {
    for (const [balance, cents] of [
      [0.29, 29],
      [1.005, 101],
      [19.99, 1999],
      [-12.5, -1250],
      ['1234.56', 123456],
      [0, 0],
    ] as const) {
      answer = () => Response.json({ balance_status_code: 0, balance });
      expect(await fast().read(request)).toEqual({ kind: 'balance', balanceCents: cents });
    }
  });

  test('no Authorization header without a token; a trailing slash on the URL is fine', async () => {
    answer = () => Response.json({ balance_status_code: 0, balance: 5 });
    await new HttpBalanceProvider({ url: `${baseUrl}/`, token: null }).read(request);
    expect(seen[0].authorization).toBeNull();
    expect(seen[0].path).toBe('/balance');
  });

  test('a known failure code is passed on, with or without a balance', async () => {
    answer = () => Response.json({ balance_status_code: 3200, balance: null });
    expect(await fast().read(request)).toEqual({ kind: 'failed', statusCode: 3200 });
    answer = () => Response.json({ balance_status_code: 3001, balance: 99.5 });
    expect(await fast().read(request)).toEqual({ kind: 'failed', statusCode: 3001 });
  });

  test('an unknown code becomes 9000', async () => {
    answer = () => Response.json({ balance_status_code: 4242, balance: null });
    expect(await fast().read(request)).toEqual({ kind: 'failed', statusCode: 9000 });
  });

  test('a 500 is retried, and the retry answers', async () => {
    answer = (attempt) =>
      attempt === 1 ? new Response('upstream down', { status: 500 }) : Response.json({ balance_status_code: 0, balance: 7.25 });
    expect(await fast().read(request)).toEqual({ kind: 'balance', balanceCents: 725 });
    expect(seen).toHaveLength(2);
    expect(seen[1].body).toEqual(seen[0].body);
  });

  test('5xx on every attempt: 1 + 2 retries, then transient', async () => {
    answer = () => new Response('unavailable', { status: 503 });
    await expect(fast().read(request)).rejects.toBeInstanceOf(TransientProviderError);
    expect(seen).toHaveLength(3);
  });

  test('the retry limit is configurable', async () => {
    answer = () => new Response('bad gateway', { status: 502 });
    await expect(fast({ retries: 0 }).read(request)).rejects.toBeInstanceOf(TransientProviderError);
    expect(seen).toHaveLength(1);
  });

  test('a 400 is not retried and ends the read as 9000, the call told to the observer (which logs it for the operator)', async () => {
    const calls: unknown[] = [];
    answer = () => Response.json({ error: 'bad request' }, { status: 400 });
    const provider = fast({ onCall: (endpoint) => (outcome) => calls.push({ endpoint, ...outcome }) });
    expect(await provider.read(request)).toEqual({ kind: 'failed', statusCode: 9000 });
    expect(seen).toHaveLength(1);
    expect(calls).toEqual([{ endpoint: '/balance', status: 400 }]);
  });

  test('each attempt of a retried read is one observed call, by its endpoint and status', async () => {
    const calls: unknown[] = [];
    let left = 2;
    answer = () => (left-- > 0 ? new Response('bad gateway', { status: 502 }) : Response.json({ balance_status_code: 0, balance: 1 }));
    const provider = fast({ onCall: (endpoint) => (outcome) => calls.push({ endpoint, ...outcome }) });
    expect(await provider.read(request)).toMatchObject({ kind: 'balance' });
    expect(calls).toEqual([
      { endpoint: '/balance', status: 502 },
      { endpoint: '/balance', status: 502 },
      { endpoint: '/balance', status: 200 },
    ]);
  });

  test('401 (wrong token) is a refusal too, not retried', async () => {
    answer = () => new Response('nope', { status: 401 });
    expect(await fast().read(request)).toEqual({ kind: 'failed', statusCode: 9000 });
    expect(seen).toHaveLength(1);
  });

  test('429 is not retried here but reported as transient', async () => {
    answer = () => new Response('slow down', { status: 429, headers: { 'retry-after': '1' } });
    await expect(fast().read(request)).rejects.toBeInstanceOf(TransientProviderError);
    expect(seen).toHaveLength(1);
  });

  test('a redirect is not followed (the token stays with the configured host)', async () => {
    answer = (attempt) =>
      attempt === 1
        ? new Response(null, { status: 302, headers: { location: `${baseUrl}/elsewhere` } })
        : Response.json({ balance_status_code: 0, balance: 1 });
    expect(await fast().read(request)).toEqual({ kind: 'failed', statusCode: 9000 });
    expect(seen.map((s) => s.path)).toEqual(['/balance']);
  });

  test('an unparseable answer is transient', async () => {
    for (const body of ['not json', '[]', '{"balance": 12}', '{"balance_status_code": 0, "balance": null}', '{"balance_status_code": "0", "balance": 1}', '{"balance_status_code": 0, "balance": "12,50"}']) {
      answer = () => new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
      await expect(fast().read(request)).rejects.toBeInstanceOf(TransientProviderError);
    }
  });

  test('a slow provider times out as transient, without retrying', async () => {
    answer = async () => {
      await Bun.sleep(500);
      return Response.json({ balance_status_code: 0, balance: 1 });
    };
    const error = await fast({ timeoutMs: 100 }).read(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransientProviderError);
    expect((error as Error).message).toContain('100 ms');
    // The read has already given up, so a retry would have arrived by now.
    expect(seen).toHaveLength(1);
  });

  test('a body that stalls after the headers times out as transient', async () => {
    answer = () =>
      new Response(
        new ReadableStream({
          async start(controller) {
            controller.enqueue(new TextEncoder().encode('{"balance_status_code": 0,'));
            await Bun.sleep(600);
            controller.enqueue(new TextEncoder().encode('"balance": 1}'));
            controller.close();
          },
        }),
        { headers: { 'content-type': 'application/json' } },
      );
    await expect(fast({ timeoutMs: 150 }).read(request)).rejects.toBeInstanceOf(TransientProviderError);
  });

  test('an unreachable provider is retried, then transient; the error never carries the token', async () => {
    // A port that was just released: connections are refused.
    const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') });
    const url = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    const started = performance.now();
    const error = await new HttpBalanceProvider({ url, token: 'tok_secret', retryDelayMs: 50 })
      .read(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransientProviderError);
    // Two retries waited 50 ms and 100 ms before giving up.
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect((error as Error).cause).toBeUndefined();
    expect(JSON.stringify(error) + String((error as Error).message)).not.toContain('tok_secret');
  });
});
