ALTER TABLE "bank_link_relinks" ADD COLUMN "health" text DEFAULT 'relink_required' NOT NULL;--> statement-breakpoint
ALTER TABLE "bank_link_relinks" ADD COLUMN "since" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "bank_link_relinks" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
ALTER TABLE "bank_link_relinks" ADD COLUMN "next_probe_at" bigint;--> statement-breakpoint
ALTER TABLE "bank_link_relinks" ADD COLUMN "probe_interval_ms" bigint;--> statement-breakpoint
ALTER TABLE "bank_link_relinks" ADD COLUMN "link_sealed" text;--> statement-breakpoint
CREATE INDEX "bank_link_relinks_probe_idx" ON "bank_link_relinks" USING btree ("next_probe_at");--> statement-breakpoint
UPDATE "bank_link_relinks" SET "since" = "created_at";