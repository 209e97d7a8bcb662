import { describe, expect, spyOn, test, afterAll } from 'bun:test';
import { Webhook } from 'standardwebhooks';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer, cardNumberWithBalance, SANDBOX_TESTING_BANK, SANDBOX_UNSUPPORTED_BANK } from '../../helpers/fixtures';
import { processBalances, RETRY_BASE_MS } from '../../../src/modules/balance-requests/processing';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { readCsv } from '../../../src/platform/csv';

const ctx = useTestContext();

async function submit(authorizers: unknown[], extra: Record<string, unknown> = {}, key = ctx.lender.key) {
  const { status, body } = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers, ...extra }, key });
  expect(status).toBe(201);
  return body.batch_id as string;
}

async function allBalances(batchId: string, limit: number, spelling: 'next_page_token' | 'nextPageToken' = 'next_page_token') {
  const seen: { authorizer_unique_id: string; balance: number | null; balance_status_code: number }[] = [];
  let token: string | null = null;
  let pages = 0;
  do {
    const q: string = `/v1/balances?batchId=${batchId}&limit=${limit}${token ? `&${spelling}=${encodeURIComponent(token)}` : ''}`;
    const { status, body } = await ctx.json('GET', q);
    if (status !== 200) throw new Error(`page ${pages} of ${limit}: ${JSON.stringify(body)}`);
    expect(body.balances.length).toBeLessThanOrEqual(limit);
    seen.push(...body.balances);
    token = body.has_more ? body.next_page_token : null;
    if (!body.has_more) expect(body.next_page_token).toBeNull();
    pages++;
  } while (token && pages < 2000);
  return { seen, pages };
}

