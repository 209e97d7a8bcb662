CREATE TABLE "held_files" (
	"key" text COLLATE "C" PRIMARY KEY NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"name" text NOT NULL,
	"body" "bytea" NOT NULL,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leases" (
	"name" text COLLATE "C" PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"until" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_buckets" (
	"key" text COLLATE "C" PRIMARY KEY NOT NULL,
	"tokens" double precision NOT NULL,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sign_in_counts" (
	"key" text COLLATE "C" PRIMARY KEY NOT NULL,
	"count" integer NOT NULL,
	"first" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "lease_token" text;--> statement-breakpoint
ALTER TABLE "batch_items" ADD COLUMN "lease_token" text;--> statement-breakpoint
ALTER TABLE "payments" ADD COLUMN "lease_token" text;