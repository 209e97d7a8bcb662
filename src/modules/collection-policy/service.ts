import type { Ctx } from '../../deps';
import { isoOrNull } from '../../platform/clock';
import { InvalidInput } from '../../platform/errors';
import { forget, remembered, transaction, type Tx } from '../../platform/context';
import type { StoreCtx } from '../../platform/store';
import { DEFAULT_POLICY, type CollectionPolicy } from './policy';
import { ACCOUNT_STATE_OF_RETURN, ACCOUNT_STATE_SEVERITY, looserThanNacha } from '../../adapters/processors/account-states';
import type { PolicyPatchInput } from './model';
import { leadBounds, type RegEElection } from './notice-windows';

/**
 * A covered lender's notice_days is the lead time of the payday rule's notices: it may not leave their
 * windows for the lender's channel (0 lets each notice take its own). Checked on the policy as it would be.
 */
function checkLead(p: { cfpbCovered: boolean; noticeDays: number; noticeChannel: CollectionPolicy['noticeChannel'] }): void {
  if (!p.cfpbCovered || p.noticeDays === 0 || p.noticeChannel === null) return;
  const { min, max } = leadBounds(p.noticeChannel);
  if (p.noticeDays < min || p.noticeDays > max) {
    throw InvalidInput.field(
      '/notice_days',
      `With cfpb_covered, notice_days is the lead of the payday rule's notices: ${p.noticeDays} business days leaves their window for ${p.noticeChannel} notices`,
      `Use 0 (each notice's own lead) or ${min} to ${max} for ${p.noticeChannel} notices`,
    );
  }
}

/** A Regulation E election as stored: a range must be one (min ≤ max). */
export function checkedElection(e: RegEElection, at: string): RegEElection {
  if (e.type === 'outside_range' && e.min_cents > e.max_cents) throw InvalidInput.field(`${at}/min_cents`, 'min_cents must not be above max_cents');
  return e;
}
import { type PolicyRow } from './store';

/** What a transaction remembers the lender's policy under (platform/tx-scope.ts). */
const policyKey = (lenderId: string) => `collection-policy:${lenderId}`;

/**
 * The lender's policy as the collection rules read it: its row, or every default. Read once a transaction (a
 * flush of balance results decides and schedules each of its borrowers with it), and forgotten by the change.
 */
export async function policyOf(ctx: StoreCtx & { tx?: Tx }, lenderId: string): Promise<CollectionPolicy> {
  return remembered(ctx, policyKey(lenderId), async () => policyFrom(await ctx.deps.stores.collectionPolicy.policyRow(ctx, lenderId)));
}

function policyFrom(row: PolicyRow | undefined): CollectionPolicy {
  return row
    ? {
        cfpbCovered: row.cfpbCovered === 1,
        maxReinitiations: row.maxReinitiations,
        reinitiationAmount: row.reinitiationAmount,
        noticeDays: row.noticeDays,
        returnRatePause: row.returnRatePause === 1,
        readCadence: row.readCadence,
        debitBufferCents: row.debitBufferCents,
        timeZone: row.timeZone,
        lateReturnWindowDays: row.lateReturnWindowDays,
        allowCurrentBalance: row.allowCurrentBalance === 1,
        currentBalanceBufferCents: row.currentBalanceBufferCents,
        maxBalanceAgeMinutes: row.maxBalanceAgeMinutes,
        applyNotificationsOfChange: row.applyNotificationsOfChange,
        requireAccountValidation: row.requireAccountValidation === 1,
        accountReturnStates: row.accountReturnStates ? (JSON.parse(row.accountReturnStates) as CollectionPolicy['accountReturnStates']) : {},
        noticeChannel: row.noticeChannel,
        regEElection: row.regEElection ? (JSON.parse(row.regEElection) as RegEElection) : { type: 'none' },
      }
    : DEFAULT_POLICY;
}

