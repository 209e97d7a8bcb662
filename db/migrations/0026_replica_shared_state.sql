CREATE TABLE `held_files` (
	`key` text PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	`body` blob NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `leases` (
	`name` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`until` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rate_buckets` (
	`key` text PRIMARY KEY NOT NULL,
	`tokens` real NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sign_in_counts` (
	`key` text PRIMARY KEY NOT NULL,
	`count` integer NOT NULL,
	`first` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `lease_token` text;--> statement-breakpoint
ALTER TABLE `batch_items` ADD `lease_token` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `lease_token` text;