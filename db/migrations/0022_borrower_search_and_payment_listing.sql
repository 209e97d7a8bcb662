CREATE TABLE `borrower_search` (
	`lender_id` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`kind` text NOT NULL,
	`hash` text NOT NULL,
	`key_id` text NOT NULL,
	PRIMARY KEY(`lender_id`, `kind`, `hash`, `authorizer_unique_id`)
);
--> statement-breakpoint
CREATE INDEX `borrower_search_borrower_idx` ON `borrower_search` (`lender_id`,`authorizer_unique_id`,`key_id`);--> statement-breakpoint
CREATE INDEX `payments_lender_created_idx` ON `payments` (`lender_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `payments_lender_amount_idx` ON `payments` (`lender_id`,`amount_cents`,`id`);