import { primaryKey, sqliteTable } from 'drizzle-orm/sqlite-core';
import { bytes, ident } from './columns';

// Borrower search without decrypting borrowers: at enrollment each searchable value (a name, the phone, the
// account's and the card's last four), normalized, is stored as an HMAC under a key derived from the vault key.
// A search hashes what was typed the same way and looks the hash up (a seek): no borrower is opened to be
// searched, and the stored hashes reveal nothing without the key.
//
// Both tables are WITHOUT ROWID (the migration says so; drizzle has no word for it): an entry is one b-tree
// insert, not a row plus an index entry. An entry lands on a random page (the key starts with a hash), and a
// commit writes every page it changed, so the entry is kept small: the first 12 bytes of the HMAC, whose input
// starts with the lender's id and the kind of value (neither is stored again), and the borrower's id.
export const borrowerSearch = sqliteTable(
  'borrower_search',
  {
    hash: bytes('hash').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.hash, t.authorizerUniqueId] })],
);

// One row a borrower with search entries: the vault key they were made under (after a rotation, the next start
// hashes every borrower again) and the hashes themselves, concatenated, so a re-send or an erasure removes
// exactly its own entries. A search joins it on (lender, id): only the lender's borrowers are ever answered.
export const searchableBorrowers = sqliteTable(
  'searchable_borrowers',
  {
    lenderId: ident('lender_id').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    keyId: ident('key_id').notNull(),
    hashes: bytes('hashes').notNull(),
  },
  (t) => [primaryKey({ columns: [t.lenderId, t.authorizerUniqueId] })],
);