describe('sandbox outcomes end to end', () => {
  const cases: [string, Record<string, unknown>, number, number | null, string][] = [
    ['balance from the account number', { account_number: '0001234567' }, 0, 12345.67, 'SUCCESS'],
    ['invalid phone number', { account_number: '99992560' }, 2560, null, 'NO_MATCH'],
    ['no tax id match', { account_number: '99993000' }, 3000, null, 'NO_MATCH'],
    ['no SSN match', { account_number: '99993001' }, 3001, null, 'NO_MATCH'],
    ['no date of birth match', { account_number: '99993100' }, 3100, null, 'NO_MATCH'],
    ['account closed', { account_number: '99993200' }, 3200, null, 'ACCOUNT_CLOSED'],
    ['institution not supported (code)', { account_number: '99993300' }, 3300, null, 'BANK_UNSUPPORTED'],
    ['institution in testing (code)', { account_number: '99993310' }, 3310, null, 'BANK_UNSUPPORTED'],
    ['no match', { account_number: '99993400' }, 3400, null, 'NO_MATCH'],
    ['other error', { account_number: '99999000' }, 9000, null, 'RETRIEVAL_FAILED'],
    ['sandbox testing bank', { routing_number: SANDBOX_TESTING_BANK }, 3310, null, 'BANK_UNSUPPORTED'],
    ['sandbox unsupported bank', { routing_number: SANDBOX_UNSUPPORTED_BANK }, 3300, null, 'BANK_UNSUPPORTED'],
    ['valid routing number not in the directory', { routing_number: '021000021' }, 3300, null, 'BANK_UNSUPPORTED'],
  ];

  test('each outcome reaches results, history and the export Status', async () => {
    const authorizers = cases.map(([, over], i) => bankAuthorizer(`out-${i}`, over));
    const batchId = await submit(authorizers);
    await processBalances(ctx.rt);
    const { seen } = await allBalances(batchId, 100);
    expect(seen).toHaveLength(cases.length);
    const res = await ctx.request('GET', `/v1/balances/csv?batch_ids=${batchId}`);
    const table = readCsv(await res.text());
    const statusById = Object.fromEntries(table.rows.map((r) => [r.cells[0], r.cells[6]]));
    cases.forEach(([name, , code, balance, exportStatus], i) => {
      const entry = seen.find((s) => s.authorizer_unique_id === `out-${i}`)!;
      expect({ name, code: entry.balance_status_code, balance: entry.balance }).toEqual({ name, code, balance });
      expect({ name, status: statusById[`out-${i}`] }).toEqual({ name, status: exportStatus });
    });
    const status = await ctx.json('GET', `/v1/balance_requests/${batchId}`);
    expect(status.body).toMatchObject({ status: 'completed', total_authorizers: cases.length, total_processed: cases.length, source: 'api' });
  });

  test('a provider that fails every time ends as RETRY_LIMIT after backing off', async () => {
    const batchId = await submit([bankAuthorizer('flaky', { account_number: '99981234' }), bankAuthorizer('steady')]);
    await processBalances(ctx.rt);
    let status = await ctx.json('GET', `/v1/balance_requests/${batchId}`);
    expect(status.body.total_processed).toBe(1);
    expect(status.body.status).toBe('processing');
    // Not retried before its backoff has passed.
    await processBalances(ctx.rt);
    expect((await ctx.json('GET', `/v1/balance_requests/${batchId}`)).body.total_processed).toBe(1);
    ctx.clock.advance(RETRY_BASE_MS);
    await processBalances(ctx.rt);
    ctx.clock.advance(RETRY_BASE_MS * 2);
    await processBalances(ctx.rt);
    status = await ctx.json('GET', `/v1/balance_requests/${batchId}`);
    expect(status.body.status).toBe('completed');
    const res = await ctx.request('GET', `/v1/balances/csv?batch_ids=${batchId}`);
    const row = readCsv(await res.text()).rows.find((r) => r.cells[0] === 'flaky')!;
    expect(row.cells[6]).toBe('RETRY_LIMIT');
    expect(row.cells[5]).toBe('');
    const history = await ctx.json('GET', '/v1/monitoring/authorizers/flaky/history');
    expect(history.body.history[0]).toMatchObject({ status: 'failed', balance_amount: null });
    expect(history.body.history[0].error_message).toMatch(/Other error/);
  });

  test('debit-card reads take the balance from the card number', async () => {
    const lender = ctx.newLender(undefined, { cards: true });
    const batchId = await submit(
      [{ authorizer_unique_id: 'card-1', ein: '123456789', debit_card_number: cardNumberWithBalance(98765) }],
      {},
      lender.key,
    );
    await processBalances(ctx.rt);
    const { body } = await ctx.json('GET', `/v1/balances?batchId=${batchId}`, { key: lender.key });
    expect(body.balances[0]).toMatchObject({ authorizer_unique_id: 'card-1', balance: 987.65, balance_status_code: 0 });
  });
});

