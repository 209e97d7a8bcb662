// The portal as a place to work, through the real app: a schedule run now and a borrower read now from their
// pages, through the API's own services and bounds.
import { afterAll, describe, expect, test } from 'bun:test';
import { readFileSync, writeFileSync } from 'node:fs';
import { createTestContext, type TestContext } from '../../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../../helpers/fixtures';
import { signedIn } from '../../helpers/portal';
import { onPostgres } from '../../helpers/pg';
import { queueDueReads } from '../../../src/modules/enrollments/monitoring';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { generateVaultKey } from '../../../src/platform/vault';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
const fresh = (env: Record<string, string> = {}) => {
  const c = createTestContext({ MONITOR_READ_INTERVAL_MS: '3600000', ...env }, { clockAt: '2026-11-21T12:00:00.000Z' });
  contexts.push(c);
  return c;
};
/** A column of bytes as hex text, on either engine (psql gives a bytea as text, SQLite a BLOB as bytes). */
const hex = (column: string) => (onPostgres ? `upper(encode(${column}, 'hex'))` : `hex(${column})`);
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/&#39;|&#x27;/g, "'").replace(/\s+/g, ' ');

describe('doing things now from the portal', () => {
  test('a schedule page runs the schedule now: the run is a batch of the schedule, and the page links it', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const s = await c.json('POST', '/v1/monitoring/scheduled_balance_request', { body: { name: 'nightly', interval_days: 1, authorizers: [bankAuthorizer('p-1')] } });
    const page = await p.get(`/portal/monitoring/${s.body.schedule_id}`);
    expect(page.text).toContain(`action="/portal/monitoring/${s.body.schedule_id}/run"`);
    const r = await p.post(`/portal/monitoring/${s.body.schedule_id}/run`, {});
    expect(r.status).toBe(200);
    const batch = c.sql.query<{ id: string }, [string]>('SELECT id FROM batches WHERE schedule_id = ?').get(s.body.schedule_id)!;
    expect(text(r.text)).toContain(`Run started: 1 authorizer in batch ${batch.id}`);
    expect(r.text).toContain(`href="/portal/balance-checks/${batch.id}"`);
    // A second run while the first is in progress is refused on the page, with the API's reason.
    const again = await p.post(`/portal/monitoring/${s.body.schedule_id}/run`, {});
    expect(text(again.text)).toContain('Not run: A run of this schedule is still in progress');
    // Without the form's token, nothing runs.
    expect((await p.post(`/portal/monitoring/${s.body.schedule_id}/run`, {}, { csrf: null })).status).toBe(403);
    expect(c.sql.query('SELECT COUNT(*) AS n FROM batches').get()).toEqual({ n: 1 });
  });

  test('a borrower page reads the balance now; a borrower no longer monitored has no button', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('read-me', { account_number: '0000012345' }), enrollBorrower('gone')] } });
    await queueDueReads(c.rt);
    await processBalances(c.rt);
    await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['gone'] } });
    expect((await p.get('/portal/payments/borrowers/read-me')).text).toContain('Read balance now');
    expect((await p.get('/portal/payments/borrowers/gone')).text).not.toContain('Read balance now');
    c.clock.advance(60_000);
    const r = await p.post('/portal/payments/borrowers/read-me/read', {});
    expect(r.status).toBe(200);
    expect(text(r.text)).toContain('Balance read queued');
    await processBalances(c.rt);
    const view = (await c.json('GET', '/v1/payment_enrollments/read-me')).body;
    expect(view.last_read.at).toBe(new Date(c.clock.now()).toISOString());
    const refused = await p.post('/portal/payments/borrowers/gone/read', {});
    expect(text(refused.text)).toContain('Not read: The borrower is removed');
    expect((await p.post('/portal/payments/borrowers/nobody/read', {})).status).toBe(404);
  });
});

async function uploadBalanceCsv(c: TestContext, cookie: string, csv: string) {
  const pageHtml = await (await c.request('GET', '/portal/balance-checks', { key: null, headers: { cookie } })).text();
  const form = new FormData();
  form.append('_csrf', /name="_csrf" value="([^"]+)"/.exec(pageHtml)![1]!);
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'balances.csv');
  const res = await c.request('POST', '/portal/balance-checks', { key: null, form, headers: { cookie } });
  return { status: res.status, text: await res.text() };
}

