// engine: both
// The fraud-monitoring policy through the API: every rule on with its defaults until the lender saves a version;
// each PUT a new version with who and when, the earlier ones kept; settings out of their bounds, unknown
// settings, rules or fields and actions a rule does not take are 400 naming the field, and change nothing. The
// catalogue answers each rule's bounds. An alert is the lender's own: another lender's is 404 to read and to
// dispose of.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext } from '../../helpers/context';
import { enrollBorrower, ownAccount } from '../../helpers/fixtures';
import { RULES } from '../../../src/modules/fraud-monitoring/rules';

const c = createTestContext({}, { clockAt: '2026-11-25T12:00:00.000Z' });
afterAll(() => c.close());

const put = (body: unknown, key?: string) => c.json('PUT', '/v1/fraud_monitoring/policy', { body, ...(key ? { key } : {}) });
const get = (key?: string) => c.json('GET', '/v1/fraud_monitoring/policy', key ? { key } : {});

describe('the policy', () => {
  test('version 0 until saved: every rule on, with its default action and settings', async () => {
    const l = c.newLender();
    const r = await get(l.key);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ version: 0, notes: null, changed_by: null, changed_at: null });
    for (const [id, spec] of Object.entries(RULES)) {
      expect(r.body.rules[id]).toEqual({ enabled: true, action: spec.defaultAction, settings: Object.fromEntries(Object.entries(spec.settings).map(([k, s]) => [k, s.default])) });
    }
  });

  test('each PUT a new version, the whole document, with who (changed_by, else the key) and when', async () => {
    const l = c.newLender();
    const first = await put({ rules: { velocity: { action: 'hold', settings: { max_debits: 2 } }, amount_outlier: { enabled: false } }, notes: 'Risk assessment 2026' }, l.key);
    expect(first.status).toBe(200);
    const keyId = (await c.rows<{ id: string }>('SELECT id FROM api_keys WHERE lender_id = ?', l.id))[0]!.id;
    expect(first.body).toMatchObject({ version: 1, notes: 'Risk assessment 2026', changed_by: `api_key:${keyId}`, changed_at: new Date(c.clock.now()).toISOString() });
    expect(first.body.rules.velocity).toEqual({ enabled: true, action: 'hold', settings: { max_debits: 2, window_days: 7 } });
    expect(first.body.rules.amount_outlier).toMatchObject({ enabled: false, action: 'alert' });
    c.clock.advance(60_000);
    const second = await put({ rules: { unauthorized_streak: { settings: { threshold: 5 } } }, changed_by: 'j.doe' }, l.key);
    expect(second.body).toMatchObject({ version: 2, notes: null, changed_by: 'j.doe' });
    // A rule not named is at its defaults again: the document is whole.
    expect(second.body.rules.velocity).toEqual({ enabled: true, action: 'alert', settings: { max_debits: 3, window_days: 7 } });
    expect(second.body.rules.unauthorized_streak.settings).toEqual({ threshold: 5, window_days: 30 });
    expect((await get(l.key)).body).toEqual(second.body);
    // Every version is kept.
    expect(await c.rows('SELECT version, changed_by AS changedBy FROM fraud_policies WHERE lender_id = ? ORDER BY version', l.id)).toEqual([
      { version: 1, changedBy: `api_key:${keyId}` },
      { version: 2, changedBy: 'j.doe' },
    ]);
  });

  test('out of bounds, unknown, or an action the rule does not take: 400 naming the field, nothing saved', async () => {
    const l = c.newLender();
    const refused: [unknown, string][] = [
      [{ rules: { velocity: { settings: { max_debits: 0 } } } }, '/rules/velocity/settings/max_debits'],
      [{ rules: { velocity: { settings: { max_debits: 32 } } } }, '/rules/velocity/settings/max_debits'],
      [{ rules: { account_changed: { settings: { window_days: 181 } } } }, '/rules/account_changed/settings/window_days'],
      [{ rules: { amount_outlier: { settings: { factor: 1 } } } }, '/rules/amount_outlier/settings/factor'],
      [{ rules: { velocity: { settings: { max_debit: 2 } } } }, '/rules/velocity/settings/max_debit'],
      [{ rules: { first_debit_unvalidated: { settings: { days: 2 } } } }, '/rules/first_debit_unvalidated/settings/days'],
      [{ rules: { unauthorized_streak: { action: 'hold' } } }, '/rules/unauthorized_streak/action'],
      [{ rules: { velocity: { action: 'block' } } }, '/rules/velocity/action'],
      [{ rules: { no_such_rule: {} } }, '/rules/no_such_rule'],
      [{ rules: { velocity: { settings: { max_debits: 2.5 } } } }, '/rules/velocity/settings/max_debits'],
      [{ changed_by: '' }, '/changed_by'],
      [{ color: 'red' }, '/color'],
    ];
    for (const [body, field] of refused) {
      const r = await put(body, l.key);
      expect({ body, status: r.status }).toEqual({ body, status: 400 });
      expect(JSON.stringify(r.body.error)).toContain(field);
    }
    expect((await get(l.key)).body.version).toBe(0);
  });

  test('the catalogue: each rule with its version, reason, actions and bounds', async () => {
    const r = await c.json('GET', '/v1/fraud_monitoring/rules');
    expect(r.status).toBe(200);
    expect(r.body.rules.map((x: { id: string }) => x.id)).toEqual(Object.keys(RULES));
    expect(r.body.rules.find((x: { id: string }) => x.id === 'velocity')).toMatchObject({
      version: 1,
      actions: ['hold', 'alert'],
      default_action: 'alert',
      settings: { max_debits: { default: 3, minimum: 1, maximum: 31 }, window_days: { default: 7, minimum: 1, maximum: 90 } },
    });
    expect(r.body.rules.find((x: { id: string }) => x.id === 'unauthorized_streak').actions).toEqual(['alert']);
  });
});

