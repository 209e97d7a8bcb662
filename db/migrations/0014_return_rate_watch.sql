CREATE TABLE `return_rate_watch` (
	`lender_id` text PRIMARY KEY NOT NULL,
	`unauthorized` text NOT NULL,
	`administrative` text NOT NULL,
	`overall` text NOT NULL,
	`evaluated_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `return_rate_pause` integer DEFAULT false NOT NULL;