describe('balance batches in the portal', () => {
  const HEADER = 'authorizer_unique_id,ssn,account_number,routing_number';

  test('a CSV upload lists each row that failed with its reason, as the API does; the batch is linked', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const r = await uploadBalanceCsv(c, p.cookie, `${HEADER}\nok-1,123456789,0001234567,110000000\nbad-ssn,12,0001234567,110000000\nbad-routing,123456789,0001234567,110000001\n`);
    expect(r.status).toBe(200);
    const t = text(r.text);
    expect(t).toContain('2 rows failed validation (listed below)');
    const api = await c.json('POST', '/v1/balance_requests/csv', { form: (() => { const f = new FormData(); f.append('file', new Blob([`${HEADER}\nok-2,123456789,0001234567,110000000\nbad-ssn,12,0001234567,110000000\nbad-routing,123456789,0001234567,110000001\n`], { type: 'text/csv' }), 'b.csv'); return f; })() });
    for (const f of api.body.failed_authorizers as { row_number: number; authorizer_unique_id: string; error: string }[]) {
      expect(r.text).toContain(`<td>${f.row_number}</td><td>${f.authorizer_unique_id}</td>`);
      expect(t).toContain(f.error);
    }
    const batch = c.sql.query<{ id: string }, []>("SELECT id FROM batches WHERE creator IS NOT NULL").get()!;
    expect(r.text).toContain(`href="/portal/balance-checks/${batch.id}"`);
  });

  test('every row refused: the page still names each row and why', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const r = await uploadBalanceCsv(c, p.cookie, `${HEADER}\nbad-1,12,0001234567,110000000\nbad-2,123456789,,110000000\n`);
    const t = text(r.text);
    expect(t).toContain('No authorizer in the request passed validation');
    expect(r.text).toContain('<td>2</td><td>bad-1</td>');
    expect(r.text).toContain('<td>3</td><td>bad-2</td>');
  });

  test('a batch page: counts by status, the results paged, the export; the list links it; another lender’s is 404', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const authorizers = [
      ...Array.from({ length: 55 }, (_, i) => bankAuthorizer(`ok-${String(i).padStart(2, '0')}`)),
      bankAuthorizer('closed', { account_number: '99993200' }),
      bankAuthorizer('nomatch', { account_number: '99993400' }),
    ];
    const sent = await c.json('POST', '/v1/balance_requests', { body: { authorizers } });
    const id = sent.body.batch_id as string;
    expect((await p.get('/portal/balance-checks')).text).toContain(`href="/portal/balance-checks/${id}"`);
    const waiting = text((await p.get(`/portal/balance-checks/${id}`)).text);
    expect(waiting).toContain('Waiting to be checked 57');
    while ((await c.json('GET', `/v1/balance_requests/${id}`)).body.status !== 'completed') await processBalances(c.rt);
    const html = (await p.get(`/portal/balance-checks/${id}`)).text;
    const t = text(html);
    expect(t).toContain('Balance read SUCCESS 55');
    expect(t).toContain('Account closed ACCOUNT_CLOSED 1');
    expect(t).toContain('No match NO_MATCH 1');
    expect(t).toContain('Checked 57 of 57');
    expect(html).toContain(`href="/portal/balance-checks/export?batch_ids=${id}"`);
    expect(html.match(/<tr><td>ok-\d\d<\/td>/g)).toHaveLength(50);
    const next = /href="(\/portal\/balance-checks\/[^"]+next_page_token=[^"]+)"/.exec(html)![1]!.replace(/&amp;/g, '&');
    const second = (await p.get(next)).text;
    expect(second.match(/<tr><td>ok-\d\d<\/td>/g)).toHaveLength(5);
    expect(second).toContain('<td>closed</td>');
    expect(text(second)).toContain('3200 Account closed');
    const other = c.newLender();
    const theirs = await signedIn(c, { lenderId: other.id });
    expect((await theirs.get(`/portal/balance-checks/${id}`)).status).toBe(404);
  });
});

