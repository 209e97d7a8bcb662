// engine: sqlite (it replays SQLite migrations 0035 and 0040’s own statements on a database of lenders made before them)
// Account validation became required for new lenders: the lenders there before the upgrade keep debiting as
// they did (a policy saying false, their other choices kept), and a lender created after it requires it.
import { afterAll, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestContext, type TestContext } from '../../helpers/context';
import { MIGRATIONS_DIR } from '../../../src/platform/db';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));

test('migration 0035: every lender there before it gets require_account_validation false, and only they', async () => {
  const c = createTestContext();
  contexts.push(c);
  // One lender with a policy of its own, one without (every default).
  const chose = c.newLender('chose-a-policy');
  expect((await c.json('PATCH', '/v1/collection_policy', { key: chose.key, body: { notice_days: 2 } })).status).toBe(200);
  expect((await c.json('GET', '/v1/collection_policy')).body.require_account_validation).toBe(true);

  // The migration's own statements, as an upgrade runs them after adding the column.
  const sql = readFileSync(join(MIGRATIONS_DIR, '0035_account_changes.sql'), 'utf8');
  for (const stmt of sql.split('--> statement-breakpoint')) if (/^\s*(--.*\n\s*)*(UPDATE|INSERT)/.test(stmt)) c.sql.run(stmt);

  expect((await c.json('GET', '/v1/collection_policy')).body).toMatchObject({ require_account_validation: false, notice_days: 0, updated_at: null });
  expect((await c.json('GET', '/v1/collection_policy', { key: chose.key })).body).toMatchObject({ require_account_validation: false, notice_days: 2 });
  // A lender created after the upgrade: required.
  const after = c.newLender('after-the-upgrade');
  expect((await c.json('GET', '/v1/collection_policy', { key: after.key })).body.require_account_validation).toBe(true);
});

test('migration 0040: every lender there before it has no notice channel (no debit waits for the payday rule’s notices), and only they', async () => {
  const c = createTestContext();
  contexts.push(c);
  const chose = c.newLender('chose-before-notices');
  expect((await c.json('PATCH', '/v1/collection_policy', { key: chose.key, body: { cfpb_covered: true, notice_days: 4 } })).status).toBe(200);
  expect((await c.json('GET', '/v1/collection_policy')).body.notice_channel).toBe('electronic');
  // The column as the upgrade adds it to a row there before (null), then the migration's own statements.
  c.sql.run('UPDATE collection_policies SET notice_channel = NULL');
  const sql = readFileSync(join(MIGRATIONS_DIR, '0040_notice_windows.sql'), 'utf8');
  for (const stmt of sql.split('--> statement-breakpoint')) if (/^\s*(--.*\n\s*)*(UPDATE|INSERT)/.test(stmt)) c.sql.run(stmt);
  expect((await c.json('GET', '/v1/collection_policy')).body).toMatchObject({ notice_channel: null, notice_days: 0, require_account_validation: true, updated_at: null });
  expect((await c.json('GET', '/v1/collection_policy', { key: chose.key })).body).toMatchObject({ notice_channel: null, cfpb_covered: true, notice_days: 4 });
  const after = c.newLender('after-notices');
  expect((await c.json('GET', '/v1/collection_policy', { key: after.key })).body.notice_channel).toBe('electronic');
});
