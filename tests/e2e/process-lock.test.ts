// engine: sqlite
// Two processes on one database file: the second refuses to start while the first lives, saying so and
// naming it; once the first is gone, even killed with SIGKILL, the next start takes over at once.
import { afterAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { ROOT, ServiceHarness, TEST_API_KEY, freePort } from '../helpers/server';

const harness = new ServiceHarness();
afterAll(() => harness.cleanup());

/** A second process on the harness's database, run to its end (it is expected not to start). */
async function secondStart(): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: String(freePort()),
      HOST: '127.0.0.1',
      DATABASE_PATH: harness.dbPath,
      VAULT_KEY_FILE: join(harness.dir, 'vault.key'),
      BOOTSTRAP_API_KEY: TEST_API_KEY,
      LOG_LEVEL: 'warn',
    },
    stdout: 'ignore',
    stderr: 'pipe',
  });
  const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  clearTimeout(timer);
  return { code, stderr };
}

describe('one process per database file', () => {
  test('a second process refuses to start while the first lives, naming it; the first keeps serving', async () => {
    const first = await harness.start();
    const second = await secondStart();
    expect(second.code).toBe(2);
    expect(second.stderr).toContain('Another service process');
    expect(second.stderr).toContain(`PID ${first.proc.pid}`);
    expect(second.stderr).toContain(harness.dbPath);
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    expect((await first.call('GET', '/v1/monitoring/schedules')).status).toBe(200);

    // The holder dies without any cleanup: the lock goes with it, and the next start takes over at once. The
    // lock is tried once, never waited for (a held one is the refusal above), so a start that serves is one
    // that found it free.
    await first.kill('SIGKILL');
    const next = await harness.start();
    expect((await next.call('GET', '/v1/monitoring/schedules')).status).toBe(200);
    await next.kill('SIGTERM');
  }, 60_000);
});
