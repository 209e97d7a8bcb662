CREATE TABLE `collection_policies` (
	`lender_id` text PRIMARY KEY NOT NULL,
	`cfpb_covered` integer DEFAULT false NOT NULL,
	`max_reinitiations` integer DEFAULT 2 NOT NULL,
	`reinitiation_amount` text DEFAULT 'current' NOT NULL,
	`updated_at` integer,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `sandbox_payments` ADD `entry_description` text;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `cfpb_covered` integer;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `authorization_at` integer;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `authorization_ref` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `attempt` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `payments` ADD `reinitiation_of` text;