describe('finding a borrower', () => {
  test('by name (any case and accents, first, last or both), phone in any format, account or card last four, payment reference', async () => {
    const c = fresh();
    const p = await signedIn(c);
    expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_search_00000000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
    await c.json('POST', '/v1/payment_enrollments', {
      body: {
        borrowers: [
          enrollBorrower('find-1', { first_name: 'Zoë', last_name: "O'Hara", phone_number: '(202) 555-0177', account_number: '0004239876', collectable_amount: 100 }),
          enrollBorrower('find-2', { first_name: 'Ada', last_name: 'Lovelace', phone_number: '2025550199', account_number: '0001234567' }),
          enrollBorrower('find-3', { first_name: 'Lee', last_name: 'Lee', phone_number: '2025550111', account_number: '0001112222' }),
        ],
      },
    });
    await cycle(c);
    const found = async (q: string) => {
      const html = (await p.get(`/portal/payments/borrowers?find=${encodeURIComponent(q)}`)).text;
      return [...html.matchAll(/<tr><td><a href="\/portal\/payments\/borrowers\/([^"]+)">/g)].map((m) => decodeURIComponent(m[1]!));
    };
    expect(await found('zoe')).toEqual(['find-1']);
    expect(await found("ZOË O'HARA")).toEqual(['find-1']);
    expect(await found('o hara')).toEqual(['find-1']);
    expect(await found('+1 202-555-0177')).toEqual(['find-1']);
    expect(await found('9876')).toEqual(['find-1']);
    expect(await found('Lovelace')).toEqual(['find-2']);
    expect(await found('zo')).toEqual([]); // names match whole
    expect(await found('O Hara, Zoe')).toEqual(['find-1']); // last name first
    expect(await found('zoe lovelace')).toEqual([]); // one borrower's first name, another's last
    expect(await found('zoe zoe')).toEqual([]);
    expect(await found('zoe o')).toEqual([]);
    // First and last names the same: one of them, or both, finds the borrower; three of them do not.
    expect(await found('lee')).toEqual(['find-3']);
    expect(await found('Lee Lee')).toEqual(['find-3']);
    expect(await found('lee lee lee')).toEqual([]);
    const reference = (await c.json('GET', '/v1/payment_enrollments/find-1')).body.payments[0].reference as string;
    expect(await found(reference)).toEqual(['find-1']);
    expect(text((await p.get(`/portal/payments/borrowers?find=${encodeURIComponent(reference)}`)).text)).toContain('payment reference');
    // Another lender finds none of them.
    const other = c.newLender();
    const theirs = await signedIn(c, { lenderId: other.id });
    expect((await theirs.get('/portal/payments/borrowers?find=zoe')).text).toContain('No borrower found');
  });

  test('no name, phone or last four is stored in the clear for search; erasure removes its hashes; a borrower stored before is indexed at start', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('hash-1', { first_name: 'Quintessa', last_name: 'Marlowe', phone_number: '2025550123' })] } });
    const rows = c.sql
      .query<{ hash: string; aid: string }, []>(`SELECT ${hex('hash')} AS hash, authorizer_unique_id AS aid FROM borrower_search`)
      .all()
      .map((r) => ({ aid: r.aid, hash: Buffer.from(r.hash, 'hex') }));
    // Each name once (both typed together are found as the one and the other): four entries, not six; each
    // 12 bytes of an HMAC whose input has the lender and the kind, so neither is stored beside it.
    expect(rows).toHaveLength(4);
    for (const r of rows) {
      expect(r.aid).toBe('hash-1');
      expect(r.hash.byteLength).toBe(12);
      expect(Buffer.from(r.hash).toString('latin1')).not.toMatch(/quintessa|marlowe|2025550123|4567/i);
    }
    // The borrower's row lists exactly those hashes, under the current vault key.
    const stored = c.sql.query<{ lenderId: string; keyId: string; hashes: string }, []>(`SELECT lender_id AS lenderId, key_id AS keyId, ${hex('hashes')} AS hashes FROM searchable_borrowers`).get()!;
    const row = { ...stored, hashes: Buffer.from(stored.hashes, 'hex') };
    expect(row.lenderId).toBe(c.lender.id);
    expect(row.keyId).toBe(c.rt.vault.currentKeyId);
    const listed = Array.from({ length: 4 }, (_, i) => Buffer.from(row.hashes.subarray(i * 12, i * 12 + 12)).toString('hex')).sort();
    expect(listed).toEqual(rows.map((r) => Buffer.from(r.hash).toString('hex')).sort());
    // (How SQLite plans the search's statements is in work-sqlite.test.ts.)
    // Stored before search existed: indexed by the job, once per start.
    c.sql.exec('DELETE FROM borrower_search');
    c.sql.exec('DELETE FROM searchable_borrowers');
    expect((await p.get('/portal/payments/borrowers?find=marlowe')).text).toContain('No borrower found');
    const { indexUnsearchedBorrowers } = await import('../../../src/modules/enrollments/search');
    expect(await indexUnsearchedBorrowers(c.rt)).toEqual({ indexed: 1 });
    expect((await p.get('/portal/payments/borrowers?find=marlowe')).text).toContain('/portal/payments/borrowers/hash-1');
    await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['hash-1'] } });
    expect(c.sql.query('SELECT COUNT(*) AS n FROM borrower_search').get()).toEqual({ n: 0 });
    expect(c.sql.query('SELECT COUNT(*) AS n FROM searchable_borrowers').get()).toEqual({ n: 0 });
    expect((await p.get('/portal/payments/borrowers?find=marlowe')).text).toContain('No borrower found');
  });

  test('a re-sent borrower is found by its new values only; the same values sent again leave its entries as they were', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const found = async (q: string) => [...(await p.get(`/portal/payments/borrowers?find=${encodeURIComponent(q)}`)).text.matchAll(/<tr><td><a href="\/portal\/payments\/borrowers\/([^"]+)">/g)].map((m) => m[1]);
    const send = (first: string, phone: string) => c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('resent-1', { first_name: first, last_name: 'Okafor', phone_number: phone })] } });
    await send('Chidi', '2025550144');
    const entries = () => c.sql.query<{ h: string }, []>(`SELECT ${hex('hash')} AS h FROM borrower_search ORDER BY 1`).all();
    const first = entries();
    expect(first).toHaveLength(4);
    await send('Chidi', '2025550144');
    expect(entries()).toEqual(first);
    await send('Amara', '2025550155');
    expect(entries()).toHaveLength(4);
    expect(await found('chidi')).toEqual([]);
    expect(await found('2025550144')).toEqual([]);
    expect(await found('amara okafor')).toEqual(['resent-1']);
    expect(await found('2025550155')).toEqual(['resent-1']);
  });

  test('a new borrower whose id has search entries left from before is enrolled, and found by its own values only', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const found = async (q: string) => [...(await p.get(`/portal/payments/borrowers?find=${encodeURIComponent(q)}`)).text.matchAll(/<tr><td><a href="\/portal\/payments\/borrowers\/([^"]+)">/g)].map((m) => m[1]);
    // Entries for an id no borrower has (as if left from before), made under this key: those of another borrower.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('source-1', { first_name: 'Oskar', last_name: 'Lindqvist' })] } });
    c.sql.run("INSERT INTO borrower_search SELECT hash, 'left-1' FROM borrower_search WHERE authorizer_unique_id = 'source-1'");
    c.sql.run("INSERT INTO searchable_borrowers SELECT lender_id, 'left-1', key_id, hashes FROM searchable_borrowers WHERE authorizer_unique_id = 'source-1'");
    const r = await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('left-1', { first_name: 'Greta', last_name: 'Lindqvist' })] } });
    expect(r.status).toBe(207);
    expect(r.body.results[0].outcome).toBe('enrolled');
    expect(await found('oskar')).toEqual(['source-1']);
    expect(await found('greta lindqvist')).toEqual(['left-1']);
    expect(await found('lindqvist')).toEqual(['left-1', 'source-1']);
    expect(c.sql.query("SELECT COUNT(*) AS n FROM borrower_search WHERE authorizer_unique_id = 'left-1'").get()).toEqual({ n: 4 });
  });

  test('two lenders with a borrower of the same id and name: each finds its own, and an erasure by one leaves the other its entries', async () => {
    const c = fresh();
    const other = c.newLender();
    const mine = await signedIn(c);
    const theirs = await signedIn(c, { lenderId: other.id });
    for (const key of [c.lender.key, other.key]) {
      const r = await c.json('POST', '/v1/payment_enrollments', { key, body: { borrowers: [enrollBorrower('shared-1', { first_name: 'Ingrid', last_name: 'Solberg', phone_number: '2025550166' })] } });
      expect(r.status).toBe(207);
    }
    // Different entries: the lender is in each hash.
    expect(c.sql.query('SELECT COUNT(*) AS n FROM borrower_search').get()).toEqual({ n: 8 });
    for (const p of [mine, theirs]) expect((await p.get('/portal/payments/borrowers?find=ingrid%20solberg')).text).toContain('/portal/payments/borrowers/shared-1');
    await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['shared-1'] } });
    expect(c.sql.query('SELECT COUNT(*) AS n FROM borrower_search').get()).toEqual({ n: 4 });
    expect((await mine.get('/portal/payments/borrowers?find=ingrid')).text).toContain('No borrower found');
    expect((await theirs.get('/portal/payments/borrowers?find=ingrid')).text).toContain('/portal/payments/borrowers/shared-1');
    expect((await theirs.get('/portal/payments/borrowers?find=2025550166')).text).toContain('/portal/payments/borrowers/shared-1');
  });

  test('after a vault key rotation the next start hashes each borrower again under the new key, its old entries removed', async () => {
    const first = fresh();
    await first.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('rotated-1', { first_name: 'Henrike', last_name: 'Vossberg', phone_number: '2025550188' })] } });
    const keyFile = first.rt.config.vaultKeyFile;
    writeFileSync(`${keyFile}.old`, readFileSync(keyFile, 'utf8'));
    writeFileSync(keyFile, generateVaultKey().toString('base64') + '\n');
    const c = fresh({ ...first.sameDatabase(), VAULT_KEY_FILE: keyFile });
    expect(c.rt.vault.currentKeyId).not.toBe(first.rt.vault.currentKeyId);
    const p = await signedIn(c, { lenderId: first.lender.id });
    // Hashed under the old key, the entries answer no search made with the new one.
    expect((await p.get('/portal/payments/borrowers?find=vossberg')).text).toContain('No borrower found');
    const { indexUnsearchedBorrowers } = await import('../../../src/modules/enrollments/search');
    expect(await indexUnsearchedBorrowers(c.rt)).toEqual({ indexed: 1 });
    expect((await p.get('/portal/payments/borrowers?find=henrike%20vossberg')).text).toContain('/portal/payments/borrowers/rotated-1');
    expect((await p.get('/portal/payments/borrowers?find=2025550188')).text).toContain('/portal/payments/borrowers/rotated-1');
    expect(c.sql.query('SELECT COUNT(*) AS n FROM borrower_search').get()).toEqual({ n: 4 });
    expect(c.sql.query('SELECT key_id AS k FROM searchable_borrowers').all()).toEqual([{ k: c.rt.vault.currentKeyId }]);
  });
});

