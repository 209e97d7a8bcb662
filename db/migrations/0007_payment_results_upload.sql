CREATE TABLE `uploaded_results` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`lender_id` text NOT NULL,
	`reference` text NOT NULL,
	`authorizer_unique_id` text,
	`enrollment_id` text,
	`status` text NOT NULL,
	`amount_cents` integer NOT NULL,
	`submitted_at` integer NOT NULL,
	`settled_at` integer,
	`returned_at` integer,
	`return_code` text,
	`batch_id` text,
	`matched` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uploaded_results_reference_uq` ON `uploaded_results` (`lender_id`,`reference`);