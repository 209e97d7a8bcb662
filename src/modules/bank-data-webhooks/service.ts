// The providers' webhooks, for lenders whose service the providers can reach: what Plaid says of an Item and
// Stripe of a Financial Connections account drives the same link-health episodes and history readings as the
// probes (balance-requests/link-health.ts, pay-cycles/history.ts). Probes stay the default: nothing depends on
// a webhook arriving. A call whose signature does not verify, or a replay of one acted on, changes nothing.

import type { Deps, JobContext } from '../../deps';
import { transaction } from '../../platform/context';
import { Conflict, InvalidInput, NotFound, Unauthenticated, Unavailable } from '../../platform/errors';
import type { TxCtx } from '../../platform/store';
import { TransientProviderError } from '../../adapters/bank-data/types';
import type { BankLink, LinkProbe } from '../../adapters/bank-data/linked';
import { healthOfAccount } from '../../adapters/bank-data/stripe-fc';
import { connectionFor, stripeWebhookOf } from '../bank-data-connections/service';
import { dropOwner, firstReceipt, noteLinkHealth, ownersOfItem, ownersOfLink } from '../balance-requests/link-health';
import { linkDigest } from '../balance-requests/link-digest';
import { openBorrower } from '../enrollments/borrower';
import { wantHistory } from '../pay-cycles/history';
import { plaidKeyId, verifyPlaid, verifyStripe, type PlaidKey } from './verify';

/** What a webhook did: the borrowers whose link it moved or whose history it asked for. */
export interface WebhookOutcome {
  received: true;
  acted: number;
}

const refused = () => new Unauthenticated('The webhook’s signature does not verify', 'Send it as the provider signed it, within five minutes');

/** The keys Plaid signs with, by key id: fetched once each, at most 100 kept (an unknown id is asked for, not cached). */
const plaidKeys = new Map<string, PlaidKey>();
const MAX_PLAID_KEYS = 100;

/** What a Plaid ITEM webhook says of a link, or null when it says nothing of its health. */
function plaidProbe(code: string, body: Record<string, unknown>): LinkProbe | null {
  const errorCode = (body.error as { error_code?: unknown } | null | undefined)?.error_code;
  switch (code) {
    case 'ERROR':
      if (errorCode === 'ITEM_LOGIN_REQUIRED') return { health: 'relink_required', expiresAt: null };
      return null;
    case 'PENDING_DISCONNECT':
    case 'PENDING_EXPIRATION': {
      const ends = typeof body.consent_expiration_time === 'string' ? Date.parse(body.consent_expiration_time) : NaN;
      return { health: 'expiring', expiresAt: Number.isFinite(ends) ? ends : null };
    }
    case 'USER_PERMISSION_REVOKED':
    case 'USER_ACCOUNT_REVOKED':
      return { health: 'revoked', expiresAt: null };
    case 'LOGIN_REPAIRED':
      return { health: 'ok', expiresAt: null };
    default:
      return null;
  }
}

/** The JSON object of a webhook body, or a 400. */
function bodyOf(raw: Uint8Array): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    throw new InvalidInput('The webhook body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidInput('The webhook body is not a JSON object');
  return body as Record<string, unknown>;
}

/**
 * Acts on one provider's word about the borrowers holding a link, in the caller's transaction: each borrower
 * still enrolled with that link has its episode moved (or its history asked for); one sent another link since
 * no longer holds it.
 */
async function actOn(
  ctx: JobContext & TxCtx,
  owners: readonly { lenderId: string; digest: string; aid: string }[],
  what: { probe: LinkProbe | null; history: boolean; account?: (link: BankLink) => boolean },
  now: number,
): Promise<number> {
  let acted = 0;
  for (const o of owners) {
    const e = await ctx.deps.stores.enrollments.enrollmentOf(ctx, o.lenderId, o.aid);
    const link = e?.sealed ? openBorrower(ctx.deps, e.sealed).s.bankLink : null;
    if (!e || !link || linkDigest(o.lenderId, link) !== o.digest) {
      await dropOwner(ctx, o.lenderId, o.digest, o.aid);
      continue;
    }
    if (what.account && !what.account(link)) continue;
    if (what.probe) await noteLinkHealth(ctx, { lenderId: o.lenderId, aid: o.aid, link, probe: what.probe, batchId: null }, now);
    if (what.history) await wantHistory(ctx, o.lenderId, [e.id], now);
    acted++;
  }
  return acted;
}

/**
 * POST /v1/bank_data_webhooks/plaid: the token in Plaid-Verification checked (ES256, its key fetched with the
 * credentials of a lender holding the Item, issued within five minutes, the body's SHA-256), a replay refused,
 * then ITEM ERROR (ITEM_LOGIN_REQUIRED), PENDING_DISCONNECT, PENDING_EXPIRATION, USER_PERMISSION_REVOKED,
 * USER_ACCOUNT_REVOKED, LOGIN_REPAIRED and TRANSACTIONS SYNC_UPDATES_AVAILABLE acted on for the Item's borrowers.
 */
