CREATE TABLE "fraud_account_switches" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"enrollment_id" text COLLATE "C" NOT NULL,
	"bank_account_id" text COLLATE "C",
	"switched_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "fraud_alert_dispositions" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"alert_id" text COLLATE "C" NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"disposition" text NOT NULL,
	"note" text,
	"disposed_by" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "fraud_alerts" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"rule" text NOT NULL,
	"rule_version" integer NOT NULL,
	"policy_version" integer NOT NULL,
	"action" text NOT NULL,
	"subject" text COLLATE "C" NOT NULL,
	"fact" text COLLATE "C" NOT NULL,
	"enrollment_id" text COLLATE "C",
	"authorizer_unique_id" text COLLATE "C",
	"bank_account_id" text COLLATE "C",
	"payment_id" text COLLATE "C",
	"details" text NOT NULL,
	"state" text NOT NULL,
	"disposed_at" bigint,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "fraud_policies" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"version" integer NOT NULL,
	"rules" text NOT NULL,
	"notes" text,
	"changed_by" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "fraud_reviews" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"reviewed_on" text NOT NULL,
	"reviewer" text NOT NULL,
	"notes" text,
	"policy_version" integer NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "bank_data_connections" ADD COLUMN "identity" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "fraud_account_switches" ADD CONSTRAINT "fraud_account_switches_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "fraud_alert_dispositions" ADD CONSTRAINT "fraud_alert_dispositions_alert_id_fraud_alerts_id_fk" FOREIGN KEY ("alert_id") REFERENCES "public"."fraud_alerts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "fraud_alert_dispositions" ADD CONSTRAINT "fraud_alert_dispositions_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "fraud_alerts" ADD CONSTRAINT "fraud_alerts_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "fraud_policies" ADD CONSTRAINT "fraud_policies_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "fraud_reviews" ADD CONSTRAINT "fraud_reviews_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "fraud_account_switches_enrollment_idx" ON "fraud_account_switches" USING btree ("enrollment_id","switched_at");--> statement-breakpoint
CREATE INDEX "fraud_alert_dispositions_alert_idx" ON "fraud_alert_dispositions" USING btree ("alert_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "fraud_alert_dispositions_final_uq" ON "fraud_alert_dispositions" USING btree ("alert_id") WHERE "fraud_alert_dispositions"."disposition" <> 'needs_info';--> statement-breakpoint
CREATE UNIQUE INDEX "fraud_alerts_fact_uq" ON "fraud_alerts" USING btree ("lender_id","rule","subject","fact");--> statement-breakpoint
CREATE INDEX "fraud_alerts_lender_idx" ON "fraud_alerts" USING btree ("lender_id","created_at","id");--> statement-breakpoint
CREATE INDEX "fraud_alerts_hold_idx" ON "fraud_alerts" USING btree ("enrollment_id") WHERE "fraud_alerts"."action" = 'hold' AND "fraud_alerts"."state" IN ('open', 'needs_info');--> statement-breakpoint
CREATE INDEX "fraud_alerts_enrollment_idx" ON "fraud_alerts" USING btree ("enrollment_id","rule");--> statement-breakpoint
CREATE INDEX "fraud_alerts_account_idx" ON "fraud_alerts" USING btree ("bank_account_id","rule");--> statement-breakpoint
CREATE UNIQUE INDEX "fraud_policies_version_uq" ON "fraud_policies" USING btree ("lender_id","version");--> statement-breakpoint
CREATE INDEX "fraud_reviews_lender_idx" ON "fraud_reviews" USING btree ("lender_id","reviewed_on","id");