// Every provider answer is read with a bound on its size (1 MB for a balance or a credential check, 10 MB for a
// page), checked while it arrives: one past it is a failed call, named, and the rest of it is never read (a
// 200 MB answer to a credential check once added 400 MB to the process). An answer from Stripe that is not an
// account is a failed read, not a refresh to wait ten minutes for.
import { afterAll, describe, expect, test } from 'bun:test';
import { PlaidSource } from '../../../src/adapters/bank-data/plaid';
import { StripeFcSource } from '../../../src/adapters/bank-data/stripe-fc';
import { HttpBalanceProvider } from '../../../src/adapters/bank-data/http';
import { ANSWER_LIMIT_BYTES, PAGE_LIMIT_BYTES } from '../../../src/adapters/bounded-body';
import { SourceUnavailable } from '../../../src/adapters/bank-data/linked';

/** How much of an oversize answer the server managed to hand over before the reader let go. */
let sent = 0;
/** An answer of `bytes` bytes of JSON, streamed in 64 KB chunks, counting what was taken. */
function huge(bytes: number, status = 200): Response {
  sent = 0;
  const chunk = new TextEncoder().encode(' '.repeat(64 * 1024));
  let left = bytes;
  const body = new ReadableStream({
    pull(c) {
      if (left <= 0) {
        c.enqueue(new TextEncoder().encode('{}'));
        return c.close();
      }
      left -= chunk.byteLength;
      sent += chunk.byteLength;
      c.enqueue(chunk);
    },
  });
  return new Response(body, { status, headers: { 'content-type': 'application/json' } });
}

let answer: (path: string) => Response = () => Response.json({});
const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (req) => answer(new URL(req.url).pathname) });
const url = `http://127.0.0.1:${server.port}`;
afterAll(() => server.stop(true));

const plaidCreds = { provider: 'plaid' as const, clientId: 'client_size', secret: 'secret-size', environment: 'sandbox' as const };
const plaidLink = { provider: 'plaid' as const, accessToken: 'access-sandbox-size', accountId: 'acc_size_0001' };

describe('answers past their bound', () => {
  test('Plaid: a 200 MB balance answer is a failed read naming answer_too_large, and only its first megabytes are taken', async () => {
    answer = () => huge(200 * 1024 * 1024);
    const r = await new PlaidSource({ apiUrl: url }).read(plaidCreds, plaidLink, Date.now());
    expect(r).toEqual({ kind: 'failed', statusCode: 9000, detail: 'answer_too_large' });
    expect(sent).toBeLessThan(16 * ANSWER_LIMIT_BYTES);
  });

  test('Plaid: a credential check answered past the bound is "unreachable" (503), never read whole', async () => {
    answer = () => huge(200 * 1024 * 1024);
    await expect(new PlaidSource({ apiUrl: url }).verify(plaidCreds)).rejects.toBeInstanceOf(SourceUnavailable);
    expect(sent).toBeLessThan(16 * ANSWER_LIMIT_BYTES);
  });

  test('Plaid: a Content-Length past the bound is refused before the body is read', async () => {
    answer = () => new Response('x'.repeat(ANSWER_LIMIT_BYTES + 10), { headers: { 'content-type': 'application/json' } });
    expect(await new PlaidSource({ apiUrl: url }).read(plaidCreds, plaidLink, Date.now())).toEqual({ kind: 'failed', statusCode: 9000, detail: 'answer_too_large' });
  });

  test('Stripe: an answer past the page bound fails the call; one that is not an account is a failed read, not pending', async () => {
    const stripe = new StripeFcSource({ apiUrl: url });
    const link = { provider: 'stripe' as const, account: 'fca_1SizeCheck0001' };
    answer = () => huge(PAGE_LIMIT_BYTES + 5 * 1024 * 1024);
    await expect(stripe.read({ provider: 'stripe', apiKey: 'rk_test_sizecheck0000000000001' }, link, Date.now())).rejects.toThrow();
    expect(sent).toBeLessThan(2 * PAGE_LIMIT_BYTES);
    answer = () => Response.json({ object: 'list', data: [], has_more: false, url: '/v1/financial_connections/accounts' });
    expect(await stripe.read({ provider: 'stripe', apiKey: 'rk_test_sizecheck0000000000001' }, link, Date.now())).toEqual({ kind: 'failed', statusCode: 9000, detail: 'not_an_account' });
  });

  test('the HTTP bridge: a balance answer past the bound is a failed read', async () => {
    answer = () => huge(50 * 1024 * 1024);
    const bridge = new HttpBalanceProvider({ url, token: null, retries: 0 });
    const r = await bridge.read({ authorizerUniqueId: 'size-1', accountNumber: '0001234567', routingNumber: '110000000', paymentType: 'ACCOUNT_NUMBER' } as never);
    expect(r).toEqual({ kind: 'failed', statusCode: 9000 });
    expect(sent).toBeLessThan(16 * ANSWER_LIMIT_BYTES);
  });
});
