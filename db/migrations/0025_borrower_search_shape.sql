-- Search entries become (12 bytes of the HMAC, borrower) in one WITHOUT ROWID b-tree, the lender and the kind
-- hashed into the HMAC, and each borrower's hashes and key id kept in searchable_borrowers. The HMAC's input
-- changes, so the old entries cannot be rewritten in SQL: they go, and the start-up indexing job hashes every
-- stored borrower again (each one without a searchable_borrowers row under the current key, so all of them).
DROP TABLE `borrower_search`;--> statement-breakpoint
CREATE TABLE `borrower_search` (
	`hash` blob NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	PRIMARY KEY(`hash`, `authorizer_unique_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `searchable_borrowers` (
	`lender_id` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`key_id` text NOT NULL,
	`hashes` blob NOT NULL,
	PRIMARY KEY(`lender_id`, `authorizer_unique_id`)
) WITHOUT ROWID;
