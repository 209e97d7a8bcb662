ALTER TABLE `enrollments` ADD `pay_cycle_frequency` text;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `pay_cycle_next_payday` integer;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `pay_cycle_confidence` real;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `pay_cycle_source` text;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `pay_cycle_at` integer;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `read_cadence` text DEFAULT 'payday' NOT NULL;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `debit_buffer_cents` integer DEFAULT 0 NOT NULL;