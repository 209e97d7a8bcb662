ALTER TABLE "enrollments" ADD COLUMN "reauthorized_at" bigint;--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "reauthorization" text;--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "reg_e_election" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_class" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_needs" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_channel" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_due_from" bigint;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_due_by" bigint;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_sent_at" bigint;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_sent_channel" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "notice_evidence_ref" text;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "notice_channel" text;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "reg_e_election" text;--> statement-breakpoint
-- The lenders there were before payment notices bound the debit engine keep debiting as they did: their policy
-- says no notice channel (a lender created from now on gets electronic until it says otherwise).
INSERT INTO "collection_policies" ("lender_id") SELECT "id" FROM "lenders" WHERE "id" NOT IN (SELECT "lender_id" FROM "collection_policies");
