import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { AcceptWorker, acceptWorkerOf, INLINE_BYTES } from '../../../src/modules/balance-requests/accept-offload';
import { openSensitive } from '../../../src/modules/balance-requests/payload';

// A large balance request is prepared in the accept worker (its own thread, a vault with the current key);
// a small one on the event loop. Both must answer alike and store a payload the service can open.

const ctx = useTestContext();

/** 1000 authorizers (about 90 KB): the worker's side of INLINE_BYTES. Two of them fail their rules. */
function largeBody(tag: string, over: Record<number, Record<string, unknown>> = {}) {
  const authorizers = Array.from({ length: 1000 }, (_, i) => bankAuthorizer(`${tag}-${i}`, over[i] ?? {}));
  const body = { authorizers };
  expect(JSON.stringify(body).length).toBeGreaterThan(INLINE_BYTES);
  return body;
}

const failures = { 10: { ssn: '12345678' }, 900: { routing_number: '12345678' } };

const HEAD = 'authorizer_unique_id,ssn,account_number,routing_number,favourite_colour,meta_branch';
/** A CSV of `rows` rows, the row on line 12 with a short SSN, those on lines 902 and 903 sharing one id. */
function csvOf(tag: string, rows: number): Uint8Array {
  const lines = [HEAD];
  for (let i = 0; i < rows; i++) {
    const id = i === 901 ? `${tag}-900` : `${tag}-${i}`;
    lines.push(`${id},${i === 10 ? '1234' : '123456789'},0000000100,110000000,blue,north-${i % 7}`);
  }
  return new TextEncoder().encode(lines.join('\r\n') + '\r\n');
}
const send = (bytes: Uint8Array) => {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'text/csv' }), 'balances.csv');
  return ctx.json('POST', '/v1/balance_requests/csv', { form });
};
const rowsOf = (r: { body: { failed_authorizers: { row_number: number; error: string }[] } }) => r.body.failed_authorizers.map((f) => [f.row_number, f.error]);


describe('large balance CSVs, read, checked and sealed in the accept worker', () => {
  test('a large file answers as a small one would: the same failed rows, the same warnings; its sealed payload opens', async () => {
    const bigBytes = csvOf('bigcsv', 1500);
    expect(bigBytes.byteLength).toBeGreaterThan(INLINE_BYTES);
    const big = await send(bigBytes);
    expect(big.status).toBe(201);
    expect(big.body.message).toBe('Batch accepted: 1497 authorizers queued for a balance check');
    const smallBytes = csvOf('smallcsv', 903);
    const small = await send(smallBytes);
    expect(small.status).toBe(201);
    expect(rowsOf(big)).toEqual(rowsOf(small));
    expect(rowsOf(big).map(([n]) => n)).toEqual([12, 902, 903]);
    expect(big.body.warnings).toEqual(small.body.warnings);
    expect(big.body.warnings.join(' ')).toContain('favourite_colour');

    await processBalances(ctx.rt);
    const status = await ctx.json('GET', `/v1/balance_requests/${big.body.batch_id}`);
    expect(status.body).toMatchObject({ status: 'completed', total_authorizers: 1497, total_processed: 1497 });
    const page = await ctx.json('GET', `/v1/balances?batchId=${big.body.batch_id}&limit=100`);
    // The sandbox's account 0000000100 holds $1.00: every row was opened and read.
    expect(page.body.balances).toHaveLength(100);
    expect(page.body.balances.every((b: { balance: number }) => b.balance === 1)).toBe(true);
  });

  test('a large file that cannot be read, or is over the row cap, is the same 400 from the worker', async () => {
    const unclosed = new TextEncoder().encode(`${HEAD}\r\n"open quote,1,2,3,4,5\r\n${'x,'.repeat(40_000)}`);
    expect(unclosed.byteLength).toBeGreaterThan(INLINE_BYTES);
    const bad = await send(unclosed);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('BAD_REQUEST');
    expect(bad.body.error.message + JSON.stringify(bad.body.error.details)).toContain('could not be read');
    const over = await send(csvOf('overcap', 5001));
    expect(over.status).toBe(400);
    expect(JSON.stringify(over.body.error)).toContain('more than 5000 data rows');
  });
});

