CREATE TABLE "account_changes" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"bank_account_id" text COLLATE "C" NOT NULL,
	"code" text NOT NULL,
	"source" text NOT NULL,
	"source_key" text NOT NULL,
	"reference" text COLLATE "C",
	"corrected_sealed" text,
	"old_last4" text NOT NULL,
	"new_last4" text,
	"status" text NOT NULL,
	"received_at" bigint NOT NULL,
	"due_by" bigint NOT NULL,
	"applied_at" bigint,
	"applied_by" text
);
--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD COLUMN "account_type" text;--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD COLUMN "pending_change_id" text COLLATE "C";--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD COLUMN "number_changed_at" bigint;--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD COLUMN "validation_method" text;--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD COLUMN "validation_source" text;--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD COLUMN "validation_reference" text;--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD COLUMN "validated_at" bigint;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "apply_notifications_of_change" text DEFAULT 'automatic' NOT NULL;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "require_account_validation" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "account_changes" ADD CONSTRAINT "account_changes_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "account_changes" ADD CONSTRAINT "account_changes_bank_account_id_bank_accounts_id_fk" FOREIGN KEY ("bank_account_id") REFERENCES "public"."bank_accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "account_changes_source_uq" ON "account_changes" USING btree ("lender_id","source_key");--> statement-breakpoint
CREATE INDEX "account_changes_account_idx" ON "account_changes" USING btree ("bank_account_id","received_at");--> statement-breakpoint
CREATE INDEX "account_changes_lender_idx" ON "account_changes" USING btree ("lender_id","received_at");--> statement-breakpoint
CREATE INDEX "account_changes_received_idx" ON "account_changes" USING btree ("received_at") WHERE "account_changes"."status" = 'received';--> statement-breakpoint
-- The lenders there were before account validation was required keep debiting as they did: they get a policy
-- saying false, and turn it on when they are ready; a lender created from now on has no row, so true.
UPDATE "collection_policies" SET "require_account_validation" = 0;--> statement-breakpoint
INSERT INTO "collection_policies" ("lender_id", "require_account_validation") SELECT "id", 0 FROM "lenders" WHERE "id" NOT IN (SELECT "lender_id" FROM "collection_policies");
