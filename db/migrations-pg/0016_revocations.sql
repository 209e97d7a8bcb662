ALTER TABLE "enrollments" ADD COLUMN "revoked_at" bigint;--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "revocation_channel" text;--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "revocation_ref" text;