describe('large balance requests, prepared in the accept worker', () => {
  test('accepted with the same per-authorizer failures as a small request, and every sealed payload opens', async () => {
    const big = await ctx.json('POST', '/v1/balance_requests', { body: largeBody('big', failures) });
    expect(big.status).toBe(201);
    expect(big.body.message).toBe('Batch accepted: 998 authorizers queued for a balance check');
    expect(big.body.failed_authorizers.map((f: { row_number: number }) => f.row_number)).toEqual([11, 901]);

    // The same two failures in a small body, prepared on the event loop: the same entries.
    const smallList = [bankAuthorizer('small-0', failures[10]), bankAuthorizer('small-1'), bankAuthorizer('small-2', failures[900])];
    expect(JSON.stringify({ authorizers: smallList }).length).toBeLessThan(INLINE_BYTES);
    const small = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: smallList } });
    expect(small.status).toBe(201);
    const errors = (r: { body: { failed_authorizers: { error: string }[] } }) => r.body.failed_authorizers.map((f) => f.error);
    expect(errors(big)).toEqual([errors(small)[0]!, errors(small)[1]!]);

    // The payload sealed in the worker is opened by the service's own vault when the batch is processed.
    await processBalances(ctx.rt);
    const status = await ctx.json('GET', `/v1/balance_requests/${big.body.batch_id}`);
    expect(status.body).toMatchObject({ status: 'completed', total_authorizers: 998, total_processed: 998 });
    const balances: { balance: number }[] = [];
    let token = '';
    do {
      const page = await ctx.json('GET', `/v1/balances?batchId=${big.body.batch_id}&limit=100${token ? `&next_page_token=${encodeURIComponent(token)}` : ''}`);
      expect(page.status).toBe(200);
      balances.push(...page.body.balances);
      token = page.body.has_more ? page.body.next_page_token : '';
    } while (token);
    expect(balances).toHaveLength(998);
    expect(balances.every((b) => b.balance === 12345.67)).toBe(true);
  });

  test('the same large body again is the first answer, replayed; no second batch', async () => {
    const body = largeBody('replay');
    const first = await ctx.json('POST', '/v1/balance_requests', { body });
    const again = await ctx.json('POST', '/v1/balance_requests', { body });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.res.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.batch_id).toBe(first.body.batch_id);
  });

  test('a large body that breaks its schema deep inside is a 400 naming the path', async () => {
    const body = largeBody('schema', { 950: { ssn: 123456789 } });
    const r = await ctx.json('POST', '/v1/balance_requests', { body });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toStartWith('Invalid request body: /authorizers/950/ssn');
    expect(r.body.error.details.errors.map((e: { path: string }) => e.path)).toEqual(['/authorizers/950/ssn']);
    expect(JSON.stringify(r.body)).not.toContain('123456789');
  });

  test('large bodies that are not JSON, or nest too deep, are 400s with the small bodies’ messages', async () => {
    const notJson = await ctx.json('POST', '/v1/balance_requests', { raw: `{"authorizers": [${'1,'.repeat(INLINE_BYTES)}`, headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.message).toBe('Request body is not valid JSON');
    const deep = await ctx.json('POST', '/v1/balance_requests', {
      raw: `{"authorizers": [${'['.repeat(40)}${']'.repeat(40)}], "pad": "${'x'.repeat(INLINE_BYTES)}"}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(deep.status).toBe(400);
    expect(deep.body.error.message).toBe('The JSON body nests deeper than 32 levels');
  });

  test('every authorizer failing its rules is a 400 listing them all', async () => {
    const over = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [i, { ssn: '1' }]));
    const r = await ctx.json('POST', '/v1/balance_requests', { body: largeBody('allbad', over) });
    expect(r.status).toBe(400);
    expect(r.body.error.details.failed_authorizers).toHaveLength(1000);
  });

  test('large bodies arriving together are spread over the accept threads, each accepted once', async () => {
    const pool = new AcceptWorker(ctx.rt, 2);
    try {
      const bodies = Array.from({ length: 6 }, (_, k) => new TextEncoder().encode(JSON.stringify(largeBody(`spread-${k}`))));
      const prepared = await Promise.all(bodies.map((b) => pool.prepare(b, { debitCardsApproved: false, now: ctx.rt.clock.now() })));
      expect(pool.running).toBe(2);
      expect(prepared.map((p) => p.accepted.count)).toEqual([1000, 1000, 1000, 1000, 1000, 1000]);
      expect(new Set(prepared.map((p) => p.bodyHash)).size).toBe(6);
      // Sealed in either thread, opened by the service's vault.
      for (const p of prepared) expect(openSensitive(ctx.rt.vault, p.accepted.sealed)).toHaveLength(1000);
    } finally {
      pool.close();
    }
    // One at a time, one thread is enough.
    const calm = new AcceptWorker(ctx.rt, 2);
    try {
      for (let k = 0; k < 3; k++) await calm.prepare(new TextEncoder().encode(JSON.stringify(largeBody(`calm-${k}`))), { debitCardsApproved: false, now: ctx.rt.clock.now() });
      expect(calm.running).toBe(1);
    } finally {
      calm.close();
    }
  });

  test('when the worker is gone (the service stopping), a large request is a 503 and records nothing; a small one is still served', async () => {
    const before = ctx.sql.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM batches').get()!.n;
    acceptWorkerOf(ctx.rt).close();
    const big = await ctx.json('POST', '/v1/balance_requests', { body: largeBody('closed') });
    expect(big.status).toBe(503);
    expect(ctx.sql.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM batches').get()!.n).toBe(before);
    // A large balance CSV too: it is read, checked and sealed in the same threads.
    const bigCsv = await send(csvOf('closedcsv', 1500));
    expect(bigCsv.status).toBe(503);
    expect(ctx.sql.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM batches').get()!.n).toBe(before);
    const small = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('after-close')] } });
    expect(small.status).toBe(201);
    expect((await send(csvOf('aftercsv', 5))).status).toBe(201);
  });
});

describe('requests accepted at the same moment (one group commit)', () => {
  const bounded = useTestContext({ MAX_PENDING_AUTHORIZERS_PER_LENDER: '5' });

  test('each is answered alone: distinct batches up to the queue bound, a 429 past it, nothing of the refused stored', async () => {
    const answers = await Promise.all(
      Array.from({ length: 7 }, (_, i) => bounded.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer(`same-moment-${i}`)] } })),
    );
    const accepted = answers.filter((a) => a.status === 201);
    expect(accepted).toHaveLength(5);
    expect(new Set(accepted.map((a) => a.body.batch_id)).size).toBe(5);
    expect(answers.filter((a) => a.status === 429).map((a) => a.body.error.code)).toEqual(['RATE_LIMITED', 'RATE_LIMITED']);
    const stored = bounded.sql.query<{ id: string }, []>('SELECT id FROM batches').all().map((b) => b.id);
    expect(stored.sort()).toEqual(accepted.map((a) => a.body.batch_id).sort());
  });
});
