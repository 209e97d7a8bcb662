// A stateful fake of the parts of Stripe's API the service uses, on 127.0.0.1, reached by the real `stripe`
// SDK (host/port/protocol). It parses Stripe's form encoding, authenticates keys, replays on Idempotency-Key,
// keeps PaymentMethods, PaymentIntents, Charges, Disputes and Events per account (key), lists events as Stripe
// does (newest first, ending_before/starting_after/limit/types[]), answers errors in Stripe's envelope, and
// has a control surface for tests. Objects are typed with the SDK's own types and shaped after Stripe's
// published fixtures (id prefixes, `object`, seconds since the epoch).
import type Stripe from 'stripe';

type Json = Record<string, unknown>;

/** Stripe's bracket form encoding (`a[b][0][c]=v`) to nested objects and arrays. */
export function parseStripeForm(body: string): Json {
  const out: Json = {};
  for (const [rawKey, value] of new URLSearchParams(body)) {
    const parts = rawKey.replace(/\]/g, '').split('[');
    let node: Json | unknown[] = out;
    parts.forEach((part, i) => {
      const last = i === parts.length - 1;
      const nextIsIndex = !last && /^\d+$/.test(parts[i + 1]!);
      const key = Array.isArray(node) ? Number(part) : part;
      if (last) (node as Json)[key as string] = value;
      else {
        const existing = (node as Json)[key as string];
        (node as Json)[key as string] = existing ?? (nextIsIndex ? [] : {});
        node = (node as Json)[key as string] as Json;
      }
    });
  }
  return out;
}

interface Account {
  methods: Map<string, Stripe.PaymentMethod & { _number: string }>;
  intents: Map<string, Stripe.PaymentIntent>;
  charges: Map<string, Stripe.Charge>;
  events: Stripe.Event[];
}

interface Recorded {
  method: string;
  path: string;
  key: string;
  idempotencyKey: string | null;
  params: Json;
}

export interface FakeStripe {
  url: string;
  stop(): void;
  requests: Recorded[];
  control: {
    /** processing → succeeded: payment_intent.succeeded and charge.succeeded. */
    succeed(piId: string): void;
    /** → requires_payment_method with this failure code: charge.failed and payment_intent.payment_failed. */
    fail(piId: string, failureCode: string, networkCode?: string): void;
    /** A dispute of a succeeded charge: charge.dispute.created. */
    dispute(piId: string, reason: string, networkReasonCode?: string): void;
    refund(piId: string, amount?: number): void;
    cancel(piId: string): void;
    /** The next ACH PaymentIntent needs verification (requires_action). */
    requireActionNext(): void;
    /** The next n requests answer this status (default 500) before any work. */
    failNext(n: number, status?: number): void;
    intents(key: string): Stripe.PaymentIntent[];
  };
}

const accountOf = (key: string) => key.replace(/^(sk|rk)_(live|test)_/, '');

