CREATE TABLE "bank_accounts" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"fingerprint" "bytea" NOT NULL,
	"last4" text NOT NULL,
	"state" text NOT NULL,
	"state_since" bigint NOT NULL,
	"return_codes" text,
	"state_reference" text COLLATE "C",
	"last_return_at" bigint,
	"blocks_due_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "service_secrets" (
	"name" text COLLATE "C" PRIMARY KEY NOT NULL,
	"secret_sealed" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "bank_account_id" text COLLATE "C";--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "bank_account_id" text COLLATE "C";--> statement-breakpoint
ALTER TABLE "bank_accounts" ADD CONSTRAINT "bank_accounts_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "bank_accounts_fingerprint_uq" ON "bank_accounts" USING btree ("lender_id","fingerprint");--> statement-breakpoint
CREATE INDEX "bank_accounts_lender_idx" ON "bank_accounts" USING btree ("lender_id","id");--> statement-breakpoint
CREATE INDEX "bank_accounts_lender_state_idx" ON "bank_accounts" USING btree ("lender_id","state","id");--> statement-breakpoint
CREATE INDEX "bank_accounts_blocks_due_idx" ON "bank_accounts" USING btree ("blocks_due_at") WHERE "bank_accounts"."blocks_due_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "enrollments" ADD CONSTRAINT "enrollments_bank_account_id_bank_accounts_id_fk" FOREIGN KEY ("bank_account_id") REFERENCES "public"."bank_accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "enrollments_bank_account_idx" ON "enrollments" USING btree ("bank_account_id","authorizer_unique_id");--> statement-breakpoint
CREATE INDEX "enrollments_unlinked_idx" ON "enrollments" USING btree ("id") WHERE "enrollments"."bank_account_id" IS NULL AND "enrollments"."rail" = 'ach' AND "enrollments"."sealed" IS NOT NULL;