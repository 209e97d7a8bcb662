CREATE TABLE `unfinished_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`creator` text,
	`file_sealed` text NOT NULL,
	`checked_at` integer NOT NULL,
	`done` integer NOT NULL,
	`matched` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
