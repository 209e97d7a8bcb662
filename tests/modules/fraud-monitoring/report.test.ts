// engine: both
// The yearly record: reviews kept with the policy version reviewed, refused with a 400 naming the field when the
// day is not a day or is in the future or the version is not the lender's; and the report of a year, whose
// counts are the alerts stored (by rule and state, the holds, the accounts frozen on confirmed fraud), whose
// policy versions are those in force in the year, and whose CSV says what its JSON says, figure for figure.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { enrollBorrower, ownAccount } from '../../helpers/fixtures';
import { cycle } from '../../helpers/collection';
import { pollProcessors } from '../../../src/modules/collection/poll';
import { readCsv } from '../../../src/platform/csv';

const SETTLE = 60_000;
const READ = 3_600_000;
const c = createTestContext({ SANDBOX_SETTLEMENT_MS: String(SETTLE), MONITOR_READ_INTERVAL_MS: String(READ) }, { clockAt: '2026-11-25T12:00:00.000Z' });
afterAll(() => c.close());

const enroll = async (...borrowers: Record<string, unknown>[]) => expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers } })).status).toBe(207);
const review = (body: Record<string, unknown>) => c.json('POST', '/v1/fraud_monitoring/reviews', { body });

/** Every figure of the JSON as the CSV writes it: `section | item | key` → its text. */
function figuresOf(r: Record<string, any>): Map<string, string> {
  const out = new Map<string, string>();
  const put = (section: string, item: string, key: string, v: unknown) => out.set(`${section} | ${item} | ${key}`, v === null ? '' : String(v));
  const walk = (section: string, item: string, o: Record<string, unknown>, prefix = '') => {
    for (const [k, v] of Object.entries(o)) {
      if (v !== null && typeof v === 'object') walk(section, item, v as Record<string, unknown>, `${prefix}${k}.`);
      else put(section, item, `${prefix}${k}`, v);
    }
  };
  for (const key of ['year', 'from', 'to', 'generated_at', 'truncated']) put('report', '', key, r[key]);
  for (const { version, ...v } of r.policy_versions) walk('policy_versions', String(version), v);
  for (const { id, ...v } of r.reviews) walk('reviews', id, v);
  put('alerts', '', 'raised', r.alerts.raised);
  for (const [rule, states] of Object.entries(r.alerts.by_rule)) walk('alerts', rule, states as Record<string, unknown>);
  walk('holds', '', r.holds);
  put('frozen_accounts', '', 'count', r.frozen_accounts);
  for (const { month, ...v } of r.unauthorized_returns) walk('unauthorized_returns', month, v);
  return out;
}
function figuresOfCsv(text: string): Map<string, string> {
  const table = readCsv(text);
  expect(table.header).toEqual(['section', 'item', 'key', 'value']);
  const out = new Map<string, string>();
  for (const { cells } of table.rows) out.set(`${cells[0]} | ${cells[1]} | ${cells[2]}`, cells[3]!);
  expect(out.size).toBe(table.rows.length);
  return out;
}