describe('idempotency', () => {
  test('the same body within 24 hours replays the first answer; a different body or a later time makes a new batch', async () => {
    const body = { authorizers: [bankAuthorizer('idem-1'), bankAuthorizer('idem-bad', { ssn: '1' })] };
    const first = await ctx.json('POST', '/v1/balance_requests', { body });
    const again = await ctx.json('POST', '/v1/balance_requests', { body });
    expect(again.status).toBe(201);
    expect(first.body.replayed).toBe(false);
    expect(first.res.headers.get('idempotent-replayed')).toBeNull();
    expect(again.res.headers.get('idempotent-replayed')).toBe('true');
    // The first answer again, saying in its body that it is one.
    expect(again.body).toEqual({ ...first.body, replayed: true });
    const count = () =>
      (ctx.sql.query('SELECT COUNT(*) AS n FROM batches WHERE lender_id = ?').get(ctx.lender.id) as { n: number }).n;
    const before = count();
    await ctx.json('POST', '/v1/balance_requests', { body });
    expect(count()).toBe(before);
    const other = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('idem-1', { account_number: '0000000001' })] } });
    expect(other.body.batch_id).not.toBe(first.body.batch_id);
    expect(other.res.headers.get('idempotent-replayed')).toBeNull();
    // Another lender sending the same body gets its own batch.
    const lender = ctx.newLender();
    const theirs = await ctx.json('POST', '/v1/balance_requests', { body, key: lender.key });
    expect(theirs.body.batch_id).not.toBe(first.body.batch_id);
    ctx.clock.advance(24 * 3600_000 + 1);
    const later = await ctx.json('POST', '/v1/balance_requests', { body });
    expect(later.body.batch_id).not.toBe(first.body.batch_id);
    expect(later.body.replayed).toBe(false);
  });

  // The CSV route is the same request as a file: the same file with the same webhook_url replays as an identical
  // JSON body does.
  const CSV_HEADER = 'authorizer_unique_id,ssn,account_number,routing_number';
  const csvFile = (rows: string[], head = CSV_HEADER) => `${head}\n${rows.join('\n')}\n`;
  async function sendCsv(file: string | Uint8Array, opts: { webhook?: string; key?: string } = {}) {
    const form = new FormData();
    form.append('file', new Blob([file], { type: 'text/csv' }), 'a.csv');
    if (opts.webhook !== undefined) form.append('webhook_url', opts.webhook);
    const r = await ctx.json('POST', '/v1/balance_requests/csv', { form, ...(opts.key ? { key: opts.key } : {}) });
    expect(r.status).toBe(201);
    return r;
  }
  const batches = () => (ctx.sql.query('SELECT COUNT(*) AS n FROM batches WHERE lender_id = ?').get(ctx.lender.id) as { n: number }).n;

  test('the same CSV file within 24 hours replays the first answer, saying so in its body; past 24 hours it is a new batch', async () => {
    // Latin-1 (é as one byte): the first answer's warning is in the replay too.
    const text = csvFile(['csv-idem-bad,1,0001234567,110000000,x', 'csv-idem-1,123456789,0001234567,110000000,caf'], `${CSV_HEADER},meta_note`);
    const bytes = new Uint8Array([...new TextEncoder().encode(text.slice(0, -1)), 0xe9, 0x0a]);
    const first = await sendCsv(bytes);
    expect(first.body.replayed).toBe(false);
    expect(first.res.headers.get('idempotent-replayed')).toBeNull();
    expect(first.body.warnings.length).toBe(1);
    expect(first.body.failed_authorizers.map((f: { authorizer_unique_id: string }) => f.authorizer_unique_id)).toEqual(['csv-idem-bad']);
    const before = batches();
    ctx.clock.advance(24 * 3600_000 - 1);
    const again = await sendCsv(bytes);
    expect(again.res.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual({ ...first.body, replayed: true });
    expect(batches()).toBe(before);
    // A day after the first answer it is forgotten: a new batch, read again.
    ctx.clock.advance(2);
    const later = await sendCsv(bytes);
    expect(later.body.batch_id).not.toBe(first.body.batch_id);
    expect(later.body.replayed).toBe(false);
    expect(later.res.headers.get('idempotent-replayed')).toBeNull();
    expect(batches()).toBe(before + 1);
    // And that one is replayed in its turn.
    expect((await sendCsv(bytes)).body).toMatchObject({ batch_id: later.body.batch_id, replayed: true });
  });

  test('a changed file, another webhook_url or another lender makes a new batch', async () => {
    const rows = ['csv-fresh-1,123456789,0001234567,110000000'];
    const first = await sendCsv(csvFile(rows));
    expect(first.body.replayed).toBe(false);
    const seen = new Set([first.body.batch_id]);
    const fresh = async (r: { body: { batch_id: string; replayed: boolean } }) => {
      expect(r.body.replayed).toBe(false);
      expect(seen.has(r.body.batch_id)).toBe(false);
      seen.add(r.body.batch_id);
    };
    // The documented way to read again: a meta_ column (here the time of the request).
    await fresh(await sendCsv(csvFile(['csv-fresh-1,123456789,0001234567,110000000,2026-11-21T12:00'], `${CSV_HEADER},meta_requested_at`)));
    // Any byte: the same rows with a CRLF line ending.
    await fresh(await sendCsv(csvFile(rows).replace('\n', '\r\n')));
    await fresh(await sendCsv(csvFile(rows), { webhook: 'http://127.0.0.1:9/balances' }));
    await fresh(await sendCsv(csvFile(rows), { key: ctx.newLender().key }));
    // Each of those is replayed in its turn, the first one too.
    expect((await sendCsv(csvFile(rows), { webhook: 'http://127.0.0.1:9/balances' })).body.replayed).toBe(true);
    expect((await sendCsv(csvFile(rows))).body).toMatchObject({ batch_id: first.body.batch_id, replayed: true });
  });
});