export function startFakeStripe(): FakeStripe {
  const accounts = new Map<string, Account>();
  const idem = new Map<string, { fingerprint: string; status: number; body: string }>();
  const requests: Recorded[] = [];
  let seq = 0;
  let clockSeconds = 1_790_000_000;
  let failures: { left: number; status: number } = { left: 0, status: 500 };
  let requireAction = false;
  const id = (prefix: string) => `${prefix}_${(++seq).toString(36).padStart(8, '0')}FAKE`;
  const account = (key: string): Account => {
    const a = accountOf(key);
    let acc = accounts.get(a);
    if (!acc) {
      acc = { methods: new Map(), intents: new Map(), charges: new Map(), events: [] };
      accounts.set(a, acc);
    }
    return acc;
  };
  const ownerOf = (piId: string): Account => {
    for (const a of accounts.values()) if (a.intents.has(piId)) return a;
    throw new Error(`no PaymentIntent ${piId}`);
  };
  const emit = (acc: Account, type: string, object: unknown) => {
    clockSeconds += 1;
    acc.events.push({
      id: id('evt'),
      object: 'event',
      api_version: '2026-10-28.endive',
      created: clockSeconds,
      data: { object: structuredClone(object) as never },
      livemode: false,
      pending_webhooks: 0,
      request: { id: null, idempotency_key: null },
      type,
    } as unknown as Stripe.Event);
  };
  const error = (status: number, type: string, message: string, extra: Json = {}) =>
    new Response(JSON.stringify({ error: { type, message, ...extra } }), { status, headers: { 'content-type': 'application/json', 'request-id': id('req') } });
  const ok = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'request-id': id('req') } });

  const chargeFor = (acc: Account, pi: Stripe.PaymentIntent, status: Stripe.Charge.Status, failure?: { code: string; message: string; network?: string }): Stripe.Charge => {
    const card = pi.payment_method_types.includes('card');
    const ch = {
      id: id('ch'),
      object: 'charge',
      amount: pi.amount,
      amount_captured: status === 'succeeded' ? pi.amount : 0,
      amount_refunded: 0,
      created: clockSeconds,
      currency: 'usd',
      description: pi.description,
      disputed: false,
      failure_code: failure?.code ?? null,
      failure_message: failure?.message ?? null,
      livemode: false,
      metadata: { ...pi.metadata },
      outcome: failure ? { network_decline_code: failure.network ?? null, reason: failure.code, type: 'issuer_declined' } : { type: 'authorized' },
      paid: status === 'succeeded',
      payment_intent: pi.id,
      payment_method: pi.payment_method,
      payment_method_details: { type: card ? 'card' : 'us_bank_account' },
      refunded: false,
      status,
    } as unknown as Stripe.Charge;
    acc.charges.set(ch.id, ch);
    (pi as { latest_charge: string | null }).latest_charge = ch.id;
    return ch;
  };

  function createIntent(key: string, p: Json): Response {
    const acc = account(key);
    const types = ((p.allowed_payment_method_types ?? p.payment_method_types ?? []) as string[]).slice();
    const card = types.includes('card');
    let pmId = (p.payment_method as string | undefined) ?? null;
    if (!pmId && p.payment_method_data) {
      const data = p.payment_method_data as { type: string; us_bank_account?: { routing_number?: string; account_number?: string } };
      if (!data.us_bank_account?.routing_number || !data.us_bank_account.account_number) {
        return error(400, 'invalid_request_error', 'Missing bank account details', { param: 'payment_method_data[us_bank_account]' });
      }
      const pm = { id: id('pm'), object: 'payment_method', type: 'us_bank_account', created: clockSeconds, livemode: false, metadata: {}, _number: '' };
      acc.methods.set(pm.id, pm as never);
      pmId = pm.id;
    }
    if (!pmId) return error(400, 'invalid_request_error', 'A payment method is required', { param: 'payment_method' });
    const pi = {
      id: id('pi'),
      object: 'payment_intent',
      amount: Number(p.amount),
      amount_received: 0,
      created: clockSeconds,
      currency: String(p.currency ?? 'usd'),
      description: (p.description as string | undefined) ?? null,
      last_payment_error: null,
      latest_charge: null,
      livemode: false,
      metadata: { ...((p.metadata as Json | undefined) ?? {}) },
      next_action: null,
      payment_method: pmId,
      payment_method_types: types,
      allowed_payment_method_types: types,
      status: 'requires_confirmation',
    } as unknown as Stripe.PaymentIntent & { status: string };
    acc.intents.set(pi.id, pi);
    if (card) {
      const number = acc.methods.get(pmId)?._number ?? '4242424242424242';
      const decline = number === '4000000000009995' ? 'insufficient_funds' : number === '4000000000000002' ? 'generic_decline' : null;
      if (decline) {
        pi.status = 'requires_payment_method';
        (pi as { last_payment_error: unknown }).last_payment_error = { type: 'card_error', code: 'card_declined', decline_code: decline, message: 'Your card was declined.' };
        const ch = chargeFor(acc, pi, 'failed', { code: 'card_declined', message: 'Your card was declined.' });
        emit(acc, 'charge.failed', ch);
        emit(acc, 'payment_intent.payment_failed', pi);
        return error(402, 'card_error', 'Your card was declined.', { code: 'card_declined', decline_code: decline, payment_intent: pi, charge: ch.id });
      }
      pi.status = 'succeeded';
      (pi as { amount_received: number }).amount_received = pi.amount;
      const ch = chargeFor(acc, pi, 'succeeded');
      emit(acc, 'charge.succeeded', ch);
      emit(acc, 'payment_intent.succeeded', pi);
      return ok(pi);
    }
    if (requireAction) {
      requireAction = false;
      pi.status = 'requires_action';
      (pi as { next_action: unknown }).next_action = { type: 'verify_with_microdeposits' };
      emit(acc, 'payment_intent.requires_action', pi);
      return ok(pi);
    }
    pi.status = 'processing';
    chargeFor(acc, pi, 'pending');
    emit(acc, 'payment_intent.processing', pi);
    return ok(pi);
  }

  function listEvents(key: string, q: URLSearchParams): Response {
    const types = q.getAll('types[]').concat(q.getAll('types'));
    const all = account(key)
      .events.filter((e) => types.length === 0 || types.includes(e.type))
      .slice()
      .reverse(); // newest first
    const limit = Math.min(100, Number(q.get('limit') ?? 10));
    const before = q.get('ending_before');
    const after = q.get('starting_after');
    let page: Stripe.Event[];
    let hasMore: boolean;
    if (before) {
      const i = all.findIndex((e) => e.id === before);
      const newer = i < 0 ? [] : all.slice(0, i);
      page = newer.slice(Math.max(0, newer.length - limit));
      hasMore = newer.length > limit;
    } else {
      const start = after ? all.findIndex((e) => e.id === after) + 1 : 0;
      page = all.slice(start, start + limit);
      hasMore = start + limit < all.length;
    }
    return ok({ object: 'list', data: page, has_more: hasMore, url: '/v1/events' });
  }

  async function route(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const auth = req.headers.get('authorization') ?? '';
    const key = auth.replace(/^Bearer /, '');
    const text = req.method === 'POST' ? await req.text() : '';
    const params = req.method === 'POST' ? parseStripeForm(text) : Object.fromEntries(url.searchParams);
    const idemKey = req.headers.get('idempotency-key');
    requests.push({ method: req.method, path: url.pathname, key: key.slice(0, 8), idempotencyKey: idemKey, params });
    if (failures.left > 0) {
      failures.left--;
      return error(failures.status, 'api_error', 'Something went wrong on our end');
    }
    if (!/^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/.test(key) || key.includes('_refused')) {
      return error(401, 'invalid_request_error', 'Invalid API Key provided');
    }
    if (req.method === 'POST' && idemKey) {
      const scope = `${accountOf(key)}|${idemKey}`;
      const fingerprint = `${url.pathname}|${text}`;
      const prior = idem.get(scope);
      if (prior) {
        if (prior.fingerprint !== fingerprint) {
          return error(400, 'idempotency_error', 'Keys for idempotent requests can only be used with the same parameters they were first used with.');
        }
        return new Response(prior.body, { status: prior.status, headers: { 'content-type': 'application/json', 'idempotent-replayed': 'true' } });
      }
      const res = await handle(req.method, url, key, params);
      const body = await res.text();
      // Stripe does not keep the answer of a request that failed on its side (5xx): it may be retried.
      if (res.status < 500) idem.set(scope, { fingerprint, status: res.status, body });
      return new Response(body, { status: res.status, headers: res.headers });
    }
    return handle(req.method, url, key, params);
  }

  async function handle(method: string, url: URL, key: string, p: Json): Promise<Response> {
    const acc = account(key);
    const path = url.pathname;
    if (method === 'GET' && path === '/v1/balance') {
      return ok({ object: 'balance', available: [{ amount: 0, currency: 'usd' }], pending: [{ amount: 0, currency: 'usd' }], livemode: false });
    }
    if (method === 'POST' && path === '/v1/payment_methods') {
      const card = (p.card ?? {}) as { number?: string; exp_month?: string; exp_year?: string };
      const number = String(card.number ?? '');
      if (!/^\d{12,19}$/.test(number) || !luhn(number)) return error(402, 'card_error', 'Your card number is incorrect.', { code: 'incorrect_number', param: 'card[number]' });
      const expYear = Number(card.exp_year);
      if (expYear < new Date().getUTCFullYear()) return error(402, 'card_error', "Your card's expiration year is invalid.", { code: 'invalid_expiry_year', param: 'card[exp_year]' });
      const pm = {
        id: id('pm'),
        object: 'payment_method',
        type: 'card',
        created: clockSeconds,
        livemode: false,
        metadata: {},
        billing_details: { address: null, email: null, name: null, phone: null },
        card: { brand: number.startsWith('4') ? 'visa' : number.startsWith('5') ? 'mastercard' : 'unknown', last4: number.slice(-4), exp_month: Number(card.exp_month), exp_year: expYear, funding: 'debit', country: 'US' },
        _number: number,
      };
      acc.methods.set(pm.id, pm as never);
      const { _number, ...visible } = pm;
      return ok(visible);
    }
    if (method === 'POST' && path === '/v1/payment_intents') return createIntent(key, p);
    const piMatch = /^\/v1\/payment_intents\/([^/]+)$/.exec(path);
    if (method === 'GET' && piMatch) {
      const pi = acc.intents.get(piMatch[1]!);
      return pi ? ok(pi) : error(404, 'invalid_request_error', `No such payment_intent: '${piMatch[1]}'`, { code: 'resource_missing' });
    }
    if (method === 'GET' && path === '/v1/payment_intents') return ok({ object: 'list', data: [...acc.intents.values()].reverse(), has_more: false });
    if (method === 'GET' && path === '/v1/events') return listEvents(key, url.searchParams);
    const evMatch = /^\/v1\/events\/([^/]+)$/.exec(path);
    if (method === 'GET' && evMatch) {
      const e = acc.events.find((x) => x.id === evMatch[1]);
      return e ? ok(e) : error(404, 'invalid_request_error', `No such event: '${evMatch[1]}'`, { code: 'resource_missing' });
    }
    return error(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path})`);
  }

  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: route });
  const intentAndCharge = (piId: string) => {
    const acc = ownerOf(piId);
    const pi = acc.intents.get(piId)! as Stripe.PaymentIntent & { status: string };
    const ch = pi.latest_charge ? acc.charges.get(pi.latest_charge as string)! : chargeFor(acc, pi, 'pending');
    return { acc, pi, ch: ch as Stripe.Charge & { status: string } };
  };

  return {
    url: `http://127.0.0.1:${server.port}`,
    stop: () => server.stop(true),
    requests,
    control: {
      succeed(piId) {
        const { acc, pi, ch } = intentAndCharge(piId);
        pi.status = 'succeeded';
        ch.status = 'succeeded';
        (ch as { paid: boolean }).paid = true;
        emit(acc, 'charge.succeeded', ch);
        emit(acc, 'payment_intent.succeeded', pi);
      },
      fail(piId, failureCode, networkCode) {
        const { acc, pi, ch } = intentAndCharge(piId);
        pi.status = 'requires_payment_method';
        (pi as { last_payment_error: unknown }).last_payment_error = { type: 'api_error', code: failureCode, message: `The payment failed: ${failureCode}` };
        ch.status = 'failed';
        Object.assign(ch, { failure_code: failureCode, failure_message: `The payment failed: ${failureCode}`, outcome: { network_decline_code: networkCode ?? null, type: 'issuer_declined' } });
        emit(acc, 'charge.failed', ch);
        emit(acc, 'payment_intent.payment_failed', pi);
      },
      dispute(piId, reason, networkReasonCode) {
        const { acc, pi, ch } = intentAndCharge(piId);
        (ch as { disputed: boolean }).disputed = true;
        emit(acc, 'charge.dispute.created', {
          id: id('dp'),
          object: 'dispute',
          amount: pi.amount,
          charge: ch.id,
          payment_intent: pi.id,
          created: clockSeconds,
          currency: 'usd',
          livemode: false,
          metadata: {},
          reason,
          network_reason_code: networkReasonCode ?? null,
          status: 'needs_response',
        });
      },
      refund(piId, amount) {
        const { acc, pi, ch } = intentAndCharge(piId);
        Object.assign(ch, { amount_refunded: amount ?? pi.amount, refunded: (amount ?? pi.amount) >= pi.amount });
        emit(acc, 'charge.refunded', ch);
      },
      cancel(piId) {
        const { acc, pi } = intentAndCharge(piId);
        pi.status = 'canceled';
        emit(acc, 'payment_intent.canceled', pi);
      },
      requireActionNext() {
        requireAction = true;
      },
      failNext(n, status = 500) {
        failures = { left: n, status };
      },
      intents: (key) => [...account(key).intents.values()],
    },
  };
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}
