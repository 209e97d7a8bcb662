// engine: postgres
// The operator CLI on PostgreSQL (DATABASE_URL set): lenders and keys, vault status and rotation, dashboard
// users and a sandbox charge work as on SQLite, each on the service's database; the vault commands need
// VAULT_KEY and rotate under it; backup points to pg_dump.
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshPgDatabase, onPostgres, psql } from '../helpers/pg';
import { CliError, runCli } from '../../scripts/cli';
import { ConfigError } from '../../src/config';
import { Vault } from '../../src/platform/vault';

if (!onPostgres) {
  test('the CLI on PostgreSQL: not applicable without DATABASE_URL=postgres://…', () => {
    expect(onPostgres).toBe(false);
  });
} else {
  const database = freshPgDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'drs-pg-cli-'));
  const env = { DATABASE_URL: database.url, DATABASE_PATH: join(dir, 'unused.sqlite'), VAULT_KEY_FILE: join(dir, 'vault.key'), SANDBOX_SETTLEMENT_MS: '60000' };
  const cli = (...argv: string[]) => runCli(argv, env, { readStdin: async () => 'a long enough password\n' });
  afterAll(() => {
    database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('lender create, list, approve-cards; key create, list, revoke: on the PostgreSQL database', async () => {
    const created = await cli('lender', 'create', 'pg-co');
    expect(created).toMatch(/drs_live_[0-9A-Za-z]{32}/);
    expect(await cli('lender', 'list')).toMatch(/^pg-co\s+\S+\s+no\s/m);
    await cli('lender', 'approve-cards', 'pg-co');
    expect(psql(`SELECT debit_card_approved FROM lenders WHERE name = 'pg-co'`, database.url)).toBe('1');
    expect(await cli('key', 'create', 'pg-co')).toMatch(/drs_live_[0-9A-Za-z]{32}/);
    const listed = await cli('key', 'list', 'pg-co');
    const prefixes = [...listed.matchAll(/drs_live_[0-9A-Za-z]{8}/g)].map((m) => m[0]);
    expect(prefixes).toHaveLength(2);
    await cli('key', 'revoke', prefixes[0]!);
    expect(psql(`SELECT count(*) FROM api_keys WHERE revoked_at IS NOT NULL`, database.url)).toBe('1');
    // A second lender of the same name is refused, as on SQLite.
    await expect(cli('lender', 'create', 'pg-co')).rejects.toThrow('already exists');
    // Nothing was written to a SQLite file.
    expect(await Bun.file(env.DATABASE_PATH).exists()).toBe(false);
  });

  test('a dashboard user is created and listed', async () => {
    await cli('user', 'create', 'pg-co', 'ops@example.com', '--name', 'Ops', '--password-stdin');
    expect(await cli('user', 'list', 'pg-co')).toContain('ops@example.com');
  });

  test('a sandbox charge is stored in the sandbox tables of the PostgreSQL database', async () => {
    const key = 'sbx_test_' + 'pgcli0000000000000000000001';
    const out = await cli('sandbox', 'charge', '--key', key, '--amount', '1500', '--reference', 'DRS-pg-cli-1');
    expect(out).toContain('Created sandbox payment');
    expect(psql(`SELECT count(*) FROM sandbox_payments WHERE reference = 'DRS-pg-cli-1'`, database.url)).toBe('1');
  });

  test('the vault commands need VAULT_KEY, as the service does, and make no key file', async () => {
    const e = await cli('vault', 'status').catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).toContain('VAULT_KEY is required');
    expect(await Bun.file(env.VAULT_KEY_FILE).exists()).toBe(false);
  });

  test('rotation re-seals the PostgreSQL rows under VAULT_KEY, the old key given in VAULT_OLD_KEYS', async () => {
    const oldKey = Buffer.alloc(32, 4).toString('base64');
    const newKey = Buffer.alloc(32, 5).toString('base64');
    const oldVault = new Vault(Buffer.from(oldKey, 'base64'));
    const lenderId = psql(`SELECT id FROM lenders WHERE name = 'pg-co'`, database.url);
    psql(`INSERT INTO webhook_secrets (id, lender_id, secret_sealed, created_at) VALUES ('ws-rotate-1', '${lenderId}', '${oldVault.seal('whsec_rotated')}', 1)`, database.url);
    const onOld = (...argv: string[]) => runCli(argv, { ...env, VAULT_KEY: oldKey });
    const onNew = (...argv: string[]) => runCli(argv, { ...env, VAULT_KEY: newKey, VAULT_OLD_KEYS: oldKey });
    expect(await onOld('vault', 'status')).toMatch(new RegExp(`^${oldVault.currentKeyId}\\s+yes\\s+1$`, 'm'));
    // The new key alone cannot read the old value: refused, nothing changed.
    const e = await runCli(['vault', 'rotate'], { ...env, VAULT_KEY: newKey }).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(CliError);
    expect((e as Error).message).toContain(`1 under key id ${oldVault.currentKeyId}`);
    expect(await onNew('vault', 'rotate')).toContain('1 sealed values re-sealed under VAULT_KEY');
    const newVault = new Vault(Buffer.from(newKey, 'base64'));
    expect(newVault.open(psql(`SELECT secret_sealed FROM webhook_secrets WHERE id = 'ws-rotate-1'`, database.url))).toBe('whsec_rotated');
    expect(await onNew('vault', 'status')).toMatch(new RegExp(`^${newVault.currentKeyId}\\s+yes\\s+1$`, 'm'));
    expect(await Bun.file(env.VAULT_KEY_FILE).exists()).toBe(false);
  });

  test('backup refuses and points to pg_dump', async () => {
    const e = await cli('backup', join(dir, 'copy.sqlite')).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(CliError);
    expect((e as Error).message).toContain('pg_dump');
  });
}
