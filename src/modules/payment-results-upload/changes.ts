import type { Ctx } from '../../deps';
import type { Tx } from '../../platform/context';
import { noticeDigest, receiveChange } from '../bank-accounts/changes';
import { fingerprintKey } from '../bank-accounts/fingerprint';
import { Lookups } from './match';
import { SLICE } from './read';
import type { ParsedChange, ParsedRow, RowProblem } from './rules';

// The Notifications of Change of an upload (a report of them, or results rows that carry one): each matched to
// the borrower or payment its row names, and received on that bank account (bank-accounts/changes.ts), in the
// upload's last transaction, so they are recorded with it exactly once. A change uploaded again records
// nothing: its source key is the row's reference or borrower, its code and a keyed hash of its corrected data.

/** What an upload's changes came to: how many were recorded (or would be), and the problems of the others. */
export interface ChangesRecorded {
  recorded: number;
  problems: RowProblem[];
}

export async function recordChanges(tx: Ctx & { tx: Tx }, changes: readonly ParsedChange[], now: number, dryRun: boolean): Promise<ChangesRecorded> {
  const out: ChangesRecorded = { recorded: 0, problems: [] };
  if (changes.length === 0) return out;
  const warn = (row: number, reason: string) => out.problems.push({ row, rule: 7, reason, severity: 'warning' });
  const lookups = new Lookups(tx);
  // Made on first use: never in a dry run, which writes nothing.
  const key = dryRun ? null : await fingerprintKey(tx);
  for (let n = 0; n < changes.length; n += SLICE) {
    const slice = changes.slice(n, n + SLICE);
    // Matched as a results row is (match.ts): the row's borrower, or the payment its reference names.
    await lookups.load(slice as unknown as ParsedRow[]);
    for (const c of slice) {
      const m = lookups.match(c as unknown as ParsedRow);
      const named = c.reference ?? c.authorizerUniqueId;
      if (!m) {
        warn(c.row, `no enrolled borrower matches ${c.authorizerUniqueId ? `borrower ${c.authorizerUniqueId}` : `reference ${c.reference}`}; the Notification of Change ${c.code} was not recorded`);
        continue;
      }
      const account = await tx.deps.stores.bankAccounts.accountOfMatch(tx, m.paymentId, m.enrollmentId);
      if (!account) {
        warn(c.row, `borrower ${m.authorizerUniqueId} has no bank account to correct (a card borrower, or erased); the Notification of Change ${c.code} was not recorded`);
        continue;
      }
      if (dryRun) {
        out.recorded++;
        continue;
      }
      const received = await receiveChange(tx, {
        lenderId: tx.lender.id,
        bankAccountId: account.id,
        last4: account.last4,
        code: c.code,
        correction: c.correction,
        text: c.text,
        reference: c.reference,
        source: 'upload',
        sourceKey: `upload:${named}:${c.code}:${noticeDigest(key!, c.code, c.text)}`,
        receivedAt: now,
      });
      if (received) out.recorded++;
      else warn(c.row, `the Notification of Change ${c.code} for ${named} was recorded by an earlier upload; not recorded again`);
    }
  }
  return out;
}
