// engine: sqlite (the vault key in a key file, rotated by the CLI as an operator does with the service stopped)
// A bank account is recognised by a fingerprint under a key kept in the database, sealed with the vault: `vault
// rotate` re-seals that key, so an account blocked before a rotation is still recognised after it, with the old
// vault key gone.
import { afterAll, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../../scripts/cli';
import { createTestContext, type TestContext } from '../../helpers/context';
import { enrollBorrower } from '../../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../../helpers/collection';
import { SEALED_COLUMNS } from '../../../src/modules';

const SETTLE = 60_000;
const dir = mkdtempSync(join(tmpdir(), 'drs-bank-accounts-rotation-'));
const contexts: TestContext[] = [];
afterAll(() => {
  for (const c of contexts) c.close();
  rmSync(dir, { recursive: true, force: true });
});

const env = {
  DATABASE_PATH: join(dir, 'data', 'service.sqlite'),
  VAULT_KEY_FILE: join(dir, 'data', 'vault.key'),
  SANDBOX_SETTLEMENT_MS: String(SETTLE),
};
const open = () => {
  const c = createTestContext(env);
  contexts.push(c);
  return c;
};

test('an account blocked before `vault rotate` is recognised after it, with only the new key', async () => {
  expect(SEALED_COLUMNS).toContainEqual({ table: 'service_secrets', key: 'name', column: 'secret_sealed' });
  const key = /drs_live_[0-9A-Za-z]{32}/.exec(await runCli(['lender', 'create', 'rotating'], env))![0];

  const before = open();
  expect((await before.json('POST', '/v1/payment_connections', { key, body: { api_key: 'sbx_rotation_key_000000001', rail_scope: 'both', is_default: true } })).status).toBe(201);
  // Cents 94: the sandbox returns it R10.
  await before.json('POST', '/v1/payment_enrollments', { key, body: { borrowers: [enrollBorrower('before', { collectable_amount: 42594 })] } });
  await cycle(before);
  await dispatchAndSettle(before, SETTLE);
  const accountId = (await before.json('GET', '/v1/payment_enrollments/before', { key })).body.bank_account_id as string;
  expect((await before.json('GET', `/v1/bank_accounts/${accountId}`, { key })).body).toMatchObject({ state: 'unauthorized', return_codes: ['R10'] });
  const sealedKey = (before.sql.query("SELECT secret_sealed AS v FROM service_secrets WHERE name = 'bank-account-fingerprint'").get() as { v: string }).v;
  const oldKeyId = before.rt.vault.currentKeyId;
  expect(sealedKey.split('.')[1]).toBe(oldKeyId);
  before.close();

  const out = await runCli(['vault', 'rotate'], env);
  expect(out).toContain('Vault key rotated');
  // The old key goes: whatever was not re-sealed would no longer open.
  rmSync(`${env.VAULT_KEY_FILE}.old`);
  expect(existsSync(`${env.VAULT_KEY_FILE}.old`)).toBe(false);

  const after = open();
  expect(after.rt.vault.currentKeyId).not.toBe(oldKeyId);
  const resealed = (after.sql.query("SELECT secret_sealed AS v FROM service_secrets WHERE name = 'bank-account-fingerprint'").get() as { v: string }).v;
  expect(resealed).not.toBe(sealedKey);
  expect(resealed.split('.')[1]).toBe(after.rt.vault.currentKeyId);
  // The same account, recognised: a new borrower on it is blocked at once, linked to the same record.
  const r = await after.json('POST', '/v1/payment_enrollments', { key, body: { borrowers: [enrollBorrower('after', { collectable_amount: 1000 })] } });
  expect(r.body.results).toEqual([{ authorizer_unique_id: 'after', outcome: 'enrolled' }]);
  expect((await after.json('GET', '/v1/payment_enrollments/after', { key })).body).toMatchObject({ bank_account_id: accountId, blocked_reason: 'account_unauthorized' });
  expect((await after.json('GET', '/v1/bank_accounts', { key })).body.bank_accounts.map((a: { id: string }) => a.id)).toEqual([accountId]);
  await cycle(after);
  expect(after.sql.query("SELECT COUNT(*) AS n FROM payments WHERE authorizer_unique_id = 'after'").get()).toEqual({ n: 0 });
});
