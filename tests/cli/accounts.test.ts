// The operator's commands for processor accounts: each account is bound to the lender that registered it
// first, for good; `account release` is the one way to hand it to another lender.
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError, runCli } from '../../scripts/cli';
import { createTestContext, type TestContext } from '../helpers/context';

const dirs: string[] = [];
const contexts: TestContext[] = [];
afterAll(() => {
  for (const c of contexts) c.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const KEY = 'sbx_handed_over_account_01';

test('account list names the holder; release is refused while its key lives, then hands the account over', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'drs-cli-accounts-'));
  dirs.push(dir);
  const env = { DATABASE_PATH: join(dir, 'data', 'service.sqlite'), VAULT_KEY_FILE: join(dir, 'data', 'vault.key') };
  const cli = (...argv: string[]) => runCli(argv, env);
  const c = createTestContext(env);
  contexts.push(c);
  const a = await c.json('POST', '/v1/payment_connections', { body: { api_key: KEY, rail_scope: 'both', is_default: true } });
  expect(a.status).toBe(201);
  const b = c.newLender('lender-taking-over');
  expect((await c.json('POST', '/v1/payment_connections', { key: b.key, body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(409);

  const listed = await cli('account', 'list');
  const account = /sbxacct_\S+/.exec(listed)?.[0];
  expect(account).toBeDefined();
  expect(listed).not.toContain('lender-taking-over');
  expect(listed).not.toContain(KEY);

  const inUse = await cli('account', 'release', 'sandbox', account!).catch((e: unknown) => e);
  expect(inUse).toBeInstanceOf(CliError);
  expect((inUse as Error).message).toContain('still uses');
  expect(await cli('account', 'release', 'sandbox', 'sbxacct_nobody').catch((e: unknown) => (e as Error).message)).toContain('No sandbox account');
  expect(await cli('account', 'release', 'paypal', account!).catch((e: unknown) => (e as Error).message)).toContain('Usage');

  // Deleted, the account is still bound: B is still refused until the operator releases it.
  expect((await c.json('DELETE', `/v1/payment_connections/${a.body.id}`)).status).toBe(204);
  expect((await c.json('POST', '/v1/payment_connections', { key: b.key, body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(409);
  expect(await cli('account', 'release', 'sandbox', account!)).toContain('Released');
  expect((await c.json('POST', '/v1/payment_connections', { key: b.key, body: { api_key: KEY, rail_scope: 'both', is_default: true } })).status).toBe(201);
  expect(await cli('account', 'list')).toContain('lender-taking-over');
});
