// engine: sqlite
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxProcessor } from '../../src/adapters/processors/sandbox';
import { FakeClock } from '../../src/platform/clock';
import { openDatabase } from '../../src/platform/db';

const ROOT = join(import.meta.dir, '../..');
const KEY = 'sbx_cli_0123456789abcdefgh';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function workspace() {
  const dir = mkdtempSync(join(tmpdir(), 'drs-sandbox-charge-'));
  dirs.push(dir);
  const env = { DATABASE_PATH: join(dir, 'data', 'service.sqlite'), VAULT_KEY_FILE: join(dir, 'data', 'vault.key'), SANDBOX_SETTLEMENT_MS: '60000' };
  const run = async (...args: string[]) => {
    const proc = Bun.spawn(['bun', 'run', 'scripts/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', ...env },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  };
  /** Reads the key's whole change feed the way the service's poller would, with the clock at `at`. */
  const changes = async (at = Date.now()) => {
    const h = openDatabase(env.DATABASE_PATH);
    try {
      const p = new SandboxProcessor({ sqlite: h.sqlite, clock: new FakeClock(at), settlementMs: 60_000 });
      return (await p.listChanges(KEY, null)).changes;
    } finally {
      h.close();
    }
  };
  return { run, changes };
}

describe('sandbox charge', () => {
  const ws = workspace();

  test('creates an ACH payment at the sandbox, readable through its change feed', async () => {
    const r = await ws.run('sandbox', 'charge', '--key', KEY, '--amount', '12345', '--reference', 'DRS-borrower-1-abc');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const id = /sbxpay_[0-9A-Za-z]+/.exec(r.stdout)?.[0];
    expect(id).toBeDefined();
    expect(r.stdout).toContain('status processing');
    expect(r.stdout).toContain('DRS-borrower-1-abc');
    expect(r.stdout).not.toContain(KEY);

    const now = await ws.changes();
    expect(now).toHaveLength(1);
    expect(now[0]).toMatchObject({ processorPaymentId: id, reference: 'DRS-borrower-1-abc', status: 'processing', amountCents: 12_345 });
    // It settles one settlement period later, like any sandbox ACH debit.
    const later = await ws.changes(Date.now() + 120_000);
    expect(later.map((c) => c.status)).toEqual(['processing', 'settled']);
  });

  test('--rail card charges a test card: settled at once; cents 98 is retried transparently', async () => {
    const r = await ws.run('sandbox', 'charge', '--key', KEY, '--amount', '598', '--reference', 'DRS-borrower-2-def', '--rail', 'card');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('status settled');
    const card = (await ws.changes()).filter((c) => c.reference === 'DRS-borrower-2-def');
    expect(card.map((c) => [c.status, c.amountCents])).toEqual([['settled', 598]]);
  });

  test('a refused key exits 1 without printing the key', async () => {
    const refused = 'sbx_lender_refused_0123456789';
    const r = await ws.run('sandbox', 'charge', '--key', refused, '--amount', '100', '--reference', 'DRS-x-1');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('refused this key');
    expect(r.stdout + r.stderr).not.toContain(refused);
  });

  test('missing or bad flags exit 1 with the usage', async () => {
    const missing = await ws.run('sandbox', 'charge', '--key', KEY, '--amount', '100');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('--reference REF');
    const amount = await ws.run('sandbox', 'charge', '--key', KEY, '--amount', '1.50', '--reference', 'DRS-x-1');
    expect(amount.code).toBe(1);
    expect(amount.stderr).toContain('--amount');
    const rail = await ws.run('sandbox', 'charge', '--key', KEY, '--amount', '100', '--reference', 'DRS-x-1', '--rail', 'wire');
    expect(rail.code).toBe(1);
    expect(rail.stderr).toContain('--rail');
  });

  test('the usage lists the command', async () => {
    expect((await ws.run('help')).stdout).toContain('sandbox charge --key KEY --amount CENTS --reference REF');
  });
});
