import type { ChangeCode, ChangeSource } from '../../../db/schema/enums';
import { DAY_MS, iso, isoOrNull } from '../../platform/clock';
import { addBusinessDays } from '../../platform/business-days';
import type { PlatformDeps } from '../../platform/context';
import { newId } from '../../platform/ids';
import type { TxCtx } from '../../platform/store';
import { policyOf } from '../collection-policy/service';
import { pushToEndpoints } from '../webhooks/endpoints';
import { APPLIED_CODES, readChangeCode, readCorrection, type Correction } from './corrections';
import { fingerprintOf } from './fingerprint';
import type { ChangeRow } from './store';

// Notifications of Change (payments.md, Notifications of Change). A receiving bank answers a debit with a
// correction of the account's details instead of a return: the Originator makes the change within six banking
// days of receipt or before its next entry, whichever is later. Here a change is received from a results
// upload, the bank-data source or a processor, and from that moment no debit goes to the account (its pending
// change holds it, read by the decision and by the send's claim) until the change is applied: at once by the
// bank-account-changes job under the policy's `automatic`, or when the lender confirms it under `review`
// (collection/account-changes.ts, which corrects the sealed details of every borrower on the account).

type ChangeCtx = TxCtx & { deps: Pick<PlatformDeps, 'vault' | 'clock'> };

/** The corrected data as sealed: the parts a correction changes, and the text as it came. */
export interface SealedCorrection {
  r?: string;
  a?: string;
  t?: Correction['accountType'];
  i?: string;
  x: string;
}

/**
 * The part of a source key that tells one notice from another of the same code: a keyed hash of its corrected
 * data (which holds an account number, so it is never kept in the clear), under the fingerprint key.
 */
export const noticeDigest = (key: Buffer, code: string, correctedData: string): string => fingerprintOf(key, code, correctedData).slice(0, 32);

/** Six banking days after receipt, to the end of that day (UTC): Nacha's time to make the change. */
export const changeDueBy = (receivedAt: number): number => addBusinessDays(receivedAt, 6) + DAY_MS - 1;

export interface ReceivedChange {
  lenderId: string;
  bankAccountId: string;
  /** The account's last four now. */
  last4: string;
  code: ChangeCode;
  correction: Correction;
  /** The corrected data as it came, kept sealed beside what was read of it. */
  text: string;
  reference: string | null;
  source: ChangeSource;
  /** Unique per lender: the same change received again (a re-upload, a re-read) records nothing. */
  sourceKey: string;
  receivedAt: number;
}

/**
 * A Notification of Change received, in the caller's transaction: kept once per source key (`false` when it
 * was there already). One to apply holds the account's debits from now on; under `review` its borrowers are
 * told (blocked account_change_pending). ACCOUNT_CHANGE_NOTIFIED goes to the lender's endpoints.
 */
export async function receiveChange(c: ChangeCtx, v: ReceivedChange): Promise<boolean> {
  const policy = await policyOf(c, v.lenderId);
  const status = !APPLIED_CODES.has(v.code) ? 'recorded' : policy.applyNotificationsOfChange === 'review' ? 'review' : 'received';
  const sealed: SealedCorrection = { x: v.text, r: v.correction.routing, a: v.correction.accountNumber, t: v.correction.accountType, i: v.correction.individualId };
  const row = {
    id: newId(),
    lenderId: v.lenderId,
    bankAccountId: v.bankAccountId,
    code: v.code,
    source: v.source,
    sourceKey: v.sourceKey,
    reference: v.reference,
    correctedSealed: c.deps.vault.seal(JSON.stringify(sealed)),
    oldLast4: v.last4,
    newLast4: v.correction.accountNumber ? v.correction.accountNumber.slice(-4) : v.last4,
    status,
    receivedAt: v.receivedAt,
    dueBy: changeDueBy(v.receivedAt),
  } as const;
  await c.deps.stores.bankAccounts.serializeAccount(c, v.bankAccountId);
  if (!(await c.deps.stores.bankAccounts.insertChange(c, row))) return false;
  if (status === 'recorded') {
    await c.deps.stores.bankAccounts.finishChange(c, {
      changeId: row.id,
      accountId: v.bankAccountId,
      status: 'recorded',
      by: 'none',
      fingerprint: null,
      last4: null,
      accountType: null,
      numberChanged: false,
      now: v.receivedAt,
    });
  } else {
    await c.deps.stores.bankAccounts.holdForChange(c, { accountId: v.bankAccountId, changeId: row.id, tell: status === 'review', now: v.receivedAt });
  }
  await pushToEndpoints(c, v.receivedAt, v.lenderId, 'ACCOUNT_CHANGE_NOTIFIED', changeView({ ...row, appliedAt: null, appliedBy: null }));
  return true;
}

/** What a change's events and views say of it: never the corrected number, only its last four. */
export function changeView(r: Omit<ChangeRow, 'correctedSealed'> & { correctedSealed?: unknown }) {
  return {
    bank_account_id: r.bankAccountId,
    change_id: r.id,
    code: r.code,
    source: r.source,
    reference: r.reference,
    old_last4: r.oldLast4,
    new_last4: r.newLast4,
    status: r.status,
    received_at: iso(r.receivedAt),
    due_by: iso(r.dueBy),
    applied_at: isoOrNull(r.appliedAt),
    applied_by: r.appliedBy,
  };
}

/**
 * A Notification of Change a source passed on as a code and its corrected data (a processor's feed, the HTTP
 * bank-data bridge): read as an uploaded one is, and received on the account of the payment it names, else of
 * the borrower. One that cannot be read is logged (never its data) and not recorded; nothing is guessed.
 * `sourceKey`: unique per lender and source; the same notice passed on again (a feed read again, a bridge
 * answering it with every read) records nothing twice.
 */
export async function receiveNotice(
  c: ChangeCtx & { deps: Pick<PlatformDeps, 'logger'> },
  v: { lenderId: string; paymentId: string | null; enrollmentId: string; notice: { code: string; correctedData: string }; reference: string | null; source: ChangeSource; sourceKey: string; receivedAt: number },
): Promise<boolean> {
  const code = readChangeCode(v.notice.code);
  const read = code ? readCorrection(code, v.notice.correctedData.slice(0, 64)) : null;
  if (!code || !read?.ok) {
    c.deps.logger.warn({ source: v.source, lender_id: v.lenderId, code: v.notice.code.slice(0, 16) }, 'a Notification of Change could not be read; not recorded');
    return false;
  }
  const account = await c.deps.stores.bankAccounts.accountOfMatch(c, v.paymentId, v.enrollmentId);
  if (!account) return false;
  return receiveChange(c, {
    lenderId: v.lenderId,
    bankAccountId: account.id,
    last4: account.last4,
    code,
    correction: read.correction,
    text: v.notice.correctedData,
    reference: v.reference,
    source: v.source,
    sourceKey: v.sourceKey,
    receivedAt: v.receivedAt,
  });
}
