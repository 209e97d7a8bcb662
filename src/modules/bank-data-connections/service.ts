import type { BankDataProvider } from '../../../db/schema/enums';
import type { Ctx, Deps } from '../../deps';
import { iso, isoOrNull } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { Conflict, InvalidInput, NotFound, Unavailable } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { isUniqueViolation } from '../../platform/pg';
import type { StoreCtx, TxCtx } from '../../platform/store';
import type { SealedColumn } from '../../platform/vault';
import { CredentialsRefused, SourceUnavailable, last4, type LinkCredentials } from '../../adapters/bank-data/linked';
import type { CreateBankDataConnection } from './model';
import { type BankDataConnectionRow, type NewBankDataConnection } from './store';
import { withCallScope } from '../../platform/provider-calls';

export type { BankDataConnectionRow } from './store';

/** Columns of this feature holding vault-sealed values (null once a connection is deleted). */
export const sealedColumns: SealedColumn[] = [{ table: 'bank_data_connections', key: 'id', column: 'credentials_sealed' }];

const LABEL: Record<BankDataProvider, string> = { plaid: 'Plaid', stripe: 'Stripe' };

export function view(c: BankDataConnectionRow) {
  return {
    id: c.id,
    provider: c.provider,
    environment: c.environment,
    secret_last4: c.provider === 'plaid' ? c.last4 : null,
    key_last4: c.provider === 'stripe' ? c.last4 : null,
    identity: c.identity,
    created_at: iso(c.createdAt),
    last_read_at: isoOrNull(c.lastReadAt),
  };
}

function credentialsOf(body: CreateBankDataConnection): LinkCredentials {
  return body.provider === 'plaid'
    ? { provider: 'plaid', clientId: body.client_id, secret: body.secret, environment: body.environment }
    : { provider: 'stripe', apiKey: body.api_key };
}

function sealCredentials(deps: Pick<Deps, 'vault'>, c: LinkCredentials, webhookSecret: string | null): string {
  return deps.vault.seal(
    JSON.stringify(c.provider === 'plaid' ? { client_id: c.clientId, secret: c.secret } : { api_key: c.apiKey, ...(webhookSecret ? { webhook_secret: webhookSecret } : {}) }),
  );
}

/**
 * A live Stripe connection's lender and the signing secret of its webhook endpoint (null when none was
 * registered), for POST /v1/bank_data_webhooks/stripe/{id}; null when there is no such live connection.
 */
export async function stripeWebhookOf(deps: StoreCtx['deps'] & Pick<Deps, 'vault'>, id: string): Promise<{ lenderId: string; secret: string | null } | null> {
  const row = await deps.stores.bankDataConnections.connectionById({ deps }, id);
  if (!row || row.deletedAt !== null || row.provider !== 'stripe' || !row.credentialsSealed) return null;
  const o = JSON.parse(deps.vault.open(row.credentialsSealed)) as { webhook_secret?: string };
  return { lenderId: row.lenderId, secret: o.webhook_secret ?? null };
}

function openCredentials(deps: Pick<Deps, 'vault'>, row: BankDataConnectionRow): LinkCredentials | null {
  if (!row.credentialsSealed) return null;
  const o = JSON.parse(deps.vault.open(row.credentialsSealed)) as { client_id?: string; secret?: string; api_key?: string };
  return row.provider === 'plaid'
    ? { provider: 'plaid', clientId: o.client_id!, secret: o.secret!, environment: row.environment ?? 'sandbox' }
    : { provider: 'stripe', apiKey: o.api_key! };
}

const taken = (p: BankDataProvider, id: string) =>
  new Conflict(`A ${LABEL[p]} connection already exists (${id}); delete it first to store other credentials`);

/**
 * POST /v1/bank_data_connections: at most one per provider (checked before and again after the provider is
 * asked), the credentials checked at the provider, then sealed at once; a refused request stores nothing.
 */
