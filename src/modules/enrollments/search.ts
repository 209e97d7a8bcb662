import type { Ctx, Deps } from '../../deps';
import type { Job } from '../../platform/jobs';
import { backfill } from '../../platform/backfill';
import type { TxCtx } from '../../platform/store';
import type { Vault } from '../../platform/vault';
import type { SensitiveFields } from '../authorizers/rules';
import { openBorrower } from './borrower';

// Borrower search by name, phone, last four and payment reference, without opening a borrower to search it.
// Names, phones and last fours are sealed with the borrower; beside them each is stored as an HMAC of its
// normalized form under a key derived from the vault key (see db/schema/search.ts). A search normalizes what
// was typed, hashes it, and seeks the hash: one look-up per kind, whatever the number of borrowers.
// Names match whole (a first name, a last name, or both), not by prefix: a prefix cannot be hashed. Each name
// is stored once: both names typed together are found as the borrowers having the one and the other.

export type SearchKind = 'name' | 'phone' | 'last4' | 'reference' | 'id';

/** At most this many borrowers a search answers; past it the page says to narrow the search. */
export const SEARCH_LIMIT = 50;

const keys = new WeakMap<Vault, Buffer>();
const keyOf = (vault: Vault) => {
  let k = keys.get(vault);
  if (!k) keys.set(vault, (k = vault.derive('borrower-search')));
  return k;
};
/**
 * The bytes of the HMAC an entry keeps: 96 bits, so two different values of a lender share an entry with odds
 * of about one in 10^28 per pair, while an entry stays small (see db/schema/search.ts).
 */
const HASH_BYTES = 12;
// HMAC-SHA-256 (Bun's hasher: the same digest as node:crypto's createHmac, in half the time) of the lender, the
// kind and the value, so neither the lender nor the kind is stored beside the hash.
const hashOf = (vault: Vault, lenderId: string, kind: string, value: string): Uint8Array =>
  new Bun.CryptoHasher('sha256', keyOf(vault)).update(lenderId).update('\0').update(kind).update('\0').update(value).digest().subarray(0, HASH_BYTES);

/**
 * The entry of a borrower whose first and last names are the same: its two names typed together are not found
 * as two entries (there is one). The bar cannot be in a normalized name, so no search reaches it otherwise.
 */
const sameNames = (name: string) => `${name}|${name}`;

/**
 * A name as it is compared: accents and case dropped, anything but letters and digits one space. A name of
 * ASCII letters and digits alone (most of them) only needs its case dropped.
 */
export const normalizeName = (s: string) =>
  /^[A-Za-z0-9]+$/.test(s)
    ? s.toLowerCase()
    : s
        .normalize('NFKD')
        .replace(/\p{M}/gu, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}]+/gu, ' ')
        .trim();

/** A phone as it is compared: its last ten digits (a US number with or without +1); null when too short. */
export const normalizePhone = (s: string) => {
  const d = s.replace(/\D/g, '');
  return d.length >= 7 ? d.slice(-10) : null;
};

interface Searchable {
  lenderId: string;
  aid: string;
  sensitive: Pick<SensitiveFields, 'firstName' | 'lastName' | 'accountNumber'>;
  phone: string | null;
  cardLast4: string | null;
}

function termsOf(b: Searchable): { kind: 'name' | 'phone' | 'last4'; value: string }[] {
  const out: { kind: 'name' | 'phone' | 'last4'; value: string }[] = [];
  const first = normalizeName(b.sensitive.firstName ?? '');
  const last = normalizeName(b.sensitive.lastName ?? '');
  for (const n of new Set([first, last])) if (n) out.push({ kind: 'name', value: n });
  if (first && first === last) out.push({ kind: 'name', value: sameNames(first) });
  const phone = b.phone ? normalizePhone(b.phone) : null;
  if (phone) out.push({ kind: 'phone', value: phone });
  const account = b.sensitive.accountNumber?.replace(/\D/g, '') ?? '';
  for (const l4 of new Set([account.length >= 4 ? account.slice(-4) : '', b.cardLast4 ?? ''])) if (/^\d{4}$/.test(l4)) out.push({ kind: 'last4', value: l4 });
  return out;
}

/**
 * Replaces borrowers' search entries, in the transaction that stores them (`fresh`: a borrower new to the
 * lender, with none to replace). A re-send whose values hash the same under the same key writes nothing.
 * One store call for all of them: a 1000-borrower enrollment writes about four entries each (bun run bench enrollment).
 */
export async function indexBorrowers(c: TxCtx, vault: Vault, borrowers: readonly (Searchable & { fresh?: boolean })[]): Promise<void> {
  const entries = borrowers.map((b) => ({
    lenderId: b.lenderId,
    aid: b.aid,
    keyId: vault.currentKeyId,
    hashes: termsOf(b).map((t) => hashOf(vault, b.lenderId, t.kind, t.value)),
    fresh: b.fresh === true,
  }));
  await c.deps.stores.enrollments.replaceSearchEntries(c, entries, HASH_BYTES);
}

