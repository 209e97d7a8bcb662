CREATE TABLE `sandbox_cards` (
	`token` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`last4` text NOT NULL,
	`brand` text NOT NULL,
	`funding` text NOT NULL,
	`exp_month` integer NOT NULL,
	`exp_year` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sandbox_events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`payment_id` text NOT NULL,
	`status` text NOT NULL,
	`return_code` text,
	`message` text,
	`occurred_at` integer NOT NULL,
	FOREIGN KEY (`payment_id`) REFERENCES `sandbox_payments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `sandbox_events_account_seq_idx` ON `sandbox_events` (`account`,`seq`);--> statement-breakpoint
CREATE TABLE `sandbox_idempotency` (
	`account` text NOT NULL,
	`idempotency_key` text NOT NULL,
	`failed_attempts` integer NOT NULL,
	`first_attempt_at` integer NOT NULL,
	PRIMARY KEY(`account`, `idempotency_key`)
);
--> statement-breakpoint
CREATE TABLE `sandbox_payments` (
	`id` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`idempotency_key` text NOT NULL,
	`reference` text,
	`amount_cents` integer NOT NULL,
	`rail` text NOT NULL,
	`instrument_kind` text NOT NULL,
	`created_status` text NOT NULL,
	`created_return_code` text,
	`created_message` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sandbox_payments_account_idem_uq` ON `sandbox_payments` (`account`,`idempotency_key`);--> statement-breakpoint
CREATE TABLE `sandbox_transitions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`payment_id` text NOT NULL,
	`status` text NOT NULL,
	`return_code` text,
	`message` text,
	`due_at` integer NOT NULL,
	FOREIGN KEY (`payment_id`) REFERENCES `sandbox_payments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `sandbox_transitions_due_idx` ON `sandbox_transitions` (`account`,`due_at`);