describe('the Payments page', () => {
  test('across borrowers: filters by status and days, sorts by date and amount, pages, and the CSV has the same rows', async () => {
    const c = fresh({ SANDBOX_SETTLEMENT_MS: '60000' });
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_payments_page_0000001', rail_scope: 'both', is_default: true } });
    // 00–90 cents settle, 91 returns R01.
    const amounts = [10000, 20091, 30000, 40091, 5000];
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: amounts.map((a, i) => enrollBorrower(`pay-${i}`, { collectable_amount: a })) } });
    await cycle(c);
    await dispatchAndSettle(c, 60_000);
    const amountsOn = (html: string) => [...html.matchAll(/<tr><td>\$([\d,.]+)<\/td><td>([a-z_]+)<\/td>/g)].map((m) => `${m[1]} ${m[2]}`);
    const all = (await p.get('/portal/payments/list?sort=amount_desc')).text;
    expect(amountsOn(all)).toEqual(['400.91 returned', '300.00 settled', '200.91 returned', '100.00 settled', '50.00 settled']);
    expect(amountsOn((await p.get('/portal/payments/list?sort=amount_asc&status=settled')).text)).toEqual(['50.00 settled', '100.00 settled', '300.00 settled']);
    expect(amountsOn((await p.get('/portal/payments/list?status=returned')).text).sort()).toEqual(['200.91 returned', '400.91 returned']);
    const today = new Date(c.clock.now()).toISOString().slice(0, 10);
    expect(amountsOn((await p.get(`/portal/payments/list?from=${today}&to=${today}`)).text)).toHaveLength(5);
    expect(amountsOn((await p.get('/portal/payments/list?to=2000-01-01')).text)).toEqual([]);
    const bad = await p.get('/portal/payments/list?from=2026-02-30');
    expect(bad.status).toBe(400);
    expect(text(bad.text)).toContain('from must be a date');
    const csv = await c.request('GET', '/portal/payments/list.csv?sort=amount_desc&status=returned', { key: null, headers: { cookie: p.cookie } });
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe('reference,authorizer_unique_id,amount,status,rail,attempt,return_code,created_at,settled_at');
    expect(lines.slice(1).map((l) => l.split(',').slice(2, 4).join(' '))).toEqual(['400.91 returned', '200.91 returned']);
    expect(lines[1]).toContain('R01');
  });

  test('pages of 50 follow one another without repeats; a token is good for its own filters only', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_payments_paged_000001', rail_scope: 'both', is_default: true } });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: Array.from({ length: 60 }, (_, i) => enrollBorrower(`pg-${String(i).padStart(2, '0')}`, { collectable_amount: 1000 + i * 100 })) } });
    await cycle(c);
    const first = (await p.get('/portal/payments/list?sort=amount_asc')).text;
    const refs = (html: string) => [...html.matchAll(/<td class="wide"><code>([^<]+)<\/code><\/td>/g)].map((m) => m[1]!);
    expect(refs(first)).toHaveLength(50);
    const next = /href="(\/portal\/payments\/list\?[^"]*next_page_token=[^"]+)"/.exec(first)![1]!.replace(/&amp;/g, '&');
    const second = (await p.get(next)).text;
    expect(refs(second)).toHaveLength(10);
    expect(new Set([...refs(first), ...refs(second)]).size).toBe(60);
    const token = new URL(`http://x${next}`).searchParams.get('next_page_token')!;
    expect((await p.get(`/portal/payments/list?sort=newest&next_page_token=${encodeURIComponent(token)}`)).status).toBe(400);
  });
});

