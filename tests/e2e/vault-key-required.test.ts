// engine: both
// On PostgreSQL the service refuses to start without VAULT_KEY: replicas on one database must share one key,
// and a key file made when missing would give each container its own. Spawned with DATABASE_URL and no
// VAULT_KEY, the service exits before it touches the database or makes a key file, naming VAULT_KEY and why.
// On the PostgreSQL run the URL is a real, empty database; on SQLite a URL nothing answers at (the refusal
// comes first either way).
import { afterAll, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onPostgres, pgUrlOf, psql } from '../helpers/pg';
import { freePort, ROOT } from '../helpers/server';

const dir = mkdtempSync(join(tmpdir(), 'drs-vault-key-'));
const dbName = `drs_vault_key_${process.pid}_${Date.now().toString(36)}`;
if (onPostgres) psql(`CREATE DATABASE "${dbName}"`);
const databaseUrl = onPostgres ? pgUrlOf(dbName) : 'postgres://nobody@127.0.0.1:1/nothing';
afterAll(() => {
  if (onPostgres) psql(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  rmSync(dir, { recursive: true, force: true });
});

/** The service started with these settings, run until it exits (it is expected not to start). */
async function startToExit(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: String(freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  return { code, stderr };
}

test('with DATABASE_URL and no VAULT_KEY the service refuses to start, saying why, and writes nothing', async () => {
  const keyFile = join(dir, 'vault.key');
  const { code, stderr } = await startToExit({ DATABASE_URL: databaseUrl, DATABASE_PATH: join(dir, 'service.sqlite'), VAULT_KEY_FILE: keyFile });
  expect(code).toBe(2);
  expect(stderr).toContain('VAULT_KEY is required when DATABASE_URL names a PostgreSQL database');
  expect(stderr).toContain('every replica on the database must seal and open with the same key');
  expect(stderr).not.toContain('nobody@');
  expect(existsSync(keyFile)).toBe(false);
  expect(existsSync(join(dir, 'service.sqlite'))).toBe(false);
  // Not a migration was applied: the database is as it was made.
  if (onPostgres) expect(psql(`SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`, databaseUrl)).toBe('0');
}, 60_000);

test('a DATABASE_URL nothing answers at stops the start with one line that shows no part of the password, and says to percent-encode an @ in it', async () => {
  // A password with an @ that was not percent-encoded: the URL's host is still 127.0.0.1, where nothing listens.
  const { code, stderr } = await startToExit({ DATABASE_URL: 'postgres://drs3:s3cr@tPass=1@127.0.0.1:1/nothing', VAULT_KEY: Buffer.alloc(32, 7).toString('base64') });
  expect(code).toBe(2);
  expect(stderr).toContain('DATABASE_URL');
  expect(stderr).toContain('postgres://drs3:***@127.0.0.1:1/nothing');
  expect(stderr).toContain('percent-encoded');
  for (const part of ['s3cr', 'tPass', 's3cr@tPass', 's3cr%40tPass']) expect(stderr).not.toContain(part);
  // One line, not a stack trace.
  expect(stderr.trim().split('\n')).toHaveLength(1);
}, 60_000);
