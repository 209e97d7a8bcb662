// engine: sqlite
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError, runCli } from '../../scripts/cli';
import { LenderError, MAX_LIVE_API_KEYS } from '../../src/modules/lenders/service';
import { Vault } from '../../src/platform/vault';
import { SEALED_COLUMNS } from '../../src/modules';
import { openSensitive } from '../../src/modules/balance-requests/payload';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { enrollBorrower } from '../helpers/fixtures';
import { createTestContext, type TestContext } from '../helpers/context';
import { startFakePlaid } from '../fakes/plaid-server';

const ROOT = join(import.meta.dir, '../..');
const KEY_RE = /drs_live_[0-9A-Za-z]{32}/g;
const AUTHORIZER = { authorizer_unique_id: 'a1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' };
const CARD_AUTHORIZER = {
  authorizer_unique_id: 'card-1',
  ssn: '123456789',
  debit_card_number: '4111111111111111',
  expiration_month: 12,
  expiration_year: 2031,
  cvv: '123',
};

const dirs: string[] = [];
// Plaid stands outside: bank-data credentials are checked there before they are stored (and sealed).
const plaid = startFakePlaid();
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  plaid.stop();
});

/** A fresh data folder: the env the CLI reads and a way to open the service on the same files. */
function workspace(extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'drs-cli-test-'));
  dirs.push(dir);
  const env = { DATABASE_PATH: join(dir, 'data', 'service.sqlite'), VAULT_KEY_FILE: join(dir, 'data', 'vault.key'), ...extra };
  const cli = (...argv: string[]) => runCli(argv, env);
  const contexts: TestContext[] = [];
  /** A new runtime and app on the workspace's database and vault key. */
  const openApp = () => {
    const ctx = createTestContext(env);
    contexts.push(ctx);
    return ctx;
  };
  const closeApps = () => {
    for (const c of contexts.splice(0)) c.close();
  };
  return { dir, env, cli, openApp, closeApps };
}

async function rejects(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the command to fail');
}

const keysIn = (s: string) => s.match(KEY_RE) ?? [];