describe('returns on the overview and the ledger', () => {
  test('four debits returned before settling: the overview shows four returned debits and nothing reversed; the ledger lists no $0.00 reversal', async () => {
    const c = fresh({ SANDBOX_SETTLEMENT_MS: '60000' });
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_returns_000000000001', rail_scope: 'both', is_default: true } });
    // 91 cents: returned R01 without settling.
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [0, 1, 2, 3].map((i) => enrollBorrower(`ret-${i}`, { collectable_amount: 10091 + i * 100 })) } });
    await cycle(c);
    await dispatchAndSettle(c, 60_000);
    const statuses = await Promise.all([0, 1, 2, 3].map(async (i) => (await c.json('GET', `/v1/payment_enrollments/ret-${i}`)).body));
    expect(statuses.map((e) => e.payments[0].status)).toEqual(['returned', 'returned', 'returned', 'returned']);
    expect(statuses.map((e) => e.ledger.reversed)).toEqual([0, 0, 0, 0]);
    const html = (await p.get('/portal')).text;
    const fig = (id: string) => new RegExp(`<h3 id="${id}">([^<]*)</h3><p>([^<]*)</p>`).exec(html)!.slice(1);
    expect(fig('fig-returned')).toEqual(['Returned debits', '$409.64 (4)']);
    expect(fig('fig-reversed')).toEqual(['Reversed', '$0.00']);
    const borrower = (await p.get('/portal/payments/borrowers/ret-0')).text;
    const ledger = borrower.slice(borrower.indexOf('<h2>Ledger</h2>'));
    expect(ledger).not.toContain('<td>reversal</td>');
    expect(ledger).not.toContain('$0.00</td></tr>');
  });
});

