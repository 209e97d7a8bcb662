ALTER TABLE "payments" ADD COLUMN "reported_status" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "reported_return_code" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "reported_at" bigint;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "report_hold" text;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "late_return_window_days" integer DEFAULT 5 NOT NULL;