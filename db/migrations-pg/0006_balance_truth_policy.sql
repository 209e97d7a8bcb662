ALTER TABLE "collection_policies" ADD COLUMN "allow_current_balance" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "current_balance_buffer_cents" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "max_balance_age_minutes" integer DEFAULT 60 NOT NULL;