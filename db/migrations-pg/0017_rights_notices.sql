CREATE TABLE "rights_notices" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"enrollment_id" text COLLATE "C" NOT NULL,
	"reference" text COLLATE "C" NOT NULL,
	"learned_at" bigint NOT NULL,
	"due_by" bigint NOT NULL,
	"sent_at" bigint,
	"channel" text,
	"evidence_ref" text,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "rights_notices" ADD CONSTRAINT "rights_notices_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rights_notices" ADD CONSTRAINT "rights_notices_enrollment_id_enrollments_id_fk" FOREIGN KEY ("enrollment_id") REFERENCES "public"."enrollments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "rights_notices_reference_uq" ON "rights_notices" USING btree ("lender_id","reference");--> statement-breakpoint
CREATE INDEX "rights_notices_enrollment_idx" ON "rights_notices" USING btree ("enrollment_id","learned_at","id");--> statement-breakpoint
CREATE INDEX "rights_notices_lender_idx" ON "rights_notices" USING btree ("lender_id","due_by","id");--> statement-breakpoint
CREATE INDEX "rights_notices_open_idx" ON "rights_notices" USING btree ("lender_id","due_by","id") WHERE "rights_notices"."sent_at" IS NULL;--> statement-breakpoint
CREATE INDEX "rights_notices_sent_idx" ON "rights_notices" USING btree ("lender_id","due_by","id") WHERE "rights_notices"."sent_at" IS NOT NULL;