describe('lender and key commands', () => {
  const ws = workspace();
  afterAll(() => ws.closeApps());

  test('help prints the usage', async () => {
    expect(await ws.cli()).toContain('Usage:');
    expect(await ws.cli('help')).toContain('lender create NAME');
  });

  test('lender create prints one drs_live_ key, which authenticates against the app on the same file', async () => {
    const out = await ws.cli('lender', 'create', 'acme');
    expect(keysIn(out)).toHaveLength(1);
    expect(out).toContain('acme');
    const key = keysIn(out)[0]!;

    const ctx = ws.openApp();
    const r = await ctx.json('GET', '/v1/webhooks/secret', { key });
    expect(r.status).toBe(200);
    expect(r.body.secret).toMatch(/^whsec_/);

    // The database keeps only a hash and a display prefix.
    const row = ctx.sql.query('SELECT prefix, key_hash FROM api_keys k JOIN lenders l ON l.id = k.lender_id WHERE l.name = ?').get('acme') as {
      prefix: string;
      key_hash: string;
    };
    expect(key.startsWith(row.prefix)).toBe(true);
    expect(row.prefix.length).toBeLessThan(key.length);
    expect(row.key_hash).not.toContain(key.slice(9));
  });

  test('a duplicate name is refused', async () => {
    const e = await rejects(ws.cli('lender', 'create', 'acme'));
    expect(e).toBeInstanceOf(LenderError);
    expect(e.message).toContain('already exists');
  });

  test('an invalid name is refused', async () => {
    expect(await rejects(ws.cli('lender', 'create', '../etc'))).toBeInstanceOf(LenderError);
    expect(await rejects(ws.cli('lender', 'create'))).toBeInstanceOf(CliError);
  });

  test('lender list shows every lender and no key', async () => {
    await ws.cli('lender', 'create', 'globex');
    const out = await ws.cli('lender', 'list');
    const lines = out.split('\n');
    expect(lines[0]).toMatch(/^name\s+id\s+debit_cards\s+created$/);
    expect(out).toMatch(/^acme\s+[0-9a-f-]{36}\s+no\s+\d{4}-\d{2}-\d{2}T/m);
    expect(out).toMatch(/^globex\s+/m);
    expect(out).not.toContain('drs_live_');
  });

  test('lender approve-cards enables debit-card reads in the app; revoke-cards withdraws it', async () => {
    const out = await ws.cli('lender', 'create', 'cards-co');
    const key = keysIn(out)[0]!;
    const ctx = ws.openApp();

    const before = await ctx.json('POST', '/v1/balance_requests', { key, body: { authorizers: [CARD_AUTHORIZER] } });
    expect(before.status).toBe(400);
    expect(JSON.stringify(before.body.error.details.failed_authorizers)).toContain('approval');

    expect(await ws.cli('lender', 'approve-cards', 'cards-co')).toContain('approved');
    expect(await ws.cli('lender', 'list')).toMatch(/^cards-co\s+\S+\s+approved\s/m);
    const after = await ctx.json('POST', '/v1/balance_requests', { key, body: { authorizers: [CARD_AUTHORIZER] } });
    expect(after.status).toBe(201);
    expect(after.body.failed_authorizers).toEqual([]);

    expect(await ws.cli('lender', 'revoke-cards', 'cards-co')).toContain('withdrawn');
    expect(await ws.cli('lender', 'list')).toMatch(/^cards-co\s+\S+\s+no\s/m);
    const again = await ctx.json('POST', '/v1/balance_requests', {
      key,
      body: { authorizers: [{ ...CARD_AUTHORIZER, authorizer_unique_id: 'card-2' }] },
    });
    expect(again.status).toBe(400);

    expect(await rejects(ws.cli('lender', 'approve-cards', 'nobody'))).toBeInstanceOf(CliError);
  });

  test('key create issues another working key; key list shows prefixes only', async () => {
    const first = keysIn(await ws.cli('lender', 'create', 'keys-co'))[0]!;
    const out = await ws.cli('key', 'create', 'keys-co');
    expect(keysIn(out)).toHaveLength(1);
    const second = keysIn(out)[0]!;
    expect(second).not.toBe(first);

    const ctx = ws.openApp();
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: second })).status).toBe(200);
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: first })).status).toBe(200);

    const list = await ws.cli('key', 'list', 'keys-co');
    const lines = list.split('\n');
    expect(lines[0]).toMatch(/^prefix\s+created\s+last_used\s+revoked$/);
    expect(lines).toHaveLength(3);
    expect(list).not.toContain(first);
    expect(list).not.toContain(second);
    expect(keysIn(list)).toHaveLength(0);
    for (const k of [first, second]) {
      const prefix = k.slice(0, 17);
      expect(list).toContain(prefix);
      expect(list).not.toContain(k.slice(0, 18));
    }
    // Both keys were just used, so last_used is set; neither is revoked.
    for (const line of lines.slice(1)) {
      const cells = line.split(/\s+/);
      expect(cells[2]).toMatch(/^\d{4}-/);
      expect(cells[3]).toBe('-');
    }
    expect(await rejects(ws.cli('key', 'list', 'nobody'))).toBeInstanceOf(CliError);
  });

  test('key revoke PREFIX makes that key fail with 401 and leaves the others', async () => {
    const first = keysIn(await ws.cli('lender', 'create', 'revoke-co'))[0]!;
    const second = keysIn(await ws.cli('key', 'create', 'revoke-co'))[0]!;
    const ctx = ws.openApp();
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: first })).status).toBe(200);

    const prefix = first.slice(0, 17);
    expect(await ws.cli('key', 'revoke', prefix)).toContain(prefix);
    const r = await ctx.json('GET', '/v1/webhooks/secret', { key: first });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('UNAUTHORIZED');
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: second })).status).toBe(200);

    expect(await ws.cli('key', 'list', 'revoke-co')).toMatch(new RegExp(`^${prefix}\\s+\\S+\\s+\\S+\\s+\\d{4}-`, 'm'));
    // Revoking again, or an unknown prefix, is an error.
    expect(await rejects(ws.cli('key', 'revoke', prefix))).toBeInstanceOf(CliError);
    expect(await rejects(ws.cli('key', 'revoke', 'drs_live_zzzzzzzz'))).toBeInstanceOf(CliError);
    expect(await rejects(ws.cli('key', 'revoke'))).toBeInstanceOf(CliError);
  });

  test(`key create refuses a key past ${MAX_LIVE_API_KEYS} live ones, saying how to make room; a revoked key frees its place`, async () => {
    const first = keysIn(await ws.cli('lender', 'create', 'many-keys-co'))[0]!;
    for (let i = 1; i < MAX_LIVE_API_KEYS; i++) expect(keysIn(await ws.cli('key', 'create', 'many-keys-co'))).toHaveLength(1);
    const e = await rejects(ws.cli('key', 'create', 'many-keys-co'));
    expect(e).toBeInstanceOf(CliError);
    expect(e.message).toContain(`at most ${MAX_LIVE_API_KEYS} live API keys`);
    expect(e.message).toContain('key revoke PREFIX');
    expect((await ws.cli('key', 'list', 'many-keys-co')).trim().split('\n')).toHaveLength(MAX_LIVE_API_KEYS + 1);
    await ws.cli('key', 'revoke', first.slice(0, 17));
    expect(keysIn(await ws.cli('key', 'create', 'many-keys-co'))).toHaveLength(1);
    expect(await rejects(ws.cli('key', 'create', 'many-keys-co'))).toBeInstanceOf(CliError);
  });

  test('an unknown command is a CliError carrying the usage', async () => {
    const e = await rejects(ws.cli('frobnicate'));
    expect(e).toBeInstanceOf(CliError);
    expect(e.message).toContain('Unknown command');
    expect(e.message).toContain('Usage:');
  });
});