describe('borrower actions', () => {
  test('change the collectable amount: re-sent through the enrollment service, the API reads the new amount; a bad amount is refused on the page', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('amt-1', { first_name: 'Amos', collectable_amount: 42500 })] } });
    const page = (await p.get('/portal/payments/borrowers/amt-1')).text;
    expect(page).toContain('value="425.00"');
    const r = await p.post('/portal/payments/borrowers/amt-1/amount', { amount: '$1,234.50' });
    expect(text(r.text)).toContain('Collectable amount changed to $1,234.50: the borrower is updated');
    const view = (await c.json('GET', '/v1/payment_enrollments/amt-1')).body;
    expect(view.collectable_amount).toBe(123450);
    expect(view.state).toBe('monitored');
    // Still found by its name: the re-send keeps what was stored.
    expect((await p.get('/portal/payments/borrowers?find=amos')).text).toContain('/portal/payments/borrowers/amt-1');
    for (const bad of ['0', '-5', '12.345', 'lots']) {
      expect(text((await p.post('/portal/payments/borrowers/amt-1/amount', { amount: bad })).text)).toContain('Not changed: the amount must be dollars above zero');
    }
    expect((await c.json('GET', '/v1/payment_enrollments/amt-1')).body.collectable_amount).toBe(123450);
  });

  test('re-send a removed borrower: monitoring resumes; an erased one cannot be re-sent from the portal', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('back-1'), enrollBorrower('erased-1')] } });
    await c.json('DELETE', '/v1/payment_enrollments', { body: { authorizer_unique_ids: ['back-1', 'erased-1'] } });
    expect((await c.json('GET', '/v1/payment_enrollments/back-1')).body.state).toBe('removed');
    expect((await p.get('/portal/payments/borrowers/back-1')).text).toContain('Re-send to collection');
    const r = await p.post('/portal/payments/borrowers/back-1/resend', {});
    expect(text(r.text)).toContain('Re-sent: the borrower is');
    expect((await c.json('GET', '/v1/payment_enrollments/back-1')).body.state).toBe('monitored');
    await c.json('DELETE', '/v1/persisted_authorizers', { body: { authorizer_unique_ids: ['erased-1'] } });
    const erased = await p.post('/portal/payments/borrowers/erased-1/resend', {});
    expect(text(erased.text)).toContain('Not re-sent: The borrower’s personal data was erased');
    expect((await c.json('GET', '/v1/payment_enrollments/erased-1')).body.state).toBe('removed');
  });
});