describe('results', () => {
  test('1000 results come back exactly once at several page sizes and with both token spellings', async () => {
    const authorizers = Array.from({ length: 1000 }, (_, i) => bankAuthorizer(`p-${i}`, { account_number: String(i).padStart(10, '0') }));
    const batchId = await submit(authorizers);
    await processBalances(ctx.rt);
    for (const [limit, spelling] of [[1, 'next_page_token'], [7, 'nextPageToken'], [100, 'next_page_token'], [64, 'nextPageToken']] as const) {
      const { seen, pages } = await allBalances(batchId, limit, spelling);
      expect(pages).toBe(Math.ceil(1000 / limit));
      const ids = seen.map((s) => s.authorizer_unique_id);
      expect(new Set(ids).size).toBe(1000);
      expect(ids).toHaveLength(1000);
      expect(seen.find((s) => s.authorizer_unique_id === 'p-42')!.balance).toBe(0.42);
    }
    const { body } = await ctx.json('GET', `/v1/balances?batchId=${batchId}`);
    expect(body.balances).toHaveLength(100); // default limit
    expect(body.total_processed).toBe(1000);
  });

  test('while a batch runs, pages hold what is recorded and has_more stays true', async () => {
    const batchId = await submit([bankAuthorizer('run-1'), bankAuthorizer('run-2', { account_number: '99981111' })]);
    await processBalances(ctx.rt);
    const page = await ctx.json('GET', `/v1/balances?batchId=${batchId}`);
    expect(page.body.balances.map((b: { authorizer_unique_id: string }) => b.authorizer_unique_id)).toEqual(['run-1']);
    expect(page.body.has_more).toBe(true);
    ctx.clock.advance(60_000);
    await processBalances(ctx.rt);
    ctx.clock.advance(60_000);
    await processBalances(ctx.rt);
    const next = await ctx.json('GET', `/v1/balances?batchId=${batchId}&next_page_token=${encodeURIComponent(page.body.next_page_token)}`);
    expect(next.body.balances.map((b: { authorizer_unique_id: string }) => b.authorizer_unique_id)).toEqual(['run-2']);
    expect(next.body.has_more).toBe(false);
  });

  test('a tampered page token is a 400; a limit outside 1..100 is a 400', async () => {
    const batchId = await submit([bankAuthorizer('tok-1')]);
    expect((await ctx.json('GET', `/v1/balances?batchId=${batchId}&next_page_token=abc.def`)).status).toBe(400);
    expect((await ctx.json('GET', `/v1/balances?batchId=${batchId}&limit=101`)).status).toBe(400);
    expect((await ctx.json('GET', `/v1/balances`)).status).toBe(400);
  });

  test('the batch is named batchId (the spec) or batch_id (as everywhere else); the export takes batch_ids or batchIds', async () => {
    const batchId = await submit([bankAuthorizer('spell-1')]);
    await processBalances(ctx.rt);
    const camel = await ctx.json('GET', `/v1/balances?batchId=${batchId}`);
    const snake = await ctx.json('GET', `/v1/balances?batch_id=${batchId}`);
    expect(snake.status).toBe(200);
    expect(snake.body.balances).toEqual(camel.body.balances);
    expect(snake.body.balances.map((b: { authorizer_unique_id: string }) => b.authorizer_unique_id)).toEqual(['spell-1']);
    expect((await ctx.json('GET', `/v1/balances?batchId=${batchId}&batch_id=${batchId}`)).status).toBe(200);

    const other = await submit([bankAuthorizer('spell-2')]);
    const both = await ctx.json('GET', `/v1/balances?batchId=${batchId}&batch_id=${other}`);
    expect(both.status).toBe(400);
    expect(both.body.error.message).toContain('different batches');
    const none = await ctx.json('GET', '/v1/balances');
    expect(none.body.error.details.errors[0].path).toBe('batchId');
    expect(none.body.error.message).toContain('batch_id');

    const csv = await ctx.request('GET', `/v1/balances/csv?batchIds=${batchId}`);
    expect(csv.status).toBe(200);
    expect(await csv.text()).toContain('spell-1');
  });

  test('another lender’s batch is not found for results and status, forbidden for export', async () => {
    const batchId = await submit([bankAuthorizer('mine-1')]);
    const other = ctx.newLender();
    expect((await ctx.json('GET', `/v1/balances?batchId=${batchId}`, { key: other.key })).status).toBe(404);
    expect((await ctx.json('GET', `/v1/balance_requests/${batchId}`, { key: other.key })).status).toBe(404);
    const own = await submit([bankAuthorizer('theirs-1')], {}, other.key);
    const res = await ctx.json('GET', `/v1/balances/csv?batch_ids=${own}&batch_ids=${batchId}`, { key: other.key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    const unknown = await ctx.json('GET', `/v1/balances/csv?batch_ids=${crypto.randomUUID()}`);
    expect(unknown.status).toBe(403);
    expect((await ctx.json('GET', '/v1/balances/csv')).status).toBe(400);
    expect((await ctx.json('GET', '/v1/balances/csv?batch_ids=not-a-uuid')).status).toBe(400);
    expect((await ctx.json('GET', `/v1/monitoring/authorizers/mine-1/history`, { key: other.key })).body.total_count).toBe(0);
  });

  test('history is newest first with cursor pages and a total count', async () => {
    for (let i = 0; i < 3; i++) {
      await submit([bankAuthorizer('hist-1', { account_number: String(i + 1).padStart(10, '0') })]);
      await processBalances(ctx.rt);
      ctx.clock.advance(1000);
    }
    const first = await ctx.json('GET', '/v1/monitoring/authorizers/hist-1/history?limit=2');
    expect(first.body.total_count).toBe(3);
    expect(first.body.history.map((h: { balance_amount: number }) => h.balance_amount)).toEqual([0.03, 0.02]);
    expect(first.body.has_more).toBe(true);
    const second = await ctx.json('GET', `/v1/monitoring/authorizers/hist-1/history?limit=2&nextPageToken=${encodeURIComponent(first.body.next_page_token)}`);
    expect(second.body.history.map((h: { balance_amount: number }) => h.balance_amount)).toEqual([0.01]);
    expect(second.body.has_more).toBe(false);
    expect(second.body.history[0].status).toBe('success');
    expect(second.body.history[0].error_message).toBeUndefined();
    expect((await ctx.json('GET', '/v1/monitoring/authorizers/hist-1/history?limit=101')).status).toBe(400);
    const dflt = await ctx.json('GET', '/v1/monitoring/authorizers/nobody/history');
    expect(dflt.body).toEqual({ authorizer_unique_id: 'nobody', total_count: 0, history: [], next_page_token: null, has_more: false });
  });
});

describe('export', () => {
  test('two batches with different metadata keys: fixed columns, then the union of meta columns in order', async () => {
    const a = await submit([
      bankAuthorizer('exp-1', { phone_number: '202-555-0143', address: { zip_code: '02139' }, metadata: { zeta: 'z1', branch: '=HYPERLINK("x")' } }),
    ]);
    const b = await submit([bankAuthorizer('exp-2', { account_number: '99993200', metadata: { alpha: 7, flag: true } })]);
    await processBalances(ctx.rt);
    const res = await ctx.request('GET', `/v1/balances/csv?batch_ids=${a}&batch_ids=${b}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename=batch-export-\d{8}T\d{6}Z\.csv$/);
    const table = readCsv(await res.text());
    expect(table.header).toEqual([
      'Authorizer ID', 'Batch ID', 'Institution', 'Phone', 'Zip', 'Balance', 'Status', 'Creator', 'Timestamp',
      'meta_alpha', 'meta_branch', 'meta_flag', 'meta_zeta',
    ]);
    const recordedAt = new Date(ctx.clock.now()).toISOString();
    expect(table.rows[0]!.cells).toEqual([
      'exp-1', a, 'Sandbox Bank', '+12025550143', '02139', '12345.67', 'SUCCESS', '', recordedAt,
      '', `'=HYPERLINK("x")`, '', 'z1',
    ]);
    expect(table.rows[1]!.cells).toEqual([
      'exp-2', b, 'Sandbox Bank', '', '', '', 'ACCOUNT_CLOSED', '', recordedAt, '7', '', 'true', '',
    ]);
  });
});

describe('batch completion webhook', () => {
  const received: { headers: Record<string, string>; body: string }[] = [];
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      received.push({ headers: Object.fromEntries(req.headers), body: await req.text() });
      return new Response('ok');
    },
  });
  afterAll(() => server.stop(true));

  test('arrives once, signed, when the batch completes', async () => {
    const url = `http://127.0.0.1:${server.port}/hook`;
    const batchId = await submit([bankAuthorizer('wh-1'), bankAuthorizer('wh-2')], { webhook_url: url });
    await deliverDueWebhooks(ctx.rt);
    expect(received).toHaveLength(0); // nothing before completion
    await processBalances(ctx.rt);
    await deliverDueWebhooks(ctx.rt);
    await deliverDueWebhooks(ctx.rt);
    expect(received).toHaveLength(1);
    const { secret } = (await ctx.json('GET', '/v1/webhooks/secret')).body;
    const payload = new Webhook(secret).verify(received[0]!.body, received[0]!.headers) as Record<string, string>;
    expect(payload).toMatchObject({ type: 'BALANCE_BATCH_COMPLETED', batch_id: batchId });
    expect(payload.event_uuid).toBe(received[0]!.headers['webhook-id']!);
    expect(Object.keys(payload).sort()).toEqual(['batch_id', 'event_uuid', 'type']);
  });
});

