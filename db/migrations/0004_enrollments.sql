CREATE TABLE `enrollments` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`state` text NOT NULL,
	`reason` text,
	`blocked_reason` text,
	`window_started_at` integer,
	`window_ends_at` integer,
	`collectable_amount_cents` integer NOT NULL,
	`days_past_due` integer NOT NULL,
	`merchant_ref` text,
	`rail` text NOT NULL,
	`routing_number` text,
	`bank_name` text,
	`sealed` text,
	`metadata` text,
	`card_token_sealed` text,
	`card_last4` text,
	`card_brand` text,
	`last_read_cents` integer,
	`last_read_at` integer,
	`next_read_at` integer,
	`payments_used` integer DEFAULT 0 NOT NULL,
	`enrolled_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`erased_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `enrollments_lender_borrower_uq` ON `enrollments` (`lender_id`,`authorizer_unique_id`);--> statement-breakpoint
CREATE INDEX `enrollments_read_due_idx` ON `enrollments` (`next_read_at`) WHERE "enrollments"."state" = 'monitored';--> statement-breakpoint
CREATE INDEX `enrollments_lapse_due_idx` ON `enrollments` (`window_ends_at`) WHERE "enrollments"."state" = 'monitored';--> statement-breakpoint
CREATE INDEX `enrollments_held_idx` ON `enrollments` (`lender_id`) WHERE "enrollments"."state" = 'held';