import { RAILS, type ProcessorName, type RailScope } from '../../../db/schema/enums';
import type { Ctx } from '../../deps';
import { iso, isoOrNull } from '../../platform/clock';
import { transaction } from '../../platform/context';
import { Conflict, InvalidInput, NotFound, Unavailable } from '../../platform/errors';
import { newId } from '../../platform/ids';
import { isUniqueViolation } from '../../platform/pg';
import type { TxCtx } from '../../platform/store';
import type { SealedColumn } from '../../platform/vault';
import { KeyRefused, keyShapeProblem, processorOfKey, ProcessorUnavailable } from '../../adapters/processors';
import type { CreateInput, UpdateInput } from './model';
import { accountsKnown, bindAccount } from './accounts';
import { type NewPaymentConnection, type PaymentConnection, type PaymentConnectionChange } from './store';

export type { PaymentConnection } from './store';

/** Columns of this feature holding vault-sealed values (null once a key is deleted). */
export const sealedColumns: SealedColumn[] = [{ table: 'payment_connections', key: 'id', column: 'key_sealed' }];

const PROCESSOR_LABEL: Record<ProcessorName, string> = { sandbox: 'Sandbox', stripe: 'Stripe' };

export function view(c: PaymentConnection) {
  return {
    id: c.id,
    label: c.label,
    merchant_ref: c.merchantRef,
    rail_scope: c.railScope,
    is_default: c.isDefault,
    key_last4: c.keyLast4,
    last_poll_at: isoOrNull(c.lastPollAt),
    last_poll_error: c.lastPollError,
    access_scope: 'lender_admins' as const,
    processor: c.processor,
    created_at: iso(c.createdAt),
  };
}

const liveKeys = (ctx: Ctx): Promise<PaymentConnection[]> => ctx.deps.stores.paymentConnections.liveKeys(ctx, ctx.lender.id);

async function findKey(ctx: Ctx, id: string): Promise<PaymentConnection> {
  const c = await ctx.deps.stores.paymentConnections.liveKey(ctx, ctx.lender.id, id);
  if (!c) throw new NotFound('Processor key', id);
  return c;
}

/** The conflicts of a key as it would be stored, with every other live key; a message that says which. */
function conflictOf(keys: PaymentConnection[], k: { id?: string; railScope: RailScope; isDefault: boolean; merchantRef: string | null }): string | null {
  for (const o of keys) {
    if (o.id === k.id || o.railScope !== k.railScope) continue;
    if (k.isDefault && o.isDefault) return `A default key for rail_scope ${k.railScope} already exists (${o.id})`;
    if (k.merchantRef !== null && o.merchantRef === k.merchantRef) {
      return `The tag ${k.merchantRef} already has a key for rail_scope ${k.railScope} (${o.id})`;
    }
  }
  return null;
}

/** Checks a key at its processor with one cheap authenticated read; nothing is stored either way. */
async function verifyAtProcessor(ctx: Ctx, key: string): Promise<{ processor: ProcessorName; accountId: string }> {
  const name = processorOfKey(key);
  if (!name) {
    const shape = keyShapeProblem(key);
    throw InvalidInput.field(
      'api_key',
      shape !== null
        ? `api_key is not well-formed: ${shape}`
        : 'api_key is not a key of a supported processor: sbx_… (sandbox), or sk_live_, sk_test_, rk_live_, rk_test_ (Stripe)',
    );
  }
  try {
    const { accountId } = await ctx.deps.processors.forLender(name, ctx.lender.id).verifyKey(key);
    return { processor: name, accountId };
  } catch (e) {
    if (e instanceof KeyRefused) throw InvalidInput.field('api_key', 'the processor refused this key');
    if (e instanceof ProcessorUnavailable) throw new Unavailable(`The ${PROCESSOR_LABEL[name]} processor could not be reached; nothing was stored. Try again.`);
    throw e;
  }
}

/** Every stored key's account known before a new key binds one: otherwise a 503, nothing stored. */
async function requireAccountsKnown(ctx: Ctx, processor: ProcessorName): Promise<void> {
  if (!(await accountsKnown(ctx.deps, processor))) {
    throw new Unavailable(`The ${PROCESSOR_LABEL[processor]} processor could not be asked which account each stored key belongs to; nothing was stored. Try again.`);
  }
}

/** A unique index refusing a write means a concurrent request won the race: the same conflict, as a 409. */
async function asConflict<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if ((e as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT') || isUniqueViolation(e)) {
      throw new Conflict('Another request changed the processor keys at the same time; read them and try again');
    }
    throw e;
  }
}

/**
 * POST /v1/payment_connections: the rules are checked first, then the key at its processor, then, in one
 * transaction, the conflicts again and the write: a refused request stores nothing, and two concurrent default
 * creates make one default. The lender's key changes take that transaction one at a time (serializeKeyChanges),
 * so the second reads the first's key and is refused with the same 409 as a later request would be.
 */
export async function createConnection({ ctx, input }: { ctx: Ctx; input: { body: CreateInput } }) {
  const { body } = input;
  const merchantRef = body.merchant_ref ?? null;
  const isDefault = body.is_default ?? false;
  if (isDefault && merchantRef !== null) {
    throw InvalidInput.field('is_default', 'A key is either the default (is_default) or tagged (merchant_ref), not both');
  }
  const wanted = { railScope: body.rail_scope, isDefault, merchantRef };
  const early = conflictOf(await liveKeys(ctx), wanted);
  if (early) throw new Conflict(early);

  const { processor, accountId } = await verifyAtProcessor(ctx, body.api_key);
  await requireAccountsKnown(ctx, processor);
  const last4 = body.api_key.slice(-4);
  const now = ctx.deps.clock.now();
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.paymentConnections.serializeKeyChanges(tx, ctx.lender.id);
    const conflict = conflictOf(await liveKeys(tx), wanted);
    if (conflict) throw new Conflict(conflict);
    await bindAccount(tx, { lenderId: ctx.lender.id, processor, accountId, now });
    const row: NewPaymentConnection = {
      id: newId(),
      lenderId: ctx.lender.id,
      processor,
      label: body.label ?? `${PROCESSOR_LABEL[processor]} key ending ${last4}`,
      merchantRef,
      railScope: body.rail_scope,
      isDefault,
      keySealed: ctx.deps.vault.seal(body.api_key),
      keyLast4: last4,
      accountId,
      createdAt: now,
      updatedAt: now,
    };
    await asConflict(() => tx.deps.stores.paymentConnections.insertKey(tx, row));
    return view(await findKey(tx, row.id!));
  });
}

