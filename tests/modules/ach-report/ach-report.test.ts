// engine: both
// GET /v1/reports/ach against a hand calculation: the service's own debits and returns through the sandbox
// processor, uploaded results on both sides of a month's ends, Notifications of Change (inserted as the
// bank-account code records them) and the accounts the returns blocked; the report of the current month agrees
// with GET /v1/return_rates over the same rows; the CSV says what the JSON says; a bad or future month is a
// 400 naming it; another lender's figures never appear; the list of changes is bounded.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower, ownAccount } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { readCsv } from '../../../src/platform/csv';
import { addBusinessDays } from '../../../src/platform/business-days';
import { CHANGES_LISTED } from '../../../src/modules/ach-report/service';

const SETTLE = 60_000;
const HOUR = 3_600_000;
const day = (d: string) => Date.parse(`${d}T00:00:00.000Z`);
const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

const HEADER = 'reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
async function upload(c: TestContext, key: string, rows: string[]) {
  const form = new FormData();
  form.append('file', new Blob([[HEADER, ...rows].join('\n') + '\n'], { type: 'text/csv' }), 'results.csv');
  const r = await c.json('POST', '/v1/payment_results/uploads', { form, key });
  expect(r.status).toBe(200);
  expect(r.body.problems.filter((p: { severity: string }) => p.severity === 'error')).toEqual([]);
}

/** A lender debiting through the sandbox (its own key), borrowers each on an account of their own. */
async function lenderWithDebits(c: TestContext, lender: { key: string }, apiKey: string, borrowers: [aid: string, cents: number][], first: number) {
  expect((await c.json('POST', '/v1/payment_connections', { key: lender.key, body: { api_key: apiKey, rail_scope: 'ach', is_default: true } })).status).toBe(201);
  // Debits go out without validation evidence, as for a lender there before it was asked for.
  expect((await c.json('PATCH', '/v1/collection_policy', { key: lender.key, body: { require_account_validation: false } })).status).toBe(200);
  const body = { borrowers: borrowers.map(([aid, cents], i) => enrollBorrower(aid, { collectable_amount: cents, account_number: ownAccount(first + i) })) };
  expect((await c.json('POST', '/v1/payment_enrollments', { key: lender.key, body })).status).toBe(207);
}

const accountOf = async (c: TestContext, key: string, aid: string): Promise<string> => (await c.json('GET', `/v1/payment_enrollments/${aid}`, { key })).body.bank_account_id;

interface Change {
  id: string;
  lenderId: string;
  accountId: string;
  code: string;
  status: string;
  receivedAt: number;
  appliedAt?: number | null;
}
/** Notifications of Change as the bank-account code records them (due six banking days after receipt), 200 a statement. */
function insertChanges(c: TestContext, changes: Change[]) {
  const value = (x: string | number | null) => (x === null ? 'NULL' : typeof x === 'number' ? String(x) : `'${x.replace(/'/g, "''")}'`);
  const rows = changes.map((ch) =>
    `(${[ch.id, ch.lenderId, ch.accountId, ch.code, 'upload', `key-${ch.id}`, '4567', ch.status, ch.receivedAt, addBusinessDays(ch.receivedAt, 6), ch.appliedAt ?? null].map(value).join(', ')})`,
  );
  for (let i = 0; i < rows.length; i += 200) {
    c.sql.exec(
      `INSERT INTO account_changes (id, lender_id, bank_account_id, code, source, source_key, old_last4, status, received_at, due_by, applied_at) VALUES ${rows.slice(i, i + 200).join(', ')}`,
    );
  }
}

type Report = Record<string, any>;

/** The report's figures as the CSV writes them, worked out from the JSON here: (section, item, key) → the cell. */
function figuresOf(report: Report): Map<string, string> {
  const out = new Map<string, string>();
  const put = (section: string, item: string, key: string, v: unknown) => out.set(`${section} | ${item} | ${key}`, v === null ? '' : String(v));
  for (const key of ['month', 'from', 'to', 'generated_at']) put('report', '', key, report[key]);
  for (const section of ['debits', 'returns', 'notifications_of_change', 'accounts_blocked']) {
    const walk = (o: Record<string, unknown>, prefix: string) => {
      for (const [k, v] of Object.entries(o)) {
        if (k === 'changes') for (const ch of v as Record<string, unknown>[]) for (const [f, x] of Object.entries(ch)) f !== 'id' && put(section, ch.id as string, f, x);
        else if (v !== null && typeof v === 'object') walk(v as Record<string, unknown>, `${prefix}${k}.`);
        else put(section, '', `${prefix}${k}`, v);
      }
    };
    walk(report[section], '');
  }
  return out;
}