describe('backup', () => {
  const ws = workspace();

  test('writes a copy that opens, passes integrity_check and holds the lenders', async () => {
    await ws.cli('lender', 'create', 'backed-up');
    await ws.cli('lender', 'create', 'also-backed-up');
    const file = join(ws.dir, 'backup.sqlite');
    const out = await ws.cli('backup', file);
    expect(out).toContain(file);
    expect(existsSync(file)).toBe(true);

    const copy = new Database(file, { readonly: true });
    try {
      expect(copy.query('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }]);
      const names = (copy.query('SELECT name FROM lenders ORDER BY name').all() as { name: string }[]).map((r) => r.name);
      expect(names).toEqual(['also-backed-up', 'backed-up']);
      expect((copy.query('SELECT COUNT(*) AS n FROM api_keys').get() as { n: number }).n).toBe(2);
      expect((copy.query('SELECT COUNT(*) AS n FROM __drizzle_migrations').get() as { n: number }).n).toBeGreaterThan(0);
    } finally {
      copy.close();
    }
  });

  test('works while the service has the database open', async () => {
    const ctx = ws.openApp();
    expect((await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [AUTHORIZER] } })).status).toBe(201);
    const file = join(ws.dir, 'live-backup.sqlite');
    await ws.cli('backup', file);
    const copy = new Database(file, { readonly: true });
    try {
      expect((copy.query('SELECT COUNT(*) AS n FROM batches').get() as { n: number }).n).toBe(1);
    } finally {
      copy.close();
    }
    ws.closeApps();
  });

  test('refuses to overwrite an existing file', async () => {
    const file = join(ws.dir, 'backup.sqlite');
    const before = readFileSync(file);
    const e = await rejects(ws.cli('backup', file));
    expect(e).toBeInstanceOf(CliError);
    expect(e.message).toContain('already exists');
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  test('needs a file name', async () => {
    expect(await rejects(ws.cli('backup'))).toBeInstanceOf(CliError);
  });

  test('the copy is readable by its owner only (0600), whatever the umask, as the database and vault key are', async () => {
    const previous = process.umask(0o000);
    try {
      const file = join(ws.dir, 'private-backup.sqlite');
      await ws.cli('backup', file);
      expect(statSync(file).mode & 0o777).toBe(0o600);
    } finally {
      process.umask(previous);
    }
  });
});

/** Parses `vault status` output into {key_id: {current, values}}. */
function parseStatus(out: string): Record<string, { current: string; values: number }> {
  const lines = out.split('\n');
  expect(lines[0]).toMatch(/^key_id\s+current\s+values$/);
  const res: Record<string, { current: string; values: number }> = {};
  for (const line of lines.slice(1)) {
    const [kid, current, values] = line.split(/\s+/);
    res[kid!] = { current: current!, values: Number(values) };
  }
  return res;
}

describe('vault', () => {
  test('rotate re-seals every sealed value; a fresh runtime still reads them', async () => {
    plaid.addClient('vault_client', 'vault-plaid-secret');
    const ws = workspace({ PLAID_API_URL: plaid.url });
    const key = keysIn(await ws.cli('lender', 'create', 'vaulted'))[0]!;

    // Data in every sealed column: a webhook secret, a batch payload, schedule authorizers.
    const app = ws.openApp();
    const secret = await app.json('GET', '/v1/webhooks/secret', { key });
    expect(secret.status).toBe(200);
    const batch = await app.json('POST', '/v1/balance_requests', { key, body: { authorizers: [AUTHORIZER] } });
    expect(batch.status).toBe(201);
    const schedule = await app.json('POST', '/v1/monitoring/scheduled_balance_request', {
      key,
      body: { name: 'weekly', interval_days: 7, authorizers: [AUTHORIZER, { ...AUTHORIZER, authorizer_unique_id: 'a2' }] },
    });
    expect(schedule.status).toBe(201);
    // A processor key, and a deleted one (its sealed value erased: nothing to re-seal).
    const processorKey = 'sbx_vault_rotation_000001';
    const conn = await app.json('POST', '/v1/payment_connections', { key, body: { api_key: processorKey, rail_scope: 'both', is_default: true } });
    expect(conn.status).toBe(201);
    const gone = await app.json('POST', '/v1/payment_connections', { key, body: { api_key: 'sbx_vault_rotation_000002', rail_scope: 'ach' } });
    expect((await app.request('DELETE', `/v1/payment_connections/${gone.body.id}`, { key })).status).toBe(204);
    // Bank-data credentials.
    const bankData = await app.json('POST', '/v1/bank_data_connections', { key, body: { provider: 'plaid', client_id: 'vault_client', secret: 'vault-plaid-secret', environment: 'sandbox' } });
    expect(bankData.status).toBe(201);
    // An enrolled borrower: sealed personal data and a sealed card token; and one debited by ACH, whose bank
    // account is fingerprinted under the service's sealed fingerprint key.
    const enrolled = await app.json('POST', '/v1/payment_enrollments', {
      key,
      body: { borrowers: [enrollBorrower('vaulted-1', { charge_instrument: { processor_token: 'pm_vaulted', card_last4: '4242' } }), enrollBorrower('vaulted-ach')] },
    });
    expect(enrolled.body.results[0].outcome).toBe('enrolled');
    // A bank's Notification of Change on that account: its corrected data (an account number) kept sealed.
    const noc = new FormData();
    noc.append('file', new Blob(['authorizer_unique_id,change_code,corrected_data\nvaulted-ach,C01,0001112223\n'], { type: 'text/csv' }), 'noc.csv');
    expect((await app.json('POST', '/v1/payment_results/uploads', { key, form: noc })).body.notifications_of_change).toBe(1);
    // A linked account whose provider says it needs the borrower: kept sealed with its health, for probing.
    plaid.addItem('access-sandbox-vault1', [{ account_id: 'acc_vault_0001', available: 1, current: 1 }]);
    plaid.setItemError('access-sandbox-vault1', 'ITEM_LOGIN_REQUIRED');
    const linked = await app.json('POST', '/v1/balance_requests', {
      key,
      body: { authorizers: [{ ...AUTHORIZER, authorizer_unique_id: 'linked-1', bank_link: { provider: 'plaid', access_token: 'access-sandbox-vault1', account_id: 'acc_vault_0001' } }] },
    });
    expect(linked.status).toBe(201);
    await processBalances(app.rt);
    // An upload cut off between two of its slices: its file, compressed and sealed, kept to finish it.
    const cutFile = new TextEncoder().encode(`authorizer_unique_id,reference\nvaulted-1,R-1\n`);
    const lenderId = (app.sql.query("SELECT id FROM lenders WHERE name = 'vaulted'").get() as { id: string }).id;
    app.sql
      .query('INSERT INTO unfinished_uploads (id, lender_id, creator, file_sealed, checked_at, done, matched) VALUES (?, ?, NULL, ?, 0, 512, 512)')
      .run('cut-upload', lenderId, app.rt.vault.sealBytes(Bun.zstdCompressSync(cutFile)));
    const oldKeyId = app.rt.vault.currentKeyId;
    const sealedIn = ({ table, column }: { table: string; column: string }) =>
      (app.sql.query(`SELECT COUNT(*) AS n FROM ${table} WHERE ${column} IS NOT NULL`).get() as { n: number }).n;
    const sealedCount = SEALED_COLUMNS.reduce((n, c) => n + sealedIn(c), 0);
    expect(sealedCount).toBeGreaterThanOrEqual(5);
    for (const c of SEALED_COLUMNS) expect(sealedIn(c)).toBeGreaterThan(0);
    ws.closeApps();

    expect(parseStatus(await ws.cli('vault', 'status'))).toEqual({ [oldKeyId]: { current: 'yes', values: sealedCount } });

    const oldKeyText = readFileSync(ws.env.VAULT_KEY_FILE, 'utf8');
    const out = await ws.cli('vault', 'rotate');
    const newKeyId = /new key id ([0-9a-f]{8})/.exec(out)?.[1];
    expect(newKeyId).toBeDefined();
    expect(newKeyId).not.toBe(oldKeyId);
    expect(out).toContain(`${sealedCount} sealed values re-sealed`);

    // The key files: the new key (0600), the old one kept in .old (0600).
    expect(readFileSync(ws.env.VAULT_KEY_FILE, 'utf8')).not.toBe(oldKeyText);
    expect(statSync(ws.env.VAULT_KEY_FILE).mode & 0o777).toBe(0o600);
    expect(readFileSync(`${ws.env.VAULT_KEY_FILE}.old`, 'utf8')).toBe(oldKeyText);
    expect(statSync(`${ws.env.VAULT_KEY_FILE}.old`).mode & 0o777).toBe(0o600);
    expect(existsSync(`${ws.env.VAULT_KEY_FILE}.tmp`)).toBe(false);

    expect(parseStatus(await ws.cli('vault', 'status'))).toEqual({ [newKeyId!]: { current: 'yes', values: sealedCount } });

    // A fresh runtime on the same files reads everything.
    const fresh = ws.openApp();
    expect(fresh.rt.vault.currentKeyId).toBe(newKeyId!);
    const again = await fresh.json('GET', '/v1/webhooks/secret', { key });
    expect(again.status).toBe(200);
    expect(again.body.secret).toBe(secret.body.secret);
    const status = await fresh.json('GET', `/v1/balance_requests/${batch.body.batch_id}`, { key });
    expect(status.status).toBe(200);
    // The batch's payload is compressed before it is sealed (bytes, not text): re-sealed byte for byte.
    const payload = fresh.sql.query('SELECT sealed FROM batch_payloads WHERE batch_id = ?').get(batch.body.batch_id) as { sealed: string };
    expect(openSensitive(fresh.rt.vault, payload.sealed)[0]!.accountNumber).toBe(AUTHORIZER.account_number);
    const sched = await fresh.json('GET', `/v1/monitoring/schedules/${schedule.body.schedule_id}`, { key });
    expect(sched.status).toBe(200);
    for (const { table, column } of SEALED_COLUMNS) {
      for (const { v } of fresh.sql.query(`SELECT ${column} AS v FROM ${table} WHERE ${column} IS NOT NULL`).all() as { v: string }[]) {
        expect(fresh.rt.vault.needsReseal(v)).toBe(false);
        expect(() => fresh.rt.vault.open(v)).not.toThrow();
      }
    }
    // Without the old key the re-sealed values still open: they no longer need it.
    const newOnly = new Vault(Buffer.from(readFileSync(ws.env.VAULT_KEY_FILE, 'utf8').trim(), 'base64'));
    const sealedSecret = fresh.sql.query('SELECT secret_sealed AS v FROM webhook_secrets').get() as { v: string };
    expect(newOnly.open(sealedSecret.v)).toBe(secret.body.secret);
    const sealedProcessorKey = fresh.sql.query('SELECT key_sealed AS v FROM payment_connections WHERE key_sealed IS NOT NULL').get() as { v: string };
    expect(newOnly.open(sealedProcessorKey.v)).toBe(processorKey);
    const sealedFile = fresh.sql.query('SELECT file_sealed AS v FROM unfinished_uploads').get() as { v: string };
    expect(new Uint8Array(Bun.zstdDecompressSync(newOnly.openBytes(sealedFile.v)))).toEqual(cutFile);
    ws.closeApps();

    // A second rotation keeps both older keys and re-seals everything again.
    const out2 = await ws.cli('vault', 'rotate');
    const thirdKeyId = /new key id ([0-9a-f]{8})/.exec(out2)![1]!;
    expect(readFileSync(`${ws.env.VAULT_KEY_FILE}.old`, 'utf8').trim().split('\n')).toHaveLength(2);
    expect(parseStatus(await ws.cli('vault', 'status'))).toEqual({ [thirdKeyId]: { current: 'yes', values: sealedCount } });
    const third = ws.openApp();
    expect((await third.json('GET', '/v1/webhooks/secret', { key })).body.secret).toBe(secret.body.secret);
    ws.closeApps();
  });

  test('status with no sealed values', async () => {
    const ws = workspace();
    await ws.cli('lender', 'list');
    expect(await ws.cli('vault', 'status')).toBe('(none)');
  });

  test('with VAULT_KEY set, rotate re-seals under it, reading the old values with the keys in VAULT_OLD_KEYS, and writes no key file', async () => {
    const ws = workspace();
    const key = keysIn(await ws.cli('lender', 'create', 'keyed'))[0]!;
    const app = ws.openApp();
    const secret = (await app.json('GET', '/v1/webhooks/secret', { key })).body.secret as string;
    const conn = await app.json('POST', '/v1/payment_connections', { key, body: { api_key: 'sbx_vault_env_rotation_01', rail_scope: 'both', is_default: true } });
    expect(conn.status).toBe(201);
    const oldKeyId = app.rt.vault.currentKeyId;
    ws.closeApps();
    const oldKey = readFileSync(ws.env.VAULT_KEY_FILE, 'utf8').trim();
    const newKey = Buffer.alloc(32, 7).toString('base64');
    const onNew = { ...ws.env, VAULT_KEY: newKey };

    // Without the old key nothing changes, and the refusal says which key is missing and where to give it.
    const e = await rejects(runCli(['vault', 'rotate'], onNew));
    expect(e).toBeInstanceOf(CliError);
    expect(e.message).toContain(`2 under key id ${oldKeyId}`);
    expect(e.message).toContain('VAULT_OLD_KEYS');
    expect(parseStatus(await runCli(['vault', 'status'], ws.env))).toEqual({ [oldKeyId]: { current: 'yes', values: 2 } });

    // A malformed old key is refused by name, its value never printed.
    const bad = await rejects(runCli(['vault', 'rotate'], { ...onNew, VAULT_OLD_KEYS: 'not-a-key' }));
    expect(bad.message).toContain('VAULT_OLD_KEYS');
    expect(bad.message).not.toContain('not-a-key');

    const out = await runCli(['vault', 'rotate'], { ...onNew, VAULT_OLD_KEYS: `${Buffer.alloc(32, 9).toString('base64')}, ${oldKey}` });
    const newKeyId = new Vault(Buffer.from(newKey, 'base64')).currentKeyId;
    expect(out).toContain(`2 sealed values re-sealed under VAULT_KEY (key id ${newKeyId})`);
    // No key file written: the key file is the old one, and no .old or .tmp beside it.
    expect(readFileSync(ws.env.VAULT_KEY_FILE, 'utf8').trim()).toBe(oldKey);
    expect(existsSync(`${ws.env.VAULT_KEY_FILE}.old`)).toBe(false);
    expect(existsSync(`${ws.env.VAULT_KEY_FILE}.tmp`)).toBe(false);
    expect(parseStatus(await runCli(['vault', 'status'], onNew))).toEqual({ [newKeyId]: { current: 'yes', values: 2 } });
    // Again: nothing left to re-seal, and the old keys are no longer needed.
    expect(await runCli(['vault', 'rotate'], onNew)).toContain('0 sealed values re-sealed');

    // The service on the new key alone reads what was sealed under the old one.
    const fresh = createTestContext(onNew);
    try {
      expect(fresh.rt.vault.currentKeyId).toBe(newKeyId);
      expect((await fresh.json('GET', '/v1/webhooks/secret', { key })).body.secret).toBe(secret);
      const sealedKey = fresh.sql.query('SELECT key_sealed AS v FROM payment_connections').get() as { v: string };
      expect(fresh.rt.vault.open(sealedKey.v)).toBe('sbx_vault_env_rotation_01');
    } finally {
      fresh.close();
    }
  });
});

describe('the CLI as a process', () => {
  const ws = workspace();
  const run = async (...args: string[]) => {
    const proc = Bun.spawn(['bun', 'run', 'scripts/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', ...ws.env },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  };

  test('lender create and lender list exit 0', async () => {
    const created = await run('lender', 'create', 'proc-co');
    expect(created.code).toBe(0);
    expect(keysIn(created.stdout)).toHaveLength(1);
    const listed = await run('lender', 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^proc-co\s+/m);
    expect(listed.stdout).not.toContain('drs_live_');
  });

  test('an unknown command exits 1 with the usage on stderr', async () => {
    const r = await run('frobnicate');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Unknown command: frobnicate');
    expect(r.stderr).toContain('Usage:');
    expect(r.stdout).toBe('');
  });

  test('a bad configuration exits 1 naming the variable', async () => {
    const proc = Bun.spawn(['bun', 'run', 'scripts/cli.ts', 'lender', 'list'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', ...ws.env, LOG_LEVEL: 'loud' },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect(code).toBe(1);
    expect(stderr).toContain('LOG_LEVEL');
  });
});
