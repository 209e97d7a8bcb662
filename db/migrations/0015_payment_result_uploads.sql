CREATE TABLE `payment_result_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`recorded_at` integer NOT NULL,
	`creator` text,
	`format` text NOT NULL,
	`row_count` integer NOT NULL,
	`data_row_count` integer NOT NULL,
	`matched` integer NOT NULL,
	`needs_attention` integer NOT NULL,
	`problem_count` integer NOT NULL,
	`problems` text NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `payment_result_uploads_lender_idx` ON `payment_result_uploads` (`lender_id`,`recorded_at`,`id`);