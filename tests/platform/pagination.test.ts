import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';
import { PageTokens, tokenFrom } from '../../src/platform/pagination';
import { InvalidInput } from '../../src/platform/errors';
import { Vault, generateVaultKey } from '../../src/platform/vault';
import { balanceProcessingJob } from '../../src/modules/balance-requests/processing';

const authorizer = (id: string) => ({ authorizer_unique_id: id, ssn: '123456789', account_number: '0001234567', routing_number: '110000000' });

function badRequest(fn: () => unknown): InvalidInput {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidInput);
    return e as InvalidInput;
  }
  throw new Error('expected a InvalidInput');
}

describe('PageTokens', () => {
  const vault = new Vault(generateVaultKey());
  const tokens = new PageTokens(vault);

  test('round trip within a scope; the token is opaque URL-safe text', () => {
    const t = tokens.encode('deliveries:l1::', { c: 123, i: 'abc' });
    expect(t).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(tokens.decode('deliveries:l1::', t)).toEqual({ c: 123, i: 'abc' });
    // A second instance on the same key reads it (a restart keeps tokens valid).
    expect(new PageTokens(vault).decode('deliveries:l1::', t)).toEqual({ c: 123, i: 'abc' });
  });

  test('another scope refuses it', () => {
    const t = tokens.encode('schedules:l1:', { i: 'x' });
    for (const scope of ['schedules:l2:', 'schedules:l1:ACTIVE', 'deliveries:l1::', '']) {
      const e = badRequest(() => tokens.decode(scope, t));
      expect(e.details).toEqual({ errors: [{ path: 'next_page_token', message: expect.any(String) }] });
    }
  });

  test('a tampered body or MAC is refused', () => {
    const t = tokens.encode('s', { r: 10 });
    const [body, mac] = t.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ r: 0 })).toString('base64url');
    badRequest(() => tokens.decode('s', `${forged}.${mac}`));
    const flipped = mac.slice(0, -1) + (mac.endsWith('A') ? 'B' : 'A');
    badRequest(() => tokens.decode('s', `${body}.${flipped}`));
    badRequest(() => tokens.decode('s', `${body}.${mac}x`));
    badRequest(() => tokens.decode('s', `${body}.`));
    badRequest(() => tokens.decode('s', `.${mac}`));
    badRequest(() => tokens.decode('s', body));
    badRequest(() => tokens.decode('s', ''));
    badRequest(() => tokens.decode('s', 'xxx'));
  });

  test('a token from another vault key is refused', () => {
    const other = new PageTokens(new Vault(generateVaultKey()));
    badRequest(() => tokens.decode('s', other.encode('s', { r: 1 })));
  });

  test('tokenFrom accepts both spellings; next_page_token wins', () => {
    expect(tokenFrom({})).toBeUndefined();
    expect(tokenFrom({ nextPageToken: 'b' })).toBe('b');
    expect(tokenFrom({ next_page_token: 'a', nextPageToken: 'b' })).toBe('a');
    expect(tokenFrom({ next_page_token: '' })).toBeUndefined();
  });
});

describe('page tokens over HTTP', () => {
  const ctx = useTestContext();

  function expectBadToken(r: { status: number; body: any }) {
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('BAD_REQUEST');
    expect(r.body.error.details.errors[0].path).toBe('next_page_token');
  }

  test('a tampered token on GET /v1/webhooks/deliveries → 400, under either spelling', async () => {
    expectBadToken(await ctx.json('GET', '/v1/webhooks/deliveries?next_page_token=xxx'));
    expectBadToken(await ctx.json('GET', '/v1/webhooks/deliveries?nextPageToken=xxx'));
    expectBadToken(await ctx.json('GET', '/v1/webhooks/deliveries?next_page_token=eyJjIjoxfQ.AAAAAAAAAAAAAAAAAAAAAA'));
  });

  test('a schedules token pages schedules and is refused by every other listing', async () => {
    for (const name of ['s1', 's2', 's3']) {
      const r = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', {
        body: { name, interval_days: 7, authorizers: [authorizer(`${name}-a`)] },
      });
      expect(r.status).toBe(201);
    }
    const page1 = await ctx.json('GET', '/v1/monitoring/schedules?limit=1');
    expect(page1.status).toBe(200);
    expect(page1.body.has_more).toBe(true);
    const token = page1.body.next_page_token as string;
    expect(typeof token).toBe('string');

    // Its own listing accepts it, under both spellings, and moves on.
    const page2 = await ctx.json('GET', `/v1/monitoring/schedules?limit=1&next_page_token=${encodeURIComponent(token)}`);
    expect(page2.status).toBe(200);
    expect(page2.body.schedules[0].schedule_id).not.toBe(page1.body.schedules[0].schedule_id);
    const camel = await ctx.json('GET', `/v1/monitoring/schedules?limit=1&nextPageToken=${encodeURIComponent(token)}`);
    expect(camel.body.schedules[0].schedule_id).toBe(page2.body.schedules[0].schedule_id);

    // A different filter is a different listing.
    expectBadToken(await ctx.json('GET', `/v1/monitoring/schedules?status=ACTIVE&next_page_token=${encodeURIComponent(token)}`));
    // Another endpoint.
    expectBadToken(await ctx.json('GET', `/v1/webhooks/deliveries?next_page_token=${encodeURIComponent(token)}`));
    // Another lender.
    const other = ctx.newLender();
    expectBadToken(await ctx.json('GET', `/v1/monitoring/schedules?next_page_token=${encodeURIComponent(token)}`, { key: other.key }));
  });

  test('a balances token is bound to its batch', async () => {
    const a = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [authorizer('b1'), authorizer('b2'), authorizer('b3')] } });
    const b = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [authorizer('c1'), authorizer('c2')] } });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    await balanceProcessingJob.tick(ctx.rt, new AbortController().signal);

    const page1 = await ctx.json('GET', `/v1/balances?batchId=${a.body.batch_id}&limit=1`);
    expect(page1.status).toBe(200);
    expect(page1.body.has_more).toBe(true);
    const token = page1.body.next_page_token as string;
    const page2 = await ctx.json('GET', `/v1/balances?batchId=${a.body.batch_id}&limit=1&next_page_token=${encodeURIComponent(token)}`);
    expect(page2.status).toBe(200);

    expectBadToken(await ctx.json('GET', `/v1/balances?batchId=${b.body.batch_id}&next_page_token=${encodeURIComponent(token)}`));
    expectBadToken(await ctx.json('GET', `/v1/monitoring/schedules?next_page_token=${encodeURIComponent(token)}`));
  });
});