/** Removes borrowers' search entries: at erasure nothing of their personal data stays, not even a hash. */
export async function unindexBorrowers(c: TxCtx, lenderId: string, aids: readonly string[]): Promise<void> {
  await c.deps.stores.enrollments.removeSearchEntries(c, lenderId, aids, HASH_BYTES);
}

export interface SearchResult {
  matches: { authorizer_unique_id: string; matched_by: SearchKind[] }[];
  /** More borrowers match than SEARCH_LIMIT. */
  more: boolean;
}

/** The lender's borrowers whose name, phone, last four, payment reference or id matches what was typed. */
export async function searchBorrowers({ ctx, input }: { ctx: Ctx; input: { q: string } }): Promise<SearchResult> {
  const lenderId = ctx.lender.id;
  const q = input.q.trim().slice(0, 255);
  const found = new Map<string, Set<SearchKind>>();
  const add = (aid: string, kind: SearchKind) => {
    if (!found.has(aid)) found.set(aid, new Set());
    found.get(aid)!.add(kind);
  };
  if (q === '') return { matches: [], more: false };
  const take = SEARCH_LIMIT + 1;
  const hash = (kind: 'name' | 'phone' | 'last4', value: string) => hashOf(ctx.deps.vault, lenderId, kind, value);
  // No ORDER BY: sorted below, so each look-up is a seek of the hash.
  const byHash = async (kind: 'name' | 'phone' | 'last4', value: string) => {
    for (const r of await ctx.deps.stores.enrollments.borrowersWith(ctx, lenderId, hash(kind, value), take)) add(r.aid, kind);
  };
  const name = normalizeName(q);
  if (/\p{L}/u.test(name)) {
    // A first or a last name whole; then both: each split of the words in two, the borrowers having the one
    // and the other (first then last, or last then first). At most one split a space of the 255 characters.
    await byHash('name', name);
    const words = name.split(' ');
    for (let i = 1; i < words.length; i++) {
      const a = words.slice(0, i).join(' ');
      const b = words.slice(i).join(' ');
      if (a === b) await byHash('name', sameNames(a));
      else for (const r of await ctx.deps.stores.enrollments.borrowersNamed(ctx, lenderId, hash('name', a), hash('name', b), take)) add(r.aid, 'name');
    }
  }
  if (/^\d{4}$/.test(q)) await byHash('last4', q);
  const phone = /^[\d\s()+.-]+$/.test(q) ? normalizePhone(q) : null;
  if (phone) await byHash('phone', phone);
  const range = { from: q, to: `${q}\u{10FFFF}` };
  // A payment reference: exact or by its start, off the (lender, reference) unique index.
  for (const r of await ctx.deps.stores.enrollments.borrowersByReference(ctx, lenderId, range, take)) add(r.aid, 'reference');
  // An id, by its start.
  for (const r of await ctx.deps.stores.enrollments.borrowersByIdPrefix(ctx, lenderId, range, take)) add(r.aid, 'id');
  const all = [...found.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { matches: all.slice(0, SEARCH_LIMIT).map(([aid, kinds]) => ({ authorizer_unique_id: aid, matched_by: [...kinds] })), more: all.length > SEARCH_LIMIT };
}

const INDEX_SLICE = 200;

/**
 * Borrowers without search entries under the current vault key (stored before search existed, or before a
 * key rotation) are indexed after each start, 200 a transaction with a turn of the event loop between, until a
 * pass finds none left: a borrower another transaction held while a pass went by (PostgreSQL skips it) is
 * indexed by the next one.
 */
const indexPass = backfill<Deps>(INDEX_SLICE, async (tx, after) => {
  const rows = await tx.deps.stores.enrollments.unsearchedBorrowers(tx, after, tx.deps.vault.currentKeyId, INDEX_SLICE);
  await indexBorrowers(
    tx,
    tx.deps.vault,
    rows.map((r) => {
      const b = openBorrower(tx.deps, r.sealed!);
      return { lenderId: r.lenderId, aid: r.aid, sensitive: b.s, phone: b.phone, cardLast4: r.cardLast4 };
    }),
  );
  return rows;
});

export async function indexUnsearchedBorrowers(deps: Deps, signal?: AbortSignal): Promise<{ indexed: number }> {
  return { indexed: await indexPass(deps, signal) };
}

/**
 * Every replica: borrowers are taken with their rows locked (another replica's are skipped and left to it), and
 * indexing one again under the same key writes nothing.
 */
export const searchIndexJob: Job<Deps> = {
  name: 'borrower-search-index',
  intervalMs: 60_000,
  tick: (deps, signal) => indexUnsearchedBorrowers(deps, signal),
};