export async function listConnections({ ctx }: { ctx: Ctx }) {
  const keys = await ctx.deps.stores.paymentConnections.listLiveKeys(ctx, ctx.lender.id);
  const covered = (rail: 'ach' | 'card') => keys.some((k) => k.isDefault && (k.railScope === rail || k.railScope === 'both'));
  // Counts and the last poll include deleted keys: what was read through them is kept.
  const totals = await ctx.deps.stores.paymentConnections.keyTotals(ctx, ctx.lender.id);
  return {
    connections: keys.map(view),
    missing_default_rails: RAILS.filter((r) => !covered(r)),
    ingested: totals.ingested,
    matched: totals.matched,
    last_poll_at: isoOrNull(totals.lastPollAt),
  };
}

/**
 * PATCH /v1/payment_connections/{id}. Promote swaps with the current default of the key's rail_scope;
 * moving a default onto a rail_scope with another default, or a tagged key onto a rail_scope its tag has,
 * is a conflict. A new api_key is verified first and replaces the old one in the same transaction as the
 * rest, so on any failure the old key stays.
 */
export async function updateConnection({ ctx, input }: { ctx: Ctx; input: { id: string; body: UpdateInput } }) {
  const { body } = input;
  if (Object.values(body).every((v) => v === undefined)) {
    throw new InvalidInput('Nothing to change: send at least one of label, rail_scope, is_default, api_key');
  }
  const current = await findKey(ctx, input.id);
  if (body.is_default === true && current.merchantRef !== null) {
    throw InvalidInput.field('is_default', 'A tagged key cannot be the default; create an untagged key to promote');
  }
  const plan = (k: PaymentConnection) => ({
    id: k.id,
    railScope: body.rail_scope ?? k.railScope,
    isDefault: body.is_default ?? k.isDefault,
    merchantRef: k.merchantRef,
  });
  // Checked before the processor is asked, so a request that cannot succeed costs no call.
  checkMove(plan(current), body, await liveKeys(ctx));
  const newKey = body.api_key;
  const verified = newKey !== undefined ? await verifyAtProcessor(ctx, newKey) : null;
  if (verified) await requireAccountsKnown(ctx, verified.processor);
  const now = ctx.deps.clock.now();

  return transaction(ctx, async (tx) => {
    await tx.deps.stores.paymentConnections.serializeKeyChanges(tx, ctx.lender.id);
    const k = await findKey(tx, input.id);
    const next = plan(k);
    const keys = await liveKeys(tx);
    checkMove(next, body, keys);
    if (body.is_default === true) await demoteOtherDefault(tx, keys, next.railScope, k.id, now);
    const set: PaymentConnectionChange = { railScope: next.railScope, isDefault: next.isDefault, updatedAt: now };
    if (body.label !== undefined) set.label = body.label;
    if (newKey !== undefined && verified !== null) {
      await bindAccount(tx, { lenderId: ctx.lender.id, processor: verified.processor, accountId: verified.accountId, now });
      Object.assign(set, {
        processor: verified.processor,
        accountId: verified.accountId,
        keySealed: ctx.deps.vault.seal(newKey),
        keyLast4: newKey.slice(-4),
        // Another key may be another account: its change feed starts from the beginning.
        pollCursor: null,
        lastPollError: null,
      });
    }
    await asConflict(() => tx.deps.stores.paymentConnections.updateKey(tx, k.id, set));
    return view(await findKey(tx, k.id));
  });
}

/** The conflicts a change of rail_scope or default raises; promotion itself never conflicts (it swaps). */
function checkMove(
  next: { id: string; railScope: RailScope; isDefault: boolean; merchantRef: string | null },
  body: UpdateInput,
  keys: PaymentConnection[],
): void {
  if (body.is_default === true) {
    // Promotion swaps with the default of the target rail_scope; a tag cannot clash (promoted keys are untagged).
    return;
  }
  const conflict = conflictOf(keys, next);
  if (conflict) throw new Conflict(conflict);
}

async function demoteOtherDefault(tx: TxCtx, keys: PaymentConnection[], railScope: RailScope, exceptId: string, now: number): Promise<void> {
  const other = keys.find((o) => o.id !== exceptId && o.isDefault && o.railScope === railScope);
  if (other) await tx.deps.stores.paymentConnections.updateKey(tx, other.id, { isDefault: false, updatedAt: now });
}

/**
 * DELETE /v1/payment_connections/{id}: the key is erased (its sealed value overwritten with null) and the
 * connection marked deleted; payments and events read through it keep pointing at it.
 */
export async function deleteConnection({ ctx, input }: { ctx: Ctx; input: { id: string } }): Promise<void> {
  await transaction(ctx, async (tx) => {
    await tx.deps.stores.paymentConnections.serializeKeyChanges(tx, ctx.lender.id);
    await findKey(tx, input.id);
    await tx.deps.stores.paymentConnections.eraseKey(tx, input.id, ctx.deps.clock.now());
  });
}
