CREATE TABLE `bank_data_connections` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`provider` text NOT NULL,
	`environment` text,
	`credentials_sealed` text,
	`last4` text NOT NULL,
	`last_read_at` integer,
	`created_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bank_data_connections_provider_uq` ON `bank_data_connections` (`lender_id`,`provider`) WHERE "bank_data_connections"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX `bank_data_connections_lender_idx` ON `bank_data_connections` (`lender_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `bank_link_relinks` (
	`lender_id` text NOT NULL,
	`link_digest` text NOT NULL,
	`provider` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`lender_id`, `link_digest`)
);
--> statement-breakpoint
ALTER TABLE `balance_results` ADD `balance_kind` text;--> statement-breakpoint
ALTER TABLE `balance_results` ADD `balance_as_of` integer;--> statement-breakpoint
ALTER TABLE `balance_results` ADD `detail` text;--> statement-breakpoint
ALTER TABLE `batch_items` ADD `waiting_since` integer;