async function view(ctx: Ctx) {
  const p = await policyOf(ctx, ctx.lender.id);
  const updatedAt = await ctx.deps.stores.collectionPolicy.policyUpdatedAt(ctx, ctx.lender.id);
  return {
    cfpb_covered: p.cfpbCovered,
    max_reinitiations: p.maxReinitiations,
    reinitiation_amount: p.reinitiationAmount,
    notice_days: p.noticeDays,
    return_rate_pause: p.returnRatePause,
    read_cadence: p.readCadence,
    debit_buffer_cents: p.debitBufferCents,
    time_zone: p.timeZone,
    late_return_window_days: p.lateReturnWindowDays,
    allow_current_balance: p.allowCurrentBalance,
    current_balance_buffer_cents: p.currentBalanceBufferCents,
    max_balance_age_minutes: p.maxBalanceAgeMinutes,
    apply_notifications_of_change: p.applyNotificationsOfChange,
    require_account_validation: p.requireAccountValidation,
    account_return_states: p.accountReturnStates,
    notice_channel: p.noticeChannel,
    reg_e_election: p.regEElection,
    updated_at: isoOrNull(updatedAt),
  };
}

/** GET /v1/collection_policy. */
export const getPolicy = ({ ctx }: { ctx: Ctx }) => view(ctx);

/**
 * A time zone as the policy stores it: an IANA name the runtime knows, in its canonical spelling
 * (`america/chicago` is stored as `America/Chicago`); anything else is refused, naming the field.
 */
export function canonicalTimeZone(name: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    throw InvalidInput.field('/time_zone', `Unknown time zone "${name}"`, 'Send an IANA time zone name such as America/Chicago, or null for UTC');
  }
}

/** PATCH /v1/collection_policy: the fields sent change; the next collection decision reads them. */
export function updatePolicy({ ctx, input }: { ctx: Ctx; input: PolicyPatchInput }) {
  const now = ctx.deps.clock.now();
  const timeZone = typeof input.time_zone === 'string' ? canonicalTimeZone(input.time_zone) : input.time_zone;
  for (const [code, state] of Object.entries(input.account_return_states ?? {})) {
    if (looserThanNacha(code, state)) {
      throw InvalidInput.field(
        `/account_return_states/${code}`,
        `${code} sets ${ACCOUNT_STATE_OF_RETURN[code]} under Nacha's table; a lender may make it stricter, never looser`,
        `Use ${ACCOUNT_STATE_SEVERITY.slice(ACCOUNT_STATE_SEVERITY.indexOf(ACCOUNT_STATE_OF_RETURN[code]!)).join(', ')}, or leave ${code} out`,
      );
    }
  }
  return transaction(ctx, async (tx) => {
    await tx.deps.stores.collectionPolicy.serializePolicyChange(tx, ctx.lender.id);
    const cur = await policyOf(tx, ctx.lender.id);
    const next = {
      lenderId: ctx.lender.id,
      cfpbCovered: input.cfpb_covered ?? cur.cfpbCovered,
      maxReinitiations: input.max_reinitiations ?? cur.maxReinitiations,
      reinitiationAmount: input.reinitiation_amount ?? cur.reinitiationAmount,
      noticeDays: input.notice_days ?? cur.noticeDays,
      returnRatePause: input.return_rate_pause ?? cur.returnRatePause,
      readCadence: input.read_cadence ?? cur.readCadence,
      debitBufferCents: input.debit_buffer_cents ?? cur.debitBufferCents,
      // null sets it back to UTC; absent keeps it.
      timeZone: timeZone === undefined ? cur.timeZone : timeZone,
      lateReturnWindowDays: input.late_return_window_days ?? cur.lateReturnWindowDays,
      allowCurrentBalance: input.allow_current_balance ?? cur.allowCurrentBalance,
      currentBalanceBufferCents: input.current_balance_buffer_cents ?? cur.currentBalanceBufferCents,
      maxBalanceAgeMinutes: input.max_balance_age_minutes ?? cur.maxBalanceAgeMinutes,
      applyNotificationsOfChange: input.apply_notifications_of_change ?? cur.applyNotificationsOfChange,
      requireAccountValidation: input.require_account_validation ?? cur.requireAccountValidation,
      accountReturnStates: JSON.stringify(input.account_return_states ?? cur.accountReturnStates),
      noticeChannel: input.notice_channel === undefined ? cur.noticeChannel : input.notice_channel,
      regEElection: JSON.stringify(checkedElection(input.reg_e_election ?? cur.regEElection, '/reg_e_election')),
      updatedAt: now,
    };
    checkLead(next);
    await tx.deps.stores.collectionPolicy.savePolicy(tx, next);
    forget(tx, policyKey(tx.lender.id));
    return view(tx);
  });
}
