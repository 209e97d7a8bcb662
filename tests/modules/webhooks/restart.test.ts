// At-least-once across a crash, with the real process: `bun run src/index.ts` on a real SQLite file sends a
// batch-completed webhook to a receiver that accepts the request and never answers; the process is killed
// with SIGKILL mid-delivery; started again on the same files it sends the delivery again with the same
// webhook-id (and a signature that verifies), and the deliveries list shows it delivered.
import { afterAll, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { authorizer, closedPort, hanging, startReceiver, verifyWithLibrary } from './support';

const ROOT = join(import.meta.dir, '../../..');
const READY_TIMEOUT_MS = 15_000;
const API_KEY = `drs_live_${'Wh00kRestart'.padEnd(32, 'x')}`;
// Every variable the service reads: the child gets only what this test sets.
const CONFIG_VARS = [
  'PORT', 'HOST', 'DATABASE_PATH', 'TLS_CERT_FILE', 'TLS_KEY_FILE', 'TRUST_PROXY', 'ALLOW_INSECURE_HTTP',
  'VAULT_KEY', 'VAULT_KEY_FILE', 'BOOTSTRAP_API_KEY', 'BANK_DATA_PROVIDER', 'BANK_DATA_URL', 'BANK_DATA_TOKEN',
  'ROUTING_DIRECTORY_FILE', 'WEBHOOK_ALLOW_PRIVATE_TARGETS', 'WEBHOOK_RETRY_BASE_MS', 'WEBHOOK_MAX_AGE_MS',
  'RATE_LIMIT_PER_SECOND', 'RATE_LIMIT_BURST', 'BALANCE_CONCURRENCY', 'SANDBOX_LATENCY_MS', 'METRICS_TOKEN',
  'PUBLIC_BASE_URL', 'LOG_LEVEL',
];

const dir = mkdtempSync(join(tmpdir(), 'drs-webhook-restart-'));
const dbPath = join(dir, 'service.sqlite');
const children: Subprocess[] = [];
const hang = hanging();
const hook = startReceiver(0, (r, i) => (i === 0 ? hang.handler(r, i) : new Response('ok')));

afterAll(async () => {
  hang.release();
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await c.exited.catch(() => undefined);
  }
  hook.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Server {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  url: string;
  output(): string;
}

async function start(): Promise<Server> {
  const port = closedPort();
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of CONFIG_VARS) delete env[name];
  const proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
    cwd: ROOT,
    env: {
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_PATH: dbPath,
      VAULT_KEY_FILE: join(dir, 'vault.key'),
      BOOTSTRAP_API_KEY: API_KEY,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'info',
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  children.push(proc);
  const out = { text: '' };
  for (const stream of [proc.stdout, proc.stderr]) {
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) out.text += decoder.decode(chunk, { stream: true });
    })().catch(() => undefined);
  }
  const server: Server = { proc, url: `http://127.0.0.1:${port}`, output: () => out.text };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}\n${out.text}`);
    try {
      const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(1_000) });
      if (res.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`/healthz not 200 within ${READY_TIMEOUT_MS} ms\n${out.text}`);
    await Bun.sleep(25);
  }
  expect(out.text).toContain('"msg":"listening"');
  return server;
}

async function api(server: Server, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${API_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as any };
}

test('a delivery claimed by a process killed mid-send is sent again after restart, with the same webhook-id', async () => {
  const first = await start();
  const sub = await api(first, 'POST', '/v1/balance_requests', { authorizers: [authorizer()], webhook_url: hook.url('/batches') });
  expect(sub.status).toBe(201);
  const batchId = sub.body.batch_id as string;

  // The job picks the batch up, completes it and starts delivering; the receiver holds the request open.
  await hook.waitFor(1, 10_000);
  const firstTry = hook.requests[0]!;
  const webhookId = firstTry.headers['webhook-id']!;
  expect(JSON.parse(firstTry.body)).toEqual({ event_uuid: webhookId, type: 'BALANCE_BATCH_COMPLETED', batch_id: batchId });

  first.proc.kill('SIGKILL');
  await first.proc.exited;
  expect(first.proc.signalCode).toBe('SIGKILL');

  // What the dead process left: the delivery still pending and claimed, no attempt recorded.
  const db = new Database(dbPath);
  try {
    const row = db
      .query<{ id: string; state: string; attempts: number; lease_until: number }, []>(
        'SELECT id, state, attempts, lease_until FROM webhook_deliveries',
      )
      .all();
    expect(row).toHaveLength(1);
    expect(row[0]).toMatchObject({ id: webhookId, state: 'pending', attempts: 0 });
    expect(row[0]!.lease_until).toBeGreaterThan(Date.now());
  } finally {
    db.close();
  }
  hang.release();

  // Restarted on the same files: the claim is released at start and the delivery is sent again at once
  // (well before the 30 s claim would have lapsed), to the receiver that now answers 200.
  const restartedAt = Date.now();
  const second = await start();
  try {
    await hook.waitFor(2, 10_000);
    expect(Date.now() - restartedAt).toBeLessThan(15_000);
    const again = hook.requests[1]!;
    expect(again.headers['webhook-id']).toBe(webhookId);
    expect(again.body).toBe(firstTry.body);
    const { secret } = (await api(second, 'GET', '/v1/webhooks/secret')).body as { secret: string };
    expect(verifyWithLibrary(secret, again)).toEqual(JSON.parse(firstTry.body));

    // Recorded: poll until the job has written the outcome.
    let delivery: any;
    const deadline = Date.now() + 5_000;
    do {
      delivery = (await api(second, 'GET', '/v1/webhooks/deliveries')).body.deliveries[0];
      if (delivery?.state === 'delivered') break;
      await Bun.sleep(50);
    } while (Date.now() < deadline);
    expect(delivery).toMatchObject({
      id: webhookId,
      type: 'BALANCE_BATCH_COMPLETED',
      target_url: hook.url('/batches'),
      state: 'delivered',
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
    });
    // Sent again exactly once, not once per tick.
    await Bun.sleep(600);
    expect(hook.requests).toHaveLength(2);
  } finally {
    second.proc.kill('SIGTERM');
    await second.proc.exited;
  }
  expect(second.proc.exitCode).toBe(0);
}, 45_000);
