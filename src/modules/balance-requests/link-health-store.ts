import type { BankDataProvider, LinkHealth } from '../../../db/schema/enums';
import type { StoreCtx, TxCtx } from '../../platform/store';

/** A link's health row: its current health, since when, and (while an episode is open) when it is probed next. */
export interface LinkHealthRow {
  lenderId: string;
  digest: string;
  provider: BankDataProvider;
  aid: string;
  health: LinkHealth;
  since: number;
  expiresAt: number | null;
  nextProbeAt: number | null;
  probeIntervalMs: number | null;
  linkSealed: string | null;
}

export interface LinkHealthStore {
  /** The link's row, if its provider ever said it was not ok. */
  healthOf(c: StoreCtx, lenderId: string, digest: string): Promise<LinkHealthRow | undefined>;
  /** The rows of these links of the lender, in one statement (a link never said to be unwell is left out). */
  healthsAmong(c: StoreCtx, lenderId: string, digests: readonly string[]): Promise<LinkHealthRow[]>;
  /** Writes the row whole (insert or replace), under the caller's transaction. */
  put(c: TxCtx, row: LinkHealthRow): Promise<void>;
  /** Open episodes due for a probe at `now`, oldest first. */
  dueProbes(c: StoreCtx, now: number, limit: number): Promise<LinkHealthRow[]>;
  /**
   * Takes a due probe for this replica: its next probe moved to `until` only if it is still `expected`; false
   * when another replica took it first.
   */
  claimProbe(c: TxCtx, lenderId: string, digest: string, expected: number, until: number): Promise<boolean>;
  /** The lender's open episodes of these links probed at `now` (a re-sent link, a check asked for). */
  probeNow(c: TxCtx, lenderId: string, digests: string[], now: number): Promise<number>;
  /** Every row of a borrower, gone (erasure): its health rows and its links' owner rows. */
  eraseBorrower(c: TxCtx, lenderId: string, aid: string): Promise<void>;

  // Who holds a link, for the providers' webhooks.
  /** These borrowers hold these links (kept when already known). */
  putOwners(c: TxCtx, rows: readonly { lenderId: string; digest: string; aid: string; provider: BankDataProvider }[]): Promise<void>;
  /** The borrowers of the lender holding this link. */
  ownersOfLink(c: StoreCtx, lenderId: string, digest: string): Promise<string[]>;
  /** The links (and their borrowers) of a Plaid Item, every lender's, as reads have said. */
  ownersOfItem(c: StoreCtx, itemId: string): Promise<{ lenderId: string; digest: string; aid: string }[]>;
  /** The Plaid Item a link belongs to, as a read said. */
  noteItem(c: TxCtx, lenderId: string, digest: string, itemId: string): Promise<void>;
  /** A borrower no longer holds this link (it was sent another). */
  dropOwner(c: TxCtx, lenderId: string, digest: string, aid: string): Promise<void>;
  /** A provider's webhook recorded as acted on: false when it already was (a replay). Receipts older than `before` go. */
  receipt(c: TxCtx, provider: BankDataProvider, key: string, now: number, before: number): Promise<boolean>;
}