// The year's story: the defaults until the lender's first version, which holds on first_debit_unvalidated; a
// shared account, a held debit confirmed as fraud, and an R10 return.
const ready = (async () => {
  expect((await c.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_fraud_report_0000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
  expect((await c.json('PATCH', '/v1/collection_policy', { body: { require_account_validation: false } })).status).toBe(200);
  await enroll(enrollBorrower('r-ada', { account_number: ownAccount(1), collectable_amount: 10094 }));
  await enroll(enrollBorrower('r-grace', { account_number: ownAccount(1), first_name: 'Grace', last_name: 'Hopper', collectable_amount: 10000 }));
  expect((await c.json('PUT', '/v1/fraud_monitoring/policy', { body: { rules: { first_debit_unvalidated: { action: 'hold' } }, notes: 'Holds on unvalidated accounts', changed_by: 'j.doe' } })).status).toBe(200);
  await enroll(enrollBorrower('r-held', { routing_number: '110000039', account_number: ownAccount(2), collectable_amount: 10000 }));
  await cycle(c);
  c.clock.advance(SETTLE);
  await pollProcessors(c.rt);
  const held = (await c.json('GET', '/v1/fraud_alerts?rule=first_debit_unvalidated')).body.alerts[0];
  expect((await c.json('POST', `/v1/fraud_alerts/${held.id}/disposition`, { body: { disposition: 'confirmed_fraud', note: 'holder never applied' } })).status).toBe(200);
})();

describe('reviews', () => {
  test('kept with the version reviewed, listed latest first; a bad day, a future one or a version the lender lacks is 400 naming it', async () => {
    await ready;
    const r = await review({ reviewed_on: '2026-11-24', reviewer: 'J. Doe, compliance officer', notes: 'Reviewed the rules against the alerts.', policy_version: 1 });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ reviewed_on: '2026-11-24', reviewer: 'J. Doe, compliance officer', policy_version: 1, recorded_at: '2026-11-25T12:01:00.000Z' });
    expect((await review({ reviewed_on: '2026-03-02', reviewer: 'Audit', policy_version: 0 })).status).toBe(201);
    for (const [body, field] of [
      [{ reviewed_on: '2026-11-26', reviewer: 'x', policy_version: 0 }, 'reviewed_on'],
      [{ reviewed_on: '2026-02-30', reviewer: 'x', policy_version: 0 }, 'reviewed_on'],
      [{ reviewed_on: '2026-11-20', reviewer: 'x', policy_version: 2 }, 'policy_version'],
      [{ reviewed_on: '2026-11-20', reviewer: '', policy_version: 0 }, 'reviewer'],
      [{ reviewed_on: '2026-11-20', reviewer: 'x', policy_version: -1 }, 'policy_version'],
    ] as const) {
      const bad = await review(body);
      expect({ body, status: bad.status }).toEqual({ body, status: 400 });
      expect(JSON.stringify(bad.body.error)).toContain(field);
    }
    const list = (await c.json('GET', '/v1/fraud_monitoring/reviews')).body;
    expect(list.reviews.map((x: { reviewed_on: string }) => x.reviewed_on)).toEqual(['2026-11-24', '2026-03-02']);
    const first = (await c.json('GET', '/v1/fraud_monitoring/reviews?limit=1')).body;
    expect(first).toMatchObject({ has_more: true, reviews: [{ reviewed_on: '2026-11-24' }] });
    expect((await c.json('GET', `/v1/fraud_monitoring/reviews?limit=1&next_page_token=${first.next_page_token}`)).body.reviews.map((x: { reviewed_on: string }) => x.reviewed_on)).toEqual(['2026-03-02']);
  });
});

