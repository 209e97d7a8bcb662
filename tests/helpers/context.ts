import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll } from 'bun:test';
import { loadConfig } from '../../src/config';
import { createApp } from '../../src/app';
import { createRuntime, type Runtime } from '../../src/runtime';
import { FakeClock } from '../../src/platform/clock';
import { createLender, setDebitCardApproval } from '../../src/modules/lenders/service';

export interface TestContext {
  dir: string;
  rt: Runtime;
  clock: FakeClock;
  app: ReturnType<typeof createApp>;
  logs: string[];
  lender: { id: string; key: string };
  newLender(name?: string, opts?: { cards?: boolean }): { id: string; key: string };
  request(method: string, path: string, opts?: RequestOpts): Promise<Response>;
  json<T = any>(method: string, path: string, opts?: RequestOpts): Promise<{ status: number; body: T; res: Response }>;
  close(): void;
}

export interface RequestOpts {
  body?: unknown;
  key?: string | null;
  headers?: Record<string, string>;
  form?: FormData;
  raw?: string | Uint8Array;
}

let counter = 0;

/** A real app on a real SQLite file in a temp folder, with the real migrations and a fake clock. */
export function createTestContext(env: Record<string, string> = {}, opts: { clockAt?: string } = {}): TestContext {
  const dir = mkdtempSync(join(tmpdir(), 'drs-test-'));
  const config = loadConfig({
    DATABASE_PATH: join(dir, 'service.sqlite'),
    VAULT_KEY_FILE: join(dir, 'vault.key'),
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    ...env,
  });
  const clock = new FakeClock(new Date(opts.clockAt ?? '2026-11-21T12:00:00.000Z').getTime());
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const rt = createRuntime(config, { clock, logDestination: sink, defaultMetrics: false });
  const app = createApp(rt);
  const newLender = (name?: string, o: { cards?: boolean } = {}) => {
    const { lender, apiKey } = createLender(rt.db, name ?? `lender-${++counter}-${Date.now()}`, clock.now());
    if (o.cards) setDebitCardApproval(rt.db, lender.id, true);
    return { id: lender.id, key: apiKey };
  };
  const lender = newLender();

  const request = (method: string, path: string, o: RequestOpts = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const key = o.key === undefined ? lender.key : o.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: RequestInit['body'];
    if (o.form) body = o.form;
    else if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    return app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
  };
  const json = async (method: string, path: string, o: RequestOpts = {}) => {
    const res = await request(method, path, o);
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body, res };
  };
  const ctx: TestContext = {
    dir,
    rt,
    clock,
    app,
    logs,
    lender,
    newLender,
    request,
    json,
    close() {
      try {
        rt.handle.close();
      } catch {
        /* already closed */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return ctx;
}

/** createTestContext closed automatically after the file's tests. */
export function useTestContext(env: Record<string, string> = {}, opts: { clockAt?: string } = {}): TestContext {
  const ctx = createTestContext(env, opts);
  afterAll(() => ctx.close());
  return ctx;
}
