CREATE TABLE "pay_history" (
	"enrollment_id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"wanted_at" bigint,
	"due_at" bigint,
	"attempts" integer DEFAULT 0 NOT NULL,
	"fetched_at" bigint,
	"covered_to" bigint,
	"outcome" text
);
--> statement-breakpoint
CREATE TABLE "pay_history_deposits" (
	"enrollment_id" text COLLATE "C" NOT NULL,
	"day" bigint NOT NULL,
	"amount_cents" bigint NOT NULL,
	CONSTRAINT "pay_history_deposits_enrollment_id_day_pk" PRIMARY KEY("enrollment_id","day")
);
--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "pay_cycle_alternative_frequency" text;--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "pay_cycle_alternative_next_payday" bigint;--> statement-breakpoint
ALTER TABLE "enrollments" ADD COLUMN "pay_cycle_lands_early" integer;--> statement-breakpoint
ALTER TABLE "collection_policies" ADD COLUMN "time_zone" text;--> statement-breakpoint
ALTER TABLE "pay_history" ADD CONSTRAINT "pay_history_enrollment_id_enrollments_id_fk" FOREIGN KEY ("enrollment_id") REFERENCES "public"."enrollments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pay_history_deposits" ADD CONSTRAINT "pay_history_deposits_enrollment_id_enrollments_id_fk" FOREIGN KEY ("enrollment_id") REFERENCES "public"."enrollments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "pay_history_due_idx" ON "pay_history" USING btree ("due_at") WHERE "pay_history"."due_at" IS NOT NULL;