// The SSRF guard with WEBHOOK_ALLOW_PRIVATE_TARGETS=false: at request time POST /v1/balance_requests refuses
// every unacceptable webhook_url with a 400 naming the field (and creates no batch); at delivery time a URL
// already in the outbox is checked again against the address it would connect to, the attempt is recorded
// with the reason and the receiver on 127.0.0.1 never gets a byte. `vm` and `runsc` resolve to 127.0.0.1 here
// (/etc/hosts), which is the "public-looking name pointing at loopback" case.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { lookup } from 'node:dns/promises';
import { createTestContext } from '../../helpers/context';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { attemptRows, authorizer, deliveryRow, enqueue, startReceiver } from './support';

const ctx = createTestContext({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false', WEBHOOK_RETRY_BASE_MS: '1000' });
const hook = startReceiver();
afterAll(() => {
  hook.stop();
  ctx.close();
});

/** Names that resolve only to loopback on this machine (checked, not assumed). */
let loopbackNames: string[] = [];
beforeAll(async () => {
  for (const name of ['vm', 'runsc']) {
    try {
      const addrs = await lookup(name, { all: true });
      if (addrs.length > 0 && addrs.every((a) => a.address === '127.0.0.1')) loopbackNames.push(name);
    } catch {
      /* not in this machine's hosts file */
    }
  }
  if (loopbackNames.length === 0) throw new Error('no host name resolving to 127.0.0.1 besides localhost; add one to /etc/hosts');
});

const batchCount = () => ctx.sql.query<{ n: number }, []>('SELECT count(*) AS n FROM batches').get()!.n;

const REQUEST_TIME_CASES: [string, RegExp][] = [
  ['http://127.0.0.1/x', /scheme http/],
  ['https://127.0.0.1/x', /loopback/],
  ['https://127.1/x', /loopback/],
  ['https://2130706433/x', /loopback/],
  ['https://0x7f.0.0.1/x', /loopback/],
  ['https://localhost/x', /localhost/],
  ['https://localhost./x', /localhost/],
  ['https://api.localhost/x', /localhost/],
  ['https://user:pw@example.com/', /userinfo/],
  ['https://user@example.com/', /userinfo/],
  ['https://@example.com/', /userinfo/],
  ['ftp://x', /scheme ftp/],
  ['file:///etc/passwd', /scheme file/],
  ['not a url', /not an absolute URL/],
  ['https://169.254.169.254/', /metadata/],
  ['https://169.254.10.1/', /link-local/],
  ['https://10.0.0.1/', /private/],
  ['https://172.16.5.5/', /private/],
  ['https://192.168.1.1/', /private/],
  ['https://100.64.0.1/', /carrier-grade/],
  ['https://0.0.0.0/', /unspecified/],
  ['https://[::1]/', /loopback/],
  ['https://[::]/', /unspecified/],
  ['https://[::ffff:127.0.0.1]/', /loopback/],
  ['https://[::ffff:169.254.169.254]/', /metadata/],
  ['https://[64:ff9b::a00:1]/', /private/],
  ['https://[fe80::1]/', /link-local/],
  ['https://[fd00::1]/', /unique local/],
  ['https://93.184.215.14:0/hooks', /port 0/],
  ['https://example.com:0/hooks', /port 0/],
];

describe('request time: POST /v1/balance_requests refuses the webhook_url with 400 naming the field', () => {
  for (const [url, reason] of REQUEST_TIME_CASES) {
    test(JSON.stringify(url), async () => {
      const before = batchCount();
      const res = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [authorizer()], webhook_url: url } });
      expect(res.status).toBe(400);
      expect(res.body.error.details.errors[0].path).toBe('webhook_url');
      expect(res.body.error.details.errors[0].message).toMatch(reason);
      // What the operator's setting would allow is named; what no setting allows is not.
      const allowable = /scheme http$|loopback|localhost|metadata|link-local|private|carrier-grade|unspecified|unique local/.test(reason.source);
      expect(res.body.error.details.errors[0].message.includes('WEBHOOK_ALLOW_PRIVATE_TARGETS')).toBe(allowable);
      expect(batchCount()).toBe(before);
    });
  }

  test('plain http is refused naming the setting that would allow it', async () => {
    const res = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [authorizer()], webhook_url: 'http://93.184.215.14/hooks' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.errors[0].message).toMatch(/scheme http is not allowed.*WEBHOOK_ALLOW_PRIVATE_TARGETS=true/);
  });

  test('a host name that resolves to 127.0.0.1', async () => {
    for (const name of loopbackNames) {
      const res = await ctx.json('POST', '/v1/balance_requests', {
        body: { authorizers: [authorizer()], webhook_url: `https://${name}:${hook.port}/hook` },
      });
      expect(res.status).toBe(400);
      expect(res.body.error.details.errors[0].path).toBe('webhook_url');
      expect(res.body.error.details.errors[0].message).toContain('resolves to 127.0.0.1');
    }
  });

  test('the CSV upload checks its webhook_url field the same way', async () => {
    const before = batchCount();
    const a = authorizer();
    const csv = `authorizer_unique_id,ssn,account_number,routing_number\n${a.authorizer_unique_id},${a.ssn},${a.account_number},${a.routing_number}\n`;
    for (const url of ['https://127.0.0.1/x', `https://${loopbackNames[0]}/x`, 'http://example.com/x']) {
      const form = new FormData();
      form.append('file', new File([csv], 'batch.csv', { type: 'text/csv' }));
      form.append('webhook_url', url);
      const res = await ctx.json('POST', '/v1/balance_requests/csv', { form });
      expect(res.status, url).toBe(400);
      expect(res.body.error.details.errors[0].path, url).toBe('webhook_url');
    }
    expect(batchCount()).toBe(before);
  });

  test("a schedule's webhook is checked too, and the 400 names the field `webhook`", async () => {
    for (const url of ['https://169.254.169.254/', `https://${loopbackNames[0]}/x`, 'https://[::ffff:127.0.0.1]/']) {
      const res = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', {
        body: { name: `ssrf ${url}`, interval_days: 7, webhook: url, authorizers: [authorizer()] },
      });
      expect(res.status, url).toBe(400);
      expect(res.body.error.details.errors[0].path, url).toBe('webhook');
    }
  });

  test('control: a public https target (IP literal, no DNS needed) is accepted', async () => {
    const res = await ctx.json('POST', '/v1/balance_requests', {
      body: { authorizers: [authorizer()], webhook_url: 'https://93.184.215.14/hooks/balances' },
    });
    expect(res.status).toBe(201);
  });
});