/** The CSV's lines as the same map; no line twice. */
function figuresOfCsv(text: string): Map<string, string> {
  const table = readCsv(text);
  expect(table.header).toEqual(['section', 'item', 'key', 'value']);
  const out = new Map<string, string>();
  for (const { cells } of table.rows) out.set(`${cells[0]} | ${cells[1]} | ${cells[2]}`, cells[3]!);
  expect(out.size).toBe(table.rows.length);
  return out;
}

describe('GET /v1/reports/ach', () => {
  // The clock stands at 2026-11-21T12:00Z: November is the current month, October the last.
  const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: '3600000' });
  contexts.push(c);
  const other = c.newLender('Other lender');
  const ready = (async () => {
    // Lender A: settled, returned R10 (the account unauthorized), R02 (invalid), R01 (the account unchanged), and
    // a debit refused at once (invalid: never a debit). Lender B: one returned R10.
    await lenderWithDebits(c, c.lender, 'sbx_ach_report_a_0000001', [['a-settle', 42500], ['a-r10', 42594], ['a-r02', 42593], ['a-r01', 42591], ['a-refused', 42596]], 0);
    await lenderWithDebits(c, other, 'sbx_ach_report_b_0000001', [['b-r10', 30094]], 10);
    await cycle(c);
    await dispatchAndSettle(c, SETTLE);
    await upload(c, c.lender.key, [
      'U-OCT-1,100.00,settled,2026-10-05,2026-10-06,,',
      'U-OCT-2,50.00,returned,2026-10-08,,2026-10-12,R01',
      'U-OCT-3,25.00,returned,2026-10-20,,2026-10-22,R10',
      // Not a debit that went to the bank.
      'U-OCT-P,10.00,pending,2026-10-28,,,',
      // A September debit returned on the first of October: an October return, not an October debit.
      'U-SEP-1,30.00,returned,2026-09-28,,2026-10-01,R02',
      // An October debit returned in November.
      'U-OCT-5,40.00,returned,2026-10-30,,2026-11-02,R03',
      // The last day of October and the first of November.
      'U-OCT-31,5.00,settled,2026-10-31,2026-11-02,,',
      'U-NOV-01,7.00,settled,2026-11-01,2026-11-02,,',
      'U-NOV-1,200.00,settled,2026-11-03,2026-11-04,,',
    ]);
    await upload(c, other.key, ['B-OCT-1,999.00,returned,2026-10-10,,2026-10-15,R05', 'B-NOV-1,888.00,settled,2026-11-02,2026-11-03,,']);
    const a = await accountOf(c, c.lender.key, 'a-settle');
    const b = await accountOf(c, other.key, 'b-r10');
    const received = day('2026-10-14') + 16 * HOUR;
    insertChanges(c, [
      // Applied the next morning: one banking day, by the due day.
      { id: 'noc-a1', lenderId: c.lender.id, accountId: a, code: 'C01', status: 'applied', receivedAt: received, appliedAt: day('2026-10-15') + 8 * HOUR },
      // Due on the 22nd, applied on Monday the 26th: eight banking days, late.
      { id: 'noc-a2', lenderId: c.lender.id, accountId: a, code: 'C03', status: 'applied', receivedAt: received, appliedAt: day('2026-10-26') + 9 * HOUR },
      { id: 'noc-a3', lenderId: c.lender.id, accountId: a, code: 'C09', status: 'recorded', receivedAt: day('2026-10-02') },
      // November: due on the 19th (the 11th is Veterans Day) and not applied: overdue now; one received yesterday: pending.
      { id: 'noc-a4', lenderId: c.lender.id, accountId: a, code: 'C02', status: 'review', receivedAt: day('2026-11-10') + 10 * HOUR },
      { id: 'noc-a5', lenderId: c.lender.id, accountId: a, code: 'C05', status: 'received', receivedAt: day('2026-11-20') },
      { id: 'noc-b1', lenderId: other.id, accountId: b, code: 'C01', status: 'received', receivedAt: received },
      { id: 'noc-b2', lenderId: other.id, accountId: b, code: 'C07', status: 'received', receivedAt: day('2026-11-05') },
    ]);
  })();

  test('October: the uploads of the month, its returns by code and class, its changes; nothing of November or of another lender', async () => {
    await ready;
    const r = await c.json('GET', '/v1/reports/ach?month=2026-10');
    expect(r.status).toBe(200);
    expect(r.res.headers.get('content-type')).toContain('application/json');
    expect(r.res.headers.get('vary')).toBe('Accept');
    const report = r.body;
    expect(report).toMatchObject({ month: '2026-10', from: '2026-10-01T00:00:00.000Z', to: '2026-10-31T23:59:59.999Z', generated_at: new Date(c.clock.now()).toISOString() });
    // U-OCT-1, U-OCT-2, U-OCT-3, U-OCT-5 and U-OCT-31.
    expect(report.debits).toEqual({ count: 5, total_cents: 10_000 + 5_000 + 2_500 + 4_000 + 500 });
    // R01 (U-OCT-2), R10 (U-OCT-3), R02 (U-SEP-1); U-OCT-5's R03 is November's.
    expect(report.returns).toEqual({
      count: 3,
      by_code: { R01: 1, R02: 1, R10: 1 },
      rates: {
        unauthorized: { returns: 1, rate: 1 / 5, threshold: 0.005, status: 'exceeded' },
        administrative: { returns: 1, rate: 1 / 5, threshold: 0.03, status: 'exceeded' },
        overall: { returns: 3, rate: 3 / 5, threshold: 0.15, status: 'exceeded' },
      },
    });
    const a = await accountOf(c, c.lender.key, 'a-settle');
    expect(report.notifications_of_change).toEqual({
      count: 3,
      by_code: { C01: 1, C03: 1, C09: 1 },
      by_status: { received: 0, review: 0, applied: 2, recorded: 1 },
      by_timeliness: { on_time: 1, late: 1, overdue: 0, pending: 0, none: 1 },
      changes: [
        {
          id: 'noc-a3',
          code: 'C09',
          status: 'recorded',
          bank_account_id: a,
          received_at: '2026-10-02T00:00:00.000Z',
          due_by: '2026-10-13T00:00:00.000Z',
          applied_at: null,
          banking_days_to_apply: null,
          applied_by_due: null,
          timeliness: 'none',
        },
        {
          id: 'noc-a1',
          code: 'C01',
          status: 'applied',
          bank_account_id: a,
          received_at: '2026-10-14T16:00:00.000Z',
          due_by: '2026-10-22T00:00:00.000Z',
          applied_at: '2026-10-15T08:00:00.000Z',
          banking_days_to_apply: 1,
          applied_by_due: true,
          timeliness: 'on_time',
        },
        {
          id: 'noc-a2',
          code: 'C03',
          status: 'applied',
          bank_account_id: a,
          received_at: '2026-10-14T16:00:00.000Z',
          due_by: '2026-10-22T00:00:00.000Z',
          applied_at: '2026-10-26T09:00:00.000Z',
          banking_days_to_apply: 8,
          applied_by_due: false,
          timeliness: 'late',
        },
      ],
      truncated: false,
    });
    expect(report.accounts_blocked).toEqual({ count: 0, by_state: { invalid: 0, frozen: 0, unauthorized: 0, deceased: 0 } });
    // Nothing of the other lender's (its R05, its C01, its account) is in it.
    expect(JSON.stringify(report)).not.toMatch(/R05|noc-b|C07/);
  });

  test('November, the current month so far: the service’s own debits and returns, the accounts they blocked; the same figures as GET /v1/return_rates', async () => {
    await ready;
    const report = (await c.json('GET', '/v1/reports/ach?month=2026-11')).body;
    // Own: 42500 + 42594 + 42593 + 42591 (the refused one never went to the bank); uploaded: U-NOV-01 and U-NOV-1.
    expect(report.debits).toEqual({ count: 6, total_cents: 42_500 + 42_594 + 42_593 + 42_591 + 700 + 20_000 });
    expect(report.returns).toMatchObject({ count: 4, by_code: { R01: 1, R02: 1, R03: 1, R10: 1 } });
    expect(report.returns.rates).toMatchObject({ unauthorized: { returns: 1, rate: 1 / 6 }, administrative: { returns: 2, rate: 2 / 6 }, overall: { returns: 4, rate: 4 / 6 } });
    // The rates over the last 21 days hold exactly November's rows (nothing was dated from 12:00 on 31 October
    // to midnight): the same debits, returns and classes.
    const rates = (await c.json('GET', '/v1/return_rates?window_days=21')).body;
    expect(rates.window.from > '2026-10-31T00:00:00.000Z' && rates.window.from < '2026-11-01T00:00:00.000Z').toBe(true);
    expect({ debits: report.debits.count, by_code: report.returns.by_code, rates: report.returns.rates }).toEqual({ debits: rates.debits, by_code: rates.by_code, rates: rates.rates });
    // R10 and R02 blocked their accounts today; the R01 did not.
    expect(report.accounts_blocked).toEqual({ count: 2, by_state: { invalid: 1, frozen: 0, unauthorized: 1, deceased: 0 } });
    for (const state of ['unauthorized', 'invalid']) {
      const accounts = (await c.json('GET', `/v1/bank_accounts?state=${state}`)).body.bank_accounts;
      expect(accounts.map((x: { state_since: string }) => x.state_since.slice(0, 7))).toEqual(['2026-11']);
    }
    expect(report.notifications_of_change).toMatchObject({
      count: 2,
      by_code: { C02: 1, C05: 1 },
      by_status: { received: 1, review: 1, applied: 0, recorded: 0 },
      by_timeliness: { on_time: 0, late: 0, overdue: 1, pending: 1, none: 0 },
      truncated: false,
    });
    expect(report.notifications_of_change.changes.map((x: { id: string; due_by: string; applied_by_due: boolean | null }) => [x.id, x.due_by, x.applied_by_due])).toEqual([
      ['noc-a4', '2026-11-19T00:00:00.000Z', false],
      ['noc-a5', '2026-12-01T00:00:00.000Z', null],
    ]);
  });

  test('another lender’s report is its own: its debits, returns, changes and account, none of the first lender’s', async () => {
    await ready;
    const oct = (await c.json('GET', '/v1/reports/ach?month=2026-10', { key: other.key })).body;
    expect(oct.debits).toEqual({ count: 1, total_cents: 99_900 });
    expect(oct.returns).toMatchObject({ count: 1, by_code: { R05: 1 }, rates: { unauthorized: { returns: 1 } } });
    expect(oct.notifications_of_change).toMatchObject({ count: 1, by_code: { C01: 1 }, changes: [{ id: 'noc-b1' }] });
    const nov = (await c.json('GET', '/v1/reports/ach?month=2026-11', { key: other.key })).body;
    expect(nov.debits).toEqual({ count: 2, total_cents: 30_094 + 88_800 });
    expect(nov.returns).toMatchObject({ count: 1, by_code: { R10: 1 } });
    expect(nov.accounts_blocked).toEqual({ count: 1, by_state: { invalid: 0, frozen: 0, unauthorized: 1, deceased: 0 } });
    expect(nov.notifications_of_change.changes.map((x: { id: string }) => x.id)).toEqual(['noc-b2']);
    expect(JSON.stringify([oct, nov])).not.toMatch(/noc-a|R02|R03|C09/);
    // A lender with nothing has a report of zeros.
    const fresh = c.newLender();
    expect((await c.json('GET', '/v1/reports/ach?month=2026-11', { key: fresh.key })).body).toMatchObject({
      debits: { count: 0, total_cents: 0 },
      returns: { count: 0, by_code: {}, rates: { overall: { returns: 0, rate: 0, status: 'ok' } } },
      notifications_of_change: { count: 0, by_code: {}, changes: [], truncated: false },
      accounts_blocked: { count: 0 },
    });
  });

  test('the CSV (format=csv, or Accept: text/csv) says what the JSON says, line for figure', async () => {
    await ready;
    for (const month of ['2026-10', '2026-11']) {
      const json = (await c.json('GET', `/v1/reports/ach?month=${month}`)).body;
      const byFormat = await c.request('GET', `/v1/reports/ach?month=${month}&format=csv`);
      expect(byFormat.status).toBe(200);
      expect(byFormat.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(byFormat.headers.get('content-disposition')).toBe(`attachment; filename=ach-report-${month}.csv`);
      const text = await byFormat.text();
      expect(figuresOfCsv(text)).toEqual(figuresOf(json));
      // One line per figure, ending CRLF; a spreadsheet reads the counts as numbers.
      expect(text.endsWith('\r\n')).toBe(true);
      expect(text).toContain(`debits,,count,${json.debits.count}\r\n`);
      const byAccept = await c.request('GET', `/v1/reports/ach?month=${month}`, { headers: { accept: 'text/csv' } });
      expect(byAccept.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(await byAccept.text()).toBe(text);
    }
    // JSON when the Accept header prefers it, or names anything; format wins over Accept.
    for (const [accept, query, type] of [
      ['application/json, text/csv;q=0.5', '', 'application/json'],
      ['*/*', '', 'application/json'],
      ['text/csv;q=0', '', 'application/json'],
      ['text/csv;q=0.9, application/json;q=0.2', '', 'text/csv'],
      ['text/csv', '&format=json', 'application/json'],
      ['application/json', '&format=csv', 'text/csv'],
    ] as const) {
      const r = await c.request('GET', `/v1/reports/ach?month=2026-10${query}`, { headers: { accept } });
      expect(`${accept}${query}: ${r.headers.get('content-type')}`).toContain(`${accept}${query}: ${type}`);
    }
  });

  test('a month not as YYYY-MM, or after the current one, is a 400 naming month; a bad format names format; no key is 401', async () => {
    await ready;
    for (const bad of ['2026-13', '2026-00', '2026-1', '26-10', '2026-10-01', 'October', '', '2026-12', '2027-01', '9999-12']) {
      for (const format of ['', '&format=csv']) {
        const r = await c.json('GET', `/v1/reports/ach?month=${encodeURIComponent(bad)}${format}`);
        expect(`${bad}${format}: ${r.status}`).toBe(`${bad}${format}: 400`);
        expect(r.body.error.details.errors.map((e: { path: string }) => e.path.replace(/^\//, ''))).toEqual(['month']);
      }
    }
    const future = await c.json('GET', '/v1/reports/ach?month=2026-12');
    expect(future.body.error.message).toContain('in the future');
    const missing = await c.json('GET', '/v1/reports/ach');
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body.error.details)).toContain('month');
    const format = await c.json('GET', '/v1/reports/ach?month=2026-10&format=xml');
    expect(format.status).toBe(400);
    expect(format.body.error.details.errors[0].path).toBe('/format');
    expect((await c.json('GET', '/v1/reports/ach?month=2026-10', { key: null })).status).toBe(401);
    // Long ago is a month like any other: nothing in it.
    expect((await c.json('GET', '/v1/reports/ach?month=1999-02')).body).toMatchObject({ from: '1999-02-01T00:00:00.000Z', to: '1999-02-28T23:59:59.999Z', debits: { count: 0 } });
  });
});

describe('the OpenAPI document', () => {
  test('shows the route with its query, the JSON and the CSV answers with their examples, and its errors', async () => {
    const c = createTestContext();
    contexts.push(c);
    const op = (await c.json('GET', '/docs/json')).body.paths['/v1/reports/ach'].get;
    expect(op['x-maturity']).toBe('Early Access');
    expect(op.parameters.find((p: { name: string }) => p.name === 'month')).toMatchObject({ in: 'query', required: true, schema: { pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$' } });
    const ok = op.responses['200'];
    expect(Object.keys(ok.content)).toEqual(['application/json', 'text/csv']);
    expect(JSON.stringify(ok.content['application/json'])).toContain('"examples"');
    expect(ok.content['text/csv'].example).toStartWith('section,item,key,value\r\nreport,,month,2026-10\r\n');
    expect(ok.headers['Content-Disposition']).toBeDefined();
    for (const status of ['400', '401', '429']) expect(op.responses[status].content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorEnvelope');
  });
});

describe('the list of Notifications of Change', () => {
  test(`bounded: the first ${CHANGES_LISTED} received listed, truncated, and every one counted, in the JSON and the CSV alike`, async () => {
    const c = createTestContext();
    contexts.push(c);
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('noc-many')] } })).status).toBe(207);
    const account = await accountOf(c, c.lender.key, 'noc-many');
    const total = CHANGES_LISTED + 5;
    // One a minute from the first of September, applied two hours after receipt.
    const start = day('2026-09-01');
    insertChanges(
      c,
      Array.from({ length: total }, (_, i) => ({
        id: `noc-${String(i).padStart(5, '0')}`,
        lenderId: c.lender.id,
        accountId: account,
        code: i % 2 ? 'C01' : 'C02',
        status: 'applied',
        receivedAt: start + i * 60_000,
        appliedAt: start + i * 60_000 + 2 * HOUR,
      })),
    );
    const report = (await c.json('GET', '/v1/reports/ach?month=2026-09')).body;
    const nocs = report.notifications_of_change;
    expect(nocs.count).toBe(total);
    expect(nocs.by_code).toEqual({ C01: (total - 1) / 2, C02: (total + 1) / 2 });
    expect(nocs.by_timeliness.on_time).toBe(total);
    expect(nocs.truncated).toBe(true);
    expect(nocs.changes).toHaveLength(CHANGES_LISTED);
    expect(nocs.changes[0]).toMatchObject({ id: 'noc-00000', banking_days_to_apply: 0, applied_by_due: true });
    expect(nocs.changes.at(-1).id).toBe(`noc-${String(CHANGES_LISTED - 1).padStart(5, '0')}`);
    const csv = await (await c.request('GET', '/v1/reports/ach?month=2026-09&format=csv')).text();
    expect(figuresOfCsv(csv)).toEqual(figuresOf(report));
    expect(csv).toContain('notifications_of_change,,truncated,true\r\n');
    expect(csv).not.toContain(`noc-${String(CHANGES_LISTED).padStart(5, '0')}`);
  });
});
