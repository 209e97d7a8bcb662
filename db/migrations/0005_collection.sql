CREATE TABLE `ingested_payments` (
	`connection_id` text NOT NULL,
	`processor_payment_id` text NOT NULL,
	`matched` integer NOT NULL,
	FOREIGN KEY (`connection_id`) REFERENCES `payment_connections`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `ingested_payments_uq` ON `ingested_payments` (`connection_id`,`processor_payment_id`);--> statement-breakpoint
CREATE TABLE `ledger_entries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`lender_id` text NOT NULL,
	`enrollment_id` text NOT NULL,
	`reference` text NOT NULL,
	`kind` text NOT NULL,
	`amount_cents` integer NOT NULL,
	`event_id` text NOT NULL,
	`at` integer NOT NULL,
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`event_id`) REFERENCES `payment_events`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `ledger_entries_enrollment_idx` ON `ledger_entries` (`enrollment_id`,`id`);--> statement-breakpoint
CREATE INDEX `ledger_entries_reference_idx` ON `ledger_entries` (`lender_id`,`reference`);--> statement-breakpoint
CREATE TABLE `payment_events` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`enrollment_id` text,
	`authorizer_unique_id` text,
	`payment_id` text,
	`connection_id` text,
	`reference` text NOT NULL,
	`status` text NOT NULL,
	`amount_cents` integer NOT NULL,
	`return_code` text,
	`message` text,
	`source` text NOT NULL,
	`source_event_id` text NOT NULL,
	`occurred_at` integer NOT NULL,
	`recorded_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`payment_id`) REFERENCES `payments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`connection_id`) REFERENCES `payment_connections`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `payment_events_source_uq` ON `payment_events` (`lender_id`,`source`,`source_event_id`);--> statement-breakpoint
CREATE INDEX `payment_events_reference_idx` ON `payment_events` (`lender_id`,`reference`,`recorded_at`);--> statement-breakpoint
CREATE INDEX `payment_events_borrower_idx` ON `payment_events` (`lender_id`,`authorizer_unique_id`,`recorded_at`);--> statement-breakpoint
CREATE TABLE `payments` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`enrollment_id` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`rail` text NOT NULL,
	`amount_cents` integer NOT NULL,
	`reference` text NOT NULL,
	`status` text NOT NULL,
	`processor_payment_id` text,
	`return_code` text,
	`message` text,
	`state` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer DEFAULT 0 NOT NULL,
	`lease_until` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`settled_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`connection_id`) REFERENCES `payment_connections`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `payments_in_flight_uq` ON `payments` (`enrollment_id`) WHERE "payments"."status" IN ('initiating', 'processing');--> statement-breakpoint
CREATE UNIQUE INDEX `payments_reference_uq` ON `payments` (`lender_id`,`reference`);--> statement-breakpoint
CREATE INDEX `payments_dispatch_idx` ON `payments` (`state`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `payments_processor_idx` ON `payments` (`connection_id`,`processor_payment_id`);--> statement-breakpoint
CREATE INDEX `payments_enrollment_idx` ON `payments` (`enrollment_id`,`created_at`);