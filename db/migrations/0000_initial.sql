CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`prefix` text NOT NULL,
	`key_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_prefix_unique` ON `api_keys` (`prefix`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_lender_idx` ON `api_keys` (`lender_id`);--> statement-breakpoint
CREATE TABLE `lenders` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`debit_card_approved` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `lenders_name_unique` ON `lenders` (`name`);--> statement-breakpoint
CREATE TABLE `job_state` (
	`name` text PRIMARY KEY NOT NULL,
	`runs` integer DEFAULT 0 NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	`last_started_at` integer,
	`last_finished_at` integer,
	`last_duration_ms` integer,
	`last_error` text
);
--> statement-breakpoint
CREATE TABLE `webhook_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` text NOT NULL,
	`attempted_at` integer NOT NULL,
	`status_code` integer,
	`error` text,
	`duration_ms` integer NOT NULL,
	FOREIGN KEY (`delivery_id`) REFERENCES `webhook_deliveries`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_attempts_delivery_idx` ON `webhook_attempts` (`delivery_id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
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
	`lease_until` integer,
	`last_status_code` integer,
	`last_error` text,
	`finished_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due_idx` ON `webhook_deliveries` (`state`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_lender_idx` ON `webhook_deliveries` (`lender_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_secrets` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`secret_sealed` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_secrets_lender_idx` ON `webhook_secrets` (`lender_id`);--> statement-breakpoint
CREATE TABLE `balance_results` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`item_id` integer NOT NULL,
	`batch_id` text NOT NULL,
	`lender_id` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`balance_cents` integer,
	`status_code` integer NOT NULL,
	`export_status` text NOT NULL,
	`institution` text,
	`recorded_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `balance_results_item_id_unique` ON `balance_results` (`item_id`);--> statement-breakpoint
CREATE INDEX `balance_results_batch_idx` ON `balance_results` (`batch_id`,`id`);--> statement-breakpoint
CREATE INDEX `balance_results_history_idx` ON `balance_results` (`lender_id`,`authorizer_unique_id`,`id`);--> statement-breakpoint
CREATE TABLE `batch_items` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`batch_id` text NOT NULL,
	`lender_id` text NOT NULL,
	`seq` integer NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`payment_type` text NOT NULL,
	`routing_number` text,
	`phone` text,
	`zip` text,
	`metadata` text,
	`threshold_cents` integer,
	`state` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer DEFAULT 0 NOT NULL,
	`lease_until` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`batch_id`) REFERENCES `batches`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `batch_items_batch_seq_idx` ON `batch_items` (`batch_id`,`seq`);--> statement-breakpoint
CREATE INDEX `batch_items_pending_idx` ON `batch_items` (`state`,`batch_id`,`seq`);--> statement-breakpoint
CREATE TABLE `batch_payloads` (
	`batch_id` text PRIMARY KEY NOT NULL,
	`sealed` text NOT NULL,
	`items` text NOT NULL,
	FOREIGN KEY (`batch_id`) REFERENCES `batches`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `batches` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`source` text NOT NULL,
	`schedule_id` text,
	`status` text NOT NULL,
	`webhook_url` text,
	`creator` text,
	`submitted_at` integer NOT NULL,
	`completed_at` integer,
	`total_authorizers` integer NOT NULL,
	`total_processed` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `batches_status_idx` ON `batches` (`status`,`submitted_at`);--> statement-breakpoint
CREATE INDEX `batches_lender_idx` ON `batches` (`lender_id`,`submitted_at`);--> statement-breakpoint
CREATE INDEX `batches_schedule_idx` ON `batches` (`schedule_id`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`lender_id` text NOT NULL,
	`body_hash` text NOT NULL,
	`status_code` integer NOT NULL,
	`response_body` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`lender_id`, `body_hash`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_created_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `schedule_authorizers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`schedule_id` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`payment_type` text NOT NULL,
	`routing_number` text,
	`phone` text,
	`zip` text,
	`metadata` text,
	`threshold_cents` integer,
	`sealed` text NOT NULL,
	FOREIGN KEY (`schedule_id`) REFERENCES `schedules`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `schedule_authorizers_unique_idx` ON `schedule_authorizers` (`schedule_id`,`authorizer_unique_id`);--> statement-breakpoint
CREATE TABLE `schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`interval_days` integer NOT NULL,
	`time_of_day` text NOT NULL,
	`starts_at` text,
	`expires_at` text NOT NULL,
	`webhook` text,
	`threshold_cents` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`last_run_at` integer,
	`next_run_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `schedules_lender_name_idx` ON `schedules` (`lender_id`,`name`);--> statement-breakpoint
CREATE INDEX `schedules_due_idx` ON `schedules` (`status`,`next_run_at`);