describe('the first-run checklist', () => {
  test('a new lender sees four steps, each linked; each is done as it is done; with all done the list is gone', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const steps = async () => {
      const html = (await p.get('/portal')).text;
      return Object.fromEntries([...html.matchAll(/<li id="step-([a-z-]+)" class="(done|todo)">/g)].map((m) => [m[1], m[2]]));
    };
    expect(await steps()).toEqual({ 'api-key': 'todo', 'processor-key': 'todo', 'balance-check': 'todo', 'webhook-endpoint': 'todo' });
    const html = (await p.get('/portal')).text;
    for (const href of ['/portal/developers#keys', '/portal/payments/connections', '/portal/balance-checks', '/portal/developers#endpoints']) expect(html).toContain(`href="${href}"`);
    expect(text(html)).toContain('0 of 4 done');
    await c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('first-1')] } });
    expect(await steps()).toEqual({ 'api-key': 'done', 'processor-key': 'todo', 'balance-check': 'done', 'webhook-endpoint': 'todo' });
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_checklist_0000000001', rail_scope: 'both', is_default: true } });
    const endpoint = await c.json('POST', '/v1/webhook_endpoints', { body: { url: 'http://127.0.0.1:9/drs', event_types: ['ENROLLMENT_BLOCKED'] } });
    expect(endpoint.status).toBe(201);
    const done = (await p.get('/portal')).text;
    expect(done).not.toContain('Getting started');
    expect(done).toContain('id="fig-collected"');
  });
});

describe('polish', () => {
  test('each page is titled as its navigation link; a favicon is served; "Sign out" is a quiet link-styled button', async () => {
    const c = fresh();
    const p = await signedIn(c);
    const { NAV } = await import('../../../src/modules/portal/ui/components');
    for (const [href, label] of NAV) {
      const html = (await p.get(href)).text;
      expect(`${href}: ${/<h1>([^<]*)<\/h1>/.exec(html)![1]}`).toBe(`${href}: ${label}`);
      expect(html).toContain('<link rel="icon" href="/portal/assets/favicon.svg" type="image/svg+xml"/>');
      expect(html).toContain('<button type="submit" class="quiet">Sign out</button>');
    }
    for (const path of ['/portal/assets/favicon.svg', '/favicon.ico']) {
      const r = await c.request('GET', path, { key: null });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('image/svg+xml');
      expect(await r.text()).toContain('<svg');
    }
  });

  test('on a phone a table keeps its amount and status columns; the others are marked to show from a wider screen', async () => {
    const c = fresh();
    const p = await signedIn(c);
    await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_phone_columns_000001', rail_scope: 'both', is_default: true } });
    await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('phone-1', { collectable_amount: 1000 })] } });
    await cycle(c);
    const html = (await p.get('/portal/payments/list')).text;
    expect(html).toContain('<th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Borrower</th><th scope="col" class="wide">Reference</th>');
    expect(html).toMatch(/<tr><td>\$10\.00<\/td><td>[a-z_]+<\/td><td><a /);
    const css = await (await c.request('GET', '/portal/assets/portal.css', { key: null })).text();
    expect(css).toMatch(/@media \(max-width: 40rem\) \{\s*th\.wide, td\.wide \{ display: none; \}/);
  });
});
