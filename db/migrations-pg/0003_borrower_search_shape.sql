-- Search entries become (12 bytes of the HMAC, borrower), the lender and the kind hashed into the HMAC, and
-- each borrower's hashes and key id kept in searchable_borrowers. The HMAC's input changes, so the old entries
-- cannot be rewritten in SQL: they go, and the start-up indexing job hashes every stored borrower again.
DROP TABLE "borrower_search";--> statement-breakpoint
CREATE TABLE "borrower_search" (
	"hash" bytea NOT NULL,
	"authorizer_unique_id" text COLLATE "C" NOT NULL,
	CONSTRAINT "borrower_search_hash_authorizer_unique_id_pk" PRIMARY KEY("hash","authorizer_unique_id")
);
--> statement-breakpoint
CREATE TABLE "searchable_borrowers" (
	"lender_id" text COLLATE "C" NOT NULL,
	"authorizer_unique_id" text COLLATE "C" NOT NULL,
	"key_id" text COLLATE "C" NOT NULL,
	"hashes" bytea NOT NULL,
	CONSTRAINT "searchable_borrowers_lender_id_authorizer_unique_id_pk" PRIMARY KEY("lender_id","authorizer_unique_id")
);