export async function createBankDataConnection({ ctx, input }: { ctx: Ctx; input: { body: CreateBankDataConnection } }) {
  const creds = credentialsOf(input.body);
  const existing = (await ctx.deps.stores.bankDataConnections.liveConnections(ctx, ctx.lender.id)).find((c) => c.provider === creds.provider);
  if (existing) throw taken(creds.provider, existing.id);
  try {
    // Counted and, when it fails, logged as the lender's (no connection yet: no usage row).
    await withCallScope({ lenderId: ctx.lender.id }, () => (creds.provider === 'plaid' ? ctx.deps.linked.plaid.verify(creds) : ctx.deps.linked.stripe.verify(creds)));
  } catch (e) {
    if (e instanceof CredentialsRefused) {
      throw InvalidInput.field(creds.provider === 'plaid' ? 'secret' : 'api_key', `${e.message}; nothing was stored`);
    }
    if (e instanceof SourceUnavailable) throw new Unavailable(`${LABEL[creds.provider]} could not be reached; nothing was stored. Try again.`);
    throw e;
  }
  const now = ctx.deps.clock.now();
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.bankDataConnections.serializeConnections(tx, ctx.lender.id);
    const again = (await tx.deps.stores.bankDataConnections.liveConnections(tx, ctx.lender.id)).find((c) => c.provider === creds.provider);
    if (again) throw taken(creds.provider, again.id);
    const row: NewBankDataConnection = {
      id: newId(),
      lenderId: ctx.lender.id,
      provider: creds.provider,
      environment: creds.provider === 'plaid' ? creds.environment : null,
      credentialsSealed: sealCredentials(ctx.deps, creds, input.body.provider === 'stripe' ? (input.body.webhook_secret ?? null) : null),
      last4: last4(creds.provider === 'plaid' ? creds.secret : creds.apiKey),
      identity: input.body.identity ?? false,
      createdAt: now,
    };
    try {
      await tx.deps.stores.bankDataConnections.insertConnection(tx, row);
    } catch (e) {
      if ((e as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT') || isUniqueViolation(e)) throw new Conflict(`A ${LABEL[creds.provider]} connection was stored at the same time; list the connections`);
      throw e;
    }
    return view((await tx.deps.stores.bankDataConnections.connectionById(tx, row.id!))!);
  });
}

export async function listBankDataConnections({ ctx }: { ctx: Ctx }) {
  return { connections: (await ctx.deps.stores.bankDataConnections.liveConnections(ctx, ctx.lender.id)).map(view) };
}

/** DELETE /v1/bank_data_connections/{id}: the credentials erased, the row kept as deleted. */
export async function deleteBankDataConnection({ ctx, input }: { ctx: Ctx; input: { id: string } }): Promise<void> {
  await transaction(ctx, async (tx) => {
    // Two deletions at once: the second finds it deleted (404), as it would after the first.
    await tx.deps.stores.bankDataConnections.serializeConnections(tx, ctx.lender.id);
    const c = await tx.deps.stores.bankDataConnections.liveConnection(tx, ctx.lender.id, input.id);
    if (!c) throw new NotFound('Bank-data connection', input.id);
    await tx.deps.stores.bankDataConnections.eraseConnection(tx, c.id, ctx.deps.clock.now());
  });
}

/** The providers a lender has a live connection for: a bank_link of another provider is refused at once. */
export async function connectedProviders(ctx: Ctx): Promise<BankDataProvider[]> {
  return (await ctx.deps.stores.bankDataConnections.liveConnections(ctx, ctx.lender.id)).map((c) => c.provider);
}

/** The lender's live connection for a provider, its credentials opened; null when there is none. */
export async function connectionFor(
  deps: StoreCtx['deps'] & Pick<Deps, 'vault'>,
  lenderId: string,
  provider: BankDataProvider,
): Promise<{ id: string; creds: LinkCredentials; identity: boolean } | null> {
  return withCredentials(deps, await deps.stores.bankDataConnections.liveConnectionFor({ deps }, lenderId, provider));
}

function withCredentials(deps: Pick<Deps, 'vault'>, row: BankDataConnectionRow | undefined): { id: string; creds: LinkCredentials; identity: boolean } | null {
  const creds = row ? openCredentials(deps, row) : null;
  return row && creds ? { id: row.id, creds, identity: row.identity } : null;
}

/** Marks when connections were last read through (one write per flush of results, not per read). */
export async function markRead(c: TxCtx, ids: string[], at: number): Promise<void> {
  if (ids.length === 0) return;
  await c.deps.stores.bankDataConnections.markRead(c, ids, at);
}
