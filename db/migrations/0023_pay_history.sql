CREATE TABLE `pay_history` (
	`enrollment_id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`wanted_at` integer,
	`due_at` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`fetched_at` integer,
	`covered_to` integer,
	`outcome` text,
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `pay_history_due_idx` ON `pay_history` (`due_at`) WHERE "pay_history"."due_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `pay_history_deposits` (
	`enrollment_id` text NOT NULL,
	`day` integer NOT NULL,
	`amount_cents` integer NOT NULL,
	PRIMARY KEY(`enrollment_id`, `day`),
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action
);
