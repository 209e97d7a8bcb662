CREATE TABLE `rights_notices` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`enrollment_id` text NOT NULL,
	`reference` text NOT NULL,
	`learned_at` integer NOT NULL,
	`due_by` integer NOT NULL,
	`sent_at` integer,
	`channel` text,
	`evidence_ref` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`enrollment_id`) REFERENCES `enrollments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rights_notices_reference_uq` ON `rights_notices` (`lender_id`,`reference`);--> statement-breakpoint
CREATE INDEX `rights_notices_enrollment_idx` ON `rights_notices` (`enrollment_id`,`learned_at`,`id`);--> statement-breakpoint
CREATE INDEX `rights_notices_lender_idx` ON `rights_notices` (`lender_id`,`due_by`,`id`);--> statement-breakpoint
CREATE INDEX `rights_notices_open_idx` ON `rights_notices` (`lender_id`,`due_by`,`id`) WHERE "rights_notices"."sent_at" IS NULL;--> statement-breakpoint
CREATE INDEX `rights_notices_sent_idx` ON `rights_notices` (`lender_id`,`due_by`,`id`) WHERE "rights_notices"."sent_at" IS NOT NULL;