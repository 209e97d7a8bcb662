CREATE TABLE `bank_accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`fingerprint` blob NOT NULL,
	`last4` text NOT NULL,
	`state` text NOT NULL,
	`state_since` integer NOT NULL,
	`return_codes` text,
	`state_reference` text,
	`last_return_at` integer,
	`blocks_due_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bank_accounts_fingerprint_uq` ON `bank_accounts` (`lender_id`,`fingerprint`);--> statement-breakpoint
CREATE INDEX `bank_accounts_lender_idx` ON `bank_accounts` (`lender_id`,`id`);--> statement-breakpoint
CREATE INDEX `bank_accounts_lender_state_idx` ON `bank_accounts` (`lender_id`,`state`,`id`);--> statement-breakpoint
CREATE INDEX `bank_accounts_blocks_due_idx` ON `bank_accounts` (`blocks_due_at`) WHERE "bank_accounts"."blocks_due_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `service_secrets` (
	`name` text PRIMARY KEY NOT NULL,
	`secret_sealed` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `enrollments` ADD `bank_account_id` text REFERENCES bank_accounts(id);--> statement-breakpoint
CREATE INDEX `enrollments_bank_account_idx` ON `enrollments` (`bank_account_id`,`authorizer_unique_id`);--> statement-breakpoint
CREATE INDEX `enrollments_unlinked_idx` ON `enrollments` (`id`) WHERE "enrollments"."bank_account_id" IS NULL AND "enrollments"."rail" = 'ach' AND "enrollments"."sealed" IS NOT NULL;--> statement-breakpoint
ALTER TABLE `payments` ADD `bank_account_id` text;