CREATE TABLE `account_changes` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`bank_account_id` text NOT NULL,
	`code` text NOT NULL,
	`source` text NOT NULL,
	`source_key` text NOT NULL,
	`reference` text,
	`corrected_sealed` text,
	`old_last4` text NOT NULL,
	`new_last4` text,
	`status` text NOT NULL,
	`received_at` integer NOT NULL,
	`due_by` integer NOT NULL,
	`applied_at` integer,
	`applied_by` text,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`bank_account_id`) REFERENCES `bank_accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `account_changes_source_uq` ON `account_changes` (`lender_id`,`source_key`);--> statement-breakpoint
CREATE INDEX `account_changes_account_idx` ON `account_changes` (`bank_account_id`,`received_at`);--> statement-breakpoint
CREATE INDEX `account_changes_lender_idx` ON `account_changes` (`lender_id`,`received_at`);--> statement-breakpoint
CREATE INDEX `account_changes_received_idx` ON `account_changes` (`received_at`) WHERE "account_changes"."status" = 'received';--> statement-breakpoint
ALTER TABLE `bank_accounts` ADD `account_type` text;--> statement-breakpoint
ALTER TABLE `bank_accounts` ADD `pending_change_id` text;--> statement-breakpoint
ALTER TABLE `bank_accounts` ADD `number_changed_at` integer;--> statement-breakpoint
ALTER TABLE `bank_accounts` ADD `validation_method` text;--> statement-breakpoint
ALTER TABLE `bank_accounts` ADD `validation_source` text;--> statement-breakpoint
ALTER TABLE `bank_accounts` ADD `validation_reference` text;--> statement-breakpoint
ALTER TABLE `bank_accounts` ADD `validated_at` integer;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `apply_notifications_of_change` text DEFAULT 'automatic' NOT NULL;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `require_account_validation` integer DEFAULT true NOT NULL;--> statement-breakpoint
-- The lenders there were before account validation was required keep debiting as they did: they get a policy
-- saying false, and turn it on when they are ready; a lender created from now on has no row, so true.
UPDATE `collection_policies` SET `require_account_validation` = 0;--> statement-breakpoint
INSERT INTO `collection_policies` (`lender_id`, `require_account_validation`) SELECT `id`, 0 FROM `lenders` WHERE `id` NOT IN (SELECT `lender_id` FROM `collection_policies`);
