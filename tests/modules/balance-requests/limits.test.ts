// One caller must not exhaust the service. Metadata as an amplifier: one authorizer's keys, a CSV's meta_
// columns and an export's distinct meta_ columns are bounded, each refusal saying the bound. And the
// authorizers a lender may have waiting in the queue.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, useTestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { METADATA_KEYS_MAX } from '../../../src/platform/fields';
import { EXPORT_META_COLUMNS_MAX } from '../../../src/modules/balance-requests/export';

const ctx = useTestContext();

const keys = (n: number, prefix = 'k') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));

describe('metadata of one authorizer', () => {
  test(`at most ${METADATA_KEYS_MAX} keys: one more is a 400 that says the bound`, async () => {
    const ok = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('m-50', { metadata: keys(METADATA_KEYS_MAX) })] } });
    expect(ok.status).toBe(201);
    const over = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('m-51', { metadata: keys(METADATA_KEYS_MAX + 1) })] } });
    expect(over.status).toBe(400);
    expect(over.body.error.details.errors).toEqual([{ path: '/authorizers/0/metadata', message: `Expected at most ${METADATA_KEYS_MAX} metadata keys` }]);
  });

  test('the same bound holds in a schedule', async () => {
    const r = await ctx.json('POST', '/v1/monitoring/scheduled_balance_request', {
      body: { name: 'meta-bound', interval_days: 7, authorizers: [bankAuthorizer('m-s', { metadata: keys(METADATA_KEYS_MAX + 1) })] },
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain(`at most ${METADATA_KEYS_MAX} metadata keys`);
  });
});

describe('metadata of a balance CSV', () => {
  const upload = (csv: string) => {
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'a.csv');
    return ctx.json('POST', '/v1/balance_requests/csv', { form });
  };
  const head = 'authorizer_unique_id,ssn,account_number,routing_number';
  const row = 'c-1,123456789,0001234567,110000000';

  test(`more than ${METADATA_KEYS_MAX} meta_ columns → 400 saying the bound`, async () => {
    const cols = Array.from({ length: METADATA_KEYS_MAX + 1 }, (_, i) => `meta_k${i}`);
    const r = await upload(`${head},${cols.join(',')}\n${row},${cols.map(() => 'v').join(',')}\n`);
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain(`at most ${METADATA_KEYS_MAX}`);
  });

  test('a meta_ key over 64 characters → 400; a meta_ cell over 1000 characters fails its row only', async () => {
    const longKey = await upload(`${head},meta_${'k'.repeat(65)}\n${row},v\n`);
    expect(longKey.status).toBe(400);
    expect(longKey.body.error.message).toContain('at most 64 characters');
    const longCell = await upload(`${head},meta_note\n${row},${'v'.repeat(1001)}\nc-2,123456789,0001234567,110000000,short\n`);
    expect(longCell.status).toBe(201);
    expect(longCell.body.failed_authorizers).toEqual([{ authorizer_unique_id: 'c-1', error: 'meta_note is longer than 1000 characters', account_type: 'ACCOUNT_NUMBER', row_number: 2 }]);
  });
});

describe('the export', () => {
  test(`more than ${EXPORT_META_COLUMNS_MAX} distinct meta_ columns → 400 saying the bound; at the bound it exports`, async () => {
    // Five authorizers with 50 keys each, none shared: 250 distinct keys in one batch.
    const wide = await ctx.json('POST', '/v1/balance_requests', {
      body: { authorizers: Array.from({ length: 5 }, (_, i) => bankAuthorizer(`w-${i}`, { metadata: keys(50, `b${i}_`) })) },
    });
    // Four of them: exactly 200.
    const fits = await ctx.json('POST', '/v1/balance_requests', {
      body: { authorizers: Array.from({ length: 4 }, (_, i) => bankAuthorizer(`f-${i}`, { metadata: keys(50, `b${i}_`) })) },
    });
    await processBalances(ctx.rt);
    const over = await ctx.json('GET', `/v1/balances/csv?batch_ids=${wide.body.batch_id}`);
    expect(over.status).toBe(400);
    expect(over.body.error.message).toContain(`at most ${EXPORT_META_COLUMNS_MAX} meta_ columns`);
    expect(over.body.error.suggestion).toContain('fewer batches');
    const ok = await ctx.request('GET', `/v1/balances/csv?batch_ids=${fits.body.batch_id}`);
    expect(ok.status).toBe(200);
    const header = (await ok.text()).split('\r\n')[0]!.split(',');
    expect(header.length).toBe(9 + EXPORT_META_COLUMNS_MAX);
    // Alphabetical, as before.
    expect(header.slice(9)).toEqual([...header.slice(9)].sort());
  });
});

describe('the work queue of one lender is bounded', () => {
  const bounded = createTestContext({ MAX_PENDING_AUTHORIZERS_PER_LENDER: '5' });
  afterAll(() => bounded.close());
  const batch = (prefix: string, n: number, key = bounded.lender.key) =>
    bounded.json('POST', '/v1/balance_requests', { key, body: { authorizers: Array.from({ length: n }, (_, i) => bankAuthorizer(`${prefix}-${i}`)) } });

  test('past the bound a request is 429 with Retry-After, saying the bound; nothing is stored', async () => {
    expect((await batch('q1', 3)).status).toBe(201);
    expect((await batch('q2', 2)).status).toBe(201);
    const before = (bounded.sql.query('SELECT COUNT(*) AS n FROM batches').get() as { n: number }).n;
    const over = await batch('q3', 1);
    expect(over.status).toBe(429);
    expect(over.res.headers.get('retry-after')).toBe('30');
    expect(over.body.error.code).toBe('RATE_LIMITED');
    expect(over.body.error.message).toContain('at most 5 may wait');
    expect((bounded.sql.query('SELECT COUNT(*) AS n FROM batches').get() as { n: number }).n).toBe(before);
    // The CSV path is the same queue.
    const form = new FormData();
    form.append('file', new Blob(['authorizer_unique_id,ssn,account_number,routing_number\nq4,123456789,0001234567,110000000\n'], { type: 'text/csv' }), 'a.csv');
    expect((await bounded.json('POST', '/v1/balance_requests/csv', { form })).status).toBe(429);
  });

  test('another lender is not affected', async () => {
    const other = bounded.newLender();
    expect((await batch('o1', 5, other.key)).status).toBe(201);
  });

  test('/readyz and /metrics report the queue depth; processing frees the bound', async () => {
    const ready = await bounded.json('GET', '/readyz', { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body.queue_depth).toBe(10);
    const metrics = await (await bounded.request('GET', '/metrics', { key: null })).text();
    expect(metrics).toMatch(/^balance_queue_authorizers 10$/m);
    await processBalances(bounded.rt);
    expect((await bounded.json('GET', '/readyz', { key: null })).body.queue_depth).toBe(0);
    expect((await batch('q5', 5)).status).toBe(201);
  });
});
