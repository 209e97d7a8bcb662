CREATE TABLE `bank_link_owners` (
	`lender_id` text NOT NULL,
	`link_digest` text NOT NULL,
	`authorizer_unique_id` text NOT NULL,
	`provider` text NOT NULL,
	`plaid_item_id` text,
	PRIMARY KEY(`lender_id`, `link_digest`, `authorizer_unique_id`)
);
--> statement-breakpoint
CREATE INDEX `bank_link_owners_item_idx` ON `bank_link_owners` (`plaid_item_id`);--> statement-breakpoint
CREATE TABLE `provider_webhook_receipts` (
	`provider` text NOT NULL,
	`receipt_key` text NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`provider`, `receipt_key`)
);
--> statement-breakpoint
CREATE INDEX `provider_webhook_receipts_at_idx` ON `provider_webhook_receipts` (`received_at`);