import type { Deps } from '../../deps';
import type { Job } from '../../platform/jobs';
import { backfill } from '../../platform/backfill';
import type { TxCtx } from '../../platform/store';
import type { PlatformDeps } from '../../platform/context';
import { linkAccounts } from '../bank-accounts/service';
import type { LinkedAccount } from '../bank-accounts/store';
import { openBorrower } from './borrower';
import type { BorrowerToLink } from './store';

// Every ACH borrower is linked to its bank account (bank-accounts), so that a return of any borrower's debit
// acts on every borrower on the account. An enrollment links its borrowers as it stores them (service.ts);
// borrowers stored before accounts were known are linked here: by a job after each start, a slice at a time,
// and, should one of them come up before the job reaches it, by the code about to act on it (a decision, a
// recorded return: linkBorrower). A borrower not linked yet is decided as before, by its own rules.

type LinkCtx = TxCtx & { deps: Pick<PlatformDeps, 'vault' | 'clock'> };

/**
 * Links stored borrowers (ACH, with personal data, not linked yet) to their bank accounts, made where new:
 * their details opened, the accounts made or found in one store call a lender, the links written. The
 * accounts by enrollment id; a borrower with no account number in its details is left unlinked.
 */
export async function linkStoredBorrowers(c: LinkCtx, borrowers: readonly Pick<BorrowerToLink, 'id' | 'lenderId' | 'routing' | 'sealed'>[], now: number): Promise<Map<string, LinkedAccount>> {
  const out = new Map<string, LinkedAccount>();
  const byLender = new Map<string, { id: string; routing: string; accountNumber: string }[]>();
  for (const b of borrowers) {
    if (!b.sealed || !b.routing) continue;
    const accountNumber = openBorrower(c.deps, b.sealed).s.accountNumber;
    if (!accountNumber) continue;
    const list = byLender.get(b.lenderId) ?? [];
    list.push({ id: b.id, routing: b.routing, accountNumber });
    byLender.set(b.lenderId, list);
  }
  const links: { id: string; bankAccountId: string }[] = [];
  for (const [lenderId, list] of byLender) {
    const accounts = await linkAccounts(c, lenderId, list, now);
    list.forEach((b, i) => {
      out.set(b.id, accounts[i]!);
      links.push({ id: b.id, bankAccountId: accounts[i]!.id });
    });
  }
  await c.deps.stores.enrollments.linkBankAccounts(c, links);
  return out;
}

/**
 * The bank account of one borrower, linked now if it is an ACH borrower not linked yet (a recorded return of
 * its debit, before the start-up job reached it): its id, or null for a card borrower or one erased.
 */
export async function linkBorrower(c: LinkCtx, enrollmentId: string, now: number): Promise<string | null> {
  const b = await c.deps.stores.enrollments.borrowerToLink(c, enrollmentId);
  if (!b) return null;
  if (b.bankAccountId !== null) return b.bankAccountId;
  if (b.rail !== 'ach' || !b.sealed) return null;
  return (await linkStoredBorrowers(c, [b], now)).get(b.id)?.id ?? null;
}

const LINK_SLICE = 200;

/**
 * ACH borrowers not linked to their bank account (stored before accounts were known) are linked after each
 * start, 200 a transaction with a turn of the event loop between, until a pass finds none left; a borrower
 * another transaction held while a pass went by (PostgreSQL skips it) is linked by the next one, or by the code
 * about to act on it.
 */
const linkPass = backfill<Deps>(LINK_SLICE, async (tx, after) => {
  const rows = await tx.deps.stores.enrollments.unlinkedBorrowers(tx, after, LINK_SLICE);
  await linkStoredBorrowers(tx, rows, tx.deps.clock.now());
  return rows;
});

export async function linkUnlinkedBorrowers(deps: Deps, signal?: AbortSignal): Promise<{ linked: number }> {
  return { linked: await linkPass(deps, signal) };
}

/** Every replica: borrowers are taken with their rows locked (another replica's are skipped and left to it). */
export const accountLinkJob: Job<Deps> = {
  name: 'bank-account-links',
  intervalMs: 60_000,
  tick: (deps, signal) => linkUnlinkedBorrowers(deps, signal),
};
