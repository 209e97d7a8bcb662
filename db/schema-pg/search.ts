import { pgTable, primaryKey } from 'drizzle-orm/pg-core';
import { bytes, ident } from './columns';

// Borrower search without decrypting borrowers: each searchable value, normalized, stored as an HMAC (its
// first 12 bytes; the lender's id and the kind of value are part of its input) under a key derived from the
// vault key. A search looks the hash up (a primary-key seek) and joins the lender's borrowers.
export const borrowerSearch = pgTable(
  'borrower_search',
  {
    hash: bytes('hash').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.hash, t.authorizerUniqueId] })],
);

// One row a borrower with search entries: the vault key they were made under and the hashes themselves, so a
// re-send or an erasure removes exactly its own entries.
export const searchableBorrowers = pgTable(
  'searchable_borrowers',
  {
    lenderId: ident('lender_id').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    keyId: ident('key_id').notNull(),
    hashes: bytes('hashes').notNull(),
  },
  (t) => [primaryKey({ columns: [t.lenderId, t.authorizerUniqueId] })],
);
