// A stateful fake of the part of Stripe's API the service uses, on 127.0.0.1, for the real `stripe` SDK
// (host/port/protocol). It authenticates keys, parses Stripe's form encoding, replays on Idempotency-Key,
// keeps each account's objects and events (./stripe/account.ts), lists events as Stripe does, answers
// errors in Stripe's envelope, and gives tests a control surface: outcomes that take days at a real bank
// (settlement, returns, disputes, refunds) happen when a test says so.
import type Stripe from 'stripe';
import { FakeAccount, ok, stripeError, type Answer, type World } from './stripe/account';
import { fingerprint, parseStripeForm, type Form } from './stripe/form';
import { FAKE_API_VERSION, Ids, accountObject, balance, bankPaymentMethod } from './stripe/objects';
import { FakeFinancialConnections, type FcControl } from './stripe/financial-connections';

export { parseStripeForm } from './stripe/form';

export interface RecordedRequest {
  method: string;
  path: string;
  /** The API key the request was made with. */
  key: string;
  idempotencyKey: string | null;
  stripeVersion: string | null;
  params: Form;
  /** The status answered (0 while the request is still open). */
  status: number;
  replayed: boolean;
}

export interface FakeStripeControl extends FcControl {
  /** An ACH PaymentMethod verified through this Financial Connections account (null: by micro-deposits). */
  addFcPaymentMethod(key: string, pm: { id: string; account: string | null }): void;
  /** processing → succeeded: charge.succeeded and payment_intent.succeeded. */
  succeed(piId: string): void;
  /** processing → requires_payment_method with this failure code (and raw network code): charge.failed, payment_intent.payment_failed. */
  fail(piId: string, failureCode: string, networkCode?: string | null, opts?: { intentCode?: string; blockedCode?: string }): void;
  /** A dispute of the succeeded charge: charge.dispute.created (`olderShape`: naming only the charge). */
  dispute(piId: string, reason: string, networkReasonCode?: string | null, olderShape?: boolean): void;
  /** A refund of the succeeded charge (the rest of it by default): refund.created and charge.refunded. */
  refund(piId: string, amount?: number): void;
  cancel(piId: string): void;
  /** The open dispute closes: charge.dispute.closed with status won or lost. */
  closeDispute(piId: string, outcome: 'won' | 'lost'): void;
  /** The latest refund fails: refund.failed. */
  failRefund(piId: string): void;
  /** Whether the next ACH PaymentIntent comes back `requires_action` (bank account verification). */
  requireAction(nextAch?: boolean): void;
  /** The next n requests answer this status (before any work, so nothing is kept for their idempotency key). */
  failNext(n: number, status?: number): void;
  /**
   * Stripe's rate limit: at most `perSecond` requests per key in any second (real time; or in any `windowMs`); one
   * more is answered 429 `rate_limit`. null lifts it.
   */
  setRateLimit(perSecond: number | null, windowMs?: number): void;
  /** Requests answered 429 for their rate, per key. */
  rateLimited(key: string): number;
  /** GET requests for one Financial Connections account (retrieves). */
  retrieves(id: string): number;
  /** The next n requests get no answer until the client gives up (a timeout). */
  stallNext(n: number): void;
  /** The next n requests with an idempotency key are done (and kept for the key), but their answer is lost: a 503. */
  loseNextAnswers(n: number): void;
  /** Drops an account's oldest events, as Stripe does after 30 days. */
  expireEvents(key: string, count: number): void;
  /** Every request received, oldest first. */
  readonly requests: RecordedRequest[];
  paymentIntents(key: string): Stripe.PaymentIntent[];
  /** Same as paymentIntents. */
  intents(key: string): Stripe.PaymentIntent[];
  events(key: string): Stripe.Event[];
}

export interface FakeStripe {
  /** `http://127.0.0.1:<port>`, for STRIPE_API_URL or StripeProcessor's apiUrl. */
  url: string;
  host: string;
  port: number;
  stop(): void;
  control: FakeStripeControl;
  /** Same as control.requests. */
  requests: RecordedRequest[];
}

const KEY_PATTERN = /^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/;

/**
 * Starts a fake Stripe on a free port of 127.0.0.1. Bun.serve listens before this returns, so the handle
 * works awaited or as is.
 */
