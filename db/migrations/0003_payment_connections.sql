CREATE TABLE `payment_connections` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`processor` text NOT NULL,
	`label` text NOT NULL,
	`merchant_ref` text,
	`rail_scope` text NOT NULL,
	`is_default` integer DEFAULT false NOT NULL,
	`key_sealed` text,
	`key_last4` text,
	`poll_cursor` text,
	`last_poll_at` integer,
	`last_poll_error` text,
	`ingested` integer DEFAULT 0 NOT NULL,
	`matched` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "payment_connections_default_or_tag" CHECK(NOT ("payment_connections"."is_default" = 1 AND "payment_connections"."merchant_ref" IS NOT NULL))
);
--> statement-breakpoint
CREATE UNIQUE INDEX `payment_connections_default_uq` ON `payment_connections` (`lender_id`,`rail_scope`) WHERE "payment_connections"."is_default" = 1 AND "payment_connections"."deleted_at" IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `payment_connections_tag_uq` ON `payment_connections` (`lender_id`,`merchant_ref`,`rail_scope`) WHERE "payment_connections"."merchant_ref" IS NOT NULL AND "payment_connections"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX `payment_connections_lender_idx` ON `payment_connections` (`lender_id`,`created_at`);