describe('fair sharing', () => {
  test('a small batch of another lender is served while a large batch is still running', async () => {
    const big = await submit(Array.from({ length: 300 }, (_, i) => bankAuthorizer(`big-${i}`)));
    const lender = ctx.newLender();
    const small = await submit([bankAuthorizer('small-1'), bankAuthorizer('small-2')], {}, lender.key);
    // Record the order results are written in: the small batch must finish among the first results.
    await processBalances(ctx.rt, { concurrency: 4 });
    const order = ctx.sql
      .query<{ batch_id: string }, [string, string]>('SELECT batch_id FROM balance_results WHERE batch_id IN (?, ?) ORDER BY id')
      .all(big, small)
      .map((r) => r.batch_id);
    const lastSmall = order.lastIndexOf(small);
    expect(lastSmall).toBeGreaterThanOrEqual(0);
    // Among the first claim's results: four rounds of the concurrency, or the engine's larger claim
    // (PostgreSQL's 128, still short of the large batch's 300).
    expect(lastSmall).toBeLessThan(Math.max(20, ctx.rt.stores.balances.readsPerClaim));
  });
});

describe('the sealed payload', () => {
  test('is opened once per tick, however many of its batch’s reads start together', async () => {
    const batchId = await submit(Array.from({ length: 40 }, (_, i) => bankAuthorizer(`once-${i}`)));
    const { sealed } = ctx.sql.query<{ sealed: string }, [string]>('SELECT sealed FROM batch_payloads WHERE batch_id = ?').get(batchId)!;
    const opened = spyOn(ctx.rt.vault, 'openBytes');
    try {
      await processBalances(ctx.rt, { concurrency: 16 });
      expect(opened.mock.calls.filter(([s]) => s === sealed)).toHaveLength(1);
    } finally {
      opened.mockRestore();
    }
    const { body } = await ctx.json('GET', `/v1/balance_requests/${batchId}`);
    expect(body).toMatchObject({ status: 'completed', total_processed: 40 });
  });
});