export async function receivePlaid(deps: Deps, raw: Uint8Array, token: string | null): Promise<WebhookOutcome> {
  const kid = token ? plaidKeyId(token) : null;
  if (!token || !kid) throw refused();
  const body = bodyOf(raw);
  const itemId = typeof body.item_id === 'string' && body.item_id.length <= 100 ? body.item_id : null;
  if (itemId === null) throw InvalidInput.field('item_id', 'The webhook names no Item');
  const owners = await ownersOfItem({ deps }, itemId);
  // No borrower of any lender holds the Item (or no read has named it yet): nothing to act on, and no lender's
  // credentials to verify with. Answered alike, so that a caller learns nothing of which Items are known.
  if (owners.length === 0) return { received: true, acted: 0 };
  let key = plaidKeys.get(kid);
  if (!key) {
    const conn = await connectionFor(deps, owners[0]!.lenderId, 'plaid');
    if (!conn || conn.creds.provider !== 'plaid') throw refused();
    let fetched;
    try {
      fetched = await deps.linked.plaid.webhookKey(conn.creds, kid);
    } catch (e) {
      if (e instanceof TransientProviderError) throw new Unavailable('Plaid could not be asked for its webhook key; send the webhook again');
      throw e;
    }
    if (!fetched) throw refused();
    key = fetched;
    if (key.expiredAt === null) {
      if (plaidKeys.size >= MAX_PLAID_KEYS) plaidKeys.delete(plaidKeys.keys().next().value!);
      plaidKeys.set(kid, key);
    }
  }
  const now = deps.clock.now();
  if (!(await verifyPlaid(token, raw, key, now))) throw refused();
  const type = body.webhook_type;
  const code = typeof body.webhook_code === 'string' ? body.webhook_code : '';
  const probe = type === 'ITEM' ? plaidProbe(code, body) : null;
  const history = type === 'TRANSACTIONS' && code === 'SYNC_UPDATES_AVAILABLE';
  const accountId = code === 'USER_ACCOUNT_REVOKED' && typeof body.account_id === 'string' ? body.account_id : null;
  return transaction({ deps }, async (tx) => {
    const receipt = new Bun.CryptoHasher('sha256').update(token).digest('hex');
    if (!(await firstReceipt(tx, 'plaid', receipt, now))) throw new Conflict('This webhook was received already; nothing was done again');
    if (!probe && !history) return { received: true as const, acted: 0 };
    const account = accountId === null ? undefined : (link: BankLink) => link.provider === 'plaid' && link.accountId === accountId;
    return { received: true as const, acted: await actOn(tx, owners, { probe, history, account }, now) };
  });
}

/** Stripe's Financial Connections account events this service acts on. */
const STRIPE_HEALTH_EVENTS = new Set([
  'financial_connections.account.deactivated',
  'financial_connections.account.reactivated',
  'financial_connections.account.disconnected',
  'financial_connections.account.upcoming_deactivation',
  'financial_connections.account.account_numbers_updated',
  'financial_connections.account.refreshed_balance',
]);

/**
 * POST /v1/bank_data_webhooks/stripe/{connection_id}: Stripe-Signature checked with the endpoint secret
 * registered on the connection, a replayed event id refused, then the account events acted on for the
 * lender's borrowers holding the account: its status, status details and account numbers as the event gives
 * them move the episode; refreshed_transactions asks for the borrowers' history.
 */
export async function receiveStripe(deps: Deps, connectionId: string, raw: Uint8Array, signature: string | null): Promise<WebhookOutcome> {
  if (!signature) throw refused();
  const hook = await stripeWebhookOf(deps, connectionId);
  if (!hook) throw new NotFound('Bank-data connection', connectionId);
  if (!hook.secret) throw new Conflict('This connection has no webhook_secret registered', undefined, 'Register the Stripe endpoint’s signing secret with the connection (webhook_secret)');
  const now = deps.clock.now();
  const event = await verifyStripe(raw, signature, hook.secret, now);
  if (!event) throw refused();
  return transaction({ deps }, async (tx) => {
    if (!(await firstReceipt(tx, 'stripe', event.id, now))) throw new Conflict('This event was received already; nothing was done again');
    const account = event.data.object as { object?: unknown; id?: unknown };
    if (account?.object !== 'financial_connections.account' || typeof account.id !== 'string') return { received: true as const, acted: 0 };
    const history = event.type === 'financial_connections.account.refreshed_transactions';
    if (!history && !STRIPE_HEALTH_EVENTS.has(event.type)) return { received: true as const, acted: 0 };
    const link: BankLink = { provider: 'stripe', account: account.id };
    const owners = (await ownersOfLink(tx, hook.lenderId, link)).map((aid) => ({ lenderId: hook.lenderId, digest: linkDigest(hook.lenderId, link), aid }));
    const probe = history ? null : healthOfAccount(account as Parameters<typeof healthOfAccount>[0]);
    return { received: true as const, acted: await actOn(tx, owners, { probe, history }, now) };
  });
}
