ALTER TABLE "payment_result_uploads" ADD COLUMN "already_recorded" integer;--> statement-breakpoint
ALTER TABLE "unfinished_uploads" ADD COLUMN "already_recorded" integer DEFAULT 0 NOT NULL;