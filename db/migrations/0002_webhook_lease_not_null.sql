-- webhook_deliveries.lease_until becomes NOT NULL DEFAULT 0 (a delivery inserted without it was never claimed).
-- SQLite rebuilds the table to change a column. The migration runs in a transaction, where foreign_keys cannot
-- be switched off, so the attempts that point at the deliveries are set aside and put back around the swap.
CREATE TABLE `__new_webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`type` text NOT NULL,
	`target_url` text NOT NULL,
	`payload` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`first_attempt_at` integer,
	`last_attempt_at` integer,
	`next_attempt_at` integer,
	`lease_until` integer DEFAULT 0 NOT NULL,
	`last_status_code` integer,
	`last_error` text,
	`finished_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "lender_id", "type", "target_url", "payload", "state", "attempts", "created_at", "first_attempt_at", "last_attempt_at", "next_attempt_at", "lease_until", "last_status_code", "last_error", "finished_at") SELECT "id", "lender_id", "type", "target_url", "payload", "state", "attempts", "created_at", "first_attempt_at", "last_attempt_at", "next_attempt_at", COALESCE("lease_until", 0), "last_status_code", "last_error", "finished_at" FROM `webhook_deliveries`;--> statement-breakpoint
CREATE TABLE `__keep_webhook_attempts` AS SELECT * FROM `webhook_attempts`;--> statement-breakpoint
DELETE FROM `webhook_attempts`;--> statement-breakpoint
DROP TABLE `webhook_deliveries`;--> statement-breakpoint
ALTER TABLE `__new_webhook_deliveries` RENAME TO `webhook_deliveries`;--> statement-breakpoint
INSERT INTO `webhook_attempts` SELECT * FROM `__keep_webhook_attempts`;--> statement-breakpoint
DROP TABLE `__keep_webhook_attempts`;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due_idx` ON `webhook_deliveries` (`state`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_lender_idx` ON `webhook_deliveries` (`lender_id`,`created_at`);