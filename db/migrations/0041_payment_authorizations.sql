CREATE TABLE `payment_authorizations` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`enrollment_id` text NOT NULL,
	`obtained_at` integer NOT NULL,
	`record` text NOT NULL,
	`recorded_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `payment_authorizations_enrollment_idx` ON `payment_authorizations` (`enrollment_id`,`recorded_at`,`id`);