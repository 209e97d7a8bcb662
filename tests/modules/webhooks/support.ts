// Shared pieces of the webhook module tests: a real HTTP receiver on 127.0.0.1 whose answer each test sets,
// a Standard Webhooks check done both with the `standardwebhooks` library and by hand, and small helpers to
// put a delivery in the outbox and to read what the job recorded.
import { createHmac } from 'node:crypto';
import type { Server } from 'bun';
import { Webhook } from 'standardwebhooks';
import type { TestContext } from '../../helpers/context';
import { enqueueWebhook, type WebhookType } from '../../../src/modules/webhooks/service';
import { transaction, type Tx } from '../../../src/platform/context';

export interface Received {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  /** Wall-clock arrival, for ordering only. */
  at: number;
}

export type Handler = (req: Received, index: number) => Response | Promise<Response>;

export interface Receiver {
  server: Server<undefined>;
  port: number;
  requests: Received[];
  /** Highest number of requests open at the same time. */
  maxInFlight: number;
  handler: Handler;
  url(path?: string): string;
  /** Resolves once at least n requests have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  reset(handler?: Handler): void;
  stop(): void;
}

export const ok: Handler = () => new Response('thanks');

/** A receiver on 127.0.0.1 (port 0 picks a free one). */
export function startReceiver(port = 0, handler: Handler = ok): Receiver {
  let inFlight = 0;
  const r: Receiver = {
    server: undefined as unknown as Server<undefined>,
    port: 0,
    requests: [],
    maxInFlight: 0,
    handler,
    url: (path = '/hook') => `http://127.0.0.1:${r.port}${path}`,
    async waitFor(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (r.requests.length < n) {
        if (Date.now() > deadline) throw new Error(`receiver saw ${r.requests.length} requests, expected ${n}`);
        await Bun.sleep(10);
      }
    },
    reset(h = ok) {
      r.requests.length = 0;
      r.maxInFlight = 0;
      r.handler = h;
    },
    stop() {
      r.server.stop(true);
    },
  };
  r.server = Bun.serve({
    hostname: '127.0.0.1',
    port,
    idleTimeout: 60,
    async fetch(req) {
      const url = new URL(req.url);
      const rec: Received = {
        path: url.pathname + url.search,
        method: req.method,
        headers: Object.fromEntries(req.headers),
        body: await req.text(),
        at: Date.now(),
      };
      const index = r.requests.push(rec) - 1;
      inFlight++;
      r.maxInFlight = Math.max(r.maxInFlight, inFlight);
      try {
        return await r.handler(rec, index);
      } finally {
        inFlight--;
      }
    },
  });
  r.port = r.server.port!;
  return r;
}

/** A port nothing listens on (bound once, then released). */
export function closedPort(): number {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** A handler that never answers until release() is called. */
export function hanging(): { handler: Handler; release(res?: Response): void } {
  const waiters: ((r: Response) => void)[] = [];
  return {
    handler: () => new Promise<Response>((resolve) => waiters.push(resolve)),
    release(res) {
      for (const w of waiters.splice(0)) w(res ?? new Response('late'));
    },
  };
}

/** Verifies with the reference library; throws WebhookVerificationError when no signature matches. */
export function verifyWithLibrary(secret: string, r: Received): unknown {
  return new Webhook(secret).verify(r.body, {
    'webhook-id': r.headers['webhook-id']!,
    'webhook-timestamp': r.headers['webhook-timestamp']!,
    'webhook-signature': r.headers['webhook-signature']!,
  });
}

/** The `v1,` entries of webhook-signature. */
export function signatureEntries(r: Received): string[] {
  return (r.headers['webhook-signature'] ?? '').split(' ').filter(Boolean);
}

/** The signature Standard Webhooks prescribes, computed by hand: base64 HMAC-SHA256 of id.timestamp.body. */
export function expectedSignature(secret: string, r: Received): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key)
    .update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/** Puts one delivery in the outbox, inside a transaction as callers do. Returns its id (the webhook-id). */
export async function enqueue(
  ctx: TestContext,
  url: string,
  opts: { lenderId?: string; type?: WebhookType; extra?: Record<string, unknown> } = {},
  outer?: Tx,
): Promise<string> {
  const id = crypto.randomUUID();
  const type = opts.type ?? 'BALANCE_BATCH_COMPLETED';
  await transaction({ deps: ctx.rt, tx: outer }, async (tx) => {
    await enqueueWebhook({ ctx: tx, input: {
      lenderId: opts.lenderId ?? ctx.lender.id,
      type,
      url,
      payload: { event_uuid: id, type, batch_id: `batch-${id.slice(0, 8)}`, ...opts.extra },
    } });
  });
  return id;
}

export interface DeliveryRow {
  id: string;
  lender_id: string;
  type: string;
  target_url: string;
  payload: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  created_at: number;
  first_attempt_at: number | null;
  last_attempt_at: number | null;
  next_attempt_at: number | null;
  lease_until: number | null;
  last_status_code: number | null;
  last_error: string | null;
  finished_at: number | null;
}

export interface AttemptRow {
  delivery_id: string;
  attempted_at: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

export function deliveryRow(ctx: TestContext, id: string): DeliveryRow {
  const row = ctx.sql.query<DeliveryRow, [string]>('SELECT * FROM webhook_deliveries WHERE id = ?').get(id);
  if (!row) throw new Error(`no delivery ${id}`);
  return row;
}

export function attemptRows(ctx: TestContext, id: string): AttemptRow[] {
  return ctx.sql
    .query<AttemptRow, [string]>(
      'SELECT delivery_id, attempted_at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = ? ORDER BY id',
    )
    .all(id);
}

let authorizerCounter = 0;

/** A minimal valid authorizer; each call gives a new id so request bodies never repeat (idempotency). */
export function authorizer(): Record<string, string> {
  return {
    authorizer_unique_id: `a-${process.pid}-${++authorizerCounter}-${Date.now()}`,
    ssn: '123456789',
    account_number: '0001234567',
    routing_number: '110000000',
  };
}
