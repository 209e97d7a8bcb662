CREATE TABLE "payment_authorizations" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"enrollment_id" text COLLATE "C" NOT NULL,
	"obtained_at" bigint NOT NULL,
	"record" text NOT NULL,
	"recorded_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "payment_authorizations" ADD CONSTRAINT "payment_authorizations_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_authorizations" ADD CONSTRAINT "payment_authorizations_enrollment_id_enrollments_id_fk" FOREIGN KEY ("enrollment_id") REFERENCES "public"."enrollments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payment_authorizations_enrollment_idx" ON "payment_authorizations" USING btree ("enrollment_id","recorded_at","id");