export function startFakeStripe(): Promise<FakeStripe> & FakeStripe {
  const fake = create();
  return Object.assign(Promise.resolve(fake), fake);
}

function create(): FakeStripe {
  let clock = 0;
  const world: World = {
    ids: new Ids(),
    // Stripe's seconds, never going backwards within a run.
    now: () => (clock = Math.max(clock, Math.floor(Date.now() / 1000))),
    requireAction: false,
  };
  const accounts = new Map<string, FakeAccount>();
  const fc = new FakeFinancialConnections(() => world.now());
  const account = (key: string): FakeAccount => {
    let a = accounts.get(key);
    if (!a) accounts.set(key, (a = new FakeAccount(world)));
    return a;
  };
  const idempotent = new Map<string, { method: string; path: string; fingerprint: string; answer: Answer; requestId: string }>();
  const requests: RecordedRequest[] = [];
  let failing = { left: 0, status: 500 };
  let perSecond: number | null = null;
  let rateWindowMs = 1_000;
  const recent = new Map<string, number[]>();
  const limited = new Map<string, number>();
  const retrieved = new Map<string, number>();
  let stalls = 0;
  let losing = 0;
  const stalled = new Set<() => void>();

  const respond = (a: Answer, headers: Record<string, string> = {}): Response =>
    new Response(JSON.stringify(a.body), {
      status: a.status,
      headers: { 'content-type': 'application/json', 'request-id': headers['request-id'] ?? world.ids.next('req'), 'stripe-version': FAKE_API_VERSION, ...headers },
    });

  function handle(method: string, path: string, key: string, p: Form, idempotencyKey: string | null): Answer {
    const acc = account(key);
    if (method === 'GET' && path === '/v1/balance') return ok(balance());
    if (method === 'GET' && path === '/v1/account') return ok(accountObject(key));
    if (method === 'GET' && path === '/v1/disputes') return acc.listDisputes(p);
    const linked = fc.handle(method, path, key, p);
    if (linked) return linked;
    const cancel = /^\/v1\/payment_intents\/([^/]+)\/cancel$/.exec(path);
    if (method === 'POST' && cancel) return acc.cancelIntent(cancel[1]!);
    if (method === 'POST' && path === '/v1/payment_methods') return acc.createPaymentMethod(p);
    if (method === 'POST' && path === '/v1/customers') return acc.createCustomer(p);
    const attach = /^\/v1\/payment_methods\/([^/]+)\/attach$/.exec(path);
    if (method === 'POST' && attach) return acc.attachPaymentMethod(attach[1]!, p);
    if (method === 'POST' && path === '/v1/payment_intents') return acc.createPaymentIntent(p, idempotencyKey);
    if (method === 'GET' && path === '/v1/payment_intents') return acc.listPaymentIntents(p);
    if (method === 'GET' && path === '/v1/events') return acc.listEvents(p);
    const [, kind, id] = /^\/v1\/(payment_intents|events|charges|payment_methods|disputes|refunds)\/([^/]+)$/.exec(path) ?? [];
    if (method === 'GET' && kind && id) {
      const found =
        kind === 'payment_intents' ? intentWithExpansions(acc, id, p)
        : kind === 'events' ? acc.events.find((e) => e.id === id)
        : kind === 'charges' ? expandCharge(acc, id, p)
        : kind === 'payment_methods' ? acc.paymentMethods.get(id)
        : kind === 'disputes' ? acc.disputes.get(id)
        : acc.refunds.get(id);
      const noun = kind === 'payment_methods' ? 'PaymentMethod' : kind.replace(/s$/, '');
      return found ? ok(found) : stripeError(404, 'invalid_request_error', `No such ${noun}: '${id}'`, { code: 'resource_missing', param: 'id' });
    }
    return stripeError(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}).`);
  }

  function intentWithExpansions(acc: FakeAccount, id: string, p: Form): Stripe.PaymentIntent | undefined {
    const pi = acc.paymentIntents.get(id);
    const expand = Array.isArray(p.expand) ? p.expand : [];
    return pi && expand.includes('latest_charge') ? acc.withCharge(pi) : pi;
  }

  function expandCharge(acc: FakeAccount, id: string, p: Form): Stripe.Charge | undefined {
    const ch = acc.charges.get(id);
    const expand = Array.isArray(p.expand) ? p.expand : [];
    if (!ch || !expand.includes('payment_intent') || typeof ch.payment_intent !== 'string') return ch;
    return { ...ch, payment_intent: acc.paymentIntents.get(ch.payment_intent) ?? ch.payment_intent };
  }

  async function route(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname.startsWith('/_control/')) return controlOverHttp(url.pathname.slice('/_control/'.length), req);
    const text = req.method === 'POST' ? await req.text() : url.search.slice(1);
    const params = parseStripeForm(text);
    const key = (req.headers.get('authorization') ?? '').replace(/^Bearer\s+/i, '');
    const idempotencyKey = req.method === 'POST' ? req.headers.get('idempotency-key') : null;
    const rec: RecordedRequest = { method: req.method, path: url.pathname, key, idempotencyKey, stripeVersion: req.headers.get('stripe-version'), params, status: 0, replayed: false };
    requests.push(rec);
    const done = (a: Answer, headers?: Record<string, string>) => ((rec.status = a.status), respond(a, headers));

    if (stalls > 0) {
      stalls--;
      await new Promise<void>((resolve) => stalled.add(resolve));
      return done(stripeError(503, 'api_error', 'The fake Stripe server stopped.'));
    }
    const fca = req.method === 'GET' ? /^\/v1\/financial_connections\/accounts\/([^/]+)$/.exec(url.pathname)?.[1] : undefined;
    if (fca) retrieved.set(fca, (retrieved.get(fca) ?? 0) + 1);
    if (perSecond !== null) {
      const now = performance.now();
      const times = (recent.get(key) ?? []).filter((t) => t > now - rateWindowMs);
      recent.set(key, times);
      if (times.length >= perSecond) {
        limited.set(key, (limited.get(key) ?? 0) + 1);
        return done(stripeError(429, 'invalid_request_error', 'Too many requests hit the API too quickly.', { code: 'rate_limit' }));
      }
      times.push(now);
    }
    if (failing.left > 0) {
      failing.left--;
      const status = failing.status;
      return done(status === 429 ? stripeError(429, 'invalid_request_error', 'Too many requests hit the API too quickly.', { code: 'rate_limit' }) : stripeError(status, 'api_error', 'Something went wrong on our end.'));
    }
    if (!key) return done(stripeError(401, 'invalid_request_error', 'You did not provide an API key. Provide your API key in the Authorization header, using the Bearer scheme.'));
    if (!KEY_PATTERN.test(key) || key.includes('_refused')) {
      return done(stripeError(401, 'invalid_request_error', `Invalid API Key provided: ${key.slice(0, 8)}${'*'.repeat(8)}${key.slice(-4)}`));
    }
    if (key.includes('_restricted')) {
      return done(stripeError(403, 'invalid_request_error', 'The provided key does not have the required permissions for this endpoint.'));
    }
    if (!idempotencyKey) return done(handle(req.method, url.pathname, key, params, null));

    // Stripe keeps the first answer of a key per account and replays it; the same key on another endpoint
    // or with other parameters is refused. Nothing is kept when the request failed validation before the
    // endpoint began work (400s), so a corrected retry with the same key still runs.
    const scope = `${key}\n${idempotencyKey}`;
    const prior = idempotent.get(scope);
    const print = fingerprint(params);
    if (prior) {
      if (prior.method !== req.method || prior.path !== url.pathname) {
        return done(stripeError(400, 'idempotency_error', `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${prior.method} ${prior.path}' vs '${req.method} ${url.pathname}').`));
      }
      if (prior.fingerprint !== print) {
        return done(stripeError(400, 'idempotency_error', `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`));
      }
      rec.replayed = true;
      return done(prior.answer, { 'idempotent-replayed': 'true', 'original-request': prior.requestId });
    }
    const answer = handle(req.method, url.pathname, key, params, idempotencyKey);
    const requestId = world.ids.next('req');
    if (answer.status < 400 || answer.status === 402) idempotent.set(scope, { method: req.method, path: url.pathname, fingerprint: print, answer, requestId });
    if (losing > 0) {
      // The work is done and kept for its key; only the answer does not reach the client.
      losing--;
      return done(stripeError(503, 'api_error', 'The connection was reset before the answer was sent.'));
    }
    return done(answer, { 'request-id': requestId });
  }

  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: route });
  const port = server.port!;

  const control: FakeStripeControl = {
    succeed: (pi) => ownerOf(pi).succeed(pi),
    fail: (pi, code, network, opts) => ownerOf(pi).fail(pi, code, network, opts),
    dispute: (pi, reason, network, older) => ownerOf(pi).dispute(pi, reason, network, older),
    refund: (pi, amount) => ownerOf(pi).refund(pi, amount),
    cancel: (pi) => ownerOf(pi).cancel(pi),
    closeDispute: (pi, outcome) => ownerOf(pi).closeDispute(pi, outcome),
    failRefund: (pi) => ownerOf(pi).failRefund(pi),
    requireAction: (next = true) => {
      world.requireAction = next;
    },
    failNext: (n, status = 500) => {
      failing = { left: n, status };
    },
    setRateLimit: (n, windowMs = 1_000) => {
      perSecond = n;
      rateWindowMs = windowMs;
    },
    rateLimited: (key) => limited.get(key) ?? 0,
    retrieves: (id) => retrieved.get(id) ?? 0,
    loseNextAnswers: (n) => {
      losing = n;
    },
    stallNext: (n) => {
      stalls = n;
    },
    expireEvents: (key, count) => account(key).expireEvents(count),
    addFcAccount: (key, spec) => fc.addFcAccount(key, spec),
    addFcPaymentMethod: (key, pm) => {
      const method = bankPaymentMethod(pm.id, world.now(), { routingNumber: '110000000', accountNumber: '000123456789', name: null });
      method.us_bank_account!.financial_connections_account = pm.account;
      account(key).paymentMethods.set(pm.id, method);
    },
    setFcStatus: (id, status) => fc.setFcStatus(id, status),
    setFcStatusDetails: (id, details) => fc.setFcStatusDetails(id, details),
    setFcAccountNumbers: (id, statuses) => fc.setFcAccountNumbers(id, statuses),
    setFcBalance: (id, cents) => fc.setFcBalance(id, cents),
    setFcRawBalance: (id, balance) => fc.setFcRawBalance(id, balance),
    setRefreshDelay: (ms, clock) => fc.setRefreshDelay(ms, clock),
    failNextRefreshes: (n) => fc.failNextRefreshes(n),
    refreshes: (id) => fc.refreshes(id),
    subscriptions: (id) => fc.subscriptions(id),
    setFcTransactions: (id, pattern) => fc.setFcTransactions(id, pattern),
    transactionLists: (id) => fc.transactionLists(id),
    requests,
    paymentIntents: (key) => [...account(key).paymentIntents.values()],
    intents: (key) => [...account(key).paymentIntents.values()],
    events: (key) => [...account(key).events],
  };

  function ownerOf(piId: string): FakeAccount {
    for (const a of accounts.values()) if (a.paymentIntents.has(piId)) return a;
    throw new Error(`fake Stripe: no PaymentIntent ${piId}`);
  }

  /** The same control over HTTP (`POST /_control/<action>` with a JSON body), for a service running elsewhere. */
  async function controlOverHttp(action: string, req: Request): Promise<Response> {
    const b = (await req.json().catch(() => ({}))) as Record<string, string | number | boolean | undefined>;
    const s = (k: string) => (b[k] === undefined ? undefined : String(b[k]));
    const pi = s('payment_intent') ?? '';
    const actions: Record<string, () => void> = {
      succeed: () => control.succeed(pi),
      fail: () => control.fail(pi, s('failure_code') ?? 'insufficient_funds', s('network_code')),
      dispute: () => control.dispute(pi, s('reason') ?? 'fraudulent', s('network_reason_code')),
      refund: () => control.refund(pi, b.amount === undefined ? undefined : Number(b.amount)),
      cancel: () => control.cancel(pi),
      require_action: () => control.requireAction(b.next !== false),
      fail_next: () => control.failNext(Number(b.n ?? 1), Number(b.status ?? 500)),
    };
    const run = actions[action];
    if (!run) return respond(stripeError(404, 'invalid_request_error', `Unknown control action: ${action}`));
    try {
      run();
      return respond(ok({ ok: true }));
    } catch (e) {
      return respond(stripeError(400, 'invalid_request_error', (e as Error).message));
    }
  }

  return {
    url: `http://127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    stop: () => {
      for (const resolve of stalled) resolve();
      stalled.clear();
      server.stop(true);
    },
    control,
    requests,
  };
}