describe('GET /v1/fraud_monitoring/report', () => {
  test('its counts are the alerts stored, by rule and state, with the holds and the frozen accounts', async () => {
    await ready;
    const r = (await c.json('GET', '/v1/fraud_monitoring/report?year=2026')).body;
    const stored = await c.rows<{ rule: string; state: string; action: string; n: number }>(
      'SELECT rule, state, action, COUNT(*) AS n FROM fraud_alerts WHERE lender_id = ? GROUP BY rule, state, action',
      c.lender.id,
    );
    expect(stored.length).toBeGreaterThan(1);
    const sum = (f: (s: (typeof stored)[number]) => boolean) => stored.filter(f).reduce((t, s) => t + Number(s.n), 0);
    expect(r.alerts.raised).toBe(sum(() => true));
    for (const [rule, states] of Object.entries(r.alerts.by_rule) as [string, Record<string, number>][]) {
      expect(states.raised).toBe(sum((s) => s.rule === rule));
      for (const state of ['open', 'needs_info', 'cleared', 'confirmed_fraud']) expect(states[state]).toBe(sum((s) => s.rule === rule && s.state === state));
    }
    expect(r.alerts.by_rule.shared_account).toMatchObject({ raised: 1, open: 1 });
    expect(r.alerts.by_rule.first_debit_unvalidated).toMatchObject({ raised: 1, confirmed_fraud: 1 });
    expect(r.holds).toEqual({ raised: sum((s) => s.action === 'hold'), holding: sum((s) => s.action === 'hold' && (s.state === 'open' || s.state === 'needs_info')) });
    expect(r.holds.raised).toBe(1);
    expect(r.frozen_accounts).toBe(1);
    // The versions in force: the defaults from the year's start, then the lender's first.
    expect(r.policy_versions.map((v: { version: number; in_force_from: string; in_force_until: string | null; changed_by: string | null }) => [v.version, v.in_force_from, v.in_force_until, v.changed_by])).toEqual([
      [0, '2026-01-01T00:00:00.000Z', '2026-11-25T12:00:00.000Z', null],
      [1, '2026-11-25T12:00:00.000Z', null, 'j.doe'],
    ]);
    expect(r.policy_versions[1].rules.first_debit_unvalidated.action).toBe('hold');
    expect(r.reviews.map((x: { reviewed_on: string }) => x.reviewed_on)).toEqual(['2026-03-02', '2026-11-24']);
    // Each month through November; the R10 of this month is its unauthorized return.
    expect(r.unauthorized_returns.map((m: { month: string }) => m.month)).toEqual(Array.from({ length: 11 }, (_, i) => `2026-${String(i + 1).padStart(2, '0')}`));
    const nov = r.unauthorized_returns[10];
    expect(nov).toMatchObject({ month: '2026-11', returns: 1 });
    expect(nov.debits).toBeGreaterThanOrEqual(1);
    expect(nov.rate).toBe(nov.returns / nov.debits);
    expect(r.unauthorized_returns[0]).toEqual({ month: '2026-01', debits: 0, returns: 0, rate: 0 });
    expect(r.truncated).toBe(false);
  });

  test('its CSV (format=csv, or Accept: text/csv) says what its JSON says, figure for figure', async () => {
    await ready;
    const json = (await c.json('GET', '/v1/fraud_monitoring/report?year=2026')).body;
    const byFormat = await c.request('GET', '/v1/fraud_monitoring/report?year=2026&format=csv');
    expect(byFormat.status).toBe(200);
    expect(byFormat.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(byFormat.headers.get('content-disposition')).toBe('attachment; filename=fraud-monitoring-report-2026.csv');
    const text = await byFormat.text();
    expect(figuresOfCsv(text)).toEqual(figuresOf(json));
    expect(text).toContain(`alerts,,raised,${json.alerts.raised}\r\n`);
    const byAccept = await c.request('GET', '/v1/fraud_monitoring/report?year=2026', { headers: { accept: 'text/csv' } });
    expect(await byAccept.text()).toBe(text);
  });

  test('an earlier year has the version in force then and nothing else; a later year or a bad one is 400 naming year', async () => {
    await ready;
    const r = (await c.json('GET', '/v1/fraud_monitoring/report?year=2025')).body;
    expect(r).toMatchObject({ year: 2025, to: '2025-12-31T23:59:59.999Z', reviews: [], holds: { raised: 0, holding: 0 }, frozen_accounts: 0, alerts: { raised: 0 } });
    expect(r.policy_versions.map((v: { version: number }) => v.version)).toEqual([0]);
    expect(r.unauthorized_returns).toHaveLength(12);
    for (const bad of ['2027', '26', 'abcd', '']) {
      const x = await c.json('GET', `/v1/fraud_monitoring/report?year=${bad}`);
      expect(`${bad}: ${x.status}`).toBe(`${bad}: 400`);
      expect(JSON.stringify(x.body.error)).toContain('year');
    }
  });
});