describe('alerts are the lender’s own', () => {
  test('another lender’s alert is 404 to read and to dispose of, and stays open', async () => {
    const owner = c.newLender();
    const stranger = c.newLender();
    const enroll = (b: Record<string, unknown>) => c.json('POST', '/v1/payment_enrollments', { key: owner.key, body: { borrowers: [b] } });
    expect((await enroll(enrollBorrower('first', { account_number: ownAccount(40) }))).status).toBe(207);
    expect((await enroll(enrollBorrower('second', { account_number: ownAccount(40), first_name: 'Grace', last_name: 'Hopper' }))).status).toBe(207);
    const [a] = (await c.json('GET', '/v1/fraud_alerts', { key: owner.key })).body.alerts;
    expect(a).toMatchObject({ rule: 'shared_account', authorizer_unique_id: 'second', state: 'open' });
    expect((await c.json('GET', `/v1/fraud_alerts/${a.id}`, { key: stranger.key })).status).toBe(404);
    expect((await c.json('POST', `/v1/fraud_alerts/${a.id}/disposition`, { key: stranger.key, body: { disposition: 'cleared' } })).status).toBe(404);
    expect((await c.json('GET', '/v1/fraud_alerts', { key: stranger.key })).body.alerts).toEqual([]);
    expect((await c.json('GET', `/v1/fraud_alerts/${a.id}`, { key: owner.key })).body).toMatchObject({ id: a.id, state: 'open', dispositions: [] });
    // A disposition it does not know, or a note too long: 400, nothing recorded.
    expect((await c.json('POST', `/v1/fraud_alerts/${a.id}/disposition`, { key: owner.key, body: { disposition: 'ignored' } })).status).toBe(400);
    expect((await c.json('POST', `/v1/fraud_alerts/${a.id}/disposition`, { key: owner.key, body: { disposition: 'cleared', note: 'x'.repeat(2001) } })).status).toBe(400);
    expect((await c.json('GET', `/v1/fraud_alerts/${a.id}`, { key: owner.key })).body.dispositions).toEqual([]);
  });
});
