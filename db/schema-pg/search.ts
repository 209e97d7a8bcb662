import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { borrowerSearch as sqliteBorrowerSearch } from '../schema/search';
import { ident } from './columns';

// Borrower search without decrypting borrowers: each searchable value, normalized, stored as an HMAC under a
// key derived from the vault key, with the key's id. A search looks the hash up (an index seek).
export const borrowerSearch = pgTable(
  'borrower_search',
  {
    lenderId: ident('lender_id').notNull(),
    authorizerUniqueId: ident('authorizer_unique_id').notNull(),
    // The kinds' list is the SQLite table's, so the two cannot differ.
    kind: text('kind', { enum: sqliteBorrowerSearch.kind.enumValues }).notNull(),
    hash: ident('hash').notNull(),
    // The vault key the hash was made under: after a rotation, the next start hashes every borrower again.
    keyId: ident('key_id').notNull(),
  },
  (t) => [
    // The search's seek, covering: (lender, kind, hash) gives the borrowers.
    primaryKey({ columns: [t.lenderId, t.kind, t.hash, t.authorizerUniqueId] }),
    // A borrower's entries: replaced on re-send, deleted at erasure, checked for the current key at start.
    index('borrower_search_borrower_idx').on(t.lenderId, t.authorizerUniqueId, t.keyId),
  ],
);
