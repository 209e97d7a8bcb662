CREATE TABLE "bank_link_owners" (
	"lender_id" text COLLATE "C" NOT NULL,
	"link_digest" text COLLATE "C" NOT NULL,
	"authorizer_unique_id" text COLLATE "C" NOT NULL,
	"provider" text NOT NULL,
	"plaid_item_id" text COLLATE "C",
	CONSTRAINT "bank_link_owners_lender_id_link_digest_authorizer_unique_id_pk" PRIMARY KEY("lender_id","link_digest","authorizer_unique_id")
);
--> statement-breakpoint
CREATE TABLE "provider_webhook_receipts" (
	"provider" text NOT NULL,
	"receipt_key" text COLLATE "C" NOT NULL,
	"received_at" bigint NOT NULL,
	CONSTRAINT "provider_webhook_receipts_provider_receipt_key_pk" PRIMARY KEY("provider","receipt_key")
);
--> statement-breakpoint
CREATE INDEX "bank_link_owners_item_idx" ON "bank_link_owners" USING btree ("plaid_item_id");--> statement-breakpoint
CREATE INDEX "provider_webhook_receipts_at_idx" ON "provider_webhook_receipts" USING btree ("received_at");