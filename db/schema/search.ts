import { index, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// Borrower search without decrypting borrowers: at enrollment each searchable value (a name, the phone, the
// account's and the card's last four), normalized, is stored as an HMAC under a key derived from the vault key,
// with the key's id. A search hashes what was typed the same way and looks the hash up (an index seek): no
// borrower is opened to be searched, and the stored hashes reveal nothing without the key.
export const borrowerSearch = sqliteTable(
  'borrower_search',
  {
    lenderId: text('lender_id').notNull(),
    authorizerUniqueId: text('authorizer_unique_id').notNull(),
    kind: text('kind', { enum: ['name', 'phone', 'last4'] }).notNull(),
    hash: text('hash').notNull(),
    // The vault key the hash was made under: after a rotation, the next start hashes every borrower again.
    keyId: text('key_id').notNull(),
  },
  (t) => [
    // The search's seek, covering: (lender, kind, hash) gives the borrowers.
    primaryKey({ columns: [t.lenderId, t.kind, t.hash, t.authorizerUniqueId] }),
    // A borrower's entries: replaced on re-send, deleted at erasure, checked for the current key at start.
    index('borrower_search_borrower_idx').on(t.lenderId, t.authorizerUniqueId, t.keyId),
  ],
);
