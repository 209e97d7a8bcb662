declare const inTransaction: unique symbol;

/**
 * The handle of an open write transaction, opaque: what it is underneath is the engine's business
 * (`handleOf` in sql/sqlite.ts and sql/pg.ts gives a store its engine's handle; transactions.sqlite.ts and
 * transactions.pg.ts make one). A function that writes takes a `Tx`, so it can only be called inside a
 * transaction, and a service can do nothing with it but pass it to a store.
 */
export type Tx = { readonly [inTransaction]: true };