describe('delivery time: a target already in the outbox is checked again against the address connected to', () => {
  test('every forbidden target is recorded as blocked with its reason, and the receiver gets nothing', async () => {
    const p = hook.port;
    const cases: [string, RegExp][] = [
      ...loopbackNames.map((n): [string, RegExp] => [`https://${n}:${p}/hook`, /resolves to 127\.0\.0\.1.*loopback/]),
      [`https://127.0.0.1:${p}/hook`, /127\.0\.0\.1.*loopback/],
      [`https://[::ffff:127.0.0.1]:${p}/hook`, /loopback/],
      [`https://localhost:${p}/hook`, /localhost/],
      [`http://127.0.0.1:${p}/hook`, /scheme http/],
      [`http://${loopbackNames[0]}:${p}/hook`, /scheme http/],
      [`https://user:pw@${loopbackNames[0]}:${p}/hook`, /userinfo/],
      ['ftp://x', /scheme ftp/],
      ['not a url', /not an absolute URL/],
      ['https://169.254.169.254/latest/meta-data/', /metadata/],
      ['https://93.184.215.14:0/hook', /port 0/],
    ];
    const ids: string[] = [];
    for (const [url] of cases) ids.push(await enqueue(ctx, url));
    expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(cases.length);
    expect(hook.requests).toHaveLength(0);

    cases.forEach(([url, reason], i) => {
      const attempts = attemptRows(ctx, ids[i]!);
      expect(attempts, url).toHaveLength(1);
      expect(attempts[0]!.status_code, url).toBeNull();
      expect(attempts[0]!.error, url).toMatch(reason);
      const row = deliveryRow(ctx, ids[i]!);
      // Refused is final: failed at the first attempt, never retried.
      expect({ state: row.state, next: row.next_attempt_at, attempts: row.attempts }, url).toEqual({ state: 'failed', next: null, attempts: 1 });
      expect(row.last_error, url).toMatch(reason);
    });

    // Nothing is tried again, however long the retry window would have been.
    ctx.clock.advance(3_600_000);
    expect((await deliverDueWebhooks(ctx.rt)).attempted).toBe(0);
    expect(hook.requests).toHaveLength(0);
    for (const id of ids) expect(attemptRows(ctx, id)).toHaveLength(1);

    // The deliveries list tells the lender why.
    const listed = await ctx.json('GET', '/v1/webhooks/deliveries?limit=100');
    expect(listed.status).toBe(200);
    const byId = new Map((listed.body.deliveries as { id: string; last_error: string | null; state: string }[]).map((d) => [d.id, d]));
    cases.forEach(([url, reason], i) => {
      const d = byId.get(ids[i]!);
      expect(d, url).toBeDefined();
      expect(d!.last_error, url).toMatch(reason);
      expect(d!.state, url).not.toBe('delivered');
    });
  });

  test('control: with private targets allowed, the same name reaches the receiver (the block above is the guard)', async () => {
    const open = createTestContext({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    try {
      hook.reset();
      const id = await enqueue(open, `http://${loopbackNames[0]}:${hook.port}/hook`);
      await deliverDueWebhooks(open.rt);
      expect(hook.requests).toHaveLength(1);
      expect(hook.requests[0]!.headers['webhook-id']).toBe(id);
      // The request went to the resolved address but kept the registered name as Host.
      expect(hook.requests[0]!.headers.host).toBe(`${loopbackNames[0]}:${hook.port}`);
      expect(deliveryRow(open, id).state).toBe('delivered');
    } finally {
      open.close();
    }
  });
});
