import { and, asc, eq, inArray, isNull } from 'drizzle-orm';
import { bankDataConnections } from '../../../db/schema';
import type { BankDataProvider } from '../../../db/schema/enums';
import type { Ctx, Deps } from '../../deps';
import { iso, isoOrNull } from '../../platform/clock';
import { dbOf, transaction, type Tx } from '../../platform/context';
import type { Db } from '../../platform/db';
import { Conflict, InvalidInput, NotFound, Unavailable } from '../../platform/errors';
import { newId } from '../../platform/ids';
import type { SealedColumn } from '../../platform/vault';
import { CredentialsRefused, SourceUnavailable, last4, type LinkCredentials } from '../../adapters/bank-data/linked';
import type { CreateBankDataConnection } from './model';

export type BankDataConnectionRow = typeof bankDataConnections.$inferSelect;

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
    created_at: iso(c.createdAt),
    last_read_at: isoOrNull(c.lastReadAt),
  };
}

const live = (lenderId: string) => and(eq(bankDataConnections.lenderId, lenderId), isNull(bankDataConnections.deletedAt));

function liveOf(db: Db, lenderId: string): BankDataConnectionRow[] {
  return db.select().from(bankDataConnections).where(live(lenderId)).orderBy(asc(bankDataConnections.createdAt), asc(bankDataConnections.id)).all();
}

function credentialsOf(body: CreateBankDataConnection): LinkCredentials {
  return body.provider === 'plaid'
    ? { provider: 'plaid', clientId: body.client_id, secret: body.secret, environment: body.environment }
    : { provider: 'stripe', apiKey: body.api_key };
}

function sealCredentials(deps: Pick<Deps, 'vault'>, c: LinkCredentials): string {
  return deps.vault.seal(JSON.stringify(c.provider === 'plaid' ? { client_id: c.clientId, secret: c.secret } : { api_key: c.apiKey }));
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
  const existing = liveOf(dbOf(ctx), ctx.lender.id).find((c) => c.provider === creds.provider);
  if (existing) throw taken(creds.provider, existing.id);
  try {
    if (creds.provider === 'plaid') await ctx.deps.linked.plaid.verify(creds);
    else await ctx.deps.linked.stripe.verify(creds);
  } catch (e) {
    if (e instanceof CredentialsRefused) {
      throw InvalidInput.field(creds.provider === 'plaid' ? 'secret' : 'api_key', `${e.message}; nothing was stored`);
    }
    if (e instanceof SourceUnavailable) throw new Unavailable(`${LABEL[creds.provider]} could not be reached; nothing was stored. Try again.`);
    throw e;
  }
  const now = ctx.deps.clock.now();
  return transaction(ctx, (tx) => {
    const again = liveOf(tx.tx, ctx.lender.id).find((c) => c.provider === creds.provider);
    if (again) throw taken(creds.provider, again.id);
    const row: typeof bankDataConnections.$inferInsert = {
      id: newId(),
      lenderId: ctx.lender.id,
      provider: creds.provider,
      environment: creds.provider === 'plaid' ? creds.environment : null,
      credentialsSealed: sealCredentials(ctx.deps, creds),
      last4: last4(creds.provider === 'plaid' ? creds.secret : creds.apiKey),
      createdAt: now,
    };
    try {
      tx.tx.insert(bankDataConnections).values(row).run();
    } catch (e) {
      if ((e as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw new Conflict(`A ${LABEL[creds.provider]} connection was stored at the same time; list the connections`);
      throw e;
    }
    return view(tx.tx.select().from(bankDataConnections).where(eq(bankDataConnections.id, row.id!)).get()!);
  });
}

export function listBankDataConnections({ ctx }: { ctx: Ctx }) {
  return { connections: liveOf(dbOf(ctx), ctx.lender.id).map(view) };
}

/** DELETE /v1/bank_data_connections/{id}: the credentials erased, the row kept as deleted. */
export async function deleteBankDataConnection({ ctx, input }: { ctx: Ctx; input: { id: string } }): Promise<void> {
  await transaction(ctx, ({ tx }) => {
    const c = tx.select().from(bankDataConnections).where(and(eq(bankDataConnections.id, input.id), live(ctx.lender.id))).get();
    if (!c) throw new NotFound('Bank-data connection', input.id);
    tx.update(bankDataConnections).set({ credentialsSealed: null, deletedAt: ctx.deps.clock.now() }).where(eq(bankDataConnections.id, c.id)).run();
  });
}

/** The providers a lender has a live connection for: a bank_link of another provider is refused at once. */
export function connectedProviders(ctx: Ctx): BankDataProvider[] {
  return liveOf(dbOf(ctx), ctx.lender.id).map((c) => c.provider);
}

/** The lender's live connection for a provider, its credentials opened; null when there is none. */
export function connectionFor(deps: Pick<Deps, 'db' | 'vault'>, lenderId: string, provider: BankDataProvider): { id: string; creds: LinkCredentials } | null {
  const row = deps.db
    .select()
    .from(bankDataConnections)
    .where(and(live(lenderId), eq(bankDataConnections.provider, provider)))
    .get();
  const creds = row ? openCredentials(deps, row) : null;
  return row && creds ? { id: row.id, creds } : null;
}

/** Marks when connections were last read through (one write per flush of results, not per read). */
export function markRead(tx: Tx, ids: string[], at: number): void {
  if (ids.length === 0) return;
  tx.update(bankDataConnections).set({ lastReadAt: at }).where(inArray(bankDataConnections.id, ids)).run();
}
